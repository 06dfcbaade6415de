//! HTTP face of [`ApiService`]: JSON routes under `/api/...` and the static web UI.
//!
//! | method | path | body / query | answer |
//! |---|---|---|---|
//! | GET | `/api/status` | | [`Status`] |
//! | GET | `/api/config` | | [`ConfigView`] |
//! | POST | `/api/config/validate` | change object | [`ConfigSaveResult`] (never saves) |
//! | PUT | `/api/config` | change object | [`ConfigSaveResult`]; 422 when it has field errors |
//! | GET | `/api/models` | | [`ModelsView`] |
//! | PUT | `/api/keys/{provider}` | [`SetKeyRequest`] | [`KeyStatus`] |
//! | DELETE | `/api/keys/{provider}` | | [`KeyStatus`] |
//! | POST | `/api/keys/{provider}/test` | | [`ConnectionTest`] |
//! | GET | `/api/runs` | [`RunFilter`] as query | [`RunsView`] |
//! | GET | `/api/runs.csv` | [`RunFilter`] as query | `text/csv` attachment |
//! | GET | `/api/usage` | [`AgentUsageFilter`] as query | [`AgentUsageView`] (imports the agents' transcripts first) |
//! | GET | `/api/usage.csv` | [`AgentUsageFilter`] as query | `text/csv` attachment, one request a line |
//! | GET | `/api/usage/spend` | | [`AgentSpend`]: today's and this month's spend, agents + pipeline |
//! | GET | `/api/memory` | | [`MemoryView`] |
//! | GET | `/api/diagnostics` | | diagnostic text (JSON string; never a key or token) |
//! | GET | `/api/memory/folders` | | [`MemoryFolders`] |
//! | GET | `/api/memory/inspect` | `?folder=ID` | [`MemoryInspect`] (layers, lint findings) |
//! | GET | `/api/memory/history` | `?folder=ID` | [`HistoryView`] |
//! | GET | `/api/memory/commit` | `?folder=ID&rev=C` | [`CommitDiff`] |
//! | POST | `/api/memory/rollback` | [`MemoryActionRequest`] | [`ActionResult`] (state home's folder only) |
//! | GET | `/api/memory/tidy` | `?folder=ID` | [`TidyPlanView`] (never writes) |
//! | POST | `/api/memory/tidy/ask` | [`TidyAskRequest`] | [`TidyPlanView`] (sends the model requests the plan estimated; needs `memories.tidy_ask_model`; writes no memory file) |
//! | POST | `/api/memory/tidy` | [`MemoryActionRequest`] (`accepted`: unit keys; absent = all) | [`ActionResult`] (backup, apply only the accepted units, read-back) |
//! | GET | `/api/memory/review` | | [`ReviewView`] |
//! | POST | `/api/memory/review/{accept,reject}` | | [`ReviewView`] |
//! | GET | `/api/audit/refusals` | `?limit=N` (1..=200, default 20) | [`RefusalsView`] |
//! | POST | `/api/pipeline/{run,pause,resume}` | | [`ActionResult`] |
//! | POST | `/api/server/{start,stop}` | | [`ActionResult`] |
//! | GET | `/api/connect` | | [`ConnectView`] |
//! | GET | `/api/connect/{client}/preview` | `?undo=true` | [`ConnectPlanView`] (never writes) |
//! | POST | `/api/connect/{client}` | [`ConnectRequest`] | [`ConnectPlanView`]; 409 when the files changed since the previewed digest |
//!
//! Failures answer [`ApiError`] JSON with a status from the error code (400 bad argument,
//! 404 not found, 409 busy, 503 secrets store unreachable, 500 otherwise).
//!
//! Auth is not done here: [`crate::http`] mounts these routes behind the admin
//! credential (the admin token as a bearer header, or the HttpOnly session cookie that
//! `/login?code=<one-time code>` sets), on loopback `Host` values only, with an `Origin`
//! check on every state change; the MCP token does not open them. [`ui_router`] serves the
//! built UI files (`ui/dist`, embedded in release builds, read from disk in debug builds)
//! behind the same check; the page itself holds no token and its `fetch` calls ride on
//! the session cookie. [`api_routes`] lists every route, for tests; [`dispatch`] runs one
//! request through the same router in process (the desktop window's single Tauri command).
//!
//! Invariant: handlers run service calls on a blocking thread (`spawn_blocking`), never on
//! the async workers; no handler logs a request body (it may hold a key).

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use serde_json::Value;

use super::ApiService;
use super::dto::*;
use codex_free_core::Error;
use codex_free_core::error::ErrorCode;

type Svc = Arc<ApiService>;

/// `?undo=true` of the connect preview.
#[derive(serde::Deserialize)]
struct UndoQuery {
    #[serde(default)]
    undo: bool,
}

/// An error answer.
struct Fail(StatusCode, ApiError);

impl IntoResponse for Fail {
    fn into_response(self) -> Response {
        (self.0, Json(self.1)).into_response()
    }
}

impl From<Error> for Fail {
    fn from(e: Error) -> Self {
        let status = StatusCode::from_u16(e.code().http_status())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        Fail(status, super::api_error(&e))
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> codex_free_core::Result<T> + Send + 'static,
) -> Result<T, Fail> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r.map_err(Fail::from),
        Err(e) => Err(Fail(
            StatusCode::INTERNAL_SERVER_ERROR,
            ApiError {
                code: ErrorCode::Internal.into(),
                message: format!("handler failed: {e}"),
                fields: Vec::new(),
            },
        )),
    }
}

async fn json<T: Serialize + Send + 'static>(
    f: impl FnOnce() -> codex_free_core::Result<T> + Send + 'static,
) -> Result<Json<T>, Fail> {
    blocking(f).await.map(Json)
}

/// A CSV download: the text of `f` as `text/csv` with `disposition` (a static
/// `attachment; filename="…"`).
async fn csv(
    f: impl FnOnce() -> codex_free_core::Result<String> + Send + 'static,
    disposition: &'static str,
) -> Result<Response, Fail> {
    let text = blocking(f).await?;
    Ok((
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/csv; charset=utf-8"),
            ),
            (
                header::CONTENT_DISPOSITION,
                HeaderValue::from_static(disposition),
            ),
        ],
        text,
    )
        .into_response())
}

/// One `/api` route: its method and path pattern (`{provider}` is a path parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiRoute {
    /// `GET`, `POST`, `PUT` or `DELETE`.
    pub method: &'static str,
    /// Path pattern, e.g. `/api/keys/{provider}`.
    pub path: &'static str,
}

/// Builds the router and the list of its routes from the same calls, so the list (used
/// by the access-control tests) cannot miss a route.
struct Table {
    router: Router<Svc>,
    routes: Vec<ApiRoute>,
}

macro_rules! verb {
    ($name:ident, $method:literal, $axum:ident) => {
        fn $name<H, T>(mut self, path: &'static str, h: H) -> Self
        where
            H: axum::handler::Handler<T, Svc>,
            T: 'static,
        {
            self.router = self.router.route(path, axum::routing::$axum(h));
            self.routes.push(ApiRoute {
                method: $method,
                path,
            });
            self
        }
    };
}

impl Table {
    verb!(get, "GET", get);
    verb!(post, "POST", post);
    verb!(put, "PUT", put);
    verb!(delete, "DELETE", delete);
}

/// Long on purpose: the route table: one line per `/api` route, so every route is found in one
/// place.
#[expect(
    clippy::too_many_lines,
    reason = "the route table: one line per `/api` route, so every route is found in one place"
)]
fn table() -> Table {
    Table {
        router: Router::new(),
        routes: Vec::new(),
    }
    .get("/api/status", |State(s): State<Svc>| {
        json(move || s.status())
    })
    .get("/api/connect", |State(s): State<Svc>| {
        json(move || s.connect_view())
    })
    .get(
        "/api/connect/{client}/preview",
        |State(s): State<Svc>, Path(client): Path<String>, Query(q): Query<UndoQuery>| {
            json(move || s.connect_preview(&client, q.undo))
        },
    )
    .post(
        "/api/connect/{client}",
        |State(s): State<Svc>, Path(client): Path<String>, Json(req): Json<ConnectRequest>| {
            json(move || s.connect_apply(&client, &req))
        },
    )
    .get("/api/config", |State(s): State<Svc>| {
        json(move || s.get_config())
    })
    .put(
        "/api/config",
        |State(s): State<Svc>, Json(patch): Json<Value>| async move {
            let r = blocking(move || s.save_config(&patch)).await?;
            let code = if r.saved {
                StatusCode::OK
            } else {
                StatusCode::UNPROCESSABLE_ENTITY
            };
            Ok::<_, Fail>((code, Json(r)))
        },
    )
    .post(
        "/api/config/validate",
        |State(s): State<Svc>, Json(patch): Json<Value>| {
            json(move || Ok(s.validate_config(&patch)))
        },
    )
    .get("/api/models", |State(s): State<Svc>| {
        json(move || s.models())
    })
    .put(
        "/api/keys/{provider}",
        |State(s): State<Svc>, Path(p): Path<String>, Json(body): Json<SetKeyRequest>| {
            json(move || s.set_key(&p, &body.key))
        },
    )
    .delete(
        "/api/keys/{provider}",
        |State(s): State<Svc>, Path(p): Path<String>| json(move || s.delete_key(&p)),
    )
    .post(
        "/api/keys/{provider}/test",
        |State(s): State<Svc>, Path(p): Path<String>| json(move || s.test_connection(&p)),
    )
    .get(
        "/api/runs",
        |State(s): State<Svc>, Query(f): Query<RunFilter>| json(move || s.runs(&f)),
    )
    .get("/api/forecast", |State(s): State<Svc>| {
        json(move || s.forecast())
    })
    .get("/api/outgoing", |State(s): State<Svc>| {
        json(move || s.outgoing())
    })
    .post(
        "/api/outgoing/approve-all",
        |State(s): State<Svc>, Json(r): Json<super::outgoing::ApproveRequest>| {
            json(move || s.outgoing_approve(None, r.always))
        },
    )
    .post(
        "/api/outgoing/allow",
        |State(s): State<Svc>, Json(r): Json<super::outgoing::AllowProjectRequest>| {
            json(move || s.outgoing_allow(&r))
        },
    )
    .post(
        "/api/outgoing/{id}/approve",
        |State(s): State<Svc>,
         Path(id): Path<String>,
         Json(r): Json<super::outgoing::ApproveRequest>| {
            json(move || s.outgoing_approve(Some(&id), r.always))
        },
    )
    .post(
        "/api/outgoing/{id}/deny",
        |State(s): State<Svc>, Path(id): Path<String>| json(move || s.outgoing_deny(&id)),
    )
    .get(
        "/api/sent/{sha256}",
        |State(s): State<Svc>, Path(h): Path<String>| json(move || s.sent_request(&h)),
    )
    .get(
        "/api/runs.csv",
        |State(s): State<Svc>, Query(f): Query<RunFilter>| {
            csv(
                move || s.runs_csv(&f),
                "attachment; filename=\"codex-free-usage.csv\"",
            )
        },
    )
    .get(
        "/api/usage",
        |State(s): State<Svc>, Query(f): Query<AgentUsageFilter>| json(move || s.agent_usage(&f)),
    )
    .get(
        "/api/usage.csv",
        |State(s): State<Svc>, Query(f): Query<AgentUsageFilter>| {
            csv(
                move || s.agent_usage_csv(&f),
                "attachment; filename=\"codex-free-agent-usage.csv\"",
            )
        },
    )
    .get("/api/usage/spend", |State(s): State<Svc>| {
        json(move || s.agent_spend())
    })
    .get("/api/memory", |State(s): State<Svc>| {
        json(move || s.memory())
    })
    .get("/api/diagnostics", |State(s): State<Svc>| {
        json(move || s.diagnostics())
    })
    .get("/api/memory/folders", |State(s): State<Svc>| {
        json(move || Ok(s.memory_folders()))
    })
    .get(
        "/api/memory/inspect",
        |State(s): State<Svc>, Query(q): Query<FolderQuery>| {
            json(move || s.memory_inspect(&q.folder))
        },
    )
    .get(
        "/api/memory/history",
        |State(s): State<Svc>, Query(q): Query<FolderQuery>| {
            json(move || s.memory_history(&q.folder))
        },
    )
    .get(
        "/api/memory/commit",
        |State(s): State<Svc>, Query(q): Query<FolderQuery>| {
            json(move || s.memory_commit(&q.folder, q.rev.as_deref().unwrap_or("HEAD")))
        },
    )
    .post(
        "/api/memory/rollback",
        |State(s): State<Svc>, Json(r): Json<MemoryActionRequest>| {
            json(move || s.memory_rollback(&r.folder, r.rev.as_deref().unwrap_or_default()))
        },
    )
    .get(
        "/api/memory/tidy",
        |State(s): State<Svc>, Query(q): Query<FolderQuery>| {
            json(move || s.memory_tidy_plan(&q.folder, false))
        },
    )
    .post(
        "/api/memory/tidy/ask",
        |State(s): State<Svc>, Json(r): Json<TidyAskRequest>| {
            json(move || s.memory_tidy_plan(&r.folder, true))
        },
    )
    .post(
        "/api/memory/tidy",
        |State(s): State<Svc>, Json(r): Json<MemoryActionRequest>| {
            json(move || s.memory_tidy_apply(&r.folder, r.accepted.as_deref()))
        },
    )
    .get("/api/memory/review", |State(s): State<Svc>| {
        json(move || s.memory_review(None))
    })
    .post(
        "/api/memory/review/{action}",
        |State(s): State<Svc>, Path(action): Path<String>| {
            json(move || {
                let a = match action.as_str() {
                    "accept" => codex_free_memory::review::ReviewAction::Accept,
                    "reject" => codex_free_memory::review::ReviewAction::Reject,
                    _ => {
                        return Err(codex_free_core::Error::InvalidArgument(format!(
                            "review action {action:?}: accept or reject"
                        )));
                    }
                };
                s.memory_review(Some(a))
            })
        },
    )
    .get(
        "/api/audit/refusals",
        |State(s): State<Svc>, Query(q): Query<RefusalsQuery>| {
            json(move || s.refusals(q.limit.unwrap_or(0)))
        },
    )
    .post("/api/pipeline/run", |State(s): State<Svc>| {
        json(move || s.pipeline_run_now())
    })
    .post("/api/pipeline/pause", |State(s): State<Svc>| {
        json(move || s.pipeline_pause(true))
    })
    .post("/api/pipeline/resume", |State(s): State<Svc>| {
        json(move || s.pipeline_pause(false))
    })
    .post("/api/server/start", |State(s): State<Svc>| {
        json(move || s.server_start())
    })
    .post("/api/server/stop", |State(s): State<Svc>| {
        json(move || s.server_stop())
    })
}

/// Query of the memory folder routes: `?folder=<id>[&rev=<commit>]`.
#[derive(Debug, Default, serde::Deserialize)]
struct FolderQuery {
    /// Folder id from `GET /api/memory/folders` (default `home`).
    #[serde(default = "home_id")]
    folder: String,
    /// A commit (for `/api/memory/commit`).
    rev: Option<String>,
}

fn home_id() -> String {
    "home".into()
}

/// Query of `GET /api/audit/refusals`.
#[derive(Debug, Default, serde::Deserialize)]
struct RefusalsQuery {
    /// How many (1..=200, default 20).
    limit: Option<usize>,
}

/// Every route of [`api_router`] (not its catch-all 404), in registration order.
pub fn api_routes() -> Vec<ApiRoute> {
    table().routes
}

/// The JSON API routes. Mount them only behind the admin check of
/// [`crate::http`] (the routes themselves authenticate nothing).
pub fn api_router(service: Svc) -> Router {
    table()
        .router
        .route(
            "/api/{*rest}",
            axum::routing::any(|Path(rest): Path<String>| async move {
                Fail(
                    StatusCode::NOT_FOUND,
                    ApiError {
                        code: ErrorCode::NotFound.into(),
                        message: format!("no API route /api/{rest}"),
                        fields: Vec::new(),
                    },
                )
            }),
        )
        .with_state(service)
}

/// The answer of [`dispatch`]: status, content type and body text.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Dispatched {
    /// HTTP status code.
    pub status: u16,
    /// `Content-Type` of the answer (`application/json`, `text/csv; …`).
    pub content_type: String,
    /// The body as text (JSON or CSV).
    pub body: String,
}

/// Largest answer [`dispatch`] returns, bytes: far above any view (runs are paged) and
/// small enough that a runaway answer cannot exhaust the app's memory.
pub const MAX_DISPATCH_BYTES: usize = 64 * 1024 * 1024;

/// Run one `/api` request in process through the same router the HTTP server mounts, so
/// the desktop window's calls (one Tauri command) and the browser's reach the same
/// handlers: the route table above is the only list of endpoints. `path` includes the
/// query (`/api/runs?phase=phase1`); only `/api/…` paths are accepted. No auth here: the
/// caller is the app's own window.
///
/// Errors: a path outside `/api/` or a body that is not JSON → a 400 answer, never a panic.
pub async fn dispatch(service: Svc, method: &str, path: &str, body: Option<Value>) -> Dispatched {
    use tower::ServiceExt as _;
    let bad = |message: String| Dispatched {
        status: 400,
        content_type: "application/json".into(),
        body: serde_json::to_string(&ApiError {
            code: ErrorCode::InvalidArgument.into(),
            message,
            fields: Vec::new(),
        })
        .unwrap_or_default(),
    };
    if !path.starts_with("/api/") || path.contains("..") {
        return bad(format!("not an API path: {path}"));
    }
    let Ok(method) = axum::http::Method::from_bytes(method.as_bytes()) else {
        return bad(format!("not an HTTP method: {method}"));
    };
    let mut req = axum::http::Request::builder().method(method).uri(path);
    let body = match body {
        Some(v) => {
            req = req.header(header::CONTENT_TYPE, "application/json");
            axum::body::Body::from(v.to_string())
        }
        None => axum::body::Body::empty(),
    };
    let req = match req.body(body) {
        Ok(r) => r,
        Err(e) => return bad(format!("bad request: {e}")),
    };
    let resp = match api_router(service).oneshot(req).await {
        Ok(r) => r,
        Err(e) => match e {},
    };
    let status = resp.status().as_u16();
    let content_type = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_string();
    match axum::body::to_bytes(resp.into_body(), MAX_DISPATCH_BYTES).await {
        Ok(b) => Dispatched {
            status,
            content_type,
            body: String::from_utf8_lossy(&b).into_owned(),
        },
        Err(e) => bad(format!(
            "answer unreadable or over {MAX_DISPATCH_BYTES} bytes: {e}"
        )),
    }
}

/// The built web UI (`ui/dist`). Embedded at compile time in release builds; read from
/// the source tree at run time in debug builds (rebuild the UI without rebuilding Rust).
#[derive(rust_embed::RustEmbed)]
#[folder = "../../ui/dist/"]
#[allow_missing = true]
struct UiAssets;

/// Whether the UI files are available (false when `ui/dist` was not built).
pub fn ui_available() -> bool {
    UiAssets::get("index.html").is_some()
}

async fn asset(uri: Uri) -> Response {
    let path = uri.path().trim_start_matches('/');
    let (file, name) = match UiAssets::get(path).filter(|_| !path.is_empty()) {
        Some(f) => (f, path),
        None if path.starts_with("assets/") || path.starts_with("api/") => {
            return (StatusCode::NOT_FOUND, "not found").into_response();
        }
        // Any other path is a page of the single-page app.
        None => match UiAssets::get("index.html") {
            Some(f) => (f, "index.html"),
            None => {
                return (
                    StatusCode::SERVICE_UNAVAILABLE,
                    [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                    "The web UI is not built. Run `npm ci && npm run build` in ui/ (or scripts/ui-e2e.sh), then reload.\n",
                )
                    .into_response();
            }
        },
    };
    let mime = file.metadata.mimetype().to_string();
    let cache = if name.starts_with("assets/") {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    (
        [
            (header::CONTENT_TYPE, mime),
            (header::CACHE_CONTROL, cache.to_string()),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_string()),
        ],
        file.data.into_owned(),
    )
        .into_response()
}

/// Static UI routes: every GET that is not `/api/...` gets a UI file or `index.html`.
pub fn ui_router() -> Router {
    Router::new().fallback(get(asset))
}

/// [`api_router`] merged with [`ui_router`], for hosts that put one auth layer in front
/// of the API only (see the module doc) or for tests.
pub fn router(service: Svc) -> Router {
    api_router(service).merge(ui_router())
}

#[cfg(test)]
mod tests {
    use super::*;
    use codex_free_secrets::{MemoryStore, SecretStore};
    use serde_json::json;

    async fn serve() -> (tempfile::TempDir, String, Arc<MemoryStore>) {
        let (d, svc, store) = crate::api::tests::service();
        let usage = Arc::new(crate::api::usage::MemoryUsage::new(
            crate::api::usage::demo_records(1_780_000_000_000, 5),
        ));
        let svc = Arc::new(svc.with_usage(usage));
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", l.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(l, router(svc)).await.unwrap() });
        (d, url, store)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_usage_query_names_its_time_zone_and_an_unknown_one_is_refused() {
        let (_home, svc, _keys) = crate::api::tests::service();
        let svc = Arc::new(svc);
        let ok = dispatch(svc.clone(), "GET", "/api/usage?timezone=Asia/Tokyo", None).await;
        assert_eq!(ok.status, 200, "{}", ok.body);
        let v: serde_json::Value = serde_json::from_str(&ok.body).unwrap();
        assert_eq!(v["timezone"], "Asia/Tokyo");
        let bad = dispatch(svc.clone(), "GET", "/api/usage?timezone=Mars/Nowhere", None).await;
        assert_eq!(bad.status, 400, "{}", bad.body);
        assert!(bad.body.contains("Mars/Nowhere"), "{}", bad.body);
        let csv = dispatch(svc, "GET", "/api/usage.csv?timezone=Mars/Nowhere", None).await;
        assert_eq!(csv.status, 400, "{}", csv.body);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn dispatch_answers_as_the_http_server_does() {
        let (_home, svc, _keys) = crate::api::tests::service();
        let svc = Arc::new(svc);
        let st = dispatch(svc.clone(), "GET", "/api/status", None).await;
        assert_eq!(
            (st.status, st.content_type.as_str()),
            (200, "application/json")
        );
        assert!(st.body.contains("\"pipeline\""), "{}", st.body);
        // A body and a query reach the same handlers.
        let bad = dispatch(
            svc.clone(),
            "PUT",
            "/api/config",
            Some(json!({"output": {"maxFileLines": -1}})),
        )
        .await;
        assert_eq!(bad.status, 422, "{}", bad.body);
        let csv = dispatch(svc.clone(), "GET", "/api/runs.csv?phase=phase1", None).await;
        assert!(csv.content_type.starts_with("text/csv"), "{csv:?}");
        // Not an endpoint, not an API path, not a method: clear errors.
        assert_eq!(
            dispatch(svc.clone(), "GET", "/api/nope", None).await.status,
            404
        );
        assert_eq!(
            dispatch(svc.clone(), "GET", "/health", None).await.status,
            400
        );
        assert_eq!(
            dispatch(svc.clone(), "GET", "/api/../etc/passwd", None)
                .await
                .status,
            400
        );
        assert_eq!(
            dispatch(svc.clone(), "GE T", "/api/status", None)
                .await
                .status,
            400
        );
        // Every route of the one table is reachable through dispatch (none answers the
        // catch-all 404 or 405), so the window can call all that the browser can.
        for r in api_routes() {
            let path = r
                .path
                .replace("{provider}", "openai")
                .replace("{client}", "codex")
                .replace("{*rest}", "x");
            let body = matches!(r.method, "PUT" | "POST").then(|| json!({}));
            let a = dispatch(svc.clone(), r.method, &path, body).await;
            let no_route = a.status == 404 && a.body.contains("no API route");
            assert!(!no_route && a.status != 405, "{} {path}: {a:?}", r.method);
        }
    }

    #[tokio::test]
    async fn routes_answer_json_and_errors() {
        let (d, url, store) = serve().await;
        let c = reqwest::Client::new();
        let st: Value = c
            .get(format!("{url}/api/status"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(st["server"]["state"], "unknown");
        let r = c
            .put(format!("{url}/api/config"))
            .json(&json!({"output": {"maxFileLines": 0}}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 422);
        let body: ConfigSaveResult = r.json().await.unwrap();
        assert_eq!(body.errors[0].key, "output.maxFileLines");
        assert!(!d.path().join("codex.config.json").exists());
        let r = c
            .put(format!("{url}/api/config"))
            .json(&json!({"output": {"maxFileLines": 7}}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert!(
            std::fs::read_to_string(d.path().join("codex.config.json"))
                .unwrap()
                .contains("\"maxFileLines\": 7")
        );
        let r = c
            .put(format!("{url}/api/keys/anthropic"))
            .json(&json!({"key": "sk-ant-0000000000009876"}))
            .send()
            .await
            .unwrap();
        let ks: KeyStatus = r.json().await.unwrap();
        assert_eq!(ks.hint.as_deref(), Some("…9876"));
        assert!(store.get("anthropic").unwrap().is_some());
        let r = c
            .put(format!("{url}/api/keys/nobody"))
            .json(&json!({"key": "x"}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400);
        let e: ApiError = r.json().await.unwrap();
        assert_eq!(e.code, "invalid_argument");
        let runs: RunsView = c
            .get(format!("{url}/api/runs?phase=phase1"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(runs.runs.len(), 5);
        let csv = c
            .get(format!("{url}/api/runs.csv?phase=phase2"))
            .send()
            .await
            .unwrap();
        assert_eq!(csv.headers()["content-type"], "text/csv; charset=utf-8");
        assert_eq!(csv.text().await.unwrap().lines().count(), 1 + 4);
        let r = c.get(format!("{url}/api/nope")).send().await.unwrap();
        assert_eq!(r.status(), 404);
        let r = c
            .post(format!("{url}/api/pipeline/pause"))
            .send()
            .await
            .unwrap();
        let a: ActionResult = r.json().await.unwrap();
        assert!(a.ok);
    }

    /// The route list is the router: each listed (method, path) is served (not the
    /// catch-all 404, not 405), and each listed path answers 405 to the methods not listed.
    #[tokio::test]
    async fn route_list_matches_the_router() {
        let (_d, url, _store) = serve().await;
        let c = reqwest::Client::new();
        let routes = api_routes();
        assert!(routes.len() >= 17, "{routes:?}");
        for r in &routes {
            let path = r.path.replace("{provider}", "nobody");
            for m in ["GET", "POST", "PUT", "DELETE", "PATCH"] {
                let listed = routes.iter().any(|x| x.path == r.path && x.method == m);
                let resp = c
                    .request(m.parse().unwrap(), format!("{url}{path}"))
                    .json(&json!({}))
                    .send()
                    .await
                    .unwrap();
                let status = resp.status().as_u16();
                let body = resp.text().await.unwrap_or_default();
                let catch_all = body.contains("no API route");
                if listed {
                    assert!(status != 405 && !catch_all, "{m} {path}: {status} {body}");
                } else {
                    assert_eq!(status, 405, "{m} {path} is not listed but answers {status}");
                }
            }
        }
    }
}
