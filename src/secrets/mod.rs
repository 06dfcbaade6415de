//! secrets: see ARCHITECTURE.md.
