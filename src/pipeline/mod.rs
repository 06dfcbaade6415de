//! pipeline: see ARCHITECTURE.md.
pub mod control;
pub mod phase1;
pub mod scheduler;
pub mod usage;
