//! `memories history | diff | rollback` over the memory folder (the rollback through the
//! write gate, refused while a consolidation holds its lease).

use super::*;

/// `codex-free memories history | diff | rollback`: run `cmd` and return the text to print.
/// Rollback refuses with [`Error::Busy`] while a phase-2 job holds a live lease, and with
/// [`Error::Budget`] when the target's artifacts fail the write gate under `budget`
/// ([`gate::check_texts`]): an old over-budget commit is never served again.
pub fn history_command(
    home: &Path,
    cmd: &codex_free_memory::cli::MemoryHistoryCmd,
    store: &dyn Phase2Store,
    budget: &budget::ArtifactBudget,
) -> Result<String> {
    use codex_free_memory::cli::MemoryHistoryCmd as C;
    let Some(f) = MemoryFolder::open(home)? else {
        return Ok(format!(
            "No memory folder yet at {}.\n",
            folder::folder_path(home).display()
        ));
    };
    match cmd {
        C::History { limit } => {
            let h = f.history(*limit)?;
            if h.is_empty() {
                return Ok("The memory folder has no commits yet.\n".into());
            }
            Ok(h.iter()
                .map(|e| {
                    let t = chrono::DateTime::from_timestamp(e.time, 0)
                        .map(|t| t.format("%Y-%m-%d %H:%M").to_string())
                        .unwrap_or_default();
                    format!(
                        "{}  {t}  {:>3} files +{} -{}  {}\n",
                        &e.id[..10],
                        e.files_changed,
                        e.insertions,
                        e.deletions,
                        e.subject
                    )
                })
                .collect())
        }
        C::Diff { rev } => f.show(rev.as_deref(), 4 * 1024 * 1024),
        C::Rollback { rev } => {
            if store.global_running()? {
                return Err(Error::Busy(
                    "a phase-2 consolidation is running; retry when it has finished".into(),
                ));
            }
            // An artifact absent at REV is not served at all, so only present ones are
            // checked (a rollback to before the first summary stays possible).
            let approved = gate::approve_rollback(&f, rev, budget).map_err(|problems| {
                Error::Budget(format!(
                    "refusing to roll back to {rev}: its memory would not pass today's checks ({}); pick another commit from `memories history`",
                    problems.join("; ")
                ))
            })?;
            let r = f.rollback(rev, &approved)?;
            Ok(format!(
                "Rolled back the memory folder to {} as new commit {}.\nPrevious state kept at {} (restore it with `memories rollback {}`).\n{}",
                &r.restored[..10],
                &r.commit[..10],
                r.backup_ref,
                r.backup_ref,
                folder::change_lines(&r.changes)
            ))
        }
    }
}
