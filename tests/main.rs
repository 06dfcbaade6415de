//! Integration tests: one binary, one module per area. `support` drives the real binary.

mod support;

mod mcp_clients;
mod mcp_transport;
mod tools_fs;
