//! The MCP HTTP server embedded in the app: started on launch, stopped and restarted from
//! the tray, serving `/mcp` (behind the MCP token), `/health`, and `/api/...` with the web UI
//! (behind the admin credential, loopback only) on one port (see
//! `codex_free_server::mcp::http`). The app's own window does not use HTTP: its calls are
//! Tauri commands into the same `ApiService`. Implements the API's [`ServerControl`], so the
//! dashboard and the tray show the same state.
//!
//! Invariant: start/stop never block an async worker (they run `block_on` on the app's own
//! runtime from a plain thread); a failed start is kept as the state's `error`.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};

use codex_free_server::api::ApiService;
use codex_free_server::api::dto::{ActionResult, ServerState, ServerStatus};
use codex_free_server::api::hooks::ServerControl;
use codex_free_server::mcp::{self, CodexFree, ServerOptions};

struct Running {
    addr: SocketAddr,
    inner: mcp::http::RunningHttp,
}

/// The embedded server: options to (re)start it, the running instance, the last error.
pub struct EmbeddedServer {
    opts: ServerOptions,
    host: String,
    port: u16,
    rt: tokio::runtime::Handle,
    service: OnceLock<Arc<ApiService>>,
    running: Mutex<Option<Running>>,
    error: Mutex<Option<String>>,
}

impl EmbeddedServer {
    /// A stopped server that will bind `host:port` (0 = any free port) on `rt`.
    pub fn new(opts: ServerOptions, host: String, port: u16, rt: tokio::runtime::Handle) -> Self {
        Self {
            opts,
            host,
            port,
            rt,
            service: OnceLock::new(),
            running: Mutex::new(None),
            error: Mutex::new(None),
        }
    }

    /// Give the server the API service whose routes it mounts (set once, before start).
    pub fn attach(&self, service: Arc<ApiService>) {
        let _ = self.service.set(service);
    }

    /// The bound address while running.
    pub fn addr(&self) -> Option<SocketAddr> {
        self.running
            .lock()
            .expect("poisoned")
            .as_ref()
            .map(|r| r.addr)
    }

    fn do_start(&self) -> codex_free_core::Result<SocketAddr> {
        let mut guard = self.running.lock().expect("poisoned");
        if let Some(r) = guard.as_ref() {
            return Ok(r.addr);
        }
        let server = CodexFree::new(self.opts.clone())?;
        let creds = mcp::http::Credentials::load(&self.opts.home)?;
        let extra = self
            .service
            .get()
            .map(|s| codex_free_server::api::http::router(s.clone()));
        let opts = mcp::http::HttpOptions { extra };
        let (host, port) = (self.host.clone(), self.port);
        let inner = self
            .rt
            .block_on(mcp::http::start(server, &host, port, creds, opts))?;
        let addr = inner.addr;
        *guard = Some(Running { addr, inner });
        Ok(addr)
    }

    /// Start now (at launch), logging and recording a failure instead of returning it.
    pub fn start_now(&self) -> ActionResult {
        self.start().unwrap_or_else(|e| ActionResult {
            ok: false,
            message: e.to_string(),
        })
    }

    /// Stop and wait for the listener to close (idempotent).
    pub fn shutdown(&self) {
        let taken = self.running.lock().expect("poisoned").take();
        if let Some(r) = taken {
            r.inner.cancel.cancel();
            let _ = self.rt.block_on(r.inner.task);
            tracing::info!("MCP server stopped");
        }
    }
}

impl ServerControl for EmbeddedServer {
    fn status(&self) -> ServerStatus {
        let error = self.error.lock().expect("poisoned").clone();
        let clients = self
            .running
            .lock()
            .expect("poisoned")
            .as_ref()
            .map(|r| r.inner.shared.active_clients())
            .unwrap_or(0);
        match self.addr() {
            Some(a) => ServerStatus {
                state: ServerState::Running,
                url: Some(format!("http://{a}/mcp")),
                clients,
                error: None,
            },
            None => ServerStatus {
                state: if error.is_some() {
                    ServerState::Error
                } else {
                    ServerState::Stopped
                },
                url: None,
                clients: 0,
                error,
            },
        }
    }

    fn start(&self) -> codex_free_core::Result<ActionResult> {
        match self.do_start() {
            Ok(a) => {
                *self.error.lock().expect("poisoned") = None;
                Ok(ActionResult {
                    ok: true,
                    message: format!("MCP server listening on http://{a}/mcp"),
                })
            }
            Err(e) => {
                let msg = format!(
                    "could not start the MCP server on {}:{}: {e}",
                    self.host, self.port
                );
                tracing::error!("{msg}");
                if let Some(s) = self.service.get() {
                    s.record_error("server", msg.clone());
                }
                *self.error.lock().expect("poisoned") = Some(msg.clone());
                Ok(ActionResult {
                    ok: false,
                    message: msg,
                })
            }
        }
    }

    fn stop(&self) -> codex_free_core::Result<ActionResult> {
        let was = self.addr().is_some();
        self.shutdown();
        *self.error.lock().expect("poisoned") = None;
        Ok(ActionResult {
            ok: true,
            message: if was {
                "MCP server stopped"
            } else {
                "MCP server was not running"
            }
            .into(),
        })
    }
}
