//! A stand-alone web-UI server for developing and testing the UI without the MCP server:
//! `cargo run --example ui_server -- [--port N] [--token T] [--seed-days N] [--memory-keys]`.
//!
//! Serves `api::http::router` on 127.0.0.1 behind a bearer token (the same rule the real
//! `codex-free serve --http --ui` applies), over the state home `CODEX_FREE_HOME`. Keys go
//! to the OS keyring (`secrets::keyring::open`), or to an in-memory store with
//! `--memory-keys`. `--seed-days N` fills the usage view with `api::usage::demo_records`
//! (documented there) so the Runs & costs page has data before the pipeline records any.
//! Prints one line to stdout: the UI address with the token in its fragment.

use std::sync::Arc;

use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::IntoResponse;
use codex_free::api::dto::KeyringStatus;
use codex_free::api::{ApiService, http, usage};
use codex_free::secrets::{MemoryStore, SecretStore, keyring};

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned()
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt().with_writer(std::io::stderr).with_env_filter("info").init();
    let args: Vec<String> = std::env::args().collect();
    let home = codex_free::home::state_home()?;
    std::fs::create_dir_all(&home)?;
    let port: u16 = arg(&args, "--port").map(|p| p.parse()).transpose()?.unwrap_or(0);
    let token = arg(&args, "--token").unwrap_or_else(|| hex::encode(rand::random::<[u8; 16]>()));
    let (store, status): (Arc<dyn SecretStore>, KeyringStatus) = if args.iter().any(|a| a == "--memory-keys") {
        let s = Arc::new(MemoryStore::default());
        let label = s.label();
        (s, KeyringStatus { backend: label, fallback: false, error: None })
    } else {
        let o = keyring::open();
        (o.store, KeyringStatus { backend: o.label, fallback: o.fallback, error: o.error })
    };
    let mut svc = ApiService::new(&home, store, status);
    if let Some(days) = arg(&args, "--seed-days") {
        let rows = usage::demo_records(chrono::Utc::now().timestamp_millis(), days.parse()?);
        svc = svc.with_usage(Arc::new(usage::MemoryUsage::new(rows)));
    }
    let svc = Arc::new(svc);
    let expected = format!("Bearer {token}");
    let api = http::api_router(svc).layer(middleware::from_fn(move |req: Request, next: Next| {
        let ok = req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) == Some(expected.as_str());
        async move {
            if ok {
                next.run(req).await
            } else {
                let body = serde_json::json!({"code": "unauthorized", "message": "missing or wrong bearer token", "fields": []});
                (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response()
            }
        }
    }));
    let app = axum::Router::new()
        .route("/health", axum::routing::get(|| async { "ok" }))
        .merge(api)
        .merge(http::ui_router());
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let addr = listener.local_addr()?;
    println!("http://{addr}/#token={token}");
    axum::serve(listener, app).await?;
    Ok(())
}
