//! Codex Free's server: the MCP handler and its transports (rmcp: stdio and streamable
//! HTTP), the `/api` service the web UI and the tray window use, and the embedded UI.
//!
//! - [`mcp`]: the rmcp server handler, stdio and HTTP transports, auth.
//! - [`api`]: the service the UI talks to, its DTOs and HTTP routes.
//! - [`app`]: the composition root both binaries use (`App::open`).
//!
//! Invariant: the only crate that imports `rmcp` and `axum`; everything below it
//! (tools, pipeline, store, secrets) knows nothing of MCP or HTTP.

pub mod api;
pub mod app;
pub mod http;
pub mod mcp;
