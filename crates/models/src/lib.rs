//! Model providers: one small trait of ours ([`ModelClient`]) over the wire formats the
//! pipeline speaks — OpenAI Responses, OpenAI Chat Completions (also every
//! OpenAI-compatible endpoint: OpenRouter, DeepSeek, Ollama, LM Studio, custom) and
//! Anthropic Messages — plus model resolution (`provider/model-id`), credentials, the
//! price table and cost.
//!
//! The wire work is done by the `genai` crate ([`genai_client`]); it covers every need
//! (strict JSON-schema `response_format`, normalised usage with cached and reasoning
//! tokens, response headers for `Retry-After`, tool calls), so no raw `reqwest` is used.
//! Our code adds what a background job needs: retries with backoff on 429/5xx/timeouts
//! honouring `Retry-After`, a per-request timeout, cancellation, error classes that tell a
//! run-fatal problem (unknown model, bad key) from a retryable one, and cost.
//!
//! Invariant: this module tree is the only place that talks HTTP to model providers; every
//! request it sends is an [`Outgoing`], built only by the outgoing gate
//! ([`Outgoing::seal`]: redaction, the context window); an
//! explicit model is used as given or the call fails — there is never a silent switch to
//! another model; error texts never contain the request payload or a key.

pub mod check;
pub mod genai_client;
pub mod outgoing;
pub mod prices;

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::config::MemoriesConfig;
use codex_free_secrets::{SecretStore, resolve};

pub use outgoing::Outgoing;
pub use prices::{Price, PriceTable};

/// The phase-1 model used when `memories.extract_model` is null: a small, cheap OpenAI
/// model (Codex runs its extraction on a mini model too). Shown as "(default)" in status.
pub const DEFAULT_EXTRACT_MODEL: &str = "openai/gpt-5-mini";

/// Which wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Api {
    /// OpenAI `POST /responses`.
    OpenaiResponses,
    /// OpenAI `POST /chat/completions` (and compatible servers).
    OpenaiChat,
    /// Anthropic `POST /messages`.
    Anthropic,
}

impl Api {
    /// Config spelling (`openai-responses`, `openai-chat`, `anthropic`).
    pub fn as_str(self) -> &'static str {
        match self {
            Api::OpenaiResponses => "openai-responses",
            Api::OpenaiChat => "openai-chat",
            Api::Anthropic => "anthropic",
        }
    }
    fn parse(s: &str) -> Option<Api> {
        match s {
            "openai-responses" => Some(Api::OpenaiResponses),
            "openai-chat" => Some(Api::OpenaiChat),
            "anthropic" => Some(Api::Anthropic),
            _ => None,
        }
    }
}

/// How the JSON output shape is requested.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StructuredMode {
    /// The provider enforces the JSON schema (`strict: true`).
    Strict,
    /// JSON mode: the provider guarantees JSON, the prompt describes the shape.
    JsonObject,
    /// Instructions only ("compatibility mode"); local validation decides.
    None,
}

impl StructuredMode {
    /// Config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            StructuredMode::Strict => "strict",
            StructuredMode::JsonObject => "json_object",
            StructuredMode::None => "none",
        }
    }
    fn parse(s: &str) -> Option<Self> {
        match s {
            "strict" => Some(Self::Strict),
            "json_object" => Some(Self::JsonObject),
            "none" => Some(Self::None),
            _ => None,
        }
    }
}

/// A built-in provider preset.
#[derive(Debug, Clone, Copy)]
pub struct Preset {
    /// Provider name as written in `provider/model-id`.
    pub name: &'static str,
    /// Wire format.
    pub api: Api,
    /// Default base URL (ends with `/`).
    pub base_url: &'static str,
    /// Whether a key is required (local servers need none).
    pub key_required: bool,
    /// Secrets account the key is stored under (`secrets::resolve`), env `<ACCOUNT>_API_KEY`.
    pub account: &'static str,
    /// Default structured-output mode. Only OpenAI's own endpoints are verified strict.
    pub structured: StructuredMode,
}

/// Built-in providers. `openai` uses the Responses API, `openai-chat` Chat Completions.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "openai",
        api: Api::OpenaiResponses,
        base_url: "https://api.openai.com/v1/",
        key_required: true,
        account: "openai",
        structured: StructuredMode::Strict,
    },
    Preset {
        name: "openai-chat",
        api: Api::OpenaiChat,
        base_url: "https://api.openai.com/v1/",
        key_required: true,
        account: "openai",
        structured: StructuredMode::Strict,
    },
    Preset {
        name: "anthropic",
        api: Api::Anthropic,
        base_url: "https://api.anthropic.com/v1/",
        key_required: true,
        account: "anthropic",
        structured: StructuredMode::None,
    },
    Preset {
        name: "openrouter",
        api: Api::OpenaiChat,
        base_url: "https://openrouter.ai/api/v1/",
        key_required: true,
        account: "openrouter",
        structured: StructuredMode::None,
    },
    Preset {
        name: "deepseek",
        api: Api::OpenaiChat,
        base_url: "https://api.deepseek.com/v1/",
        key_required: true,
        account: "deepseek",
        structured: StructuredMode::JsonObject,
    },
    Preset {
        name: "ollama",
        api: Api::OpenaiChat,
        base_url: "http://127.0.0.1:11434/v1/",
        key_required: false,
        account: "ollama",
        structured: StructuredMode::None,
    },
    Preset {
        name: "lmstudio",
        api: Api::OpenaiChat,
        base_url: "http://127.0.0.1:1234/v1/",
        key_required: false,
        account: "lmstudio",
        structured: StructuredMode::None,
    },
];

/// A parsed `provider/model-id` (the id may itself contain `/`, e.g. OpenRouter's).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct ModelRef {
    /// Provider name.
    pub provider: String,
    /// Model id as the provider spells it.
    pub model: String,
}

impl ModelRef {
    /// Split at the first `/`.
    ///
    /// Errors: [`Error::InvalidArgument`] when there is no `/` or either side is empty.
    pub fn parse(s: &str) -> Result<ModelRef> {
        match s.split_once('/') {
            Some((p, m)) if !p.is_empty() && !m.is_empty() => Ok(ModelRef {
                provider: p.into(),
                model: m.into(),
            }),
            _ => Err(Error::InvalidArgument(format!(
                "model \"{s}\" must be provider/model-id, e.g. \"openai/gpt-5-mini\" or \"ollama/qwen3:8b\""
            ))),
        }
    }
}

impl fmt::Display for ModelRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.provider, self.model)
    }
}

/// A conversation message in a [`CompletionRequest`].
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// User text.
    User(String),
    /// Assistant text and/or tool calls it made (for multi-turn tool use).
    Assistant {
        /// Text, may be empty.
        content: String,
        /// Tool calls of that turn.
        tool_calls: Vec<ToolCall>,
    },
    /// The result of a tool call.
    Tool {
        /// The call answered.
        call_id: String,
        /// Result text.
        content: String,
    },
}

/// A JSON schema the answer must match.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonSchemaSpec {
    /// Schema name (`[a-zA-Z0-9_-]`, OpenAI requires one).
    pub name: String,
    /// The schema (object root, `additionalProperties: false`, all properties required).
    pub schema: serde_json::Value,
}

/// A tool the model may call (phase 2's consolidation agent).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    /// Function name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON schema of the arguments.
    pub parameters: serde_json::Value,
}

/// A tool call the model made.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// Call id (echoed in [`Message::Tool`]).
    pub id: String,
    /// Function name.
    pub name: String,
    /// Parsed JSON arguments.
    pub arguments: serde_json::Value,
}

/// One request: instructions, messages, and optionally an output schema or tools.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CompletionRequest {
    /// System instructions.
    pub system: String,
    /// The conversation.
    pub messages: Vec<Message>,
    /// Require a JSON answer of this shape (how strictly depends on the provider's
    /// [`StructuredMode`]; callers validate locally regardless).
    pub response_schema: Option<JsonSchemaSpec>,
    /// Tools offered.
    pub tools: Vec<ToolSpec>,
    /// Reasoning effort (`minimal|low|medium|high|xhigh`); sent only to models that reason.
    pub reasoning_effort: Option<String>,
    /// Output cap in tokens.
    pub max_output_tokens: Option<u32>,
}

/// Token usage of one request, normalised: `input` includes cached and cache-written
/// tokens, `output` includes reasoning tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TokenUsage {
    /// All input tokens.
    pub input: u64,
    /// Of `input`, read from the prompt cache (OpenAI `prompt_tokens_details.cached_tokens`,
    /// Anthropic `cache_read_input_tokens`).
    pub cached_input: u64,
    /// Of `input`, written to the cache (Anthropic `cache_creation_input_tokens`).
    pub cache_write: u64,
    /// All output tokens.
    pub output: u64,
    /// Of `output`, reasoning.
    pub reasoning: u64,
}

impl TokenUsage {
    /// Input + output.
    pub fn total(&self) -> u64 {
        self.input + self.output
    }
    /// The same counts as the usage tables store them (SQLite integers are i64; a count
    /// past `i64::MAX` saturates).
    pub fn counts(&self) -> codex_free_store::TokenCounts {
        let i = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        codex_free_store::TokenCounts {
            input_tokens: i(self.input),
            cached_input_tokens: i(self.cached_input),
            cache_write_tokens: i(self.cache_write),
            output_tokens: i(self.output),
            reasoning_tokens: i(self.reasoning),
        }
    }
    /// Stored counts back as a request's usage (a negative count reads as 0).
    pub fn from_counts(c: &codex_free_store::TokenCounts) -> TokenUsage {
        let u = |n: i64| u64::try_from(n).unwrap_or(0);
        TokenUsage {
            input: u(c.input_tokens),
            cached_input: u(c.cached_input_tokens),
            cache_write: u(c.cache_write_tokens),
            output: u(c.output_tokens),
            reasoning: u(c.reasoning_tokens),
        }
    }
    /// Field-wise sum.
    pub fn add(&mut self, o: &TokenUsage) {
        self.input += o.input;
        self.cached_input += o.cached_input;
        self.cache_write += o.cache_write;
        self.output += o.output;
        self.reasoning += o.reasoning;
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum StopKind {
    /// Finished normally.
    Completed,
    /// Hit the output cap (answer likely cut).
    MaxTokens,
    /// Wants tool results.
    ToolCalls,
    /// Refused / filtered.
    Filtered,
    /// Anything else or unknown.
    Other,
}

/// A model's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// Concatenated text output.
    pub content: String,
    /// Tool calls requested.
    pub tool_calls: Vec<ToolCall>,
    /// Usage of the successful attempt.
    pub usage: TokenUsage,
    /// Stop reason.
    pub stop: StopKind,
    /// HTTP attempts made (1 = first try succeeded).
    pub attempts: u32,
}

/// Classes of provider failure, deciding retry and run behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// 429 (after retries, or a `Retry-After` longer than we wait).
    RateLimited,
    /// 5xx, connection failure, a response cut short (after retries).
    Transient,
    /// No answer within the request timeout (after retries).
    Timeout,
    /// A 200 whose body is not the provider's JSON (after retries).
    Malformed,
    /// The model does not exist or is not available to this key: fails the run.
    ModelUnavailable,
    /// Missing or rejected credentials: fails the run.
    Auth,
    /// Any other 4xx (e.g. input too long): fails this request only.
    BadRequest,
    /// Cancelled by the caller.
    Cancelled,
}

impl FailureKind {
    /// Whether the whole run must stop (retrying other rollouts cannot help).
    pub fn is_run_fatal(self) -> bool {
        matches!(
            self,
            FailureKind::ModelUnavailable | FailureKind::Auth | FailureKind::Cancelled
        )
    }
}

/// A failed request. `message` is short and never holds the payload or a key.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderError {
    /// Class.
    pub kind: FailureKind,
    /// HTTP status, when there was one.
    pub status: Option<u16>,
    /// Short description.
    pub message: String,
    /// Attempts made.
    pub attempts: u32,
}

impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.status {
            Some(s) => write!(
                f,
                "{:?} (HTTP {s}) after {} attempt(s): {}",
                self.kind, self.attempts, self.message
            ),
            None => write!(
                f,
                "{:?} after {} attempt(s): {}",
                self.kind, self.attempts, self.message
            ),
        }
    }
}

impl From<ProviderError> for Error {
    fn from(e: ProviderError) -> Self {
        if e.kind == FailureKind::Cancelled {
            Error::Cancelled(e.message)
        } else {
            Error::Provider(e.to_string())
        }
    }
}

/// A boxed future returned by [`ModelClient`] methods.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A chat model endpoint. One implementation per backend crate; tests can supply fakes.
///
/// `complete` serves both phase 1 (a `response_schema`, no tools) and phase 2 (tools,
/// multi-turn `Message::Tool` results). Implementations retry transient failures
/// themselves and stop promptly when `cancel` fires.
pub trait ModelClient: Send + Sync {
    /// The model this client calls.
    fn model(&self) -> &ModelRef;
    /// How structured output is requested from this provider.
    fn structured_mode(&self) -> StructuredMode;
    /// Send one request. It is an [`Outgoing`], so it passed the outgoing gate (redaction,
    /// the context window) on its way here.
    fn complete<'a>(
        &'a self,
        req: &'a Outgoing,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, std::result::Result<Completion, ProviderError>>;
}

/// Retry schedule for transient failures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in total (1 = no retry). Default 4.
    pub max_attempts: u32,
    /// First backoff. Default 1 s; doubles per attempt.
    pub base_delay: Duration,
    /// Backoff ceiling. Default 30 s.
    pub max_delay: Duration,
    /// Longest `Retry-After` we wait; longer ones fail the request as rate-limited.
    /// Default 120 s.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(120),
        }
    }
}

impl RetryPolicy {
    /// Delay before attempt `attempt + 1` (attempt is 1-based): `base * 2^(attempt-1)`,
    /// capped, with up to 20% random jitter added.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let exp = self
            .base_delay
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
        let d = exp.min(self.max_delay);
        let jitter = d.mul_f64(rand::random::<f64>() * 0.2);
        d + jitter
    }
}

/// Everything needed to call one model: endpoint, key, mode, price, window.
#[derive(Clone)]
pub struct ResolvedModel {
    /// The model.
    pub model: ModelRef,
    /// Wire format.
    pub api: Api,
    /// Base URL used.
    pub base_url: String,
    /// Structured-output mode.
    pub structured: StructuredMode,
    /// `true` when the model came from config, `false` for [`DEFAULT_EXTRACT_MODEL`].
    pub explicit: bool,
    /// Price, `None` when unknown (cost shows "price unknown").
    pub price: Option<Price>,
    /// Context window in tokens, when known.
    pub context_window: Option<u64>,
    /// Whether the model reasons (reasoning effort is only sent then).
    pub reasoning: bool,
    /// Largest output in tokens, when known.
    pub max_output_tokens: Option<u64>,
    /// Where the price came from (`config`, `litellm:<key>`, `unknown`).
    pub price_source: String,
    /// The client.
    pub client: Arc<dyn ModelClient>,
}

impl fmt::Debug for ResolvedModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResolvedModel")
            .field("model", &self.model)
            .field("api", &self.api)
            .field("base_url", &self.base_url)
            .field("structured", &self.structured)
            .field("explicit", &self.explicit)
            .field("price", &self.price)
            .field("context_window", &self.context_window)
            .finish()
    }
}

/// Endpoint facts for a provider name: preset merged with `memories.providers.<name>`.
///
/// Errors: [`Error::Config`] for an unknown provider without `api` + `base_url` in config.
pub fn endpoint_for(
    provider: &str,
    cfg: &BTreeMap<String, codex_free_core::config::ProviderSettings>,
) -> Result<(Api, String, StructuredMode, bool, String)> {
    let preset = PRESETS.iter().find(|p| p.name == provider);
    let user = cfg.get(provider);
    let api = match (user.and_then(|u| u.api.as_deref()), preset) {
        (Some(a), _) => Api::parse(a).ok_or_else(|| {
            Error::Config(format!(
                "memories.providers.{provider}.api = \"{a}\" is unknown"
            ))
        })?,
        (None, Some(p)) => p.api,
        (None, None) => {
            return Err(Error::Config(format!(
                "unknown provider \"{provider}\": use one of {} or add memories.providers.{provider} with api and base_url",
                PRESETS
                    .iter()
                    .map(|p| p.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    };
    let base_url = match (user.and_then(|u| u.base_url.clone()), preset) {
        (Some(u), _) => u,
        (None, Some(p)) => p.base_url.to_string(),
        (None, None) => {
            return Err(Error::Config(format!(
                "memories.providers.{provider}.base_url is required for a custom provider"
            )));
        }
    };
    let base_url = if base_url.ends_with('/') {
        base_url
    } else {
        format!("{base_url}/")
    };
    let structured = match (user.and_then(|u| u.structured_output.as_deref()), preset) {
        (Some(s), _) => StructuredMode::parse(s).ok_or_else(|| {
            Error::Config(format!(
                "memories.providers.{provider}.structured_output = \"{s}\" is unknown"
            ))
        })?,
        (None, Some(p)) => p.structured,
        (None, None) => StructuredMode::None,
    };
    let key_required = preset.map(|p| p.key_required).unwrap_or(false);
    let account = preset
        .map(|p| p.account.to_string())
        .unwrap_or_else(|| provider.to_string());
    Ok((api, base_url, structured, key_required, account))
}

/// Resolve the phase-1 model: `memories.extract_model` or [`DEFAULT_EXTRACT_MODEL`],
/// its endpoint, key (`secrets::resolve(store, account)`), price and window, and build a
/// client with `retry` and the configured request timeout.
///
/// Errors: [`Error::InvalidArgument`] for a malformed model string; [`Error::Config`] for
/// an unknown provider; [`Error::Secrets`] when a required key is missing (naming where to
/// put it).
pub fn resolve_extract_model(
    cfg: &MemoriesConfig,
    secrets: &dyn SecretStore,
    prices: &PriceTable,
    retry: RetryPolicy,
) -> Result<ResolvedModel> {
    let (spec, explicit) = match &cfg.extract_model {
        Some(m) => (m.as_str(), true),
        None => (DEFAULT_EXTRACT_MODEL, false),
    };
    resolve_model(spec, explicit, cfg, secrets, prices, retry)
}

/// Resolve any `provider/model-id` (see [`resolve_extract_model`]).
pub fn resolve_model(
    spec: &str,
    explicit: bool,
    cfg: &MemoriesConfig,
    secrets: &dyn SecretStore,
    prices: &PriceTable,
    retry: RetryPolicy,
) -> Result<ResolvedModel> {
    let model = ModelRef::parse(spec)?;
    let (api, base_url, structured, key_required, account) =
        endpoint_for(&model.provider, &cfg.providers)?;
    let key = resolve(secrets, &account)?;
    if key_required && key.is_none() {
        return Err(Error::Secrets(format!(
            "no API key for provider \"{}\": store one in the OS keyring (account \"{account}\", service \"{}\") or set {}",
            model.provider,
            codex_free_secrets::SERVICE,
            codex_free_secrets::env_var_for(&account)
        )));
    }
    let info = prices.lookup(&model, &cfg.prices);
    let client = genai_client::GenaiClient::new(
        model.clone(),
        api,
        &base_url,
        key,
        structured,
        Duration::from_secs(cfg.request_timeout_secs),
        retry,
    )?;
    Ok(ResolvedModel {
        model,
        api,
        base_url,
        structured,
        explicit,
        price: info.price,
        context_window: info.context_window,
        reasoning: info.reasoning,
        max_output_tokens: info.max_output_tokens,
        price_source: info.source,
        client: Arc::new(client),
    })
}

/// Parse a `Retry-After` value: delta-seconds (`"2"`, `"1.5"`) or an HTTP date.
pub fn parse_retry_after(v: &str, now: chrono::DateTime<chrono::Utc>) -> Option<Duration> {
    let v = v.trim();
    if let Ok(secs) = v.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let when = chrono::DateTime::parse_from_rfc2822(v).ok()?;
    let d = when.with_timezone(&chrono::Utc) - now;
    Some(d.to_std().unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use codex_free_secrets::{MemoryStore, Secret};

    #[test]
    fn model_ref_splits_at_first_slash() {
        let m = ModelRef::parse("openrouter/anthropic/claude-haiku-4-5").unwrap();
        assert_eq!(
            (m.provider.as_str(), m.model.as_str()),
            ("openrouter", "anthropic/claude-haiku-4-5")
        );
        assert!(ModelRef::parse("gpt-5").is_err());
        assert!(ModelRef::parse("/x").is_err());
    }

    #[test]
    fn retry_after_seconds_and_date() {
        let now = chrono::DateTime::parse_from_rfc3339("2025-01-01T00:00:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        assert_eq!(parse_retry_after("2", now), Some(Duration::from_secs(2)));
        assert_eq!(
            parse_retry_after("Wed, 01 Jan 2025 00:00:05 GMT", now),
            Some(Duration::from_secs(5))
        );
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let p = RetryPolicy {
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(5),
            ..Default::default()
        };
        let b1 = p.backoff(1);
        assert!(
            b1 >= Duration::from_secs(1) && b1 <= Duration::from_millis(1200),
            "{b1:?}"
        );
        let b3 = p.backoff(3);
        assert!(
            b3 >= Duration::from_secs(4) && b3 <= Duration::from_millis(4800),
            "{b3:?}"
        );
        assert!(p.backoff(10) <= Duration::from_secs(6));
    }

    #[test]
    fn resolution_presets_custom_and_missing_key() {
        let prices = PriceTable::bundled();
        let secrets = MemoryStore::default();
        // Local preset: no key needed.
        let mut cfg = MemoriesConfig {
            extract_model: Some("ollama/qwen3:8b".into()),
            ..Default::default()
        };
        let r = resolve_extract_model(&cfg, &secrets, prices, RetryPolicy::default()).unwrap();
        assert_eq!(
            (r.api, r.base_url.as_str(), r.explicit),
            (Api::OpenaiChat, "http://127.0.0.1:11434/v1/", true)
        );
        // Missing key names the account and env var (env var name unlikely to be set in tests).
        cfg.extract_model = Some("anthropic/claude-haiku-4-5".into());
        if std::env::var("ANTHROPIC_API_KEY").is_err() {
            let e = resolve_extract_model(&cfg, &secrets, prices, RetryPolicy::default())
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("ANTHROPIC_API_KEY") && e.contains("account \"anthropic\""),
                "{e}"
            );
        }
        secrets
            .set("anthropic", &Secret::new("sk-ant-test-000000000000"))
            .unwrap();
        let r = resolve_extract_model(&cfg, &secrets, prices, RetryPolicy::default()).unwrap();
        assert_eq!(r.api, Api::Anthropic);
        assert!(
            r.price.is_some(),
            "claude-haiku-4-5 is in the bundled table"
        );
        // Custom provider needs api + base_url.
        cfg.extract_model = Some("corp/llm-1".into());
        assert!(resolve_extract_model(&cfg, &secrets, prices, RetryPolicy::default()).is_err());
        cfg.providers.insert(
            "corp".into(),
            codex_free_core::config::ProviderSettings {
                base_url: Some("http://127.0.0.1:9/v1".into()),
                api: Some("openai-chat".into()),
                structured_output: Some("strict".into()),
            },
        );
        let r = resolve_extract_model(&cfg, &secrets, prices, RetryPolicy::default()).unwrap();
        assert_eq!(
            (r.base_url.as_str(), r.structured),
            ("http://127.0.0.1:9/v1/", StructuredMode::Strict)
        );
        assert!(r.price.is_none(), "unknown model: price unknown, not $0");
        // Default model when none configured.
        cfg.extract_model = None;
        secrets
            .set("openai", &Secret::new("sk-test-000000000000000"))
            .unwrap();
        let r = resolve_extract_model(&cfg, &secrets, prices, RetryPolicy::default()).unwrap();
        assert_eq!(
            (r.model.to_string().as_str(), r.explicit),
            (DEFAULT_EXTRACT_MODEL, false)
        );
    }
}
