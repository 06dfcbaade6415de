//! The Dashboard's backlog forecast: [`codex_free_pipeline::forecast::Forecast`] as a wire
//! type with a TypeScript twin (the same JSON `GET /api/forecast` always answered).

use serde::{Deserialize, Serialize};
#[cfg(test)]
use ts_rs::TS;

use codex_free_pipeline::forecast::Forecast;

/// Sessions and input tokens of one source waiting for extraction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct SourceForecastView {
    /// `codex`, `claude`, `pi`, `mcp`.
    pub source: String,
    /// Sessions waiting.
    pub sessions: usize,
    /// Their input tokens.
    #[cfg_attr(test, ts(type = "number"))]
    pub input_tokens: u64,
}

/// The backlog's cost with one model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct ModelCostView {
    /// `provider/model-id`.
    pub model: String,
    /// The configured extraction model.
    pub configured: bool,
    /// USD for the whole backlog; `null` when the price is unknown.
    pub cost_usd: Option<f64>,
}

/// What the backlog will cost before anything is sent (`GET /api/forecast`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct ForecastView {
    /// Per source.
    pub sources: Vec<SourceForecastView>,
    /// Sessions in all.
    pub sessions: usize,
    /// Input tokens in all.
    #[cfg_attr(test, ts(type = "number"))]
    pub input_tokens: u64,
    /// Output tokens expected in all.
    #[cfg_attr(test, ts(type = "number"))]
    pub output_tokens: u64,
    /// Output tokens assumed per request.
    #[cfg_attr(test, ts(type = "number"))]
    pub output_tokens_per_request: u64,
    /// Cost per model, the configured one first, then cheapest first.
    pub models: Vec<ModelCostView>,
    /// Sessions `memories.exclude_paths` keeps out.
    pub excluded: usize,
    /// Spend so far this month (UTC), USD.
    pub month_spent_usd: f64,
    /// The month's spend at this month's daily pace, USD.
    pub month_projected_usd: f64,
    /// `memories.monthly_spend_cap_usd`.
    pub cap_usd: Option<f64>,
}

impl From<Forecast> for ForecastView {
    fn from(f: Forecast) -> Self {
        Self {
            sources: f
                .sources
                .into_iter()
                .map(|s| SourceForecastView {
                    source: s.source,
                    sessions: s.sessions,
                    input_tokens: s.input_tokens,
                })
                .collect(),
            sessions: f.sessions,
            input_tokens: f.input_tokens,
            output_tokens: f.output_tokens,
            output_tokens_per_request: f.output_tokens_per_request,
            models: f
                .models
                .into_iter()
                .map(|m| ModelCostView {
                    model: m.model,
                    configured: m.configured,
                    cost_usd: m.cost_usd,
                })
                .collect(),
            excluded: f.excluded,
            month_spent_usd: f.month_spent_usd,
            month_projected_usd: f.month_projected_usd,
            cap_usd: f.cap_usd,
        }
    }
}
