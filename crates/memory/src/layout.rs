//! The memory folder's layout: every file and directory name of `<home>/memories`, defined
//! once. The folder is layered: `MEMORY.md` (rules, loaded by default) and
//! `memory_summary.md` (served into new sessions) are loaded; `daily/` (progress by day),
//! `archive/` (evidence), `rollout_summaries/`, `raw_memories*` and `skills/` are read on
//! demand through `memories_search` / `memories_read`.

/// Folder name inside the state home.
pub const FOLDER_DIR: &str = "memories";
/// The consolidated memory (kept under a hard line/byte budget).
pub const MEMORY_MD: &str = "MEMORY.md";
/// The summary injected into new sessions (kept under a hard line/byte budget; read
/// by [`super::readpath`]).
pub const SUMMARY_MD: &str = "memory_summary.md";
/// The selected raw memories of phase 1, rebuilt on every run.
pub const RAW_MEMORIES_MD: &str = "raw_memories.md";
/// One file per selected rollout, `<stem>.md`.
pub const ROLLOUT_SUMMARIES_DIR: &str = "rollout_summaries";
/// Reusable procedures the agent may write.
pub const SKILLS_DIR: &str = "skills";
/// Explicit notes queued by `memories_add_ad_hoc_note`, moved in by the next run.
pub const AD_HOC_DIR: &str = "ad_hoc_notes";
/// Folder of per-day progress logs (`daily/YYYY-MM-DD.md`).
pub const DAILY_DIR: &str = "daily";
/// Folder of evidence that is kept and searchable but never injected.
pub const ARCHIVE_DIR: &str = "archive";
/// The heading of `MEMORY.md`'s list of live facts to check at task start.
pub const VERIFY_HEADING: &str = "## Verify at task start";
/// Directory in the state home where `memories_add_ad_hoc_note` queues notes until the next
/// phase-2 run moves them into the folder (outside the folder, so a failed run's reset
/// can never lose one).
pub const NOTES_INBOX_DIR: &str = "memories_inbox";
/// Per-machine raw memories directory (`raw_memories/<machine>.md`) used while sync is on.
pub const RAW_MEMORIES_DIR: &str = "raw_memories";
/// The V2 memory folder inside the state home (`memories.version: "v2"` or dual-write):
/// `memory_summary.md`, `rollout_summaries/`, `skills/`; never `MEMORY.md` or
/// `raw_memories.md`.
pub const V2_FOLDER_DIR: &str = "memories_v2";

/// The folder name of `version` inside the state home.
pub fn folder_dir(version: codex_free_core::config::MemoryVersion) -> &'static str {
    match version {
        codex_free_core::config::MemoryVersion::V1 => FOLDER_DIR,
        codex_free_core::config::MemoryVersion::V2 => V2_FOLDER_DIR,
    }
}
