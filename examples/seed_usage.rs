//! Seed `state.sqlite` with demo usage for tests and screenshots:
//! `cargo run --example seed_usage -- DAYS` writes `api::usage::demo_records(now, DAYS)`
//! (documented there: the exact rows and prices the browser tests assert) into
//! `$CODEX_FREE_HOME/state.sqlite` through the store's own API. Prints the number of runs.
// A measurement program: it prints its figures and may panic on a broken setup.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used
)]

fn main() -> anyhow::Result<()> {
    let days: u32 = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "21".into())
        .parse()?;
    let home = codex_free_core::home::state_home()?;
    std::fs::create_dir_all(&home)?;
    let rows =
        codex_free_server::api::usage::demo_records(chrono::Utc::now().timestamp_millis(), days);
    let runs = codex_free_server::api::store_usage::seed(&home, &rows)?;
    println!("{runs}");
    Ok(())
}
