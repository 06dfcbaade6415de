//! The MCP face of Codex Free: an `rmcp` server handler ([`server::CodexFree`]) exposing the
//! bounded tools of [`codex_free_tools`] and the task memory of [`codex_free_task_memory`], served over
//! stdio ([`stdio`]) or streamable HTTP ([`http`], bearer token or secret path, Origin/Host
//! checks, `/health`).
//!
//! Invariant: `rmcp` is imported only under `src/mcp/`; tool logic lives in `tools/` and
//! `memory/`; this layer only maps arguments, results and errors (`{code, message}`).
//! Instructions are rebuilt on every `initialize`, so a new session sees the
//! current saved state.

pub mod clients;
mod instructions;
mod resources;
mod schema;
pub mod server;
pub mod sessions;
pub mod stdio;
mod tools_exec;
mod tools_fs;
mod tools_memory_folder;
mod tools_task_memory;

pub use server::{CodexFree, Mode, ServerOptions};
