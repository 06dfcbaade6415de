//! Clients other than our own test driver: the real agent CLIs from npm (Codex CLI, Claude
//! Code, pi) offline against the mock model, and the official Python MCP SDK and rmcp's
//! client.

mod real;
mod sdk;
