//! "Test connection" for the web UI: one authenticated `GET <base_url>models` per provider
//! (OpenAI-compatible: `Authorization: Bearer`; Anthropic: `x-api-key` plus
//! `anthropic-version`). Raw `reqwest` because the model client (genai) offers no cheap
//! authenticated call that makes no completion; this one costs nothing.
//!
//! Invariant: the key is sent only to the provider's own base URL and never appears in the
//! returned message.

use std::time::{Duration, Instant};

use crate::providers::Api;
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

fn without_url_secrets(s: &str) -> String {
    // reqwest errors name the URL, which holds no key (keys go in headers); kept short.
    s.chars().take(300).collect()
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
