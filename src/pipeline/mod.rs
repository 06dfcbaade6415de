//! pipeline: see ARCHITECTURE.md.
