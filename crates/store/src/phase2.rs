//! Phase-2 queries over `state.sqlite`: the global consolidation job
//! (`memory_consolidate_global`, key `global`) in the shared `jobs` table, the stage-1
//! outputs phase 2 selects from, and usage counts: what the pipeline's `Phase2Store` seam
//! (`codex_free_pipeline::phase2::db`) runs on.
//!
//! Claim rules (Codex's phase-2 job): a live lease is never taken over; a success less
//! than [`COOLDOWN_SECS`] ago, or a failure whose retry time has not come, is skipped
//! unless forced; after [`DEFAULT_RETRIES`] failed attempts on the same input the job stays
//! stopped ([`Claim::Exhausted`]) until phase 1 raises its input watermark or it is forced,
//! because each attempt is paid and retrying unchanged input cannot succeed. Phase 1 raises the job's `input_watermark` when it stores or removes an
//! output; success records the watermark seen at claim time.
//!
//! Invariant: the claim is one `BEGIN IMMEDIATE` transaction; only the holder of the
//! current `ownership_token` changes the row afterwards.

use std::path::Path;

use rusqlite::{OptionalExtension, TransactionBehavior, params};

use super::stage1::{DEFAULT_RETRIES, JOB_KIND_PHASE2, PHASE2_JOB_KEY};
use super::{Store, collect_rows, db_err};
use codex_free_core::Result;

/// No new run within this long after a clean success unless forced, seconds (Codex: 6 h).
pub const COOLDOWN_SECS: i64 = 6 * 3600;
/// First retry delay after a failure, seconds; doubles per consecutive failure.
pub const RETRY_BASE_SECS: i64 = 300;
/// Longest retry delay, seconds (6 h).
pub const RETRY_MAX_SECS: i64 = 6 * 3600;

/// Retry delay after `consecutive_failures` (>= 1) failures: 5 min, 10 min, 20 min, ... at
/// most 6 h.
pub fn retry_delay(consecutive_failures: u32) -> i64 {
    let shift = consecutive_failures.saturating_sub(1).min(16);
    (RETRY_BASE_SECS << shift).min(RETRY_MAX_SECS)
}

/// The result of trying to claim the global job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// Claimed; the token must accompany heartbeat/succeed/fail.
    Claimed {
        /// Ownership token.
        token: String,
        /// The job's input watermark when claimed (recorded as the last success's).
        watermark: i64,
    },
    /// Another worker holds a live lease.
    Running,
    /// A clean success happened less than [`COOLDOWN_SECS`] ago (and not forced).
    Cooldown {
        /// When the cooldown ends, unix seconds.
        until: i64,
    },
    /// The last run failed and its retry time has not come (and not forced).
    Backoff {
        /// When a retry is allowed, unix seconds.
        until: i64,
    },
    /// Every retry failed and the input has not changed since (and not forced).
    Exhausted {
        /// Failed attempts on this input.
        attempts: i64,
        /// The last failure's reason.
        last_error: Option<String>,
    },
}

/// One stage-1 output as phase 2 sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawMemory {
    /// The rollout (thread) id; cited back in `<rollout_ids>`.
    pub thread_id: String,
    /// When the rollout was last updated (unix seconds).
    pub source_updated_at: i64,
    /// The extracted raw memory (markdown).
    pub raw_memory: String,
    /// The rollout summary (markdown).
    pub rollout_summary: String,
    /// Short slug of the rollout's topic, if phase 1 gave one.
    pub rollout_slug: Option<String>,
    /// Times a later session cited or read this memory.
    pub usage_count: i64,
    /// Last citation/read (unix seconds), `None` when never used.
    pub last_usage: Option<i64>,
}

/// (status, lease_until, finished_at, retry_at, last_error, input_watermark,
/// retry_remaining, attempt_watermark) of the job row.
type JobState = (
    String,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<String>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
);

impl Store {
    /// Claim the global phase-2 job for `lease_secs` (see the module doc for the rules).
    ///
    /// Errors: [`codex_free_core::Error::Store`] on database failure.
    pub fn claim_phase2(&self, worker_id: &str, lease_secs: i64, force: bool) -> Result<Claim> {
        let now = self.now();
        let mut c = self.conn();
        let tx = c
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db_err)?;
        let row: Option<JobState> = tx
            .query_row(
                "SELECT status, lease_until, finished_at, retry_at, last_error, input_watermark, retry_remaining, attempt_watermark FROM jobs WHERE kind = ?1 AND job_key = ?2",
                params![JOB_KIND_PHASE2, PHASE2_JOB_KEY],
                |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                        r.get(6)?,
                        r.get(7)?,
                    ))
                },
            )
            .optional()
            .map_err(db_err)?;
        let new_input = row
            .as_ref()
            .is_none_or(|r| r.5.unwrap_or(0) > r.7.unwrap_or(-1));
        if let Some((status, lease_until, finished_at, retry_at, last_error, _, remaining, _)) =
            &row
        {
            if status == "running" && lease_until.is_some_and(|l| l > now) {
                return Ok(Claim::Running);
            }
            if !force && !new_input && status == "error" && remaining.is_some_and(|r| r <= 0) {
                return Ok(Claim::Exhausted {
                    attempts: DEFAULT_RETRIES - remaining.unwrap_or(0),
                    last_error: last_error.clone(),
                });
            }
            if !force {
                if let Some(f) = finished_at
                    && last_error.is_none()
                    && f + COOLDOWN_SECS > now
                {
                    return Ok(Claim::Cooldown {
                        until: f + COOLDOWN_SECS,
                    });
                }
                if status == "error"
                    && let Some(r) = retry_at
                    && *r > now
                {
                    return Ok(Claim::Backoff { until: *r });
                }
            }
        }
        let watermark = row.as_ref().and_then(|r| r.5).unwrap_or(0);
        let token = uuid::Uuid::new_v4().to_string();
        // New input gives the job its retries back (a forced run is one manual attempt).
        tx.execute(
            "INSERT INTO jobs (kind, job_key, status, worker_id, ownership_token, started_at, lease_until, retry_remaining, input_watermark, attempt_watermark)
             VALUES (?1, ?2, 'running', ?3, ?4, ?5, ?6, ?7, 0, 0)
             ON CONFLICT(kind, job_key) DO UPDATE SET status = 'running', worker_id = excluded.worker_id,
               ownership_token = excluded.ownership_token, started_at = excluded.started_at, lease_until = excluded.lease_until,
               retry_remaining = CASE WHEN ?8 THEN excluded.retry_remaining ELSE jobs.retry_remaining END,
               attempt_watermark = COALESCE(jobs.input_watermark, 0)",
            params![JOB_KIND_PHASE2, PHASE2_JOB_KEY, worker_id, token, now, now + lease_secs, DEFAULT_RETRIES, new_input],
        )
        .map_err(db_err)?;
        tx.commit().map_err(db_err)?;
        Ok(Claim::Claimed { token, watermark })
    }

    /// Extend the phase-2 lease; `false` when `token` no longer owns the running job.
    pub fn heartbeat_phase2(&self, token: &str, lease_secs: i64) -> Result<bool> {
        let now = self.now();
        let c = self.conn();
        let n = c
            .execute(
                "UPDATE jobs SET lease_until = ?1 WHERE kind = ?2 AND job_key = ?3 AND ownership_token = ?4 AND status = 'running'",
                params![now + lease_secs, JOB_KIND_PHASE2, PHASE2_JOB_KEY, token],
            )
            .map_err(db_err)?;
        Ok(n == 1)
    }

    /// Mark the phase-2 job done: cooldown starts, `last_success_watermark = watermark`,
    /// `selected_for_phase2` set for exactly `selected`. One transaction; `false` (nothing
    /// changed) when `token` no longer owns the job.
    pub fn succeed_phase2(&self, token: &str, watermark: i64, selected: &[String]) -> Result<bool> {
        let now = self.now();
        let mut c = self.conn();
        let tx = c
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db_err)?;
        let n = tx
            .execute(
                "UPDATE jobs SET finished_at = ?1, lease_until = NULL, retry_at = NULL, last_error = NULL,
                   retry_remaining = ?2, ownership_token = NULL,
                   last_success_watermark = MAX(COALESCE(last_success_watermark, 0), ?3),
                   status = CASE WHEN COALESCE(input_watermark, 0) > ?3 THEN 'pending' ELSE 'done' END
                 WHERE kind = ?4 AND job_key = ?5 AND ownership_token = ?6 AND status = 'running'",
                params![now, DEFAULT_RETRIES, watermark, JOB_KIND_PHASE2, PHASE2_JOB_KEY, token],
            )
            .map_err(db_err)?;
        if n != 1 {
            return Ok(false);
        }
        tx.execute(
            "UPDATE stage1_outputs SET selected_for_phase2 = 0 WHERE selected_for_phase2 != 0",
            [],
        )
        .map_err(db_err)?;
        for id in selected {
            tx.execute(
                "UPDATE stage1_outputs SET selected_for_phase2 = 1 WHERE thread_id = ?1",
                [id],
            )
            .map_err(db_err)?;
        }
        let distinct = selected
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len() as i64;
        tx.execute(
            "UPDATE consolidation_progress SET max_thread_count = MAX(max_thread_count, ?1) WHERE singleton = 1",
            [distinct],
        )
        .map_err(db_err)?;
        tx.commit().map_err(db_err)?;
        Ok(true)
    }

    /// The largest number of distinct threads a successful consolidation took in (upstream's
    /// `max_consolidated_thread_count`): survives pruning of outputs, zeroed by
    /// [`Store::clear_memory_data`].
    pub fn max_consolidated_thread_count(&self) -> Result<u32> {
        let n: i64 = self
            .conn()
            .query_row(
                "SELECT max_thread_count FROM consolidation_progress WHERE singleton = 1",
                [],
                |r| r.get(0),
            )
            .map_err(db_err)?;
        Ok(u32::try_from(n.max(0)).unwrap_or(u32::MAX))
    }

    /// Mark the phase-2 job failed with `reason`; the retry waits [`retry_delay`] of the
    /// consecutive failures. `false` when `token` no longer owns the job.
    pub fn fail_phase2(&self, token: &str, reason: &str) -> Result<bool> {
        let now = self.now();
        let c = self.conn();
        let remaining: Option<i64> = c
            .query_row(
                "SELECT retry_remaining FROM jobs WHERE kind = ?1 AND job_key = ?2 AND ownership_token = ?3",
                params![JOB_KIND_PHASE2, PHASE2_JOB_KEY, token],
                |r| r.get(0),
            )
            .optional()
            .map_err(db_err)?;
        let Some(remaining) = remaining else {
            return Ok(false);
        };
        let failures = (DEFAULT_RETRIES - remaining).max(0) as u32 + 1;
        let n = c
            .execute(
                "UPDATE jobs SET status = 'error', finished_at = ?1, lease_until = NULL, retry_at = ?2, last_error = ?3,
                   retry_remaining = MAX(retry_remaining - 1, -1000), ownership_token = NULL
                 WHERE kind = ?4 AND job_key = ?5 AND ownership_token = ?6",
                params![now, now + retry_delay(failures), reason, JOB_KIND_PHASE2, PHASE2_JOB_KEY, token],
            )
            .map_err(db_err)?;
        Ok(n == 1)
    }

    /// True while the phase-2 job holds a live lease.
    pub fn phase2_running(&self) -> Result<bool> {
        let now = self.now();
        let c = self.conn();
        let n: i64 = c
            .query_row(
                "SELECT COUNT(*) FROM jobs WHERE kind = ?1 AND job_key = ?2 AND status = 'running' AND lease_until > ?3",
                params![JOB_KIND_PHASE2, PHASE2_JOB_KEY, now],
                |r| r.get(0),
            )
            .map_err(db_err)?;
        Ok(n > 0)
    }

    /// The phase-2 job's status, last error and retry time (status displays).
    pub fn phase2_job(&self) -> Result<Option<Phase2JobRow>> {
        let c = self.conn();
        c.query_row(
            "SELECT status, finished_at, retry_at, last_error, lease_until, retry_remaining, worker_id FROM jobs WHERE kind = ?1 AND job_key = ?2",
            params![JOB_KIND_PHASE2, PHASE2_JOB_KEY],
            |r| {
                Ok(Phase2JobRow {
                    status: r.get(0)?,
                    finished_at: r.get(1)?,
                    retry_at: r.get(2)?,
                    last_error: r.get(3)?,
                    lease_until: r.get(4)?,
                    retries_left: r.get::<_, Option<i64>>(5)?.unwrap_or(DEFAULT_RETRIES).max(0),
                    worker_id: r.get(6)?,
                })
            },
        )
        .optional()
        .map_err(db_err)
    }

    /// Every non-empty stage-1 output of a thread whose memory is on, as phase-2 input.
    pub fn phase2_candidates(&self) -> Result<Vec<RawMemory>> {
        let c = self.conn();
        let mut st = c
            .prepare(
                "SELECT o.thread_id, o.source_updated_at, o.raw_memory, o.rollout_summary, o.rollout_slug, o.usage_count, o.last_usage
                 FROM stage1_outputs o JOIN threads t ON t.id = o.thread_id
                 WHERE t.memory_mode = 'enabled' AND (length(trim(o.raw_memory)) > 0 OR length(trim(o.rollout_summary)) > 0)",
            )
            .map_err(db_err)?;
        collect_rows(&mut st, [], |r| {
            Ok(RawMemory {
                thread_id: r.get(0)?,
                source_updated_at: r.get(1)?,
                raw_memory: r.get(2)?,
                rollout_summary: r.get(3)?,
                rollout_slug: r.get(4)?,
                usage_count: r.get(5)?,
                last_usage: r.get(6)?,
            })
        })
    }
}

/// The phase-2 job row, for status displays.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Phase2JobRow {
    /// `pending`, `running`, `done` or `error`.
    pub status: String,
    /// Last finish (success or failure), unix seconds.
    pub finished_at: Option<i64>,
    /// Earliest retry after a failure, unix seconds.
    pub retry_at: Option<i64>,
    /// Reason of the last failure (cleared on success).
    pub last_error: Option<String>,
    /// End of the current lease, unix seconds.
    pub lease_until: Option<i64>,
    /// Failed attempts still allowed on the current input (0 = stopped until new input).
    pub retries_left: i64,
    /// The worker that claimed it last (`pid@host`).
    pub worker_id: Option<String>,
}

/// Raise the usage counts of `ids` in `<home>/state.sqlite`; a no-op (0) when the database
/// does not exist yet (nothing to credit).
pub fn record_usage_in_home(home: &Path, ids: &[String]) -> Result<usize> {
    if ids.is_empty() || !home.join(super::DB_FILE).exists() {
        return Ok(0);
    }
    let store = Store::open_in_home(home)?;
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    store.record_output_citations(&refs)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::ManualClock;

    const NOW: i64 = 1_750_000_000;

    /// Upstream `memory_readiness.rs` / pi-codex-memory `test/v2.test.mjs`: a success over 20
    /// distinct threads records 20; a later success over none keeps 20 (the count is the
    /// largest, so pruning outputs does not lower it); a reset zeroes it. Duplicated ids
    /// count once.
    #[test]
    fn consolidated_thread_count_is_the_max_and_reset_clears_it() {
        let clock = Arc::new(ManualClock::new(NOW));
        let s = Store::open_in_memory(clock.clone()).unwrap();
        let claim = |force: bool| {
            {
                let mut c = s.conn();
                let tx = c.transaction().unwrap();
                crate::stage1::enqueue_phase2(&tx, NOW).unwrap();
                tx.commit().unwrap();
            }
            match s.claim_phase2("w", 3600, force).unwrap() {
                Claim::Claimed { token, watermark } => (token, watermark),
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(s.max_consolidated_thread_count().unwrap(), 0);
        let (t, w) = claim(false);
        let mut ids: Vec<String> = (0..20).map(|i| format!("thread-{i}")).collect();
        ids.push("thread-0".into());
        assert!(s.succeed_phase2(&t, w, &ids).unwrap());
        assert_eq!(s.max_consolidated_thread_count().unwrap(), 20);
        let (t, w) = claim(true);
        assert!(s.succeed_phase2(&t, w, &[]).unwrap());
        assert_eq!(s.max_consolidated_thread_count().unwrap(), 20);
        s.clear_memory_data().unwrap();
        assert_eq!(s.max_consolidated_thread_count().unwrap(), 0);
    }

    #[test]
    fn failed_retries_stop_until_new_input_or_force() {
        let clock = Arc::new(ManualClock::new(NOW));
        let s = Store::open_in_memory(clock.clone()).unwrap();
        {
            let mut c = s.conn();
            let tx = c.transaction().unwrap();
            crate::stage1::enqueue_phase2(&tx, 10).unwrap();
            tx.commit().unwrap();
        }
        // Six backoff expiries: only DEFAULT_RETRIES attempts are claimed (each is paid).
        let mut attempts = 0;
        for _ in 0..6 {
            match s.claim_phase2("w", 3600, false).unwrap() {
                Claim::Claimed { token, .. } => {
                    attempts += 1;
                    assert!(s.fail_phase2(&token, "provider said 400").unwrap());
                }
                Claim::Exhausted {
                    attempts: n,
                    last_error,
                } => {
                    assert_eq!(n, DEFAULT_RETRIES);
                    assert_eq!(last_error.as_deref(), Some("provider said 400"));
                }
                other => panic!("{other:?}"),
            }
            clock.advance(RETRY_MAX_SECS + 1);
        }
        assert_eq!(attempts, DEFAULT_RETRIES);
        // Force still runs, once, and does not give the unchanged input its retries back
        // for the scheduler.
        let Claim::Claimed { token, .. } = s.claim_phase2("w", 3600, true).unwrap() else {
            panic!()
        };
        assert!(s.fail_phase2(&token, "again").unwrap());
        clock.advance(RETRY_MAX_SECS + 1);
        assert!(matches!(
            s.claim_phase2("w", 3600, false).unwrap(),
            Claim::Exhausted { .. }
        ));
        // New input from phase 1: the job is claimable again.
        {
            let mut c = s.conn();
            let tx = c.transaction().unwrap();
            crate::stage1::enqueue_phase2(&tx, 11).unwrap();
            tx.commit().unwrap();
        }
        assert!(matches!(
            s.claim_phase2("w", 3600, false).unwrap(),
            Claim::Claimed { .. }
        ));
    }
}
