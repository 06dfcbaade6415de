//! `codex-free-app`: the tray app. See the crate doc of `codex_free_app`.

use clap::Parser;

fn main() -> anyhow::Result<()> {
    // WebKit derives `navigator.language` from LANG; "C"/"POSIX" (minimal systems, Xvfb
    // sessions) is not a valid language tag and makes `Intl` throw in the UI. Set a valid one
    // before any thread starts.
    let lang = std::env::var("LANG").unwrap_or_default();
    if lang.is_empty() || lang.starts_with("C.") || lang == "C" || lang == "POSIX" {
        // SAFETY: single-threaded at this point (nothing has been spawned yet).
        unsafe { std::env::set_var("LANG", "en_US.UTF-8") };
    }
    let filter = tracing_subscriber::EnvFilter::try_from_env("CODEX_FREE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,rmcp=warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // A log line that cannot be written (full disk) is dropped instead of panicking the
        // task that logged it (tracing-subscriber reports the failure with `eprintln!`).
        .log_internal_errors(false)
        .init();
    let code = codex_free_app::run(codex_free_app::Options::parse())?;
    std::process::exit(code)
}
