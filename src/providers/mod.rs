//! providers: see ARCHITECTURE.md.
