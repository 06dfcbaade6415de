//! The tray icon and its menu (Tauri glue). Menu ids map one-to-one to the plain actions
//! of [`crate::host::AppHost`]; a refresher updates the status lines (spend today and this
//! month, next run, last error), labels and icon every few seconds. The pipeline's alerts
//! (spend thresholds, failing runs, a rejected key) arrive through [`Notifier`] as desktop
//! notifications.
//!
//! Invariant: actions that may block (server start/stop, pipeline) run on a plain thread,
//! never on the GTK main thread that delivers menu events.

use std::sync::Arc;
use std::time::Duration;

use tauri::image::Image;
use tauri::menu::{CheckMenuItem, Menu, MenuItem, PredefinedMenuItem};
use tauri::tray::{TrayIcon, TrayIconBuilder};
use tauri::{AppHandle, Manager, Wry};
use tauri_plugin_autostart::ManagerExt as _;
use tauri_plugin_clipboard_manager::ClipboardExt as _;
use tauri_plugin_notification::NotificationExt as _;

use crate::host::{AppHost, IconState};

/// How often the tray text and icon are refreshed.
pub const REFRESH: Duration = Duration::from_secs(5);

const ICON_RUNNING: &[u8] = include_bytes!("../../icons/tray-running@2x.png");
const ICON_STOPPED: &[u8] = include_bytes!("../../icons/tray-stopped@2x.png");
const ICON_ERROR: &[u8] = include_bytes!("../../icons/tray-error@2x.png");

/// The PNG bytes of the tray icon for `state`.
pub fn icon_bytes(state: IconState) -> &'static [u8] {
    match state {
        IconState::Running => ICON_RUNNING,
        IconState::Stopped => ICON_STOPPED,
        IconState::Error => ICON_ERROR,
    }
}

/// Menu handles kept for refreshing.
pub struct TrayHandles {
    tray: TrayIcon<Wry>,
    server_line: MenuItem<Wry>,
    toggle_server: MenuItem<Wry>,
    toggle_pipeline: MenuItem<Wry>,
    spend_line: MenuItem<Wry>,
    agents_line: MenuItem<Wry>,
    next_line: MenuItem<Wry>,
    error_line: MenuItem<Wry>,
    autostart: CheckMenuItem<Wry>,
}

/// Delivers the pipeline's alerts as desktop notifications.
pub struct Notifier(pub AppHandle);

impl codex_free_pipeline::alerts::AlertSink for Notifier {
    fn notify(&self, alert: &codex_free_pipeline::alerts::Alert) {
        notify(&self.0, &alert.title(), &alert.body());
        tracing::info!(target: "alerts", "{}: {}", alert.title(), alert.body());
    }
}

/// Show (creating if needed) the main window.
pub fn open_window(app: &AppHandle) {
    if let Some(w) = app.get_webview_window("main") {
        let _ = w.show();
        let _ = w.unminimize();
        let _ = w.set_focus();
        return;
    }
    if let Err(e) = crate::create_window(app) {
        tracing::error!("cannot open the window: {e}");
    }
}

fn copy(app: &AppHandle, what: &str, text: Option<String>) {
    match text {
        Some(t) => match app.clipboard().write_text(t) {
            Ok(()) => tracing::info!("{what} copied to the clipboard"),
            Err(e) => tracing::warn!("copying {what} failed: {e}"),
        },
        None => tracing::warn!("nothing to copy: {what} unavailable (is the server running?)"),
    }
}

fn on_menu(app: &AppHandle, id: &str) {
    let core = app.state::<Arc<AppHost>>().inner().clone();
    let app2 = app.clone();
    match id {
        "toggle_server" => {
            std::thread::spawn(move || {
                let r = core.toggle_server();
                tracing::info!("{}", r.message);
                refresh(&app2);
            });
        }
        "copy_url" => copy(app, "MCP URL", core.mcp_url()),
        "copy_token" => copy(app, "MCP token", core.token().ok()),
        "copy_login" => copy(app, "one-time web UI login link", core.ui_url()),
        "copy_diagnostics" => copy(app, "diagnostic info", core.diagnostics()),
        "run_pipeline" => {
            std::thread::spawn(move || {
                let r = core.run_pipeline();
                notify(&app2, "Pipeline", &r.message);
                refresh(&app2);
            });
        }
        "toggle_pipeline" => {
            std::thread::spawn(move || {
                let _ = core.toggle_pipeline();
                refresh(&app2);
            });
        }
        "autostart" => {
            let al = app.autolaunch();
            let on = al.is_enabled().unwrap_or(false);
            let r = if on { al.disable() } else { al.enable() };
            if let Err(e) = r {
                tracing::warn!("launch at login: {e}");
            }
            refresh(app);
        }
        "open" => open_window(app),
        "quit" => quit(app),
        _ => {}
    }
}

/// Stop the server, then exit the app with status 0.
pub fn quit(app: &AppHandle) {
    let core = app.state::<Arc<AppHost>>().inner().clone();
    let app = app.clone();
    std::thread::spawn(move || {
        core.quit();
        app.exit(0);
    });
}

fn notify(app: &AppHandle, title: &str, body: &str) {
    if let Err(e) = app.notification().builder().title(title).body(body).show() {
        tracing::debug!("notification not shown: {e}");
    }
}

/// Build the tray. With no tray host (e.g. under Xvfb) this still succeeds.
pub fn build(app: &AppHandle) -> tauri::Result<TrayHandles> {
    let core = app.state::<Arc<AppHost>>().inner().clone();
    let server_line =
        MenuItem::with_id(app, "server_line", core.server_line(), false, None::<&str>)?;
    let toggle_server = MenuItem::with_id(
        app,
        "toggle_server",
        core.toggle_label(),
        true,
        None::<&str>,
    )?;
    let copy_url = MenuItem::with_id(app, "copy_url", "Copy MCP URL", true, None::<&str>)?;
    let copy_token = MenuItem::with_id(app, "copy_token", "Copy MCP token", true, None::<&str>)?;
    let copy_login = MenuItem::with_id(
        app,
        "copy_login",
        "Copy browser login link",
        true,
        None::<&str>,
    )?;
    let run_pipeline =
        MenuItem::with_id(app, "run_pipeline", "Run pipeline now", true, None::<&str>)?;
    let toggle_pipeline = MenuItem::with_id(
        app,
        "toggle_pipeline",
        core.pause_label(),
        true,
        None::<&str>,
    )?;
    let spend_line = MenuItem::with_id(app, "spend_line", core.spend_line(), false, None::<&str>)?;
    let agents_line =
        MenuItem::with_id(app, "agents_line", core.agents_line(), false, None::<&str>)?;
    let next_line = MenuItem::with_id(app, "next_line", core.next_run_line(), false, None::<&str>)?;
    let error_line = MenuItem::with_id(
        app,
        "error_line",
        core.last_error_line(),
        false,
        None::<&str>,
    )?;
    let copy_diag = MenuItem::with_id(
        app,
        "copy_diagnostics",
        "Copy diagnostic info",
        true,
        None::<&str>,
    )?;
    let autostart_on = app.autolaunch().is_enabled().unwrap_or(false);
    let autostart = CheckMenuItem::with_id(
        app,
        "autostart",
        "Launch at login",
        true,
        autostart_on,
        None::<&str>,
    )?;
    let open = MenuItem::with_id(app, "open", "Open Codex Free", true, None::<&str>)?;
    let quit_item = MenuItem::with_id(app, "quit", "Quit", true, None::<&str>)?;
    let menu = Menu::with_items(
        app,
        &[
            &server_line,
            &toggle_server,
            &copy_url,
            &copy_token,
            &copy_login,
            &PredefinedMenuItem::separator(app)?,
            &run_pipeline,
            &toggle_pipeline,
            &agents_line,
            &spend_line,
            &next_line,
            &error_line,
            &PredefinedMenuItem::separator(app)?,
            &copy_diag,
            &autostart,
            &open,
            &quit_item,
        ],
    )?;
    let tray = TrayIconBuilder::with_id("main")
        .icon(Image::from_bytes(icon_bytes(core.icon_state()))?)
        .tooltip("Codex Free")
        .menu(&menu)
        .show_menu_on_left_click(true)
        .on_menu_event(|app, ev| on_menu(app, ev.id().as_ref()))
        .build(app)?;
    Ok(TrayHandles {
        tray,
        server_line,
        toggle_server,
        toggle_pipeline,
        spend_line,
        agents_line,
        next_line,
        error_line,
        autostart,
    })
}

/// Update texts, labels and icon from the current state.
pub fn refresh(app: &AppHandle) {
    let core = app.state::<Arc<AppHost>>().inner().clone();
    let Some(h) = app.try_state::<TrayHandles>() else {
        return;
    };
    let _ = h.server_line.set_text(core.server_line());
    let _ = h.toggle_server.set_text(core.toggle_label());
    let _ = h.toggle_pipeline.set_text(core.pause_label());
    let _ = h.spend_line.set_text(core.spend_line());
    let _ = h.agents_line.set_text(core.agents_line());
    let _ = h.next_line.set_text(core.next_run_line());
    let _ = h.error_line.set_text(core.last_error_line());
    let _ = h
        .autostart
        .set_checked(app.autolaunch().is_enabled().unwrap_or(false));
    if let Ok(img) = Image::from_bytes(icon_bytes(core.icon_state())) {
        let _ = h.tray.set_icon(Some(img));
    }
    let _ = h.tray.set_tooltip(Some(core.server_line()));
}

/// Refresh the tray every [`REFRESH`]. Runs on a plain thread until the app exits.
pub fn spawn_refresher(app: AppHandle) {
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(REFRESH);
            refresh(&app);
        }
    });
}
