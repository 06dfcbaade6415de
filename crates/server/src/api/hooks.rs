//! What the API service asks of the rest of the process: the MCP server's state and
//! start/stop, the pipeline's state and controls, and the model catalog (providers, prices,
//! connection tests). The hosting binary (tray app, `serve --http --ui`, a test harness)
//! plugs in real implementations; the defaults here say honestly that the part is absent.
//!
//! Invariant: these traits are synchronous and may block (I/O, a provider round trip); the
//! HTTP layer and the Tauri commands call them from a blocking thread, never the UI thread.

use std::sync::Mutex;

use crate::api::dto::{
    ActionResult, ConnectionTest, ModelInfo, PipelineState, PipelineStatus, ServerState,
    ServerStatus,
};
use codex_free_core::Result;
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
    /// Send one minimal completion to `spec` (`provider/model-id`) with the key from
    /// `secrets`, logged with its tokens and cost. Default: not supported.
    fn test_model(
        &self,
        spec: &str,
        secrets: &dyn codex_free_secrets::SecretStore,
    ) -> Result<ConnectionTest> {
        let _ = secrets;
        Err(codex_free_core::Error::InvalidArgument(format!(
            "this catalog cannot call {spec}"
        )))
    }
    /// Local model servers answering on this machine. Default: none.
    fn local_servers(&self) -> Vec<crate::api::dto::LocalModels> {
        Vec::new()
    }
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
        let paused = *self.paused.lock().unwrap_or_else(|e| e.into_inner());
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
            fix: None,
        }
    }
    fn run_now(&self) -> Result<ActionResult> {
        Ok(ActionResult {
            ok: false,
            message: "the memory pipeline is not running in this process".into(),
        })
    }
    fn set_paused(&self, paused: bool) -> Result<ActionResult> {
        *self.paused.lock().unwrap_or_else(|e| e.into_inner()) = paused;
        Ok(ActionResult {
            ok: true,
            message: if paused { "paused" } else { "resumed" }.into(),
        })
    }
}
