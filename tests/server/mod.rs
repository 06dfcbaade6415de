//! The server crate (`codex-free-server`) and the CLI around it: MCP transports, fitting
//! each client, process lifecycle, and `connect` for every agent.

mod bounds;
mod connect;
mod fit;
mod lifecycle;
pub(crate) mod memory_versions;
mod transport;
