//! `memories run` / `force`: one pass now, and its verdict for the exit code.

use super::{ControlEnv, MemoriesCmd};

use serde::Serialize;

use crate::phase1::Trigger;
use crate::scheduler::{self};
use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::config::MemoryVersion;
use codex_free_models::{PriceTable, resolve_extract_model};

/// `memories run` / `force`: one phase-1 pass (and what follows it) now, with its verdict
/// (see [`execute_with_verdict`]).
pub(super) async fn run_command(
    cmd: MemoriesCmd,
    env: &ControlEnv,
) -> Result<(String, Option<String>)> {
    let cfg = env.config()?;
    if !cfg.memories.enabled {
        return Err(Error::Refused(
            "the memory pipeline is off; run `codex-free memories on` first".into(),
        ));
    }
    let (trigger, json) = match cmd {
        MemoriesCmd::Force { json } => (Trigger::Force, json),
        MemoriesCmd::Run { json } => (Trigger::Manual, json),
        _ => (Trigger::Manual, false),
    };
    resolve_extract_model(
        &cfg.memories,
        env.secrets.as_ref(),
        PriceTable::bundled(),
        env.retry,
    )?;
    // Each written version runs on its own database, one after the other; one failing does
    // not stop the next.
    let mut runs = Vec::new();
    for version in cfg.memories.written_versions() {
        let store = env.store_for(version)?;
        let r = scheduler::run_once_version(
            &env.home,
            &cfg,
            &env.scheduler_deps(),
            &store,
            version,
            trigger,
            env.cancel.clone(),
        )
        .await?;
        runs.push((version, r));
    }
    let verdicts: Vec<String> = runs
        .iter()
        .filter_map(|(v, r)| {
            run_failure(r).map(|why| {
                if runs.len() > 1 {
                    format!("{v}: {why}")
                } else {
                    why
                }
            })
        })
        .collect();
    let verdict = (!verdicts.is_empty()).then(|| verdicts.join("; "));
    if json {
        let active = cfg.memories.active_version();
        let main = runs
            .iter()
            .find(|(v, _)| *v == active)
            .or(runs.first())
            .map(|(_, r)| r)
            .ok_or_else(|| Error::Store("no pipeline ran".into()))?;
        let out = RunOutcome {
            outcome: main.summary.outcome.clone(),
            achieved: verdict.is_none(),
            failure: verdict.clone(),
            run: main,
            pipelines: runs
                .iter()
                .map(|(v, r)| PipelineRun {
                    version: *v,
                    outcome: r.summary.outcome.clone(),
                    achieved: run_failure(r).is_none(),
                    failure: run_failure(r),
                    run: r,
                })
                .collect(),
        };
        let text = serde_json::to_string_pretty(&out)
            .map_err(|e| Error::Store(format!("serialising the run: {e}")))?;
        return Ok((text + "\n", verdict));
    }
    let mut text = String::new();
    for (v, r) in &runs {
        let prefix = if runs.len() > 1 {
            format!("{v}: ")
        } else {
            String::new()
        };
        text.push_str(&prefix);
        text.push_str(&match (&r.log_line, r.summary.outcome.as_str()) {
            (Some(l), _) => format!("{l}\n"),
            (None, "idle") => format!(
                "nothing to do: {} sessions seen, none eligible (idle < {} h, already extracted, off, or retrying)\n",
                r.scanned, cfg.memories.min_rollout_idle_hours
            ),
            (None, o) => match &r.summary.error {
                Some(e) => format!("{o}: {e}\n"),
                None => format!("{o}\n"),
            },
        });
    }
    Ok((text, verdict))
}

/// `memories run --json` / `force --json`: the run, with the same verdict the exit code
/// gives.
#[derive(Debug, Serialize)]
pub struct RunOutcome<'a> {
    /// The run's outcome (`ok`, `partial`, `failed`, `spend_cap`, `cancelled`, `idle`, ...).
    pub outcome: String,
    /// False exactly when the command exits 1: the run sent requests and none succeeded,
    /// or the spend cap stopped it before anything was extracted.
    pub achieved: bool,
    /// Why it achieved nothing (the line printed on stderr), `None` when `achieved`.
    pub failure: Option<String>,
    /// The active version's phase-1 report (counts, tokens, cost, the `memories.log` line).
    pub run: &'a crate::phase1::RunReport,
    /// Every pipeline that ran (both with `memories.dual_write`), each with its own verdict.
    pub pipelines: Vec<PipelineRun<'a>>,
}

/// One pipeline's part of [`RunOutcome`].
#[derive(Debug, Serialize)]
pub struct PipelineRun<'a> {
    /// `v1` or `v2`.
    pub version: MemoryVersion,
    /// Its run's outcome.
    pub outcome: String,
    /// Whether it achieved its work (see [`run_failure`]).
    pub achieved: bool,
    /// Why not, when it did not.
    pub failure: Option<String>,
    /// Its phase-1 report.
    pub run: &'a crate::phase1::RunReport,
}

/// Whether a phase-1 run achieved its work: `Some(reason)` when every request failed
/// (outcome `failed`: the jobs all failed, the key was rejected, the model is unavailable)
/// or the spend cap stopped it before anything was extracted; `None` otherwise (an idle
/// run with nothing eligible did all there was to do).
pub fn run_failure(r: &crate::phase1::RunReport) -> Option<String> {
    let s = &r.summary;
    let extracted = s.with_output + s.no_output;
    let last = s
        .error
        .as_deref()
        .map(|e| format!(" (last error: {e})"))
        .unwrap_or_default();
    match s.outcome.as_str() {
        "failed" if s.claimed > 0 => Some(format!(
            "memories run failed: {} of {} requests failed, none succeeded{last}",
            s.failed + s.released,
            s.claimed,
        )),
        "failed" => Some(format!("memories run failed before any request{last}")),
        "spend_cap" if extracted == 0 => Some(format!(
            "memories run stopped by the monthly spend cap before anything was extracted (memories.monthly_spend_cap_usd){last}"
        )),
        _ => None,
    }
}
