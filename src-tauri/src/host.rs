//! The app's state and every tray action as a plain function over it, with no Tauri or
//! GTK types, so tests call them directly (Linux delivers no tray clicks to a test).
//! The Tauri glue in `tray.rs` only maps menu ids to these functions and shows results.
//!
//! Invariant: nothing here touches a display; actions return what to show or copy.

use std::path::PathBuf;
use std::sync::Arc;

use codex_free_server::api::ApiService;
use codex_free_server::api::dto::{ActionResult, PipelineState, ServerState, Status};
use codex_free_server::api::hooks::ServerControl;
use codex_free_server::app::{App, HttpHost};

/// Which tray icon to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IconState {
    /// Server listening.
    Running,
    /// Server stopped by the user.
    Stopped,
    /// Server failed to start.
    Error,
}

/// Shared app state (held by Tauri as managed state and by the tray).
pub struct AppHost {
    /// Everything the process hosts, assembled by [`App::open`].
    pub app: Arc<App>,
    /// The UI's service (`app.service`).
    pub service: Arc<ApiService>,
    /// The embedded MCP server (`app.http`).
    pub server: Arc<HttpHost>,
    /// State home.
    pub home: PathBuf,
}

impl AppHost {
    /// Wrap an [`App`] that hosts an HTTP server. Errors when it does not.
    pub fn new(app: Arc<App>) -> anyhow::Result<Self> {
        let server = app
            .http
            .clone()
            .ok_or_else(|| anyhow::anyhow!("the app needs an HTTP server"))?;
        Ok(Self {
            service: app.service.clone(),
            home: app.home.clone(),
            server,
            app,
        })
    }
}

fn usd(x: f64) -> String {
    if x > 0.0 && x < 0.01 {
        format!("${x:.4}")
    } else {
        format!("${x:.2}")
    }
}

impl AppHost {
    /// The current status (dashboard data).
    pub fn status(&self) -> codex_free_core::Result<Status> {
        self.service.status()
    }

    /// First tray line, e.g. `Server: running on http://127.0.0.1:3000/mcp`.
    pub fn server_line(&self) -> String {
        let s = self.server.status();
        match s.state {
            ServerState::Running => format!("Server: running on {}", s.url.unwrap_or_default()),
            ServerState::Error => "Server: failed to start (see dashboard)".into(),
            _ => "Server: stopped".into(),
        }
    }

    /// Label of the start/stop item.
    pub fn toggle_label(&self) -> &'static str {
        if self.server.addr().is_some() {
            "Stop server"
        } else {
            "Start server"
        }
    }

    /// Start the server when stopped, stop it when running.
    pub fn toggle_server(&self) -> ActionResult {
        let r = if self.server.addr().is_some() {
            self.server.stop()
        } else {
            self.server.start()
        };
        r.unwrap_or_else(|e| ActionResult {
            ok: false,
            message: e.to_string(),
        })
    }

    /// The MCP URL to copy (no token in it), when running.
    pub fn mcp_url(&self) -> Option<String> {
        self.server.status().url
    }

    /// The MCP token to copy (for MCP clients; it does not open the web UI or `/api`).
    pub fn token(&self) -> codex_free_core::Result<String> {
        Ok(codex_free_server::http::auth::load_or_create(
            &self.home,
            codex_free_server::http::auth::TokenKind::Mcp,
        )?
        .expose()
        .to_string())
    }

    /// The admin token (web UI and `/api` over HTTP on loopback).
    pub fn admin_token(&self) -> codex_free_core::Result<String> {
        Ok(codex_free_server::http::auth::load_or_create(
            &self.home,
            codex_free_server::http::auth::TokenKind::Admin,
        )?
        .expose()
        .to_string())
    }

    /// A one-time login link to open the web UI in a browser (valid 10 minutes, single
    /// use), when the server is running.
    pub fn ui_url(&self) -> Option<String> {
        let addr = self.server.addr()?;
        let code = codex_free_server::http::auth::issue_login_code(&self.home).ok()?;
        let base = match addr.ip() {
            std::net::IpAddr::V6(ip) if ip.is_loopback() => format!("http://[::1]:{}", addr.port()),
            _ => format!("http://127.0.0.1:{}", addr.port()),
        };
        Some(codex_free_server::http::auth::login_link(&base, &code))
    }

    /// Run the pipeline now.
    pub fn run_pipeline(&self) -> ActionResult {
        self.service
            .pipeline_run_now()
            .unwrap_or_else(|e| ActionResult {
                ok: false,
                message: e.to_string(),
            })
    }

    /// Whether the pipeline is paused.
    pub fn pipeline_paused(&self) -> bool {
        self.service
            .status()
            .map(|s| s.pipeline.state == PipelineState::Paused)
            .unwrap_or(false)
    }

    /// Label of the pause/resume item.
    pub fn pause_label(&self) -> &'static str {
        if self.pipeline_paused() {
            "Resume pipeline"
        } else {
            "Pause pipeline"
        }
    }

    /// Pause when running, resume when paused.
    pub fn toggle_pipeline(&self) -> ActionResult {
        let paused = self.pipeline_paused();
        self.service
            .pipeline_pause(!paused)
            .unwrap_or_else(|e| ActionResult {
                ok: false,
                message: e.to_string(),
            })
    }

    /// Pipeline spend line, e.g. `Pipeline: $0.04 today · $1.20 this month of $5.00`.
    pub fn spend_line(&self) -> String {
        match self.service.spend() {
            Ok(s) => format!(
                "Pipeline: {} today · {} this month{}{}",
                usd(s.today_usd),
                usd(s.month_usd),
                s.cap_usd
                    .map(|c| format!(" of {}", usd(c)))
                    .unwrap_or_default(),
                if s.cap_reached { " (cap reached)" } else { "" }
            ),
            Err(e) => format!("Pipeline spend: unavailable ({})", e.code()),
        }
    }

    /// All agents' spend line (Codex, Claude Code, pi and the pipeline), e.g.
    /// `All agents: $3.10 today · $41.00 this month`, with unpriced requests named.
    pub fn agents_line(&self) -> String {
        match self.service.agent_spend() {
            Ok(s) => format!(
                "All agents: {} today · {} this month{}",
                usd(s.today_usd),
                usd(s.month_usd),
                if s.today_unpriced_requests > 0 {
                    format!(" (+{} unpriced today)", s.today_unpriced_requests)
                } else {
                    String::new()
                }
            ),
            Err(e) => format!("All agents: unavailable ({})", e.code()),
        }
    }

    /// Next-run line, e.g. `Next run: 14:05 UTC`, or why nothing is scheduled.
    pub fn next_run_line(&self) -> String {
        match self.service.status() {
            Ok(st) => match (st.pipeline.state, st.pipeline.next_run_ms) {
                (PipelineState::NoModel, _) => "Next run: none (no model can be called)".into(),
                (PipelineState::Paused, _) => "Next run: none (paused)".into(),
                (_, Some(ms)) => chrono::DateTime::from_timestamp_millis(ms)
                    .map(|d| format!("Next run: {} UTC", d.format("%H:%M")))
                    .unwrap_or_else(|| "Next run: unknown".into()),
                _ => "Next run: not scheduled in this process".into(),
            },
            Err(e) => format!("Next run: unavailable ({})", e.code()),
        }
    }

    /// Last-error line (at most 80 characters), e.g. `Last error: phase1: HTTP 500 …`.
    pub fn last_error_line(&self) -> String {
        match self.service.status() {
            Ok(st) => match st.recent_errors.first() {
                Some(e) => {
                    let text = format!("Last error: {}: {}", e.source, e.message);
                    if text.chars().count() > 80 {
                        format!("{}…", text.chars().take(79).collect::<String>())
                    } else {
                        text
                    }
                }
                None => "Last error: none".into(),
            },
            Err(e) => format!("Last error: status unavailable ({})", e.code()),
        }
    }

    /// Diagnostic info to copy (no keys or tokens; see `ApiService::diagnostics`).
    pub fn diagnostics(&self) -> Option<String> {
        self.service.diagnostics().ok()
    }

    /// The tray icon for the server state.
    pub fn icon_state(&self) -> IconState {
        match self.server.status().state {
            ServerState::Running => IconState::Running,
            ServerState::Error => IconState::Error,
            _ => IconState::Stopped,
        }
    }

    /// Start the memory pipeline scheduler (first run at once, then on transcript changes
    /// and every 15 minutes), or wait for it when another process holds it. A failure is
    /// reported, not fatal.
    pub fn start_pipeline(&self) -> ActionResult {
        let r = self.app.pipeline.start();
        if !r.ok {
            self.service.record_error("pipeline", r.message.clone());
        }
        r
    }

    /// Quit: stop the scheduler (its run in flight releases its jobs) and the server
    /// (waits for the listener to close).
    pub fn quit(&self) {
        self.app.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use codex_free_secrets::keyring::Opened;
    use codex_free_server::app::AppOptions;
    use codex_free_server::mcp::ServerOptions;

    fn core(port: u16) -> (tempfile::TempDir, tokio::runtime::Runtime, AppHost) {
        let d = tempfile::tempdir().unwrap();
        let (home, project) = (d.path().join("state"), d.path().join("project"));
        std::fs::create_dir_all(&project).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let opts = ServerOptions::single(&project, &home, None).unwrap();
        let keys = Opened::in_memory();
        let app = App::open(
            AppOptions {
                server: opts,
                http: Some(("127.0.0.1".into(), port)),
                ui: true,
                stoppable: true,
                process_label: "codex-free-app (test)".into(),
                lock_retry: codex_free_server::app::LOCK_RETRY,
            },
            keys,
            rt.handle().clone(),
        )
        .unwrap();
        (d, rt, AppHost::new(app).unwrap())
    }

    #[test]
    fn tray_actions_start_stop_copy_and_pause() {
        let (_d, rt, c) = core(0);
        assert_eq!(c.icon_state(), IconState::Stopped);
        assert_eq!(c.toggle_label(), "Start server");
        assert!(c.mcp_url().is_none());
        let r = c.toggle_server();
        assert!(r.ok, "{}", r.message);
        assert_eq!(c.icon_state(), IconState::Running);
        assert_eq!(c.toggle_label(), "Stop server");
        let url = c.mcp_url().unwrap();
        assert!(c.server_line().contains(&url), "{}", c.server_line());
        let health = url.replace("/mcp", "/health");
        let body =
            rt.block_on(async { reqwest::get(&health).await.unwrap().text().await.unwrap() });
        assert!(body.contains("\"ok\""), "{body}");
        // the copied MCP token opens /mcp but not /api; the admin token opens /api
        let token = c.token().unwrap();
        assert_eq!(
            token,
            std::fs::read_to_string(c.home.join("server-token"))
                .unwrap()
                .trim()
        );
        let admin = c.admin_token().unwrap();
        assert_ne!(admin, token);
        let api = url.replace("/mcp", "/api/status");
        let (with_admin, with_mcp, without) = rt.block_on(async {
            let cl = reqwest::Client::new();
            let code = |t: Option<&str>| {
                let mut r = cl.get(&api);
                if let Some(t) = t {
                    r = r.bearer_auth(t);
                }
                async move { r.send().await.unwrap().status().as_u16() }
            };
            (
                code(Some(&admin)).await,
                code(Some(&token)).await,
                code(None).await,
            )
        });
        assert_eq!((with_admin, with_mcp, without), (200, 401, 401));
        // the browser link is a one-time login link that sets the session cookie once
        let link = c.ui_url().unwrap();
        assert!(link.contains("/login?code=") && !link.contains(&admin) && !link.contains(&token));
        let (first, second) = rt.block_on(async {
            let cl = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap();
            let a = cl.get(&link).send().await.unwrap();
            let b = cl.get(&link).send().await.unwrap();
            (
                (a.status().as_u16(), a.headers().contains_key("set-cookie")),
                b.status().as_u16(),
            )
        });
        assert_eq!(first, (303, true));
        assert_eq!(second, 401);
        // pipeline pause/resume flips the label
        assert_eq!(c.pause_label(), "Pause pipeline");
        assert!(c.toggle_pipeline().ok);
        assert_eq!(c.pause_label(), "Resume pipeline");
        assert!(c.toggle_pipeline().ok);
        assert_eq!(c.pause_label(), "Pause pipeline");
        assert_eq!(c.spend_line(), "Pipeline: $0.00 today · $0.00 this month");
        assert!(
            c.agents_line().starts_with("All agents: $0.00 today"),
            "{}",
            c.agents_line()
        );
        assert_eq!(c.last_error_line(), "Last error: none");
        assert!(
            c.diagnostics()
                .is_some_and(|d| d.contains("Key store: ") && !d.contains(&token))
        );
        assert!(
            !c.run_pipeline().ok,
            "no pipeline in this build must not claim a run"
        );
        // stop closes the port
        assert!(c.toggle_server().ok);
        assert_eq!(c.icon_state(), IconState::Stopped);
        assert!(rt.block_on(reqwest::get(&health)).is_err());
        c.quit();
    }

    #[test]
    fn a_busy_port_shows_the_error_state() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let (_d, _rt, c) = core(l.local_addr().unwrap().port());
        let r = c.toggle_server();
        assert!(!r.ok);
        assert_eq!(c.icon_state(), IconState::Error);
        assert!(c.server_line().contains("failed"));
        let st = c.status().unwrap();
        assert!(
            st.recent_errors.iter().any(|e| e.source == "server"),
            "{:?}",
            st.recent_errors
        );
    }
}
