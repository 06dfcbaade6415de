//! The composition root: [`App::open`] assembles what one process hosts — the key store,
//! the UI's [`ApiService`], the MCP HTTP server ([`HttpHost`], optional) and the memory
//! pipeline's scheduler ([`PipelineHost`]) — for both binaries (`codex-free serve` and the
//! tray app), so they cannot drift apart.
//!
//! The service needs the server (for its status and start/stop) and the server needs the
//! service (to mount `/api`): [`App::open`] builds them in one step with
//! [`Arc::new_cyclic`], the server holding a weak reference, instead of attaching later.
//!
//! Invariant: at most one process per state home runs the scheduler. It is held by an OS
//! file lock on `<home>/scheduler.lock` (released by the kernel when the process exits, so
//! a crash never leaves it stuck); a process that finds it held keeps retrying every
//! a retry interval ([`LOCK_RETRY`]) and takes over when the holder exits.

use std::io::{Seek, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use codex_free_core::config::Config;
use codex_free_core::error::IoContext;
use codex_free_core::{Error, Result};
use codex_free_pipeline::alerts::{Alert, AlertSink, LogSink};
use codex_free_pipeline::cli::ControlEnv;
use codex_free_pipeline::phase1::Trigger;
use codex_free_pipeline::scheduler::Scheduler;
use codex_free_secrets::SecretStore;
use codex_free_secrets::keyring::Opened;
use tokio_util::sync::CancellationToken;

use crate::api::ApiService;
use crate::api::dto::{
    ActionResult, KeyringStatus, PipelineState, PipelineStatus, ServerState, ServerStatus,
};
use crate::api::hooks::{PipelineControl, ServerControl};
use crate::api::usage::UsageSource;
use crate::mcp::{self, CodexFree, ServerOptions};

/// How often a process waiting for the scheduler lock tries again (30 s: a handover within
/// half a minute of the holder exiting, at a negligible cost).
pub const LOCK_RETRY: Duration = Duration::from_secs(30);

pub use codex_free_pipeline::scheduler::{SCHEDULER_LOCK, lock_holder};

/// How often the scheduler's process prunes the server's own MCP transcripts (hourly:
/// retention is counted in days).
pub const PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// Raise this process's soft open-file limit (`RLIMIT_NOFILE`) to its hard limit, so the
/// server is bounded by its own caps (connections, sessions) rather than by the 1,024 files
/// a login shell often starts with. On macOS the soft limit is at most `OPEN_MAX` (10,240),
/// above which `setrlimit` refuses. Returns (soft before, soft now); `None` where there is
/// no such limit or it cannot be read or raised (logged).
// `rlim_t` is u64 on the targets built here but not by definition: the casts stay.
#[allow(clippy::unnecessary_cast)]
pub fn raise_open_file_limit() -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes into the struct passed; nothing else is touched.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
            tracing::warn!(
                "reading the open-file limit: {}",
                std::io::Error::last_os_error()
            );
            return None;
        }
        let before = lim.rlim_cur;
        #[allow(unused_mut)]
        let mut target = lim.rlim_max;
        #[cfg(target_os = "macos")]
        {
            target = target.min(10_240);
        }
        if target <= before {
            return Some((before as u64, before as u64));
        }
        lim.rlim_cur = target;
        // SAFETY: setrlimit reads the struct passed; raising the soft limit up to the hard
        // one needs no privilege.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 {
            tracing::warn!(
                "raising the open-file limit from {before} to {target}: {}",
                std::io::Error::last_os_error()
            );
            return None;
        }
        tracing::debug!("open-file limit raised from {before} to {target}");
        Some((before as u64, target as u64))
    }
    #[cfg(not(unix))]
    None
}

/// Delete the server's own MCP transcripts (`<home>/transcripts`) that phase 1 has
/// extracted as they are now and that were last written more than `retention_days` ago
/// (see [`codex_free_transcripts::sources::mcp::prune`]). Returns what was removed.
///
/// Errors: the state database cannot be opened or read (nothing is removed then).
pub fn prune_transcripts(
    home: &Path,
    retention_days: u32,
) -> Result<codex_free_transcripts::sources::mcp::TranscriptUsage> {
    use std::collections::HashMap;
    let store = codex_free_store::Store::open_in_home(home)?;
    // Paths as the discovery recorded them, and canonical (a symlinked home still matches).
    let mut done: HashMap<PathBuf, i64> = HashMap::new();
    for (path, version) in store.extracted_paths("mcp")? {
        let p = PathBuf::from(path);
        if let Ok(c) = p.canonicalize() {
            done.insert(c, version);
        }
        done.insert(p, version);
    }
    let extracted = |p: &Path, mtime: std::time::SystemTime| {
        let secs = mtime
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(i64::MAX);
        let version = done
            .get(p)
            .or_else(|| p.canonicalize().ok().and_then(|c| done.get(&c)));
        version.is_some_and(|v| secs <= *v)
    };
    let removed = codex_free_transcripts::sources::mcp::prune(
        home,
        Duration::from_secs(u64::from(retention_days) * 86_400),
        std::time::SystemTime::now(),
        extracted,
    );
    if removed.files > 0 {
        tracing::info!(
            "pruned {} extracted MCP transcript(s) older than {retention_days} days ({} bytes)",
            removed.files,
            removed.bytes
        );
    }
    Ok(removed)
}

/// What to host.
#[derive(Clone)]
pub struct AppOptions {
    /// Project / access root, state home, config path.
    pub server: ServerOptions,
    /// Serve MCP over HTTP on `host:port` (`None`: no HTTP server, e.g. `serve --stdio`).
    pub http: Option<(String, u16)>,
    /// Mount the web UI and `/api` on the HTTP server.
    pub ui: bool,
    /// Whether the UI may stop the HTTP server (the tray app: yes; headless `serve --http`:
    /// no — stopping it would take the UI down with it).
    pub stoppable: bool,
    /// Describes this process in `scheduler.lock` (e.g. `codex-free serve --stdio`).
    pub process_label: String,
    /// How often to retry the scheduler lock while another process holds it
    /// ([`LOCK_RETRY`] in the binaries; tests use less).
    pub lock_retry: Duration,
}

/// One process's parts, assembled once.
pub struct App {
    /// State home.
    pub home: PathBuf,
    /// Config at start (security settings take effect from this snapshot).
    pub config: Config,
    /// The UI's service.
    pub service: Arc<ApiService>,
    /// The MCP HTTP server, when hosted.
    pub http: Option<Arc<HttpHost>>,
    /// The memory pipeline's scheduler host.
    pub pipeline: Arc<PipelineHost>,
    /// The key store (provider keys).
    pub secrets: Arc<dyn SecretStore>,
}

impl App {
    /// Assemble the parts (nothing is started): the key store from `keys`
    /// ([`codex_free_secrets::keyring::open`] in the binaries, an in-memory store in tests),
    /// the service, the HTTP host and the pipeline host. `rt` runs the servers' tasks.
    ///
    /// Errors: the state home cannot be created.
    pub fn open(opts: AppOptions, keys: Opened, rt: tokio::runtime::Handle) -> Result<Arc<App>> {
        raise_open_file_limit();
        let home = opts.server.home.clone();
        codex_free_core::home::create_private_dir(&home)?;
        // What runs after a memory commit or a saved-state change: the linked copies in
        // other agents' instruction files follow (registered once per process).
        codex_free_core::events::on_memory_event(codex_free_connect::on_memory_event);
        // A start is when a switch of `memories.version` takes effect: the linked copies
        // follow the summary this start serves.
        codex_free_connect::refresh_at_start(&home);
        let config = Config::load(&opts.server.config_path)
            .map(|l| l.config)
            .unwrap_or_default();
        let status = KeyringStatus {
            backend: keys.label,
            fallback: keys.fallback,
            error: keys.error,
        };
        let secrets = keys.store.clone();
        let pipeline = Arc::new(PipelineHost::new(
            &home,
            &opts.server.config_path,
            secrets.clone(),
            rt.clone(),
            opts.process_label.clone(),
            opts.lock_retry,
        ));
        let mut http = None;
        let service = Arc::new_cyclic(|weak: &Weak<ApiService>| {
            let mut svc = ApiService::new(&home, keys.store, status)
                .with_pipeline(pipeline.clone())
                .with_startup_config(config.clone());
            if let Some((host, port)) = &opts.http {
                let h = Arc::new(HttpHost {
                    opts: opts.server.clone(),
                    host: host.clone(),
                    port: *port,
                    rt: rt.clone(),
                    service: opts.ui.then(|| weak.clone()),
                    stoppable: opts.stoppable,
                    running: Mutex::new(None),
                    error: Mutex::new(None),
                });
                svc = svc.with_server(h.clone());
                http = Some(h);
            }
            svc
        });
        Ok(Arc::new(App {
            home,
            config,
            service,
            http,
            pipeline,
            secrets,
        }))
    }

    /// Stop everything: the scheduler (its run in flight releases its jobs) and the HTTP
    /// server (every exec process group it started is killed as its sessions drop).
    pub fn shutdown(&self) {
        self.pipeline.stop();
        if let Some(h) = &self.http {
            h.shutdown();
        }
    }
}

struct Running {
    addr: SocketAddr,
    inner: crate::http::RunningHttp,
}

/// The MCP HTTP server of a process: started, stopped and restarted on demand; the last
/// start failure is kept for the dashboard.
pub struct HttpHost {
    opts: ServerOptions,
    host: String,
    port: u16,
    rt: tokio::runtime::Handle,
    service: Option<Weak<ApiService>>,
    stoppable: bool,
    running: Mutex<Option<Running>>,
    error: Mutex<Option<String>>,
}

impl HttpHost {
    /// The bound address while running.
    pub fn addr(&self) -> Option<SocketAddr> {
        self.lock_running().as_ref().map(|r| r.addr)
    }

    /// State shared by the running server's sessions (client count, config, exec).
    pub fn shared(&self) -> Option<Arc<mcp::server::Shared>> {
        self.lock_running().as_ref().map(|r| r.inner.shared.clone())
    }

    /// Cancelled when the running server stops by itself (or is stopped).
    pub fn cancelled_token(&self) -> Option<CancellationToken> {
        self.lock_running().as_ref().map(|r| r.inner.cancel.clone())
    }

    fn lock_running(&self) -> std::sync::MutexGuard<'_, Option<Running>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn set_error(&self, e: Option<String>) {
        *self.error.lock().unwrap_or_else(|p| p.into_inner()) = e;
    }

    /// Bind and serve (no-op when running). Async so a caller already on the runtime
    /// (`serve --http`) does not block a worker.
    ///
    /// Errors: bind failure (port in use, bad address), config or token unreadable.
    pub async fn start_async(&self) -> Result<SocketAddr> {
        if let Some(a) = self.addr() {
            return Ok(a);
        }
        let server = CodexFree::new(self.opts.clone())?;
        let creds = crate::http::Credentials::load(&self.opts.home)?;
        let extra = self
            .service
            .as_ref()
            .and_then(Weak::upgrade)
            .map(crate::api::http::router);
        let opts = crate::http::HttpOptions { extra };
        let inner = crate::http::start(server, &self.host, self.port, creds, opts).await?;
        let addr = inner.addr;
        let mut guard = self.lock_running();
        if let Some(r) = guard.as_ref() {
            // Another caller won the race: keep theirs, stop ours.
            inner.cancel.cancel();
            return Ok(r.addr);
        }
        *guard = Some(Running { addr, inner });
        drop(guard);
        self.set_error(None);
        Ok(addr)
    }

    /// Start from a thread that is not a runtime worker (the tray, a blocking API call);
    /// a failure is recorded for the dashboard and returned as a failed action.
    pub fn start_blocking(&self) -> ActionResult {
        match self.rt.block_on(self.start_async()) {
            Ok(a) => ActionResult {
                ok: true,
                message: format!("MCP server listening on http://{a}/mcp"),
            },
            Err(e) => {
                let msg = format!(
                    "could not start the MCP server on {}:{}: {e}",
                    self.host, self.port
                );
                tracing::error!("{msg}");
                if let Some(s) = self.service.as_ref().and_then(Weak::upgrade) {
                    s.record_error("server", msg.clone());
                }
                self.set_error(Some(msg.clone()));
                ActionResult {
                    ok: false,
                    message: msg,
                }
            }
        }
    }

    /// Stop and wait for the listener to close (idempotent). Must not run on a runtime
    /// worker thread.
    pub fn shutdown(&self) {
        self.rt.block_on(self.shutdown_async());
    }

    /// Async twin of [`Self::shutdown`] for callers on the runtime.
    pub async fn shutdown_async(&self) {
        let taken = self.lock_running().take();
        if let Some(r) = taken {
            r.inner.cancel.cancel();
            let _ = r.inner.task.await;
            tracing::info!("MCP server stopped");
        }
    }
}

impl ServerControl for HttpHost {
    fn status(&self) -> ServerStatus {
        let error = self.error.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let guard = self.lock_running();
        match guard.as_ref() {
            Some(r) => ServerStatus {
                state: ServerState::Running,
                url: Some(format!("http://{}/mcp", r.addr)),
                clients: r.inner.shared.active_clients(),
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

    fn start(&self) -> Result<ActionResult> {
        Ok(self.start_blocking())
    }

    fn stop(&self) -> Result<ActionResult> {
        if !self.stoppable {
            return Ok(ActionResult {
                ok: false,
                message: "the headless server stops with Ctrl-C (or SIGTERM) in its terminal"
                    .into(),
            });
        }
        let was = self.addr().is_some();
        self.shutdown();
        self.set_error(None);
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

/// The memory pipeline's scheduler in this process, once it holds the state home's
/// scheduler lock. Implements the UI's [`PipelineControl`].
pub struct PipelineHost {
    home: PathBuf,
    config_path: PathBuf,
    secrets: Arc<dyn SecretStore>,
    rt: tokio::runtime::Handle,
    label: String,
    retry: Duration,
    inner: Mutex<PipelineInner>,
    alerts: Arc<SwitchSink>,
}

/// An alert sink that forwards to whichever sink was set last (the log until the tray app
/// installs its notifications), so the scheduler can start before the UI exists.
pub struct SwitchSink(Mutex<Arc<dyn AlertSink>>);

impl SwitchSink {
    /// Forward to `sink` from now on.
    pub fn set(&self, sink: Arc<dyn AlertSink>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = sink;
    }
}

impl AlertSink for SwitchSink {
    fn notify(&self, alert: &Alert) {
        let sink = self.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
        sink.notify(alert);
    }
}

#[derive(Default)]
struct PipelineInner {
    scheduler: Option<Scheduler>,
    /// The held lock file (the OS lock lives as long as this handle).
    lock: Option<std::fs::File>,
    /// Cancels the wait for the lock and the scheduler.
    cancel: Option<CancellationToken>,
    /// Why the scheduler is not running here, when it is not.
    note: Option<String>,
}

impl PipelineHost {
    fn new(
        home: &Path,
        config_path: &Path,
        secrets: Arc<dyn SecretStore>,
        rt: tokio::runtime::Handle,
        label: String,
        retry: Duration,
    ) -> Self {
        Self {
            home: home.to_path_buf(),
            config_path: config_path.to_path_buf(),
            secrets,
            rt,
            label,
            retry,
            inner: Mutex::new(PipelineInner::default()),
            alerts: Arc::new(SwitchSink(Mutex::new(Arc::new(LogSink)))),
        }
    }

    /// Deliver the scheduler's alerts to `sink` (the tray app's notifications) instead of
    /// the log; takes effect at once, also for a scheduler already running.
    pub fn set_alert_sink(&self, sink: Arc<dyn AlertSink>) {
        self.alerts.set(sink);
    }

    fn lock_inner(&self) -> std::sync::MutexGuard<'_, PipelineInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether this process runs the scheduler now.
    pub fn is_running(&self) -> bool {
        self.lock_inner().scheduler.is_some()
    }

    /// Try to take the lock once; on success start the scheduler.
    fn try_take(self: &Arc<Self>) -> Result<bool> {
        let mut inner = self.lock_inner();
        if inner.scheduler.is_some() {
            return Ok(true);
        }
        let path = self.home.join(SCHEDULER_LOCK);
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .ctx(|| format!("opening {}", path.display()))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Ok(false),
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(Error::io(format!("locking {}", path.display()), e));
            }
        }
        let who = format!(
            "pid {} ({}) since {}",
            std::process::id(),
            self.label,
            chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ")
        );
        file.set_len(0)
            .ctx(|| format!("writing {}", path.display()))?;
        file.rewind()
            .ctx(|| format!("writing {}", path.display()))?;
        file.write_all(format!("{who}\n").as_bytes())
            .ctx(|| format!("writing {}", path.display()))?;
        let config = Config::load(&self.config_path)
            .map(|l| l.config)
            .unwrap_or_default();
        let mut deps = ControlEnv::new(self.home.clone(), self.secrets.clone())
            .with_config_path(self.config_path.clone())
            .scheduler_deps();
        deps.alerts = self.alerts.clone();
        let cancel = inner.cancel.clone().unwrap_or_default().child_token();
        let _guard = self.rt.enter();
        let s = Scheduler::start(self.home.clone(), config, deps, cancel.clone())?;
        inner.scheduler = Some(s);
        self.spawn_pruner(cancel);
        inner.lock = Some(file);
        inner.note = None;
        tracing::info!("memory pipeline scheduler started here ({who})");
        Ok(true)
    }

    /// Start the scheduler when this process can hold the lock; otherwise wait for it in
    /// the background (retrying every `AppOptions::lock_retry`) and say who holds it. Call from a
    /// thread that may block briefly (not required to be off the runtime).
    pub fn start(self: &Arc<Self>) -> ActionResult {
        let config = Config::load(&self.config_path)
            .map(|l| l.config)
            .unwrap_or_default();
        if !config.memory.enabled {
            let note =
                "memory.enabled is false: persistence is off, so the memory pipeline does not run"
                    .to_string();
            self.lock_inner().note = Some(note.clone());
            return ActionResult {
                ok: true,
                message: note,
            };
        }
        {
            let mut inner = self.lock_inner();
            if inner.scheduler.is_some() {
                return ActionResult {
                    ok: true,
                    message: "the pipeline is already running in this process".into(),
                };
            }
            if inner.cancel.is_none() {
                inner.cancel = Some(CancellationToken::new());
            }
        }
        match self.try_take() {
            Ok(true) => ActionResult {
                ok: true,
                message: "memory pipeline started".into(),
            },
            Ok(false) => {
                let holder = lock_holder(&self.home).unwrap_or_else(|| "another process".into());
                let note = format!(
                    "the memory pipeline runs in {holder}; this process takes over when it exits"
                );
                tracing::info!("{note}");
                self.lock_inner().note = Some(note.clone());
                self.spawn_waiter();
                ActionResult {
                    ok: true,
                    message: note,
                }
            }
            Err(e) => {
                let msg = format!("the memory pipeline did not start: {e}");
                self.lock_inner().note = Some(msg.clone());
                ActionResult {
                    ok: false,
                    message: msg,
                }
            }
        }
    }

    /// While this process runs the scheduler: prune extracted transcripts now and every
    /// [`PRUNE_EVERY`], with the retention of the config as it is then.
    fn spawn_pruner(&self, cancel: CancellationToken) {
        let (home, config_path) = (self.home.clone(), self.config_path.clone());
        self.rt.spawn(async move {
            loop {
                let (h, c) = (home.clone(), config_path.clone());
                let r = tokio::task::spawn_blocking(move || {
                    let days = Config::load(&c)
                        .map(|l| l.config)
                        .unwrap_or_default()
                        .memories
                        .mcp_transcript_retention_days;
                    prune_transcripts(&h, days)
                })
                .await;
                if let Ok(Err(e)) = r {
                    tracing::warn!("pruning MCP transcripts: {e}");
                }
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    _ = tokio::time::sleep(PRUNE_EVERY) => {}
                }
            }
        });
    }

    fn spawn_waiter(self: &Arc<Self>) {
        let Some(cancel) = self.lock_inner().cancel.clone() else {
            return;
        };
        let me = Arc::downgrade(self);
        let retry = self.retry;
        self.rt.spawn(async move {
            loop {
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    _ = tokio::time::sleep(retry) => {}
                }
                let Some(host) = me.upgrade() else { return };
                let h = host.clone();
                match tokio::task::spawn_blocking(move || h.try_take()).await {
                    Ok(Ok(true)) => return,
                    Ok(Ok(false)) => {}
                    Ok(Err(e)) => tracing::warn!("scheduler lock: {e}"),
                    Err(_) => return,
                }
            }
        });
    }

    /// Stop the scheduler (its run in flight releases its jobs), stop waiting for the
    /// lock, and release the lock. Must not run on a runtime worker thread.
    pub fn stop(&self) {
        self.rt.block_on(self.stop_async());
    }

    /// Async twin of [`Self::stop`] for callers on the runtime.
    pub async fn stop_async(&self) {
        let (s, cancel, lock) = {
            let mut inner = self.lock_inner();
            (
                inner.scheduler.take(),
                inner.cancel.take(),
                inner.lock.take(),
            )
        };
        if let Some(c) = cancel {
            c.cancel();
        }
        if let Some(s) = s {
            s.shutdown().await;
        }
        drop(lock);
    }

    fn trigger(&self) -> Option<tokio::sync::mpsc::Sender<Trigger>> {
        self.lock_inner()
            .scheduler
            .as_ref()
            .map(Scheduler::trigger_sender)
    }
}

impl PipelineControl for PipelineHost {
    fn status(&self) -> PipelineStatus {
        let runs = crate::api::store_usage::StoreUsage::new(&self.home)
            .runs(None, None)
            .unwrap_or_default();
        let running = runs.iter().any(|r| r.outcome.as_deref() == Some("running"));
        let last_run_ms = runs
            .iter()
            .filter(|r| r.outcome.as_deref() != Some("running"))
            .map(|r| r.time_ms)
            .max();
        let attached = self.trigger().is_some_and(|t| !t.is_closed());
        let (note, sched) = {
            let inner = self.lock_inner();
            (
                inner.note.clone(),
                inner.scheduler.as_ref().map(Scheduler::state),
            )
        };
        let next_run_ms = sched.as_ref().and_then(|s| s.next_run_ms());
        let failing = sched.as_ref().and_then(|s| s.last_error());
        let (state, message) = match (attached, running) {
            (_, true) => (PipelineState::Running, "a run is in progress".to_string()),
            (true, false) if failing.is_some() => (
                PipelineState::Failing,
                format!(
                    "the last run failed: {}",
                    failing.clone().unwrap_or_default()
                ),
            ),
            (true, false) => (
                PipelineState::Idle,
                "runs at start, when a transcript changes, and every 15 minutes".to_string(),
            ),
            (false, false) => (
                PipelineState::Unavailable,
                note.unwrap_or_else(|| "the scheduler is not running in this process".into()),
            ),
        };
        let fix = (state == PipelineState::Failing).then(|| crate::api::dto::Fix {
            text: "check the model and its key in Models & keys, then Run now; the Runs page has each request's error".into(),
            page: Some("models".into()),
        });
        PipelineStatus {
            state,
            next_run_ms: next_run_ms.filter(|_| attached),
            last_run_ms,
            message,
            fix,
        }
    }

    fn run_now(&self) -> Result<ActionResult> {
        Ok(match self.trigger() {
            Some(tx) => match tx.try_send(Trigger::Manual) {
                Ok(()) => ActionResult {
                    ok: true,
                    message: "run requested".into(),
                },
                Err(tokio::sync::mpsc::error::TrySendError::Full(_)) => ActionResult {
                    ok: true,
                    message: "a run is already queued".into(),
                },
                Err(_) => ActionResult {
                    ok: false,
                    message: "the scheduler has stopped".into(),
                },
            },
            None => ActionResult {
                ok: false,
                message: self
                    .lock_inner()
                    .note
                    .clone()
                    .unwrap_or_else(|| "the scheduler is not running in this process".into()),
            },
        })
    }

    fn set_paused(&self, paused: bool) -> Result<ActionResult> {
        // The config write happened in ApiService::pipeline_pause; on resume, run at once.
        if !paused && let Some(tx) = self.trigger() {
            let _ = tx.try_send(Trigger::Manual);
        }
        Ok(ActionResult {
            ok: true,
            message: if paused { "paused" } else { "resumed" }.into(),
        })
    }
}

/// The shutdown signals of a process: SIGINT, SIGTERM and SIGHUP (Ctrl-C only on
/// non-Unix systems). Install them before starting anything, so a signal that arrives
/// during start-up is not lost to the default action (which kills without cleanup).
pub struct ShutdownSignals {
    #[cfg(unix)]
    streams: [Option<tokio::signal::unix::Signal>; 3],
}

impl ShutdownSignals {
    /// Register the handlers. Must run inside a Tokio runtime context (`rt.enter()`).
    pub fn install() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let watch = |k: SignalKind| {
                signal(k)
                    .map_err(|e| tracing::warn!("cannot watch signal {k:?}: {e}"))
                    .ok()
            };
            Self {
                streams: [
                    watch(SignalKind::interrupt()),
                    watch(SignalKind::terminate()),
                    watch(SignalKind::hangup()),
                ],
            }
        }
        #[cfg(not(unix))]
        Self {}
    }

    async fn recv(&mut self) {
        #[cfg(unix)]
        {
            async fn one(s: &mut Option<tokio::signal::unix::Signal>) {
                match s {
                    Some(s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            }
            let [a, b, c] = &mut self.streams;
            tokio::select! {
                _ = one(a) => {}
                _ = one(b) => {}
                _ = one(c) => {}
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }

    /// Wait for the first signal; from then on a second one exits the process at once
    /// (status 130), for a shutdown that hangs.
    pub async fn wait(mut self) {
        self.recv().await;
        tracing::info!("signal received: shutting down (a second signal exits at once)");
        tokio::spawn(async move {
            self.recv().await;
            std::process::exit(130);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app(home: &Path, project: &Path, label: &str, rt: &tokio::runtime::Runtime) -> Arc<App> {
        let keys = Opened::in_memory();
        App::open(
            AppOptions {
                server: ServerOptions::single(project, home, None).unwrap(),
                http: None,
                ui: false,
                stoppable: false,
                process_label: label.into(),
                lock_retry: Duration::from_millis(50),
            },
            keys,
            rt.handle().clone(),
        )
        .unwrap()
    }

    /// Two hosts on one state home: the first runs the scheduler and is named in the lock
    /// file; the second waits, says who holds it, and takes over once the first stops.
    #[test]
    fn one_scheduler_per_state_home_with_handover() {
        let d = tempfile::tempdir().unwrap();
        let (home, project) = (d.path().join("state"), d.path().join("project"));
        std::fs::create_dir_all(&project).unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let a = app(&home, &project, "first", &rt);
        let b = app(&home, &project, "second", &rt);
        assert!(a.pipeline.start().ok);
        assert!(a.pipeline.is_running());
        assert!(lock_holder(&home).unwrap().contains("(first)"));
        let r = b.pipeline.start();
        assert!(r.ok, "{}", r.message);
        assert!(!b.pipeline.is_running());
        assert!(r.message.contains("(first)"), "{}", r.message);
        assert_eq!(b.pipeline.status().state, PipelineState::Unavailable);
        assert!(b.pipeline.status().message.contains("(first)"));
        std::thread::sleep(Duration::from_millis(200));
        assert!(!b.pipeline.is_running(), "took the lock while it was held");
        a.pipeline.stop();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !b.pipeline.is_running() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            b.pipeline.is_running(),
            "no handover after the holder stopped"
        );
        assert!(lock_holder(&home).unwrap().contains("(second)"));
        b.pipeline.stop();
        // Released: a third host takes it at once.
        let c = app(&home, &project, "third", &rt);
        assert!(c.pipeline.start().ok);
        assert!(c.pipeline.is_running());
        c.pipeline.stop();
    }
}
