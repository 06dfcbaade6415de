//! The stdio transport: one MCP session over this process's stdin/stdout (how Codex CLI
//! and Claude Code spawn `codex-free serve --stdio`).
//!
//! Invariant: nothing else writes to stdout while this runs (logs go to stderr).

use rmcp::ServiceExt;

use crate::mcp::CodexFree;
use codex_free_core::Error;
use codex_free_core::Result;

/// Serve one session on stdin/stdout until the client closes it.
/// Errors: the transport failed to initialise ([`Error::Io`]).
pub async fn serve(server: CodexFree) -> Result<()> {
    let running = server.serve(rmcp::transport::stdio()).await.map_err(|e| {
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
