//! The `codex-free` command line: `serve`, `config`, `token` (and `memories` with the
//! pipeline). See README.md. Logs go to stderr; stdout carries only command results (and
//! the MCP protocol itself under `serve --stdio`).

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};
use codex_free::config::{CONFIG_FILE, Config};
use codex_free::mcp::{self, CodexFree, ServerOptions};

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
    let home = codex_free::home::state_home()?;
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
    }
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
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async move {
        if args.stdio {
            mcp::stdio::serve(server).await?;
            return Ok(());
        }
        let config = server.shared().config.get();
        let host = args.host.unwrap_or(config.server.host.clone());
        let port = args.port.unwrap_or(config.server.port);
        let token = mcp::auth::load_or_create_token(&home)?;
        let running = mcp::http::start(server, &host, port, token.clone(), Default::default()).await?;
        let base = format!("http://{}", running.addr);
        println!("Codex Free MCP server listening on {base}/mcp");
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
        anyhow::Ok(())
    })
}
