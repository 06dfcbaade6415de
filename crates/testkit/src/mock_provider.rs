//! A mock model provider: an axum HTTP server on 127.0.0.1 speaking the real wire formats
//! of OpenAI Responses (`POST /v1/responses`), OpenAI Chat Completions
//! (`POST /v1/chat/completions`, usage with `prompt_tokens_details.cached_tokens`) and
//! Anthropic Messages (`POST /v1/messages`, usage with `cache_read_input_tokens`).
//! Non-streaming only (the pipeline does not stream).
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

#[derive(Clone)]
struct Shared {
    faults: Arc<Mutex<VecDeque<Fault>>>,
    requests: Arc<Mutex<Vec<Recorded>>>,
    answer: Arc<Mutex<AnswerFn>>,
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

/// The default answer: a valid extraction naming the session.
pub fn default_answer(body: &Value) -> String {
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
    let (input, cached, output, reasoning) = MOCK_USAGE;
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

async fn reply(path: &str, body: &Value, fault: Option<Fault>, shared: &Shared) -> Response {
    match fault {
        None => {
            let d = *shared.delay.lock().unwrap();
            if !d.is_zero() {
                tokio::time::sleep(d).await;
            }
            let f = shared.answer.lock().unwrap().clone();
            json_response(200, &success(path, &f(body)), &[])
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
