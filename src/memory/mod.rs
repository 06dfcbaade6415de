//! memory: see ARCHITECTURE.md.
