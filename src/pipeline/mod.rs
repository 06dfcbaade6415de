//! pipeline: see ARCHITECTURE.md.

pub mod phase2;
