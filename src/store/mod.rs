//! store: see ARCHITECTURE.md.

pub mod fts;
pub mod phase2;
