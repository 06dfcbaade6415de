//! `memories forecast`: what the backlog will cost before it is sent. For every session
//! phase 1 would extract (idle time ignored: a session still in use joins the backlog when
//! it goes idle; `memories.exclude_paths` honoured), the session is rendered as a run
//! renders it and its request's input counted as the gate counts it (o200k_base; the
//! provider's own count differs by a few per cent). The output is estimated from the
//! average of the last phase-1 requests (or [`DEFAULT_OUTPUT_TOKENS`] before any). Costs
//! are given for the configured model and for [`ALTERNATIVES`] with a known price, and the
//! month's spend is projected at this month's pace against `memories.monthly_spend_cap_usd`.
//!
//! Invariant: no model is called, no key is needed, nothing is claimed; only the thread list
//! is refreshed (as every run's discovery does).

use std::sync::Arc;

use serde::Serialize;

use crate::phase1::{RolloutInput, SYSTEM_PROMPT, output_schema};
use codex_free_core::Result;
use codex_free_core::config::MemoriesConfig;
use codex_free_models::{DEFAULT_EXTRACT_MODEL, ModelRef, PriceTable, TokenUsage};
use codex_free_store::{ClaimParams, Store};

/// Cheap models commonly used for extraction, priced from the bundled table when known.
pub const ALTERNATIVES: &[&str] = &[
    "openai/gpt-5-nano",
    "openai/gpt-5-mini",
    "google/gemini-2.5-flash-lite",
    "anthropic/claude-haiku-4-5",
    "deepseek/deepseek-chat",
];

/// Output tokens assumed per extraction before any has been logged (a summary and a few
/// dozen bullets).
pub const DEFAULT_OUTPUT_TOKENS: u64 = 1_500;

/// Sessions and tokens of one source.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SourceForecast {
    /// `codex`, `claude`, `pi`, `mcp`.
    pub source: String,
    /// Sessions waiting for extraction.
    pub sessions: usize,
    /// Their requests' input tokens.
    pub input_tokens: u64,
}

/// The backlog's cost with one model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelCost {
    /// `provider/model-id`.
    pub model: String,
    /// The configured extraction model (`memories.extract_model`).
    pub configured: bool,
    /// USD for the whole backlog; `None` when the price is unknown.
    pub cost_usd: Option<f64>,
}

/// What the forecast finds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Forecast {
    /// Per source, sources with no waiting session left out.
    pub sources: Vec<SourceForecast>,
    /// Sessions in all.
    pub sessions: usize,
    /// Input tokens in all.
    pub input_tokens: u64,
    /// Output tokens expected in all.
    pub output_tokens: u64,
    /// Output tokens assumed per request (logged average, or the default).
    pub output_tokens_per_request: u64,
    /// Cost per model, the configured one first, then cheapest first.
    pub models: Vec<ModelCost>,
    /// Sessions `memories.exclude_paths` keeps out (not counted above).
    pub excluded: usize,
    /// Spend so far this calendar month (UTC), USD.
    pub month_spent_usd: f64,
    /// The month's spend if it goes on at this month's daily pace, USD.
    pub month_projected_usd: f64,
    /// `memories.monthly_spend_cap_usd`.
    pub cap_usd: Option<f64>,
}

/// Forecast the backlog of `cfg`'s sources as found by `input`.
///
/// Errors: discovery, rendering or database errors; an invalid `memories.exclude_paths`.
pub async fn forecast(
    store: &Store,
    cfg: &MemoriesConfig,
    input: Arc<dyn RolloutInput>,
) -> Result<Forecast> {
    let (store, cfg) = (store.clone(), cfg.clone());
    tokio::task::spawn_blocking(move || forecast_blocking(&store, &cfg, input.as_ref()))
        .await
        .map_err(|e| codex_free_core::Error::Store(format!("forecast task failed: {e}")))?
}

/// [`forecast`] on the calling thread (it reads and renders every waiting session: call
/// it off an async runtime's workers).
///
/// Errors: as [`forecast`].
pub fn forecast_blocking(
    store: &Store,
    cfg: &MemoriesConfig,
    input: &dyn RolloutInput,
) -> Result<Forecast> {
    use codex_free_core::tokens::count;
    let threads = input.scan(&cfg.sources)?;
    store.upsert_threads(&threads, cfg.generate_memories)?;
    let configured = cfg
        .extract_model
        .clone()
        .unwrap_or_else(|| DEFAULT_EXTRACT_MODEL.to_string());
    let info = ModelRef::parse(&configured)
        .map(|m| PriceTable::bundled().lookup(&m, &cfg.prices))
        .ok();
    let window = info.as_ref().and_then(|i| i.context_window);
    let params = ClaimParams {
        sources: cfg.sources.clone(),
        max_claimed: cfg.max_rollouts_per_startup,
        max_running: cfg.max_rollouts_per_startup,
        max_age_days: cfg.max_rollout_age_days,
        min_idle_hours: cfg.min_rollout_idle_hours,
        lease_seconds: codex_free_store::stage1::LEASE_SECONDS,
        worker_id: String::new(),
        force: true,
        exclude: crate::phase1::exclude_paths(cfg)?,
    };
    let eligible = store.eligible_threads(&params, codex_free_store::stage1::SCAN_LIMIT)?;
    let excluded = store.excluded_threads(&params)?.len();
    // What every request carries besides the session: instructions, schema, framing.
    let fixed = (count(SYSTEM_PROMPT) + count(&output_schema().to_string()) + 8) as u64;
    let mut sources: Vec<SourceForecast> = Vec::new();
    for t in &eligible {
        let rendered = match input.render(t, window, cfg.tool_result_token_budget) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(thread = %t.id, error = %e, "forecast: session not readable, left out");
                continue;
            }
        };
        let header = format!(
            "Session {} ({}), last active {}{}.\n\n<session>\n\n</session>\n\nReturn the JSON object now.",
            t.id,
            t.source,
            crate::run_log::iso(t.updated_at),
            t.cwd
                .as_deref()
                .map(|c| format!(", working directory {c}"))
                .unwrap_or_default()
        );
        let n = fixed + (count(&header) + count(&rendered)) as u64;
        match sources.iter_mut().find(|s| s.source == t.source) {
            Some(s) => {
                s.sessions += 1;
                s.input_tokens += n;
            }
            None => sources.push(SourceForecast {
                source: t.source.clone(),
                sessions: 1,
                input_tokens: n,
            }),
        }
    }
    let sessions: usize = sources.iter().map(|s| s.sessions).sum();
    let input_tokens: u64 = sources.iter().map(|s| s.input_tokens).sum();
    let recent: Vec<i64> = store
        .usage_between(Some(store.now() - 30 * 86_400), None)?
        .into_iter()
        .filter(|(_, u)| u.phase == "phase1" && u.outcome != "failed" && u.tokens.output_tokens > 0)
        .map(|(_, u)| u.tokens.output_tokens)
        .collect();
    let per_request = if recent.is_empty() {
        DEFAULT_OUTPUT_TOKENS
    } else {
        (recent.iter().sum::<i64>() / recent.len() as i64).max(0) as u64
    };
    let output_tokens = per_request * sessions as u64;
    let usage = TokenUsage {
        input: input_tokens,
        output: output_tokens,
        ..Default::default()
    };
    let cost_of = |m: &str| {
        ModelRef::parse(m)
            .ok()
            .and_then(|r| PriceTable::bundled().lookup(&r, &cfg.prices).price)
            .map(|p| p.cost(&usage))
    };
    let mut models = vec![ModelCost {
        model: configured.clone(),
        configured: true,
        cost_usd: cost_of(&configured),
    }];
    let mut alts: Vec<ModelCost> = ALTERNATIVES
        .iter()
        .filter(|m| **m != configured)
        .filter_map(|m| {
            cost_of(m).map(|c| ModelCost {
                model: (*m).to_string(),
                configured: false,
                cost_usd: Some(c),
            })
        })
        .collect();
    alts.sort_by(|a, b| {
        a.cost_usd
            .partial_cmp(&b.cost_usd)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    models.extend(alts);
    let spent = store.spend_this_month()?.usd;
    let now = store.now();
    let start = codex_free_store::usage::month_start(now);
    let next = codex_free_store::usage::month_start(start + 32 * 86_400);
    let elapsed_days = ((now - start) as f64 / 86_400.0).max(1.0);
    let month_days = (next - start) as f64 / 86_400.0;
    Ok(Forecast {
        sources,
        sessions,
        input_tokens,
        output_tokens,
        output_tokens_per_request: per_request,
        models,
        excluded,
        month_spent_usd: spent,
        month_projected_usd: spent / elapsed_days * month_days,
        cap_usd: cfg.monthly_spend_cap_usd,
    })
}

impl Forecast {
    /// The text `memories forecast` prints.
    pub fn render(&self) -> String {
        let usd = |c: Option<f64>| c.map_or("price unknown".to_string(), |c| format!("${c:.2}"));
        let mut s = format!(
            "backlog: {} session(s), ~{} input + ~{} output tokens (~{} per answer)\n",
            self.sessions, self.input_tokens, self.output_tokens, self.output_tokens_per_request
        );
        for x in &self.sources {
            s.push_str(&format!(
                "  {:<7} {} session(s), ~{} input tokens\n",
                x.source, x.sessions, x.input_tokens
            ));
        }
        if self.excluded > 0 {
            s.push_str(&format!(
                "  ({} session(s) excluded by memories.exclude_paths, never sent)\n",
                self.excluded
            ));
        }
        s.push_str("cost of the backlog:\n");
        for m in &self.models {
            s.push_str(&format!(
                "  {}{} {}\n",
                m.model,
                if m.configured { " (configured)" } else { "" },
                usd(m.cost_usd)
            ));
        }
        s.push_str(&format!(
            "this month: ${:.2} spent, ~${:.2} at this pace{}\n",
            self.month_spent_usd,
            self.month_projected_usd,
            match self.cap_usd {
                Some(c) if self.month_projected_usd > c => format!(", OVER the cap of ${c:.2}"),
                Some(c) => format!(", cap ${c:.2}"),
                None => ", no cap (memories.monthly_spend_cap_usd)".into(),
            }
        ));
        s.push_str("nothing was sent\n");
        s
    }
}
