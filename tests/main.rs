//! Integration tests: one binary, one module per area.
mod pipeline_sources;
