//! Tauri commands: one thin wrapper per `ApiService` method, named as the UI's Tauri
//! backend (`ui/src/api/tauri.ts`) invokes them. Each runs the blocking service call on a
//! blocking thread and returns the API's `ApiError` on failure.
//!
//! Invariant: no logic here beyond argument passing; the HTTP routes and these commands
//! give the same answers.

use std::sync::Arc;

use codex_free_server::api::ApiService;
use codex_free_server::api::dto::*;
use serde_json::Value;
use tauri::State;

use crate::core::Core;

static FIRST_CALL: std::sync::Once = std::sync::Once::new();

async fn run<T: Send + 'static>(
    core: State<'_, Arc<Core>>,
    f: impl FnOnce(&ApiService) -> codex_free_core::Result<T> + Send + 'static,
) -> Result<T, ApiError> {
    // Logged once: proves the window loaded the UI and its calls reach the core (smoke test).
    FIRST_CALL.call_once(|| tracing::info!("ui connected: first command from the window"));
    let service = core.service.clone();
    match tauri::async_runtime::spawn_blocking(move || f(&service)).await {
        Ok(r) => r.map_err(|e| codex_free_server::api::api_error(&e)),
        Err(e) => Err(ApiError {
            code: codex_free_core::error::ErrorCode::Internal.into(),
            message: format!("command failed: {e}"),
            fields: Vec::new(),
        }),
    }
}

#[tauri::command]
pub async fn status(core: State<'_, Arc<Core>>) -> Result<Status, ApiError> {
    run(core, |s| s.status()).await
}
#[tauri::command]
pub async fn get_config(core: State<'_, Arc<Core>>) -> Result<ConfigView, ApiError> {
    run(core, |s| s.get_config()).await
}
#[tauri::command]
pub async fn validate_config(
    core: State<'_, Arc<Core>>,
    patch: Value,
) -> Result<ConfigSaveResult, ApiError> {
    run(core, move |s| Ok(s.validate_config(&patch))).await
}
#[tauri::command]
pub async fn save_config(
    core: State<'_, Arc<Core>>,
    patch: Value,
) -> Result<ConfigSaveResult, ApiError> {
    run(core, move |s| s.save_config(&patch)).await
}
#[tauri::command]
pub async fn models(core: State<'_, Arc<Core>>) -> Result<ModelsView, ApiError> {
    run(core, |s| s.models()).await
}
#[tauri::command]
pub async fn set_key(
    core: State<'_, Arc<Core>>,
    provider: String,
    key: String,
) -> Result<KeyStatus, ApiError> {
    run(core, move |s| s.set_key(&provider, &key)).await
}
#[tauri::command]
pub async fn delete_key(
    core: State<'_, Arc<Core>>,
    provider: String,
) -> Result<KeyStatus, ApiError> {
    run(core, move |s| s.delete_key(&provider)).await
}
#[tauri::command]
pub async fn test_connection(
    core: State<'_, Arc<Core>>,
    provider: String,
) -> Result<ConnectionTest, ApiError> {
    run(core, move |s| s.test_connection(&provider)).await
}
#[tauri::command]
pub async fn runs(core: State<'_, Arc<Core>>, filter: RunFilter) -> Result<RunsView, ApiError> {
    run(core, move |s| s.runs(&filter)).await
}
#[tauri::command]
pub async fn runs_csv(core: State<'_, Arc<Core>>, filter: RunFilter) -> Result<String, ApiError> {
    run(core, move |s| s.runs_csv(&filter)).await
}
#[tauri::command]
pub async fn agent_usage(
    core: State<'_, Arc<Core>>,
    filter: AgentUsageFilter,
) -> Result<AgentUsageView, ApiError> {
    run(core, move |s| s.agent_usage(&filter)).await
}
#[tauri::command]
pub async fn agent_usage_csv(
    core: State<'_, Arc<Core>>,
    filter: AgentUsageFilter,
) -> Result<String, ApiError> {
    run(core, move |s| s.agent_usage_csv(&filter)).await
}
/// Today's and this month's spend across the agents and the pipeline (for the tray).
#[tauri::command]
pub async fn agent_spend(core: State<'_, Arc<Core>>) -> Result<AgentSpend, ApiError> {
    run(core, |s| s.agent_spend()).await
}
#[tauri::command]
pub async fn memory(core: State<'_, Arc<Core>>) -> Result<MemoryView, ApiError> {
    run(core, |s| s.memory()).await
}
#[tauri::command]
pub async fn refusals(
    core: State<'_, Arc<Core>>,
    limit: Option<usize>,
) -> Result<RefusalsView, ApiError> {
    run(core, move |s| s.refusals(limit.unwrap_or(0))).await
}
#[tauri::command]
pub async fn pipeline_run(core: State<'_, Arc<Core>>) -> Result<ActionResult, ApiError> {
    run(core, |s| s.pipeline_run_now()).await
}
#[tauri::command]
pub async fn pipeline_pause(core: State<'_, Arc<Core>>) -> Result<ActionResult, ApiError> {
    run(core, |s| s.pipeline_pause(true)).await
}
#[tauri::command]
pub async fn pipeline_resume(core: State<'_, Arc<Core>>) -> Result<ActionResult, ApiError> {
    run(core, |s| s.pipeline_pause(false)).await
}
#[tauri::command]
pub async fn server_start(core: State<'_, Arc<Core>>) -> Result<ActionResult, ApiError> {
    run(core, |s| s.server_start()).await
}
#[tauri::command]
pub async fn server_stop(core: State<'_, Arc<Core>>) -> Result<ActionResult, ApiError> {
    run(core, |s| s.server_stop()).await
}
#[tauri::command]
pub async fn connect_view(core: State<'_, Arc<Core>>) -> Result<ConnectView, ApiError> {
    run(core, |s| s.connect_view()).await
}
#[tauri::command]
pub async fn connect_preview(
    core: State<'_, Arc<Core>>,
    client: String,
    undo: bool,
) -> Result<ConnectPlanView, ApiError> {
    run(core, move |s| s.connect_preview(&client, undo)).await
}
#[tauri::command]
pub async fn connect_apply(
    core: State<'_, Arc<Core>>,
    client: String,
    request: ConnectRequest,
) -> Result<ConnectPlanView, ApiError> {
    run(core, move |s| s.connect_apply(&client, &request)).await
}
