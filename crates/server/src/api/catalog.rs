//! The real model catalog: providers from the built-in presets (`providers::PRESETS`, one
//! entry per key account), models and prices from the bundled LiteLLM snapshot with the
//! user's `memories.prices` overrides, and "test connection" through
//! `providers::check`.
//!
//! Invariant: a model without a known price reports `None` prices (the UI says "price
//! unknown"), never 0.

use std::path::PathBuf;

use crate::api::dto::{ConnectionTest, ModelInfo};
use crate::api::hooks::{ModelCatalog, Provider};
use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::config::{CONFIG_FILE, Config};
use codex_free_models::prices::PriceTable;
use codex_free_models::{DEFAULT_EXTRACT_MODEL, ModelRef, PRESETS, endpoint_for};
use codex_free_secrets::Secret;

/// Catalog over the bundled price table and the config in `home`.
pub struct PriceCatalog {
    home: PathBuf,
}

impl PriceCatalog {
    /// A catalog reading `<home>/codex.config.json` for overrides on each call.
    pub fn new(home: impl Into<PathBuf>) -> Self {
        Self { home: home.into() }
    }

    fn config(&self) -> Config {
        Config::load(&self.home.join(CONFIG_FILE))
            .map(|l| l.config)
            .unwrap_or_default()
    }
}

fn display_name(id: &str) -> String {
    match id {
        "openai" => "OpenAI",
        "anthropic" => "Anthropic",
        "openrouter" => "OpenRouter",
        "deepseek" => "DeepSeek",
        "ollama" => "Ollama (local)",
        "lmstudio" => "LM Studio (local)",
        other => other,
    }
    .to_string()
}

impl ModelCatalog for PriceCatalog {
    /// One provider per key account (`openai-chat` shares `openai`'s key), in preset order,
    /// with the base URL from `memories.providers.<name>.base_url` when set.
    fn providers(&self) -> Vec<Provider> {
        let cfg = self.config();
        let mut out: Vec<Provider> = Vec::new();
        for p in PRESETS {
            if out.iter().any(|o| o.id == p.account) {
                continue;
            }
            let base_url = endpoint_for(p.name, &cfg.memories.providers)
                .map(|e| e.1)
                .unwrap_or_else(|_| p.base_url.to_string());
            out.push(Provider {
                id: p.account.to_string(),
                name: display_name(p.account),
                base_url,
                needs_key: p.key_required,
            });
        }
        out
    }

    fn models(&self) -> Vec<ModelInfo> {
        let cfg = self.config();
        let table = PriceTable::bundled();
        let mut names: Vec<String> = Vec::new();
        for p in PRESETS {
            for id in table.model_ids(p.name) {
                if p.name != "openai-chat" {
                    names.push(format!("{}/{id}", p.name));
                }
            }
        }
        names.extend(cfg.memories.prices.keys().cloned());
        names.sort();
        names.dedup();
        names
            .into_iter()
            .filter_map(|spec| {
                let m = ModelRef::parse(&spec).ok()?;
                let info = table.lookup(&m, &cfg.memories.prices);
                let per_m = |v: f64| (v * 1e6 * 1e6).round() / 1e6;
                Some(ModelInfo {
                    id: spec,
                    provider: m.provider.clone(),
                    input_per_mtok_usd: info.price.map(|p| per_m(p.input)),
                    cached_input_per_mtok_usd: info.price.map(|p| per_m(p.cached_input)),
                    output_per_mtok_usd: info.price.map(|p| per_m(p.output)),
                    context_window: info.context_window,
                })
            })
            .collect()
    }

    fn default_model(&self) -> Option<String> {
        Some(DEFAULT_EXTRACT_MODEL.to_string())
    }

    fn test_connection(&self, provider: &str, key: Option<&Secret>) -> Result<ConnectionTest> {
        let cfg = self.config();
        let (api, base_url, ..) = endpoint_for(provider, &cfg.memories.providers)?;
        let handle = tokio::runtime::Handle::try_current()
            .map_err(|_| Error::InvalidArgument("test_connection needs a tokio runtime".into()))?;
        let c = handle.block_on(codex_free_models::check::check_connection(
            api, &base_url, key,
        ));
        Ok(ConnectionTest {
            ok: c.ok,
            message: c.message,
            latency_ms: Some(c.latency_ms),
            model: None,
            cost_usd: None,
        })
    }

    fn test_model(
        &self,
        spec: &str,
        secrets: &dyn codex_free_secrets::SecretStore,
    ) -> Result<ConnectionTest> {
        let cfg = self.config();
        let handle = tokio::runtime::Handle::try_current()
            .map_err(|_| Error::InvalidArgument("test_model needs a tokio runtime".into()))?;
        let o = handle.block_on(codex_free_models::check::tiny_request(
            &self.home,
            &cfg.memories,
            secrets,
            spec,
        ));
        Ok(ConnectionTest {
            ok: o.ok,
            message: o.message,
            latency_ms: Some(o.latency_ms),
            model: Some(o.model),
            cost_usd: o.cost_usd,
        })
    }

    /// Probes the local presets (Ollama, LM Studio) at their configured base URLs.
    fn local_servers(&self) -> Vec<crate::api::dto::LocalModels> {
        let cfg = self.config();
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for p in PRESETS.iter().filter(|p| !p.key_required) {
            if out
                .iter()
                .any(|o: &crate::api::dto::LocalModels| o.provider == p.name)
            {
                continue;
            }
            let Ok((_, base_url, ..)) = endpoint_for(p.name, &cfg.memories.providers) else {
                continue;
            };
            if let Some(found) = handle.block_on(codex_free_models::check::local_models(&base_url))
            {
                out.push(crate::api::dto::LocalModels {
                    provider: p.name.to_string(),
                    base_url: found.base_url,
                    models: found
                        .models
                        .into_iter()
                        .map(|m| format!("{}/{m}", p.name))
                        .collect(),
                });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_providers_once_and_priced_models() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join(CONFIG_FILE),
            r#"{"memories":{"prices":{"local/my-model":{"input_per_mtok":1.5,"output_per_mtok":3,"context_window":32000}}}}"#,
        )
        .unwrap();
        let c = PriceCatalog::new(d.path());
        let ids: Vec<_> = c.providers().into_iter().map(|p| p.id).collect();
        assert_eq!(
            ids,
            vec![
                "openai",
                "anthropic",
                "openrouter",
                "deepseek",
                "ollama",
                "lmstudio"
            ]
        );
        let models = c.models();
        assert!(models.len() > 50, "{}", models.len());
        assert!(models.iter().all(|m| !m.id.starts_with("openai-chat/")));
        let mine = models
            .iter()
            .find(|m| m.id == "local/my-model")
            .expect("override listed");
        assert_eq!(
            (
                mine.input_per_mtok_usd,
                mine.output_per_mtok_usd,
                mine.context_window
            ),
            (Some(1.5), Some(3.0), Some(32000))
        );
        let priced = models
            .iter()
            .filter(|m| m.provider == "openai" && m.input_per_mtok_usd.is_some())
            .count();
        assert!(priced > 10, "{priced}");
        assert!(c.default_model().is_some());
    }
}
