//! A mock model provider: an axum HTTP server on 127.0.0.1 speaking the real wire formats
//! of OpenAI Responses (`POST /v1/responses`), OpenAI Chat Completions
//! (`POST /v1/chat/completions`, usage with `prompt_tokens_details.cached_tokens`) and
//! Anthropic Messages (`POST /v1/messages`, usage with `cache_read_input_tokens`).
//! A request with `"stream": true` gets the same answer as server-sent events in each
//! format's real event sequence (Responses `response.created` … `response.output_text.delta`
//! … `response.completed`; Chat `chat.completion.chunk`s then `[DONE]`; Anthropic
//! `message_start` … `content_block_delta` … `message_stop`), which is what the real agent
//! CLIs (Codex, Claude Code, pi) send. A [`MockReply::Tool`] answer asks for one tool call.
//!
//! Scripted faults are consumed first (one per request, in order); after them every
//! request succeeds with the text `answer(request)` and fixed usage [`MOCK_USAGE`].
//! Every request is recorded (path, JSON body, auth header).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use serde_json::{Value, json};

/// Usage every successful mock answer reports: (input incl. cached, cached, output incl.
/// reasoning, reasoning).
pub const MOCK_USAGE: (u64, u64, u64, u64) = (1200, 200, 150, 40);

/// A scripted reply.
#[derive(Debug, Clone)]
pub enum Fault {
    /// A status with a JSON error body and extra headers (e.g. `retry-after`).
    Status(u16, Value, Vec<(&'static str, String)>),
    /// 200 with a body that is not JSON.
    Malformed,
    /// 200 whose model text is this (e.g. schema-invalid JSON).
    Answer(String),
    /// 200 headers, then the connection drops mid-body.
    Cut,
    /// 200 with exactly this JSON body (e.g. a tool-call answer).
    Body(Value),
    /// Wait, then reply as the next item says (a success when `None`).
    Delay(Duration, Option<Box<Fault>>),
}

/// One recorded request.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// URL path.
    pub path: String,
    /// JSON body.
    pub body: Value,
    /// `authorization` or `x-api-key` header.
    pub auth: Option<String>,
}

type AnswerFn = Arc<dyn Fn(&Value) -> String + Send + Sync>;
type ReplyFn = Arc<dyn Fn(&Value) -> MockReply + Send + Sync>;

/// What a successful answer holds (see [`MockProvider::set_reply`]).
#[derive(Debug, Clone, PartialEq)]
pub enum MockReply {
    /// Assistant text.
    Text(String),
    /// One call of the tool `name` with JSON `arguments`.
    Tool {
        /// The namespace the tool is listed under (Responses `{"type": "namespace"}` tools,
        /// as Codex groups an MCP server's tools), if any.
        namespace: Option<String>,
        /// Tool name exactly as the request's `tools` list spells it.
        name: String,
        /// Arguments object.
        arguments: Value,
    },
}

#[derive(Clone)]
struct Shared {
    faults: Arc<Mutex<VecDeque<Fault>>>,
    requests: Arc<Mutex<Vec<Recorded>>>,
    answer: Arc<Mutex<AnswerFn>>,
    reply: Arc<Mutex<Option<ReplyFn>>>,
    delay: Arc<Mutex<Duration>>,
}

/// A running mock.
pub struct MockProvider {
    /// Bound address.
    pub addr: SocketAddr,
    shared: Shared,
    stop: tokio::sync::oneshot::Sender<()>,
}

/// The rollout id the pipeline puts in its request header (`Session <id> (`).
pub fn session_id(body: &Value) -> String {
    let text = body.to_string();
    text.split("Session ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .unwrap_or("?")
        .to_string()
}

/// The default answer: a valid extraction naming the session; to a `memories tidy --model`
/// request (its user message opens with `Units (JSON):`), `stale` for every unit `u1`..`uN`
/// it lists.
pub fn default_answer(body: &Value) -> String {
    let text = body.to_string();
    if text.contains("Units (JSON):") {
        // The units are JSON inside a message string: `"u1"` appears escaped as `\"u1\"`.
        let units: Vec<Value> = (1..)
            .take_while(|n| text.contains(&format!("\\\"u{n}\\\"")))
            .map(|n| json!({"id": format!("u{n}"), "verdict": "stale"}))
            .collect();
        return json!({ "units": units }).to_string();
    }
    let id = session_id(body);
    json!({
        "rollout_summary": format!("summary of {id}"),
        "rollout_slug": format!("Session {id}"),
        "raw_memory": format!("- memory of {id}")
    })
    .to_string()
}

impl MockProvider {
    /// Start on an ephemeral port.
    pub async fn start() -> MockProvider {
        let shared = Shared {
            faults: Default::default(),
            requests: Default::default(),
            answer: Arc::new(Mutex::new(Arc::new(default_answer))),
            reply: Arc::new(Mutex::new(None)),
            delay: Arc::new(Mutex::new(Duration::ZERO)),
        };
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await
                .unwrap();
        });
        MockProvider { addr, shared, stop }
    }

    /// Base URL to configure (`http://127.0.0.1:<port>/v1/`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1/", self.addr)
    }

    /// Queue faults, consumed one per request in order.
    pub fn push_faults(&self, faults: impl IntoIterator<Item = Fault>) {
        self.shared.faults.lock().unwrap().extend(faults);
    }

    /// Replace the answer function.
    pub fn set_answer(&self, f: impl Fn(&Value) -> String + Send + Sync + 'static) {
        *self.shared.answer.lock().unwrap() = Arc::new(f);
    }

    /// Answer every successful request with `f(request body)`: text or a tool call (takes
    /// precedence over [`Self::set_answer`]).
    pub fn set_reply(&self, f: impl Fn(&Value) -> MockReply + Send + Sync + 'static) {
        *self.shared.reply.lock().unwrap() = Some(Arc::new(f));
    }

    /// Delay every successful answer by `d` (concurrency tests).
    pub fn set_delay(&self, d: Duration) {
        *self.shared.delay.lock().unwrap() = d;
    }

    /// Requests so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// Stop the server.
    pub fn stop(self) {
        let _ = self.stop.send(());
    }
}

fn json_response(status: u16, v: &Value, headers: &[(&'static str, String)]) -> Response {
    let mut b = Response::builder()
        .status(status)
        .header("content-type", "application/json");
    for (k, val) in headers {
        b = b.header(*k, val);
    }
    b.body(Body::from(v.to_string())).unwrap()
}

fn success(path: &str, text: &str) -> Value {
    success_reply(path, &MockReply::Text(text.to_string()))
}

fn success_reply(path: &str, r: &MockReply) -> Value {
    let (input, cached, output, reasoning) = MOCK_USAGE;
    let text = match r {
        MockReply::Text(t) => t.as_str(),
        MockReply::Tool { .. } => "",
    };
    if let MockReply::Tool {
        namespace,
        name,
        arguments,
    } = r
    {
        return tool_success(path, namespace.as_deref(), name, arguments);
    }
    if path.ends_with("/responses") {
        json!({
            "id": "resp_mock", "object": "response", "created_at": 1_751_328_000, "status": "completed",
            "model": "gpt-5-mini", "error": null, "max_output_tokens": null,
            "output": [
                {"type": "reasoning", "id": "rs_1", "summary": []},
                {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                 "content": [{"type": "output_text", "text": text, "annotations": []}]}
            ],
            "usage": {"input_tokens": input, "input_tokens_details": {"cached_tokens": cached},
                      "output_tokens": output, "output_tokens_details": {"reasoning_tokens": reasoning},
                      "total_tokens": input + output}
        })
    } else if path.ends_with("/chat/completions") {
        json!({
            "id": "chatcmpl-mock", "object": "chat.completion", "created": 1_751_328_000, "model": "gpt-5-mini",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output,
                      "prompt_tokens_details": {"cached_tokens": cached},
                      "completion_tokens_details": {"reasoning_tokens": reasoning}}
        })
    } else {
        // Anthropic: input_tokens excludes cache reads.
        json!({
            "id": "msg_mock", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": input - cached, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": cached, "output_tokens": output}
        })
    }
}

fn tool_success(path: &str, namespace: Option<&str>, name: &str, arguments: &Value) -> Value {
    let (input, cached, output, _) = MOCK_USAGE;
    let args = arguments.to_string();
    if path.ends_with("/responses") {
        let mut call = json!({"type": "function_call", "id": "fc_1", "call_id": "call_mock_1", "name": name,
                              "arguments": args, "status": "completed"});
        if let Some(ns) = namespace {
            call["namespace"] = json!(ns);
        }
        json!({
            "id": "resp_mock", "object": "response", "created_at": 1_751_328_000, "status": "completed",
            "model": "mock-model", "error": null,
            "output": [call],
            "usage": {"input_tokens": input, "input_tokens_details": {"cached_tokens": cached},
                      "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": input + output}
        })
    } else if path.ends_with("/chat/completions") {
        json!({
            "id": "chatcmpl-mock", "object": "chat.completion", "created": 1_751_328_000, "model": "mock-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_mock_1", "type": "function", "function": {"name": name, "arguments": args}}]},
                "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output}
        })
    } else {
        json!({
            "id": "msg_mock", "type": "message", "role": "assistant", "model": "mock-model",
            "content": [{"type": "tool_use", "id": "toolu_mock_1", "name": name, "input": arguments}],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": input - cached, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": cached, "output_tokens": output}
        })
    }
}

/// Server-sent events of `r` in the wire format of `path`.
fn sse_events(path: &str, r: &MockReply) -> Vec<(Option<&'static str>, Value)> {
    let full = success_reply(path, r);
    let mut ev: Vec<(Option<&'static str>, Value)> = Vec::new();
    if path.ends_with("/responses") {
        let mut created = full.clone();
        created["status"] = json!("in_progress");
        created["output"] = json!([]);
        ev.push((
            Some("response.created"),
            json!({"type": "response.created", "response": created}),
        ));
        for (i, item) in full["output"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .enumerate()
        {
            let mut added = item.clone();
            if added["type"] == "message" {
                added["content"] = json!([]);
            }
            ev.push((
                Some("response.output_item.added"),
                json!({"type": "response.output_item.added", "output_index": i, "item": added}),
            ));
            if item["type"] == "message" {
                let text = item["content"][0]["text"]
                    .as_str()
                    .unwrap_or("")
                    .to_string();
                ev.push((
                    Some("response.output_text.delta"),
                    json!({"type": "response.output_text.delta",
                    "item_id": item["id"], "output_index": i, "content_index": 0, "delta": text}),
                ));
            }
            ev.push((
                Some("response.output_item.done"),
                json!({"type": "response.output_item.done", "output_index": i, "item": item}),
            ));
        }
        ev.push((
            Some("response.completed"),
            json!({"type": "response.completed", "response": full}),
        ));
    } else if path.ends_with("/chat/completions") {
        let msg = &full["choices"][0]["message"];
        let delta = match msg.get("tool_calls") {
            Some(tc) if tc.is_array() => {
                let mut tc = tc.clone();
                tc[0]["index"] = json!(0);
                json!({"role": "assistant", "tool_calls": tc})
            }
            _ => json!({"role": "assistant", "content": msg["content"]}),
        };
        let chunk = |delta: Value, finish: Value| {
            json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk",
            "created": 1_751_328_000, "model": "mock-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        };
        ev.push((None, chunk(delta, Value::Null)));
        ev.push((
            None,
            chunk(json!({}), full["choices"][0]["finish_reason"].clone()),
        ));
        let mut usage = chunk(json!({}), Value::Null);
        usage["choices"] = json!([]);
        usage["usage"] = full["usage"].clone();
        ev.push((None, usage));
    } else {
        let mut start = full.clone();
        start["content"] = json!([]);
        start["stop_reason"] = Value::Null;
        start["usage"]["output_tokens"] = json!(1);
        ev.push((
            Some("message_start"),
            json!({"type": "message_start", "message": start}),
        ));
        for (i, block) in full["content"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .enumerate()
        {
            if block["type"] == "tool_use" {
                let mut b = block.clone();
                b["input"] = json!({});
                ev.push((
                    Some("content_block_start"),
                    json!({"type": "content_block_start", "index": i, "content_block": b}),
                ));
                ev.push((Some("content_block_delta"), json!({"type": "content_block_delta", "index": i,
                    "delta": {"type": "input_json_delta", "partial_json": block["input"].to_string()}})));
            } else {
                ev.push((
                    Some("content_block_start"),
                    json!({"type": "content_block_start", "index": i,
                    "content_block": {"type": "text", "text": ""}}),
                ));
                ev.push((
                    Some("content_block_delta"),
                    json!({"type": "content_block_delta", "index": i,
                    "delta": {"type": "text_delta", "text": block["text"]}}),
                ));
            }
            ev.push((
                Some("content_block_stop"),
                json!({"type": "content_block_stop", "index": i}),
            ));
        }
        ev.push((
            Some("message_delta"),
            json!({"type": "message_delta",
            "delta": {"stop_reason": full["stop_reason"], "stop_sequence": null},
            "usage": {"output_tokens": full["usage"]["output_tokens"]}}),
        ));
        ev.push((Some("message_stop"), json!({"type": "message_stop"})));
    }
    ev
}

fn sse_response(path: &str, r: &MockReply) -> Response {
    let mut body = String::new();
    for (event, data) in sse_events(path, r) {
        if let Some(e) = event {
            body.push_str(&format!("event: {e}\n"));
        }
        body.push_str(&format!("data: {data}\n\n"));
    }
    if path.ends_with("/chat/completions") {
        body.push_str("data: [DONE]\n\n");
    }
    Response::builder()
        .status(200)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(Body::from(body))
        .unwrap()
}

async fn reply(path: &str, body: &Value, fault: Option<Fault>, shared: &Shared) -> Response {
    match fault {
        None => {
            let d = *shared.delay.lock().unwrap();
            if !d.is_zero() {
                tokio::time::sleep(d).await;
            }
            let custom = shared.reply.lock().unwrap().clone();
            let r = match custom {
                Some(f) => f(body),
                None => MockReply::Text(shared.answer.lock().unwrap().clone()(body)),
            };
            if body.get("stream") == Some(&Value::Bool(true)) {
                return sse_response(path, &r);
            }
            json_response(200, &success_reply(path, &r), &[])
        }
        Some(Fault::Status(code, v, headers)) => json_response(code, &v, &headers),
        Some(Fault::Malformed) => Response::builder()
            .status(200)
            .header("content-type", "application/json")
            .body(Body::from("{\"id\": \"resp_mock\", \"output\": [tru"))
            .unwrap(),
        Some(Fault::Body(v)) => json_response(200, &v, &[]),
        Some(Fault::Answer(text)) => json_response(200, &success(path, &text), &[]),
        Some(Fault::Cut) => {
            let full = success(path, &default_answer(body)).to_string();
            let half = full[..full.len() / 2].to_string();
            let stream = futures_util::stream::iter(vec![
                Ok::<Bytes, std::io::Error>(Bytes::from(half)),
                Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionReset,
                    "cut",
                )),
            ]);
            Response::builder()
                .status(200)
                .header("content-type", "application/json")
                .header("content-length", full.len().to_string())
                .body(Body::from_stream(stream))
                .unwrap()
        }
        Some(Fault::Delay(d, next)) => {
            tokio::time::sleep(d).await;
            Box::pin(reply(path, body, next.map(|b| *b), shared)).await
        }
    }
}

async fn handle(
    State(shared): State<Shared>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    let Ok(json) = serde_json::from_slice::<Value>(&body) else {
        return json_response(400, &json!({"error": {"message": "body is not JSON"}}), &[]);
    };
    if !(path.ends_with("/responses")
        || path.ends_with("/chat/completions")
        || path.ends_with("/messages"))
    {
        return json_response(
            StatusCode::NOT_FOUND.as_u16(),
            &json!({"error": {"message": "no such route"}}),
            &[],
        );
    }
    let auth = headers
        .get("authorization")
        .or_else(|| headers.get("x-api-key"))
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    shared.requests.lock().unwrap().push(Recorded {
        path: path.clone(),
        body: json.clone(),
        auth,
    });
    let fault = shared.faults.lock().unwrap().pop_front();
    reply(&path, &json, fault, &shared).await
}
