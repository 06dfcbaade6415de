//! Runs and per-request usage: what each pipeline run claimed and produced, and every
//! model request's tokens, duration, outcome and cost, so every run's spend can be
//! audited. Month spend for the cap is summed from here.
//!
//! Invariant: a cost is stored as NULL when the model's price is unknown, never as 0;
//! sums report how many requests were unpriced next to the dollars.

use rusqlite::{OptionalExtension, params};
use serde::Serialize;

use super::{Store, collect_rows, db_err};
use codex_free_core::Result;

/// Token counts of one model request, or a sum of them, in the convention every usage table
/// shares: `input_tokens` counts cache reads and cache writes, `output_tokens` counts
/// reasoning (so `input + output` is what the provider billed, whatever its own split).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct TokenCounts {
    /// Input tokens, cache reads and cache writes included.
    pub input_tokens: i64,
    /// Of `input_tokens`, read from the provider's prompt cache.
    pub cached_input_tokens: i64,
    /// Of `input_tokens`, written to the prompt cache (Anthropic, Claude Code).
    pub cache_write_tokens: i64,
    /// Output tokens, reasoning included.
    pub output_tokens: i64,
    /// Of `output_tokens`, reasoning.
    pub reasoning_tokens: i64,
}

impl TokenCounts {
    /// The five columns of a usage table, in the order [`Self::from_row`] reads them.
    pub const COLS: &'static str =
        "input_tokens, cached_input_tokens, cache_write_tokens, output_tokens, reasoning_tokens";

    /// Read the five [`Self::COLS`] columns starting at column `first` of `r`.
    pub(crate) fn from_row(r: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<Self> {
        Ok(TokenCounts {
            input_tokens: r.get(first)?,
            cached_input_tokens: r.get(first + 1)?,
            cache_write_tokens: r.get(first + 2)?,
            output_tokens: r.get(first + 3)?,
            reasoning_tokens: r.get(first + 4)?,
        })
    }

    /// Input + output tokens.
    pub fn total(&self) -> i64 {
        self.input_tokens + self.output_tokens
    }

    /// Add `o` field by field.
    pub fn add(&mut self, o: &TokenCounts) {
        self.input_tokens += o.input_tokens;
        self.cached_input_tokens += o.cached_input_tokens;
        self.cache_write_tokens += o.cache_write_tokens;
        self.output_tokens += o.output_tokens;
        self.reasoning_tokens += o.reasoning_tokens;
    }
}

/// One model request (after its transport retries).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct UsageRow {
    /// The run it belongs to.
    pub run_id: String,
    /// `phase1` or `phase2`.
    pub phase: String,
    /// 1-based number of the request within the run.
    pub request_no: i64,
    /// The rollout extracted (phase 1).
    pub thread_id: Option<String>,
    /// `provider/model-id`.
    pub model: String,
    /// HTTP attempts made (1 = no retry).
    pub attempts: i64,
    /// Its tokens (flattened into the row's JSON).
    #[serde(flatten)]
    pub tokens: TokenCounts,
    /// USD, `None` when the price is unknown.
    pub cost_usd: Option<f64>,
    /// Wall time of the request including retries, milliseconds.
    pub duration_ms: i64,
    /// `ok`, `no_output`, `invalid_output`, `failed`, `cancelled`.
    pub outcome: String,
    /// Short error text.
    pub error: Option<String>,
    /// SHA-256 (hex) of the sealed request bytes that left (the outgoing gate's canonical
    /// JSON); `None` when nothing was sent (refused by the gate) or for rows of older
    /// versions.
    pub sent_sha256: Option<String>,
    /// Size of those bytes.
    pub sent_bytes: Option<i64>,
    /// Secrets redacted and private spans removed before it left, by rule name.
    pub redactions: std::collections::BTreeMap<String, i64>,
}

/// What a run did, written when it ends.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunSummary {
    /// Jobs claimed.
    pub claimed: i64,
    /// Succeeded with an output stored.
    pub with_output: i64,
    /// Succeeded with nothing worth keeping.
    pub no_output: i64,
    /// Failed (retry later).
    pub failed: i64,
    /// Given back unfinished (cap reached, cancelled, run-level error).
    pub released: i64,
    /// `running`, `ok`, `partial` (some jobs failed), `failed`, `cancelled`, `spend_cap`,
    /// `skipped`, or `interrupted` (its process exited mid-run).
    pub outcome: String,
    /// Run-level error, if any.
    pub error: Option<String>,
}

/// A row of `runs` with its usage totals.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunRow {
    /// Run id (UUID v7, time-ordered).
    pub id: String,
    /// `phase1` / `phase2`.
    pub phase: String,
    /// `startup`, `watch`, `manual`, `force`, `periodic`.
    pub trigger: String,
    /// Model used.
    pub model: Option<String>,
    /// Start, unix seconds.
    pub started_at: i64,
    /// End, unix seconds (`None` while running or if the process died).
    pub finished_at: Option<i64>,
    /// Counts and outcome.
    pub summary: RunSummary,
    /// Requests made.
    pub requests: i64,
    /// Input tokens (cached included).
    pub input_tokens: i64,
    /// Cached input tokens.
    pub cached_input_tokens: i64,
    /// Output tokens.
    pub output_tokens: i64,
    /// Reasoning tokens.
    pub reasoning_tokens: i64,
    /// Sum of priced requests' cost, USD; `None` when no request was priced.
    pub cost_usd: Option<f64>,
    /// Requests whose price is unknown (not included in `cost_usd`).
    pub unpriced_requests: i64,
}

/// Spend over a period.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Spend {
    /// Sum of priced requests, USD.
    pub usd: f64,
    /// Requests made.
    pub requests: i64,
    /// Requests whose price was unknown (their cost is not in `usd`).
    pub unpriced_requests: i64,
}

impl Store {
    /// Start a run; returns its id (UUID v7).
    pub fn begin_run(&self, phase: &str, trigger: &str, model: Option<&str>) -> Result<String> {
        let id = uuid::Uuid::now_v7().to_string();
        let c = self.conn();
        c.execute(
            "INSERT INTO runs (id, phase, trigger, model, started_at, pid) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![id, phase, trigger, model, self.now(), std::process::id()],
        )
        .map_err(db_err)?;
        Ok(id)
    }

    /// Close every run still marked `running` whose process is gone (`alive(pid)` false,
    /// or no pid recorded by an older version) as `interrupted`. This process's own runs
    /// are never touched. Returns how many were closed.
    ///
    /// Errors: [`codex_free_core::Error::Store`] on database failure.
    pub fn interrupt_orphaned_runs(&self, alive: impl Fn(u32) -> bool) -> Result<usize> {
        let me = std::process::id();
        let c = self.conn();
        let mut q = c
            .prepare("SELECT id, pid FROM runs WHERE outcome = 'running'")
            .map_err(db_err)?;
        let rows = collect_rows(&mut q, [], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, Option<i64>>(1)?))
        })?;
        drop(q);
        let mut closed = 0;
        for (id, pid) in rows {
            let pid = pid.and_then(|p| u32::try_from(p).ok());
            if pid == Some(me) || pid.is_some_and(&alive) {
                continue;
            }
            let why = match pid {
                Some(p) => format!("interrupted: the process running it (pid {p}) exited"),
                None => "interrupted: the process running it exited".to_string(),
            };
            closed += c
                .execute(
                    "UPDATE runs SET outcome = 'interrupted', error = ?2, finished_at = ?3 WHERE id = ?1 AND outcome = 'running'",
                    params![id, why, self.now()],
                )
                .map_err(db_err)?;
        }
        Ok(closed)
    }

    /// Record one request and add it to its run's totals (one transaction).
    pub fn record_usage(&self, u: &UsageRow) -> Result<()> {
        let now = self.now();
        let redactions = (!u.redactions.is_empty())
            .then(|| serde_json::to_string(&u.redactions).unwrap_or_default());
        let mut c = self.conn();
        let tx = c.transaction().map_err(db_err)?;
        tx.execute(
            &format!(
                "INSERT INTO usage ({USAGE_COLS}, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)"
            ),
            params![
                u.run_id,
                u.phase,
                u.request_no,
                u.thread_id,
                u.model,
                u.attempts,
                u.tokens.input_tokens,
                u.tokens.cached_input_tokens,
                u.tokens.cache_write_tokens,
                u.tokens.output_tokens,
                u.tokens.reasoning_tokens,
                u.cost_usd,
                u.duration_ms,
                u.outcome,
                u.error,
                u.sent_sha256,
                u.sent_bytes,
                redactions,
                now
            ],
        )
        .map_err(db_err)?;
        tx.execute(
            "UPDATE runs SET requests = requests + 1, input_tokens = input_tokens + ?2,
                    cached_input_tokens = cached_input_tokens + ?3, output_tokens = output_tokens + ?4,
                    reasoning_tokens = reasoning_tokens + ?5,
                    cost_usd = CASE WHEN ?6 IS NULL THEN cost_usd ELSE COALESCE(cost_usd, 0) + ?6 END,
                    unpriced_requests = unpriced_requests + (?6 IS NULL)
             WHERE id = ?1",
            params![
                u.run_id,
                u.tokens.input_tokens,
                u.tokens.cached_input_tokens,
                u.tokens.output_tokens,
                u.tokens.reasoning_tokens,
                u.cost_usd
            ],
        )
        .map_err(db_err)?;
        tx.commit().map_err(db_err)
    }

    /// Close a run with its counts and outcome.
    pub fn finish_run(&self, run_id: &str, s: &RunSummary) -> Result<()> {
        let c = self.conn();
        c.execute(
            "UPDATE runs SET finished_at = ?2, claimed = ?3, with_output = ?4, no_output = ?5, failed = ?6, released = ?7,
                    outcome = ?8, error = ?9 WHERE id = ?1",
            params![run_id, self.now(), s.claimed, s.with_output, s.no_output, s.failed, s.released, s.outcome, s.error],
        )
        .map_err(db_err)?;
        Ok(())
    }

    /// One run by id.
    pub fn run(&self, run_id: &str) -> Result<Option<RunRow>> {
        let c = self.conn();
        c.query_row(
            &format!("SELECT {RUN_COLS} FROM runs WHERE id = ?1"),
            [run_id],
            run_from_row,
        )
        .optional()
        .map_err(db_err)
    }

    /// The last `n` runs, newest first.
    pub fn recent_runs(&self, n: usize) -> Result<Vec<RunRow>> {
        let c = self.conn();
        let mut st = c
            .prepare(&format!(
                "SELECT {RUN_COLS} FROM runs ORDER BY started_at DESC, id DESC LIMIT ?1"
            ))
            .map_err(db_err)?;
        collect_rows(&mut st, [n as i64], run_from_row)
    }

    /// Usage rows of a run, in request order.
    pub fn run_usage(&self, run_id: &str) -> Result<Vec<UsageRow>> {
        let c = self.conn();
        let mut st = c
            .prepare(&format!(
                "SELECT {USAGE_COLS} FROM usage WHERE run_id = ?1 ORDER BY request_no, id"
            ))
            .map_err(db_err)?;
        collect_rows(&mut st, [run_id], usage_from_row)
    }

    /// Every usage row recorded in `[since, until)` (unix seconds, bounds optional) with its
    /// `created_at`, oldest first: the web UI's runs and costs view (`api::store_usage`).
    pub fn usage_between(
        &self,
        since: Option<i64>,
        until: Option<i64>,
    ) -> Result<Vec<(i64, UsageRow)>> {
        let c = self.conn();
        let mut st = c
            .prepare(&format!(
                "SELECT {USAGE_COLS}, created_at FROM usage WHERE created_at >= ?1 AND created_at < ?2 ORDER BY created_at, id"
            ))
            .map_err(db_err)?;
        collect_rows(
            &mut st,
            params![since.unwrap_or(i64::MIN), until.unwrap_or(i64::MAX)],
            |r| Ok((r.get(USAGE_COL_COUNT)?, usage_from_row(r)?)),
        )
    }

    /// Spend of all requests made at or after `since` (unix seconds).
    pub fn spend_since(&self, since: i64) -> Result<Spend> {
        let c = self.conn();
        c.query_row(
            "SELECT COALESCE(SUM(cost_usd), 0.0), COUNT(*), COALESCE(SUM(cost_usd IS NULL), 0) FROM usage WHERE created_at >= ?1",
            [since],
            |r| Ok(Spend { usd: r.get(0)?, requests: r.get(1)?, unpriced_requests: r.get(2)? }),
        )
        .map_err(db_err)
    }

    /// Spend in the current calendar month (UTC) per this store's clock.
    pub fn spend_this_month(&self) -> Result<Spend> {
        self.spend_since(month_start(self.now()))
    }
}

/// The first second of the UTC calendar month containing `ts` (unix seconds).
pub fn month_start(ts: i64) -> i64 {
    use chrono::{Datelike, TimeZone, Utc};
    let d = Utc.timestamp_opt(ts, 0).single().unwrap_or_default();
    Utc.with_ymd_and_hms(d.year(), d.month(), 1, 0, 0, 0)
        .single()
        .map(|m| m.timestamp())
        .unwrap_or(0)
}

/// The `usage` columns [`usage_from_row`] reads, in its order (the INSERT uses them too).
const USAGE_COLS: &str =
    "run_id, phase, request_no, thread_id, model, attempts, input_tokens, cached_input_tokens,
    cache_write_tokens, output_tokens, reasoning_tokens, cost_usd, duration_ms, outcome, error,
    sent_sha256, sent_bytes, redactions";
/// How many columns [`USAGE_COLS`] names (the index of a column selected after them).
const USAGE_COL_COUNT: usize = 18;

fn usage_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<UsageRow> {
    Ok(UsageRow {
        run_id: r.get(0)?,
        phase: r.get(1)?,
        request_no: r.get(2)?,
        thread_id: r.get(3)?,
        model: r.get(4)?,
        attempts: r.get(5)?,
        tokens: TokenCounts::from_row(r, 6)?,
        cost_usd: r.get(11)?,
        duration_ms: r.get(12)?,
        outcome: r.get(13)?,
        error: r.get(14)?,
        sent_sha256: r.get(15)?,
        sent_bytes: r.get(16)?,
        // A column this build cannot read is shown as "no counts", never an error.
        redactions: r
            .get::<_, Option<String>>(17)?
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default(),
    })
}

const RUN_COLS: &str = "id, phase, trigger, model, started_at, finished_at, claimed, with_output, no_output, failed, released,
    outcome, error, requests, input_tokens, cached_input_tokens, output_tokens, reasoning_tokens, cost_usd, unpriced_requests";

fn run_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunRow> {
    Ok(RunRow {
        id: r.get(0)?,
        phase: r.get(1)?,
        trigger: r.get(2)?,
        model: r.get(3)?,
        started_at: r.get(4)?,
        finished_at: r.get(5)?,
        summary: RunSummary {
            claimed: r.get(6)?,
            with_output: r.get(7)?,
            no_output: r.get(8)?,
            failed: r.get(9)?,
            released: r.get(10)?,
            outcome: r.get(11)?,
            error: r.get(12)?,
        },
        requests: r.get(13)?,
        input_tokens: r.get(14)?,
        cached_input_tokens: r.get(15)?,
        output_tokens: r.get(16)?,
        reasoning_tokens: r.get(17)?,
        cost_usd: r.get(18)?,
        unpriced_requests: r.get(19)?,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::ManualClock;

    /// Runs of dead processes (and of versions that recorded no pid) close as
    /// `interrupted`; live processes' runs and this process's own stay `running`.
    #[test]
    fn orphaned_runs_close_as_interrupted() {
        let s = Store::open_in_memory(Arc::new(ManualClock::new(1_000))).unwrap();
        let mine = s.begin_run("phase1", "manual", None).unwrap();
        let dead = s.begin_run("phase1", "manual", None).unwrap();
        let live = s.begin_run("phase2", "manual", None).unwrap();
        let legacy = s.begin_run("phase1", "manual", None).unwrap();
        let c = s.conn();
        c.execute("UPDATE runs SET pid = 999999 WHERE id = ?1", [&dead])
            .unwrap();
        c.execute("UPDATE runs SET pid = 424242 WHERE id = ?1", [&live])
            .unwrap();
        c.execute("UPDATE runs SET pid = NULL WHERE id = ?1", [&legacy])
            .unwrap();
        drop(c);
        let n = s.interrupt_orphaned_runs(|pid| pid == 424242).unwrap();
        assert_eq!(n, 2);
        let outcome = |id: &str| s.run(id).unwrap().unwrap().summary.outcome;
        assert_eq!(outcome(&mine), "running");
        assert_eq!(outcome(&live), "running");
        assert_eq!(outcome(&dead), "interrupted");
        assert_eq!(outcome(&legacy), "interrupted");
        let e = s.run(&dead).unwrap().unwrap().summary.error.unwrap();
        assert!(e.contains("pid 999999"), "{e}");
        // Idempotent.
        assert_eq!(s.interrupt_orphaned_runs(|pid| pid == 424242).unwrap(), 0);
    }

    /// A request's receipt (hash, size, redactions by rule) is stored with it and read
    /// back with the run's rows; a row without one reads as none.
    #[test]
    fn a_receipt_round_trips_with_its_usage_row() {
        let s = Store::open_in_memory(Arc::new(ManualClock::new(1_000))).unwrap();
        let run = s.begin_run("phase1", "manual", None).unwrap();
        let mut row = UsageRow {
            run_id: run.clone(),
            phase: "phase1".into(),
            request_no: 1,
            model: "m".into(),
            outcome: "ok".into(),
            sent_sha256: Some("ab".repeat(32)),
            sent_bytes: Some(1234),
            redactions: [("github_token".to_string(), 2), ("private_span".into(), 1)]
                .into_iter()
                .collect(),
            ..Default::default()
        };
        s.record_usage(&row).unwrap();
        row.request_no = 2;
        row.sent_sha256 = None;
        row.sent_bytes = None;
        row.redactions.clear();
        s.record_usage(&row).unwrap();
        let rows = s.run_usage(&run).unwrap();
        assert_eq!(
            rows[0].sent_sha256.as_deref(),
            Some("ab".repeat(32).as_str())
        );
        assert_eq!(rows[0].sent_bytes, Some(1234));
        assert_eq!(rows[0].redactions.get("github_token"), Some(&2));
        assert_eq!(rows[1].sent_sha256, None);
        assert!(rows[1].redactions.is_empty());
    }

    #[test]
    fn usage_sums_keep_unknown_price_apart() {
        let clock = Arc::new(ManualClock::new(1_751_328_000)); // 2025-07-01T00:00:00Z
        let s = Store::open_in_memory(clock.clone()).unwrap();
        clock.advance(-1); // June
        let r0 = s
            .begin_run("phase1", "manual", Some("openai/gpt-5-mini"))
            .unwrap();
        let row = |run: &str, n: i64, cost: Option<f64>| UsageRow {
            run_id: run.into(),
            phase: "phase1".into(),
            request_no: n,
            model: "openai/gpt-5-mini".into(),
            attempts: 1,
            tokens: TokenCounts {
                input_tokens: 1000,
                cached_input_tokens: 200,
                output_tokens: 50,
                reasoning_tokens: 10,
                ..Default::default()
            },
            cost_usd: cost,
            duration_ms: 5,
            outcome: "ok".into(),
            ..Default::default()
        };
        s.record_usage(&row(&r0, 1, Some(1.0))).unwrap();
        clock.advance(1); // July
        let r1 = s.begin_run("phase1", "manual", None).unwrap();
        s.record_usage(&row(&r1, 1, Some(0.25))).unwrap();
        s.record_usage(&row(&r1, 2, None)).unwrap();
        s.finish_run(
            &r1,
            &RunSummary {
                claimed: 2,
                with_output: 1,
                failed: 1,
                outcome: "ok".into(),
                ..Default::default()
            },
        )
        .unwrap();
        let run = s.run(&r1).unwrap().unwrap();
        assert_eq!(
            (
                run.requests,
                run.input_tokens,
                run.cached_input_tokens,
                run.output_tokens
            ),
            (2, 2000, 400, 100)
        );
        assert_eq!(run.cost_usd, Some(0.25));
        assert_eq!(run.unpriced_requests, 1);
        assert_eq!(run.summary.claimed, 2);
        let m = s.spend_this_month().unwrap();
        assert_eq!(
            (m.usd, m.requests, m.unpriced_requests),
            (0.25, 2, 1),
            "June's $1 is not July's spend"
        );
        assert_eq!(s.recent_runs(5).unwrap()[0].id, r1);
        assert_eq!(s.run_usage(&r1).unwrap().len(), 2);
        let r2 = s.begin_run("phase1", "manual", None).unwrap();
        s.record_usage(&row(&r2, 1, None)).unwrap();
        assert_eq!(
            s.run(&r2).unwrap().unwrap().cost_usd,
            None,
            "unpriced only: cost unknown, not $0"
        );
    }

    #[test]
    fn month_start_is_utc_first_second() {
        assert_eq!(month_start(1_751_328_000 + 86_400 * 10), 1_751_328_000);
        assert_eq!(month_start(1_751_328_000 - 1), 1_748_736_000);
    }
}
