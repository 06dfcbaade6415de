//! Codex Free core library: bounded MCP coding tools, task memory, and the background
//! memory pipeline. Builds and tests without Tauri, GTK or a display.
//!
//! Map (see `ARCHITECTURE.md` for invariants):
//! - [`config`]: `codex.config.json` blocks, defaults in code, validation.
//! - [`home`]: the state home (`~/.codex-free`, `CODEX_FREE_HOME`) and atomic, locked writes.
//! - [`tools`]: the bounded tools (no MCP types).
//! - [`mcp`]: rmcp server handler, stdio and streamable HTTP transports, auth.
//! - [`memory`]: task notes + plan, project bindings, saved-state instructions.
//! - [`pipeline`], [`providers`], [`store`], [`secrets`]: the memory pipeline.
//! - [`api`]: the service the UI talks to.

pub mod api;
pub mod config;
pub mod error;
pub mod home;
pub mod mcp;
pub mod memory;
pub mod pipeline;
pub mod providers;
pub mod secrets;
pub mod store;
pub mod tokens;
pub mod tools;

pub use error::{Error, Result};
