//! What a server keeps between calls: room for new sessions (pruning ended ones), the cut
//! outputs retained for paging, and the sweep of old spool files.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use super::sessions::{Store, truncate_for_log};
use super::*;
use codex_free_core::Error;
use codex_free_core::Result;
use output::Output;

impl ExecSessions {
    /// Keep a finished output's spool if a reply was cut (paging may follow), else delete it.
    pub(super) fn finish_output(&self, o: &Arc<Output>) {
        if !o.was_cut() {
            o.remove_file();
            return;
        }
        let mut store = self.store.lock().unwrap_or_else(|e| e.into_inner());
        store.retained.push_back(Arc::clone(o));
        while store.retained.len() > RETAINED_OUTPUTS {
            if let Some(old) = store.retained.pop_front() {
                old.remove_file();
            }
        }
    }

    /// At `max` sessions, prune ended ones (oldest use first); refuse if all still run.
    pub(super) fn make_room(&self, store: &mut Store, max: usize) -> Result<()> {
        while store.sessions.len() >= max {
            let oldest_ended = store
                .sessions
                .values()
                .filter(|s| s.exited())
                .min_by_key(|s| *s.last_used.lock().unwrap_or_else(|e| e.into_inner()))
                .map(|s| s.id);
            let Some(id) = oldest_ended else {
                let mut running: Vec<_> = store
                    .sessions
                    .values()
                    .map(|s| format!("{} `{}`", s.id, truncate_for_log(&s.cmd)))
                    .collect();
                running.sort();
                return Err(Error::Busy(format!(
                    "exec.maxSessions = {max} commands are still running ({}). Poll them with write_stdin until they exit, stop one with write_stdin chars=\"\\u0003\", or raise exec.maxSessions",
                    running.join(", ")
                )));
            };
            if let Some(s) = store.sessions.remove(&id) {
                tracing::info!(
                    session = id,
                    "pruned an ended exec session whose output was never collected"
                );
                if s.output.was_cut() {
                    store.retained.push_back(Arc::clone(&s.output));
                } else {
                    s.output.remove_file();
                }
            }
        }
        while store.retained.len() > RETAINED_OUTPUTS {
            if let Some(old) = store.retained.pop_front() {
                old.remove_file();
            }
        }
        Ok(())
    }

    /// Delete spool files older than [`SPOOL_TTL`] (at most once per [`SWEEP_EVERY`]).
    pub(super) fn sweep(&self, dir: &Path) {
        let live: Vec<PathBuf> = {
            let mut store = self.store.lock().unwrap_or_else(|e| e.into_inner());
            if store.last_sweep.is_some_and(|t| t.elapsed() < SWEEP_EVERY) {
                return;
            }
            store.last_sweep = Some(Instant::now());
            store
                .sessions
                .values()
                .map(|s| s.output.path.clone())
                .collect()
        };
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let now = SystemTime::now();
        for e in entries.flatten() {
            let path = e.path();
            if path.extension().is_none_or(|x| x != "out") || live.contains(&path) {
                continue;
            }
            let old = e
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|m| now.duration_since(m).is_ok_and(|age| age > SPOOL_TTL));
            if old {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
}
