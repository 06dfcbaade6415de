//! The streamable HTTP transport (SRV-1): `POST/GET/DELETE /mcp` (bearer token) and
//! `/mcp/<token>` (secret path), `/health` without auth, and optional extra routes (the web
//! UI and `/api`, see [`HttpOptions::extra`]) behind the same checks. Binds 127.0.0.1 by
//! default. Every request passes Host/Origin/credential checks ([`crate::mcp::auth`])
//! before reaching rmcp.
//!
//! Invariant: no route but `/health` answers without the token; the token is never logged.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::mcp::CodexFree;
use crate::mcp::auth::{self, Allowed, Presented, Refusal, Token};
use crate::mcp::server::Shared;
use codex_free_core::Error;
use codex_free_core::Result;

/// What to serve besides MCP.
#[derive(Default)]
pub struct HttpOptions {
    /// Extra routes (e.g. the web UI and `/api`) merged under the same auth checks.
    pub extra: Option<Router>,
}

#[derive(Clone)]
struct Gate {
    token: Token,
    shared: Arc<Shared>,
}

/// A running HTTP server.
pub struct RunningHttp {
    /// State shared by its sessions (client count, config, exec sessions).
    pub shared: Arc<Shared>,
    /// The bound address (port 0 resolves to the real port).
    pub addr: SocketAddr,
    /// Cancel to stop the server.
    pub cancel: CancellationToken,
    /// The serve task.
    pub task: tokio::task::JoinHandle<()>,
}

/// Bind `host:port` and serve. Returns once listening. `token` comes from
/// [`auth::load_or_create_token`]. Errors: bind failure (port in use, bad address).
pub async fn start(
    server: CodexFree,
    host: &str,
    port: u16,
    token: Token,
    opts: HttpOptions,
) -> Result<RunningHttp> {
    let shared = server.shared().clone();
    let config = shared.config.get();
    let cancel = CancellationToken::new();
    let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
    hosts.extend(config.server.allowed_hosts.iter().cloned());
    let rmcp_config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_cancellation_token(cancel.child_token());
    let factory_shared = shared.clone();
    let service = StreamableHttpService::new(
        move || Ok(CodexFree::from_shared(factory_shared.clone())),
        Arc::new(LocalSessionManager::default()),
        rmcp_config,
    );
    let gate = Gate {
        token,
        shared: shared.clone(),
    };
    let mut app = Router::new()
        .route_service("/mcp", service.clone())
        .route_service("/mcp/{secret}", service);
    if let Some(extra) = opts.extra {
        app = app.merge(extra);
    }
    let app = app
        .layer(middleware::from_fn_with_state(gate, guard))
        .route("/health", axum::routing::get(health));
    let listener = tokio::net::TcpListener::bind((host, port))
        .await
        .map_err(|e| Error::io(format!("binding {host}:{port}"), e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::io("reading the bound address", e))?;
    let c = cancel.clone();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move { c.cancelled_owned().await })
            .await;
    });
    tracing::info!("MCP HTTP server listening on http://{addr}/mcp");
    Ok(RunningHttp {
        shared,
        addr,
        cancel,
        task,
    })
}

async fn health() -> impl IntoResponse {
    axum::Json(
        serde_json::json!({"status": "ok", "name": "codex-free", "version": env!("CARGO_PKG_VERSION")}),
    )
}

fn header_str(h: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

async fn guard(State(gate): State<Gate>, req: Request, next: Next) -> Response {
    let config = gate.shared.config.get();
    let allowed = Allowed {
        hosts: config.server.allowed_hosts.clone(),
        origins: config.server.allowed_origins.clone(),
    };
    let uri: Uri = req.uri().clone();
    let path = uri.path();
    let headers = req.headers();
    let host = header_str(headers, header::HOST).or_else(|| uri.authority().map(|a| a.as_str()));
    let origin = header_str(headers, header::ORIGIN);
    let path_secret = path
        .strip_prefix("/mcp/")
        .filter(|s| !s.is_empty() && !s.contains('/'));
    // The UI is opened as /?token=...: accept it once and set a cookie.
    let query_token = uri
        .query()
        .and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("token=")))
        .map(str::to_owned);
    let presented = Presented {
        authorization: header_str(headers, header::AUTHORIZATION),
        cookie: header_str(headers, header::COOKIE),
        path_secret,
    };
    let mut decision = auth::check_request(&gate.token, &allowed, host, origin, &presented);
    let mut set_cookie = false;
    if decision == Err(Refusal::Unauthorized)
        && !path.starts_with("/mcp")
        && let Some(t) = &query_token
        && gate.token.matches(t)
    {
        decision = Ok(());
        set_cookie = true;
    }
    match decision {
        Ok(()) => {
            let mut resp = next.run(req).await;
            if set_cookie {
                let cookie = format!(
                    "{}={}; Path=/; HttpOnly; SameSite=Strict",
                    auth::COOKIE,
                    gate.token.expose()
                );
                if let Ok(v) = cookie.parse() {
                    resp.headers_mut().append(header::SET_COOKIE, v);
                }
            }
            resp
        }
        Err(r) => refuse(r),
    }
}

fn refuse(r: Refusal) -> Response {
    let (status, code, msg) = match r {
        Refusal::Host => (
            StatusCode::FORBIDDEN,
            "forbidden_host",
            "Host header not allowed (add it to server.allowedHosts to serve behind a tunnel)",
        ),
        Refusal::Origin => (
            StatusCode::FORBIDDEN,
            "forbidden_origin",
            "Origin not allowed (add it to server.allowedOrigins)",
        ),
        Refusal::Unauthorized => (
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "missing or wrong token: send 'Authorization: Bearer <token>' (see `codex-free token show`) or use the secret path /mcp/<token>",
        ),
        Refusal::NotFound => (StatusCode::NOT_FOUND, "not_found", "not found"),
    };
    let mut resp = (
        status,
        axum::Json(serde_json::json!({"code": code, "message": msg})),
    )
        .into_response();
    if r == Refusal::Unauthorized {
        resp.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            "Bearer".parse().expect("static header"),
        );
    }
    resp
}
