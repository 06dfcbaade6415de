//! Integration tests: one binary, one module per area. `support` drives the real binary.

mod support;

mod connect;
mod lifecycle;
mod mcp_clients;
mod mcp_fit;
mod mcp_transport;
mod memory_hygiene;
mod memory_sync;
mod pipeline_phase1;
mod pipeline_phase1_fixtures;
mod pipeline_phase2;
mod pipeline_sources;
mod real_clients;
mod security_exec;
mod security_http;
mod security_paths;
mod taskmem;
mod tools_changes_image;
mod tools_exec;
mod tools_fs;
mod usage;
