//! [`Phase2Store`] over `state.sqlite`: the pipeline's side of the store seam. The store
//! owns the rows and the claim rules; this adapter prices usage and writes the
//! `memories.log` line of each run.

use codex_free_core::Result;
use codex_free_store::Store;
use codex_free_store::usage::{RunSummary, UsageRow};

use super::agent::TurnRecord;
use super::{Claim, Phase2Store};
use codex_free_memory::select::RawMemory;
use codex_free_models::prices::Price;

/// [`Phase2Store`] over `state.sqlite`: the job and outputs of [`Store`], usage rows priced
/// with `price` (`None` = unknown, cost stored as NULL), and one `memories.log`
/// line per model run.
pub struct Phase2Db {
    /// The database.
    pub store: Store,
    /// State home (for `memories.log`).
    pub home: std::path::PathBuf,
    /// Price of the consolidation model, when known.
    pub price: Option<Price>,
    /// `memories.monthly_spend_cap_usd`: no model call once this month's spend reaches it.
    pub spend_cap_usd: Option<f64>,
    /// The pipeline `store` belongs to (its `memories.log` lines say `v2` for V2).
    pub version: codex_free_core::config::MemoryVersion,
}

impl Phase2Store for Phase2Db {
    fn now(&self) -> i64 {
        self.store.now()
    }
    fn claim_global(&self, worker_id: &str, lease_secs: i64, force: bool) -> Result<Claim> {
        self.store.claim_phase2(worker_id, lease_secs, force)
    }
    fn heartbeat_global(&self, token: &str, lease_secs: i64) -> Result<bool> {
        self.store.heartbeat_phase2(token, lease_secs)
    }
    fn succeed_global(&self, token: &str, watermark: i64, ids: &[String]) -> Result<bool> {
        self.store.succeed_phase2(token, watermark, ids)
    }
    fn fail_global(&self, token: &str, reason: &str) -> Result<bool> {
        self.store.fail_phase2(token, reason)
    }
    fn global_running(&self) -> Result<bool> {
        self.store.phase2_running()
    }
    fn raw_memories(&self) -> Result<Vec<RawMemory>> {
        self.store.phase2_candidates()
    }
    fn record_usage(&self, thread_ids: &[String]) -> Result<usize> {
        let ids: Vec<&str> = thread_ids.iter().map(String::as_str).collect();
        self.store.record_output_citations(&ids)
    }
    fn start_run(&self, trigger: &str, model: &str) -> Result<String> {
        self.store.begin_run("phase2", trigger, Some(model))
    }
    fn log_request(&self, run_id: &str, rec: &TurnRecord) -> Result<()> {
        let u = rec.usage;
        self.store.record_usage(&UsageRow {
            run_id: run_id.to_string(),
            phase: "phase2".into(),
            request_no: rec.request_no as i64,
            thread_id: None,
            model: rec.model.clone(),
            attempts: 1,
            tokens: u.counts(),
            cost_usd: self.price.map(|p| p.cost(&u)),
            duration_ms: rec.duration_ms as i64,
            outcome: if rec.outcome == "ok" {
                "ok".into()
            } else {
                "failed".into()
            },
            error: rec.error.clone(),
            sent_sha256: rec.receipt.as_ref().map(|r| r.sha256.clone()),
            sent_bytes: rec.receipt.as_ref().map(|r| r.bytes as i64),
            redactions: rec
                .receipt
                .as_ref()
                .map(|r| {
                    r.redactions
                        .iter()
                        .map(|(k, v)| (k.clone(), *v as i64))
                        .collect()
                })
                .unwrap_or_default(),
        })
    }
    fn spend_blocked(&self) -> Result<Option<String>> {
        let state = crate::spend::cap_state_of(&self.store, self.spend_cap_usd)?;
        Ok(state.filter(|c| c.reached).map(|c| {
            format!(
                "monthly spend cap reached: ${:.4} of ${:.2} (memories.monthly_spend_cap_usd)",
                c.spent_usd, c.cap_usd
            )
        }))
    }
    fn finish_run(&self, run_id: &str, outcome: &str, error: Option<&str>) -> Result<()> {
        let ok = outcome != "failed";
        self.store.finish_run(
            run_id,
            &RunSummary {
                claimed: 1,
                with_output: i64::from(ok),
                failed: i64::from(!ok),
                outcome: if ok { "ok".into() } else { "failed".into() },
                error: error.map(str::to_string),
                ..Default::default()
            },
        )?;
        if let Some(r) = self.store.run(run_id)? {
            let line = crate::run_log::Phase2Line {
                at: self.store.now(),
                outcome: outcome.to_string(),
                requests: r.requests,
                input_tokens: r.input_tokens,
                cached_input_tokens: r.cached_input_tokens,
                output_tokens: r.output_tokens,
                cost_usd: r.cost_usd,
                model: r.model.unwrap_or_default(),
                run_id: run_id.to_string(),
                error: error.map(str::to_string),
                v2: self.version == codex_free_core::config::MemoryVersion::V2,
            };
            crate::run_log::append(&self.home, &crate::run_log::LogLine::Phase2(line))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use codex_free_models::TokenUsage;
    use codex_free_store::ManualClock;

    /// A consolidation request's cache writes (Anthropic) reach its usage row and its
    /// price: they cost more than plain input, so dropping them under-reports spend.
    #[test]
    fn a_request_keeps_its_cache_writes() {
        let home = tempfile::tempdir().unwrap();
        let store = Store::open_in_memory(Arc::new(ManualClock::new(1_780_000_000))).unwrap();
        // USD per token; a cache write costs 10x plain input here.
        let price = Price {
            input: 1e-6,
            output: 1e-6,
            cached_input: 1e-7,
            cache_write: 1e-5,
        };
        let db = Phase2Db {
            store,
            home: home.path().to_path_buf(),
            price: Some(price),
            spend_cap_usd: None,
            version: codex_free_core::config::MemoryVersion::V1,
        };
        let run = db.start_run("manual", "anthropic/m").unwrap();
        let usage = TokenUsage {
            input: 1000,
            cache_write: 600,
            output: 10,
            ..Default::default()
        };
        db.log_request(
            &run,
            &TurnRecord {
                request_no: 1,
                model: "anthropic/m".into(),
                usage,
                duration_ms: 5,
                outcome: "ok",
                error: None,
                receipt: Some(codex_free_models::outgoing::Receipt {
                    sha256: "ab".repeat(32),
                    bytes: 1234,
                    redactions: [("provider_key".to_string(), 2)].into_iter().collect(),
                }),
            },
        )
        .unwrap();
        let rows = db.store.run_usage(&run).unwrap();
        assert_eq!(rows[0].tokens.cache_write_tokens, 600);
        assert_eq!(rows[0].cost_usd, Some(price.cost(&usage)));
        // The phase-2 request's receipt is stored with its usage row, as phase 1's.
        assert_eq!(
            rows[0].sent_sha256.as_deref(),
            Some("ab".repeat(32).as_str())
        );
        assert_eq!(rows[0].sent_bytes, Some(1234));
        assert_eq!(rows[0].redactions.get("provider_key"), Some(&2));
    }
}
