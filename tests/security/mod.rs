//! Attacks: path escapes and protected directories, command guardrails and the sandbox,
//! the HTTP surface (tokens, Host/Origin, routes).

mod exec;
mod http;
mod paths;
