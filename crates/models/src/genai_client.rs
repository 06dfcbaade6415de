//! [`ModelClient`] over the `genai` crate (0.7): one `genai::Client` per resolved model,
//! called with an explicit `ServiceTarget` (our base URL, our key, the adapter for our
//! [`Api`]) so genai never guesses a provider or model from a name.
//!
//! Why genai and no raw `reqwest`: genai 0.7 already sends OpenAI's strict
//! `json_schema` response format (Chat Completions and Responses), Anthropic's JSON output
//! format, tools and tool results; normalises usage (cached input from
//! `prompt_tokens_details.cached_tokens` / `input_tokens_details.cached_tokens` /
//! `cache_read_input_tokens`, reasoning tokens); and exposes the HTTP status and headers
//! of a failed call (for `Retry-After`). What it leaves to callers — retry policy,
//! per-request timeout, cancellation — is done here.
//!
//! Invariant: nothing here logs or returns the request payload or the key (genai's
//! `ChatResponseGeneration` error embeds the payload, so its text is never used).

use std::time::{Duration, Instant};

use genai::adapter::AdapterKind;
use genai::chat::{
    ChatMessage, ChatOptions, ChatRequest, ChatResponse, ChatResponseFormat, JsonSpec,
    ReasoningEffort, StopReason, Tool, ToolResponse,
};
use genai::resolver::{AuthData, Endpoint};
use genai::{ModelIden, ServiceTarget, WebConfig};
use tokio_util::sync::CancellationToken;

use super::{
    Api, BoxFuture, Completion, CompletionRequest, FailureKind, Message, ModelClient, ModelRef,
    Outgoing, ProviderError, RetryPolicy, StopKind, StructuredMode, TokenUsage, ToolCall,
    parse_retry_after,
};
use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_secrets::Secret;

/// A model reached through genai.
pub struct GenaiClient {
    model: ModelRef,
    api: Api,
    endpoint: String,
    key: Option<Secret>,
    structured: StructuredMode,
    timeout: Duration,
    retry: RetryPolicy,
    client: genai::Client,
}

impl GenaiClient {
    /// Build a client for `model` at `base_url` (must end in `/`, e.g.
    /// `https://api.openai.com/v1/`). `timeout` bounds each HTTP attempt.
    ///
    /// Errors: [`Error::Provider`] when the HTTP client cannot be built.
    pub fn new(
        model: ModelRef,
        api: Api,
        base_url: &str,
        key: Option<Secret>,
        structured: StructuredMode,
        timeout: Duration,
        retry: RetryPolicy,
    ) -> Result<Self> {
        let web = WebConfig::default().with_connect_timeout(timeout.min(Duration::from_secs(30)));
        let client = genai::Client::builder()
            .with_web_config(web)
            .build()
            .map_err(|e| Error::Provider(format!("building HTTP client: {e}")))?;
        Ok(Self {
            model,
            api,
            endpoint: base_url.to_string(),
            key,
            structured,
            timeout,
            retry,
            client,
        })
    }

    fn target(&self) -> ServiceTarget {
        let kind = match self.api {
            Api::OpenaiResponses => AdapterKind::OpenAIResp,
            Api::OpenaiChat => AdapterKind::OpenAI,
            Api::Anthropic => AdapterKind::Anthropic,
        };
        // Keyless local servers (Ollama, LM Studio) ignore the bearer value.
        let key = self
            .key
            .as_ref()
            .map(|k| k.expose().to_string())
            .unwrap_or_else(|| "none".into());
        ServiceTarget {
            endpoint: Endpoint::from_owned(self.endpoint.clone()),
            auth: AuthData::from_single(key),
            model: ModelIden::new(kind, self.model.model.clone()),
        }
    }

    async fn attempt(
        &self,
        chat: ChatRequest,
        opts: &ChatOptions,
    ) -> std::result::Result<Completion, Failure> {
        let call = self.client.exec_chat(self.target(), chat, Some(opts));
        match tokio::time::timeout(self.timeout, call).await {
            Err(_) => Err(Failure {
                kind: FailureKind::Timeout,
                status: None,
                message: format!("no response within {} s", self.timeout.as_secs()),
                retry_after: None,
                retryable: true,
            }),
            Ok(Err(e)) => Err(classify(&e)),
            Ok(Ok(res)) => Ok(convert(res)),
        }
    }
}

/// One attempt's failure, before retry accounting.
#[derive(Debug)]
struct Failure {
    kind: FailureKind,
    status: Option<u16>,
    message: String,
    retry_after: Option<Duration>,
    retryable: bool,
}

fn classify(e: &genai::Error) -> Failure {
    let retry_after = e.headers().and_then(|h| {
        if let Some(ms) = h
            .get("retry-after-ms")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
        {
            return Some(Duration::from_secs_f64(ms.max(0.0) / 1000.0));
        }
        h.get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, chrono::Utc::now()))
    });
    if let Some(status) = e.status() {
        let code = status.as_u16();
        let body = status_body(e);
        let (kind, retryable) = match code {
            429 => (FailureKind::RateLimited, true),
            408 | 409 => (FailureKind::Transient, true),
            500..=599 => (FailureKind::Transient, true),
            401 | 403 => (FailureKind::Auth, false),
            404 => (FailureKind::ModelUnavailable, false),
            400 | 422 if mentions_missing_model(&body) => (FailureKind::ModelUnavailable, false),
            _ => (FailureKind::BadRequest, false),
        };
        return Failure {
            kind,
            status: Some(code),
            message: body,
            retry_after,
            retryable,
        };
    }
    match e {
        genai::Error::WebModelCall { webc_error, .. }
        | genai::Error::WebAdapterCall { webc_error, .. } => {
            let text = transport_words(e);
            let kind = match webc_error {
                genai::webc::Error::ResponseFailedNotJson { .. }
                | genai::webc::Error::ResponseFailedInvalidJson { .. } => FailureKind::Malformed,
                _ => FailureKind::Transient,
            };
            Failure {
                kind,
                status: None,
                message: short(&text, 300),
                retry_after: None,
                retryable: true,
            }
        }
        genai::Error::ChatResponseGeneration { cause, .. } => Failure {
            kind: FailureKind::Malformed,
            status: None,
            message: short(&format!("unexpected response shape: {cause}"), 300),
            retry_after: None,
            retryable: true,
        },
        genai::Error::NoChatResponse { .. } | genai::Error::InvalidJsonResponseElement { .. } => {
            Failure {
                kind: FailureKind::Malformed,
                status: None,
                message: short(&e.to_string(), 300),
                retry_after: None,
                retryable: true,
            }
        }
        genai::Error::RequiresApiKey { .. }
        | genai::Error::NoAuthData { .. }
        | genai::Error::NoAuthResolver { .. } => Failure {
            kind: FailureKind::Auth,
            status: None,
            message: short(&e.to_string(), 300),
            retry_after: None,
            retryable: false,
        },
        _ => Failure {
            kind: FailureKind::BadRequest,
            status: None,
            message: short(&e.to_string(), 300),
            retry_after: None,
            retryable: false,
        },
    }
}

/// A transport failure in plain words: "could not reach <url>: connection refused" rather
/// than the HTTP client's "Reqwest error", from the error's source chain.
fn transport_words(e: &genai::Error) -> String {
    let mut url = None;
    let mut kind = None;
    let mut innermost = e.to_string();
    let webc_reqwest = match e {
        genai::Error::WebModelCall { webc_error, .. }
        | genai::Error::WebAdapterCall { webc_error, .. } => match webc_error {
            genai::webc::Error::Reqwest(r) => Some(r as &(dyn std::error::Error + 'static)),
            _ => None,
        },
        _ => None,
    };
    let mut cur: Option<&(dyn std::error::Error + 'static)> = webc_reqwest.or(Some(e));
    while let Some(err) = cur {
        if let Some(r) = err.downcast_ref::<reqwest::Error>() {
            url = url.or_else(|| r.url().map(|u| u.to_string()));
            if r.is_connect() {
                kind = Some("could not reach");
            } else if r.is_timeout() {
                kind = Some("timed out waiting for");
            }
        }
        innermost = err.to_string();
        cur = err.source();
    }
    let innermost = innermost
        .split(" (os error")
        .next()
        .unwrap_or(&innermost)
        .to_ascii_lowercase();
    match (kind, url) {
        (Some(k), Some(u)) => format!("{k} {u}: {innermost}"),
        (Some(k), None) => format!("{k} the provider: {innermost}"),
        (None, _) if innermost != e.to_string().to_ascii_lowercase() => {
            format!("{e}: {innermost}")
        }
        _ => e.to_string(),
    }
}

/// The provider's error body from a status failure (never our payload), shortened; for a
/// status error without a body (e.g. from the HTTP client) genai's text.
fn status_body(e: &genai::Error) -> String {
    let webc = match e {
        genai::Error::WebModelCall { webc_error, .. }
        | genai::Error::WebAdapterCall { webc_error, .. } => Some(webc_error),
        _ => None,
    };
    match webc {
        Some(genai::webc::Error::ResponseFailedStatus { body, .. }) => short(body, 300),
        _ => short(&e.to_string(), 300),
    }
}

fn mentions_missing_model(body: &str) -> bool {
    let b = body.to_ascii_lowercase();
    b.contains("model_not_found")
        || (b.contains("model")
            && (b.contains("not found")
                || b.contains("does not exist")
                || b.contains("not_found")
                || b.contains("unknown model")
                || b.contains("invalid model")))
}

fn short(s: &str, max: usize) -> String {
    let s = s.trim();
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

fn convert(res: ChatResponse) -> Completion {
    let content = res.texts().concat();
    let tool_calls = res
        .tool_calls()
        .into_iter()
        .map(|c| ToolCall {
            id: c.call_id.clone(),
            name: c.fn_name.clone(),
            arguments: c.fn_arguments.clone(),
        })
        .collect::<Vec<_>>();
    let u = &res.usage;
    let n = |v: Option<i32>| v.unwrap_or(0).max(0) as u64;
    let usage = TokenUsage {
        input: n(u.prompt_tokens),
        cached_input: n(u
            .prompt_tokens_details
            .as_ref()
            .and_then(|d| d.cached_tokens)),
        cache_write: n(u
            .prompt_tokens_details
            .as_ref()
            .and_then(|d| d.cache_creation_tokens)),
        output: n(u.completion_tokens),
        reasoning: n(u
            .completion_tokens_details
            .as_ref()
            .and_then(|d| d.reasoning_tokens)),
    };
    let stop = match &res.stop_reason {
        Some(StopReason::Completed(_)) | Some(StopReason::StopSequence(_)) => StopKind::Completed,
        Some(StopReason::MaxTokens(_)) => StopKind::MaxTokens,
        Some(StopReason::ToolCall(_)) => StopKind::ToolCalls,
        Some(StopReason::ContentFilter(_)) => StopKind::Filtered,
        Some(StopReason::Other(_)) | None => {
            if tool_calls.is_empty() {
                StopKind::Other
            } else {
                StopKind::ToolCalls
            }
        }
    };
    Completion {
        content,
        tool_calls,
        usage,
        stop,
        attempts: 1,
    }
}

fn effort(s: &str) -> Option<ReasoningEffort> {
    Some(match s {
        "none" => ReasoningEffort::Zero,
        "minimal" => ReasoningEffort::Minimal,
        "low" => ReasoningEffort::Low,
        "medium" => ReasoningEffort::Medium,
        "high" => ReasoningEffort::High,
        "xhigh" => ReasoningEffort::XHigh,
        _ => return None,
    })
}

/// Our request in genai's types.
fn to_genai(req: &CompletionRequest, structured: StructuredMode) -> (ChatRequest, ChatOptions) {
    let mut msgs = Vec::with_capacity(req.messages.len());
    for m in &req.messages {
        msgs.push(match m {
            Message::User(t) => ChatMessage::user(t.clone()),
            Message::Assistant {
                content,
                tool_calls,
            } if tool_calls.is_empty() => ChatMessage::assistant(content.clone()),
            Message::Assistant { tool_calls, .. } => ChatMessage::from(
                tool_calls
                    .iter()
                    .map(|c| genai::chat::ToolCall {
                        call_id: c.id.clone(),
                        fn_name: c.name.clone(),
                        fn_arguments: c.arguments.clone(),
                        thought_signatures: None,
                    })
                    .collect::<Vec<_>>(),
            ),
            Message::Tool { call_id, content } => {
                ChatMessage::from(ToolResponse::new(call_id.clone(), content.clone()))
            }
        });
    }
    let mut chat = ChatRequest::new(msgs).with_system(req.system.clone());
    if !req.tools.is_empty() {
        chat = chat.with_tools(req.tools.iter().map(|t| {
            Tool::new(t.name.clone())
                .with_description(t.description.clone())
                .with_schema(t.parameters.clone())
        }));
    }
    let mut opts = ChatOptions::default()
        .with_capture_usage(true)
        .with_capture_tool_calls(true);
    if let Some(max) = req.max_output_tokens {
        opts = opts.with_max_tokens(max);
    }
    if let Some(e) = req.reasoning_effort.as_deref().and_then(effort) {
        opts = opts.with_reasoning_effort(e);
    }
    if let Some(spec) = &req.response_schema {
        match structured {
            StructuredMode::Strict => {
                opts = opts
                    .with_response_format(JsonSpec::new(spec.name.clone(), spec.schema.clone()));
            }
            StructuredMode::JsonObject => {
                opts = opts.with_response_format(ChatResponseFormat::JsonMode)
            }
            StructuredMode::None => {}
        }
    }
    (chat, opts)
}

impl ModelClient for GenaiClient {
    fn model(&self) -> &ModelRef {
        &self.model
    }

    fn structured_mode(&self) -> StructuredMode {
        self.structured
    }

    fn complete<'a>(
        &'a self,
        req: &'a Outgoing,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, std::result::Result<Completion, ProviderError>> {
        Box::pin(async move {
            let (chat, opts) = to_genai(req.request(), self.structured);
            let started = Instant::now();
            let mut attempt = 0u32;
            loop {
                attempt += 1;
                let res = tokio::select! {
                    _ = cancel.cancelled() => return Err(cancelled(attempt)),
                    r = self.attempt(chat.clone(), &opts) => r,
                };
                let f = match res {
                    Ok(mut c) => {
                        c.attempts = attempt;
                        return Ok(c);
                    }
                    Err(f) => f,
                };
                let give_up = |f: Failure, extra: &str| ProviderError {
                    kind: f.kind,
                    status: f.status,
                    message: format!("{}{extra}", f.message),
                    attempts: attempt,
                };
                if !f.retryable || attempt >= self.retry.max_attempts {
                    return Err(give_up(f, ""));
                }
                let wait = match f.retry_after {
                    Some(ra) if ra > self.retry.max_retry_after => {
                        let secs = ra.as_secs();
                        return Err(give_up(
                            f,
                            &format!(" (provider asks to wait {secs} s; not waiting)"),
                        ));
                    }
                    Some(ra) => ra,
                    None => self.retry.backoff(attempt),
                };
                tracing::warn!(
                    model = %self.model, kind = ?f.kind, status = ?f.status, attempt, wait_ms = wait.as_millis() as u64,
                    elapsed_ms = started.elapsed().as_millis() as u64, "model request failed; retrying"
                );
                tokio::select! {
                    _ = cancel.cancelled() => return Err(cancelled(attempt)),
                    _ = tokio::time::sleep(wait) => {}
                }
            }
        })
    }
}

fn cancelled(attempts: u32) -> ProviderError {
    ProviderError {
        kind: FailureKind::Cancelled,
        status: None,
        message: "cancelled".into(),
        attempts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::JsonSchemaSpec;

    #[test]
    fn missing_model_detection() {
        assert!(mentions_missing_model(
            r#"{"error":{"code":"model_not_found"}}"#
        ));
        assert!(mentions_missing_model("The model `gpt-9` does not exist"));
        assert!(!mentions_missing_model("context length exceeded"));
    }

    #[test]
    fn request_mapping_respects_structured_mode() {
        let req = CompletionRequest {
            system: "s".into(),
            messages: vec![Message::User("u".into())],
            response_schema: Some(JsonSchemaSpec {
                name: "x".into(),
                schema: serde_json::json!({"type":"object"}),
            }),
            ..Default::default()
        };
        let (_, o) = to_genai(&req, StructuredMode::Strict);
        assert!(matches!(
            o.response_format,
            Some(ChatResponseFormat::JsonSpec(_))
        ));
        let (_, o) = to_genai(&req, StructuredMode::JsonObject);
        assert!(matches!(
            o.response_format,
            Some(ChatResponseFormat::JsonMode)
        ));
        let (_, o) = to_genai(&req, StructuredMode::None);
        assert!(o.response_format.is_none());
    }
}
