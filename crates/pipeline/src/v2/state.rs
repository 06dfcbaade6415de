//! Both memory versions side by side, for `memories status` and the UI's Memory page: which
//! one new sessions are served, whether each pipeline runs, and each one's jobs, last runs,
//! summary and (V2) readiness. Read-only: a version whose database does not exist yet is
//! reported as such, and nothing is created.

use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use codex_free_core::Result;
use codex_free_core::config::{Config, MemoryVersion};
use codex_free_store::{Clock, Store};

/// The state of every memory version in a state home.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct VersionsState {
    /// The version new sessions are served (`"v1"` or `"v2"`): the running process's
    /// `memories.version`.
    pub served: String,
    /// `memories.dual_write`: both pipelines run on the same transcripts.
    pub dual_write: bool,
    /// When the config file names another version or dual-write setting than the one
    /// running, what the next start will change (both are read once at start).
    pub pending_restart: Option<String>,
    /// V1 then V2.
    pub versions: Vec<VersionState>,
    /// What does not cover V2 while its pipeline runs: review before use and git sync work
    /// on V1's folder only, so each configured one that V2 escapes is named here.
    pub caveats: Vec<String>,
}

/// One memory version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct VersionState {
    /// `"v1"` or `"v2"`.
    pub version: String,
    /// New sessions are served this version's summary.
    pub served: bool,
    /// Its pipeline runs (the served version, or both with dual-write).
    pub written: bool,
    /// Its memory folder (`<home>/memories` or `<home>/memories_v2`).
    pub folder: String,
    /// Its database (`state.sqlite` or `state_v2.sqlite`).
    pub database: String,
    /// The database exists (the pipeline ran at least once).
    pub database_exists: bool,
    /// Sessions with a stored phase-1 output.
    pub with_output: i64,
    /// Phase-1 jobs waiting (pending, or running under a lease that has expired).
    pub jobs_pending: i64,
    /// Phase-1 jobs running now.
    pub jobs_running: i64,
    /// Phase-1 jobs done.
    pub jobs_done: i64,
    /// Phase-1 jobs failed and waiting for a retry.
    pub jobs_retrying: i64,
    /// Phase-1 jobs out of retries.
    pub jobs_exhausted: i64,
    /// The last phase-1 run: its outcome (`ok`, `partial`, `failed`, `spend_cap` …) and
    /// when it started (RFC 3339).
    pub last_phase1: Option<RunBrief>,
    /// The last consolidation run, as [`VersionState::last_phase1`].
    pub last_phase2: Option<RunBrief>,
    /// `memory_summary.md` exists in the folder.
    pub summary_exists: bool,
    /// What is wrong with the summary for this version's checks (V2: `v1` first line,
    /// required headings, under 10,000 bytes; V1: its sections), empty when it passes.
    pub summary_problems: Vec<String>,
    /// V2 only: consolidated threads against the readiness threshold.
    pub readiness: Option<ReadinessBrief>,
}

/// A run, briefly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct RunBrief {
    /// `ok`, `partial`, `failed`, `cancelled`, `spend_cap`, `skipped`, `interrupted`, `running`.
    pub outcome: String,
    /// Start (RFC 3339, UTC).
    pub started_at: String,
    /// The run-level error, if any.
    pub error: Option<String>,
}

/// V2's readiness, briefly (`memories readiness` has the whole report).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ReadinessBrief {
    /// The most distinct threads one successful V2 consolidation took in.
    pub consolidated_threads: u32,
    /// The threshold (the default, [`crate::v2::summary::DEFAULT_READY_MINIMUM`]).
    pub minimum: u32,
    /// Enough threads and a valid summary. Never switches the served version.
    pub ready: bool,
}

/// Gather [`VersionsState`] for `home`: `running` is the config the process started with
/// (what is served), `file` the config file as it is now (what the next start applies).
///
/// Errors: a database that exists but cannot be read.
pub fn versions_state(
    home: &Path,
    running: &Config,
    file: &Config,
    clock: Arc<dyn Clock>,
) -> Result<VersionsState> {
    let served = running.memories.active_version();
    let written = running.memories.written_versions();
    let mut versions = Vec::new();
    for v in [MemoryVersion::V1, MemoryVersion::V2] {
        versions.push(version_state(
            home,
            v,
            v == served,
            written.contains(&v),
            clock.clone(),
        )?);
    }
    let (next, next_dual) = (file.memories.active_version(), file.memories.dual_write);
    let pending_restart = (next != served || next_dual != running.memories.dual_write).then(|| {
        format!(
            "the config file sets memories.version = {next}, dual_write = {next_dual}; it applies at the next start (serving {served} until then)"
        )
    });
    let mut caveats = Vec::new();
    if written.contains(&MemoryVersion::V2) {
        if running.memories.review {
            caveats.push("memories.review holds V1 consolidations only: V2's summary is used as soon as it passes its checks".to_string());
        }
        if running.memories.sync.remote.is_some() {
            caveats.push("memories.sync.remote shares memories/ (V1) only: memories_v2/ stays on this machine".to_string());
        }
    }
    Ok(VersionsState {
        served: served.as_str().into(),
        dual_write: running.memories.dual_write,
        pending_restart,
        versions,
        caveats,
    })
}

fn brief(r: &codex_free_store::RunRow) -> RunBrief {
    RunBrief {
        outcome: r.summary.outcome.clone(),
        started_at: codex_free_core::time::iso(r.started_at),
        error: r.summary.error.clone(),
    }
}

fn version_state(
    home: &Path,
    v: MemoryVersion,
    served: bool,
    written: bool,
    clock: Arc<dyn Clock>,
) -> Result<VersionState> {
    let folder = super::folder(home, v);
    let db = super::db_path(home, v);
    let mut st = VersionState {
        version: v.as_str().into(),
        served,
        written,
        folder: folder.display().to_string(),
        database: db.display().to_string(),
        database_exists: db.is_file(),
        with_output: 0,
        jobs_pending: 0,
        jobs_running: 0,
        jobs_done: 0,
        jobs_retrying: 0,
        jobs_exhausted: 0,
        last_phase1: None,
        last_phase2: None,
        summary_exists: false,
        summary_problems: Vec::new(),
        readiness: None,
    };
    let mut consolidated = 0;
    if st.database_exists {
        let store = Store::open(&db, clock)?;
        let j = store.job_counts()?;
        st.jobs_pending = j.pending + j.stale;
        st.jobs_running = j.running;
        st.jobs_done = j.done;
        st.jobs_retrying = j.retrying;
        st.jobs_exhausted = j.exhausted;
        st.with_output = store.source_counts()?.iter().map(|c| c.with_output).sum();
        let runs = store.recent_runs(50)?;
        st.last_phase1 = runs.iter().find(|r| r.phase == "phase1").map(brief);
        st.last_phase2 = runs.iter().find(|r| r.phase == "phase2").map(brief);
        if v == MemoryVersion::V2 {
            consolidated = store.max_consolidated_thread_count()?;
        }
    }
    let summary = folder.join(codex_free_memory::layout::SUMMARY_MD);
    st.summary_exists = std::fs::symlink_metadata(&summary).is_ok_and(|m| m.is_file());
    match v {
        MemoryVersion::V2 => {
            let r = super::summary::readiness(
                &folder,
                consolidated,
                super::summary::DEFAULT_READY_MINIMUM,
                v.as_str(),
            )?;
            st.summary_problems = r.summary_problems;
            st.readiness = Some(ReadinessBrief {
                consolidated_threads: r.consolidated_threads,
                minimum: r.minimum,
                ready: r.ready,
            });
        }
        MemoryVersion::V1 if st.summary_exists => {
            st.summary_problems = match std::fs::read_to_string(&summary) {
                Ok(t) => codex_free_memory::budget::summary_structure(&t),
                Err(e) => vec![format!("memory_summary.md cannot be read: {e}")],
            };
        }
        MemoryVersion::V1 => {
            st.summary_problems =
                vec!["memory_summary.md is missing (no consolidation yet)".into()];
        }
    }
    Ok(st)
}

impl VersionsState {
    /// The lines `memories status` prints: one per version, then the pending switch.
    pub fn render(&self) -> String {
        let mut s = format!(
            "memory versions: serving {}{}\n",
            self.served,
            if self.dual_write {
                " (dual-write: both pipelines run)"
            } else {
                ""
            }
        );
        for v in &self.versions {
            let role = match (v.served, v.written) {
                (true, _) => "served",
                (false, true) => "written, not served",
                (false, false) => "not running",
            };
            let run = |r: &Option<RunBrief>| {
                r.as_ref()
                    .map(|r| format!("{} at {}", r.outcome, r.started_at))
                    .unwrap_or_else(|| "none".into())
            };
            s.push_str(&format!(
                "  {}: {role}; {} sessions with output; jobs {} pending, {} done, {} retrying, {} out of retries; last phase 1: {}; last phase 2: {}\n",
                v.version,
                v.with_output,
                v.jobs_pending + v.jobs_running,
                v.jobs_done,
                v.jobs_retrying,
                v.jobs_exhausted,
                run(&v.last_phase1),
                run(&v.last_phase2),
            ));
            let summary = if !v.summary_exists {
                "no summary yet".to_string()
            } else if v.summary_problems.is_empty() {
                "summary valid".to_string()
            } else {
                format!("summary invalid: {}", v.summary_problems.join("; "))
            };
            match &v.readiness {
                Some(r) => s.push_str(&format!(
                    "      {summary}; readiness: {} — {} of {} consolidated threads\n",
                    if r.ready { "ready" } else { "not ready" },
                    r.consolidated_threads,
                    r.minimum
                )),
                None => s.push_str(&format!("      {summary}\n")),
            }
        }
        if let Some(p) = &self.pending_restart {
            s.push_str(&format!("  restart pending: {p}\n"));
        }
        for c in &self.caveats {
            s.push_str(&format!("  note: {c}\n"));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(extra: serde_json::Value) -> Config {
        Config::parse(&serde_json::json!({ "memories": extra }).to_string())
            .unwrap()
            .0
    }

    /// An empty home: both versions listed, nothing created; review and sync are named as
    /// not covering V2 only while V2's pipeline runs; a file that differs from the running
    /// config is a pending restart.
    #[test]
    fn caveats_and_pending_restart_follow_the_running_config() {
        let d = tempfile::tempdir().unwrap();
        let clock: Arc<dyn Clock> = Arc::new(codex_free_store::SystemClock);
        let v1 = cfg(serde_json::json!({"review": true, "sync": {"remote": "/tmp/x.git"}}));
        let st = versions_state(d.path(), &v1, &v1, clock.clone()).unwrap();
        assert_eq!(st.served, "v1");
        assert!(
            st.caveats.is_empty() && st.pending_restart.is_none(),
            "{st:?}"
        );
        assert_eq!(st.versions.len(), 2);
        assert!(st.versions.iter().all(|v| !v.database_exists));
        assert!(!d.path().join(codex_free_store::DB_FILE_V2).exists());
        let dual = cfg(
            serde_json::json!({"dual_write": true, "review": true, "sync": {"remote": "/tmp/x.git"}}),
        );
        let st = versions_state(d.path(), &dual, &v1, clock).unwrap();
        assert_eq!(st.caveats.len(), 2, "{st:?}");
        assert!(st.caveats[0].starts_with("memories.review holds V1 consolidations only"));
        assert!(st.caveats[1].contains("memories_v2/ stays on this machine"));
        assert_eq!(
            st.pending_restart.as_deref(),
            Some(
                "the config file sets memories.version = v1, dual_write = false; it applies at the next start (serving v1 until then)"
            )
        );
        let text = st.render();
        assert!(text.contains("  v2: written, not served;"), "{text}");
        assert!(text.contains("  note: memories.review holds"), "{text}");
    }
}
