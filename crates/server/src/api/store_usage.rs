//! Usage rows and run records from `state.sqlite` (the pipeline's usage log) for
//! the Runs & costs page and the spend figures, plus [`seed`], which writes the demo rows
//! of [`super::usage::demo_records`] into a database for tests and screenshots.
//!
//! A request's time is its `created_at` (when it was recorded, whole seconds); a run's time
//! is its `started_at`.
//!
//! Invariant: a missing database reads as "no usage" and is not created by reading.

use std::path::PathBuf;
use std::sync::Arc;

use crate::api::dto::RequestRow;
use crate::api::usage::{RunMeta, UsageSource};
use codex_free_core::Result;
use codex_free_store::usage::{RunSummary, UsageRow};
use codex_free_store::{DB_FILE, ManualClock, Store};

/// Most runs read for one view.
pub const MAX_RUNS: usize = 10_000;

/// Usage from `<home>/state.sqlite`.
pub struct StoreUsage {
    home: PathBuf,
}

impl StoreUsage {
    /// Read the database of the state home `home` (opened per call; another process may
    /// be writing it).
    pub fn new(home: impl Into<PathBuf>) -> Self {
        Self { home: home.into() }
    }

    fn store(&self) -> Result<Option<Store>> {
        if !self.home.join(DB_FILE).exists() {
            return Ok(None);
        }
        Store::open_in_home(&self.home).map(Some)
    }
}

fn secs(ms: Option<i64>) -> Option<i64> {
    ms.map(|m| m.div_euclid(1000))
}

impl UsageSource for StoreUsage {
    fn requests(&self, since_ms: Option<i64>, until_ms: Option<i64>) -> Result<Vec<RequestRow>> {
        let Some(store) = self.store()? else {
            return Ok(Vec::new());
        };
        // Round the upper bound up so a row of the bound's second is not lost, then filter exactly.
        let until = until_ms.map(|u| u.div_euclid(1000) + 1);
        Ok(store
            .usage_between(secs(since_ms), until)?
            .into_iter()
            .map(|(at, u)| RequestRow {
                run_id: u.run_id,
                time_ms: at * 1000,
                phase: u.phase,
                model: u.model,
                input_tokens: u.tokens.input_tokens.max(0) as u64,
                cached_input_tokens: u.tokens.cached_input_tokens.max(0) as u64,
                output_tokens: u.tokens.output_tokens.max(0) as u64,
                cost_usd: u.cost_usd,
                duration_ms: u.duration_ms.max(0) as u64,
                outcome: u.outcome,
                error: u.error,
                sent_kept: u
                    .sent_sha256
                    .as_deref()
                    .is_some_and(|h| codex_free_pipeline::sent::path_of(&self.home, h).is_file()),
                sent_sha256: u.sent_sha256,
                sent_bytes: u.sent_bytes.map(|b| b.max(0) as u64),
                redactions: u
                    .redactions
                    .into_iter()
                    .map(|(k, v)| (k, v.max(0) as u64))
                    .collect(),
            })
            .filter(|r| {
                since_ms.is_none_or(|s| r.time_ms >= s) && until_ms.is_none_or(|u| r.time_ms < u)
            })
            .collect())
    }

    fn spend_since(&self, since_ms: i64) -> Result<codex_free_store::Spend> {
        match self.store()? {
            Some(store) => store.spend_since(since_ms.div_euclid(1000)),
            None => Ok(codex_free_store::Spend::default()),
        }
    }

    fn runs(&self, since_ms: Option<i64>, until_ms: Option<i64>) -> Result<Vec<RunMeta>> {
        let Some(store) = self.store()? else {
            return Ok(Vec::new());
        };
        Ok(store
            .recent_runs(MAX_RUNS)?
            .into_iter()
            .map(|r| RunMeta {
                run_id: r.id,
                time_ms: r.started_at * 1000,
                phase: r.phase,
                trigger: r.trigger,
                model: r.model,
                outcome: Some(if r.finished_at.is_none() {
                    "running".into()
                } else {
                    r.summary.outcome
                }),
                error: r.summary.error,
            })
            .filter(|m| {
                since_ms.is_none_or(|s| m.time_ms >= s) && until_ms.is_none_or(|u| m.time_ms < u)
            })
            .collect())
    }
}

/// Write `rows` (e.g. [`super::usage::demo_records`]) into `<home>/state.sqlite` through the
/// store's own API, one run per `run_id`, each stamped at its rows' times. For tests,
/// demos and screenshots only: it adds to whatever the database holds.
pub fn seed(home: &std::path::Path, rows: &[RequestRow]) -> Result<usize> {
    let clock = Arc::new(ManualClock::new(0));
    let store = Store::open(&home.join(DB_FILE), clock.clone())?;
    let mut runs: Vec<&str> = rows.iter().map(|r| r.run_id.as_str()).collect();
    runs.sort();
    runs.dedup();
    for run in &runs {
        let mut reqs: Vec<&RequestRow> = rows.iter().filter(|r| r.run_id == *run).collect();
        reqs.sort_by_key(|r| r.time_ms);
        let first = reqs[0];
        clock.set(first.time_ms.div_euclid(1000));
        let id = store.begin_run(&first.phase, "manual", Some(&first.model))?;
        let mut failed = 0;
        for (i, r) in reqs.iter().enumerate() {
            clock.set(r.time_ms.div_euclid(1000));
            failed += i64::from(r.outcome == "failed");
            store.record_usage(&UsageRow {
                run_id: id.clone(),
                phase: r.phase.clone(),
                request_no: i as i64 + 1,
                model: r.model.clone(),
                attempts: 1,
                tokens: codex_free_store::TokenCounts {
                    input_tokens: r.input_tokens as i64,
                    cached_input_tokens: r.cached_input_tokens as i64,
                    output_tokens: r.output_tokens as i64,
                    ..Default::default()
                },
                cost_usd: r.cost_usd,
                duration_ms: r.duration_ms as i64,
                outcome: r.outcome.clone(),
                error: r.error.clone(),
                ..Default::default()
            })?;
        }
        let outcome = if failed > 0 { "failed" } else { "ok" };
        store.finish_run(
            &id,
            &RunSummary {
                claimed: reqs.len() as i64,
                with_output: reqs.len() as i64 - failed,
                failed,
                outcome: outcome.into(),
                ..Default::default()
            },
        )?;
    }
    Ok(runs.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::dto::RunFilter;
    use crate::api::usage::{demo_records, view};

    #[test]
    fn seeded_database_reads_back_with_the_same_totals() {
        let d = tempfile::tempdir().unwrap();
        let src = StoreUsage::new(d.path());
        assert!(src.requests(None, None).unwrap().is_empty());
        assert!(
            !d.path().join(DB_FILE).exists(),
            "reading must not create the database"
        );
        let now = 1_780_000_000_000;
        let rows = demo_records(now, 7);
        assert_eq!(seed(d.path(), &rows).unwrap(), 10);
        let want = view(rows, Vec::new(), &RunFilter::default());
        let got = view(
            src.requests(None, None).unwrap(),
            src.runs(None, None).unwrap(),
            &RunFilter::default(),
        );
        assert_eq!(got.total.runs, want.total.runs);
        assert_eq!(got.total.requests, want.total.requests);
        assert_eq!(got.total.input_tokens, want.total.input_tokens);
        assert_eq!(got.total.output_tokens, want.total.output_tokens);
        assert_eq!(got.total.unpriced_requests, want.total.unpriced_requests);
        assert!((got.total.cost_usd - want.total.cost_usd).abs() < 1e-12);
        assert_eq!(got.daily.len(), 7);
        assert!(got.runs.iter().all(|r| r.trigger == "manual"));
        assert_eq!(got.runs.iter().filter(|r| r.outcome == "failed").count(), 3);
        // time bounds
        let today = src.requests(Some(now - 2 * 3_600_000), None).unwrap();
        assert_eq!(today.len(), 4, "day 0: 2 phase-1 + 2 phase-2 requests");
    }
}
