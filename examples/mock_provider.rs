//! The test model provider (`codex_free_testkit::mock_provider`, speaking the OpenAI and
//! Anthropic wire formats) as a process, for the browser tests: `cargo run --example
//! mock_provider` prints its base URL (`http://127.0.0.1:<port>/v1/`) on the first line
//! of stdout, then serves until it gets SIGTERM or SIGINT.
// A measurement program: it prints its figures and may panic on a broken setup.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used
)]

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    use std::io::Write;
    let mock = codex_free_testkit::mock_provider::MockProvider::start().await;
    println!("{}", mock.base_url());
    std::io::stdout().flush()?;
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    eprintln!("mock provider: {} request(s) served", mock.requests().len());
    mock.stop();
    Ok(())
}
