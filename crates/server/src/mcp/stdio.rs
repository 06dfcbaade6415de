//! The stdio transport: one MCP session over this process's stdin/stdout (how Codex CLI
//! and Claude Code spawn `codex-free serve --stdio`).
//!
//! When stdin and stdout are pipes (as every MCP client spawns us), both are driven by the
//! runtime's reactor (`tokio::net::unix::pipe`, non-blocking, polled with epoll on the worker
//! that serves the session), not by tokio's `Stdin`/`Stdout`, which hand every read and
//! write to a blocking-pool thread: that hand-off was a third of the server's CPU per tool
//! call (profiled: futex waits and task switches). A terminal, file or socket falls back to
//! rmcp's standard stdio transport.
//!
//! Invariant: nothing else writes to stdout while this runs (logs go to stderr).

use rmcp::ServiceExt;

use crate::mcp::CodexFree;
use codex_free_core::Error;
use codex_free_core::Result;

/// Serve one session on stdin/stdout until the client closes it.
/// Errors: the transport failed to initialise ([`Error::Io`]).
pub async fn serve(server: CodexFree) -> Result<()> {
    server
        .shared()
        .inline_reads
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let started = match pipes() {
        Some((rx, tx)) => server.serve((rx, tx)).await,
        None => server.serve(rmcp::transport::stdio()).await,
    };
    let running = started.map_err(|e| {
        Error::io(
            "starting the stdio MCP session",
            std::io::Error::other(e.to_string()),
        )
    })?;
    running.waiting().await.map_err(|e| {
        Error::io(
            "running the stdio MCP session",
            std::io::Error::other(e.to_string()),
        )
    })?;
    Ok(())
}

/// Stdin and stdout as reactor-driven pipe ends, when both are FIFOs. `None` otherwise (or
/// when registering them fails), and the caller uses the blocking-pool transport.
#[cfg(unix)]
fn pipes() -> Option<(
    tokio::net::unix::pipe::Receiver,
    tokio::net::unix::pipe::Sender,
)> {
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt;
    let dup = |fd: std::os::fd::BorrowedFd<'_>| -> Option<std::fs::File> {
        let owned = fd.try_clone_to_owned().ok()?;
        let file = std::fs::File::from(owned);
        file.metadata()
            .ok()
            .filter(|m| m.file_type().is_fifo())
            .map(|_| file)
    };
    let stdin = dup(std::io::stdin().as_fd())?;
    let stdout = dup(std::io::stdout().as_fd())?;
    let rx = tokio::net::unix::pipe::Receiver::from_file(stdin)
        .inspect_err(|e| tracing::debug!("stdin not polled by the reactor: {e}"))
        .ok()?;
    let tx = tokio::net::unix::pipe::Sender::from_file(stdout)
        .inspect_err(|e| tracing::debug!("stdout not polled by the reactor: {e}"))
        .ok()?;
    Some((rx, tx))
}

#[cfg(not(unix))]
fn pipes() -> Option<(tokio::io::Stdin, tokio::io::Stdout)> {
    None
}
