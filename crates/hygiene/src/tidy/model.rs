//! `memories tidy --model`: the units the rules cannot decide (some lines stale and some
//! not, or a rule's form stale only by its section) are judged by the pipeline's cheap
//! model, one request per batch of [`BATCH`] units, through the outgoing gate
//! ([`Outgoing::seal`](codex_free_models::Outgoing::seal): redaction, private spans, the
//! context window).
//!
//! Order: the plan is built by the rules; the undecided units whose answer is not cached
//! are batched; the estimate (input tokens as sealed, output tokens at most, cost at the
//! model's price) is handed to the caller BEFORE anything is sent (the CLI prints it); the
//! monthly spend cap is checked; each batch is sent and logged as a `tidy` run with its
//! tokens and cost like every other model call; valid answers are cached by
//! [`unit_hash`] in `<home>/cache/tidy-model.json` (written atomically), so a second plan
//! sends nothing; the plan is rebuilt with the verdicts.
//!
//! Invariant: an answer that is not exactly the schema (not JSON, a missing or unknown
//! id, a verdict other than `stale` / `durable`) decides nothing and caches nothing —
//! every unit of that batch stays loaded.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::Digest as _;

use super::{Plan, TidyOptions, plan};
use codex_free_core::Result;
use codex_free_core::error::IoContext;
use codex_free_models::{CompletionRequest, JsonSchemaSpec, Message, Outgoing, ResolvedModel};

/// Units per request: enough to share the prompt's cost, few enough that one garbage
/// answer leaves little undecided.
pub const BATCH: usize = 40;

/// Output tokens allowed per unit (an id and one word in JSON, about 12 tokens, doubled).
const OUTPUT_TOKENS_PER_UNIT: usize = 24;

/// Part of every unit's hash: a change to the question invalidates the cached answers.
const PROMPT_VERSION: &str = "tidy-judge-v2";

/// The cache file, under the state home.
pub const CACHE_FILE: &str = "cache/tidy-model.json";

const SYSTEM: &str = "You judge lines of an AI coding agent's memory file, which is loaded into every session. \
A unit is STALE when what it says was true or planned at one moment and is likely false later without anyone changing a rule: \
a dated log entry, a status or progress report, a measured or counted value at a time, an installed version, a to-do or next step, \
an open issue, a release or incident narrative. A unit is DURABLE when it stays true until someone decides otherwise: \
a rule, a preference, a boundary, a convention, a command, the project's layout or architecture, a decision with its reason, \
a lesson stated as what to do, a requirement or limit. When a rule merely cites the day it was adopted, it is durable. \
Answer every unit by its id with \"stale\" or \"durable\"; when unsure, answer \"durable\". \
Reply with JSON only, in this shape: {\"units\": [{\"id\": \"u1\", \"verdict\": \"durable\"}, {\"id\": \"u2\", \"verdict\": \"stale\"}]}.";

/// A model's verdict on one undecided unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Leaves the loaded layer (to `archive/`).
    Stale,
    /// Stays loaded.
    Durable,
}

/// The hash a unit's answer is cached under: SHA-256 (hex) of the question's version and
/// the unit's content lines.
pub fn unit_hash(content: &str) -> String {
    let mut h = sha2::Sha256::new();
    h.update(PROMPT_VERSION.as_bytes());
    h.update([0]);
    h.update(content.as_bytes());
    format!("{:x}", h.finalize())
}

/// What `--model` asked, or would ask, about a plan's undecided units.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ModelReport {
    /// `provider/model`.
    pub model: String,
    /// Undecided units in the plan the rules built.
    pub undecided: usize,
    /// Of them, answered from the cache (no request).
    pub cached: usize,
    /// Requests the uncached ones need.
    pub requests: usize,
    /// Estimated input tokens of those requests, as sealed by the outgoing gate.
    pub est_input_tokens: usize,
    /// Output tokens the requests may use at most.
    pub est_output_tokens: usize,
    /// Estimated cost in USD at the model's price (`None`: price unknown).
    pub est_cost_usd: Option<f64>,
    /// Requests actually sent.
    pub sent: usize,
    /// Tokens the provider reported (input, output).
    pub used_tokens: (u64, u64),
    /// Cost of what was sent, USD (`None`: price unknown or nothing sent).
    pub cost_usd: Option<f64>,
    /// Units the model decided (cached answers included).
    pub decided: usize,
    /// Why some units stayed undecided (a garbage answer, a failed request, the spend cap).
    pub problems: Vec<String>,
}

impl ModelReport {
    /// The estimate as one line, shown before anything is sent.
    pub fn estimate_line(&self) -> String {
        format!(
            "Model: {} undecided unit(s), {} answered from the cache; {} request(s) to {} (~{} input tokens, at most {} output tokens, est. {}){}",
            self.undecided,
            self.cached,
            self.requests,
            self.model,
            self.est_input_tokens,
            self.est_output_tokens,
            codex_free_models::prices::format_cost(self.est_cost_usd),
            if self.requests == 0 {
                ": nothing to send"
            } else {
                ""
            }
        )
    }
}

/// Cached verdicts by [`unit_hash`].
#[derive(Debug, Default, Serialize, Deserialize)]
struct Cache {
    verdicts: BTreeMap<String, Verdict>,
}

fn cache_path(home: &Path) -> PathBuf {
    home.join(CACHE_FILE)
}

/// The cached verdicts (empty when there is no cache; an unreadable cache is ignored with
/// a warning: it only costs a request).
pub fn cached_verdicts(home: &Path) -> BTreeMap<String, Verdict> {
    let p = cache_path(home);
    match std::fs::read(&p) {
        Ok(b) => match serde_json::from_slice::<Cache>(&b) {
            Ok(c) => c.verdicts,
            Err(e) => {
                tracing::warn!(file = %p.display(), error = %e, "tidy model cache unreadable; ignored");
                BTreeMap::new()
            }
        },
        Err(_) => BTreeMap::new(),
    }
}

fn save_cache(home: &Path, verdicts: &BTreeMap<String, Verdict>) -> Result<()> {
    let p = cache_path(home);
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).ctx(|| format!("creating {}", d.display()))?;
    }
    let body = serde_json::to_vec_pretty(&Cache {
        verdicts: verdicts.clone(),
    })
    .map_err(|e| codex_free_core::Error::Store(format!("encoding the tidy cache: {e}")))?;
    codex_free_core::home::write_atomic_unlocked(&p, &body)
}

/// One undecided unit: its hash and its text.
#[derive(Clone)]
struct Asked {
    hash: String,
    body: String,
}

fn request_for(units: &[Asked], reasoning: bool) -> CompletionRequest {
    let list: Vec<serde_json::Value> = units
        .iter()
        .enumerate()
        .map(|(i, u)| serde_json::json!({"id": format!("u{}", i + 1), "text": u.body}))
        .collect();
    let user = format!(
        "Units (JSON):\n{}",
        serde_json::to_string_pretty(&list).unwrap_or_default()
    );
    CompletionRequest {
        system: SYSTEM.into(),
        messages: vec![Message::User(user)],
        response_schema: Some(JsonSchemaSpec {
            name: "tidy_verdicts".into(),
            schema: serde_json::json!({
                "type": "object",
                "additionalProperties": false,
                "required": ["units"],
                "properties": {"units": {"type": "array", "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["id", "verdict"],
                    "properties": {
                        "id": {"type": "string"},
                        "verdict": {"type": "string", "enum": ["stale", "durable"]}
                    }
                }}}
            }),
        }),
        reasoning_effort: reasoning.then(|| "minimal".to_string()),
        max_output_tokens: Some((OUTPUT_TOKENS_PER_UNIT * units.len() + 64) as u32),
        ..Default::default()
    }
}

/// The verdicts of an answer for `n` units (`u1`..`un`), or `None` when the answer is not
/// exactly the schema (see the module invariant).
fn parse_answer(content: &str, n: usize) -> Option<Vec<Verdict>> {
    #[derive(Deserialize)]
    struct Item {
        id: String,
        verdict: Verdict,
    }
    #[derive(Deserialize)]
    struct Answer {
        units: Vec<Item>,
    }
    let t = content.trim();
    let t = t
        .strip_prefix("```json")
        .or_else(|| t.strip_prefix("```"))
        .and_then(|x| x.strip_suffix("```"))
        .unwrap_or(t);
    let a: Answer = serde_json::from_str(t.trim()).ok()?;
    let mut out: Vec<Option<Verdict>> = vec![None; n];
    for it in a.units {
        let i: usize = it.id.strip_prefix('u')?.parse().ok()?;
        let slot = out.get_mut(i.checked_sub(1)?)?;
        if slot.is_some() {
            return None;
        }
        *slot = Some(it.verdict);
    }
    out.into_iter().collect()
}

/// The rules' plan, the cache, and the sealed batches of the uncached undecided units with
/// their estimate.
struct Prepared {
    spec: String,
    base: Plan,
    cache: BTreeMap<String, Verdict>,
    report: ModelReport,
    sealed: Vec<(Vec<Asked>, Outgoing)>,
}

fn prepare(opts: &TidyOptions, model: &ResolvedModel) -> Result<Prepared> {
    let spec = format!("{}/{}", model.model.provider, model.model.model);
    let rules_only = TidyOptions {
        model_verdicts: BTreeMap::new(),
        ..opts.clone()
    };
    let base = plan(&rules_only)?;
    let cache = cached_verdicts(&opts.home);
    let mut todo: Vec<Asked> = Vec::new();
    let mut report = ModelReport {
        model: spec.clone(),
        ..Default::default()
    };
    for m in base.moves.iter().filter(|m| m.undecided) {
        report.undecided += 1;
        let hash = unit_hash(&m.body);
        if cache.contains_key(&hash) {
            report.cached += 1;
        } else if !todo.iter().any(|a| a.hash == hash) {
            todo.push(Asked {
                hash,
                body: m.body.clone(),
            });
        }
    }
    // Seal every batch first: the estimate is what the gate would send.
    let mut sealed: Vec<(Vec<Asked>, Outgoing)> = Vec::new();
    for chunk in todo.chunks(BATCH) {
        let req = request_for(chunk, model.reasoning);
        let out_max = req.max_output_tokens.unwrap_or(0) as usize;
        match Outgoing::seal(req, model.context_window) {
            Ok(o) => {
                report.requests += 1;
                report.est_input_tokens += o.input_tokens();
                report.est_output_tokens += out_max;
                sealed.push((chunk.to_vec(), o));
            }
            Err(e) => {
                report
                    .problems
                    .push(format!("{} unit(s) not asked: {}", chunk.len(), e.message))
            }
        }
    }
    report.est_cost_usd = model.price.map(|p| {
        p.cost(&codex_free_models::TokenUsage {
            input: report.est_input_tokens as u64,
            output: report.est_output_tokens as u64,
            ..Default::default()
        })
    });
    Ok(Prepared {
        spec,
        base,
        cache,
        report,
        sealed,
    })
}

/// The cached verdicts that decide undecided units of the rules' plan of `opts`, by
/// [`unit_hash`]: what an apply uses so that it moves what the last plan with the model
/// showed, with no request and no model configured.
///
/// Errors: those of [`plan`].
pub fn cached_for(opts: &TidyOptions) -> Result<BTreeMap<String, Verdict>> {
    let rules_only = TidyOptions {
        model_verdicts: BTreeMap::new(),
        ..opts.clone()
    };
    let base = plan(&rules_only)?;
    Ok(answered(&base, &cached_verdicts(&opts.home)))
}

/// The verdicts in `cache` for the undecided units of `base`, by [`unit_hash`].
fn answered(base: &Plan, cache: &BTreeMap<String, Verdict>) -> BTreeMap<String, Verdict> {
    base.moves
        .iter()
        .filter(|m| m.undecided)
        .filter_map(|m| {
            let h = unit_hash(&m.body);
            cache.get(&h).map(|v| (h, *v))
        })
        .collect()
}

/// What `--model` would ask about the plan of `opts` (undecided units, cached answers,
/// requests, estimated tokens and cost), sending nothing.
///
/// Errors: those of [`plan`].
pub fn estimate(opts: &TidyOptions, model: &ResolvedModel) -> Result<ModelReport> {
    Ok(prepare(opts, model)?.report)
}

/// Build the plan of `opts` with the model deciding the undecided units.
///
/// `on_estimate` gets the report with the estimate before any request is sent (and also
/// when nothing needs sending); `send = false` stops there (the plan keeps the cached
/// verdicts only). Returns the plan (its `model` field filled) and the verdicts it used,
/// for a following [`super::apply`] (`TidyOptions::model_verdicts`).
///
/// Errors: those of [`plan`]; a cache that cannot be written. A request that fails, the
/// spend cap and a garbage answer are not errors: they are listed in the report's
/// `problems`, and the units they concern stay.
pub async fn plan_with_model(
    opts: &TidyOptions,
    model: &ResolvedModel,
    spend_cap_usd: Option<f64>,
    send: bool,
    on_estimate: &mut (dyn FnMut(&ModelReport) + Send),
) -> Result<(Plan, BTreeMap<String, Verdict>)> {
    let Prepared {
        spec,
        base,
        mut cache,
        mut report,
        sealed,
    } = prepare(opts, model)?;
    on_estimate(&report);
    if send && !sealed.is_empty() {
        ask(
            opts,
            model,
            &spec,
            spend_cap_usd,
            sealed,
            &mut cache,
            &mut report,
        )
        .await?;
    }
    let verdicts = answered(&base, &cache);
    report.decided = base
        .moves
        .iter()
        .filter(|m| m.undecided && verdicts.contains_key(&unit_hash(&m.body)))
        .count();
    let decided_opts = TidyOptions {
        model_verdicts: verdicts.clone(),
        ..opts.clone()
    };
    let mut p = plan(&decided_opts)?;
    p.model = Some(report);
    Ok((p, verdicts))
}

/// Send the sealed batches (after the spend cap check), log each as a `tidy` run, cache
/// the valid answers.
async fn ask(
    opts: &TidyOptions,
    model: &ResolvedModel,
    spec: &str,
    spend_cap_usd: Option<f64>,
    sealed: Vec<(Vec<Asked>, Outgoing)>,
    cache: &mut BTreeMap<String, Verdict>,
    report: &mut ModelReport,
) -> Result<()> {
    let store = codex_free_store::Store::open_in_home(&opts.home)?;
    if let Some(cap) = spend_cap_usd {
        let spent = store.spend_this_month()?;
        if spent.usd >= cap {
            report.problems.push(format!(
                "not sent: this month's spend ({}) has reached the cap ({}); the undecided units stay",
                codex_free_models::prices::format_cost(Some(spent.usd)),
                codex_free_models::prices::format_cost(Some(cap))
            ));
            return Ok(());
        }
    }
    let run_id = store.begin_run("tidy", "tidy-model", Some(spec))?;
    let cancel = tokio_util::sync::CancellationToken::new();
    let (mut ok, mut failed) = (0i64, 0i64);
    let mut changed = false;
    for (no, (units, out)) in sealed.into_iter().enumerate() {
        let t = std::time::Instant::now();
        let r = model.client.complete(&out, &cancel).await;
        report.sent += 1;
        let mut row = codex_free_store::usage::UsageRow {
            run_id: run_id.clone(),
            phase: "tidy".into(),
            request_no: no as i64 + 1,
            model: spec.to_string(),
            duration_ms: t.elapsed().as_millis() as i64,
            ..Default::default()
        };
        match r {
            Ok(c) => {
                let cost = model.price.map(|p| p.cost(&c.usage));
                row.attempts = i64::from(c.attempts);
                row.tokens = c.usage.counts();
                row.cost_usd = cost;
                report.used_tokens.0 += c.usage.input;
                report.used_tokens.1 += c.usage.output;
                if let Some(x) = cost {
                    *report.cost_usd.get_or_insert(0.0) += x;
                }
                match parse_answer(&c.content, units.len()) {
                    Some(vs) => {
                        row.outcome = "ok".into();
                        ok += 1;
                        for (u, v) in units.iter().zip(vs) {
                            cache.insert(u.hash.clone(), v);
                        }
                        changed = true;
                    }
                    None => {
                        row.outcome = "failed".into();
                        row.error = Some("answer is not the verdict schema".into());
                        failed += 1;
                        report.problems.push(format!(
                            "request {}: the answer is not the verdict schema; its {} unit(s) stay",
                            no + 1,
                            units.len()
                        ));
                    }
                }
            }
            Err(e) => {
                row.attempts = i64::from(e.attempts);
                row.outcome = "failed".into();
                row.error = Some(e.to_string());
                failed += 1;
                report.problems.push(format!(
                    "request {} failed: {e}; its {} unit(s) stay",
                    no + 1,
                    units.len()
                ));
            }
        }
        store.record_usage(&row)?;
    }
    store.finish_run(
        &run_id,
        &codex_free_store::usage::RunSummary {
            claimed: ok + failed,
            with_output: ok,
            failed,
            outcome: if failed == 0 { "ok" } else { "failed" }.into(),
            error: (failed > 0).then(|| report.problems.join("; ")),
            ..Default::default()
        },
    )?;
    if changed {
        save_cache(&opts.home, cache)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_decides_only_when_it_is_exactly_the_schema() {
        assert_eq!(
            parse_answer(
                r#"{"units":[{"id":"u2","verdict":"durable"},{"id":"u1","verdict":"stale"}]}"#,
                2
            ),
            Some(vec![Verdict::Stale, Verdict::Durable])
        );
        for bad in [
            "sure! all durable",
            r#"{"units":[{"id":"u1","verdict":"stale"}]}"#,
            r#"{"units":[{"id":"u1","verdict":"stale"},{"id":"u1","verdict":"durable"}]}"#,
            r#"{"units":[{"id":"u1","verdict":"maybe"},{"id":"u2","verdict":"stale"}]}"#,
            r#"{"units":[{"id":"u3","verdict":"stale"},{"id":"u2","verdict":"stale"}]}"#,
        ] {
            assert_eq!(parse_answer(bad, 2), None, "{bad}");
        }
    }
}
