//! Codex Free desktop app: a Tauri 2 tray application that embeds the MCP HTTP server (and
//! the pipeline, when present) on the async runtime, stores provider keys in the OS
//! keyring, and shows the web UI (`ui/`) in a window whose calls go through Tauri commands
//! to the same `ApiService` the headless server exposes over HTTP.
//!
//! Map: [`core`] (state and every tray action as a plain function over the
//! [`App`] that `codex_free_server::app` assembles), [`commands`] (Tauri commands), [`tray`] (menu, icon,
//! refresh, notifications).
//!
//! Invariant: this is the only crate importing `tauri`; with no display it says so and
//! exits (pointing to the headless mode) before any GTK call.

pub mod commands;
pub mod host;
pub mod tray;

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use codex_free_secrets::keyring;
use codex_free_server::app::{App, AppOptions};
use codex_free_server::mcp::ServerOptions;
use tauri::{AppHandle, Manager, RunEvent, WebviewUrl, WebviewWindowBuilder, WindowEvent};

use crate::host::AppHost;

/// Command-line options of the app.
#[derive(Debug, Clone, Default, clap::Parser)]
#[command(
    name = "codex-free-app",
    version,
    about = "Codex Free tray app (MCP server, memory pipeline, web UI)"
)]
pub struct Options {
    /// Serve one project (single-project mode).
    #[arg(long, value_name = "DIR", conflicts_with = "access_root")]
    pub project: Option<PathBuf>,
    /// Multi-project mode under DIR (default: your home directory).
    #[arg(long, value_name = "DIR")]
    pub access_root: Option<PathBuf>,
    /// Port of the MCP server (default: config `server.port`; 0 = any free port).
    #[arg(long)]
    pub port: Option<u16>,
    /// Start in the tray without opening the window.
    #[arg(long)]
    pub minimized: bool,
    /// Do not start the memory pipeline scheduler.
    #[arg(long)]
    pub no_pipeline: bool,
}

/// The message shown when there is no display, naming the headless alternative.
pub const NO_DISPLAY: &str = "codex-free-app needs a graphical session (neither DISPLAY nor WAYLAND_DISPLAY is set).\n\
Run the same server and web UI headless instead:\n  codex-free serve --http --ui --project DIR\n\
then open the printed address in a browser.";

/// True when a display server is reachable by name (X11 or Wayland).
pub fn has_display() -> bool {
    ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()))
}

/// Build the core state through [`App::open`]: config, keyring, API service, embedded
/// server (not started).
pub fn build_core(opts: &Options, rt: tokio::runtime::Handle) -> anyhow::Result<Arc<AppHost>> {
    let home = codex_free_core::home::state_home()?;
    let server_opts = match (&opts.project, &opts.access_root) {
        (Some(p), _) => ServerOptions::single(p, &home, None)?,
        (None, Some(a)) => ServerOptions::multi(a, &home, None)?,
        (None, None) => {
            let h = std::env::home_dir()
                .context("no home directory: pass --project or --access-root")?;
            ServerOptions::multi(&h, &home, None)?
        }
    };
    let config = codex_free_core::config::Config::load(&server_opts.config_path)
        .map(|l| l.config)
        .unwrap_or_default();
    let port = opts.port.unwrap_or(config.server.port);
    let app = App::open(
        AppOptions {
            server: server_opts,
            http: Some((config.server.host.clone(), port)),
            ui: true,
            stoppable: true,
            process_label: "codex-free-app".into(),
            lock_retry: codex_free_server::app::LOCK_RETRY,
        },
        keyring::open(),
        rt,
    )?;
    Ok(Arc::new(AppHost::new(app)?))
}

/// Create the main window showing the embedded UI.
pub fn create_window(app: &AppHandle) -> tauri::Result<()> {
    WebviewWindowBuilder::new(app, "main", WebviewUrl::App("index.html".into()))
        .title("Codex Free")
        .inner_size(1180.0, 800.0)
        .min_inner_size(760.0, 520.0)
        .build()?;
    Ok(())
}

/// Run the app until Quit (or SIGTERM/SIGINT). Returns the process exit code.
#[allow(
    clippy::print_stderr,
    reason = "without a display the app tells the terminal why it exits"
)]
pub fn run(opts: Options) -> anyhow::Result<i32> {
    if !has_display() {
        eprintln!("{NO_DISPLAY}");
        return Ok(2);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("codex-free-rt")
        .enable_all()
        .build()?;
    let signals = {
        let _guard = rt.enter();
        codex_free_server::app::ShutdownSignals::install()
    };
    let core = build_core(&opts, rt.handle().clone())?;
    let started = core.server.start_blocking();
    tracing::info!("{}", started.message);
    if !opts.no_pipeline {
        let p = core.start_pipeline();
        tracing::info!("{}", p.message);
    }
    let show = !opts.minimized;
    let app = tauri::Builder::default()
        .plugin(tauri_plugin_single_instance::init(|app, _args, _cwd| {
            tray::open_window(app)
        }))
        .plugin(tauri_plugin_notification::init())
        .plugin(tauri_plugin_clipboard_manager::init())
        .plugin(tauri_plugin_autostart::init(
            tauri_plugin_autostart::MacosLauncher::LaunchAgent,
            Some(vec!["--minimized"]),
        ))
        .manage(core.clone())
        .invoke_handler(tauri::generate_handler![
            commands::api,
            commands::autostart_get,
            commands::autostart_set,
        ])
        .setup(move |app| {
            // Alerts from the scheduler become desktop notifications from now on.
            app.state::<Arc<AppHost>>()
                .app
                .pipeline
                .set_alert_sink(Arc::new(tray::Notifier(app.handle().clone())));
            let handles = tray::build(app.handle())?;
            app.manage(handles);
            tracing::info!("tray built");
            if show {
                create_window(app.handle())?;
            }
            tray::spawn_refresher(app.handle().clone());
            Ok(())
        })
        .on_window_event(|window, event| {
            // Closing the window keeps the app in the tray.
            if let WindowEvent::CloseRequested { api, .. } = event {
                api.prevent_close();
                let _ = window.hide();
            }
        })
        .build(tauri::generate_context!())
        .context("starting the desktop app")?;

    // SIGTERM / SIGINT / SIGHUP quit cleanly, as the tray's Quit does; a second signal
    // exits at once.
    let handle = app.handle().clone();
    rt.spawn(async move {
        signals.wait().await;
        tray::quit(&handle);
    });

    let code = std::sync::Arc::new(std::sync::atomic::AtomicI32::new(0));
    let code2 = code.clone();
    let core2 = core.clone();
    app.run(move |_app, event| {
        if let RunEvent::ExitRequested { code: Some(c), .. } = &event {
            code2.store(*c, std::sync::atomic::Ordering::SeqCst);
        }
        if let RunEvent::Exit = event {
            core2.quit();
        }
    });
    rt.shutdown_timeout(std::time::Duration::from_secs(2));
    Ok(code.load(std::sync::atomic::Ordering::SeqCst))
}
