//! The one phase-2 run both memory versions share: claim the global job, settle the folder,
//! select and sync the inputs, skip the model when nothing changed, run the agent under the
//! lease's heartbeat, commit through the gate, read back and settle the job, restoring the
//! folder on any failure. What differs per version (the folder, how uncommitted edits are
//! settled, how inputs reach the folder, the prompts, the checks, the commit message, what
//! runs after a success) is its [`Policy`].

use std::path::{Path, PathBuf};

use codex_free_core::config::MemoryVersion;
use codex_free_core::error::IoContext;
use codex_free_core::{Error, Result};
use codex_free_memory::budget::ArtifactBudget;
use codex_free_memory::folder::{self, FileChange, MemoryFolder, Oid};
use codex_free_memory::gate::{self, Scope};
use codex_free_memory::jail::{FolderJail, WritePolicy};
use codex_free_memory::select::{self, RawMemory};

use super::agent::{self, AgentOptions, AgentReport, TurnLog, TurnRecord};
use super::{
    DIFF_SHARE_OF_WINDOW, INPUTS_SHARE_OF_WINDOW, LEASE_SECS, Outcome, Phase2Deps, Phase2Store,
    claim_or_skip, heartbeat_loop, prompt, refused_by_gate,
};

/// The words a version's run uses in logs and errors.
pub(crate) struct Names {
    /// The run, e.g. `phase 2` or `v2 phase 2`.
    pub run: &'static str,
    /// The job, e.g. `phase-2` or `v2 phase-2`.
    pub job: &'static str,
    /// The folder, e.g. `the memory folder` or `memories_v2/`.
    pub folder: &'static str,
}

/// How a run settled the job successfully (what a [`Policy::settled`] follows).
pub(crate) enum Settled<'a> {
    /// Nothing changed and the served files are valid: no model call.
    NoChanges,
    /// Inputs reached the folder without the agent ([`Policy::without_agent`]).
    WithoutAgent,
    /// The agent consolidated; `before` is the commit the run started from.
    Consolidated {
        /// The folder.
        folder: &'a MemoryFolder,
        /// `HEAD` before the run's commit.
        before: Option<Oid>,
    },
}

/// What one memory version does at each step of [`run`] where the versions differ.
pub(crate) trait Policy: Send + Sync {
    /// The version (its folder is `<home>/<layout::folder_dir(version)>`).
    fn version(&self) -> MemoryVersion;
    /// The words used in logs and errors.
    fn names(&self) -> Names;
    /// The marker file in the state home while the run may leave uncommitted files (each
    /// version its own, so neither rescues the other's work).
    fn inflight_file(&self) -> &'static str;
    /// The served file whose presence (with a commit) makes the run incremental.
    fn served_file(&self) -> &'static str;
    /// The gate scope a consolidation's commit must pass (also the checks that decide
    /// whether the served files are valid).
    fn scope(&self) -> Scope;
    /// The agent's write policy.
    fn write_policy(&self) -> WritePolicy;

    /// Settle uncommitted edits found in the folder before the run (snapshot them or rescue
    /// them to a ref and discard them).
    ///
    /// Errors: git or I/O errors.
    fn settle_edits(
        &mut self,
        home: &Path,
        folder: &MemoryFolder,
        budget: &ArtifactBudget,
    ) -> Result<()>;
    /// Take what other machines committed (V1's sync); returns the commit the diff shown to
    /// the agent starts from when it is not `HEAD`.
    ///
    /// Errors: as the sync's state file.
    async fn pull(
        &mut self,
        deps: &Phase2Deps<'_>,
        folder: &MemoryFolder,
        budget: &ArtifactBudget,
    ) -> Result<Option<Oid>> {
        let _ = (deps, folder, budget);
        Ok(None)
    }
    /// Write the selected inputs into the folder.
    ///
    /// Errors: I/O errors.
    fn sync_inputs(
        &mut self,
        deps: &Phase2Deps<'_>,
        folder: &MemoryFolder,
        sel: &[RawMemory],
        now: i64,
    ) -> Result<()>;
    /// With no input selected and nothing served yet: settle the folder without the agent
    /// and return the commit made (if any), or `None` when the agent must run anyway.
    ///
    /// Errors: git errors; the gate's refusal.
    fn without_agent(
        &mut self,
        folder: &MemoryFolder,
        budget: &ArtifactBudget,
        diff: &folder::WorkspaceDiff,
    ) -> Result<Option<Option<String>>>;
    /// The agent's instructions.
    fn system(&self, budget: &ArtifactBudget) -> String;
    /// The agent's task: what changed since the last consolidation.
    fn task(
        &self,
        mode: prompt::Mode,
        inputs: usize,
        diff: &folder::WorkspaceDiff,
        reconcile: bool,
    ) -> String;
    /// Advice for the repair turn that does not fail the run (V1's lint findings).
    fn advise(&self, root: &Path, budget: &ArtifactBudget) -> Vec<String> {
        let _ = (root, budget);
        Vec::new()
    }
    /// The repair turn's text for the checks' `problems`.
    fn repair(&self, problems: &[String], budget: &ArtifactBudget) -> String;
    /// The consolidation's commit message.
    fn commit_message(
        &self,
        mode: prompt::Mode,
        sel: &[RawMemory],
        changes: &[FileChange],
        report: &AgentReport,
        model: &str,
    ) -> String;
    /// After the job was marked succeeded.
    ///
    /// Errors: I/O or git errors (the run then fails and the folder is restored).
    fn settled(&self, deps: &Phase2Deps<'_>, how: Settled<'_>) -> Result<()> {
        let _ = (deps, how);
        Ok(())
    }
    /// After a successful run, outside the lease (V1 pushes to the sync remote).
    async fn published(&self, deps: &Phase2Deps<'_>) {
        let _ = deps;
    }
}

/// Records each model request of a run and answers the agent's spend-cap question.
struct RunLog<'a> {
    store: &'a dyn Phase2Store,
    run_id: String,
    job: &'static str,
}

impl TurnLog for RunLog<'_> {
    fn record(&self, rec: &TurnRecord) {
        if let Err(e) = self.store.log_request(&self.run_id, rec) {
            tracing::warn!("could not record {} usage: {e}", self.job);
        }
    }

    fn blocked(&self) -> Option<String> {
        match self.store.spend_blocked() {
            Ok(b) => b,
            // Cannot tell what was spent: stop rather than spend blind.
            Err(e) => Some(format!("could not check the spend cap: {e}")),
        }
    }
}

fn folder_root(home: &Path, version: MemoryVersion) -> PathBuf {
    crate::v2::folder(home, version)
}

fn mark_inflight(home: &Path, file: &str) -> Result<()> {
    let p = home.join(file);
    std::fs::write(&p, format!("pid {}\n", std::process::id()))
        .ctx(|| format!("writing {}", p.display()))
}

fn clear_inflight(home: &Path, file: &str) {
    let p = home.join(file);
    if let Err(e) = std::fs::remove_file(&p)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!("could not remove {}: {e}", p.display());
    }
}

/// Run phase 2 once for `policy`'s version. `force` ignores the cooldown and the retry
/// backoff (never a live lease). Never leaves the folder half-written.
///
/// Errors: only database errors while claiming; every later failure is an
/// [`Outcome::Failed`] (the job row carries the reason).
pub(crate) async fn run<P: Policy>(
    deps: &Phase2Deps<'_>,
    force: bool,
    mut policy: P,
) -> Result<Outcome> {
    if !deps.config.enabled {
        return Ok(Outcome::Skipped {
            reason: "disabled".into(),
            until: None,
        });
    }
    let (token, watermark) = match claim_or_skip(deps, force)? {
        Ok(c) => c,
        Err(skipped) => return Ok(skipped),
    };
    let names = policy.names();
    let inflight = policy.inflight_file();
    let mut run_id: Option<String> = None;
    let mut agent_report: Option<AgentReport> = None;
    let result = claimed(
        deps,
        &mut policy,
        &token,
        watermark,
        &mut run_id,
        &mut agent_report,
    )
    .await;
    let outcome = match result {
        Ok(o) => {
            clear_inflight(deps.home, inflight);
            policy.published(deps).await;
            o
        }
        Err(e) => {
            let reason = e.to_string();
            tracing::warn!(%reason, "{} failed; restoring {}", names.run, names.folder);
            let root = folder_root(deps.home, policy.version());
            if root.join(".git").is_dir() {
                match MemoryFolder::at(&root).restore_head() {
                    Ok(()) => clear_inflight(deps.home, inflight),
                    Err(re) => tracing::error!(
                        "could not restore {} after a failed run: {re}",
                        names.folder
                    ),
                }
            } else {
                clear_inflight(deps.home, inflight);
            }
            if let Err(fe) = deps.store.fail_global(&token, &reason) {
                tracing::error!("could not mark the {} job failed: {fe}", names.job);
            }
            Outcome::Failed {
                reason,
                report: agent_report,
            }
        }
    };
    if let Some(id) = &run_id {
        let (status, err) = match &outcome {
            Outcome::Failed { reason, .. } => ("failed", Some(reason.as_str())),
            Outcome::NoChanges { .. } => ("no_changes", None),
            _ => ("succeeded", None),
        };
        if let Err(e) = deps.store.finish_run(id, status, err) {
            tracing::warn!("could not close the {} usage run: {e}", names.job);
        }
    }
    Ok(outcome)
}

/// Long on purpose: one consolidation under a held lease (settle, pull, budget the inputs,
/// run the agent, commit); every exit must settle the lease the same way.
#[expect(
    clippy::too_many_lines,
    reason = "one consolidation under a held lease (settle, pull, budget the inputs, run the agent, commit); every exit must settle the lease the same way"
)]
async fn claimed<P: Policy>(
    deps: &Phase2Deps<'_>,
    policy: &mut P,
    token: &str,
    watermark: i64,
    run_id: &mut Option<String>,
    agent_report: &mut Option<AgentReport>,
) -> Result<Outcome> {
    let cfg = deps.config;
    let names = policy.names();
    let root = folder_root(deps.home, policy.version());
    let (folder, _created) = MemoryFolder::open_or_init_root(&root)?;
    let budget = ArtifactBudget::from_config(cfg);
    // Uncommitted edits (by hand, or left by a crash) are settled first, so nothing is lost.
    policy.settle_edits(deps.home, &folder, &budget)?;
    mark_inflight(deps.home, policy.inflight_file())?;
    let reconcile_base = policy.pull(deps, &folder, &budget).await?;
    let mode = if folder.head()?.is_some() && folder.root().join(policy.served_file()).is_file() {
        prompt::Mode::Incremental
    } else {
        prompt::Mode::Init
    };
    let now = deps.store.now();
    let all = deps.store.raw_memories()?;
    let sel = select::select(
        &all,
        now,
        cfg.max_unused_days,
        cfg.max_raw_memories_for_consolidation,
    );
    // The model's window bounds what one run can take in: inputs beyond it wait for a later
    // run (lowest rank first), and the diff shown in the task is cut to fit.
    let window = deps.model.and_then(|m| m.context_window());
    let sel = match window {
        Some(w) => {
            let (kept, dropped) =
                select::fit_tokens(sel, (w as f64 * INPUTS_SHARE_OF_WINDOW) as usize);
            if dropped > 0 {
                tracing::info!(
                    kept = kept.len(),
                    dropped,
                    window = w,
                    "{}: inputs trimmed by rank to fit the model's context window",
                    names.run
                );
            }
            kept
        }
        None => sel,
    };
    let ids: Vec<String> = sel.iter().map(|m| m.thread_id.clone()).collect();
    policy.sync_inputs(deps, &folder, &sel, now)?;
    let diff_cap = window.map_or(prompt::MAX_DIFF_BYTES, |w| {
        // ~3 bytes per token is the conservative end for prose and markdown.
        ((w as f64 * DIFF_SHARE_OF_WINDOW) as usize * 3).min(prompt::MAX_DIFF_BYTES)
    });
    let diff = folder.workspace_diff_from(reconcile_base, diff_cap)?;
    let scope = policy.scope();
    if !diff.has_changes() && gate::problems(&folder, &budget, scope).is_empty() {
        deps.store.succeed_global(token, watermark, &ids)?;
        policy.settled(deps, Settled::NoChanges)?;
        tracing::info!(
            inputs = sel.len(),
            "{}: no changes, artifacts valid; no model call",
            names.run
        );
        return Ok(Outcome::NoChanges { inputs: sel.len() });
    }
    if sel.is_empty()
        && mode == prompt::Mode::Init
        && let Some(commit) = policy.without_agent(&folder, &budget, &diff)?
    {
        deps.store.succeed_global(token, watermark, &ids)?;
        policy.settled(deps, Settled::WithoutAgent)?;
        return Ok(Outcome::Synced { commit });
    }
    let model = deps.model.ok_or_else(|| {
        Error::Provider(format!(
            "{} needs the consolidation model: {}",
            names.run,
            deps.model_unavailable
                .as_deref()
                .unwrap_or("none configured (memories.consolidation_model)")
        ))
    })?;
    if let Some(why) = deps.store.spend_blocked()? {
        return Err(Error::Budget(why));
    }
    *run_id = Some(deps.store.start_run(&deps.trigger, &model.model_id())?);
    let log = RunLog {
        store: deps.store,
        run_id: run_id.clone().unwrap_or_default(),
        job: names.job,
    };
    let jail = FolderJail::new(folder.root(), policy.write_policy())?;
    let system = policy.system(&budget);
    let task = policy.task(mode, sel.len(), &diff, reconcile_base.is_some());
    let opts = AgentOptions {
        reasoning_effort: cfg.consolidation_thinking.clone(),
        cancel: deps.cancel.child_token(),
        ..Default::default()
    };
    let policy_ref: &P = policy;
    let validate = || gate::problems(&folder, &budget, scope);
    let advise = || policy_ref.advise(folder.root(), &budget);
    let repair = |p: &[String]| policy_ref.repair(p, &budget);
    let agent_fut = agent::run(
        model, &jail, &system, &task, &opts, &log, &validate, &advise, &repair,
    );
    let heartbeat = heartbeat_loop(deps.store, token, opts.cancel.clone());
    tokio::pin!(agent_fut);
    tokio::pin!(heartbeat);
    let result = tokio::select! {
        r = &mut agent_fut => r,
        e = &mut heartbeat => {
            opts.cancel.cancel();
            let r = agent_fut.await;
            *agent_report = Some(match r { Ok(rep) => rep, Err(f) => f.report });
            return Err(e);
        }
    };
    let report = match result {
        Ok(r) => r,
        Err(f) => {
            *agent_report = Some(f.report);
            return Err(f.error);
        }
    };
    *agent_report = Some(report.clone());
    if !deps.store.heartbeat_global(token, LEASE_SECS)? {
        return Err(Error::Busy(format!(
            "lost the {} job lease before committing",
            names.job
        )));
    }
    let changes = folder.workspace_diff(0)?.changes;
    let msg = policy.commit_message(mode, &sel, &changes, &report, &model.model_id());
    let before = folder.head()?;
    let approved = gate::approve(&folder, &budget, scope).map_err(refused_by_gate)?;
    let commit = folder.commit_all(&approved, &msg)?;
    if let Err(e) = folder.verify_committed() {
        folder.undo_commit(before)?;
        return Err(e);
    }
    deps.store.succeed_global(token, watermark, &ids)?;
    policy.settled(
        deps,
        Settled::Consolidated {
            folder: &folder,
            before,
        },
    )?;
    let commit = match commit {
        Some(c) => c.to_string(),
        None => before.map(|c| c.to_string()).unwrap_or_default(),
    };
    tracing::info!(%commit, inputs = sel.len(), requests = report.requests, "{} consolidated {}", names.run, names.folder);
    Ok(Outcome::Consolidated {
        commit,
        inputs: sel.len(),
        mode,
        changes,
        report,
    })
}
