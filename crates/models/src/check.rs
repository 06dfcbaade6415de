//! "Test connection" for the web UI: one authenticated `GET <base_url>models` per provider
//! (OpenAI-compatible: `Authorization: Bearer`; Anthropic: `x-api-key` plus
//! `anthropic-version`). Raw `reqwest` because the model client (genai) offers no cheap
//! authenticated call that makes no completion; this one costs nothing.
//!
//! Also [`readiness`] (can the pipeline call its models at all? the dashboard's first-run
//! sentence), [`local_models`] (a local Ollama / LM Studio server and its model list) and
//! [`tiny_request`] (one real, minimal completion whose tokens and cost are logged like
//! every other model call).
//!
//! Invariant: the key is sent only to the provider's own base URL and never appears in the
//! returned message.

use std::time::{Duration, Instant};

use crate::{Api, TokenUsage, outgoing};
use codex_free_secrets::Secret;

/// Timeout of the check, seconds.
pub const CHECK_TIMEOUT_SECS: u64 = 15;

/// Outcome of a check.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    /// The provider answered 2xx.
    pub ok: bool,
    /// Status and, when the body lists models, how many.
    pub message: String,
    /// Round trip in milliseconds.
    pub latency_ms: u64,
}

/// Call `<base_url>models` with `key` (none for local servers).
pub async fn check_connection(api: Api, base_url: &str, key: Option<&Secret>) -> Checked {
    let url = format!(
        "{}models",
        if base_url.ends_with('/') {
            base_url.to_string()
        } else {
            format!("{base_url}/")
        }
    );
    let client = match reqwest::Client::builder()
        .timeout(Duration::from_secs(CHECK_TIMEOUT_SECS))
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            return Checked {
                ok: false,
                message: format!("cannot build an HTTP client: {e}"),
                latency_ms: 0,
            };
        }
    };
    let mut req = client.get(&url);
    if let Some(k) = key {
        req = match api {
            Api::Anthropic => req
                .header("x-api-key", k.expose())
                .header("anthropic-version", "2023-06-01"),
            _ => req.bearer_auth(k.expose()),
        };
    }
    let t = Instant::now();
    let r = req.send().await;
    let latency_ms = t.elapsed().as_millis() as u64;
    match r {
        Err(e) => Checked {
            ok: false,
            message: format!(
                "no answer from {url}: {}",
                without_url_secrets(&e.to_string())
            ),
            latency_ms,
        },
        Ok(resp) => {
            let status = resp.status();
            let body: serde_json::Value = resp.json().await.unwrap_or(serde_json::Value::Null);
            let n = body
                .get("data")
                .or_else(|| body.get("models"))
                .and_then(|d| d.as_array())
                .map(|a| a.len());
            let message = match (status.is_success(), n) {
                (true, Some(n)) => format!("HTTP {status}: key accepted, {n} models listed"),
                (true, None) => format!("HTTP {status}: key accepted"),
                (false, _) if status.as_u16() == 401 || status.as_u16() == 403 => {
                    format!("HTTP {status}: the key was refused")
                }
                (false, _) => format!("HTTP {status} from {url}"),
            };
            Checked {
                ok: status.is_success(),
                message,
                latency_ms,
            }
        }
    }
}

/// Why the pipeline cannot call one of its models.
#[derive(Debug, Clone, PartialEq)]
pub struct Blocker {
    /// `phase 1` (extraction) or `phase 2` (consolidation).
    pub stage: &'static str,
    /// The model (`provider/model-id`) that cannot be called.
    pub model: String,
    /// One sentence saying why, for the dashboard.
    pub reason: String,
    /// What fixes it, in words.
    pub fix: String,
}

/// How long a local server may take to accept a TCP connection before it counts as not
/// running (ms): the dashboard polls every few seconds and must not hang on it.
pub const LOCAL_PROBE_MS: u64 = 300;

/// True when `base_url` names this machine (`127.0.0.1`, `localhost`, `::1`).
fn local_host_port(base_url: &str) -> Option<(String, u16)> {
    let u = reqwest::Url::parse(base_url).ok()?;
    let host = u
        .host_str()?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let local = host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    local.then(|| (host, u.port_or_known_default().unwrap_or(80)))
}

fn answers(host: &str, port: u16) -> bool {
    use std::net::ToSocketAddrs;
    let Ok(addrs) = (host, port).to_socket_addrs() else {
        return false;
    };
    addrs.into_iter().any(|a| {
        std::net::TcpStream::connect_timeout(&a, Duration::from_millis(LOCAL_PROBE_MS)).is_ok()
    })
}

/// Can the pipeline call its models? Checks phase 1's model (`memories.extract_model`, else
/// the default) and phase 2's (`memories.consolidation_model`, else the default): a key
/// where the provider needs one (keyring or environment), a local server that accepts a
/// connection where the model is local. No request is sent; a key is not validated here
/// (that is [`tiny_request`]'s job). Returns the first blocker, `None` when both can be
/// called.
pub fn readiness(
    cfg: &codex_free_core::config::MemoriesConfig,
    secrets: &dyn codex_free_secrets::SecretStore,
) -> Option<Blocker> {
    use crate::{DEFAULT_EXTRACT_MODEL, ModelRef, endpoint_for};
    let stages = [
        ("phase 1", cfg.extract_model.as_deref()),
        ("phase 2", cfg.consolidation_model.as_deref()),
    ];
    for (stage, spec) in stages {
        let spec = spec.unwrap_or(DEFAULT_EXTRACT_MODEL).to_string();
        let blocker = |reason: String, fix: &str| Blocker {
            stage,
            model: spec.clone(),
            reason,
            fix: fix.to_string(),
        };
        let m = match ModelRef::parse(&spec) {
            Ok(m) => m,
            Err(e) => return Some(blocker(e.to_string(), "pick a model in Models & keys")),
        };
        let (_, base_url, _, key_required, account) =
            match endpoint_for(&m.provider, &cfg.providers) {
                Ok(e) => e,
                Err(e) => return Some(blocker(e.to_string(), "pick a model in Models & keys")),
            };
        if key_required {
            match codex_free_secrets::resolve(secrets, &account) {
                Ok(Some(_)) => {}
                Ok(None) => {
                    return Some(blocker(
                        format!(
                            "The memory pipeline cannot run: no model can be called ({spec} needs an API key for {}, and none is saved).",
                            m.provider
                        ),
                        "save a key in Models & keys, or pick a local model there",
                    ));
                }
                Err(e) => {
                    return Some(blocker(
                        format!(
                            "The memory pipeline cannot run: the key store cannot be read ({e})."
                        ),
                        "fix the key store (see the Key storage card) or set the provider's environment variable",
                    ));
                }
            }
        } else if let Some((host, port)) = local_host_port(&base_url)
            && !answers(&host, port)
        {
            return Some(blocker(
                format!(
                    "The memory pipeline cannot run: no model can be called ({spec} is local, and nothing answers at {base_url})."
                ),
                "start the local model server, or pick another model in Models & keys",
            ));
        }
    }
    None
}

/// A local model server found running, with its models.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalServer {
    /// Its base URL (`http://127.0.0.1:11434/v1/` …).
    pub base_url: String,
    /// Model ids from its `models` listing.
    pub models: Vec<String>,
}

/// Ask a local OpenAI-compatible server (Ollama, LM Studio) for its models: `GET
/// <base_url>models` within 1 s. `None` when `base_url` is not on this machine, nothing
/// answers, or the answer is not a model list.
pub async fn local_models(base_url: &str) -> Option<LocalServer> {
    let (host, port) = local_host_port(base_url)?;
    if !tokio::task::spawn_blocking(move || answers(&host, port))
        .await
        .unwrap_or(false)
    {
        return None;
    }
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(1))
        .build()
        .ok()?;
    let url = format!("{}models", base_url_slash(base_url));
    let body: serde_json::Value = client.get(&url).send().await.ok()?.json().await.ok()?;
    let list = body
        .get("data")
        .or_else(|| body.get("models"))?
        .as_array()?;
    let models = list
        .iter()
        .filter_map(|m| {
            m.get("id")
                .or_else(|| m.get("name"))?
                .as_str()
                .map(str::to_string)
        })
        .take(50)
        .collect();
    Some(LocalServer {
        base_url: base_url_slash(base_url),
        models,
    })
}

fn base_url_slash(u: &str) -> String {
    if u.ends_with('/') {
        u.to_string()
    } else {
        format!("{u}/")
    }
}

/// Outcome of [`tiny_request`].
#[derive(Debug, Clone, PartialEq)]
pub struct TinyOutcome {
    /// The model answered.
    pub ok: bool,
    /// The model called.
    pub model: String,
    /// What happened, with tokens and cost (`price unknown` when the model has no price).
    pub message: String,
    /// Tokens and cost of the request (zero usage when it failed before an answer).
    pub usage: TokenUsage,
    /// Cost, USD; `None` = price unknown.
    pub cost_usd: Option<f64>,
    /// Round trip, ms.
    pub latency_ms: u64,
}

/// Output cap of the test request, tokens: enough for "OK" from a reasoning model with
/// `minimal` effort, small enough that the test costs a fraction of a cent.
pub const TINY_MAX_OUTPUT_TOKENS: u32 = 16;

/// Make one minimal completion with `spec` (`provider/model-id`) so the user sees the
/// model answer and what a request costs. The request is logged in `<home>/state.sqlite`
/// as a run of phase `test` (tokens and cost, like every model call) and refused when the
/// monthly spend cap is reached.
///
/// Errors: none; every failure (unknown model, missing key, cap reached, refused key,
/// timeout) is an outcome with `ok: false` and a message without the key.
pub async fn tiny_request(
    home: &std::path::Path,
    cfg: &codex_free_core::config::MemoriesConfig,
    secrets: &dyn codex_free_secrets::SecretStore,
    spec: &str,
) -> TinyOutcome {
    use crate::{CompletionRequest, Message, RetryPolicy, prices::PriceTable, resolve_model};
    let fail = |message: String| TinyOutcome {
        ok: false,
        model: spec.to_string(),
        message,
        usage: TokenUsage::default(),
        cost_usd: None,
        latency_ms: 0,
    };
    let resolved = match resolve_model(
        spec,
        true,
        cfg,
        secrets,
        PriceTable::bundled(),
        RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        },
    ) {
        Ok(r) => r,
        Err(e) => return fail(e.to_string()),
    };
    let store = match codex_free_store::Store::open_in_home(home) {
        Ok(s) => s,
        Err(e) => return fail(format!("cannot log the request: {e}")),
    };
    if let Some(cap) = cfg.monthly_spend_cap_usd {
        match store.spend_this_month() {
            Ok(s) if s.usd >= cap => {
                return fail(format!(
                    "not sent: this month's spend ({}) has reached the cap ({})",
                    crate::prices::format_cost(Some(s.usd)),
                    crate::prices::format_cost(Some(cap))
                ));
            }
            Ok(_) => {}
            Err(e) => return fail(format!("cannot read this month's spend: {e}")),
        }
    }
    let req = CompletionRequest {
        system: "You are a connection test. Reply with the single word OK.".into(),
        messages: vec![Message::User("ping".into())],
        reasoning_effort: resolved.reasoning.then(|| "minimal".to_string()),
        max_output_tokens: Some(TINY_MAX_OUTPUT_TOKENS),
        ..Default::default()
    };
    let run_id = match store.begin_run("test", "connection-test", Some(spec)) {
        Ok(id) => id,
        Err(e) => return fail(format!("cannot log the request: {e}")),
    };
    let t = Instant::now();
    let cancel = tokio_util::sync::CancellationToken::new();
    let r = outgoing::send(&*resolved.client, resolved.context_window, req, &cancel).await;
    let latency_ms = t.elapsed().as_millis() as u64;
    let mut row = codex_free_store::usage::UsageRow {
        run_id: run_id.clone(),
        phase: "test".into(),
        request_no: 1,
        model: spec.to_string(),
        duration_ms: latency_ms as i64,
        ..Default::default()
    };
    let out = match r {
        Ok(c) => {
            let cost = resolved.price.map(|p| p.cost(&c.usage));
            row.attempts = i64::from(c.attempts);
            row.tokens = c.usage.counts();
            row.cost_usd = cost;
            row.outcome = "ok".into();
            TinyOutcome {
                ok: true,
                model: spec.to_string(),
                message: format!(
                    "{spec} answered in {latency_ms} ms: {} input + {} output tokens, {}",
                    c.usage.input,
                    c.usage.output,
                    match cost {
                        Some(_) => crate::prices::format_cost(cost),
                        None => "price unknown".to_string(),
                    }
                ),
                usage: c.usage,
                cost_usd: cost,
                latency_ms,
            }
        }
        Err(e) => {
            row.attempts = i64::from(e.attempts);
            row.outcome = "failed".into();
            row.error = Some(e.to_string());
            TinyOutcome {
                latency_ms,
                ..fail(format!("{spec} did not answer: {e}"))
            }
        }
    };
    let logged = store.record_usage(&row).and_then(|_| {
        store.finish_run(
            &run_id,
            &codex_free_store::usage::RunSummary {
                claimed: 1,
                with_output: i64::from(out.ok),
                failed: i64::from(!out.ok),
                outcome: if out.ok { "ok" } else { "failed" }.into(),
                error: (!out.ok).then(|| out.message.clone()),
                ..Default::default()
            },
        )
    });
    if let Err(e) = logged {
        tracing::warn!(error = %e, "the connection test's usage could not be logged");
    }
    out
}

fn without_url_secrets(s: &str) -> String {
    // reqwest errors name the URL, which holds no key (keys go in headers); kept short.
    s.chars().take(300).collect()
}

/// Check that a server answers on `http://127.0.0.1:<port>/mcp/<token>`: `/health`, then an
/// MCP `initialize` through the secret path. `Ok(text)` says what answered.
///
/// Errors: [`Error::Refused`] with the reason when nothing listens or the server refuses
/// the URL.
/// Lives here because this crate is the one outbound HTTP client of the workspace.
pub async fn chatgpt_check(port: u16, token: &str) -> codex_free_core::Result<String> {
    use codex_free_core::Error;
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(5))
        .build()
        .map_err(|e| Error::Refused(format!("HTTP client: {e}")))?;
    let h = client
        .get(format!("{base}/health"))
        .send()
        .await
        .map_err(|e| {
            Error::Refused(format!(
                "no server answers on {base} ({e}); start it with `codex-free serve --http --port {port}`"
            ))
        })?;
    if !h.status().is_success() {
        return Err(Error::Refused(format!(
            "{base}/health answered {}",
            h.status()
        )));
    }
    let init = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "codex-free-connect-check", "version": "1"}}
    });
    let r = client
        .post(format!("{base}/mcp/{token}"))
        .header("accept", "application/json, text/event-stream")
        .json(&init)
        .send()
        .await
        .map_err(|e| Error::Refused(format!("POST {base}/mcp/<token>: {e}")))?;
    let status = r.status();
    let body = r.text().await.unwrap_or_default();
    if !status.is_success() || !body.contains("codex-free") {
        return Err(Error::Refused(format!(
            "{base}/mcp/<token> answered {status}: {}",
            body.chars().take(200).collect::<String>()
        )));
    }
    Ok(format!(
        "ok: the server answers MCP initialize on {base}/mcp/<token>"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderMap;

    #[tokio::test]
    async fn sends_the_key_in_the_right_header() {
        let app = axum::Router::new().route(
            "/v1/models",
            axum::routing::get(|h: HeaderMap| async move {
                let bearer = h.get("authorization").and_then(|v| v.to_str().ok())
                    == Some("Bearer sk-good-0000");
                let anthropic =
                    h.get("x-api-key").and_then(|v| v.to_str().ok()) == Some("sk-good-0000");
                if bearer || anthropic {
                    (
                        axum::http::StatusCode::OK,
                        axum::Json(serde_json::json!({"data": [{"id": "a"}, {"id": "b"}]})),
                    )
                } else {
                    (
                        axum::http::StatusCode::UNAUTHORIZED,
                        axum::Json(serde_json::json!({"error": "bad key"})),
                    )
                }
            }),
        );
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/v1/", l.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
        let good = Secret::new("sk-good-0000");
        let c = check_connection(Api::OpenaiChat, &base, Some(&good)).await;
        assert!(c.ok && c.message.contains("2 models"), "{c:?}");
        let c = check_connection(Api::Anthropic, &base, Some(&good)).await;
        assert!(c.ok, "{c:?}");
        let c = check_connection(Api::OpenaiChat, &base, Some(&Secret::new("sk-bad-1111"))).await;
        assert!(
            !c.ok && c.message.contains("refused") && !c.message.contains("sk-bad"),
            "{c:?}"
        );
        let c = check_connection(Api::OpenaiChat, "http://127.0.0.1:9/v1/", None).await;
        assert!(!c.ok && c.message.contains("no answer"), "{c:?}");
    }
}
