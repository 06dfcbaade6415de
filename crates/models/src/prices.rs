//! Model prices and context windows.
//!
//! Bundled table: a pinned, trimmed snapshot of LiteLLM's
//! `model_prices_and_context_window.json` (MIT licence, © Berri AI,
//! <https://github.com/BerriAI/litellm>), taken from the `litellm` 1.110.2 wheel and cut to
//! the chat models of the providers we speak by `scripts/trim_litellm_prices.py`; embedded
//! with `include_str!` (`model_prices.json` beside this file). User overrides in
//! `memories.prices` (USD per million tokens) win over it.
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

/// What the tables say about one model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelInfo {
    /// Price, `None` when unknown.
    pub price: Option<Price>,
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
    max_input_tokens: Option<u64>,
    max_output_tokens: Option<u64>,
    max_tokens: Option<u64>,
    supports_reasoning: Option<bool>,
}

#[derive(Debug, Deserialize)]
struct Doc {
    models: HashMap<String, Entry>,
}

/// The bundled price table.
#[derive(Debug)]
pub struct PriceTable {
    models: HashMap<String, Entry>,
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
            PriceTable { models: doc.models }
        })
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
        let lp = litellm_provider(&m.provider)?;
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
            return ModelInfo {
                price: Some(Price {
                    input: per(o.input_per_mtok),
                    output: per(o.output_per_mtok),
                    cached_input: per(o.cached_input_per_mtok.unwrap_or(o.input_per_mtok)),
                    cache_write: per(o.cache_write_per_mtok.unwrap_or(o.input_per_mtok)),
                }),
                context_window: o.context_window.or(context_window),
                reasoning,
                max_output_tokens,
                source: "config".into(),
            };
        }
        match found {
            Some((key, e)) => {
                let price = match (e.input_cost_per_token, e.output_cost_per_token) {
                    (Some(i), Some(o)) => Some(Price {
                        input: i,
                        output: o,
                        cached_input: e.cache_read_input_token_cost.unwrap_or(i),
                        cache_write: e.cache_creation_input_token_cost.unwrap_or(i),
                    }),
                    _ => None,
                };
                let source = if price.is_some() {
                    format!("litellm:{key}")
                } else {
                    "unknown".into()
                };
                ModelInfo {
                    price,
                    context_window,
                    reasoning,
                    max_output_tokens,
                    source,
                }
            }
            None => ModelInfo {
                price: None,
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
}
