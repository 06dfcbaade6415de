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
//!
//! What was sealed can be shown afterwards: [`Outgoing::sealed_bytes`] is the request as
//! canonical JSON, and [`Receipt`] its SHA-256, size and the redactions by rule.

use codex_free_core::tokens;
use serde_json::Value;

use tokio_util::sync::CancellationToken;

use super::{Completion, CompletionRequest, FailureKind, Message, ModelClient, ProviderError};
use codex_free_redact::{Tally, sanitize};

/// Tokens added per message for its role and framing (the providers' chat templates add a
/// few; 4 is OpenAI's published figure).
const TOKENS_PER_MESSAGE: usize = 4;

/// A request that passed the outgoing gate. Built only by [`Outgoing::seal`].
#[derive(Debug, Clone)]
pub struct Outgoing {
    req: CompletionRequest,
    redacted: usize,
    tally: Tally,
}

/// What one sealed request carried, for the run's record: the SHA-256 (hex) and size
/// (bytes) of [`Outgoing::sealed_bytes`], and the secrets redacted and private spans
/// removed by rule (the callers' own redaction, passed to [`Outgoing::receipt`], plus the
/// gate's). The text itself is not part of it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Receipt {
    /// SHA-256 of the sealed bytes, lowercase hex.
    pub sha256: String,
    /// Size of the sealed bytes.
    pub bytes: u64,
    /// Redactions by rule name (`github_token`, `private_span` …); empty when none.
    pub redactions: std::collections::BTreeMap<String, u64>,
}

/// [`send`], also returning the request's [`Receipt`] and sealed bytes when it was sealed
/// (also when the provider then failed: the bytes left); `None` when the gate refused it.
/// `upstream` holds the redactions the caller made before building the request.
pub async fn send_receipted(
    client: &dyn ModelClient,
    context_window: Option<u64>,
    req: CompletionRequest,
    upstream: &Tally,
    cancel: &CancellationToken,
) -> (
    Option<(Receipt, Vec<u8>)>,
    std::result::Result<Completion, ProviderError>,
) {
    let out = match Outgoing::seal(req, context_window) {
        Ok(o) => o,
        Err(e) => return (None, Err(e)),
    };
    let bytes = out.sealed_bytes();
    let receipt = out.receipt_of(&bytes, upstream);
    let res = client.complete(&out, cancel).await;
    (Some((receipt, bytes)), res)
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
    send_receipted(client, context_window, req, &Tally::new(), cancel)
        .await
        .1
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
        let mut n = (0, Tally::new());
        redact_in_place(&mut req.system, &mut n);
        for m in &mut req.messages {
            match m {
                Message::User(text) => redact_in_place(text, &mut n),
                Message::Assistant {
                    content,
                    tool_calls,
                } => {
                    redact_in_place(content, &mut n);
                    for c in tool_calls {
                        redact_value(&mut c.arguments, &mut n);
                    }
                }
                Message::Tool { content, .. } => redact_in_place(content, &mut n),
            }
        }
        let (redacted, tally) = n;
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
        Ok(Self {
            req,
            redacted,
            tally,
        })
    }

    /// Seal again a request stored as its [`Outgoing::sealed_bytes`] (an approved request
    /// of the approval queue), checked against `context_window` now: the result's sealed
    /// bytes are exactly `bytes`, or it is refused.
    ///
    /// Errors: a [`ProviderError`] of kind [`FailureKind::BadRequest`] (0 attempts) when
    /// `bytes` is not a sealed request, no longer seals to the same bytes (a redaction
    /// rule changed since it was stored), or is over the window.
    pub fn reseal(
        bytes: &[u8],
        context_window: Option<u64>,
    ) -> std::result::Result<Self, ProviderError> {
        let refused = |why: String| ProviderError {
            kind: FailureKind::BadRequest,
            status: None,
            message: format!("not sent: the stored request {why}"),
            attempts: 0,
        };
        let req = from_sealed_bytes(bytes).map_err(|e| refused(format!("is unreadable: {e}")))?;
        let out = Self::seal(req, context_window)?;
        if out.sealed_bytes() != bytes {
            return Err(refused(
                "no longer seals to the same bytes (the redaction rules changed since it was queued); it is queued again at the next run".into(),
            ));
        }
        Ok(out)
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

    /// What the gate itself removed, by rule (empty when every caller did its part).
    pub fn redactions(&self) -> &Tally {
        &self.tally
    }

    /// The sealed request as canonical JSON (pretty-printed, keys in a fixed order): system,
    /// messages (role, content, tool calls), tools, response schema, reasoning effort and
    /// output cap. What a receipt's hash and size are of, and what `memories.keep_sent_days`
    /// keeps; the provider's wire format wraps the same texts.
    pub fn sealed_bytes(&self) -> Vec<u8> {
        let r = &self.req;
        let messages: Vec<Value> = r
            .messages
            .iter()
            .map(|m| match m {
                Message::User(t) => serde_json::json!({"role": "user", "content": t}),
                Message::Assistant {
                    content,
                    tool_calls,
                } => serde_json::json!({
                    "role": "assistant",
                    "content": content,
                    "tool_calls": tool_calls.iter().map(|c| serde_json::json!({
                        "id": c.id, "name": c.name, "arguments": c.arguments,
                    })).collect::<Vec<_>>(),
                }),
                Message::Tool { call_id, content } => {
                    serde_json::json!({"role": "tool", "call_id": call_id, "content": content})
                }
            })
            .collect();
        let v = serde_json::json!({
            "system": r.system,
            "messages": messages,
            "tools": r.tools,
            "response_schema": r.response_schema.as_ref().map(|s| serde_json::json!({"name": s.name, "schema": s.schema})),
            "reasoning_effort": r.reasoning_effort,
            "max_output_tokens": r.max_output_tokens,
        });
        let mut out = serde_json::to_vec_pretty(&v).unwrap_or_default();
        out.push(b'\n');
        out
    }

    /// The [`Receipt`] of this request; `upstream` = the redactions the caller made before
    /// building it (e.g. while rendering a transcript), added to the gate's own.
    pub fn receipt(&self, upstream: &Tally) -> Receipt {
        self.receipt_of(&self.sealed_bytes(), upstream)
    }

    fn receipt_of(&self, bytes: &[u8], upstream: &Tally) -> Receipt {
        use sha2::Digest;
        let mut redactions = std::collections::BTreeMap::new();
        for (k, v) in upstream.iter().chain(self.tally.iter()) {
            *redactions.entry((*k).to_string()).or_insert(0) += *v as u64;
        }
        Receipt {
            sha256: hex::encode(sha2::Sha256::digest(bytes)),
            bytes: bytes.len() as u64,
            redactions,
        }
    }
}

/// The request [`Outgoing::sealed_bytes`] printed (its inverse).
///
/// Errors: a phrase naming what is missing or malformed.
fn from_sealed_bytes(bytes: &[u8]) -> std::result::Result<CompletionRequest, String> {
    use super::{JsonSchemaSpec, ToolCall, ToolSpec};
    let v: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    let text = |v: &Value, k: &str| -> std::result::Result<String, String> {
        v[k].as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("\"{k}\" is not a string"))
    };
    let mut messages = Vec::new();
    for m in v["messages"].as_array().ok_or("no \"messages\" list")? {
        messages.push(match m["role"].as_str() {
            Some("user") => Message::User(text(m, "content")?),
            Some("assistant") => Message::Assistant {
                content: text(m, "content")?,
                tool_calls: m["tool_calls"]
                    .as_array()
                    .ok_or("an assistant message has no \"tool_calls\" list")?
                    .iter()
                    .map(|c| {
                        Ok(ToolCall {
                            id: text(c, "id")?,
                            name: text(c, "name")?,
                            arguments: c["arguments"].clone(),
                        })
                    })
                    .collect::<std::result::Result<_, String>>()?,
            },
            Some("tool") => Message::Tool {
                call_id: text(m, "call_id")?,
                content: text(m, "content")?,
            },
            other => return Err(format!("unknown message role {other:?}")),
        });
    }
    let tools = v["tools"]
        .as_array()
        .ok_or("no \"tools\" list")?
        .iter()
        .map(|t| {
            Ok(ToolSpec {
                name: text(t, "name")?,
                description: text(t, "description")?,
                parameters: t["parameters"].clone(),
            })
        })
        .collect::<std::result::Result<_, String>>()?;
    let response_schema = match &v["response_schema"] {
        Value::Null => None,
        s => Some(JsonSchemaSpec {
            name: text(s, "name")?,
            schema: s["schema"].clone(),
        }),
    };
    let reasoning_effort = match &v["reasoning_effort"] {
        Value::Null => None,
        _ => Some(text(&v, "reasoning_effort")?),
    };
    let max_output_tokens = match &v["max_output_tokens"] {
        Value::Null => None,
        n => Some(
            n.as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or("\"max_output_tokens\" is not a count")?,
        ),
    };
    Ok(CompletionRequest {
        system: text(&v, "system")?,
        messages,
        response_schema,
        tools,
        reasoning_effort,
        max_output_tokens,
    })
}

/// Private spans out first (so a secret inside one is not even counted), then secrets;
/// `n` = (texts changed, removals by rule).
fn redact_in_place(text: &mut String, n: &mut (usize, Tally)) {
    if let std::borrow::Cow::Owned(s) = sanitize(text, &mut n.1) {
        *text = s;
        n.0 += 1;
    }
}

fn redact_value(v: &mut Value, n: &mut (usize, Tally)) {
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
        assert_eq!(
            o.redactions().get("provider_key"),
            Some(&5),
            "{:?}",
            o.redactions()
        );
        let clean = Outgoing::seal(request("nothing secret"), None).unwrap();
        assert_eq!(clean.redacted(), 0);
        assert!(clean.redactions().is_empty());
        assert_eq!(clean.request(), &request("nothing secret"));
    }

    /// The receipt is of the sealed bytes (no secret in them), names the rules of the
    /// caller's and the gate's redactions, and changes with any byte of the request.
    #[test]
    fn the_receipt_hashes_the_sealed_bytes_and_counts_by_rule() {
        use sha2::Digest;
        let o = Outgoing::seal(request(KEY), None).unwrap();
        let bytes = o.sealed_bytes();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(
            !text.contains(KEY) && text.contains("[REDACTED_SECRET]"),
            "{text}"
        );
        let upstream: Tally = [("github_token", 2)].into_iter().collect();
        let r = o.receipt(&upstream);
        assert_eq!(r.sha256, hex::encode(sha2::Sha256::digest(&bytes)));
        assert_eq!(r.bytes, bytes.len() as u64);
        let by_rule: Vec<(&str, u64)> =
            r.redactions.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(by_rule, [("github_token", 2), ("provider_key", 5)]);
        let other = Outgoing::seal(request("nothing secret"), None).unwrap();
        assert_ne!(other.receipt(&Tally::new()).sha256, r.sha256);
        assert!(other.receipt(&Tally::new()).redactions.is_empty());
    }

    /// A stored request seals again to exactly its bytes (tool calls, schema and all), is
    /// re-checked against the window, and bytes that are not a sealed request are refused.
    #[test]
    fn reseal_gives_back_exactly_the_stored_bytes() {
        let mut req = request(KEY);
        req.tools = vec![crate::ToolSpec {
            name: "read".into(),
            description: "reads".into(),
            parameters: serde_json::json!({"type": "object"}),
        }];
        req.response_schema = Some(crate::JsonSchemaSpec {
            name: "s".into(),
            schema: serde_json::json!({"type": "object"}),
        });
        req.reasoning_effort = Some("low".into());
        req.max_output_tokens = Some(100);
        let bytes = Outgoing::seal(req, None).unwrap().sealed_bytes();
        let again = Outgoing::reseal(&bytes, None).unwrap();
        assert_eq!(again.sealed_bytes(), bytes);
        assert_eq!(
            again.redacted(),
            0,
            "already sealed: nothing left to redact"
        );
        let e = Outgoing::reseal(&bytes, Some(50)).unwrap_err();
        assert!(e.message.contains("context window of 50"), "{}", e.message);
        let e = Outgoing::reseal(b"{\"system\": 1}", None).unwrap_err();
        assert!(e.message.contains("unreadable"), "{}", e.message);
        // A stored text holding a secret (not sealed by this gate) no longer seals the same.
        let forged = String::from_utf8(bytes)
            .unwrap()
            .replace("[REDACTED_SECRET]", KEY);
        let e = Outgoing::reseal(forged.as_bytes(), None).unwrap_err();
        assert!(e.message.contains("same bytes"), "{}", e.message);
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
