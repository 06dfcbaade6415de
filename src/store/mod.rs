//! store: see ARCHITECTURE.md.
