//! Integration tests: one binary, one module per area.

#[path = "support/mock_provider.rs"]
mod mock_provider;
mod pipeline_phase1;
