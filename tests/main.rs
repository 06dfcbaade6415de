//! Integration tests: one binary whose modules mirror the crates. `support` drives the real
//! binaries (and is the footer-following client every area shares).
//!
//! - `tools`: the bounded tools and task memory, through the real server.
//! - `security`: attacks on paths, commands and the HTTP surface.
//! - `pipeline`: transcript sources, phase 1, phase 2, hygiene, sync and agent usage.
//! - `server`: transports, client fit, lifecycle, and `connect`.
//! - `clients`: the real agent CLIs (Codex CLI, Claude Code, pi) and the Python MCP SDK.
// Test code: panics are failures, printing is diagnostics.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used
)]

mod support;

mod clients;
mod pipeline;
mod security;
mod server;
mod tools;
