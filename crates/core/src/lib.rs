//! Codex Free's foundation: what every other crate shares and nothing else owns.
//!
//! - [`audit`]: the audit trail of tool calls (shapes and sizes, never contents).
//! - [`error`]: the one [`Error`] type and its [`ErrorCode`] (HTTP status, MCP text, UI code).
//! - [`home`]: the state home (`~/.codex-free`, `CODEX_FREE_HOME`), locked atomic writes.
//! - [`tokens`]: token counting (bytes / 4 estimate for budgets, `o200k_base` when exact).
//! - [`config`]: `codex.config.json` types, defaults, validation, load/save.
//! - [`paging`]: continuation footers (built and parsed here only) and output ceilings.
//! - [`jail`]: the one path jail every project path goes through.
//!
//! Invariant: no I/O beyond the state home and the config file; no network, no database.

#![deny(missing_docs)]

pub mod audit;
pub mod config;
pub mod error;
pub mod events;
pub mod home;
pub mod jail;
pub mod paging;
pub mod runs_later;
pub mod time;
pub mod tokens;

pub use error::{Error, ErrorCode, Result};
