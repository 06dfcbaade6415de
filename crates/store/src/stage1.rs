//! Threads seen, phase-1 jobs and stage-1 outputs, with Codex's claim semantics
//! (`codex-rs/state/src/runtime/memories.rs`):
//!
//! - one job per rollout (`kind = memory_stage1`, `job_key = thread id`), claimed under
//!   `BEGIN IMMEDIATE` with a lease ([`LEASE_SECONDS`]) and an `ownership_token`;
//! - a rollout whose stored output (or last successful watermark) is not older than the
//!   thread's `updated_at` is up to date and never claimed again (the *watermark*);
//! - a failure sets a retry backoff ([`RETRY_DELAY_SECONDS`]) and spends one of
//!   [`DEFAULT_RETRIES`]; a newer source (`updated_at` advanced) resets both;
//! - at most `max_running` phase-1 jobs hold a live lease at once, across processes;
//! - a job whose lease expired (its worker crashed) can be claimed again, and the old
//!   worker's late result is discarded because its token no longer matches.
//!
//! Invariant: stage-1 outputs are written only in the same transaction that marks the
//! owning job done; a failure never writes or deletes an output.

use rusqlite::{OptionalExtension, Transaction, TransactionBehavior, named_params, params};
use serde::Serialize;

use super::{Store, collect_rows, db_err};
use codex_free_core::Error;
use codex_free_core::Result;

/// Job kind of per-rollout extraction (Codex's spelling).
pub const JOB_KIND_STAGE1: &str = "memory_stage1";
/// Job kind of the global consolidation (phase 2; enqueued here, run elsewhere).
pub const JOB_KIND_PHASE2: &str = "memory_consolidate_global";
/// The one phase-2 job key.
pub const PHASE2_JOB_KEY: &str = "global";
/// Lease of a claimed phase-1 job, seconds (Codex: 3600).
pub const LEASE_SECONDS: i64 = 3600;
/// Backoff after a failed phase-1 job, seconds (Codex: 3600).
pub const RETRY_DELAY_SECONDS: i64 = 3600;
/// Attempts per source version before a job is left alone (Codex: 3).
pub const DEFAULT_RETRIES: i64 = 3;
/// Threads inspected per claim pass, newest first (Codex's scan limit is of this order).
pub const SCAN_LIMIT: usize = 5000;

/// What discovery knows about one rollout, written to `threads`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadUpsert {
    /// Rollout id, unique across sources (the source's session id).
    pub id: String,
    /// `codex`, `claude`, `pi` or `mcp`.
    pub source: String,
    /// The transcript file (never modified).
    pub path: String,
    /// Working directory of the session, when known.
    pub cwd: Option<String>,
    /// A short title (first user message), when known.
    pub title: Option<String>,
    /// Session start, unix seconds.
    pub created_at: Option<i64>,
    /// Last activity, unix seconds: the extraction watermark.
    pub updated_at: i64,
    /// A sub-agent transcript (never extracted).
    pub is_subagent: bool,
    /// An ephemeral session (never extracted).
    pub is_ephemeral: bool,
    /// Fingerprint of the transcript's content (`<bytes>:<sha256 hex>`), when known. An
    /// upsert whose fingerprint equals the stored one keeps the stored `updated_at`: the
    /// mtime moved but nothing new was written, so there is nothing to extract again.
    pub content_hash: Option<String>,
}

/// A row of `threads`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadRow {
    /// Rollout id.
    pub id: String,
    /// Source name.
    pub source: String,
    /// Transcript path.
    pub path: String,
    /// Working directory.
    pub cwd: Option<String>,
    /// Title.
    pub title: Option<String>,
    /// Last activity, unix seconds.
    pub updated_at: i64,
    /// Sub-agent flag.
    pub is_subagent: bool,
    /// Ephemeral flag.
    pub is_ephemeral: bool,
    /// `true` unless the user turned memory off for this thread (`memories thread off`).
    pub memory_enabled: bool,
}

/// One extraction result (Codex's `stage1_outputs` shape).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Stage1Output {
    /// Rollout id.
    pub thread_id: String,
    /// The thread's `updated_at` the output was extracted from (unix seconds).
    pub source_updated_at: i64,
    /// Markdown raw memory.
    pub raw_memory: String,
    /// One-paragraph summary of the rollout.
    pub rollout_summary: String,
    /// Short file-name-safe slug, when the model gave one.
    pub rollout_slug: Option<String>,
    /// When it was stored (unix seconds).
    pub generated_at: i64,
    /// Citations counted by the read path.
    pub usage_count: i64,
    /// Last citation (unix seconds).
    pub last_usage: Option<i64>,
}

/// A claimed job: the thread plus the token that proves ownership.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stage1Claim {
    /// The thread to extract.
    pub thread: ThreadRow,
    /// Ownership token of this claim.
    pub ownership_token: String,
    /// The watermark this claim extracts (the thread's `updated_at` when claimed).
    pub source_updated_at: i64,
}

/// Result of one claim attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// Claimed; the token must be passed to the `mark_*` calls.
    Claimed {
        /// Ownership token.
        ownership_token: String,
    },
    /// The stored output already covers this source version.
    SkippedUpToDate,
    /// Another worker holds a live lease, or the running-job cap is reached.
    SkippedRunning,
    /// The last failure's backoff has not elapsed.
    SkippedRetryBackoff,
    /// No retries left for this source version.
    SkippedRetryExhausted,
}

/// Parameters of one claim pass ([`Store::claim_stage1_jobs`]).
#[derive(Debug, Clone)]
pub struct ClaimParams {
    /// Sources counted as interactive (`memories.sources`).
    pub sources: Vec<String>,
    /// Claims returned at most (`memories.max_rollouts_per_startup`).
    pub max_claimed: usize,
    /// Live phase-1 leases allowed at once across processes (Codex uses `max_claimed`).
    pub max_running: usize,
    /// Oldest rollout considered, days (`memories.max_rollout_age_days`).
    pub max_age_days: u32,
    /// Idle time required, hours (`memories.min_rollout_idle_hours`); ignored by `force`.
    pub min_idle_hours: u32,
    /// Lease length, seconds ([`LEASE_SECONDS`]).
    pub lease_seconds: i64,
    /// Who claims (process/run id), stored for diagnostics.
    pub worker_id: String,
    /// `memories force`: ignore the idle time, retry backoff and exhausted retries (never
    /// the watermark: an unchanged rollout is still not re-extracted).
    pub force: bool,
    /// `memories.exclude_paths`: a thread whose working directory matches is never
    /// eligible (not even with `force`).
    pub exclude: codex_free_core::config::exclude::ExcludePaths,
}

/// A thread that would be eligible for phase 1 but whose working directory matches
/// `memories.exclude_paths` ([`Store::excluded_threads`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExcludedThread {
    /// Rollout id.
    pub id: String,
    /// Source name.
    pub source: String,
    /// The working directory that matched.
    pub cwd: String,
    /// The pattern that matched, as configured.
    pub pattern: String,
}

/// Phase-1 jobs by state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct JobCounts {
    /// Leased and running now.
    pub running: i64,
    /// Marked running but the lease expired (worker died); reclaimable.
    pub stale: i64,
    /// Released unfinished (run stopped); claimable.
    pub pending: i64,
    /// Finished (with or without output).
    pub done: i64,
    /// Failed, will be retried after the backoff.
    pub retrying: i64,
    /// Failed with no retries left for this source version.
    pub exhausted: i64,
}

/// Per-source thread counts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SourceCounts {
    /// Source name.
    pub source: String,
    /// Threads seen.
    pub threads: i64,
    /// Threads with a stored output.
    pub with_output: i64,
    /// Threads with memory turned off.
    pub disabled: i64,
    /// Sub-agent or ephemeral threads (never extracted).
    pub excluded: i64,
}

fn thread_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ThreadRow> {
    Ok(ThreadRow {
        id: r.get("id")?,
        source: r.get("source")?,
        path: r.get("path")?,
        cwd: r.get("cwd")?,
        title: r.get("title")?,
        updated_at: r.get("updated_at")?,
        is_subagent: r.get::<_, i64>("is_subagent")? != 0,
        is_ephemeral: r.get::<_, i64>("is_ephemeral")? != 0,
        memory_enabled: r.get::<_, String>("memory_mode")? == "enabled",
    })
}

fn output_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Stage1Output> {
    Ok(Stage1Output {
        thread_id: r.get("thread_id")?,
        source_updated_at: r.get("source_updated_at")?,
        raw_memory: r.get("raw_memory")?,
        rollout_summary: r.get("rollout_summary")?,
        rollout_slug: r.get("rollout_slug")?,
        generated_at: r.get("generated_at")?,
        usage_count: r.get("usage_count")?,
        last_usage: r.get("last_usage")?,
    })
}

const THREAD_COLS: &str =
    "id, source, path, cwd, title, updated_at, is_subagent, is_ephemeral, memory_mode";
const OUTPUT_COLS: &str = "thread_id, source_updated_at, raw_memory, rollout_summary, rollout_slug, generated_at, usage_count, last_usage";

/// Raise one output's usage count and set its last use to `now`; rows changed (0 or 1).
fn credit_usage(tx: &Transaction<'_>, thread_id: &str, now: i64) -> Result<usize> {
    tx.execute(
        "UPDATE stage1_outputs SET usage_count = usage_count + 1, last_usage = ?1 WHERE thread_id = ?2",
        params![now, thread_id],
    )
    .map_err(db_err)
}

/// Advance the phase-2 job's input watermark (create it as `pending` if absent; a running
/// one stays running). Phase 2 compares watermarks to know there is new input.
pub(crate) fn enqueue_phase2(tx: &Transaction<'_>, watermark: i64) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT INTO jobs (kind, job_key, status, retry_remaining, input_watermark)
         VALUES (?1, ?2, 'pending', ?3, ?4)
         ON CONFLICT(kind, job_key) DO UPDATE SET
           status = CASE WHEN jobs.status = 'running' THEN 'running' ELSE 'pending' END,
           input_watermark = MAX(COALESCE(jobs.input_watermark, 0), excluded.input_watermark),
           retry_remaining = CASE WHEN jobs.status = 'running' THEN jobs.retry_remaining ELSE excluded.retry_remaining END,
           retry_at = CASE WHEN jobs.status = 'running' THEN jobs.retry_at ELSE NULL END",
        params![JOB_KIND_PHASE2, PHASE2_JOB_KEY, DEFAULT_RETRIES, watermark],
    )?;
    Ok(())
}

/// [`Store::set_thread_memory`] inside the caller's transaction (a denied request turns
/// its session off in the same transaction that records the denial).
///
/// Errors: [`Error::InvalidArgument`] when no thread has `id`.
pub(crate) fn set_thread_memory_in(
    tx: &Transaction<'_>,
    id: &str,
    enabled: bool,
    now: i64,
) -> Result<()> {
    let n = tx
        .execute(
            "UPDATE threads SET memory_mode = ?2 WHERE id = ?1",
            params![id, if enabled { "enabled" } else { "disabled" }],
        )
        .map_err(db_err)?;
    if n == 0 {
        return Err(Error::InvalidArgument(format!(
            "no thread with id \"{id}\"; `codex-free memories status` lists sources, thread ids are the sessions' ids"
        )));
    }
    if !enabled {
        let deleted = tx
            .execute("DELETE FROM stage1_outputs WHERE thread_id = ?1", [id])
            .map_err(db_err)?;
        tx.execute(
            "DELETE FROM jobs WHERE kind = ?1 AND job_key = ?2",
            params![JOB_KIND_STAGE1, id],
        )
        .map_err(db_err)?;
        if deleted > 0 {
            enqueue_phase2(tx, now).map_err(db_err)?;
        }
    }
    Ok(())
}

impl Store {
    /// Record what discovery saw, in one transaction. New threads get memory enabled when
    /// `enable_new` (i.e. `memories.generate_memories`), else disabled; existing threads
    /// keep their mode and get the new path/`updated_at`/flags. Returns rows written.
    pub fn upsert_threads(&self, threads: &[ThreadUpsert], enable_new: bool) -> Result<usize> {
        let now = self.now();
        let mut c = self.conn();
        let tx = c
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db_err)?;
        let mut n = 0;
        {
            let mut st = tx
                .prepare_cached(
                    "INSERT INTO threads (id, source, path, cwd, title, created_at, updated_at, is_subagent, is_ephemeral, memory_mode, first_seen_at, last_seen_at, content_hash)
                     VALUES (:id, :source, :path, :cwd, :title, :created_at, :updated_at, :sub, :eph, :mode, :now, :now, :hash)
                     ON CONFLICT(id) DO UPDATE SET
                       source = excluded.source, path = excluded.path,
                       cwd = COALESCE(excluded.cwd, threads.cwd), title = COALESCE(excluded.title, threads.title),
                       created_at = COALESCE(threads.created_at, excluded.created_at),
                       updated_at = CASE WHEN excluded.content_hash IS NOT NULL AND excluded.content_hash = threads.content_hash
                                         THEN threads.updated_at ELSE excluded.updated_at END,
                       content_hash = COALESCE(excluded.content_hash, threads.content_hash),
                       is_subagent = excluded.is_subagent,
                       is_ephemeral = excluded.is_ephemeral, last_seen_at = excluded.last_seen_at",
                )
                .map_err(db_err)?;
            for t in threads {
                n += st
                    .execute(named_params! {
                        ":id": t.id, ":source": t.source, ":path": t.path, ":cwd": t.cwd, ":title": t.title,
                        ":created_at": t.created_at, ":updated_at": t.updated_at,
                        ":sub": t.is_subagent as i64, ":eph": t.is_ephemeral as i64,
                        ":mode": if enable_new { "enabled" } else { "disabled" }, ":now": now,
                        ":hash": t.content_hash,
                    })
                    .map_err(db_err)?;
            }
        }
        tx.commit().map_err(db_err)?;
        Ok(n)
    }

    /// One thread by id.
    pub fn thread(&self, id: &str) -> Result<Option<ThreadRow>> {
        let c = self.conn();
        c.query_row(
            &format!("SELECT {THREAD_COLS} FROM threads WHERE id = ?1"),
            [id],
            thread_from_row,
        )
        .optional()
        .map_err(db_err)
    }

    /// Turn memory on or off for one thread (`memories thread on|off <id>`). Turning it
    /// off also deletes its stage-1 output and job (Codex: `delete_thread_memory`) and
    /// queues phase 2 so consolidated memory forgets it.
    ///
    /// Errors: [`Error::NotFound`]-like [`Error::InvalidArgument`] when no thread has `id`.
    pub fn set_thread_memory(&self, id: &str, enabled: bool) -> Result<()> {
        let now = self.now();
        let mut c = self.conn();
        let tx = c
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db_err)?;
        set_thread_memory_in(&tx, id, enabled, now)?;
        tx.commit().map_err(db_err)
    }

    /// Threads eligible for phase 1 now and not yet up to date (newest first, at most
    /// `limit`): memory on, not sub-agent/ephemeral, source allowed, inside the age window,
    /// idle long enough (unless `force`), output older than `updated_at`.
    /// Threads whose working directory matches `memories.exclude_paths` (`p.exclude`) are
    /// left out ([`Store::excluded_threads`] lists them).
    pub fn eligible_threads(&self, p: &ClaimParams, limit: usize) -> Result<Vec<ThreadRow>> {
        Ok(self.eligible_split(p, limit)?.0)
    }

    /// The threads [`Store::eligible_threads`] leaves out only because their working
    /// directory matches `memories.exclude_paths`, with the pattern that matched (newest
    /// first, at most [`SCAN_LIMIT`]).
    pub fn excluded_threads(&self, p: &ClaimParams) -> Result<Vec<ExcludedThread>> {
        if p.exclude.is_empty() {
            return Ok(Vec::new());
        }
        Ok(self.eligible_split(p, 0)?.1)
    }

    /// Eligible threads (at most `limit`) and the eligible-but-excluded ones.
    fn eligible_split(
        &self,
        p: &ClaimParams,
        limit: usize,
    ) -> Result<(Vec<ThreadRow>, Vec<ExcludedThread>)> {
        // With exclusions the SQL limit cannot be the caller's: excluded rows are dropped
        // after the query.
        let sql_limit = if p.exclude.is_empty() {
            limit
        } else {
            SCAN_LIMIT
        };
        let now = self.now();
        let age_cutoff = now - i64::from(p.max_age_days) * 86_400;
        let idle_cutoff = if p.force {
            i64::MAX
        } else {
            now - i64::from(p.min_idle_hours) * 3600
        };
        let placeholders = vec!["?"; p.sources.len()].join(",");
        let sql = format!(
            "SELECT {THREAD_COLS} FROM threads t
             WHERE t.memory_mode = 'enabled' AND t.is_subagent = 0 AND t.is_ephemeral = 0
               AND t.source IN ({placeholders})
               AND t.updated_at >= ? AND t.updated_at <= ?
               AND NOT EXISTS (SELECT 1 FROM stage1_outputs o WHERE o.thread_id = t.id AND o.source_updated_at >= t.updated_at)
               AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.kind = '{JOB_KIND_STAGE1}' AND j.job_key = t.id
                               AND j.last_success_watermark IS NOT NULL AND j.last_success_watermark >= t.updated_at)
             ORDER BY t.updated_at DESC, t.id ASC LIMIT ?"
        );
        let mut args: Vec<rusqlite::types::Value> =
            p.sources.iter().map(|s| s.clone().into()).collect();
        args.push(age_cutoff.into());
        args.push(idle_cutoff.into());
        args.push((sql_limit.min(i64::MAX as usize) as i64).into());
        let c = self.conn();
        let mut st = c.prepare(&sql).map_err(db_err)?;
        let rows = collect_rows(&mut st, rusqlite::params_from_iter(args), thread_from_row)?;
        let (mut eligible, mut excluded) = (Vec::new(), Vec::new());
        for t in rows {
            match t.cwd.as_deref().and_then(|c| p.exclude.matched(c)) {
                Some(pattern) => excluded.push(ExcludedThread {
                    id: t.id.clone(),
                    source: t.source.clone(),
                    cwd: t.cwd.clone().unwrap_or_default(),
                    pattern: pattern.to_string(),
                }),
                None if eligible.len() < limit => eligible.push(t),
                None => {}
            }
        }
        Ok((eligible, excluded))
    }

    /// Claim up to `p.max_claimed` eligible jobs (Codex: `claim_stage1_jobs_for_startup`).
    /// Each claim is its own `BEGIN IMMEDIATE` transaction, so concurrent processes
    /// interleave safely and never hold the same thread.
    pub fn claim_stage1_jobs(&self, p: &ClaimParams) -> Result<Vec<Stage1Claim>> {
        if p.max_claimed == 0 {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for thread in self.eligible_threads(p, SCAN_LIMIT)? {
            if out.len() >= p.max_claimed {
                break;
            }
            if let ClaimOutcome::Claimed { ownership_token } =
                self.try_claim_stage1(&thread.id, thread.updated_at, p)?
            {
                let source_updated_at = thread.updated_at;
                out.push(Stage1Claim {
                    thread,
                    ownership_token,
                    source_updated_at,
                });
            }
        }
        Ok(out)
    }

    /// Try to claim the job of `thread_id` at watermark `source_updated_at` (Codex:
    /// `try_claim_stage1_job`). See the module doc for the rules.
    pub fn try_claim_stage1(
        &self,
        thread_id: &str,
        source_updated_at: i64,
        p: &ClaimParams,
    ) -> Result<ClaimOutcome> {
        let now = self.now();
        let token = uuid::Uuid::new_v4().to_string();
        let mut c = self.conn();
        let tx = c
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db_err)?;
        let stored: Option<i64> = tx
            .query_row(
                "SELECT source_updated_at FROM stage1_outputs WHERE thread_id = ?1",
                [thread_id],
                |r| r.get(0),
            )
            .optional()
            .map_err(db_err)?;
        let last_ok: Option<Option<i64>> = tx
            .query_row(
                "SELECT last_success_watermark FROM jobs WHERE kind = ?1 AND job_key = ?2",
                params![JOB_KIND_STAGE1, thread_id],
                |r| r.get(0),
            )
            .optional()
            .map_err(db_err)?;
        if stored.is_some_and(|s| s >= source_updated_at)
            || last_ok.flatten().is_some_and(|w| w >= source_updated_at)
        {
            tx.commit().map_err(db_err)?;
            return Ok(ClaimOutcome::SkippedUpToDate);
        }
        let n = tx
            .execute(
                "INSERT INTO jobs (kind, job_key, status, worker_id, ownership_token, started_at, finished_at,
                                   lease_until, retry_at, retry_remaining, last_error, input_watermark, last_success_watermark)
                 SELECT :kind, :key, 'running', :worker, :token, :now, NULL, :lease, NULL, :retries, NULL, :wm, NULL
                 WHERE (SELECT COUNT(*) FROM jobs WHERE kind = :kind AND status = 'running' AND lease_until > :now) < :max_running
                 ON CONFLICT(kind, job_key) DO UPDATE SET
                   status = 'running', worker_id = :worker, ownership_token = :token, started_at = :now,
                   finished_at = NULL, lease_until = :lease, retry_at = NULL, last_error = NULL,
                   retry_remaining = CASE WHEN :force OR :wm > COALESCE(jobs.input_watermark, -1) THEN :retries
                                          ELSE jobs.retry_remaining END,
                   input_watermark = :wm
                 WHERE (jobs.status != 'running' OR jobs.lease_until IS NULL OR jobs.lease_until <= :now)
                   AND (:force OR jobs.retry_at IS NULL OR jobs.retry_at <= :now OR :wm > COALESCE(jobs.input_watermark, -1))
                   AND (:force OR jobs.retry_remaining > 0 OR :wm > COALESCE(jobs.input_watermark, -1))
                   AND (SELECT COUNT(*) FROM jobs AS r WHERE r.kind = :kind AND r.status = 'running'
                          AND r.lease_until > :now AND r.job_key != :key) < :max_running",
                named_params! {
                    ":kind": JOB_KIND_STAGE1, ":key": thread_id, ":worker": p.worker_id, ":token": token,
                    ":now": now, ":lease": now.saturating_add(p.lease_seconds.max(0)), ":retries": DEFAULT_RETRIES,
                    ":wm": source_updated_at, ":max_running": p.max_running as i64, ":force": p.force,
                },
            )
            .map_err(db_err)?;
        if n > 0 {
            tx.commit().map_err(db_err)?;
            return Ok(ClaimOutcome::Claimed {
                ownership_token: token,
            });
        }
        let row: Option<(String, Option<i64>, Option<i64>, i64)> = tx
            .query_row(
                "SELECT status, lease_until, retry_at, retry_remaining FROM jobs WHERE kind = ?1 AND job_key = ?2",
                params![JOB_KIND_STAGE1, thread_id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()
            .map_err(db_err)?;
        tx.commit().map_err(db_err)?;
        Ok(match row {
            Some((status, lease, _, _))
                if status == "running" && lease.is_some_and(|l| l > now) =>
            {
                ClaimOutcome::SkippedRunning
            }
            Some((_, _, _, remaining)) if remaining <= 0 => ClaimOutcome::SkippedRetryExhausted,
            Some((_, _, retry_at, _)) if retry_at.is_some_and(|t| t > now) => {
                ClaimOutcome::SkippedRetryBackoff
            }
            _ => ClaimOutcome::SkippedRunning,
        })
    }

    /// Mark an owned job done and store its output, in one transaction (Codex:
    /// `mark_stage1_job_succeeded`). An output is replaced only by one of an equal or newer
    /// source version. Returns `false` (and writes nothing) when the claim is no longer
    /// ours (lease expired and reclaimed).
    pub fn mark_stage1_succeeded(
        &self,
        claim: &Stage1Claim,
        out: &Stage1OutputInput<'_>,
    ) -> Result<bool> {
        let now = self.now();
        let mut c = self.conn();
        let tx = c
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db_err)?;
        if !finish_owned(&tx, claim, now)? {
            tx.commit().map_err(db_err)?;
            return Ok(false);
        }
        tx.execute(
            "INSERT INTO stage1_outputs (thread_id, source_updated_at, raw_memory, rollout_summary, rollout_slug, generated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT(thread_id) DO UPDATE SET
               source_updated_at = excluded.source_updated_at, raw_memory = excluded.raw_memory,
               rollout_summary = excluded.rollout_summary, rollout_slug = excluded.rollout_slug,
               generated_at = excluded.generated_at
             WHERE excluded.source_updated_at >= stage1_outputs.source_updated_at",
            params![
                claim.thread.id,
                claim.source_updated_at,
                out.raw_memory,
                out.rollout_summary,
                out.rollout_slug,
                now
            ],
        )
        .map_err(db_err)?;
        enqueue_phase2(&tx, claim.source_updated_at).map_err(db_err)?;
        tx.commit().map_err(db_err)?;
        Ok(true)
    }

    /// Mark an owned job done with nothing worth keeping (Codex:
    /// `mark_stage1_job_succeeded_no_output`): any older output of the thread is deleted
    /// (and phase 2 queued so it forgets it). Returns `false` when the claim is not ours.
    pub fn mark_stage1_succeeded_no_output(&self, claim: &Stage1Claim) -> Result<bool> {
        let now = self.now();
        let mut c = self.conn();
        let tx = c
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db_err)?;
        if !finish_owned(&tx, claim, now)? {
            tx.commit().map_err(db_err)?;
            return Ok(false);
        }
        let deleted = tx
            .execute(
                "DELETE FROM stage1_outputs WHERE thread_id = ?1",
                [&claim.thread.id],
            )
            .map_err(db_err)?;
        if deleted > 0 {
            enqueue_phase2(&tx, claim.source_updated_at).map_err(db_err)?;
        }
        tx.commit().map_err(db_err)?;
        Ok(true)
    }

    /// Mark an owned job failed: lease cleared, one retry spent, retry after
    /// `retry_delay_seconds` (Codex: `mark_stage1_job_failed`). Returns `false` when the
    /// claim is not ours.
    pub fn mark_stage1_failed(
        &self,
        claim: &Stage1Claim,
        reason: &str,
        retry_delay_seconds: i64,
    ) -> Result<bool> {
        let now = self.now();
        let c = self.conn();
        let n = c
            .execute(
                "UPDATE jobs SET status = 'error', finished_at = ?1, lease_until = NULL, retry_at = ?2,
                        retry_remaining = retry_remaining - 1, last_error = ?3
                 WHERE kind = ?4 AND job_key = ?5 AND status = 'running' AND ownership_token = ?6",
                params![
                    now,
                    now.saturating_add(retry_delay_seconds.max(0)),
                    truncate(reason, 2000),
                    JOB_KIND_STAGE1,
                    claim.thread.id,
                    claim.ownership_token
                ],
            )
            .map_err(db_err)?;
        Ok(n > 0)
    }

    /// Give an owned job back unfinished without spending a retry (the run stopped: spend
    /// cap, cancellation, model unavailable). It is claimable again at once.
    pub fn release_stage1(&self, claim: &Stage1Claim, reason: &str) -> Result<bool> {
        let c = self.conn();
        let n = c
            .execute(
                "UPDATE jobs SET status = 'pending', lease_until = NULL, ownership_token = NULL, last_error = ?1
                 WHERE kind = ?2 AND job_key = ?3 AND status = 'running' AND ownership_token = ?4",
                params![truncate(reason, 2000), JOB_KIND_STAGE1, claim.thread.id, claim.ownership_token],
            )
            .map_err(db_err)?;
        Ok(n > 0)
    }

    /// Extend an owned lease to `now + lease_seconds` (long requests). `false` when lost.
    pub fn heartbeat_stage1(&self, claim: &Stage1Claim, lease_seconds: i64) -> Result<bool> {
        let now = self.now();
        let c = self.conn();
        let n = c
            .execute(
                "UPDATE jobs SET lease_until = ?1 WHERE kind = ?2 AND job_key = ?3 AND status = 'running' AND ownership_token = ?4",
                params![now + lease_seconds, JOB_KIND_STAGE1, claim.thread.id, claim.ownership_token],
            )
            .map_err(db_err)?;
        Ok(n > 0)
    }

    /// The stored output of a thread.
    pub fn stage1_output(&self, thread_id: &str) -> Result<Option<Stage1Output>> {
        let c = self.conn();
        c.query_row(
            &format!("SELECT {OUTPUT_COLS} FROM stage1_outputs WHERE thread_id = ?1"),
            [thread_id],
            output_from_row,
        )
        .optional()
        .map_err(db_err)
    }

    /// Non-empty outputs of threads with memory on, newest source first, at most `n`
    /// (input for phase 2; Codex: `list_stage1_outputs_for_global`).
    pub fn list_stage1_outputs(&self, n: usize) -> Result<Vec<Stage1Output>> {
        let c = self.conn();
        let mut st = c
            .prepare(&format!(
                "SELECT {} FROM stage1_outputs o JOIN threads t ON t.id = o.thread_id
                 WHERE t.memory_mode = 'enabled' AND (length(trim(o.raw_memory)) > 0 OR length(trim(o.rollout_summary)) > 0)
                 ORDER BY o.source_updated_at DESC, o.thread_id DESC LIMIT ?1",
                OUTPUT_COLS.split(", ").map(|c| format!("o.{c}")).collect::<Vec<_>>().join(", ")
            ))
            .map_err(db_err)?;
        collect_rows(&mut st, [n as i64], output_from_row)
    }

    /// Count a citation of each thread's memory (read path): `usage_count + 1`,
    /// `last_usage = now`. Unknown ids are ignored. Returns rows updated.
    pub fn record_output_citations(&self, thread_ids: &[&str]) -> Result<usize> {
        let now = self.now();
        let mut c = self.conn();
        let tx = c.transaction().map_err(db_err)?;
        let mut n = 0;
        for id in thread_ids {
            n += credit_usage(&tx, id, now)?;
        }
        tx.commit().map_err(db_err)?;
        Ok(n)
    }

    /// Citations found in rollout `citing`: each distinct cited id that names a stored
    /// output raises its usage count once for this `citing` rollout, ever (a session read
    /// again after it grew does not count its citations twice); ids that name no output
    /// (invalid, or forgotten) are ignored. Returns the outputs credited now.
    pub fn record_citations_once(&self, citing: &str, cited: &[String]) -> Result<usize> {
        let now = self.now();
        let mut c = self.conn();
        let tx = c.transaction().map_err(db_err)?;
        let mut n = 0;
        for id in cited.iter().filter(|id| id.as_str() != citing) {
            let known: i64 = tx
                .query_row(
                    "SELECT COUNT(*) FROM stage1_outputs WHERE thread_id = ?1",
                    [id],
                    |r| r.get(0),
                )
                .map_err(db_err)?;
            if known == 0 {
                continue;
            }
            let new = tx
                .execute(
                    "INSERT OR IGNORE INTO citations (citing, cited, cited_at) VALUES (?1, ?2, ?3)",
                    params![citing, id, now],
                )
                .map_err(db_err)?;
            if new == 1 {
                n += credit_usage(&tx, id, now)?;
            }
        }
        tx.commit().map_err(db_err)?;
        Ok(n)
    }

    /// Phase-1 jobs by state (see [`JobCounts`]).
    pub fn job_counts(&self) -> Result<JobCounts> {
        let now = self.now();
        let c = self.conn();
        c.query_row(
            "SELECT
               COALESCE(SUM(status = 'running' AND lease_until > ?1), 0),
               COALESCE(SUM(status = 'running' AND (lease_until IS NULL OR lease_until <= ?1)), 0),
               COALESCE(SUM(status = 'pending'), 0),
               COALESCE(SUM(status = 'done'), 0),
               COALESCE(SUM(status = 'error' AND retry_remaining > 0), 0),
               COALESCE(SUM(status = 'error' AND retry_remaining <= 0), 0)
             FROM jobs WHERE kind = ?2",
            params![now, JOB_KIND_STAGE1],
            |r| {
                Ok(JobCounts {
                    running: r.get(0)?,
                    stale: r.get(1)?,
                    pending: r.get(2)?,
                    done: r.get(3)?,
                    retrying: r.get(4)?,
                    exhausted: r.get(5)?,
                })
            },
        )
        .map_err(db_err)
    }

    /// The transcripts of `source` phase 1 has finished (with or without output), as
    /// (path, the source version it read: the file's mtime, unix seconds). A file changed
    /// since has a later mtime: the caller compares before treating it as extracted.
    pub fn extracted_paths(&self, source: &str) -> Result<Vec<(String, i64)>> {
        let c = self.conn();
        let mut st = c
            .prepare(
                "SELECT t.path, j.last_success_watermark
                 FROM threads t JOIN jobs j ON j.kind = ?1 AND j.job_key = t.id
                 WHERE t.source = ?2 AND j.status = 'done' AND j.last_success_watermark IS NOT NULL",
            )
            .map_err(db_err)?;
        collect_rows(&mut st, params![JOB_KIND_STAGE1, source], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
    }

    /// Threads per source: seen, with output, memory off, excluded (sub-agent/ephemeral).
    pub fn source_counts(&self) -> Result<Vec<SourceCounts>> {
        let c = self.conn();
        let mut st = c
            .prepare(
                "SELECT t.source, COUNT(*),
                        COALESCE(SUM(o.thread_id IS NOT NULL), 0),
                        COALESCE(SUM(t.memory_mode != 'enabled'), 0),
                        COALESCE(SUM(t.is_subagent != 0 OR t.is_ephemeral != 0), 0)
                 FROM threads t LEFT JOIN stage1_outputs o ON o.thread_id = t.id
                 GROUP BY t.source ORDER BY t.source",
            )
            .map_err(db_err)?;
        collect_rows(&mut st, [], |r| {
            Ok(SourceCounts {
                source: r.get(0)?,
                threads: r.get(1)?,
                with_output: r.get(2)?,
                disabled: r.get(3)?,
                excluded: r.get(4)?,
            })
        })
    }

    /// Delete every stage-1 output and every memory job (`memories reset`); threads, runs
    /// and usage (the spend history the cap needs) are kept. Returns (outputs, jobs)
    /// deleted.
    ///
    /// Errors: [`Error::Busy`] while any memory job holds a live lease (nothing deleted).
    pub fn clear_memory_data(&self) -> Result<(usize, usize)> {
        let now = self.now();
        let mut c = self.conn();
        let tx = c
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db_err)?;
        let running: i64 = tx
            .query_row(
                "SELECT COUNT(*) FROM jobs WHERE kind IN (?1, ?2) AND status = 'running' AND lease_until > ?3",
                params![JOB_KIND_STAGE1, JOB_KIND_PHASE2, now],
                |r| r.get(0),
            )
            .map_err(db_err)?;
        if running > 0 {
            return Err(Error::Busy(format!(
                "{running} memory job(s) are running; wait for them to finish (or for their lease to expire) and retry reset"
            )));
        }
        let outputs = tx
            .execute("DELETE FROM stage1_outputs", [])
            .map_err(db_err)?;
        let jobs = tx
            .execute(
                "DELETE FROM jobs WHERE kind IN (?1, ?2)",
                params![JOB_KIND_STAGE1, JOB_KIND_PHASE2],
            )
            .map_err(db_err)?;
        tx.execute(
            "UPDATE consolidation_progress SET max_thread_count = 0 WHERE singleton = 1",
            [],
        )
        .map_err(db_err)?;
        tx.commit().map_err(db_err)?;
        Ok((outputs, jobs))
    }
}

/// The fields of an output a worker supplies (the rest comes from the claim and clock).
#[derive(Debug, Clone, Copy)]
pub struct Stage1OutputInput<'a> {
    /// Markdown raw memory.
    pub raw_memory: &'a str,
    /// Rollout summary.
    pub rollout_summary: &'a str,
    /// Optional slug.
    pub rollout_slug: Option<&'a str>,
}

fn finish_owned(tx: &Transaction<'_>, claim: &Stage1Claim, now: i64) -> Result<bool> {
    let n = tx
        .execute(
            "UPDATE jobs SET status = 'done', finished_at = ?1, lease_until = NULL, last_error = NULL,
                    last_success_watermark = input_watermark
             WHERE kind = ?2 AND job_key = ?3 AND status = 'running' AND ownership_token = ?4",
            params![now, JOB_KIND_STAGE1, claim.thread.id, claim.ownership_token],
        )
        .map_err(db_err)?;
    Ok(n > 0)
}

fn truncate(s: &str, max_bytes: usize) -> &str {
    if s.len() <= max_bytes {
        return s;
    }
    let mut end = max_bytes;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::{Clock, ManualClock};

    const NOW: i64 = 1_750_000_000;

    fn store() -> (Store, Arc<ManualClock>) {
        let clock = Arc::new(ManualClock::new(NOW));
        (Store::open_in_memory(clock.clone()).unwrap(), clock)
    }

    fn thread(id: &str, updated_at: i64) -> ThreadUpsert {
        ThreadUpsert {
            id: id.into(),
            source: "codex".into(),
            path: format!("/s/{id}.jsonl"),
            cwd: None,
            title: None,
            created_at: None,
            updated_at,
            is_subagent: false,
            is_ephemeral: false,
            content_hash: None,
        }
    }

    fn params(max: usize) -> ClaimParams {
        ClaimParams {
            sources: vec!["codex".into(), "claude".into()],
            max_claimed: max,
            max_running: max,
            max_age_days: 10,
            min_idle_hours: 6,
            lease_seconds: LEASE_SECONDS,
            worker_id: "w".into(),
            force: false,
            exclude: Default::default(),
        }
    }

    const OUT: Stage1OutputInput<'static> = Stage1OutputInput {
        raw_memory: "mem",
        rollout_summary: "sum",
        rollout_slug: Some("slug"),
    };

    /// A thread run in an excluded project is neither eligible nor claimable (not even
    /// forced), and is listed with the pattern that excluded it; the others are unaffected.
    #[test]
    fn excluded_projects_are_never_eligible_and_say_why() {
        let (s, _) = store();
        let mut a = thread("secret", NOW - 7 * 3600);
        a.cwd = Some("/work/clients/acme/api".into());
        let mut b = thread("public", NOW - 8 * 3600);
        b.cwd = Some("/work/oss".into());
        s.upsert_threads(&[a, b, thread("nocwd", NOW - 9 * 3600)], true)
            .unwrap();
        let mut p = params(10);
        p.force = true;
        p.exclude =
            codex_free_core::config::exclude::ExcludePaths::new(&["/work/clients/*".into()])
                .unwrap();
        let ids = |v: Vec<ThreadRow>| v.into_iter().map(|t| t.id).collect::<Vec<_>>();
        assert_eq!(
            ids(s.eligible_threads(&p, 100).unwrap()),
            ["public", "nocwd"]
        );
        assert_eq!(ids(s.eligible_threads(&p, 1).unwrap()), ["public"]);
        let claimed: Vec<_> = s
            .claim_stage1_jobs(&p)
            .unwrap()
            .into_iter()
            .map(|c| c.thread.id)
            .collect();
        assert_eq!(claimed, ["public", "nocwd"]);
        let ex = s.excluded_threads(&p).unwrap();
        assert_eq!(ex.len(), 1);
        assert_eq!(
            (
                ex[0].id.as_str(),
                ex[0].pattern.as_str(),
                ex[0].cwd.as_str()
            ),
            ("secret", "/work/clients/*", "/work/clients/acme/api")
        );
        assert!(s.excluded_threads(&params(10)).unwrap().is_empty());
    }

    #[test]
    fn eligibility_window_idle_age_source_flags_mode() {
        let (s, _) = store();
        let mut sub = thread("sub", NOW - 7 * 3600);
        sub.is_subagent = true;
        let mut pi = thread("pi", NOW - 7 * 3600);
        pi.source = "pi".into();
        s.upsert_threads(
            &[
                thread("ok", NOW - 7 * 3600),
                thread("busy", NOW - 3600),
                thread("old", NOW - 11 * 86_400),
                sub,
                pi,
                thread("off", NOW - 8 * 3600),
            ],
            true,
        )
        .unwrap();
        s.set_thread_memory("off", false).unwrap();
        let ids: Vec<_> = s
            .eligible_threads(&params(10), 100)
            .unwrap()
            .into_iter()
            .map(|t| t.id)
            .collect();
        assert_eq!(ids, ["ok"]);
        let mut force = params(10);
        force.force = true;
        let ids: Vec<_> = s
            .eligible_threads(&force, 100)
            .unwrap()
            .into_iter()
            .map(|t| t.id)
            .collect();
        assert_eq!(ids, ["busy", "ok"], "force skips the idle wait only");
    }

    #[test]
    fn extracted_paths_are_the_done_jobs_with_the_version_they_read() {
        let (s, _) = store();
        s.upsert_threads(
            &[thread("a", NOW - 7 * 3600), thread("b", NOW - 8 * 3600)],
            true,
        )
        .unwrap();
        assert!(s.extracted_paths("codex").unwrap().is_empty());
        let claims = s.claim_stage1_jobs(&params(2)).unwrap();
        assert_eq!(claims.len(), 2);
        assert!(s.mark_stage1_succeeded(&claims[0], &OUT).unwrap());
        let done = s.extracted_paths("codex").unwrap();
        assert_eq!(
            done,
            [(claims[0].thread.path.clone(), claims[0].source_updated_at)]
        );
        assert!(s.extracted_paths("mcp").unwrap().is_empty());
    }

    #[test]
    fn new_threads_disabled_when_generation_off_existing_keep_mode() {
        let (s, _) = store();
        s.upsert_threads(&[thread("a", NOW - 7 * 3600)], true)
            .unwrap();
        s.upsert_threads(
            &[thread("a", NOW - 7 * 3600), thread("b", NOW - 7 * 3600)],
            false,
        )
        .unwrap();
        assert!(s.thread("a").unwrap().unwrap().memory_enabled);
        assert!(!s.thread("b").unwrap().unwrap().memory_enabled);
    }

    #[test]
    fn claim_then_success_is_never_reclaimed_until_source_advances() {
        let (s, _) = store();
        s.upsert_threads(&[thread("a", NOW - 7 * 3600)], true)
            .unwrap();
        let claims = s.claim_stage1_jobs(&params(2)).unwrap();
        assert_eq!(claims.len(), 1);
        assert_eq!(
            s.try_claim_stage1("a", NOW - 7 * 3600, &params(2)).unwrap(),
            ClaimOutcome::SkippedRunning
        );
        assert!(s.mark_stage1_succeeded(&claims[0], &OUT).unwrap());
        assert_eq!(s.stage1_output("a").unwrap().unwrap().raw_memory, "mem");
        assert!(
            s.claim_stage1_jobs(&params(2)).unwrap().is_empty(),
            "watermark: unchanged rollout not re-extracted"
        );
        assert_eq!(
            s.try_claim_stage1("a", NOW - 7 * 3600, &params(2)).unwrap(),
            ClaimOutcome::SkippedUpToDate
        );
        // Source advances: eligible again.
        s.upsert_threads(&[thread("a", NOW - 6 * 3600 - 1)], true)
            .unwrap();
        assert_eq!(s.claim_stage1_jobs(&params(2)).unwrap().len(), 1);
    }

    #[test]
    fn no_output_success_deletes_older_output_and_sets_watermark() {
        let (s, _) = store();
        s.upsert_threads(&[thread("a", NOW - 8 * 3600)], true)
            .unwrap();
        let c = s.claim_stage1_jobs(&params(1)).unwrap().remove(0);
        s.mark_stage1_succeeded(&c, &OUT).unwrap();
        s.upsert_threads(&[thread("a", NOW - 7 * 3600)], true)
            .unwrap();
        let c = s.claim_stage1_jobs(&params(1)).unwrap().remove(0);
        assert!(s.mark_stage1_succeeded_no_output(&c).unwrap());
        assert!(s.stage1_output("a").unwrap().is_none());
        assert!(
            s.claim_stage1_jobs(&params(1)).unwrap().is_empty(),
            "no-output success also counts as up to date"
        );
    }

    #[test]
    fn failure_backoff_retries_exhaust_and_reset_on_new_source() {
        let (s, clock) = store();
        s.upsert_threads(&[thread("a", NOW - 7 * 3600)], true)
            .unwrap();
        for attempt in 0..DEFAULT_RETRIES {
            let c = s.claim_stage1_jobs(&params(1)).unwrap();
            assert_eq!(c.len(), 1, "attempt {attempt}");
            assert!(
                s.mark_stage1_failed(&c[0], "boom", RETRY_DELAY_SECONDS)
                    .unwrap()
            );
            assert_eq!(
                s.try_claim_stage1("a", NOW - 7 * 3600, &params(1)).unwrap(),
                if attempt + 1 < DEFAULT_RETRIES {
                    ClaimOutcome::SkippedRetryBackoff
                } else {
                    ClaimOutcome::SkippedRetryExhausted
                }
            );
            clock.advance(RETRY_DELAY_SECONDS);
        }
        assert!(
            s.claim_stage1_jobs(&params(1)).unwrap().is_empty(),
            "3 retries spent"
        );
        assert_eq!(s.job_counts().unwrap().exhausted, 1);
        let mut force = params(1);
        force.force = true;
        assert_eq!(
            s.claim_stage1_jobs(&force).unwrap().len(),
            1,
            "force overrides exhausted retries"
        );
        let (s, clock) = store();
        s.upsert_threads(&[thread("a", NOW - 7 * 3600)], true)
            .unwrap();
        for _ in 0..DEFAULT_RETRIES {
            let c = s.claim_stage1_jobs(&params(1)).unwrap();
            s.mark_stage1_failed(&c[0], "boom", RETRY_DELAY_SECONDS)
                .unwrap();
            clock.advance(RETRY_DELAY_SECONDS);
        }
        s.upsert_threads(&[thread("a", clock.now() - 7 * 3600)], true)
            .unwrap();
        assert_eq!(
            s.claim_stage1_jobs(&params(1)).unwrap().len(),
            1,
            "a newer source resets retries and backoff"
        );
    }

    #[test]
    fn expired_lease_is_reclaimed_and_old_owner_cannot_write() {
        let (s, clock) = store();
        s.upsert_threads(&[thread("a", NOW - 7 * 3600)], true)
            .unwrap();
        let old = s.claim_stage1_jobs(&params(1)).unwrap().remove(0);
        clock.advance(LEASE_SECONDS - 1);
        assert!(
            s.claim_stage1_jobs(&params(1)).unwrap().is_empty(),
            "lease still live"
        );
        assert_eq!(s.job_counts().unwrap().running, 1);
        clock.advance(1);
        assert_eq!(s.job_counts().unwrap().stale, 1);
        let new = s.claim_stage1_jobs(&params(1)).unwrap().remove(0);
        assert_ne!(old.ownership_token, new.ownership_token);
        assert!(
            !s.mark_stage1_succeeded(&old, &OUT).unwrap(),
            "the crashed worker's late result is discarded"
        );
        assert!(s.stage1_output("a").unwrap().is_none());
        assert!(s.mark_stage1_succeeded(&new, &OUT).unwrap());
    }

    #[test]
    fn running_cap_bounds_concurrency_and_release_keeps_retries() {
        let (s, _) = store();
        let ts: Vec<_> = (0..5)
            .map(|i| thread(&format!("t{i}"), NOW - 7 * 3600 - i))
            .collect();
        s.upsert_threads(&ts, true).unwrap();
        let first = s.claim_stage1_jobs(&params(2)).unwrap();
        assert_eq!(first.len(), 2);
        assert!(
            s.claim_stage1_jobs(&params(2)).unwrap().is_empty(),
            "cap of 2 live leases reached"
        );
        assert!(s.release_stage1(&first[0], "stopped").unwrap());
        let again = s.claim_stage1_jobs(&params(2)).unwrap();
        assert_eq!(again.len(), 1);
        assert_eq!(
            again[0].thread.id, first[0].thread.id,
            "released job is claimable at once"
        );
    }

    #[test]
    fn thread_off_deletes_output_and_reset_refuses_while_running() {
        let (s, _) = store();
        s.upsert_threads(
            &[thread("a", NOW - 7 * 3600), thread("b", NOW - 7 * 3600)],
            true,
        )
        .unwrap();
        let cs = s.claim_stage1_jobs(&params(2)).unwrap();
        s.mark_stage1_succeeded(&cs[0], &OUT).unwrap();
        let e = s.clear_memory_data().unwrap_err();
        assert_eq!(e.code(), "busy");
        assert!(
            s.stage1_output(&cs[0].thread.id).unwrap().is_some(),
            "refused reset deleted nothing"
        );
        s.mark_stage1_failed(&cs[1], "x", 10).unwrap();
        s.set_thread_memory(&cs[0].thread.id, false).unwrap();
        assert!(s.stage1_output(&cs[0].thread.id).unwrap().is_none());
        assert!(s.set_thread_memory("nope", true).is_err());
        let (outputs, jobs) = s.clear_memory_data().unwrap();
        assert_eq!(outputs, 0);
        assert!(jobs >= 1);
        assert_eq!(s.job_counts().unwrap(), JobCounts::default());
    }

    #[test]
    fn source_counts_and_citations() {
        let (s, _) = store();
        let mut p = thread("p", NOW - 7 * 3600);
        p.source = "pi".into();
        p.is_ephemeral = true;
        s.upsert_threads(&[thread("a", NOW - 7 * 3600), p], true)
            .unwrap();
        let c = s.claim_stage1_jobs(&params(2)).unwrap().remove(0);
        s.mark_stage1_succeeded(&c, &OUT).unwrap();
        assert_eq!(s.record_output_citations(&["a", "zzz"]).unwrap(), 1);
        assert_eq!(s.stage1_output("a").unwrap().unwrap().usage_count, 1);
        let counts = s.source_counts().unwrap();
        assert_eq!(counts.len(), 2);
        assert_eq!(
            (counts[0].source.as_str(), counts[0].with_output),
            ("codex", 1)
        );
        assert_eq!((counts[1].source.as_str(), counts[1].excluded), ("pi", 1));
        assert_eq!(s.list_stage1_outputs(10).unwrap().len(), 1);
    }
}
