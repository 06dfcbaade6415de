//! The one gate every model request passes on its way to a provider: [`Outgoing::seal`].
//!
//! [`ModelClient::complete`](super::ModelClient::complete) takes only an [`Outgoing`], and
//! only `seal` builds one, so no path (phase 1, phase 2's agent, the connection test, or a
//! later caller) can send a request that skipped the gate. Sealing
//!
//! - redacts every text that came from outside this program: the system prompt, each
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

use super::{CompletionRequest, FailureKind, Message, ProviderError};
use crate::redact::{redact, redact_string};

/// Tokens added per message for its role and framing (the providers' chat templates add a
/// few; 4 is OpenAI's published figure).
const TOKENS_PER_MESSAGE: usize = 4;

/// A request that passed the outgoing gate. Built only by [`Outgoing::seal`].
#[derive(Debug, Clone)]
pub struct Outgoing {
    req: CompletionRequest,
    input_tokens: usize,
    redacted: usize,
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
                "outgoing request: secrets redacted at the last gate (an earlier step missed them)"
            );
        }
        let input_tokens = input_tokens(&req);
        if let Some(w) = context_window
            && input_tokens as u64 > w
        {
            return Err(ProviderError {
                kind: FailureKind::BadRequest,
                status: None,
                message: format!(
                    "not sent: the request carries about {input_tokens} input tokens, over the model's context window of {w} tokens (set memories.providers.*.context_window only if the model really has more)"
                ),
                attempts: 0,
            });
        }
        Ok(Self {
            req,
            input_tokens,
            redacted,
        })
    }

    /// The request as it will be sent.
    pub fn request(&self) -> &CompletionRequest {
        &self.req
    }

    /// Estimated input tokens (o200k_base; another provider's tokenizer differs by a few
    /// per cent).
    pub fn input_tokens(&self) -> usize {
        self.input_tokens
    }

    /// How many texts the gate had to redact (0 when every caller did its part).
    pub fn redacted(&self) -> usize {
        self.redacted
    }
}

fn redact_in_place(text: &mut String, n: &mut usize) {
    if let std::borrow::Cow::Owned(s) = redact(text) {
        *text = s;
        *n += 1;
    }
}

fn redact_value(v: &mut Value, n: &mut usize) {
    match v {
        Value::String(s) => {
            let before = std::mem::take(s);
            let after = redact_string(before.clone());
            if after != before {
                *n += 1;
            }
            *s = after;
        }
        Value::Array(items) => items.iter_mut().for_each(|x| redact_value(x, n)),
        Value::Object(map) => map.values_mut().for_each(|x| redact_value(x, n)),
        _ => {}
    }
}

/// Estimated input tokens of `req`: system, messages (content, tool-call arguments),
/// tool definitions and the response schema.
fn input_tokens(req: &CompletionRequest) -> usize {
    let mut n = tokens::count(&req.system) + TOKENS_PER_MESSAGE;
    for m in &req.messages {
        n += TOKENS_PER_MESSAGE
            + match m {
                Message::User(t) | Message::Tool { content: t, .. } => tokens::count(t),
                Message::Assistant {
                    content,
                    tool_calls,
                } => {
                    tokens::count(content)
                        + tool_calls
                            .iter()
                            .map(|c| {
                                tokens::count(&c.name) + tokens::count(&c.arguments.to_string())
                            })
                            .sum::<usize>()
                }
            };
    }
    for t in &req.tools {
        n += tokens::count(&t.name)
            + tokens::count(&t.description)
            + tokens::count(&t.parameters.to_string());
    }
    if let Some(s) = &req.response_schema {
        n += tokens::count(&s.schema.to_string());
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::ToolCall;

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
    }
}
