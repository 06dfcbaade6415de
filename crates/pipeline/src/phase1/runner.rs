//! One phase-1 run: discovery, the spend cap, claiming, the bounded extraction loop and
//! closing the run with its log line.

use super::{CONCURRENCY, Phase1Ctx, RunReport, Trigger, blocking, cap_state};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use crate::run_log::{LogLine, Phase1Line};
use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::config::exclude::ExcludePaths;
use codex_free_core::config::{MemoriesConfig, MemoryVersion};
use codex_free_models::TokenUsage;
use codex_free_store::stage1::LEASE_SECONDS;
use codex_free_store::{ClaimParams, RunSummary};

use super::job::process;

pub(super) struct Shared {
    pub(super) ctx: Phase1Ctx,
    pub(super) run_id: String,
    pub(super) request_no: AtomicI64,
    pub(super) stop: AtomicBool,
    pub(super) stop_reason: std::sync::Mutex<Option<(String, String)>>,
    /// Worst-case cost (USD) of the requests in flight, held against the spend cap until
    /// each one's real usage is recorded, so concurrent requests cannot overshoot it.
    pub(super) reserved_usd: std::sync::Mutex<f64>,
    /// The first job failure's reason (shown with a `partial` or `failed` outcome).
    pub(super) first_failure: std::sync::Mutex<Option<String>>,
    /// Set when a request failed with [`FailureKind::Auth`].
    pub(super) key_rejected: AtomicBool,
}

impl Shared {
    pub(super) fn halt(&self, outcome: &str, why: String) {
        let mut g = self.stop_reason.lock().unwrap_or_else(|p| p.into_inner());
        if g.is_none() {
            *g = Some((outcome.to_string(), why));
        }
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// How one claim ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum JobEnd {
    WithOutput,
    NoOutput,
    Failed,
    Released,
    /// Released unsent: the request waits in the approval queue.
    Waiting,
}

/// Run phase 1 once. Never panics on provider or input trouble: those end as failed or
/// released jobs; only database errors abort (jobs then stay leased until their lease
/// expires).
///
/// Errors: [`Error::Store`] on database failure; [`Error::Io`] when the log cannot be
/// written.
///
/// Long on purpose: the five numbered stages of one run (discover, spend cap, claim, extract,
/// close) read as one story and share the run's counters.
#[expect(
    clippy::too_many_lines,
    reason = "the five numbered stages of one run (discover, spend cap, claim, extract, close) read as one story and share the run's counters"
)]
pub async fn run(ctx: Phase1Ctx) -> Result<RunReport> {
    let cfg = ctx.config.clone();
    if !cfg.enabled {
        return Ok(RunReport {
            summary: RunSummary {
                outcome: "disabled".into(),
                ..Default::default()
            },
            ..Default::default()
        });
    }
    // 1. Discovery → threads; kept request bytes past memories.keep_sent_days pruned.
    let scanned = discover(&ctx).await?;
    {
        let (home, days) = (ctx.home.clone(), cfg.keep_sent_days);
        if let Err(e) = blocking(move || crate::sent::prune(&home, days)).await {
            tracing::warn!(error = %e, "could not prune the kept requests");
        }
    }
    let model_name = ctx.model.model.to_string();
    // 2. Spend cap.
    if let Some(state) = {
        let (store, c) = (ctx.store.clone(), cfg.clone());
        blocking(move || cap_state(&store, &c)).await?
    } {
        let why = if state.reached {
            Some(format!(
                "monthly spend cap reached (${:.4} of ${:.2}); no model calls until next month or a higher cap",
                state.spent_usd, state.cap_usd
            ))
        } else if ctx.model.price.is_none() {
            Some(format!(
                "a monthly spend cap is set but the price of {model_name} is unknown; add memories.prices.\"{model_name}\" so spend can be counted"
            ))
        } else {
            None
        };
        if let Some(why) = why {
            return stopped_before_claim(&ctx, scanned, "spend_cap", why).await;
        }
    }
    // 3. Claim.
    let params = claim_params(&ctx)?;
    let claims = {
        let store = ctx.store.clone();
        blocking(move || store.claim_stage1_jobs(&params)).await?
    };
    if claims.is_empty() {
        return Ok(RunReport {
            scanned,
            summary: RunSummary {
                outcome: "idle".into(),
                ..Default::default()
            },
            ..Default::default()
        });
    }
    let run_id = {
        let (store, trig, m) = (ctx.store.clone(), ctx.trigger, model_name.clone());
        blocking(move || store.begin_run("phase1", trig.as_str(), Some(&m))).await?
    };
    tracing::info!(run = %run_id, claimed = claims.len(), model = %model_name, "phase 1 started");
    // 4. Extract, bounded.
    let shared = Arc::new(Shared {
        ctx: ctx.clone(),
        run_id: run_id.clone(),
        request_no: AtomicI64::new(0),
        stop: AtomicBool::new(false),
        stop_reason: std::sync::Mutex::new(None),
        reserved_usd: std::sync::Mutex::new(0.0),
        first_failure: std::sync::Mutex::new(None),
        key_rejected: AtomicBool::new(false),
    });
    let sem = Arc::new(tokio::sync::Semaphore::new(CONCURRENCY));
    let mut set = tokio::task::JoinSet::new();
    let claimed = claims.len() as i64;
    for claim in claims {
        let (sh, sem) = (shared.clone(), sem.clone());
        set.spawn(async move {
            let _permit = sem.acquire_owned().await;
            process(&sh, claim).await
        });
    }
    let mut summary = RunSummary {
        claimed,
        ..Default::default()
    };
    let mut first_err = None;
    let mut waiting = 0;
    while let Some(joined) = set.join_next().await {
        match joined {
            Ok(Ok(JobEnd::WithOutput)) => summary.with_output += 1,
            Ok(Ok(JobEnd::NoOutput)) => summary.no_output += 1,
            Ok(Ok(JobEnd::Failed)) => summary.failed += 1,
            Ok(Ok(JobEnd::Released)) => summary.released += 1,
            Ok(Ok(JobEnd::Waiting)) => {
                summary.released += 1;
                waiting += 1;
            }
            Ok(Err(e)) => {
                summary.failed += 1;
                first_err.get_or_insert(e);
            }
            Err(e) => {
                summary.failed += 1;
                first_err.get_or_insert(Error::Store(format!("extraction task failed: {e}")));
            }
        }
    }
    let key_rejected = shared.key_rejected.load(Ordering::SeqCst);
    let stop = shared
        .stop_reason
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    (summary.outcome, summary.error) = match (&stop, &first_err) {
        (Some((o, why)), _) => (o.clone(), Some(why.clone())),
        (None, Some(e)) => ("failed".into(), Some(e.to_string())),
        // Outcomes follow the requests: all jobs failed = failed, some = partial.
        (None, None) if summary.failed > 0 => {
            let why = shared
                .first_failure
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone()
                .unwrap_or_else(|| "see the jobs' last errors".into());
            let done = summary.with_output + summary.no_output;
            let outcome = if done == 0 { "failed" } else { "partial" };
            (
                outcome.into(),
                Some(format!(
                    "{} of {} job(s) failed; first: {why}",
                    summary.failed, summary.claimed
                )),
            )
        }
        // Every claim waits for approval: nothing was sent.
        (None, None) if waiting > 0 && waiting == summary.claimed as usize => (
            "waiting".into(),
            Some(format!(
                "{waiting} request(s) wait for approval (memories.approval); nothing was sent: codex-free memories outgoing"
            )),
        ),
        (None, None) => ("ok".into(), None),
    };
    // 5. Close the run and log it.
    let row = {
        let (store, id, s) = (ctx.store.clone(), run_id.clone(), summary.clone());
        blocking(move || {
            store.finish_run(&id, &s)?;
            store.run(&id)
        })
        .await?
        .ok_or_else(|| Error::Store("run row vanished".into()))?
    };
    let usage = TokenUsage {
        input: row.input_tokens as u64,
        cached_input: row.cached_input_tokens as u64,
        cache_write: 0,
        output: row.output_tokens as u64,
        reasoning: row.reasoning_tokens as u64,
    };
    let line = Phase1Line {
        at: ctx.store.now(),
        claimed: summary.claimed,
        with_output: summary.with_output,
        no_output: summary.no_output,
        failed: summary.failed,
        released: summary.released,
        tokens: usage.total(),
        cost_usd: row.cost_usd,
        unpriced: row.unpriced_requests,
        model: model_name,
        run_id: run_id.clone(),
        stopped: summary
            .error
            .clone()
            .filter(|_| !matches!(summary.outcome.as_str(), "ok" | "partial")),
        v2: ctx.version == MemoryVersion::V2,
    };
    let line = {
        let home = ctx.home.clone();
        blocking(move || crate::run_log::append(&home, &LogLine::Phase1(line))).await?
    };
    tracing::info!(target: "memories", "{line}");
    if let Some(e) = first_err
        && matches!(e, Error::Store(_))
    {
        return Err(e);
    }
    Ok(RunReport {
        run_id: Some(run_id),
        summary,
        usage,
        cost_usd: row.cost_usd,
        unpriced: row.unpriced_requests,
        scanned,
        log_line: Some(line),
        key_rejected,
        waiting,
    })
}

async fn stopped_before_claim(
    ctx: &Phase1Ctx,
    scanned: usize,
    outcome: &str,
    why: String,
) -> Result<RunReport> {
    let model = ctx.model.model.to_string();
    let summary = RunSummary {
        outcome: outcome.into(),
        error: Some(why.clone()),
        ..Default::default()
    };
    let (store, trig, s, m) = (
        ctx.store.clone(),
        ctx.trigger,
        summary.clone(),
        model.clone(),
    );
    // The same stop as the last recorded run (e.g. the cap on every rescan): say it once.
    let run_id = blocking(move || {
        let last = store.recent_runs(1)?.into_iter().next();
        if last.is_some_and(|r| r.summary.outcome == s.outcome && r.summary.error == s.error) {
            return Ok(None);
        }
        let id = store.begin_run("phase1", trig.as_str(), Some(&m))?;
        store.finish_run(&id, &s)?;
        Ok(Some(id))
    })
    .await?;
    let Some(run_id) = run_id else {
        return Ok(RunReport {
            summary,
            scanned,
            ..Default::default()
        });
    };
    let line = Phase1Line {
        at: ctx.store.now(),
        model,
        run_id: run_id.clone(),
        stopped: Some(why),
        v2: ctx.version == MemoryVersion::V2,
        ..Default::default()
    };
    let home = ctx.home.clone();
    let line = blocking(move || crate::run_log::append(&home, &LogLine::Phase1(line))).await?;
    tracing::warn!(target: "memories", "{line}");
    Ok(RunReport {
        run_id: Some(run_id),
        summary,
        scanned,
        log_line: Some(line),
        ..Default::default()
    })
}

/// Discovery: scan the sources and record every session found (the `threads` table);
/// returns how many were seen.
pub(super) async fn discover(ctx: &Phase1Ctx) -> Result<usize> {
    let (input, store, sources, generate) = (
        ctx.input.clone(),
        ctx.store.clone(),
        ctx.config.sources.clone(),
        ctx.config.generate_memories,
    );
    blocking(move || {
        let threads = input.scan(&sources)?;
        store.upsert_threads(&threads, generate)?;
        Ok(threads.len())
    })
    .await
}

/// `memories.exclude_paths` compiled.
///
/// Errors: [`Error::Config`] naming the invalid pattern.
pub fn exclude_paths(cfg: &MemoriesConfig) -> Result<ExcludePaths> {
    ExcludePaths::new(&cfg.exclude_paths).map_err(Error::Config)
}

/// Which sessions a run may claim, from the `memories` config and the trigger (`Force`
/// ignores idle time and backoff, never `memories.exclude_paths`).
///
/// Errors: [`Error::Config`] for an invalid `memories.exclude_paths` pattern.
pub(super) fn claim_params(ctx: &Phase1Ctx) -> Result<ClaimParams> {
    let cfg = &ctx.config;
    Ok(ClaimParams {
        sources: cfg.sources.clone(),
        max_claimed: cfg.max_rollouts_per_startup,
        max_running: cfg.max_rollouts_per_startup,
        max_age_days: cfg.max_rollout_age_days,
        min_idle_hours: cfg.min_rollout_idle_hours,
        lease_seconds: LEASE_SECONDS,
        worker_id: ctx.worker_id.clone(),
        force: ctx.trigger == Trigger::Force,
        exclude: exclude_paths(cfg)?,
    })
}
