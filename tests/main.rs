//! Integration tests: one binary, one module per area. `support` drives the real binary.

mod support;

mod mcp_transport;
