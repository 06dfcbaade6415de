//! The streamable HTTP transport: `POST/GET/DELETE /mcp` (bearer MCP token) and
//! `/mcp/<token>` (secret path), `/health` without auth, and optional extra routes (the web
//! UI and `/api`, see [`HttpOptions::extra`]) with `/login` behind the admin credential.
//! Binds 127.0.0.1 by default. Every request passes the checks of [`crate::http::auth`]
//! before reaching rmcp or a UI handler: `/mcp…` takes only the MCP token, everything else
//! only the admin credential on a loopback `Host`.
//!
//! Served by [`crate::http::conn`] (header and body deadlines, a connection cap,
//! `TCP_NODELAY`); sessions are bounded by [`crate::mcp::sessions`] (idle expiry, a cap per
//! token); `/login` is rate-limited ([`auth::LoginLimiter`]).
//!
//! Invariant: no route but `/health` and `/login` answers without a credential; no token
//! or session id is logged.

pub mod auth;
pub mod conn;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::http::auth::{
    AdminRequest, Allowed, LiveToken, LoginLimiter, Refusal, Sessions, TokenKind,
};
use crate::http::conn::ConnLimits;
use crate::mcp::CodexFree;
use crate::mcp::server::Shared;
use crate::mcp::sessions::{self, BoundedSessions, SESSION_OWNER, SessionLimits};
use codex_free_core::Error;
use codex_free_core::Result;

/// What to serve besides MCP.
#[derive(Default)]
pub struct HttpOptions {
    /// Extra routes (the web UI and `/api`) served behind the admin credential, plus
    /// `/login`. Without them only `/mcp` and `/health` answer.
    pub extra: Option<Router>,
}

/// The two credentials of an HTTP server (see [`crate::http::auth`]).
pub struct Credentials {
    /// Opens `/mcp` only.
    pub mcp: LiveToken,
    /// Opens the web UI and `/api` only.
    pub admin: LiveToken,
}

impl Credentials {
    /// Both tokens of `home`, created on first use and re-read when rotated.
    /// Errors: a token file cannot be read or written.
    pub fn load(home: &std::path::Path) -> Result<Self> {
        Ok(Self {
            mcp: LiveToken::load(home, TokenKind::Mcp)?,
            admin: LiveToken::load(home, TokenKind::Admin)?,
        })
    }
}

struct GateInner {
    creds: Credentials,
    sessions: Sessions,
    mcp_sessions: Arc<BoundedSessions>,
    login_limit: LoginLimiter,
    shared: Arc<Shared>,
    cookie: String,
}

#[derive(Clone)]
struct Gate(Arc<GateInner>);

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

/// Bind `host:port` and serve. Returns once listening. Errors: bind failure (port in use,
/// bad address).
pub async fn start(
    server: CodexFree,
    host: &str,
    port: u16,
    creds: Credentials,
    opts: HttpOptions,
) -> Result<RunningHttp> {
    let shared = server.shared().clone();
    let config = shared.config.get();
    let cancel = CancellationToken::new();
    let listener = tokio::net::TcpListener::bind((host, port))
        .await
        .map_err(|e| Error::io(format!("binding {host}:{port}"), e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::io("reading the bound address", e))?;
    let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
    hosts.extend(config.server.allowed_hosts.iter().cloned());
    let rmcp_config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_cancellation_token(cancel.child_token());
    let factory_shared = shared.clone();
    let mcp_sessions = Arc::new(BoundedSessions::new(SessionLimits::from_config(
        &config.server,
    )));
    let service = StreamableHttpService::new(
        move || Ok(CodexFree::from_shared(factory_shared.clone())),
        mcp_sessions.clone(),
        rmcp_config,
    );
    tokio::spawn(mcp_sessions.clone().sweep(cancel.child_token()));
    let gate = Gate(Arc::new(GateInner {
        creds,
        sessions: Sessions::default(),
        mcp_sessions,
        login_limit: LoginLimiter::new(config.server.login_attempts_per_minute),
        shared: shared.clone(),
        cookie: auth::session_cookie_name(addr.port()),
    }));
    let mut app = Router::new()
        .route_service("/mcp", service.clone())
        .route_service("/mcp/{secret}", service)
        .layer(middleware::from_fn(ended_session_no_content));
    let with_ui = opts.extra.is_some();
    if let Some(extra) = opts.extra {
        app = app.merge(extra);
    }
    let mut app = app
        .layer(middleware::from_fn_with_state(gate.clone(), guard))
        .route("/health", axum::routing::get(health));
    if with_ui {
        let g = gate.clone();
        app = app.route(
            "/login",
            axum::routing::get(move |req: Request| login(g.clone(), req)),
        );
    }
    let c = cancel.clone();
    let limits = ConnLimits::from_config(&config.server);
    let task = tokio::spawn(conn::serve(listener, app, limits, c));
    tracing::info!("MCP HTTP server listening on http://{addr}/mcp");
    Ok(RunningHttp {
        shared,
        addr,
        cancel,
        task,
    })
}

/// A session ended by `DELETE /mcp` answers `204 No Content`. rmcp answers `202 Accepted`,
/// which the Python MCP SDK reads as a failed termination (it accepts 200 or 204 and logs
/// "Session termination failed: 202").
async fn ended_session_no_content(req: Request, next: Next) -> Response {
    let delete = req.method() == Method::DELETE;
    let mut res = next.run(req).await;
    if delete && res.status() == StatusCode::ACCEPTED {
        *res.status_mut() = StatusCode::NO_CONTENT;
        *res.body_mut() = axum::body::Body::empty();
        res.headers_mut().remove(header::CONTENT_LENGTH);
        res.headers_mut().remove(header::CONTENT_TYPE);
    }
    res
}

async fn health() -> impl IntoResponse {
    axum::Json(
        serde_json::json!({"status": "ok", "name": "codex-free", "version": env!("CARGO_PKG_VERSION")}),
    )
}

fn header_str(h: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

fn host_of(req: &Request) -> Option<&str> {
    header_str(req.headers(), header::HOST).or_else(|| req.uri().authority().map(|a| a.as_str()))
}

/// Headers a proxy or tunnel adds; their presence means the request did not come from a
/// local browser or client directly.
const FORWARDING_HEADERS: &[&str] = &[
    "forwarded",
    "x-forwarded-for",
    "x-forwarded-host",
    "x-forwarded-proto",
    "x-real-ip",
    "cf-connecting-ip",
];

fn admin_request<'a>(gate: &'a GateInner, req: &'a Request) -> AdminRequest<'a> {
    let headers = req.headers();
    AdminRequest {
        host: host_of(req),
        origin: header_str(headers, header::ORIGIN),
        state_changing: !matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS),
        forwarded: FORWARDING_HEADERS.iter().any(|h| headers.contains_key(*h)),
        authorization: header_str(headers, header::AUTHORIZATION),
        session: auth::cookie_value(header_str(headers, header::COOKIE), &gate.cookie),
    }
}

fn is_mcp_path(path: &str) -> bool {
    path == "/mcp" || path.starts_with("/mcp/")
}

async fn guard(State(gate): State<Gate>, req: Request, next: Next) -> Response {
    let path = req.uri().path().to_owned();
    if is_mcp_path(&path) {
        let config = gate.0.shared.config.get();
        let allowed = Allowed {
            hosts: config.server.allowed_hosts.clone(),
            origins: config.server.allowed_origins.clone(),
        };
        let headers = req.headers();
        let path_secret = path
            .strip_prefix("/mcp/")
            .filter(|s| !s.is_empty() && !s.contains('/'));
        let token = gate.0.creds.mcp.get();
        if let Err(r) = auth::check_mcp(
            &token,
            &allowed,
            host_of(&req),
            header_str(headers, header::ORIGIN),
            header_str(headers, header::AUTHORIZATION),
            path_secret,
        ) {
            return refuse(r, &path);
        }
        let owner = sessions::owner_of(token.expose());
        // A POST without a session id opens one (initialize): refused early and clearly
        // when this token's sessions are at the cap and all busy.
        let opens = req.method() == Method::POST && !headers.contains_key("mcp-session-id");
        if opens && let Err(full) = gate.0.mcp_sessions.check(&owner) {
            return (
                StatusCode::TOO_MANY_REQUESTS,
                [(header::RETRY_AFTER, "5")],
                axum::Json(
                    serde_json::json!({"code": "too_many_sessions", "message": full.to_string()}),
                ),
            )
                .into_response();
        }
        return SESSION_OWNER.scope(owner, next.run(req)).await;
    }
    match auth::check_admin(
        &gate.0.creds.admin.get(),
        &gate.0.sessions,
        &admin_request(&gate.0, &req),
    ) {
        Ok(_) => {
            let mut resp = next.run(req).await;
            no_store(&mut resp);
            resp
        }
        Err(r) => refuse(r, &path),
    }
}

#[expect(
    clippy::expect_used,
    reason = "a fixed ASCII header value always parses"
)]
fn no_store(resp: &mut Response) {
    let h = resp.headers_mut();
    h.entry(header::CACHE_CONTROL)
        .or_insert_with(|| "no-store".parse().expect("static header"));
    h.insert(
        header::REFERRER_POLICY,
        "no-referrer".parse().expect("static header"),
    );
    h.insert("x-frame-options", "DENY".parse().expect("static header"));
}

/// `GET /login?code=<one-time code>`: on a loopback Host, redeem the code (single use,
/// see [`auth::redeem_login_code`]), set the session cookie and redirect to `/`.
async fn login(gate: Gate, req: Request) -> Response {
    // Every attempt counts, right or wrong code, before anything is checked.
    if let Err(wait) = gate.0.login_limit.try_acquire() {
        let secs = wait.as_secs().max(1);
        let mut resp = html(
            StatusCode::TOO_MANY_REQUESTS,
            &format!(
                "Too many login attempts (server.loginAttemptsPerMinute). Try again in {secs} s."
            ),
        );
        if let Ok(v) = secs.to_string().parse() {
            resp.headers_mut().insert(header::RETRY_AFTER, v);
        }
        no_store(&mut resp);
        return resp;
    }
    let mut check = admin_request(&gate.0, &req);
    // The code is the credential here; a cookie or header is not needed.
    check.authorization = None;
    check.session = None;
    let admin = gate.0.creds.admin.get();
    match auth::check_admin(&admin, &gate.0.sessions, &check) {
        Err(Refusal::AdminUnauthorized) => {}
        Err(r) => return refuse(r, "/login"),
        Ok(_) => {}
    }
    let code = req
        .uri()
        .query()
        .and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("code=")))
        .unwrap_or("")
        .to_owned();
    let home = gate.0.shared.home.clone();
    let redeemed = !code.is_empty()
        && tokio::task::spawn_blocking(move || auth::redeem_login_code(&home, &code))
            .await
            .ok()
            .and_then(|r| {
                r.map_err(|e| tracing::warn!("login code check failed: {e}"))
                    .ok()
            })
            .unwrap_or(false);
    if !redeemed {
        let mut resp = html(
            StatusCode::UNAUTHORIZED,
            "This login link was already used or has expired. Run <code>codex-free token login</code> for a new one (or restart <code>codex-free serve --http --ui</code>).",
        );
        no_store(&mut resp);
        return resp;
    }
    let id = gate.0.sessions.create(&admin);
    let cookie = format!(
        "{}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}",
        gate.0.cookie,
        auth::SESSION_TTL.as_secs()
    );
    let mut resp = (StatusCode::SEE_OTHER, [(header::LOCATION, "/")]).into_response();
    if let Ok(v) = cookie.parse() {
        resp.headers_mut().append(header::SET_COOKIE, v);
    }
    no_store(&mut resp);
    resp
}

fn html(status: StatusCode, body: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        format!("<!doctype html><meta charset=utf-8><title>Codex Free</title><p>{body}</p>\n"),
    )
        .into_response()
}

#[expect(
    clippy::expect_used,
    reason = "a fixed ASCII header value always parses"
)]
fn refuse(r: Refusal, path: &str) -> Response {
    let (status, code, msg) = match r {
        Refusal::Host => (
            StatusCode::FORBIDDEN,
            "forbidden_host",
            "Host header not allowed (add it to server.allowedHosts to serve /mcp behind a tunnel)",
        ),
        Refusal::LoopbackOnly => (
            StatusCode::FORBIDDEN,
            "forbidden_host",
            "the web UI and /api are served only on http://127.0.0.1, localhost or [::1], never through a tunnel or proxy",
        ),
        Refusal::Origin => (
            StatusCode::FORBIDDEN,
            "forbidden_origin",
            "Origin not allowed (the web UI and /api accept only their own loopback origin; /mcp also those in server.allowedOrigins)",
        ),
        Refusal::OriginMissing => (
            StatusCode::FORBIDDEN,
            "forbidden_origin",
            "a change made with the session cookie needs an Origin header (send the admin token as a bearer header instead)",
        ),
        Refusal::Unauthorized => (
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "missing or wrong MCP token: send 'Authorization: Bearer <token>' (see `codex-free token show`) or use the secret path /mcp/<token>",
        ),
        Refusal::AdminUnauthorized => (
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "the web UI and /api need the admin credential: open the one-time login link printed by `codex-free serve --http --ui` (or `codex-free token login`), or send 'Authorization: Bearer <admin token>' (`codex-free token show --admin`); the MCP token does not open them",
        ),
        Refusal::NotFound => (StatusCode::NOT_FOUND, "not_found", "not found"),
    };
    let ui_page = !is_mcp_path(path) && !path.starts_with("/api/") && path != "/api";
    let mut resp = if ui_page {
        let escaped = msg
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        html(status, &escaped)
    } else {
        (
            status,
            axum::Json(serde_json::json!({"code": code, "message": msg})),
        )
            .into_response()
    };
    if r == Refusal::Unauthorized {
        resp.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            "Bearer".parse().expect("static header"),
        );
    }
    if !is_mcp_path(path) {
        no_store(&mut resp);
    }
    resp
}
