//! The one gate every model request passes on its way to a provider: [`Outgoing::seal`].
//!
//! [`ModelClient::complete`](super::ModelClient::complete) takes only an [`Outgoing`], and
//! only `seal` builds one, so no path (phase 1, phase 2's agent, the connection test, or a
//! later caller) can send a request that skipped the gate. Sealing
//!
//! - removes `<private>…</private>` spans ([`codex_free_redact::strip_private`]) and
//!   redacts every text that came from outside this program: the system prompt, each
//!   message, each tool result and the arguments of the model's own tool calls (the
//!   callers redact their inputs already; this is the last line, so a side path that forgot
//!   cannot leak a key), and
//! - refuses a request whose input is larger than the model's context window (a provider
//!   would reject it, and the retry would send it again), with the figures.
//!
//! The tool definitions and the response schema are this program's own text and are sent
//! as given.

use codex_free_core::tokens;
use serde_json::Value;

use tokio_util::sync::CancellationToken;

use super::{Completion, CompletionRequest, FailureKind, Message, ModelClient, ProviderError};
use codex_free_redact::redact;

/// Tokens added per message for its role and framing (the providers' chat templates add a
/// few; 4 is OpenAI's published figure).
const TOKENS_PER_MESSAGE: usize = 4;

/// A request that passed the outgoing gate. Built only by [`Outgoing::seal`].
#[derive(Debug, Clone)]
pub struct Outgoing {
    req: CompletionRequest,
    redacted: usize,
}

/// Seal `req` for a model with `context_window` tokens and send it through `client`: what
/// every caller does, so a refusal reads like any failed request (0 attempts).
///
/// Errors: the [`Outgoing::seal`] refusal, or the client's [`ProviderError`].
pub async fn send(
    client: &dyn ModelClient,
    context_window: Option<u64>,
    req: CompletionRequest,
    cancel: &CancellationToken,
) -> std::result::Result<Completion, ProviderError> {
    let out = Outgoing::seal(req, context_window)?;
    client.complete(&out, cancel).await
}

impl Outgoing {
    /// `req` with every outside text redacted, checked against `context_window` (tokens;
    /// `None` = unknown, no size check).
    ///
    /// Errors: a [`ProviderError`] of kind [`FailureKind::BadRequest`] (0 attempts, so it
    /// reads as "not sent") when the input's estimated tokens exceed `context_window`.
    pub fn seal(
        mut req: CompletionRequest,
        context_window: Option<u64>,
    ) -> std::result::Result<Self, ProviderError> {
        let mut redacted = 0;
        redact_in_place(&mut req.system, &mut redacted);
        for m in &mut req.messages {
            match m {
                Message::User(text) => redact_in_place(text, &mut redacted),
                Message::Assistant {
                    content,
                    tool_calls,
                } => {
                    redact_in_place(content, &mut redacted);
                    for c in tool_calls {
                        redact_value(&mut c.arguments, &mut redacted);
                    }
                }
                Message::Tool { content, .. } => redact_in_place(content, &mut redacted),
            }
        }
        if redacted > 0 {
            tracing::warn!(
                texts = redacted,
                "outgoing request: private spans or secrets removed at the last gate"
            );
        }
        // A token covers at least one byte, so a request of at most `w` bytes fits without
        // being tokenized; only a larger one is counted.
        if let Some(w) = context_window
            && input_bytes(&req) as u64 > w
        {
            let input_tokens = input_tokens(&req);
            if input_tokens as u64 > w {
                return Err(ProviderError {
                    kind: FailureKind::BadRequest,
                    status: None,
                    message: format!(
                        "not sent: the request carries about {input_tokens} input tokens, over the model's context window of {w} tokens (set memories.providers.*.context_window only if the model really has more)"
                    ),
                    attempts: 0,
                });
            }
        }
        Ok(Self { req, redacted })
    }

    /// The request as it will be sent.
    pub fn request(&self) -> &CompletionRequest {
        &self.req
    }

    /// Estimated input tokens (o200k_base; another provider's tokenizer differs by a few
    /// per cent), counted on each call.
    pub fn input_tokens(&self) -> usize {
        input_tokens(&self.req)
    }

    /// How many texts the gate had to redact (0 when every caller did its part).
    pub fn redacted(&self) -> usize {
        self.redacted
    }
}

/// Private spans out first (so a secret inside one is not even counted), then secrets.
fn redact_in_place(text: &mut String, n: &mut usize) {
    if let (std::borrow::Cow::Owned(s), _) = codex_free_redact::strip_private(text) {
        *text = s;
        *n += 1;
    }
    if let std::borrow::Cow::Owned(s) = redact(text) {
        *text = s;
        *n += 1;
    }
}

fn redact_value(v: &mut Value, n: &mut usize) {
    match v {
        Value::String(s) => redact_in_place(s, n),
        Value::Array(items) => items.iter_mut().for_each(|x| redact_value(x, n)),
        Value::Object(map) => map.values_mut().for_each(|x| redact_value(x, n)),
        _ => {}
    }
}

/// The texts [`input_tokens`] counts, one by one.
fn texts(req: &CompletionRequest) -> Vec<std::borrow::Cow<'_, str>> {
    let mut out = vec![req.system.as_str().into()];
    for m in &req.messages {
        match m {
            Message::User(t) | Message::Tool { content: t, .. } => out.push(t.as_str().into()),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                out.push(content.as_str().into());
                for c in tool_calls {
                    out.push(c.name.as_str().into());
                    out.push(c.arguments.to_string().into());
                }
            }
        }
    }
    for t in &req.tools {
        out.push(t.name.as_str().into());
        out.push(t.description.as_str().into());
        out.push(t.parameters.to_string().into());
    }
    if let Some(s) = &req.response_schema {
        out.push(s.schema.to_string().into());
    }
    out
}

/// Bytes of the texts of `req` plus the per-message framing: an upper bound of
/// [`input_tokens`].
fn input_bytes(req: &CompletionRequest) -> usize {
    texts(req).iter().map(|t| t.len()).sum::<usize>() + framing(req)
}

/// Framing tokens: [`TOKENS_PER_MESSAGE`] for the system prompt and each message.
fn framing(req: &CompletionRequest) -> usize {
    TOKENS_PER_MESSAGE * (1 + req.messages.len())
}

/// Estimated input tokens of `req`: system, messages (content, tool-call arguments),
/// tool definitions and the response schema, plus the framing.
fn input_tokens(req: &CompletionRequest) -> usize {
    texts(req).iter().map(|t| tokens::count(t)).sum::<usize>() + framing(req)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolCall;

    const KEY: &str = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789";

    fn request(text: &str) -> CompletionRequest {
        CompletionRequest {
            system: format!("system {text}"),
            messages: vec![
                Message::User(format!("user {text}")),
                Message::Assistant {
                    content: format!("assistant {text}"),
                    tool_calls: vec![ToolCall {
                        id: "c1".into(),
                        name: "read".into(),
                        arguments: serde_json::json!({"path": "a", "note": [format!("arg {text}")]}),
                    }],
                },
                Message::Tool {
                    call_id: "c1".into(),
                    content: format!("tool {text}"),
                },
            ],
            ..Default::default()
        }
    }

    #[test]
    fn every_outside_text_is_redacted() {
        let o = Outgoing::seal(request(KEY), None).unwrap();
        let sent = format!("{:?}", o.request());
        assert!(!sent.contains(KEY), "{sent}");
        assert_eq!(
            o.redacted(),
            5,
            "system, user, assistant, tool-call argument, tool result"
        );
        let clean = Outgoing::seal(request("nothing secret"), None).unwrap();
        assert_eq!(clean.redacted(), 0);
        assert_eq!(clean.request(), &request("nothing secret"));
    }

    #[test]
    fn a_request_over_the_window_is_not_sent() {
        let big = "word ".repeat(5_000);
        let e = Outgoing::seal(request(&big), Some(10_000)).unwrap_err();
        assert_eq!((e.kind, e.attempts), (FailureKind::BadRequest, 0));
        assert!(
            e.message.contains("context window of 10000"),
            "{}",
            e.message
        );
        let fits = Outgoing::seal(request(&big), Some(40_000)).unwrap();
        assert!(fits.input_tokens() > 20_000 && fits.input_tokens() < 40_000);
        assert!(
            Outgoing::seal(request(&big), None).is_ok(),
            "unknown window: no check"
        );
        // Fewer bytes than the window: sent without being tokenized.
        assert!(Outgoing::seal(request("short"), Some(200)).is_ok());
    }
}
