//! Integration tests: one binary, one module per area. `support` drives the real binary.

mod support;

mod mcp_clients;
mod mcp_transport;
mod pipeline_sources;
mod tools_exec;
mod tools_fs;

#[path = "support/mock_provider.rs"]
mod mock_provider;
mod pipeline_phase1;
