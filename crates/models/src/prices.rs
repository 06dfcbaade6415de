//! Model prices and context windows.
//!
//! Bundled table: a pinned, trimmed snapshot of LiteLLM's
//! `model_prices_and_context_window.json` (MIT licence, © Berri AI,
//! <https://github.com/BerriAI/litellm>), taken from the `litellm` 1.110.2 wheel and cut to
//! the chat models of the providers we speak by `scripts/trim_litellm_prices.py`; embedded
//! with `include_str!` (`model_prices.json` beside this file; [`PriceTable::source`] names
//! it and the day it was taken). User overrides in `memories.prices` (USD per million
//! tokens) win over it.
//!
//! Beyond the flat [`Price`], a model's [`ModelPrice`] carries what the table knows of
//! Anthropic's 1-hour cache writes (`cache_creation_input_token_cost_above_1hr`; the plain
//! cache-write rate is the 5-minute one) and its long-context tiers
//! (`<rate>_above_<N>k_tokens`): a request whose input — cache reads and writes included —
//! exceeds N thousand tokens has *every* token billed at the tier's rates, as LiteLLM
//! computes it and the providers bill it.
//!
//! A model whose provider is none of ours (a Codex custom `model_provider`, a pi provider
//! we do not speak) is looked up by its bare model name, as ccusage does: a proxy serving
//! `gpt-5` is priced as `gpt-5`.
//!
//! Invariant: a model not found in either place has *no* price ([`ModelInfo::price`] is
//! `None`, shown as "price unknown"); it is never treated as free.

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::{ModelRef, TokenUsage};
use codex_free_core::config::PriceOverride;

const BUNDLED: &str = include_str!("model_prices.json");

/// USD per token.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Price {
    /// Uncached input.
    pub input: f64,
    /// Output (reasoning included).
    pub output: f64,
    /// Cached input read.
    pub cached_input: f64,
    /// Cache write.
    pub cache_write: f64,
}

impl Price {
    /// Cost of `u` in USD: uncached input, cached input, cache writes and output each at
    /// their own rate.
    pub fn cost(&self, u: &TokenUsage) -> f64 {
        let uncached = u
            .input
            .saturating_sub(u.cached_input)
            .saturating_sub(u.cache_write);
        uncached as f64 * self.input
            + u.cached_input as f64 * self.cached_input
            + u.cache_write as f64 * self.cache_write
            + u.output as f64 * self.output
    }
}

/// A long-context tier: the rates of a request whose input exceeds `above_input_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LongContextTier {
    /// Threshold on the request's input tokens (cache reads and writes included).
    pub above_input_tokens: u64,
    /// The tier's rates (a rate the table leaves out is the flat one).
    pub rates: Price,
    /// The tier's 1-hour cache-write rate, USD per token.
    pub cache_write_1h: f64,
}

/// Everything the table says about a model's price: the flat rates, the 1-hour cache-write
/// rate and the long-context tiers (ascending thresholds).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelPrice {
    /// The flat rates (the 5-minute cache-write rate in `cache_write`).
    pub base: Price,
    /// 1-hour cache writes, USD per token (the 5-minute rate when the table has none).
    pub cache_write_1h: f64,
    /// Long-context tiers, lowest threshold first (empty for most models).
    pub long_context: Vec<LongContextTier>,
}

impl ModelPrice {
    /// A price without 1-hour rate or tiers (a `memories.prices` override).
    pub fn flat(p: Price) -> Self {
        ModelPrice {
            base: p,
            cache_write_1h: p.cache_write,
            long_context: Vec::new(),
        }
    }

    /// Cost of one request `u` in USD, of whose cache writes `cache_write_1h` tokens were
    /// 1-hour writes (the rest 5-minute ones): the rates of the highest tier whose
    /// threshold `u.input` exceeds, else the flat ones.
    pub fn cost(&self, u: &TokenUsage, cache_write_1h: u64) -> f64 {
        let (rates, rate_1h) = self
            .long_context
            .iter()
            .rev()
            .find(|t| u.input > t.above_input_tokens)
            .map(|t| (t.rates, t.cache_write_1h))
            .unwrap_or((self.base, self.cache_write_1h));
        let long = cache_write_1h.min(u.cache_write) as f64;
        rates.cost(u) + long * (rate_1h - rates.cache_write)
    }
}

/// What the tables say about one model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelInfo {
    /// Flat price, `None` when unknown.
    pub price: Option<Price>,
    /// The full price (1-hour cache writes, long-context tiers); `Some` exactly when
    /// `price` is.
    pub pricing: Option<ModelPrice>,
    /// Context window (max input tokens), when known.
    pub context_window: Option<u64>,
    /// Whether the model is a reasoning model.
    pub reasoning: bool,
    /// Largest output in tokens, when known.
    pub max_output_tokens: Option<u64>,
    /// Where the price came from: `config`, `litellm:<key>` or `unknown`.
    pub source: String,
}

#[derive(Debug, Clone, Deserialize)]
struct Entry {
    litellm_provider: Option<String>,
    input_cost_per_token: Option<f64>,
    output_cost_per_token: Option<f64>,
    cache_read_input_token_cost: Option<f64>,
    cache_creation_input_token_cost: Option<f64>,
    cache_creation_input_token_cost_above_1hr: Option<f64>,
    max_input_tokens: Option<u64>,
    max_output_tokens: Option<u64>,
    max_tokens: Option<u64>,
    supports_reasoning: Option<bool>,
    /// The other fields: the long-context tiers (`<rate>_above_<N>k_tokens`) among them.
    #[serde(flatten)]
    rest: HashMap<String, serde_json::Value>,
}

impl Entry {
    /// The flat price and its tiers, when the entry has input and output rates.
    fn pricing(&self) -> Option<ModelPrice> {
        let (i, o) = (self.input_cost_per_token?, self.output_cost_per_token?);
        let base = Price {
            input: i,
            output: o,
            cached_input: self.cache_read_input_token_cost.unwrap_or(i),
            cache_write: self.cache_creation_input_token_cost.unwrap_or(i),
        };
        let cache_write_1h = self
            .cache_creation_input_token_cost_above_1hr
            .unwrap_or(base.cache_write);
        let mut thresholds: Vec<u64> = self
            .rest
            .keys()
            .filter_map(|k| k.strip_prefix("input_cost_per_token_above_"))
            .filter_map(|k| k.strip_suffix("k_tokens"))
            .filter_map(|n| n.parse::<u64>().ok())
            .collect();
        thresholds.sort_unstable();
        thresholds.dedup();
        let long_context = thresholds
            .into_iter()
            .map(|n| {
                let rate = |name: &str, flat: f64| {
                    self.rest
                        .get(&format!("{name}_above_{n}k_tokens"))
                        .and_then(serde_json::Value::as_f64)
                        .unwrap_or(flat)
                };
                let rates = Price {
                    input: rate("input_cost_per_token", base.input),
                    output: rate("output_cost_per_token", base.output),
                    cached_input: rate("cache_read_input_token_cost", base.cached_input),
                    cache_write: rate("cache_creation_input_token_cost", base.cache_write),
                };
                LongContextTier {
                    above_input_tokens: n * 1000,
                    rates,
                    cache_write_1h: rate(
                        "cache_creation_input_token_cost_above_1hr",
                        cache_write_1h,
                    ),
                }
            })
            .collect();
        Some(ModelPrice {
            base,
            cache_write_1h,
            long_context,
        })
    }
}

#[derive(Debug, Deserialize)]
struct Doc {
    #[serde(rename = "_source", default)]
    source: String,
    #[serde(rename = "_taken", default)]
    taken: String,
    models: HashMap<String, Entry>,
}

/// The bundled price table.
#[derive(Debug)]
pub struct PriceTable {
    models: HashMap<String, Entry>,
    source: String,
}

/// LiteLLM's provider name for one of ours.
fn litellm_provider(ours: &str) -> Option<&'static str> {
    Some(match ours {
        "openai" | "openai-chat" => "openai",
        "anthropic" => "anthropic",
        "deepseek" => "deepseek",
        "ollama" => "ollama",
        "openrouter" => "openrouter",
        "lmstudio" => "lm_studio",
        _ => return None,
    })
}

impl PriceTable {
    /// The embedded snapshot (parsed once per process).
    #[expect(
        clippy::expect_used,
        reason = "the price table is compiled into the binary; its unit tests parse it"
    )]
    pub fn bundled() -> &'static PriceTable {
        static T: OnceLock<PriceTable> = OnceLock::new();
        T.get_or_init(|| {
            let doc: Doc = serde_json::from_str(BUNDLED).expect("bundled model_prices.json parses");
            PriceTable {
                models: doc.models,
                source: format!("{}; taken {}", doc.source, doc.taken),
            }
        })
    }

    /// Where the table comes from and the day it was taken, one line: `LiteLLM
    /// model_prices_and_context_window.json (MIT, BerriAI/litellm), litellm 1.110.2, trimmed
    /// by scripts/trim_litellm_prices.py; taken 2026-12-03`.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Number of models in the table.
    pub fn len(&self) -> usize {
        self.models.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.models.is_empty()
    }

    fn find(&self, m: &ModelRef) -> Option<(&str, &Entry)> {
        let Some(lp) = litellm_provider(&m.provider) else {
            // A provider we do not speak (a custom proxy): by the bare model name, of
            // whichever provider lists it; a `vendor/model` id by its last part too.
            let bare = m.model.rsplit('/').next().unwrap_or(&m.model);
            return [m.model.as_str(), bare]
                .into_iter()
                .find_map(|k| self.models.get_key_value(k))
                .map(|(k, e)| (k.as_str(), e));
        };
        // (key, the provider the entry must belong to)
        let mut keys = vec![(format!("{lp}/{}", m.model), lp), (m.model.clone(), lp)];
        // OpenRouter ids are `vendor/model`: fall back to the vendor's own list price.
        if lp == "openrouter"
            && let Some((vendor, id)) = m.model.split_once('/')
            && let Some(vp) = litellm_provider(vendor)
        {
            keys.push((format!("{vp}/{id}"), vp));
            keys.push((id.to_string(), vp));
        }
        for (k, want) in keys {
            if let Some((key, e)) = self.models.get_key_value(k.as_str())
                && e.litellm_provider.as_deref() == Some(want)
            {
                return Some((key.as_str(), e));
            }
        }
        None
    }

    /// Model ids (without the provider prefix) the table lists for our `provider`, sorted:
    /// the choices of the web UI's model picker.
    pub fn model_ids(&self, provider: &str) -> Vec<String> {
        let Some(lp) = litellm_provider(provider) else {
            return Vec::new();
        };
        let prefix = format!("{lp}/");
        let mut ids: Vec<String> = self
            .models
            .iter()
            .filter(|(_, e)| e.litellm_provider.as_deref() == Some(lp))
            .map(|(k, _)| k.strip_prefix(&prefix).unwrap_or(k).to_string())
            .collect();
        ids.sort();
        ids.dedup();
        ids
    }

    /// Price and window of `m`: a `memories.prices["provider/model"]` override first, then
    /// the bundled table. An override without `context_window` keeps the table's.
    pub fn lookup(&self, m: &ModelRef, overrides: &BTreeMap<String, PriceOverride>) -> ModelInfo {
        let found = self.find(m);
        let context_window = found.and_then(|(_, e)| e.max_input_tokens.or(e.max_tokens));
        let reasoning = found
            .and_then(|(_, e)| e.supports_reasoning)
            .unwrap_or(false);
        let max_output_tokens = found.and_then(|(_, e)| e.max_output_tokens);
        if let Some(o) = overrides.get(&m.to_string()) {
            let per = |v: f64| v / 1_000_000.0;
            let p = Price {
                input: per(o.input_per_mtok),
                output: per(o.output_per_mtok),
                cached_input: per(o.cached_input_per_mtok.unwrap_or(o.input_per_mtok)),
                cache_write: per(o.cache_write_per_mtok.unwrap_or(o.input_per_mtok)),
            };
            return ModelInfo {
                price: Some(p),
                pricing: Some(ModelPrice::flat(p)),
                context_window: o.context_window.or(context_window),
                reasoning,
                max_output_tokens,
                source: "config".into(),
            };
        }
        match found {
            Some((key, e)) => {
                let pricing = e.pricing();
                let price = pricing.as_ref().map(|p| p.base);
                let source = if price.is_some() {
                    format!("litellm:{key}")
                } else {
                    "unknown".into()
                };
                ModelInfo {
                    price,
                    pricing,
                    context_window,
                    reasoning,
                    max_output_tokens,
                    source,
                }
            }
            None => ModelInfo {
                price: None,
                pricing: None,
                context_window: None,
                reasoning: false,
                max_output_tokens: None,
                source: "unknown".into(),
            },
        }
    }
}

/// Format a cost for humans: `$0.0123`, or `price unknown` for `None`.
pub fn format_cost(c: Option<f64>) -> String {
    match c {
        Some(v) if v >= 1.0 => format!("${v:.2}"),
        Some(v) => format!("${v:.4}"),
        None => "price unknown".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(s: &str) -> ModelRef {
        ModelRef::parse(s).unwrap()
    }

    #[test]
    fn bundled_table_has_the_supported_providers() {
        let t = PriceTable::bundled();
        assert!(t.len() > 100);
        let none = BTreeMap::new();
        let gpt = t.lookup(&m("openai/gpt-5-mini"), &none);
        let p = gpt.price.expect("gpt-5-mini priced");
        assert!(p.input > 0.0 && p.output > p.input && p.cached_input < p.input);
        assert!(gpt.context_window.unwrap() >= 100_000);
        assert!(gpt.reasoning);
        assert!(
            t.lookup(&m("openai-chat/gpt-5-mini"), &none)
                .price
                .is_some()
        );
        assert!(
            t.lookup(&m("anthropic/claude-haiku-4-5"), &none)
                .price
                .is_some()
        );
        assert!(
            t.lookup(&m("deepseek/deepseek-chat"), &none)
                .price
                .is_some()
        );
        assert!(
            t.lookup(&m("openrouter/anthropic/claude-haiku-4-5"), &none)
                .price
                .is_some(),
            "vendor fallback"
        );
        // Wrong provider for a bare key: not matched.
        assert!(t.lookup(&m("anthropic/gpt-5-mini"), &none).price.is_none());
        let unknown = t.lookup(&m("lmstudio/my-local-model"), &none);
        assert_eq!((unknown.price, unknown.source.as_str()), (None, "unknown"));
    }

    #[test]
    fn overrides_win_and_cost_splits_cached_and_output() {
        let t = PriceTable::bundled();
        let mut o = BTreeMap::new();
        o.insert(
            "lmstudio/my-local-model".to_string(),
            PriceOverride {
                input_per_mtok: 1.0,
                output_per_mtok: 4.0,
                cached_input_per_mtok: Some(0.1),
                cache_write_per_mtok: None,
                context_window: Some(32_000),
            },
        );
        let i = t.lookup(&m("lmstudio/my-local-model"), &o);
        assert_eq!(
            (i.source.as_str(), i.context_window),
            ("config", Some(32_000))
        );
        let p = i.price.unwrap();
        let u = TokenUsage {
            input: 1_000_000,
            cached_input: 400_000,
            cache_write: 100_000,
            output: 10_000,
            reasoning: 2000,
        };
        // 500k uncached * 1 + 400k * 0.1 + 100k * 1 (write defaults to input) + 10k * 4, per 1M.
        let expect = 0.5 + 0.04 + 0.1 + 0.04;
        assert!((p.cost(&u) - expect).abs() < 1e-9, "{}", p.cost(&u));
        assert_eq!(format_cost(None), "price unknown");
        assert_eq!(format_cost(Some(0.012345)), "$0.0123");
    }

    /// Claude Code marks each cache write 5-minute or 1-hour; the table bills 1-hour writes
    /// at their own rate (2x input against 1.25x for Sonnet 4.5).
    #[test]
    fn one_hour_cache_writes_cost_their_own_rate() {
        let none = BTreeMap::new();
        let p = PriceTable::bundled()
            .lookup(&m("anthropic/claude-sonnet-4-5"), &none)
            .pricing
            .expect("priced");
        assert_eq!((p.base.cache_write, p.cache_write_1h), (3.75e-6, 6e-6));
        let u = TokenUsage {
            input: 1_000_000,
            cache_write: 1_000_000,
            ..Default::default()
        };
        assert!((p.cost(&u, 0) - 3.75).abs() < 1e-9);
        assert!((p.cost(&u, 1_000_000) - 6.0).abs() < 1e-9);
        // Half and half; a 1-hour count above the writes is capped at the writes.
        assert!((p.cost(&u, 500_000) - (1.875 + 3.0)).abs() < 1e-9);
        assert!((p.cost(&u, 9_000_000) - 6.0).abs() < 1e-9);
    }

    /// gpt-5.4 bills every token of a request over 272k input tokens at its long-context
    /// rates (input 2x, output 1.5x, cache reads 2x).
    #[test]
    fn a_request_over_the_threshold_pays_the_long_context_rates() {
        let none = BTreeMap::new();
        let p = PriceTable::bundled()
            .lookup(&m("openai/gpt-5.4"), &none)
            .pricing
            .expect("priced");
        assert_eq!(p.long_context.len(), 1);
        assert_eq!(p.long_context[0].above_input_tokens, 272_000);
        let at = |input: u64| TokenUsage {
            input,
            cached_input: input / 2,
            output: 1000,
            ..Default::default()
        };
        let flat = |u: &TokenUsage| p.base.cost(u);
        let at_limit = at(272_000);
        assert_eq!(p.cost(&at_limit, 0), flat(&at_limit), "not above: flat");
        let over = at(300_000);
        let want = 150_000.0 * 5e-6 + 150_000.0 * 5e-7 + 1000.0 * 2.25e-5;
        assert!(
            (p.cost(&over, 0) - want).abs() < 1e-12,
            "{}",
            p.cost(&over, 0)
        );
        assert!(p.cost(&over, 0) > flat(&over));
    }

    /// A Codex custom `model_provider` (a proxy) serving `gpt-5` gets gpt-5's price; a model
    /// the table does not list stays unknown.
    #[test]
    fn a_custom_provider_is_priced_by_model_name() {
        let t = PriceTable::bundled();
        let none = BTreeMap::new();
        let want = t.lookup(&m("openai/gpt-5"), &none).price.expect("gpt-5");
        for spec in ["my-proxy/gpt-5", "mock/gpt-5", "litellm-proxy/openai/gpt-5"] {
            let i = t.lookup(&m(spec), &none);
            assert_eq!(
                (i.price, i.source.as_str()),
                (Some(want), "litellm:gpt-5"),
                "{spec}"
            );
        }
        let mock = t.lookup(&m("mock/mock-model"), &none);
        assert_eq!((mock.price, mock.source.as_str()), (None, "unknown"));
        // A provider we speak keeps its own list (no cross-provider guess).
        assert!(t.lookup(&m("anthropic/gpt-5"), &none).price.is_none());
    }

    #[test]
    fn the_table_names_its_source_and_the_day_it_was_taken() {
        let s = PriceTable::bundled().source();
        assert!(
            s.contains("litellm 1.110.2") && s.contains("BerriAI/litellm"),
            "{s}"
        );
        let day = s.rsplit("taken ").next().unwrap();
        assert!(day.parse::<chrono::NaiveDate>().is_ok(), "{s}");
    }
}
