//! Tauri commands. The window's API calls all go through one command, [`api`], which runs
//! the request in process through the same `/api` router the HTTP server mounts
//! (`codex_free_server::api::http::dispatch`): the route table in that module is the only
//! list of endpoints, and the UI's two backends differ only in transport. Launch at login
//! is the one thing only the desktop app can do, so it has its own commands.
//!
//! Invariant: no logic here beyond argument passing; the HTTP routes and the window give
//! the same answers.

use std::sync::Arc;

use codex_free_server::api::dto::ApiError;
use codex_free_server::api::http::Dispatched;
use serde_json::Value;
use tauri::State;

use crate::host::AppHost;

static FIRST_CALL: std::sync::Once = std::sync::Once::new();

/// One `/api` request from the window: `method` (`GET`, `PUT`, …), `path` with its query
/// (`/api/runs?phase=phase1`), optional JSON `body`. Answers status, content type and
/// body text exactly as the HTTP server would (errors are `ApiError` JSON with their
/// status, not command failures).
#[tauri::command]
pub async fn api(
    core: State<'_, Arc<AppHost>>,
    method: String,
    path: String,
    body: Option<Value>,
) -> Result<Dispatched, ApiError> {
    // Logged once: proves the window loaded the UI and its calls reach the core (smoke test).
    FIRST_CALL.call_once(|| tracing::info!("ui connected: first command from the window"));
    Ok(codex_free_server::api::http::dispatch(core.service.clone(), &method, &path, body).await)
}

/// Launch at login: whether this desktop app can do it and whether it is on.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Autostart {
    /// Always true here (the desktop app); the headless server answers false.
    pub available: bool,
    /// Registered to start at login.
    pub enabled: bool,
}

#[tauri::command]
pub async fn autostart_get(app: tauri::AppHandle) -> Result<Autostart, ApiError> {
    use tauri_plugin_autostart::ManagerExt as _;
    Ok(Autostart {
        available: true,
        enabled: app.autolaunch().is_enabled().unwrap_or(false),
    })
}

#[tauri::command]
pub async fn autostart_set(app: tauri::AppHandle, enabled: bool) -> Result<Autostart, ApiError> {
    use tauri_plugin_autostart::ManagerExt as _;
    let al = app.autolaunch();
    let r = if enabled { al.enable() } else { al.disable() };
    r.map_err(|e| ApiError {
        code: codex_free_core::error::ErrorCode::Internal.into(),
        message: format!("launch at login could not be changed: {e}"),
        fields: Vec::new(),
    })?;
    Ok(Autostart {
        available: true,
        enabled: al.is_enabled().unwrap_or(enabled),
    })
}
