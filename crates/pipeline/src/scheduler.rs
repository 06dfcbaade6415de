//! The background scheduler: runs a pass (phase 1, then phase 2) when the process starts,
//! whenever a watched transcript changes (`discover::Watcher`, debounced, forwarded as
//! [`Trigger::Watch`]; other event sources can use [`Scheduler::trigger_sender`]), and on a
//! periodic rescan ([`RESCAN_INTERVAL`]) as a safety net for missed events. Phase 2 runs
//! after every phase-1 pass; its own job, cooldown and no-change check decide whether it
//! calls a model. Triggers that arrive during a pass are coalesced into one follow-up pass.
//! The config file is re-read before every pass, so `memories off` (or a cap change) in
//! another process takes effect at the next trigger.
//!
//! Invariant: at most one pass per scheduler at a time; cancelling the token stops the loop
//! and the run in flight (its jobs are released, not failed).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::phase1::{self, Phase1Ctx, Redactor, RolloutInput, RunReport, Trigger};
use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::config::{Config, MemoryVersion};
use codex_free_models::{PriceTable, RetryPolicy, resolve_extract_model};
use codex_free_secrets::SecretStore;
use codex_free_store::Store;
use codex_free_transcripts::discover::{
    DEFAULT_DEBOUNCE, SourceRoots, WatchEvent, Watcher, enabled_sources,
};

/// The file under the state home whose OS lock marks the one process running the
/// scheduler; its first line names that process.
pub const SCHEDULER_LOCK: &str = "scheduler.lock";

/// Which process runs the scheduler of `home` now, from [`SCHEDULER_LOCK`]: `None` when no
/// process holds the lock (the line a previous holder left is then stale and ignored).
pub fn lock_holder(home: &std::path::Path) -> Option<String> {
    let path = home.join(SCHEDULER_LOCK);
    let file = std::fs::File::open(&path).ok()?;
    match file.try_lock_shared() {
        Ok(()) => None,
        Err(std::fs::TryLockError::WouldBlock) => {
            let text = std::fs::read_to_string(&path).ok()?;
            let line = text.lines().next()?.trim().to_string();
            Some(if line.is_empty() {
                "another process".into()
            } else {
                line
            })
        }
        Err(std::fs::TryLockError::Error(_)) => None,
    }
}

/// Whether process `pid` exists (signal 0 probe; EPERM means it exists under another
/// user). Non-Unix systems answer true, so nothing is ever closed by mistake there.
pub fn process_alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // SAFETY: kill with signal 0 sends nothing; it only checks the process exists.
        let r = unsafe { libc::kill(pid, 0) };
        r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// Interval of the safety-net rescan (15 minutes).
pub const RESCAN_INTERVAL: Duration = Duration::from_secs(15 * 60);

/// What the scheduler needs besides the home and config.
#[derive(Clone)]
pub struct SchedulerDeps {
    /// Credentials.
    pub secrets: Arc<dyn SecretStore>,
    /// Rollout discovery + rendering.
    pub input: Arc<dyn RolloutInput>,
    /// Output redaction.
    pub redactor: Arc<dyn Redactor>,
    /// Provider retry policy.
    pub retry: RetryPolicy,
    /// Rescan interval (tests shorten it).
    pub rescan_every: Duration,
    /// Transcript folders to watch for changes (`None`: periodic rescans only).
    pub watch: Option<SourceRoots>,
    /// The config file re-read before every run (the one the process was started with).
    pub config_path: std::path::PathBuf,
    /// Where alerts (spend thresholds, failing runs, a rejected key) are delivered.
    pub alerts: Arc<dyn crate::alerts::AlertSink>,
}

/// What the scheduler loop reports about itself, for the dashboard and the tray.
#[derive(Debug, Default)]
pub struct SchedulerState {
    /// When the next periodic pass starts, unix ms (0 = not known yet).
    pub next_run_ms: std::sync::atomic::AtomicI64,
    /// The last pass's failure, cleared by a pass that succeeds.
    pub last_error: std::sync::Mutex<Option<String>>,
}

impl SchedulerState {
    /// The next periodic pass, unix ms, when known.
    pub fn next_run_ms(&self) -> Option<i64> {
        Some(self.next_run_ms.load(std::sync::atomic::Ordering::SeqCst)).filter(|v| *v > 0)
    }
    /// The last failure, if the last pass failed.
    pub fn last_error(&self) -> Option<String> {
        self.last_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// A running scheduler.
pub struct Scheduler {
    tx: mpsc::Sender<Trigger>,
    _watcher: Option<Watcher>,
    handle: Option<JoinHandle<()>>,
    cancel: CancellationToken,
    state: Arc<SchedulerState>,
}

impl Scheduler {
    /// Start on the current tokio runtime. The first run happens at once
    /// ([`Trigger::Startup`]). `config` is the config at start; later runs re-read
    /// `<home>/codex.config.json`.
    ///
    /// Errors: [`Error::Store`] when `state.sqlite` cannot be opened or migrated.
    pub fn start(
        home: PathBuf,
        config: Config,
        deps: SchedulerDeps,
        cancel: CancellationToken,
    ) -> Result<Scheduler> {
        let store = Store::open_in_home(&home)?;
        // Crash recovery: runs left `running` by a process that died are closed now.
        match store.interrupt_orphaned_runs(process_alive) {
            Ok(0) => {}
            Ok(n) => tracing::info!("closed {n} run(s) of exited processes as interrupted"),
            Err(e) => tracing::warn!("could not close orphaned runs: {e}"),
        }
        let (tx, rx) = mpsc::channel(64);
        let watcher = deps
            .watch
            .as_ref()
            .and_then(|roots| start_watcher(roots, &config, tx.clone(), cancel.clone()));
        let state = Arc::new(SchedulerState::default());
        let handle = tokio::spawn(run_loop(
            home,
            config,
            deps,
            store,
            rx,
            cancel.clone(),
            state.clone(),
        ));
        let _ = tx.try_send(Trigger::Startup);
        Ok(Scheduler {
            tx,
            _watcher: watcher,
            handle: Some(handle),
            cancel,
            state,
        })
    }

    /// The loop's own report: next periodic pass, last failure.
    pub fn state(&self) -> Arc<SchedulerState> {
        self.state.clone()
    }

    /// A sender for the file watcher: send [`Trigger::Watch`] after its debounce.
    pub fn trigger_sender(&self) -> mpsc::Sender<Trigger> {
        self.tx.clone()
    }

    /// Ask for a run now (coalesced with one already queued).
    pub fn nudge(&self, trigger: Trigger) {
        let _ = self.tx.try_send(trigger);
    }

    /// Cancel and wait for the loop to end.
    pub async fn shutdown(mut self) {
        self.cancel.cancel();
        if let Some(h) = self.handle.take() {
            let _ = h.await;
        }
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// Start the debounced transcript watcher and forward its events as [`Trigger::Watch`].
/// A watcher that cannot start (e.g. inotify limits) is logged; periodic rescans remain.
fn start_watcher(
    roots: &SourceRoots,
    config: &Config,
    tx: mpsc::Sender<Trigger>,
    cancel: CancellationToken,
) -> Option<Watcher> {
    let (wtx, mut wrx) = mpsc::channel::<WatchEvent>(16);
    let enabled = enabled_sources(&config.memories);
    match Watcher::start_with(roots, &enabled, DEFAULT_DEBOUNCE, wtx, cancel.clone()) {
        Ok(w) => {
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        _ = cancel.cancelled() => return,
                        ev = wrx.recv() => match ev {
                            Some(_) => { let _ = tx.try_send(Trigger::Watch); }
                            None => return,
                        },
                    }
                }
            });
            Some(w)
        }
        Err(e) => {
            tracing::warn!(error = %e, "transcript watcher not started; relying on periodic rescans");
            None
        }
    }
}

async fn run_loop(
    home: PathBuf,
    mut config: Config,
    deps: SchedulerDeps,
    store: Store,
    mut rx: mpsc::Receiver<Trigger>,
    cancel: CancellationToken,
    state: Arc<SchedulerState>,
) {
    use crate::alerts::PassEnd;
    use std::sync::atomic::Ordering;
    let mut tick = tokio::time::interval(deps.rescan_every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await; // the first tick fires at once; the startup trigger covers it
    let every_ms = i64::try_from(deps.rescan_every.as_millis()).unwrap_or(i64::MAX / 2);
    let schedule_next = || {
        state.next_run_ms.store(
            chrono::Utc::now()
                .timestamp_millis()
                .saturating_add(every_ms),
            Ordering::SeqCst,
        )
    };
    schedule_next();
    let watch = crate::alerts::Watch::new(deps.alerts.clone());
    let mut last_error: Option<String> = None;
    let (startup_version, startup_dual_write) =
        (config.memories.version.clone(), config.memories.dual_write);
    // V2's own database, opened when its pipeline first runs (never shared with V1's).
    let mut v2_store: Option<Store> = None;
    loop {
        let trigger = tokio::select! {
            _ = cancel.cancelled() => return,
            t = rx.recv() => match t { Some(t) => t, None => return },
            _ = tick.tick() => Trigger::Periodic,
        };
        // Coalesce whatever queued up meanwhile.
        while rx.try_recv().is_ok() {}
        if trigger == Trigger::Periodic {
            schedule_next();
        }
        match Config::load(&deps.config_path) {
            // The version and dual-write are read once at start: a switch applies at the
            // next start (the UI and `memories status` say so).
            Ok(l) => {
                let mut c = l.config;
                c.memories.version = startup_version.clone();
                c.memories.dual_write = startup_dual_write;
                config = c;
            }
            Err(e) => tracing::warn!(error = %e, "config unreadable; keeping the previous one"),
        }
        // The agents' usage is imported on every tick, memory pipeline on or off, so the
        // Usage page and the tray's spend stay fresh (incremental: unchanged files are not
        // opened).
        if let Some(roots) = deps.watch.clone() {
            let (store2, prices) = (store.clone(), config.memories.prices.clone());
            let r = tokio::task::spawn_blocking(move || {
                let mut pricer =
                    codex_free_agent_usage::Pricer::new(PriceTable::bundled(), &prices);
                codex_free_agent_usage::import(
                    &store2,
                    &roots,
                    &codex_free_agent_usage::AGENTS,
                    &mut pricer,
                )
            })
            .await;
            match r {
                Ok(Ok(r)) if r.rows_written > 0 => {
                    tracing::debug!(
                        rows = r.rows_written,
                        ms = r.duration_ms,
                        "agent usage imported"
                    )
                }
                Ok(Err(e)) => tracing::warn!(error = %e, "agent usage import failed"),
                _ => {}
            }
        }
        if !config.memories.enabled {
            continue;
        }
        // A pass that could not start (no key, bad config) is not a failed run: the
        // dashboard says what is missing; it neither resets nor extends a failure streak.
        let mut end: Option<PassEnd> = None;
        let versions = config.memories.written_versions();
        if versions.contains(&MemoryVersion::V2) && v2_store.is_none() {
            match Store::open_v2_in_home(&home) {
                Ok(s) => v2_store = Some(s),
                Err(e) => {
                    tracing::warn!(error = %e, "the v2 memory database cannot be opened; v2 does not run")
                }
            }
        }
        for version in versions {
            let vstore = match version {
                MemoryVersion::V1 => store.clone(),
                MemoryVersion::V2 => match &v2_store {
                    Some(s) => s.clone(),
                    None => continue,
                },
            };
            let e = run_pass(
                &home,
                &config,
                &deps,
                &vstore,
                version,
                trigger,
                &cancel,
                &mut last_error,
            )
            .await;
            // The active version's result decides the alert; a failure of the other one is
            // logged (and in memories.log) but does not raise it.
            if version == config.memories.active_version() || end.is_none() {
                end = e.or(end);
            }
        }
        *state.last_error.lock().unwrap_or_else(|p| p.into_inner()) = match &end {
            Some(PassEnd::Failed(e)) | Some(PassEnd::KeyRejected { error: e, .. }) => {
                Some(e.clone())
            }
            Some(PassEnd::Ok) => None,
            None => last_error.clone(),
        };
        if let Some(end) = end {
            let spent = crate::spend::month_spend_usd(&store).unwrap_or(0.0);
            let month = crate::alerts::month_key(store.now());
            watch.after_pass(
                &home,
                &end,
                &month,
                spent,
                config.memories.monthly_spend_cap_usd,
            );
        }
    }
}

/// One pass of one pipeline: phase 1, then phase 2, on `store` (that version's database).
/// Returns how the pass ended for the alerts (`None`: it could not start).
#[allow(clippy::too_many_arguments)]
async fn run_pass(
    home: &std::path::Path,
    config: &Config,
    deps: &SchedulerDeps,
    store: &Store,
    version: MemoryVersion,
    trigger: Trigger,
    cancel: &CancellationToken,
    last_error: &mut Option<String>,
) -> Option<crate::alerts::PassEnd> {
    use crate::alerts::PassEnd;
    let mut end: Option<PassEnd> = None;
    match run_once_version(
        home,
        config,
        deps,
        store,
        version,
        trigger,
        cancel.child_token(),
    )
    .await
    {
        Ok(r) => {
            *last_error = None;
            end = Some(if r.key_rejected {
                PassEnd::KeyRejected {
                    model: config
                        .memories
                        .extract_model
                        .clone()
                        .unwrap_or_else(|| codex_free_models::DEFAULT_EXTRACT_MODEL.into()),
                    error: r.summary.error.clone().unwrap_or_default(),
                }
            } else if r.summary.outcome == "failed" {
                PassEnd::Failed(
                    r.summary
                        .error
                        .clone()
                        .unwrap_or_else(|| "phase 1 failed".into()),
                )
            } else {
                PassEnd::Ok
            });
            if r.summary.claimed > 0 {
                tracing::info!(claimed = r.summary.claimed, outcome = %r.summary.outcome, "phase 1 run finished");
            }
        }
        Err(e) => {
            let msg = e.to_string();
            if last_error.as_deref() != Some(msg.as_str()) {
                tracing::warn!(error = %msg, "phase 1 not run");
                let line = crate::run_log::LogLine::NotRun {
                    at: store.now(),
                    phase: if version == MemoryVersion::V1 {
                        "phase1"
                    } else {
                        "phase1 v2"
                    },
                    why: msg.clone(),
                };
                let _ = crate::run_log::append(home, &line);
            }
            *last_error = Some(msg);
        }
    }
    // Phase 2 after every phase-1 pass: its own job, cooldown and "no change = no
    // model call" rule decide whether anything happens.
    let force = trigger == Trigger::Force;
    match crate::phase2::model::run_version_with_store(
        home,
        config,
        store.clone(),
        version,
        deps.secrets.as_ref(),
        deps.retry,
        "scheduler",
        force,
        cancel.child_token(),
    )
    .await
    {
        Ok(crate::phase2::Outcome::Failed { reason, .. }) => {
            tracing::warn!(%reason, "phase 2 failed; the previous memory stays in place");
            if !matches!(end, Some(PassEnd::KeyRejected { .. })) {
                end = Some(PassEnd::Failed(if version == MemoryVersion::V1 {
                    format!("phase 2: {reason}")
                } else {
                    format!("phase 2 {version}: {reason}")
                }));
            }
        }
        Ok(o) => tracing::debug!(outcome = ?o, "phase 2"),
        Err(e) => tracing::warn!(error = %e, "phase 2 not run"),
    }
    end
}

/// Resolve the model from `config` and run phase 1 once.
///
/// Errors: model resolution ([`Error::Config`], [`Error::Secrets`], ...) and
/// [`phase1::run`]'s errors.
pub async fn run_once(
    home: &std::path::Path,
    config: &Config,
    deps: &SchedulerDeps,
    store: &Store,
    trigger: Trigger,
    cancel: CancellationToken,
) -> Result<RunReport> {
    run_once_version(
        home,
        config,
        deps,
        store,
        MemoryVersion::V1,
        trigger,
        cancel,
    )
    .await
}

/// [`run_once`] for the pipeline `version`; `store` must be that version's database.
///
/// Errors: as [`run_once`].
pub async fn run_once_version(
    home: &std::path::Path,
    config: &Config,
    deps: &SchedulerDeps,
    store: &Store,
    version: MemoryVersion,
    trigger: Trigger,
    cancel: CancellationToken,
) -> Result<RunReport> {
    let mut ctx = phase1_ctx(home, config, deps, store, trigger, cancel)?;
    ctx.version = version;
    phase1::run(ctx).await.map_err(|e| match e {
        Error::Store(m) if version == MemoryVersion::V1 => Error::Store(format!("phase 1: {m}")),
        Error::Store(m) => Error::Store(format!("phase 1 {version}: {m}")),
        other => other,
    })
}

/// What a phase-1 run (or its preview) needs, the model resolved from `config`.
///
/// Errors: model resolution ([`Error::Config`], [`Error::Secrets`], ...).
pub fn phase1_ctx(
    home: &std::path::Path,
    config: &Config,
    deps: &SchedulerDeps,
    store: &Store,
    trigger: Trigger,
    cancel: CancellationToken,
) -> Result<Phase1Ctx> {
    let model = resolve_extract_model(
        &config.memories,
        deps.secrets.as_ref(),
        PriceTable::bundled(),
        deps.retry,
    )?;
    Ok(Phase1Ctx {
        home: home.to_path_buf(),
        store: store.clone(),
        config: config.memories.clone(),
        model,
        input: deps.input.clone(),
        redactor: deps.redactor.clone(),
        cancel,
        trigger,
        worker_id: worker_id(),
        version: MemoryVersion::V1,
    })
}

/// `pid@hostname`-style id stored on claims.
pub fn worker_id() -> String {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "localhost".into());
    format!("{}@{host}", std::process::id())
}
