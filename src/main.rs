//! The `codex-free` command line: `serve`, `connect`, `config`, `token`, `usage` (and
//! `memories` with the pipeline). See README.md. Logs go to stderr; stdout carries only command results (and
//! the MCP protocol itself under `serve --stdio`).
// The binary prints its command results; stdout is the stdio transport only under `serve --stdio`.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};
use codex_free_connect as connect;
use codex_free_core::config::{CONFIG_FILE, Config};
use codex_free_server::app::{self, App, AppOptions};
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
    /// Show or rotate the MCP token or the admin token; print a web UI login link.
    Token {
        #[command(subcommand)]
        cmd: TokenCmd,
    },
    /// Register codex-free with a coding agent (codex, claude) and link the memory summary
    /// into its instructions file (codex, claude, pi); chatgpt prints the connector steps.
    /// Without a client: the state of each.
    Connect(ConnectArgs),
    /// The background memory pipeline: status, run, on/off, reset, benchmarks.
    Memories {
        #[command(subcommand)]
        cmd: MemoriesTop,
    },
    /// What the coding agents (Codex CLI, Claude Code, pi) and the pipeline cost: imports
    /// their transcripts' token usage, then reports per day/week/month, session or 5-hour
    /// block.
    #[command(after_help = usage_help())]
    Usage {
        #[command(subcommand)]
        cmd: codex_free_agent_usage::cli::UsageCmd,
    },
}

#[derive(Subcommand)]
enum MemoriesTop {
    #[command(flatten)]
    Control(codex_free_pipeline::cli::MemoriesCmd),
    /// Measure tool-output compaction on your own sessions, with no model call.
    BenchCompaction(codex_free_transcripts::cli::BenchArgs),
    /// Run phase 2 (consolidation) now: respects the 6 h cooldown unless --force; makes no
    /// model call when inputs are unchanged and the artifacts are valid.
    Consolidate {
        /// Run despite the cooldown, the retry backoff and exhausted retries.
        #[arg(long)]
        force: bool,
        /// Print the outcome as JSON.
        #[arg(long)]
        json: bool,
        /// Show the first request the consolidation would send (sealed by the same gate:
        /// redacted, within the window, with tokens and cost) from a dry run on a copy;
        /// sends nothing, writes nothing.
        #[arg(long)]
        preview: bool,
    },
    #[command(flatten)]
    History(codex_free_memory::cli::MemoryHistoryCmd),
    /// Pull the memory folder from memories.sync.remote (merging another machine's
    /// commits) and push this machine's; never forces. Exits 1 when a step failed.
    Sync {
        /// Print the outcome as JSON.
        #[arg(long)]
        json: bool,
    },
    /// With memories.review on: show the consolidation waiting for review, or accept /
    /// reject it (reject restores the accepted state as a new commit).
    Review(codex_free_memory::cli::ReviewArgs),
    /// Find stale facts, duplicates, conflicts, summary drift, dangling references, secrets
    /// and budget overruns in memory files (no model call); exits 1 on an error finding.
    Lint(codex_free_hygiene::cli::LintArgs),
    /// Move what does not belong in the loaded memory to daily/ and archive/ (--plan shows,
    /// --apply backs up, moves, commits and verifies).
    Tidy(codex_free_hygiene::cli::TidyArgs),
    /// Measure a tidy on copies of the shipped replay set: tokens, stale facts, duplicates,
    /// budget headroom, before and after.
    BenchHygiene(codex_free_hygiene::cli::BenchHygieneArgs),
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
    /// The project the tools work on (single-project mode). Without it (and without
    /// --access-root), `--stdio` works on the client's first MCP root, else on the working
    /// directory.
    #[arg(long, value_name = "DIR", conflicts_with = "access_root")]
    project: Option<PathBuf>,
    /// Multi-project mode: conversations pick a project under DIR with set_project_root.
    #[arg(long, value_name = "DIR")]
    access_root: Option<PathBuf>,
    /// With --http: also serve the web UI and its /api on the same port (loopback only,
    /// behind the admin credential; the CLI prints a one-time login link).
    #[arg(long, requires = "http")]
    ui: bool,
    /// Do not run the memory pipeline scheduler in this process (by default every `serve`
    /// hosts it when no other process on this state home does).
    #[arg(long)]
    no_pipeline: bool,
}

/// The clients `connect` takes on the command line (mirrors [`connect::Client`], which
/// stays free of clap).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ClientArg {
    /// Codex CLI.
    Codex,
    /// Claude Code.
    Claude,
    /// pi coding agent (no MCP: memory only).
    Pi,
    /// ChatGPT (developer-mode connector over a tunnel: printed steps only).
    Chatgpt,
}

impl From<ClientArg> for connect::Client {
    fn from(c: ClientArg) -> Self {
        match c {
            ClientArg::Codex => connect::Client::Codex,
            ClientArg::Claude => connect::Client::Claude,
            ClientArg::Pi => connect::Client::Pi,
            ClientArg::Chatgpt => connect::Client::Chatgpt,
        }
    }
}

#[derive(Args)]
struct ConnectArgs {
    /// The client; omitted: show whether each is installed, connected and linked.
    #[arg(value_enum)]
    client: Option<ClientArg>,
    /// Register the HTTP endpoint of a running `serve --http` instead of a spawned stdio
    /// server.
    #[arg(long)]
    http: bool,
    /// Port of that server (default: config `server.port`); also the port chatgpt checks.
    #[arg(long)]
    port: Option<u16>,
    /// Print the unified diff of every change and write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Undo what connect wrote: each file restored byte for byte (a file it created is
    /// removed), or only our entry and block removed when the file changed since.
    #[arg(long, conflicts_with = "http")]
    undo: bool,
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
    /// Print the MCP token (creating it on first use); --admin: the admin token.
    Show {
        /// The admin token (web UI and /api) instead of the MCP token.
        #[arg(long)]
        admin: bool,
    },
    /// Replace the MCP token (MCP clients must be updated); --admin: replace the admin
    /// token instead (ends every browser session). The other token is never changed.
    Rotate {
        /// Rotate the admin token instead of the MCP token.
        #[arg(long)]
        admin: bool,
    },
    /// Say where the token is kept (OS key store entry, or the fallback file); never
    /// prints the token.
    Where {
        /// The admin token instead of the MCP token.
        #[arg(long)]
        admin: bool,
    },
    /// Print a one-time web UI login link (valid 10 minutes, single use) for a server
    /// started with `serve --http --ui` on this state home.
    Login {
        /// Port of the running server (default: config `server.port`).
        #[arg(long)]
        port: Option<u16>,
    },
}

/// Give SIGPIPE back its default action (end the process quietly) for every command but
/// `serve`, as command-line tools do: `codex-free usage daily | head -1` closes the pipe
/// after one line, and with Rust's default (SIGPIPE ignored) the next `println!` panicked
/// with "failed printing to stdout: Broken pipe". These commands write nothing to a
/// child's stdin, so a closed pipe can only be their own output's. `serve` keeps SIGPIPE
/// ignored: its stdio transport and HTTP connections handle a closed peer as an error
/// (shutting down in order), and its commands' stdin pipes must not kill the server.
fn default_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called once at the start of `main`, before any thread exists; setting a
    // signal's disposition to SIG_DFL has no memory-safety precondition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("CODEX_FREE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,rmcp=warn"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        // A log line that cannot be written (stderr redirected to a full disk) is dropped:
        // tracing-subscriber's own report of the failure goes through `eprintln!`, whose
        // panic killed the task serving a request (the client waited forever).
        .log_internal_errors(false)
        .try_init();
}

/// The `usage --help` footer: what the columns mean and where the prices come from.
fn usage_help() -> String {
    format!(
        "Columns (the same for every agent, in the tables and --json): input = uncached input, cache read, cache write (5-minute and 1-hour), output (reasoning included), reasoning; total = input + cache read + cache write + output.\n\nPrices: {} (1-hour cache writes and long-context tiers as the table lists them; a model served by a custom provider is priced by its name). memories.prices in codex.config.json overrides them.",
        codex_free_models::PriceTable::bundled().source()
    )
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    if !matches!(cli.cmd, Cmd::Serve(_)) {
        default_sigpipe();
    }
    init_logging();
    // After a memory commit or a saved-state change, the copies linked into other agents'
    // instruction files follow (the CLI's one registration; `App::open` has the server's).
    codex_free_core::events::on_memory_event(codex_free_connect::on_memory_event);
    let home = codex_free_core::home::state_home()?;
    let config_path = cli.config.clone().unwrap_or_else(|| home.join(CONFIG_FILE));
    match cli.cmd {
        Cmd::Config { cmd } => config_cmd(cmd, &config_path),
        Cmd::Token { cmd } => {
            use codex_free_server::http::auth::TokenKind;
            let kind = |admin: bool| {
                if admin {
                    TokenKind::Admin
                } else {
                    TokenKind::Mcp
                }
            };
            let t = match cmd {
                TokenCmd::Show { admin } => {
                    codex_free_server::http::auth::load_or_create(&home, kind(admin))?
                }
                TokenCmd::Rotate { admin } => {
                    codex_free_server::http::auth::rotate(&home, kind(admin))?
                }
                TokenCmd::Where { admin } => {
                    println!(
                        "{}",
                        codex_free_server::http::auth::TokenVault::for_home(&home, kind(admin))
                            .describe()
                    );
                    return Ok(());
                }
                TokenCmd::Login { port } => {
                    let config = Config::load(&config_path)?.config;
                    let port = port.unwrap_or(config.server.port);
                    let code = codex_free_server::http::auth::issue_login_code(&home)?;
                    println!(
                        "{}",
                        codex_free_server::http::auth::login_link(
                            &format!("http://127.0.0.1:{port}"),
                            &code
                        )
                    );
                    return Ok(());
                }
            };
            println!("{}", t.expose());
            Ok(())
        }
        Cmd::Serve(args) => serve(args, home, config_path),
        Cmd::Connect(args) => connect_cmd(args, &home, &config_path),
        Cmd::Memories { cmd } => memories(cmd, home, config_path),
        Cmd::Usage { cmd } => {
            let config = Config::load(&config_path)?.config;
            let out = codex_free_agent_usage::cli::run(
                &cmd,
                &home,
                &config.memories.prices,
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_millis() as i64)
                    .unwrap_or(0),
            )?;
            println!("{}", out.trim_end());
            Ok(())
        }
    }
}

/// The OS keyring (Secret Service, else the labelled keyutils fallback; the keyring
/// module logs which and why).
fn secrets() -> codex_free_secrets::keyring::Opened {
    codex_free_secrets::keyring::open()
}

/// Run one `memories` subcommand and print its result.
///
/// Long on purpose: one match arm per subcommand, each a few lines of wiring to its crate.
#[expect(
    clippy::too_many_lines,
    reason = "one match arm per subcommand, each a few lines of wiring to its crate"
)]
fn memories(cmd: MemoriesTop, home: PathBuf, config_path: PathBuf) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    match cmd {
        MemoriesTop::BenchCompaction(args) => {
            let report = codex_free_transcripts::bench::run(&args.to_options(&home)?)?;
            codex_free_transcripts::bench::print(&report, &mut std::io::stdout().lock())?;
        }
        MemoriesTop::History(cmd) => {
            print!(
                "{}",
                codex_free_pipeline::phase2::model::history_command_in_home(
                    &home,
                    &cmd,
                    &codex_free_memory::budget::ArtifactBudget::from_config(
                        &Config::load(&config_path)?.config.memories
                    ),
                )?
            );
        }
        MemoriesTop::Lint(args) => {
            use codex_free_hygiene::{self as hygiene, lint};
            let config = Config::load(&config_path)?.config;
            let budget = codex_free_memory::budget::ArtifactBudget::from_config(&config.memories);
            let folder = hygiene::default_folder(&home);
            let paths = args.paths();
            if paths.is_empty()
                && !folder.join("MEMORY.md").exists()
                && !folder.join("memory_summary.md").exists()
            {
                println!(
                    "Nothing to lint yet: no MEMORY.md or memory_summary.md in {} (they appear after the first consolidation).",
                    folder.display()
                );
                return Ok(());
            }
            let files = lint::sources_for(&home, &paths)?;
            let project = match &args.project {
                Some(p) => p.clone(),
                None => std::env::current_dir()?,
            };
            let context = lint::project_files(&project);
            let report = lint::lint(&files, &context, &budget, lint::Checks { all: true });
            if args.json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", report.render());
            }
            if report.has_errors() {
                use std::io::Write;
                std::io::stdout().flush().ok();
                std::process::exit(1);
            }
        }
        MemoriesTop::Tidy(args) => {
            use codex_free_hygiene::{self as hygiene, tidy};
            let config = Config::load(&config_path)?.config;
            let opts = tidy::TidyOptions::new(
                args.dir
                    .clone()
                    .unwrap_or_else(|| hygiene::default_folder(&home)),
                home.clone(),
                codex_free_memory::budget::ArtifactBudget::from_config(&config.memories),
            );
            let mut opts = opts;
            let mut planned = None;
            let model = if args.asks_model(config.memories.tidy_ask_model) {
                let keys = secrets();
                match codex_free_models::resolve_extract_model(
                    &config.memories,
                    keys.store.as_ref(),
                    codex_free_models::prices::PriceTable::bundled(),
                    codex_free_models::RetryPolicy::default(),
                ) {
                    Ok(m) => Some(m),
                    // No model to ask is not a reason to refuse the rules' tidy: say so, and
                    // the undecided units stay loaded.
                    Err(e) => {
                        println!("Model: not configured ({e}); undecided units stay loaded");
                        None
                    }
                }
            } else {
                None
            };
            if let Some(model) = model {
                // The estimate is printed (and flushed) before any request leaves.
                let mut show = |r: &tidy::ModelReport| {
                    use std::io::Write;
                    println!("{}", r.estimate_line());
                    std::io::stdout().flush().ok();
                };
                let (p, verdicts) = rt.block_on(tidy::model::plan_with_model(
                    &opts,
                    &model,
                    config.memories.monthly_spend_cap_usd,
                    true,
                    &mut show,
                ))?;
                opts.model_verdicts = verdicts;
                if !args.plan {
                    // --apply prints the applied report only: say what the model did first.
                    for l in p.model.iter().flat_map(|r| r.lines()).skip(1) {
                        println!("{l}");
                    }
                }
                planned = Some(p);
            }
            if args.plan {
                let p = match planned {
                    Some(p) => p,
                    None => tidy::plan(&opts)?,
                };
                print!("{}", p.render());
            } else {
                let report = tidy::apply(&opts)?;
                print!("{}", report.render());
            }
        }
        MemoriesTop::BenchHygiene(args) => {
            use codex_free_hygiene::bench;
            if let Some(d) = &args.write_fixture {
                bench::write_fixture(d)?;
                println!("Wrote the bloated memory fixture to {}.", d.display());
                return Ok(());
            }
            let config = Config::load(&config_path)?.config;
            let budget = codex_free_memory::budget::ArtifactBudget::from_config(&config.memories);
            let cases = bench::run(&args, &budget)?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&cases)?);
            } else {
                bench::print(&cases, &mut std::io::stdout().lock())?;
            }
        }
        MemoriesTop::Sync { json } => {
            use codex_free_memory::sync;
            let config = Config::load(&config_path)?.config;
            let running = sync::consolidation_running(&home)?;
            let r = rt.block_on(sync::sync_now(
                &home,
                config.memories.sync.remote.as_deref(),
                running,
                &codex_free_memory::budget::ArtifactBudget::from_config(&config.memories),
            ));
            match r {
                Ok(report) if json => println!("{}", serde_json::to_string_pretty(&report)?),
                Ok(report) => print!("{}", report.describe()),
                Err(e) => {
                    if json {
                        println!(
                            "{}",
                            serde_json::json!({"error": e.to_string(), "code": e.code().as_str()})
                        );
                    } else {
                        eprintln!(
                            "error: {e}\nnothing was lost: local commits stay and are pushed by the next sync"
                        );
                    }
                    std::process::exit(1);
                }
            }
        }
        MemoriesTop::Review(args) => {
            use codex_free_memory::review;
            let config = Config::load(&config_path)?.config;
            let st = match args.action {
                None => review::state(&home, config.memories.review)?,
                Some(a) => {
                    let running = codex_free_memory::sync::consolidation_running(&home)?;
                    let budget =
                        codex_free_memory::budget::ArtifactBudget::from_config(&config.memories);
                    review::decide(&home, config.memories.review, a.into(), running, &budget)?
                }
            };
            if args.json {
                println!("{}", serde_json::to_string_pretty(&st)?);
            } else {
                print!("{}", st.render());
            }
        }
        MemoriesTop::Consolidate {
            preview: true,
            json,
            ..
        } => {
            let config = Config::load(&config_path)?.config;
            let keys = secrets();
            let mut all = Vec::new();
            for version in config.memories.written_versions() {
                all.push(rt.block_on(codex_free_pipeline::phase2::preview::preview(
                    &home,
                    &config,
                    version,
                    keys.store.as_ref(),
                ))?);
            }
            if json {
                println!("{}", serde_json::to_string_pretty(&all)?);
            } else {
                for p in &all {
                    print!("{}", p.render());
                }
            }
        }
        MemoriesTop::Consolidate { force, json, .. } => {
            let config = Config::load(&config_path)?.config;
            let keys = secrets();
            // Each written version consolidates its own folder from its own database.
            let versions = config.memories.written_versions();
            let mut failed = Vec::new();
            let mut outcomes = Vec::new();
            for version in versions.iter().copied() {
                let store = codex_free_pipeline::v2::open_store(&home, version)?;
                let outcome =
                    rt.block_on(codex_free_pipeline::phase2::model::run_version_with_store(
                        &home,
                        &config,
                        store,
                        version,
                        keys.store.as_ref(),
                        codex_free_models::RetryPolicy::default(),
                        "cli",
                        force,
                        tokio_util::sync::CancellationToken::new(),
                    ))?;
                if let codex_free_pipeline::phase2::Outcome::Failed { reason, .. } = &outcome {
                    failed.push(if versions.len() > 1 {
                        format!("{version}: {reason}")
                    } else {
                        reason.clone()
                    });
                }
                outcomes.push((version, outcome));
            }
            if json {
                if let [(_, only)] = outcomes.as_slice() {
                    println!("{}", serde_json::to_string_pretty(only)?);
                } else {
                    let all: serde_json::Map<String, serde_json::Value> = outcomes
                        .iter()
                        .map(|(v, o)| Ok((v.to_string(), serde_json::to_value(o)?)))
                        .collect::<anyhow::Result<_>>()?;
                    println!("{}", serde_json::to_string_pretty(&all)?);
                }
            } else {
                for (v, o) in &outcomes {
                    if outcomes.len() > 1 {
                        println!("{v}: {}", o.describe());
                    } else {
                        println!("{}", o.describe());
                    }
                }
            }
            if !failed.is_empty() {
                eprintln!("error: memories consolidate failed: {}", failed.join("; "));
                std::process::exit(1);
            }
        }
        MemoriesTop::Control(cmd) => {
            let env = codex_free_pipeline::cli::ControlEnv::new(home, secrets().store)
                .with_config_path(config_path);
            let cancel = env.cancel.clone();
            let out = rt.block_on(async move {
                tokio::select! {
                    r = codex_free_pipeline::cli::execute_with_verdict(cmd, &env) => r,
                    _ = tokio::signal::ctrl_c() => { cancel.cancel(); Err(codex_free_core::Error::Cancelled("interrupted".into())) }
                }
            })?;
            let (out, verdict) = out;
            println!("{}", out.trim_end());
            if let Some(reason) = verdict {
                eprintln!("error: {reason}");
                std::process::exit(1);
            }
        }
    }
    Ok(())
}

fn connect_cmd(
    args: ConnectArgs,
    home: &std::path::Path,
    config_path: &std::path::Path,
) -> anyhow::Result<()> {
    let target = connect::Target::from_env(home, config_path)?;
    let config = Config::load(config_path)?.config;
    let Some(client) = args.client.map(connect::Client::from) else {
        print!("{}", connect::render_status(&connect::status(&target)));
        return Ok(());
    };
    let port = args.port.unwrap_or(config.server.port);
    if client == connect::Client::Chatgpt {
        let token = codex_free_server::http::auth::load_or_create(
            home,
            codex_free_server::http::auth::TokenKind::Mcp,
        )?;
        print!("{}", connect::chatgpt_steps(port, token.expose(), &config));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        match rt.block_on(codex_free_models::check::chatgpt_check(
            port,
            token.expose(),
        )) {
            Ok(m) => println!("check: {m}"),
            Err(e) => println!("check: not reachable yet: {e}"),
        }
        return Ok(());
    }
    let plan = if args.undo {
        connect::plan_undo(&target, client)?
    } else {
        let opts = connect::Options {
            http: if args.http {
                let token = codex_free_server::http::auth::load_or_create(
                    home,
                    codex_free_server::http::auth::TokenKind::Mcp,
                )?;
                Some((
                    format!("http://127.0.0.1:{port}/mcp"),
                    token.expose().to_string(),
                ))
            } else {
                None
            },
        };
        connect::plan_connect(&target, client, &opts, &config)?
    };
    let name = client.name();
    if plan.is_empty() {
        println!(
            "{name}: nothing to change ({})",
            if args.undo {
                "not connected by codex-free"
            } else {
                "already connected"
            }
        );
        return Ok(());
    }
    if args.dry_run {
        print!("{}", plan.diff());
        println!("(dry run: nothing was written)");
        return Ok(());
    }
    connect::apply(&target, &plan)?;
    for c in &plan.changes {
        let what = match (&c.before, &c.after) {
            (None, Some(_)) => "created",
            (Some(_), None) => "removed",
            _ => "updated",
        };
        println!("{name}: {what} {} ({})", c.path.display(), c.note);
    }
    if args.undo {
        println!("{name}: disconnected");
    } else {
        println!(
            "{name}: connected; undo with `codex-free connect {name} --undo` (backups beside each file, *{})",
            connect::BACKUP_SUFFIX
        );
        if args.http && client == connect::Client::Codex {
            println!(
                "codex reads the token from ${}: export {}=$(codex-free token show)",
                connect::TOKEN_ENV,
                connect::TOKEN_ENV
            );
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
    // Before anything opens a file: the server's own caps bound it, not a shell's 1,024.
    app::raise_open_file_limit();
    let server_opts = match (&args.project, &args.access_root) {
        (Some(p), None) => ServerOptions::single(p, &home, Some(config_path.clone()))?,
        (None, Some(a)) => ServerOptions::multi(a, &home, Some(config_path.clone()))?,
        // One registration for every project: the client's roots, else the working directory.
        (None, None) if args.stdio => ServerOptions::from_client(
            &std::env::current_dir().context("reading the working directory")?,
            &home,
            Some(config_path.clone()),
        )?,
        _ => bail!("give --project DIR (one project) or --access-root DIR (multi-project mode)"),
    };
    let config = Config::load(&config_path)
        .context("loading the config")?
        .config;
    // On stderr for both transports (stdout is the MCP stream under --stdio): the warning
    // whatever the log level, the confirmation as an info log line.
    let sandbox = codex_free_tools::exec::sandbox_status(&config.exec);
    match &sandbox.warning {
        Some(w) => eprintln!("codex-free: WARNING: {w}"),
        None => tracing::info!("command sandbox: {}", sandbox.summary),
    }
    // Over stdio one client talks to this process and its calls are answered one by one:
    // a single worker thread serves it without waking a second worker for every spawned
    // task (measured: cross-thread wake-ups were most of the CPU per call). Blocking tool
    // work still runs on the blocking pool; HTTP serves many sessions and keeps one worker
    // per core.
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    if args.stdio {
        rt.worker_threads(1);
    }
    let rt = rt.enable_all().build()?;
    let signals = {
        let _guard = rt.enter();
        app::ShutdownSignals::install()
    };
    let http = args.http.then(|| {
        (
            args.host.clone().unwrap_or(config.server.host.clone()),
            args.port.unwrap_or(config.server.port),
        )
    });
    let app = App::open(
        AppOptions {
            server: server_opts.clone(),
            http,
            ui: args.ui,
            stoppable: false,
            lock_retry: app::LOCK_RETRY,
            process_label: format!(
                "codex-free serve --{}",
                if args.stdio { "stdio" } else { "http" }
            ),
        },
        secrets(),
        rt.handle().clone(),
    )?;
    if !args.no_pipeline {
        let r = app.pipeline.start();
        if !r.ok {
            tracing::warn!("{}", r.message);
        }
    }
    let result = rt.block_on(async {
        if args.stdio {
            let server = CodexFree::new(server_opts).context("starting the server")?;
            // The session ends when the client closes stdin, or on a signal.
            tokio::select! {
                r = mcp::stdio::serve(server) => r?,
                _ = signals.wait() => {}
            }
            return anyhow::Ok(());
        }
        let Some(http) = app.http.clone() else {
            bail!("no HTTP server configured");
        };
        let addr = http.start_async().await?;
        let token = codex_free_server::http::Credentials::load(&home)?.mcp.get();
        let base = format!("http://{addr}");
        println!("Codex Free MCP server listening on {base}/mcp");
        if args.ui {
            // The UI is loopback-only: link to 127.0.0.1 even when bound to another address.
            let local = match addr.ip() {
                std::net::IpAddr::V6(ip) if ip.is_loopback() => format!("http://[::1]:{}", addr.port()),
                _ => format!("http://127.0.0.1:{}", addr.port()),
            };
            let code = codex_free_server::http::auth::issue_login_code(&home)?;
            println!("  web UI:       {}", codex_free_server::http::auth::login_link(&local, &code));
            println!("                (one-time login link, valid 10 minutes; `codex-free token login` prints a new one)");
        }
        println!("  health:       {base}/health (no auth)");
        println!("  auth header:  Authorization: Bearer {}", token.expose());
        println!("  secret path:  {base}/mcp/{}   (for clients that cannot send headers; keep it secret)", token.expose());
        println!("  token file:   {}   (MCP only; the web UI uses {})",
            codex_free_server::http::auth::token_path(&home, codex_free_server::http::auth::TokenKind::Mcp).display(),
            codex_free_server::http::auth::token_path(&home, codex_free_server::http::auth::TokenKind::Admin).display());
        println!("Press Ctrl-C to stop.");
        use std::io::Write;
        std::io::stdout().flush().ok();
        let stopped = http.cancelled_token().unwrap_or_default();
        tokio::select! {
            _ = signals.wait() => {}
            _ = stopped.cancelled() => {}
        }
        http.shutdown_async().await;
        app.pipeline.stop_async().await;
        anyhow::Ok(())
    });
    // Stops whatever is left (the scheduler after a stdio session) off the runtime.
    app.shutdown();
    rt.shutdown_timeout(std::time::Duration::from_secs(2));
    result
}
