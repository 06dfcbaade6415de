//! The `codex-free` command line: `serve`, `config`, `token` (and `memories` with the
//! pipeline). See README.md. Logs go to stderr; stdout carries only command results (and
//! the MCP protocol itself under `serve --stdio`).

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};
use codex_free_core::config::{CONFIG_FILE, Config};
use codex_free_server::mcp::{self, CodexFree, ServerOptions};

/// Bounded MCP coding tools, task memory and a background memory pipeline for AI agents.
#[derive(Parser)]
#[command(name = "codex-free", version, about)]
struct Cli {
    /// Config file (default: <state home>/codex.config.json).
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the MCP server over stdio or streamable HTTP.
    Serve(ServeArgs),
    /// Inspect the config file.
    Config {
        #[command(subcommand)]
        cmd: ConfigCmd,
    },
    /// Show or rotate the HTTP bearer token.
    Token {
        #[command(subcommand)]
        cmd: TokenCmd,
    },
    /// The background memory pipeline: status, run, on/off, reset, benchmarks.
    Memories {
        #[command(subcommand)]
        cmd: MemoriesTop,
    },
}

#[derive(Subcommand)]
enum MemoriesTop {
    #[command(flatten)]
    Control(codex_free_pipeline::control::MemoriesCmd),
    /// Measure tool-output compaction on your own sessions, with no model call.
    BenchCompaction(codex_free_pipeline::bench::BenchArgs),
    /// Run phase 2 (consolidation) now: respects the 6 h cooldown unless --force; makes no
    /// model call when inputs are unchanged and the artifacts are valid.
    Consolidate {
        /// Run despite the cooldown.
        #[arg(long)]
        force: bool,
    },
    #[command(flatten)]
    History(codex_free_pipeline::phase2::folder::MemoryHistoryCmd),
}

#[derive(Args)]
struct ServeArgs {
    /// Serve one MCP session on stdin/stdout (for clients that spawn the server).
    #[arg(long, conflicts_with = "http")]
    stdio: bool,
    /// Serve streamable HTTP at http://HOST:PORT/mcp.
    #[arg(long)]
    http: bool,
    /// Bind address (default from config `server.host`, 127.0.0.1).
    #[arg(long)]
    host: Option<String>,
    /// Port (default from config `server.port`, 3000; 0 picks a free port).
    #[arg(long)]
    port: Option<u16>,
    /// The project the tools work on (single-project mode).
    #[arg(long, value_name = "DIR", conflicts_with = "access_root")]
    project: Option<PathBuf>,
    /// Multi-project mode: conversations pick a project under DIR with set_project_root.
    #[arg(long, value_name = "DIR")]
    access_root: Option<PathBuf>,
    /// With --http: also serve the web UI and its /api on the same port (same token).
    #[arg(long, requires = "http")]
    ui: bool,
    /// With --http: do not run the memory pipeline scheduler in this process.
    #[arg(long)]
    no_pipeline: bool,
}

#[derive(Subcommand)]
enum ConfigCmd {
    /// Print the config file path.
    Path,
    /// Print the effective config (defaults merged with the file).
    Show,
    /// Validate the file: unknown keys warn, bad values fail with key, value and range.
    Validate,
}

#[derive(Subcommand)]
enum TokenCmd {
    /// Print the token (creating it on first use).
    Show,
    /// Replace the token; clients must be updated.
    Rotate,
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("CODEX_FREE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,rmcp=warn"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .try_init();
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    init_logging();
    let home = codex_free_core::home::state_home()?;
    let config_path = cli.config.clone().unwrap_or_else(|| home.join(CONFIG_FILE));
    match cli.cmd {
        Cmd::Config { cmd } => config_cmd(cmd, &config_path),
        Cmd::Token { cmd } => {
            let t = match cmd {
                TokenCmd::Show => mcp::auth::load_or_create_token(&home)?,
                TokenCmd::Rotate => mcp::auth::rotate_token(&home)?,
            };
            println!("{}", t.expose());
            Ok(())
        }
        Cmd::Serve(args) => serve(args, home, config_path),
        Cmd::Memories { cmd } => memories(cmd, home),
    }
}

/// The OS keyring (Secret Service, else the labelled keyutils fallback; the keyring
/// module logs which and why).
fn secrets() -> codex_free_secrets::keyring::Opened {
    codex_free_secrets::keyring::open()
}

fn memories(cmd: MemoriesTop, home: PathBuf) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    match cmd {
        MemoriesTop::BenchCompaction(args) => {
            let report = codex_free_pipeline::bench::run(&args.to_options(&home)?)?;
            codex_free_pipeline::bench::print(&report, &mut std::io::stdout().lock())?;
        }
        MemoriesTop::History(cmd) => {
            print!(
                "{}",
                codex_free_pipeline::phase2::model::history_command_in_home(&home, &cmd)?
            );
        }
        MemoriesTop::Consolidate { force } => {
            let config = Config::load(&home.join(CONFIG_FILE))?.config;
            let keys = secrets();
            let outcome = rt.block_on(codex_free_pipeline::phase2::model::run_in_home(
                &home,
                &config,
                keys.store.as_ref(),
                codex_free_pipeline::providers::RetryPolicy::default(),
                "cli",
                force,
                tokio_util::sync::CancellationToken::new(),
            ))?;
            println!("{}", serde_json::to_string_pretty(&outcome)?);
        }
        MemoriesTop::Control(cmd) => {
            let env = codex_free_pipeline::control::ControlEnv::new(home, secrets().store);
            let cancel = env.cancel.clone();
            let out = rt.block_on(async move {
                tokio::select! {
                    r = codex_free_pipeline::control::execute(cmd, &env) => r,
                    _ = tokio::signal::ctrl_c() => { cancel.cancel(); Err(codex_free_core::Error::Cancelled("interrupted".into())) }
                }
            })?;
            println!("{}", out.trim_end());
        }
    }
    Ok(())
}

fn config_cmd(cmd: ConfigCmd, path: &std::path::Path) -> anyhow::Result<()> {
    match cmd {
        ConfigCmd::Path => println!("{}", path.display()),
        ConfigCmd::Show => {
            let l = Config::load(path)?;
            for w in &l.warnings {
                eprintln!("warning: {w}");
            }
            println!("{}", serde_json::to_string_pretty(&l.config)?);
        }
        ConfigCmd::Validate => {
            let l = Config::load(path)?;
            for w in &l.warnings {
                eprintln!("warning: {w}");
            }
            match l.path {
                Some(p) => println!("{}: valid ({} warning(s))", p.display(), l.warnings.len()),
                None => println!("{}: not present; defaults apply", path.display()),
            }
            let startup_only = l.config.restart_changes(&Config::default());
            if !startup_only.is_empty() {
                println!(
                    "note: restart a running server to apply {} (read only at startup)",
                    startup_only.join(", ")
                );
            }
            let sandbox = codex_free_tools::exec::sandbox_status(&l.config.exec);
            match sandbox.warning {
                Some(w) => println!("WARNING: {w}"),
                None => println!("command sandbox: {}", sandbox.summary),
            }
        }
    }
    Ok(())
}

fn serve(args: ServeArgs, home: PathBuf, config_path: PathBuf) -> anyhow::Result<()> {
    if args.stdio == args.http {
        bail!("choose one transport: --stdio or --http");
    }
    let opts = match (&args.project, &args.access_root) {
        (Some(p), None) => ServerOptions::single(p, &home, Some(config_path.clone()))?,
        (None, Some(a)) => ServerOptions::multi(a, &home, Some(config_path.clone()))?,
        _ => bail!("give --project DIR (one project) or --access-root DIR (multi-project mode)"),
    };
    let server = CodexFree::new(opts).context("loading the config")?;
    // On stderr for both transports (stdout is the MCP stream under --stdio): the warning
    // whatever the log level, the confirmation as an info log line.
    let sandbox = server.sandbox_status();
    match &sandbox.warning {
        Some(w) => eprintln!("codex-free: WARNING: {w}"),
        None => tracing::info!("command sandbox: {}", sandbox.summary),
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        if args.stdio {
            mcp::stdio::serve(server).await?;
            return Ok(());
        }
        let config = server.shared().config.get();
        let host = args.host.unwrap_or(config.server.host.clone());
        let port = args.port.unwrap_or(config.server.port);
        let token = mcp::auth::load_or_create_token(&home)?;
        let url = std::sync::Arc::new(std::sync::OnceLock::new());
        let mut opts = mcp::http::HttpOptions::default();
        let keys = secrets();
        let pipe = std::sync::Arc::new(codex_free_server::api::hooks::SchedulerPipeline::new(&home));
        if args.ui {
            let o = keys.clone();
            let status = codex_free_server::api::dto::KeyringStatus { backend: o.label, fallback: o.fallback, error: o.error };
            let svc = codex_free_server::api::ApiService::new(&home, o.store, status)
                .with_server(std::sync::Arc::new(Headless(url.clone())))
                .with_pipeline(pipe.clone());
            opts.extra = Some(codex_free_server::api::http::router(std::sync::Arc::new(svc)));
        }
        let running = mcp::http::start(server, &host, port, token.clone(), opts).await?;
        let base = format!("http://{}", running.addr);
        let _ = url.set((format!("{base}/mcp"), running.shared.clone()));
        let pipeline = if args.no_pipeline {
            None
        } else {
            let env = codex_free_pipeline::control::ControlEnv::new(home.clone(), keys.store.clone());
            match codex_free_pipeline::scheduler::Scheduler::start(
                home.clone(),
                config.clone(),
                env.scheduler_deps(),
                running.cancel.child_token(),
            ) {
                Ok(s) => {
                    pipe.attach(s.trigger_sender());
                    Some(s)
                }
                Err(e) => {
                    tracing::warn!("memory pipeline not started: {e}");
                    None
                }
            }
        };
        println!("Codex Free MCP server listening on {base}/mcp");
        if args.ui {
            println!("  web UI:       {base}/?token={}", token.expose());
        }
        println!("  health:       {base}/health (no auth)");
        println!("  auth header:  Authorization: Bearer {}", token.expose());
        println!("  secret path:  {base}/mcp/{}   (for clients that cannot send headers; keep it secret)", token.expose());
        println!("  token file:   {}", mcp::auth::token_path(&home).display());
        println!("Press Ctrl-C to stop.");
        use std::io::Write;
        std::io::stdout().flush().ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = running.cancel.cancelled() => {}
        }
        running.cancel.cancel();
        let _ = running.task.await;
        drop(pipeline);
        anyhow::Ok(())
    })
}

/// The headless server as the UI sees it: running while this process lives. Holds the
/// URL and the shared server state once bound.
struct Headless(std::sync::Arc<std::sync::OnceLock<(String, std::sync::Arc<mcp::server::Shared>)>>);

impl codex_free_server::api::hooks::ServerControl for Headless {
    fn status(&self) -> codex_free_server::api::dto::ServerStatus {
        codex_free_server::api::dto::ServerStatus {
            state: codex_free_server::api::dto::ServerState::Running,
            url: self.0.get().map(|(u, _)| u.clone()),
            clients: self.0.get().map(|(_, s)| s.active_clients()).unwrap_or(0),
            error: None,
        }
    }
    fn start(&self) -> codex_free_core::Result<codex_free_server::api::dto::ActionResult> {
        Ok(codex_free_server::api::dto::ActionResult {
            ok: true,
            message: "already running".into(),
        })
    }
    fn stop(&self) -> codex_free_core::Result<codex_free_server::api::dto::ActionResult> {
        Ok(codex_free_server::api::dto::ActionResult {
            ok: false,
            message: "the headless server stops with Ctrl-C in its terminal".into(),
        })
    }
}
