//! What the API service asks of the rest of the process: the MCP server's state and
//! start/stop, the pipeline's state and controls, and the model catalog (providers, prices,
//! connection tests). The hosting binary (tray app, `serve --http --ui`, a test harness)
//! plugs in real implementations; the defaults here say honestly that the part is absent.
//!
//! Invariant: these traits are synchronous and may block (I/O, a provider round trip); the
//! HTTP layer and the Tauri commands call them from a blocking thread, never the UI thread.

use std::sync::Mutex;

use codex_free_core::Result;
use crate::api::dto::{
    ActionResult, ConnectionTest, ModelInfo, PipelineState, PipelineStatus, ServerState,
    ServerStatus,
};
use codex_free_secrets::Secret;

/// The MCP server as seen by the UI and the tray.
pub trait ServerControl: Send + Sync {
    /// Current state, URL (without token) and client count.
    fn status(&self) -> ServerStatus;
    /// Start listening (no-op when running).
    fn start(&self) -> Result<ActionResult>;
    /// Stop listening (no-op when stopped).
    fn stop(&self) -> Result<ActionResult>;
}

/// The background memory pipeline as seen by the UI and the tray.
pub trait PipelineControl: Send + Sync {
    /// Current state and schedule.
    fn status(&self) -> PipelineStatus;
    /// Start a run now (respects the cooldown and the spend cap).
    fn run_now(&self) -> Result<ActionResult>;
    /// Pause (`true`) or resume (`false`) scheduling.
    fn set_paused(&self, paused: bool) -> Result<ActionResult>;
}

/// A model provider the pipeline can call.
#[derive(Debug, Clone, PartialEq)]
pub struct Provider {
    /// Id used in `provider/model-id`.
    pub id: String,
    /// Display name.
    pub name: String,
    /// API base URL.
    pub base_url: String,
    /// False for local servers that need no key.
    pub needs_key: bool,
}

/// Providers, models with prices, and connection tests.
pub trait ModelCatalog: Send + Sync {
    /// Known providers.
    fn providers(&self) -> Vec<Provider>;
    /// Known models with prices (per 1M tokens) and context windows.
    fn models(&self) -> Vec<ModelInfo>;
    /// The model used when a stage's model is null, if there is one.
    fn default_model(&self) -> Option<String>;
    /// Make one cheap authenticated request to `provider` with `key` (e.g. list models).
    fn test_connection(&self, provider: &str, key: Option<&Secret>) -> Result<ConnectionTest>;
}

/// A process without an MCP server (test harnesses).
pub struct NoServer;

impl ServerControl for NoServer {
    fn status(&self) -> ServerStatus {
        ServerStatus {
            state: ServerState::Unknown,
            url: None,
            clients: 0,
            error: None,
        }
    }
    fn start(&self) -> Result<ActionResult> {
        Ok(ActionResult {
            ok: false,
            message: "this process does not host the MCP server".into(),
        })
    }
    fn stop(&self) -> Result<ActionResult> {
        self.start()
    }
}

/// A pipeline stand-in that only records pause/resume: used where the scheduler is not
/// running in this process. It never claims a run happened.
#[derive(Default)]
pub struct NoPipeline {
    paused: Mutex<bool>,
}

impl PipelineControl for NoPipeline {
    fn status(&self) -> PipelineStatus {
        let paused = *self.paused.lock().expect("poisoned");
        PipelineStatus {
            state: if paused {
                PipelineState::Paused
            } else {
                PipelineState::Unavailable
            },
            next_run_ms: None,
            last_run_ms: None,
            message: if paused {
                "paused".into()
            } else {
                "the memory pipeline is not running in this process".into()
            },
        }
    }
    fn run_now(&self) -> Result<ActionResult> {
        Ok(ActionResult {
            ok: false,
            message: "the memory pipeline is not running in this process".into(),
        })
    }
    fn set_paused(&self, paused: bool) -> Result<ActionResult> {
        *self.paused.lock().expect("poisoned") = paused;
        Ok(ActionResult {
            ok: true,
            message: if paused { "paused" } else { "resumed" }.into(),
        })
    }
}

/// The pipeline scheduler of this process, reached through its trigger channel (attached
/// once the scheduler has started). State comes from the config (`memories.enabled`) and
/// the run records in `state.sqlite`.
pub struct SchedulerPipeline {
    home: std::path::PathBuf,
    trigger: std::sync::OnceLock<tokio::sync::mpsc::Sender<codex_free_pipeline::phase1::Trigger>>,
}

impl SchedulerPipeline {
    /// A control for the state home `home`; [`Self::attach`] the scheduler when it runs.
    pub fn new(home: impl Into<std::path::PathBuf>) -> Self {
        Self {
            home: home.into(),
            trigger: std::sync::OnceLock::new(),
        }
    }

    /// Connect the running scheduler (`Scheduler::trigger_sender`).
    pub fn attach(&self, tx: tokio::sync::mpsc::Sender<codex_free_pipeline::phase1::Trigger>) {
        let _ = self.trigger.set(tx);
    }
}

impl PipelineControl for SchedulerPipeline {
    fn status(&self) -> PipelineStatus {
        use crate::api::usage::UsageSource;
        let runs = crate::api::store_usage::StoreUsage::new(&self.home)
            .runs(None, None)
            .unwrap_or_default();
        let running = runs.iter().any(|r| r.outcome.as_deref() == Some("running"));
        let last_run_ms = runs
            .iter()
            .filter(|r| r.outcome.as_deref() != Some("running"))
            .map(|r| r.time_ms)
            .max();
        let attached = self.trigger.get().is_some_and(|t| !t.is_closed());
        let (state, message) = match (attached, running) {
            (_, true) => (PipelineState::Running, "a run is in progress".to_string()),
            (true, false) => (
                PipelineState::Idle,
                "runs at start, when a transcript changes, and every 15 minutes".to_string(),
            ),
            (false, false) => (
                PipelineState::Unavailable,
                "the scheduler is not running in this process".to_string(),
            ),
        };
        PipelineStatus {
            state,
            next_run_ms: None,
            last_run_ms,
            message,
        }
    }

    fn run_now(&self) -> Result<ActionResult> {
        match self.trigger.get() {
            Some(tx) => match tx.try_send(codex_free_pipeline::phase1::Trigger::Manual) {
                Ok(()) => Ok(ActionResult {
                    ok: true,
                    message: "run requested".into(),
                }),
                Err(tokio::sync::mpsc::error::TrySendError::Full(_)) => Ok(ActionResult {
                    ok: true,
                    message: "a run is already queued".into(),
                }),
                Err(_) => Ok(ActionResult {
                    ok: false,
                    message: "the scheduler has stopped".into(),
                }),
            },
            None => Ok(ActionResult {
                ok: false,
                message: "the scheduler is not running in this process".into(),
            }),
        }
    }

    fn set_paused(&self, paused: bool) -> Result<ActionResult> {
        // The config write happened in ApiService::pipeline_pause; on resume, run at once.
        if !paused && let Some(tx) = self.trigger.get() {
            let _ = tx.try_send(codex_free_pipeline::phase1::Trigger::Manual);
        }
        Ok(ActionResult {
            ok: true,
            message: if paused { "paused" } else { "resumed" }.into(),
        })
    }
}
