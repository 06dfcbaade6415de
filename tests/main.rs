//! Integration tests: one binary, one module per area.
mod tools_exec;
