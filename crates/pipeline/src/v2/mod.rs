//! The V2 memory pipeline, beside V1 and never sharing its rows or files: its own folder
//! (`<home>/memories_v2`, [`codex_free_memory::layout::V2_FOLDER_DIR`]) and its own
//! database (`<home>/state_v2.sqlite`, [`codex_free_store::DB_FILE_V2`]) with its own
//! threads, jobs, outputs, runs and usage rows.
//!
//! Phase 1 V2 sends evidence chosen by tier within byte budgets ([`evidence`]) and keeps
//! only a rollout summary ([`output`]); phase 2 V2 consolidates the rollout summaries into
//! `memory_summary.md` alone, validated by [`summary`] (no `MEMORY.md`, no
//! `raw_memories.md`). Readiness ([`summary::readiness`]) reports whether V2 has taken in
//! enough threads to be worth serving; switching is the user's (`memories.version`).

pub mod evidence;
pub mod output;
pub mod state;
pub mod summary;

use std::path::{Path, PathBuf};

use codex_free_core::config::MemoryVersion;

/// The memory folder of `version` in `home`.
pub fn folder(home: &Path, version: MemoryVersion) -> PathBuf {
    home.join(codex_free_memory::layout::folder_dir(version))
}

/// The database file of `version` in `home`.
pub fn db_path(home: &Path, version: MemoryVersion) -> PathBuf {
    home.join(match version {
        MemoryVersion::V1 => codex_free_store::DB_FILE,
        MemoryVersion::V2 => codex_free_store::DB_FILE_V2,
    })
}

/// Open the database of `version` in `home` with the system clock.
///
/// Errors: as [`codex_free_store::Store::open`].
pub fn open_store(
    home: &Path,
    version: MemoryVersion,
) -> codex_free_core::Result<codex_free_store::Store> {
    codex_free_store::Store::open(
        &db_path(home, version),
        std::sync::Arc::new(codex_free_store::SystemClock),
    )
}
