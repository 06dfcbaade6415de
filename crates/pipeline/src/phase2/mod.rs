//! Phase 2 of the memory pipeline (after Codex's `memories/write/src/phase2.rs`):
//! one global job consolidates the selected raw memories of phase 1 into the memory folder
//! through a jailed agent, within hard size budgets, as one git commit per success.
//!
//! The run, in order: claim the global job `memory_consolidate_global` (lease
//! [`LEASE_SECS`], heartbeat every [`HEARTBEAT_SECS`], retry backoff after a failure,
//! [`COOLDOWN_SECS`] after a clean success unless forced) → open the folder (uncommitted
//! edits found there are first committed as a snapshot, so nothing is lost) → select and
//! sync inputs ([`select`]) → workspace diff ([`folder`]) → **no change and valid
//! artifacts: succeed without a model call** → otherwise run the agent ([`agent`]) with the
//! diff (INIT or incremental, [`prompt`]) → validate (budgets, summary structure,
//! whitespace) and lint (stale facts, conflicts: [`codex_free_hygiene::lint`]) with one repair
//! turn (only validation problems fail the run afterwards) → commit → read back (`git status` clean, no whitespace
//! errors) → mark the job succeeded. Any failure restores the previous commit exactly
//! (`reset --hard` + clean) and marks the job failed with the reason.
//!
//! The database and the model are reached through two seams, [`Phase2Store`] and
//! [`agent::ConsolidationModel`], implemented over `codex_free_store` and `codex_free_models`.
//!
//! Invariant: the folder's `HEAD` only ever moves to a commit whose artifacts passed
//! validation and read-back (or a rollback/snapshot commit); a failed run leaves `HEAD` and
//! the working tree as they were before it started (apart from the snapshot commit).

pub mod agent;
mod citations;
pub mod db;
mod driver;
mod history;
pub mod model;
pub mod preview;
pub mod prompt;
pub mod v2;

use std::path::Path;

use codex_free_memory::{budget, folder, gate, jail, review, select, sync};

pub use citations::{cited_rollout_ids_in, record_citations, record_rollout_citations};
pub use history::history_command;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::config::{MemoriesConfig, MemoryVersion};

use agent::{AgentReport, ConsolidationModel, TurnRecord};
use folder::{FileChange, MemoryFolder};
use jail::WritePolicy;
use select::RawMemory;

/// Job kind of the global consolidation (Codex: `memory_consolidate_global`).
pub const JOB_KIND: &str = "memory_consolidate_global";
/// Job key of the single global job.
pub const JOB_KEY: &str = "global";
/// Lease of a claim, seconds (Codex: 1 hour).
pub const LEASE_SECS: i64 = 3600;
/// Heartbeat period while the agent runs, seconds (Codex: 90 s).
pub const HEARTBEAT_SECS: u64 = 90;
/// Share of the consolidation model's context window the selected inputs (raw memories and
/// rollout summaries) may fill together; the agent must be able to read them all.
pub const INPUTS_SHARE_OF_WINDOW: f64 = 0.4;
/// Share of the context window the diff in the first request may fill.
pub const DIFF_SHARE_OF_WINDOW: f64 = 0.3;
pub use codex_free_store::phase2::{
    COOLDOWN_SECS, Claim, RETRY_BASE_SECS, RETRY_MAX_SECS, retry_delay,
};

/// What phase 2 needs from the database (implemented by `codex_free_store::Store`).
pub trait Phase2Store: Send + Sync {
    /// Current time, unix seconds (the store's clock, so tests can move it).
    fn now(&self) -> i64;
    /// Claim the global job under `BEGIN IMMEDIATE` for `lease_secs`; `force` ignores the
    /// cooldown and the retry backoff (never a live lease).
    fn claim_global(&self, worker_id: &str, lease_secs: i64, force: bool) -> Result<Claim>;
    /// Extend the lease; `false` when the token no longer owns the job.
    fn heartbeat_global(&self, token: &str, lease_secs: i64) -> Result<bool>;
    /// Mark success (starts the cooldown), record `watermark` (from the claim) as the last
    /// success's, and flag which outputs were selected.
    fn succeed_global(
        &self,
        token: &str,
        watermark: i64,
        selected_thread_ids: &[String],
    ) -> Result<bool>;
    /// Mark failure with `reason`; schedules a retry with [`retry_delay`].
    fn fail_global(&self, token: &str, reason: &str) -> Result<bool>;
    /// True while a live (unexpired) claim exists.
    fn global_running(&self) -> Result<bool>;
    /// Every stage-1 output (phase 2 selects among them, see [`select::select`]).
    fn raw_memories(&self) -> Result<Vec<RawMemory>>;
    /// Raise `usage_count` by one and set `last_usage` to now for each id; returns rows
    /// changed (unknown ids are ignored).
    fn record_usage(&self, thread_ids: &[String]) -> Result<usize>;
    /// Start a usage run for phase 2 (requests and cost are logged per run); returns its id.
    fn start_run(&self, trigger: &str, model: &str) -> Result<String>;
    /// Record one model request of run `run_id`.
    fn log_request(&self, run_id: &str, rec: &TurnRecord) -> Result<()>;
    /// Close run `run_id` with `outcome` (`succeeded`, `no_changes`, `failed`) and error text.
    fn finish_run(&self, run_id: &str, outcome: &str, error: Option<&str>) -> Result<()>;
    /// Why no model may be called now (the monthly spend cap is reached), or `None`.
    fn spend_blocked(&self) -> Result<Option<String>> {
        Ok(None)
    }
}

/// How a phase-2 attempt ended.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// Nothing was done.
    Skipped {
        /// `disabled`, `running`, `cooldown` or `backoff`.
        reason: String,
        /// For cooldown/backoff: when a run becomes possible, unix seconds.
        until: Option<i64>,
    },
    /// Inputs unchanged and artifacts valid: succeeded with no model call.
    NoChanges {
        /// Raw memories selected.
        inputs: usize,
    },
    /// Inputs synced and committed without the agent (no inputs and no memory yet).
    Synced {
        /// The new commit, if the sync changed anything.
        commit: Option<String>,
    },
    /// The agent consolidated; one new commit.
    Consolidated {
        /// Commit id.
        commit: String,
        /// Raw memories selected.
        inputs: usize,
        /// INIT or incremental.
        mode: prompt::Mode,
        /// Files changed by the commit.
        changes: Vec<FileChange>,
        /// What the agent did (requests, tool calls, usage, repair).
        report: AgentReport,
    },
    /// The run failed; the folder is back at its previous commit; the job is marked failed.
    Failed {
        /// Why (also stored as the job's last error).
        reason: String,
        /// What the agent did before failing, if it ran.
        report: Option<AgentReport>,
    },
}

impl Outcome {
    /// True for [`Outcome::Failed`] (the CLI exits non-zero).
    pub fn is_failure(&self) -> bool {
        matches!(self, Outcome::Failed { .. })
    }

    /// Plain-words text for the CLI: what happened, with times in UTC and what comes next.
    pub fn describe(&self) -> String {
        let at = |t: i64| crate::run_log::iso(t);
        match self {
            Outcome::Skipped { reason, until } => match (reason.as_str(), until) {
                ("cooldown", Some(t)) => format!(
                    "consolidation skipped: the last one succeeded recently; the next is allowed after {} (`--force` runs it now)",
                    at(*t)
                ),
                ("backoff", Some(t)) => format!(
                    "consolidation skipped: the last one failed; it is retried after {} (`--force` retries now)",
                    at(*t)
                ),
                ("running", _) => {
                    "consolidation skipped: another process is consolidating right now".into()
                }
                ("disabled", _) => {
                    "consolidation skipped: the memory pipeline is off (`memories on`)".into()
                }
                (r, _) => format!("consolidation skipped: {r}"),
            },
            Outcome::NoChanges { inputs } => format!(
                "nothing to consolidate: {inputs} raw memories unchanged since the last consolidation and the memory is valid (no model call)"
            ),
            Outcome::Synced { commit } => match commit {
                Some(c) => format!(
                    "inputs synced into the memory folder as commit {}",
                    &c[..c.len().min(10)]
                ),
                None => "nothing to consolidate yet: no raw memories".into(),
            },
            Outcome::Consolidated {
                commit,
                inputs,
                changes,
                report,
                ..
            } => format!(
                "consolidated {inputs} raw memories as commit {}: {} file(s) changed, {} model requests, {} in / {} out tokens{}",
                &commit[..commit.len().min(10)],
                changes.len(),
                report.requests,
                report.usage.input,
                report.usage.output,
                if report.repaired {
                    " (one repair turn)"
                } else {
                    ""
                }
            ),
            Outcome::Failed { reason, report } => format!(
                "consolidation FAILED: {reason}{}; the previous memory stays in place",
                report
                    .as_ref()
                    .map(|r| format!(" (after {} model requests)", r.requests))
                    .unwrap_or_default()
            ),
        }
    }
}

/// Everything a run needs.
pub struct Phase2Deps<'a> {
    /// State home (the folder is `<home>/memories`).
    pub home: &'a Path,
    /// The `memories` config block.
    pub config: &'a MemoriesConfig,
    /// Database seam.
    pub store: &'a dyn Phase2Store,
    /// The consolidation model; `None` fails a run that needs it.
    pub model: Option<&'a dyn ConsolidationModel>,
    /// Why `model` is `None` (e.g. the configured model could not be resolved), reported
    /// when a run needs the model.
    pub model_unavailable: Option<String>,
    /// Identifies this process in the job row.
    pub worker_id: String,
    /// What started the run (`startup`, `watch`, `cli`, `force`), for the usage run.
    pub trigger: String,
    /// Cancels the agent between requests.
    pub cancel: CancellationToken,
}

/// Run phase 2 once. `force` ignores the cooldown and the retry backoff (never a live
/// lease). Never leaves the folder half-written; see the module doc for the sequence.
///
/// Errors: only database errors while claiming; every later failure is an
/// [`Outcome::Failed`] (the job row carries the reason).
pub async fn run(deps: &Phase2Deps<'_>, force: bool) -> Result<Outcome> {
    driver::run(deps, force, V1::default()).await
}

/// V1's consolidation ([`driver::Policy`]): `MEMORY.md`, `memory_summary.md` and `skills/`
/// from raw memories, with the sync remote, the inbox notes and review.
#[derive(Default)]
struct V1 {
    /// The commit message's line when uncommitted edits were rescued.
    rescued: Option<String>,
    /// The machine id when a sync remote is set (it scopes the synced inputs).
    machine: Option<String>,
    /// What syncing the inputs changed.
    sync: select::SyncReport,
}

impl driver::Policy for V1 {
    fn version(&self) -> MemoryVersion {
        MemoryVersion::V1
    }

    fn names(&self) -> driver::Names {
        driver::Names {
            run: "phase 2",
            job: "phase-2",
            folder: "the memory folder",
        }
    }

    fn inflight_file(&self) -> &'static str {
        gate::INFLIGHT_FILE
    }

    fn served_file(&self) -> &'static str {
        folder::MEMORY_MD
    }

    fn scope(&self) -> gate::Scope {
        gate::Scope::Served
    }

    fn write_policy(&self) -> WritePolicy {
        WritePolicy::ConsolidationOutputs
    }

    fn settle_edits(
        &mut self,
        home: &Path,
        folder: &MemoryFolder,
        budget: &budget::ArtifactBudget,
    ) -> Result<()> {
        self.rescued = adopt_or_rescue(home, folder, budget)?;
        Ok(())
    }

    /// Shared between machines: take the remote's commits first (a failed pull is recorded
    /// and the run consolidates locally; the next sync retries).
    async fn pull(
        &mut self,
        deps: &Phase2Deps<'_>,
        folder: &MemoryFolder,
        budget: &budget::ArtifactBudget,
    ) -> Result<Option<folder::Oid>> {
        let Some(url) = &deps.config.sync.remote else {
            return Ok(None);
        };
        if let Err(e) = sync::pull(folder, deps.home, url, budget).await {
            tracing::warn!("memory sync: pull failed, consolidating locally: {e}");
        }
        self.machine = Some(sync::machine_id(deps.home)?);
        Ok(sync::load_state(deps.home)
            .reconcile_base
            .and_then(|b| folder::Oid::from_str(&b).ok()))
    }

    fn sync_inputs(
        &mut self,
        deps: &Phase2Deps<'_>,
        folder: &MemoryFolder,
        sel: &[RawMemory],
        now: i64,
    ) -> Result<()> {
        self.sync = select::sync_scoped(
            folder.root(),
            deps.home,
            sel,
            now,
            deps.config.max_unused_days,
            self.machine.as_deref(),
        )?;
        Ok(())
    }

    /// Nothing to consolidate and no memory to update: record the sync only (unless
    /// ad-hoc notes wait for the agent).
    fn without_agent(
        &mut self,
        folder: &MemoryFolder,
        budget: &budget::ArtifactBudget,
        diff: &folder::WorkspaceDiff,
    ) -> Result<Option<Option<String>>> {
        if folder.root().join(folder::AD_HOC_DIR).is_dir() {
            return Ok(None);
        }
        let approved =
            gate::approve(folder, budget, gate::Scope::Present).map_err(refused_by_gate)?;
        let commit = folder.commit_all(
            &approved,
            &format!(
                "Sync memory inputs: no raw memories selected\n\n{}",
                folder::change_lines(&diff.changes)
            ),
        )?;
        folder.verify_committed()?;
        Ok(Some(commit.map(|c| c.to_string())))
    }

    fn system(&self, budget: &budget::ArtifactBudget) -> String {
        prompt::system(budget)
    }

    fn task(
        &self,
        mode: prompt::Mode,
        inputs: usize,
        diff: &folder::WorkspaceDiff,
        reconcile: bool,
    ) -> String {
        let task = prompt::task(mode, inputs, diff);
        if reconcile {
            format!("{}\n\n{task}", prompt::RECONCILE_NOTE)
        } else {
            task
        }
    }

    fn advise(&self, root: &Path, budget: &budget::ArtifactBudget) -> Vec<String> {
        codex_free_hygiene::lint::consolidation_findings(root, budget)
    }

    fn repair(&self, problems: &[String], budget: &budget::ArtifactBudget) -> String {
        budget::repair_request_text(problems, budget)
    }

    fn commit_message(
        &self,
        mode: prompt::Mode,
        sel: &[RawMemory],
        changes: &[FileChange],
        report: &AgentReport,
        model: &str,
    ) -> String {
        let mut msg = commit_message(mode, sel, &self.sync, changes, report, model);
        if let Some(r) = &self.rescued {
            msg.push_str(&format!("\n{r}\n"));
        }
        msg
    }

    fn settled(&self, deps: &Phase2Deps<'_>, how: driver::Settled<'_>) -> Result<()> {
        match how {
            driver::Settled::NoChanges => sync::clear_reconcile(deps.home)?,
            driver::Settled::WithoutAgent => remove_inbox_notes(&self.sync.notes_moved_in),
            driver::Settled::Consolidated { folder, before } => {
                remove_inbox_notes(&self.sync.notes_moved_in);
                sync::clear_reconcile(deps.home)?;
                if deps.config.review {
                    review::hold(folder, before)?;
                }
            }
        }
        Ok(())
    }

    /// Publish what this run committed (or a merge, or an earlier push that failed); a
    /// failure is recorded in the sync state and the commits stay for the next sync.
    async fn published(&self, deps: &Phase2Deps<'_>) {
        if let Some(url) = &deps.config.sync.remote
            && let Ok(Some(f)) = MemoryFolder::open(deps.home)
            && let Err(e) = sync::push_if_ahead(&f, deps.home, url).await
        {
            tracing::warn!("memory sync: push failed, kept locally: {e}");
        }
    }
}

/// Claim the global job of `deps.store` (each version's database has its own): the token
/// and the watermark, or the [`Outcome::Skipped`] that says why not.
///
/// Errors: database errors.
pub(crate) fn claim_or_skip(
    deps: &Phase2Deps<'_>,
    force: bool,
) -> Result<std::result::Result<(String, i64), Outcome>> {
    Ok(
        match deps
            .store
            .claim_global(&deps.worker_id, LEASE_SECS, force)?
        {
            Claim::Claimed { token, watermark } => Ok((token, watermark)),
            Claim::Running => Err(Outcome::Skipped {
                reason: "running".into(),
                until: None,
            }),
            Claim::Cooldown { until } => Err(Outcome::Skipped {
                reason: "cooldown".into(),
                until: Some(until),
            }),
            Claim::Backoff { until } => Err(Outcome::Skipped {
                reason: "backoff".into(),
                until: Some(until),
            }),
            Claim::Exhausted {
                attempts,
                last_error,
            } => Err(Outcome::Skipped {
                reason: format!(
                    "stopped after {attempts} failed attempts until new input arrives (last error: {}); `memories force` retries now",
                    last_error.as_deref().unwrap_or("unknown")
                ),
                until: None,
            }),
        },
    )
}

/// Decide what happens to uncommitted changes found in the folder before a run: a dead
/// run's leftovers (the in-flight marker is still there) and hand edits that fail the gate
/// are rescued to a ref and discarded; acceptable hand edits are committed as a snapshot.
/// Returns a line for the commit message when something was rescued.
fn adopt_or_rescue(
    home: &Path,
    folder: &MemoryFolder,
    budget: &budget::ArtifactBudget,
) -> Result<Option<String>> {
    let pending = folder.workspace_diff(0)?;
    if !pending.has_changes() {
        return Ok(None);
    }
    let mut approved = None;
    let reason = if home.join(gate::INFLIGHT_FILE).exists() {
        Some(
            "left by a consolidation that did not finish (its process was killed or crashed)"
                .to_string(),
        )
    } else {
        match gate::approve(folder, budget, gate::Scope::Present) {
            Ok(a) => {
                approved = Some(a);
                None
            }
            Err(problems) => Some(format!(
                "uncommitted edits refused by the memory checks: {}",
                problems.join("; ")
            )),
        }
    };
    match (reason, approved) {
        (None, Some(approved)) => {
            let msg = format!(
                "Snapshot uncommitted changes before consolidation\n\n{}",
                folder::change_lines(&pending.changes)
            );
            folder.commit_all(&approved, &msg)?;
            Ok(None)
        }
        (None, None) => Err(Error::Store(
            "internal error: hand edits neither approved nor refused".into(),
        )),
        (Some(reason), _) => {
            let kept = folder.rescue(&reason)?;
            tracing::warn!(%reason, rescued = ?kept, "phase 2: discarded uncommitted changes in the memory folder");
            Ok(kept.map(|r| format!("Discarded uncommitted changes ({reason}); kept at {r}.")))
        }
    }
}

/// The error of a commit the memory gate refused: every problem, and that `HEAD` stays.
pub(crate) fn refused_by_gate(problems: Vec<String>) -> Error {
    Error::Budget(format!(
        "the memory checks refused the commit ({}); the previous commit stays",
        problems.join("; ")
    ))
}

fn remove_inbox_notes(paths: &[std::path::PathBuf]) {
    for p in paths {
        if let Err(e) = std::fs::remove_file(p) {
            tracing::warn!("could not remove consolidated note {}: {e}", p.display());
        }
    }
}

pub(crate) async fn heartbeat_loop(
    store: &dyn Phase2Store,
    token: &str,
    cancel: CancellationToken,
) -> Error {
    let mut tick = tokio::time::interval(Duration::from_secs(HEARTBEAT_SECS));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    tick.tick().await;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = cancel.cancelled() => return Error::Cancelled("consolidation cancelled".into()),
        }
        match store.heartbeat_global(token, LEASE_SECS) {
            Ok(true) => {}
            Ok(false) => {
                return Error::Busy(
                    "lost the phase-2 job lease (another worker took it over)".into(),
                );
            }
            Err(e) => return e,
        }
    }
}

fn commit_message(
    mode: prompt::Mode,
    sel: &[RawMemory],
    sync: &select::SyncReport,
    changes: &[FileChange],
    report: &AgentReport,
    model: &str,
) -> String {
    let outputs: Vec<&str> = changes
        .iter()
        .map(|c| c.path.as_str())
        .filter(|p| *p == folder::MEMORY_MD || *p == folder::SUMMARY_MD || p.starts_with("skills/"))
        .collect();
    let subject = match mode {
        prompt::Mode::Init => format!("Initialize memory from {} raw memories", sel.len()),
        prompt::Mode::Incremental => format!(
            "Consolidate memory: {} updated from {} raw memories",
            if outputs.is_empty() {
                "no artifact".to_string()
            } else {
                outputs.join(", ")
            },
            sel.len()
        ),
    };
    format!(
        "{subject}\n\nInputs: {} selected; {} rollout summaries written, {} removed; {} notes added, {} pruned.\nAgent: {model}, {} requests, {} tool calls ({} refused){}; tokens in {} (cached {}), out {}.\n\n{}",
        sel.len(),
        sync.written,
        sync.removed,
        sync.notes_moved_in.len(),
        sync.notes_pruned,
        report.requests,
        report.tool_calls,
        report.refused.len(),
        if report.repaired {
            ", one repair turn"
        } else {
            ""
        },
        report.usage.input,
        report.usage.cached_input,
        report.usage.output,
        folder::change_lines(changes)
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::agent::tests::{Scripted, call, reply};
    use super::*;

    type JobRow = (String, String, i64, i64, i64, u32, Option<String>);

    /// An in-memory [`Phase2Store`] with Codex's claim rules, for unit tests of the flow.
    #[derive(Default)]
    pub(crate) struct MemStore {
        pub now: Mutex<i64>,
        pub outputs: Mutex<Vec<RawMemory>>,
        /// (status, token, lease_until, finished_at, retry_at, failures, last_error)
        pub job: Mutex<Option<JobRow>>,
        pub requests: Mutex<Vec<TurnRecord>>,
        pub blocked: Mutex<Option<String>>,
    }

    impl Phase2Store for MemStore {
        fn now(&self) -> i64 {
            *self.now.lock().unwrap()
        }
        fn claim_global(&self, _w: &str, lease: i64, force: bool) -> Result<Claim> {
            let now = self.now();
            let mut j = self.job.lock().unwrap();
            if let Some((st, _, lease_until, fin, retry, _, _)) = j.as_ref() {
                if st == "running" && *lease_until > now {
                    return Ok(Claim::Running);
                }
                if !force && st == "done" && fin + COOLDOWN_SECS > now {
                    return Ok(Claim::Cooldown {
                        until: fin + COOLDOWN_SECS,
                    });
                }
                if !force && st == "error" && *retry > now {
                    return Ok(Claim::Backoff { until: *retry });
                }
            }
            let failures = j.as_ref().map(|r| r.5).unwrap_or(0);
            let token = format!("tok-{now}");
            *j = Some((
                "running".into(),
                token.clone(),
                now + lease,
                0,
                0,
                failures,
                None,
            ));
            Ok(Claim::Claimed {
                token,
                watermark: now,
            })
        }
        fn heartbeat_global(&self, token: &str, lease: i64) -> Result<bool> {
            let now = self.now();
            let mut j = self.job.lock().unwrap();
            match j.as_mut() {
                Some(r) if r.1 == token && r.0 == "running" => {
                    r.2 = now + lease;
                    Ok(true)
                }
                _ => Ok(false),
            }
        }
        fn succeed_global(&self, token: &str, _w: i64, _ids: &[String]) -> Result<bool> {
            let now = self.now();
            let mut j = self.job.lock().unwrap();
            match j.as_mut() {
                Some(r) if r.1 == token => {
                    *r = ("done".into(), String::new(), 0, now, 0, 0, None);
                    Ok(true)
                }
                _ => Ok(false),
            }
        }
        fn fail_global(&self, token: &str, reason: &str) -> Result<bool> {
            let now = self.now();
            let mut j = self.job.lock().unwrap();
            match j.as_mut() {
                Some(r) if r.1 == token => {
                    let f = r.5 + 1;
                    *r = (
                        "error".into(),
                        String::new(),
                        0,
                        0,
                        now + retry_delay(f),
                        f,
                        Some(reason.into()),
                    );
                    Ok(true)
                }
                _ => Ok(false),
            }
        }
        fn global_running(&self) -> Result<bool> {
            let now = self.now();
            Ok(self
                .job
                .lock()
                .unwrap()
                .as_ref()
                .is_some_and(|r| r.0 == "running" && r.2 > now))
        }
        fn raw_memories(&self) -> Result<Vec<RawMemory>> {
            Ok(self.outputs.lock().unwrap().clone())
        }
        fn record_usage(&self, ids: &[String]) -> Result<usize> {
            let now = self.now();
            let mut n = 0;
            for m in self.outputs.lock().unwrap().iter_mut() {
                if ids.contains(&m.thread_id) {
                    m.usage_count += 1;
                    m.last_usage = Some(now);
                    n += 1;
                }
            }
            Ok(n)
        }
        fn start_run(&self, _t: &str, _m: &str) -> Result<String> {
            Ok("run-1".into())
        }
        fn log_request(&self, _r: &str, rec: &TurnRecord) -> Result<()> {
            self.requests.lock().unwrap().push(rec.clone());
            Ok(())
        }
        fn finish_run(&self, _r: &str, _o: &str, _e: Option<&str>) -> Result<()> {
            Ok(())
        }
        fn spend_blocked(&self) -> Result<Option<String>> {
            Ok(self.blocked.lock().unwrap().clone())
        }
    }

    const NOW: i64 = 1_700_000_000;

    fn store_with(n: usize) -> MemStore {
        let s = MemStore::default();
        *s.now.lock().unwrap() = NOW;
        *s.outputs.lock().unwrap() = (0..n)
            .map(|i| RawMemory {
                thread_id: format!("thread-{i}"),
                source_updated_at: NOW - 3600,
                raw_memory: format!("- user prefers pnpm (seen in thread {i})"),
                rollout_summary: format!("Session {i} set up pnpm."),
                rollout_slug: Some("pnpm-setup".into()),
                usage_count: 0,
                last_usage: None,
            })
            .collect();
        s
    }

    fn summary_text() -> String {
        format!(
            "v1\n{}\n- developer\n{}\n- pnpm over npm\n{}\n- verify versions live\n{}\n- MEMORY.md: tooling\n",
            budget::SUMMARY_SECTIONS[0],
            budget::SUMMARY_SECTIONS[1],
            budget::SUMMARY_SECTIONS[2],
            budget::SUMMARY_SECTIONS[3]
        )
    }

    fn good_agent() -> Vec<agent::ModelReply> {
        vec![
            reply(vec![call(
                "1",
                "read_file",
                serde_json::json!({"path": "raw_memories.md"}),
            )]),
            reply(vec![
                call(
                    "2",
                    "write_file",
                    serde_json::json!({"path": "MEMORY.md", "content": "# Memory\n\n- Use pnpm, never npm (rollouts: thread-0)\n"}),
                ),
                call(
                    "3",
                    "write_file",
                    serde_json::json!({"path": "memory_summary.md", "content": summary_text()}),
                ),
            ]),
            reply(vec![]),
        ]
    }

    fn deps<'a>(
        home: &'a Path,
        cfg: &'a MemoriesConfig,
        store: &'a MemStore,
        model: &'a Scripted,
    ) -> Phase2Deps<'a> {
        Phase2Deps {
            home,
            config: cfg,
            store,
            model: Some(model),
            model_unavailable: None,
            worker_id: "w".into(),
            trigger: "test".into(),
            cancel: CancellationToken::new(),
        }
    }

    #[tokio::test]
    async fn consolidates_commits_then_no_change_means_no_model_call() {
        let home = tempfile::tempdir().unwrap();
        let cfg = MemoriesConfig::default();
        let store = store_with(3);
        let model = Scripted::new(good_agent());
        let out = run(&deps(home.path(), &cfg, &store, &model), false)
            .await
            .unwrap();
        let Outcome::Consolidated { mode, inputs, .. } = &out else {
            panic!("{out:?}")
        };
        assert_eq!((*mode, *inputs), (prompt::Mode::Init, 3));
        assert_eq!(
            store.requests.lock().unwrap().len(),
            3,
            "every request logged"
        );
        let f = MemoryFolder::open(home.path()).unwrap().unwrap();
        let h = f.history(5).unwrap();
        assert_eq!(h.len(), 1);
        assert!(
            h[0].subject
                .starts_with("Initialize memory from 3 raw memories"),
            "{}",
            h[0].subject
        );
        assert!(!f.workspace_diff(0).unwrap().has_changes());
        // The task carried the INIT diff with the synced inputs.
        let task = model.seen.lock().unwrap()[0][1].content.clone();
        assert!(task.starts_with("INIT") && task.contains("+- user prefers pnpm"));

        // Second run, forced past the cooldown, nothing new: no model request at all.
        let idle = Scripted::new(vec![]);
        let out = run(&deps(home.path(), &cfg, &store, &idle), true)
            .await
            .unwrap();
        assert!(matches!(out, Outcome::NoChanges { inputs: 3 }), "{out:?}");
        assert!(idle.seen.lock().unwrap().is_empty());
        // Without force the cooldown applies.
        let out = run(&deps(home.path(), &cfg, &store, &idle), false)
            .await
            .unwrap();
        assert!(
            matches!(out, Outcome::Skipped { ref reason, .. } if reason == "cooldown"),
            "{out:?}"
        );
    }

    #[tokio::test]
    async fn failing_budget_restores_previous_commit_and_marks_failed() {
        let home = tempfile::tempdir().unwrap();
        let cfg = MemoriesConfig::default();
        let store = store_with(1);
        let model = Scripted::new(good_agent());
        run(&deps(home.path(), &cfg, &store, &model), false)
            .await
            .unwrap();
        let f = MemoryFolder::open(home.path()).unwrap().unwrap();
        let before = f.head().unwrap();
        let memory_before = std::fs::read_to_string(f.root().join("MEMORY.md")).unwrap();

        store
            .outputs
            .lock()
            .unwrap()
            .extend(store_with(2).outputs.lock().unwrap().drain(1..));
        let long: String = (0..400).map(|i| format!("- fact {i}\n")).collect();
        let bad = Scripted::new(vec![
            reply(vec![call(
                "1",
                "write_file",
                serde_json::json!({"path": "MEMORY.md", "content": long}),
            )]),
            reply(vec![]),
            reply(vec![call(
                "2",
                "write_file",
                serde_json::json!({"path": "MEMORY.md", "content": long}),
            )]),
            reply(vec![]),
        ]);
        let out = run(&deps(home.path(), &cfg, &store, &bad), true)
            .await
            .unwrap();
        let Outcome::Failed { reason, report } = &out else {
            panic!("{out:?}")
        };
        assert!(
            reason.contains("400 lines, over the budget of 150"),
            "{reason}"
        );
        assert!(report.as_ref().unwrap().repaired);
        let repair = bad.seen.lock().unwrap()[2].last().unwrap().content.clone();
        assert!(
            repair.contains("MEMORY.md: 400 lines"),
            "repair turn asked to cut"
        );
        assert_eq!(f.head().unwrap(), before, "no commit");
        assert_eq!(
            std::fs::read_to_string(f.root().join("MEMORY.md")).unwrap(),
            memory_before
        );
        assert!(
            !f.workspace_diff(0).unwrap().has_changes(),
            "working tree back at HEAD"
        );
        let job = store.job.lock().unwrap().clone().unwrap();
        assert_eq!(job.0, "error");
        assert!(job.6.unwrap().contains("over the budget"));
        assert_eq!(job.4, NOW + RETRY_BASE_SECS, "retry backoff");
    }

    /// A consolidation that stores a stale value gets one repair turn naming the lint
    /// finding; the fixed result is committed. A finding left after the repair is reported,
    /// not fatal.
    #[tokio::test]
    async fn stale_facts_get_one_repair_turn() {
        for fixed in [true, false] {
            let home = tempfile::tempdir().unwrap();
            let cfg = MemoriesConfig::default();
            let store = store_with(1);
            let stale = "# Memory\n\n- Use pnpm, never npm (rollouts: thread-0)\n- The deployed version on prod is 2.14.3.\n";
            let good = "# Memory\n\n- Use pnpm, never npm (rollouts: thread-0)\n\n## Verify at task start\n\n- Verify the deployed version with the deploy tool before relying on it.\n";
            let model = Scripted::new(vec![
                reply(vec![
                    call(
                        "1",
                        "write_file",
                        serde_json::json!({"path": "MEMORY.md", "content": stale}),
                    ),
                    call(
                        "2",
                        "write_file",
                        serde_json::json!({"path": "memory_summary.md", "content": summary_text()}),
                    ),
                    call(
                        "3",
                        "write_file",
                        serde_json::json!({"path": "archive/releases.md", "content": "# Releases\n\n- 2.14.3 deployed to prod.\n"}),
                    ),
                ]),
                reply(vec![]),
                reply(vec![call(
                    "4",
                    "write_file",
                    serde_json::json!({"path": "MEMORY.md", "content": if fixed { good } else { stale }}),
                )]),
                reply(vec![]),
            ]);
            let out = run(&deps(home.path(), &cfg, &store, &model), false)
                .await
                .unwrap();
            let Outcome::Consolidated { report, .. } = &out else {
                panic!("{out:?}")
            };
            assert!(report.repaired);
            let repair = model.seen.lock().unwrap()[2]
                .last()
                .unwrap()
                .content
                .clone();
            assert!(repair.contains("MEMORY.md:4: stale_fact"), "{repair}");
            assert_eq!(
                report.lint_remaining.is_empty(),
                fixed,
                "{:?}",
                report.lint_remaining
            );
            let f = MemoryFolder::open(home.path()).unwrap().unwrap();
            assert!(
                f.root().join("archive/releases.md").is_file(),
                "the agent may write the archive layer"
            );
        }
    }

    #[tokio::test]
    async fn jail_refusals_touch_nothing_outside() {
        let home = tempfile::tempdir().unwrap();
        let outside = home.path().join("outside.txt");
        std::fs::write(&outside, "keep").unwrap();
        let (f, _) = MemoryFolder::open_or_init(home.path()).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(home.path(), f.root().join("skills")).unwrap();
        let cfg = MemoriesConfig::default();
        let store = store_with(1);
        let big = "x".repeat(10 * 1024 * 1024);
        let mut script = vec![reply(vec![
            call(
                "a",
                "write_file",
                serde_json::json!({"path": "../outside.txt", "content": "pwned"}),
            ),
            call(
                "b",
                "write_file",
                serde_json::json!({"path": outside.to_string_lossy(), "content": "pwned"}),
            ),
            call(
                "c",
                "write_file",
                serde_json::json!({"path": "skills/outside.txt", "content": "pwned"}),
            ),
            call(
                "d",
                "write_file",
                serde_json::json!({"path": ".hidden.md", "content": "x"}),
            ),
            call(
                "e",
                "write_file",
                serde_json::json!({"path": "MEMORY.md", "content": big}),
            ),
            call(
                "f",
                "read_file",
                serde_json::json!({"path": "../outside.txt"}),
            ),
        ])];
        script.extend(good_agent());
        let model = Scripted::new(script);
        let out = run(&deps(home.path(), &cfg, &store, &model), false)
            .await
            .unwrap();
        let Outcome::Consolidated { report, .. } = &out else {
            panic!("{out:?}")
        };
        assert_eq!(
            report.refused.len(),
            if cfg!(unix) { 6 } else { 5 },
            "{:#?}",
            report.refused
        );
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep");
        assert!(!home.path().join("outside.txt.tmp").exists());
        assert!(!f.root().join(".hidden.md").exists());
        let names: Vec<_> = std::fs::read_dir(home.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(
            !names
                .iter()
                .any(|n| n.to_string_lossy().starts_with(".tmp")),
            "{names:?}"
        );
    }

    /// Consolidate once with the good agent; returns the HEAD commit.
    async fn consolidated(home: &Path, cfg: &MemoriesConfig, store: &MemStore) -> String {
        let model = Scripted::new(good_agent());
        let out = run(&deps(home, cfg, store, &model), false).await.unwrap();
        let Outcome::Consolidated { commit, .. } = out else {
            panic!("{out:?}")
        };
        commit
    }

    #[tokio::test]
    async fn a_killed_runs_leftovers_are_rescued_not_adopted() {
        let home = tempfile::tempdir().unwrap();
        let cfg = MemoriesConfig::default();
        let store = store_with(2);
        let first = consolidated(home.path(), &cfg, &store).await;
        // A run that was killed mid-write: marker left, a 401-line MEMORY.md on disk.
        std::fs::write(home.path().join(gate::INFLIGHT_FILE), "pid 1\n").unwrap();
        let root = folder::folder_path(home.path());
        let big: String = (0..401).map(|i| format!("- half-written {i}\n")).collect();
        std::fs::write(root.join(folder::MEMORY_MD), &big).unwrap();
        // A new raw memory arrived meanwhile: it must still be consolidated.
        store.outputs.lock().unwrap().push(RawMemory {
            thread_id: "thread-new".into(),
            source_updated_at: NOW - 60,
            raw_memory: "- new fact from a new session".into(),
            rollout_summary: "New session.".into(),
            rollout_slug: None,
            usage_count: 0,
            last_usage: None,
        });
        let model = Scripted::new(good_agent());
        let out = run(&deps(home.path(), &cfg, &store, &model), true)
            .await
            .unwrap();
        let Outcome::Consolidated { commit, .. } = &out else {
            panic!("{out:?}")
        };
        assert_ne!(commit, &first);
        let task = model.seen.lock().unwrap()[0][1].content.clone();
        assert!(task.contains("new fact from a new session"), "{task}");
        assert!(
            !task.contains("half-written"),
            "leftovers reached the model"
        );
        let f = MemoryFolder::open(home.path()).unwrap().unwrap();
        let subjects: Vec<String> = f
            .history(10)
            .unwrap()
            .into_iter()
            .map(|h| h.subject)
            .collect();
        assert!(
            !subjects.iter().any(|s| s.starts_with("Snapshot")),
            "{subjects:?}"
        );
        let now = std::fs::read_to_string(root.join(folder::MEMORY_MD)).unwrap();
        assert!(!now.contains("half-written"));
        // Kept for inspection under a rescued ref, and the marker is gone.
        let repo = git2::Repository::open(&root).unwrap();
        let refs: Vec<String> = repo
            .references_glob(&format!("{}*", folder::RESCUED_REF_PREFIX))
            .unwrap()
            .flatten()
            .filter_map(|r| r.name().ok().map(str::to_owned))
            .collect();
        assert_eq!(refs.len(), 1, "{refs:?}");
        let kept = repo
            .revparse_single(&format!("{}:MEMORY.md", refs[0]))
            .unwrap();
        let kept = kept.as_blob().unwrap().content().to_vec();
        assert_eq!(kept, big.as_bytes());
        assert!(!home.path().join(gate::INFLIGHT_FILE).exists());
    }

    #[tokio::test]
    async fn over_budget_hand_edits_are_refused_and_acceptable_ones_snapshotted() {
        let home = tempfile::tempdir().unwrap();
        let cfg = MemoriesConfig::default();
        let store = store_with(1);
        consolidated(home.path(), &cfg, &store).await;
        let root = folder::folder_path(home.path());
        // A 109-line hand-edited summary (budget: 60 lines) is not snapshotted.
        let long: String = summary_text()
            + &(0..100)
                .map(|i| format!("- hand {i}\n"))
                .collect::<String>();
        std::fs::write(root.join(folder::SUMMARY_MD), &long).unwrap();
        let idle = Scripted::new(vec![]);
        let out = run(&deps(home.path(), &cfg, &store, &idle), true)
            .await
            .unwrap();
        assert!(matches!(out, Outcome::NoChanges { .. }), "{out:?}");
        let served = std::fs::read_to_string(root.join(folder::SUMMARY_MD)).unwrap();
        assert_eq!(served, summary_text(), "HEAD's summary stays");
        // A small hand edit is kept as a snapshot commit.
        let memory = std::fs::read_to_string(root.join(folder::MEMORY_MD)).unwrap();
        std::fs::write(root.join(folder::MEMORY_MD), memory + "- hand-added rule\n").unwrap();
        let idle = Scripted::new(vec![]);
        run(&deps(home.path(), &cfg, &store, &idle), true)
            .await
            .unwrap();
        let f = MemoryFolder::open(home.path()).unwrap().unwrap();
        assert!(f.history(1).unwrap()[0].subject.starts_with("Snapshot"));
        assert!(
            std::fs::read_to_string(root.join(folder::MEMORY_MD))
                .unwrap()
                .contains("hand-added rule")
        );
    }

    #[tokio::test]
    async fn rollback_to_an_over_budget_commit_is_refused() {
        let home = tempfile::tempdir().unwrap();
        let cfg = MemoriesConfig::default();
        let store = store_with(1);
        consolidated(home.path(), &cfg, &store).await;
        let f = MemoryFolder::open(home.path()).unwrap().unwrap();
        let big: String = (0..401).map(|i| format!("- old {i}\n")).collect();
        std::fs::write(f.root().join(folder::MEMORY_MD), &big).unwrap();
        let bad = f
            .commit_all(
                &codex_free_memory::gate::approve_as_is(&f).unwrap(),
                "legacy over-budget commit",
            )
            .unwrap()
            .unwrap();
        std::fs::write(f.root().join(folder::MEMORY_MD), "# Memory\n- ok\n").unwrap();
        f.commit_all(
            &codex_free_memory::gate::approve_as_is(&f).unwrap(),
            "fixed",
        )
        .unwrap();
        let b = budget::ArtifactBudget::default();
        let cmd = codex_free_memory::cli::MemoryHistoryCmd::Rollback {
            rev: bad.to_string(),
        };
        let e = history_command(home.path(), &cmd, &store, &b).unwrap_err();
        assert!(e.to_string().contains("401 lines"), "{e}");
        assert_eq!(
            std::fs::read_to_string(f.root().join(folder::MEMORY_MD)).unwrap(),
            "# Memory\n- ok\n"
        );
        // The good first commit can still be restored.
        let first = f.history(5).unwrap().last().unwrap().id.clone();
        let cmd = codex_free_memory::cli::MemoryHistoryCmd::Rollback { rev: first };
        history_command(home.path(), &cmd, &store, &b).unwrap();
    }

    #[tokio::test]
    async fn an_agent_that_writes_a_secret_is_repaired_or_refused() {
        let home = tempfile::tempdir().unwrap();
        let cfg = MemoriesConfig::default();
        let store = store_with(1);
        let leak = "# Memory\n\n- deploy with AWS key AKIAIOSFODNN7EXAMPLE\n";
        let mut replies = good_agent();
        replies[1] = reply(vec![
            call(
                "2",
                "write_file",
                serde_json::json!({"path": "MEMORY.md", "content": leak}),
            ),
            call(
                "3",
                "write_file",
                serde_json::json!({"path": "memory_summary.md", "content": summary_text()}),
            ),
        ]);
        // The repair turn ends without fixing anything: the run must fail, nothing committed.
        replies.push(reply(vec![]));
        let model = Scripted::new(replies);
        let out = run(&deps(home.path(), &cfg, &store, &model), false)
            .await
            .unwrap();
        let Outcome::Failed { reason, .. } = &out else {
            panic!("{out:?}")
        };
        assert!(reason.contains("holds a secret"), "{reason}");
        let repair = model
            .seen
            .lock()
            .unwrap()
            .last()
            .unwrap()
            .last()
            .unwrap()
            .content
            .clone();
        assert!(repair.contains("MEMORY.md:3: holds a secret"), "{repair}");
        let root = folder::folder_path(home.path());
        assert!(!root.join(folder::MEMORY_MD).exists());
        let f = MemoryFolder::open(home.path()).unwrap().unwrap();
        assert!(f.head().unwrap().is_none(), "nothing was committed");
    }

    #[tokio::test]
    async fn large_inputs_are_trimmed_by_rank_to_the_context_window() {
        let home = tempfile::tempdir().unwrap();
        let cfg = MemoriesConfig::default();
        // 42 raw memories of ~15 KB each: ~160k tokens in all, over a 128k window.
        let store = store_with(42);
        for (i, m) in store.outputs.lock().unwrap().iter_mut().enumerate() {
            m.raw_memory = (0..300)
                .map(|j| format!("- fact {j} of session {i}: the build uses pnpm workspaces\n"))
                .collect();
            m.usage_count = 42 - i as i64;
        }
        let mut replies = good_agent();
        // The agent reads the big inputs file: its tool result must be elided or fit.
        replies.insert(
            1,
            reply(vec![call(
                "r2",
                "read_file",
                serde_json::json!({"path": "raw_memories.md"}),
            )]),
        );
        let mut model = Scripted::new(replies);
        model.window = Some(128_000);
        let out = run(&deps(home.path(), &cfg, &store, &model), false)
            .await
            .unwrap();
        assert!(matches!(out, Outcome::Consolidated { .. }), "{out:?}");
        let max = agent::max_input_tokens(128_000);
        for (i, req) in model.seen.lock().unwrap().iter().enumerate() {
            let t = agent::conversation_tokens(req);
            assert!(t <= max, "request {i} carried {t} tokens, over {max}");
        }
        // The best-ranked input is in, the lowest-ranked waits.
        let raw =
            std::fs::read_to_string(folder::folder_path(home.path()).join(folder::RAW_MEMORIES_MD))
                .unwrap();
        assert!(raw.contains("session 0:"));
        assert!(!raw.contains("session 41:"));
        // A conversation that cannot fit is refused before anything is sent.
        let mut big = vec![agent::Message::text(
            agent::Role::User,
            "x ".repeat(200_000),
        )];
        let e = agent::fit_conversation(&mut big, max).unwrap_err();
        assert!(e.to_string().contains("nothing was sent"), "{e}");
    }

    #[tokio::test]
    async fn spend_cap_reached_mid_run_stops_before_the_next_request() {
        let home = tempfile::tempdir().unwrap();
        let cfg = MemoriesConfig::default();
        let store = store_with(1);
        // The cap is hit by other spend while the first request is answered.
        struct CapAfterFirst<'a>(&'a MemStore, Scripted);
        impl ConsolidationModel for CapAfterFirst<'_> {
            fn model_id(&self) -> String {
                self.1.model_id()
            }
            fn complete<'b>(
                &'b self,
                req: agent::ModelRequest<'b>,
            ) -> agent::BoxFuture<'b, Result<agent::ModelReply>> {
                *self.0.blocked.lock().unwrap() = Some("monthly spend cap reached".into());
                self.1.complete(req)
            }
        }
        let model = CapAfterFirst(&store, Scripted::new(good_agent()));
        let mut d = deps(home.path(), &cfg, &store, &model.1);
        d.model = Some(&model);
        let out = run(&d, false).await.unwrap();
        let Outcome::Failed { reason, .. } = &out else {
            panic!("{out:?}")
        };
        assert!(reason.contains("spend cap"), "{reason}");
        assert_eq!(
            model.1.seen.lock().unwrap().len(),
            1,
            "no request after the cap"
        );
    }

    #[tokio::test]
    async fn a_secret_written_into_daily_is_refused_too() {
        let home = tempfile::tempdir().unwrap();
        let cfg = MemoriesConfig::default();
        let store = store_with(1);
        let mut replies = good_agent();
        replies[1].tool_calls.push(call(
            "4",
            "write_file",
            serde_json::json!({"path": "daily/2026-12-01.md", "content": "- token ghp_abcdefghijklmnopqrstuvwxyz0123456789AB\n"}),
        ));
        replies.push(reply(vec![]));
        let model = Scripted::new(replies);
        let out = run(&deps(home.path(), &cfg, &store, &model), false)
            .await
            .unwrap();
        let Outcome::Failed { reason, .. } = &out else {
            panic!("{out:?}")
        };
        assert!(
            reason.contains("daily/2026-12-01.md:1: holds a secret"),
            "{reason}"
        );
        let f = MemoryFolder::open(home.path()).unwrap().unwrap();
        assert!(f.head().unwrap().is_none(), "nothing was committed");
    }

    #[tokio::test]
    async fn spend_cap_stops_before_any_request() {
        let home = tempfile::tempdir().unwrap();
        let cfg = MemoriesConfig::default();
        let store = store_with(2);
        *store.blocked.lock().unwrap() = Some("monthly spend cap reached".into());
        let model = Scripted::new(good_agent());
        let out = run(&deps(home.path(), &cfg, &store, &model), false)
            .await
            .unwrap();
        assert!(
            matches!(&out, Outcome::Failed { reason, .. } if reason.contains("spend cap")),
            "{out:?}"
        );
        assert!(model.seen.lock().unwrap().is_empty(), "no model request");
        let f = MemoryFolder::open(home.path()).unwrap().unwrap();
        assert!(
            f.head().unwrap().is_none() && !f.root().join("raw_memories.md").exists(),
            "sync undone"
        );
    }

    #[test]
    fn retry_delay_doubles_and_caps() {
        assert_eq!(retry_delay(1), 300);
        assert_eq!(retry_delay(2), 600);
        assert_eq!(retry_delay(30), RETRY_MAX_SECS);
    }
}
