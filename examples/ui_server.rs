//! The headless web UI on the real MCP HTTP server, for developing and testing the UI
//! until `codex-free serve --http --ui` lands:
//! `cargo run --example ui_server -- --project DIR [--port N] [--seed-days N] [--memory-keys]`.
//!
//! Starts `mcp::http::start` on 127.0.0.1 with `api::http::router` as its extra routes, so
//! `/mcp`, `/api/...` and the UI share one port and one token check (bearer header, or the
//! cookie set by opening `/?token=...`). State home: `CODEX_FREE_HOME`. Keys go to the OS
//! keyring (`secrets::keyring::open`: Secret Service, else the keyutils fallback), or to an
//! in-memory store with `--memory-keys`. `--seed-days N` fills Runs & costs with
//! `api::usage::demo_records` (documented there) until the pipeline records real runs.
//!
//! stdout: line 1 the UI address (with the token), line 2 the MCP endpoint, line 3 the token.

use std::sync::{Arc, OnceLock};

use anyhow::Context;
use codex_free::api::dto::{ActionResult, KeyringStatus, ServerState, ServerStatus};
use codex_free::api::hooks::ServerControl;
use codex_free::api::{ApiService, http, usage};
use codex_free::mcp::{self, CodexFree, ServerOptions};
use codex_free::secrets::{MemoryStore, SecretStore, keyring};

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

/// The server this process runs: up while the process lives. The URL is known only after
/// binding, so it is filled in once the listener is up.
struct Here(Arc<OnceLock<String>>);

impl ServerControl for Here {
    fn status(&self) -> ServerStatus {
        ServerStatus {
            state: ServerState::Running,
            url: self.0.get().cloned(),
            clients: 0,
            error: None,
        }
    }
    fn start(&self) -> codex_free::Result<ActionResult> {
        Ok(ActionResult {
            ok: true,
            message: "already running".into(),
        })
    }
    fn stop(&self) -> codex_free::Result<ActionResult> {
        Ok(ActionResult {
            ok: false,
            message: "the headless server stops with Ctrl-C".into(),
        })
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::new("info,rmcp=warn"))
        .init();
    let args: Vec<String> = std::env::args().collect();
    let home = codex_free::home::state_home()?;
    std::fs::create_dir_all(&home)?;
    let project = arg(&args, "--project").context("give --project DIR")?;
    let port: u16 = arg(&args, "--port")
        .map(|p| p.parse())
        .transpose()?
        .unwrap_or(0);
    let (store, status): (Arc<dyn SecretStore>, KeyringStatus) =
        if args.iter().any(|a| a == "--memory-keys") {
            let s = Arc::new(MemoryStore::default());
            let label = s.label();
            (
                s,
                KeyringStatus {
                    backend: label,
                    fallback: false,
                    error: None,
                },
            )
        } else {
            let o = keyring::open();
            (
                o.store,
                KeyringStatus {
                    backend: o.label,
                    fallback: o.fallback,
                    error: o.error,
                },
            )
        };
    let server = CodexFree::new(ServerOptions::single(project.as_ref(), &home, None)?)?;
    let token = mcp::auth::load_or_create_token(&home)?;
    let url = Arc::new(OnceLock::<String>::new());
    let mut svc = ApiService::new(&home, store, status).with_server(Arc::new(Here(url.clone())));
    if let Some(days) = arg(&args, "--seed-days") {
        let rows = usage::demo_records(chrono::Utc::now().timestamp_millis(), days.parse()?);
        svc = svc.with_usage(Arc::new(usage::MemoryUsage::new(rows)));
    }
    let opts = mcp::http::HttpOptions {
        extra: Some(http::router(Arc::new(svc))),
    };
    let running = mcp::http::start(server, "127.0.0.1", port, token.clone(), opts).await?;
    let base = format!("http://{}", running.addr);
    let _ = url.set(format!("{base}/mcp"));
    println!("{base}/?token={}", token.expose());
    println!("{base}/mcp");
    println!("{}", token.expose());
    use std::io::Write;
    std::io::stdout().flush().ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = running.cancel.cancelled() => {}
    }
    running.cancel.cancel();
    let _ = running.task.await;
    Ok(())
}
