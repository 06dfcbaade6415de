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
pub async fn memory(core: State<'_, Arc<Core>>) -> Result<MemoryView, ApiError> {
    run(core, |s| s.memory()).await
}
#[tauri::command]
pub async fn memory_folders(core: State<'_, Arc<Core>>) -> Result<MemoryFolders, ApiError> {
    run(core, |s| Ok(s.memory_folders())).await
}
#[tauri::command]
pub async fn memory_inspect(
    core: State<'_, Arc<Core>>,
    folder: String,
) -> Result<MemoryInspect, ApiError> {
    run(core, move |s| s.memory_inspect(&folder)).await
}
#[tauri::command]
pub async fn memory_history(
    core: State<'_, Arc<Core>>,
    folder: String,
) -> Result<HistoryView, ApiError> {
    run(core, move |s| s.memory_history(&folder)).await
}
#[tauri::command]
pub async fn memory_commit(
    core: State<'_, Arc<Core>>,
    folder: String,
    rev: String,
) -> Result<CommitDiff, ApiError> {
    run(core, move |s| s.memory_commit(&folder, &rev)).await
}
#[tauri::command]
pub async fn memory_rollback(
    core: State<'_, Arc<Core>>,
    folder: String,
    rev: String,
) -> Result<ActionResult, ApiError> {
    run(core, move |s| s.memory_rollback(&folder, &rev)).await
}
#[tauri::command]
pub async fn memory_tidy_plan(
    core: State<'_, Arc<Core>>,
    folder: String,
) -> Result<TidyPlanView, ApiError> {
    run(core, move |s| s.memory_tidy_plan(&folder)).await
}
#[tauri::command]
pub async fn memory_tidy_apply(
    core: State<'_, Arc<Core>>,
    folder: String,
) -> Result<ActionResult, ApiError> {
    run(core, move |s| s.memory_tidy_apply(&folder)).await
}
#[tauri::command]
pub async fn memory_review(core: State<'_, Arc<Core>>) -> Result<ReviewView, ApiError> {
    run(core, |s| s.memory_review(None)).await
}
#[tauri::command]
pub async fn memory_review_decide(
    core: State<'_, Arc<Core>>,
    action: String,
) -> Result<ReviewView, ApiError> {
    run(core, move |s| {
        let a = match action.as_str() {
            "accept" => codex_free_pipeline::phase2::review::ReviewAction::Accept,
            "reject" => codex_free_pipeline::phase2::review::ReviewAction::Reject,
            _ => {
                return Err(codex_free_core::Error::InvalidArgument(format!(
                    "review action {action:?}: accept or reject"
                )));
            }
        };
        s.memory_review(Some(a))
    })
    .await
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
