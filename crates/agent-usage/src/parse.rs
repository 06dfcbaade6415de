//! Token usage out of the agents' transcript lines, one row per model request.
//!
//! - Codex CLI: `event_msg` lines of type `token_count`. A row is the *delta* of the
//!   cumulative `info.total_token_usage` since the previous event of the file, so a
//!   repeated event (same totals) adds nothing; the first event of a file (or one after
//!   the totals went down) charges its `last_token_usage`, so a resumed or forked file that
//!   starts from the old session's totals is not charged that history again. `info: null`
//!   carries nothing. Cached input is inside `input_tokens`, reasoning inside
//!   `output_tokens` (unless the record's `total_tokens` shows it was counted apart). The
//!   model comes from the last `turn_context`, the provider from `session_meta`. An event
//!   timed before the file's own session started (its first `session_meta`) is a fork's
//!   replayed history: marked [`Parsed::replayed`], so it never takes the request from
//!   the session that recorded it.
//! - Claude Code: `assistant` lines with `message.usage`, keyed by `message.id` +
//!   `requestId` (one API message is written over several lines; side-chain and resumed
//!   copies repeat the key). Input there excludes the cache, so it is summed. Cache writes
//!   are split into 5-minute and 1-hour ones by `cache_creation.ephemeral_1h_input_tokens`
//!   (priced apart).
//! - pi: `message` lines of role `assistant` with `message.usage` (its `cost.total` kept).
//!
//! Lines are pre-filtered by a byte search so that the bulk of a transcript (messages,
//! tool outputs) is never JSON-parsed. A wanted line that is not valid UTF-8 (an agent cut
//! a multi-byte character in a tool output, a disk error) is decoded lossily — each bad
//! byte becomes U+FFFD, which only ever lands inside a JSON string — and counted as
//! repaired: its request still counts, the token figures being ASCII digits. A wanted
//! line that is still not JSON is counted as skipped ([`LineStats`]), never dropped
//! silently.

use memchr::memmem;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use codex_free_transcripts::rollout::Source;
use codex_free_transcripts::sources::parse_ts;

/// Cumulative Codex totals: input, cached input, cache write, output, reasoning (tokens).
type Totals5 = [i64; 5];

/// What a file's parser carries from one import to the next (stored with the cursor).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Carry {
    /// Session id (Codex `session_meta`, pi `session`; Claude has it on every line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// Codex: the provider of the session (`model_provider`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Codex: the model of the current turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Codex: the last cumulative totals seen in this file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev_total: Option<Totals5>,
    /// Codex: when the file's own session started (its first `session_meta`), Unix ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_ms: Option<i64>,
}

/// What happened to the wanted lines of one parse (those the byte pre-filter let through).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LineStats {
    /// Lines with invalid UTF-8 decoded lossily and then used.
    pub repaired: usize,
    /// Lines that were not JSON even after that (not used).
    pub skipped: usize,
}

impl LineStats {
    /// Add `o`'s counts.
    pub fn add(&mut self, o: LineStats) {
        self.repaired += o.repaired;
        self.skipped += o.skipped;
    }

    /// Whether nothing was repaired or skipped.
    pub fn is_clean(&self) -> bool {
        self.repaired == 0 && self.skipped == 0
    }
}

/// One request as parsed, before pricing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
    /// De-duplication key (unique per request across copies).
    pub key: String,
    /// Session id.
    pub session: String,
    /// Working directory.
    pub project: Option<String>,
    /// `provider/model-id`.
    pub model: String,
    /// Unix ms.
    pub at_ms: i64,
    /// Input tokens, cache included.
    pub input: i64,
    /// Cached input read tokens.
    pub cached: i64,
    /// Cache write tokens.
    pub cache_write: i64,
    /// Of `cache_write`, 1-hour cache writes.
    pub cache_write_1h: i64,
    /// A copy of another session's history (a Codex fork's replayed lines).
    pub replayed: bool,
    /// Output tokens, reasoning included.
    pub output: i64,
    /// Reasoning tokens.
    pub reasoning: i64,
    /// The agent's own cost figure, USD.
    pub provider_cost: Option<f64>,
}

fn i(v: &Value, k: &str) -> i64 {
    v.get(k).and_then(Value::as_i64).unwrap_or(0).max(0)
}

fn s(v: &Value, k: &str) -> Option<String> {
    v.get(k)
        .and_then(Value::as_str)
        .filter(|x| !x.is_empty())
        .map(str::to_string)
}

fn ts_ms(v: Option<&Value>) -> Option<i64> {
    v.and_then(parse_ts).map(|t| t.timestamp_millis())
}

/// Our provider name for an agent-side provider id; `openai` when none is recorded.
fn provider_name(p: Option<&str>) -> String {
    match p.map(str::to_ascii_lowercase).as_deref() {
        None | Some("") | Some("openai") | Some("azure") => "openai".into(),
        Some(other) => other.to_string(),
    }
}

/// Parse the complete lines of `buf` (each ending in `\n`) of a `source` transcript,
/// updating `carry`. `fallback_session` names the session when the file never does (its
/// file stem). Returns how many wanted lines were repaired or skipped.
pub fn parse_lines(
    source: Source,
    buf: &[u8],
    carry: &mut Carry,
    fallback_session: &str,
    out: &mut Vec<Parsed>,
) -> LineStats {
    let mut stats = LineStats::default();
    let f_usage = memmem::Finder::new(b"\"usage\"");
    let f_tc = memmem::Finder::new(b"\"token_count\"");
    let f_ctx = memmem::Finder::new(b"\"turn_context\"");
    let f_meta = memmem::Finder::new(b"\"session_meta\"");
    let f_session = memmem::Finder::new(b"\"session\"");
    for line in buf.split(|b| *b == b'\n') {
        if line.is_empty() {
            continue;
        }
        let wanted = match source {
            Source::Codex => {
                f_tc.find(line).is_some()
                    || f_ctx.find(line).is_some()
                    || (carry.session.is_none() && f_meta.find(line).is_some())
            }
            Source::Claude => f_usage.find(line).is_some(),
            Source::Pi => {
                f_usage.find(line).is_some()
                    || (carry.session.is_none() && f_session.find(line).is_some())
            }
            Source::Mcp => false,
        };
        if !wanted {
            continue;
        }
        let v = match serde_json::from_slice::<Value>(line) {
            Ok(v) => v,
            Err(_) if std::str::from_utf8(line).is_err() => {
                match serde_json::from_str::<Value>(&String::from_utf8_lossy(line)) {
                    Ok(v) => {
                        stats.repaired += 1;
                        v
                    }
                    Err(_) => {
                        stats.skipped += 1;
                        continue;
                    }
                }
            }
            Err(_) => {
                stats.skipped += 1;
                continue;
            }
        };
        match source {
            Source::Codex => codex_line(&v, carry, fallback_session, out),
            Source::Claude => claude_line(&v, fallback_session, out),
            Source::Pi => pi_line(&v, carry, fallback_session, out),
            Source::Mcp => {}
        }
    }
    stats
}

fn totals5(u: &Value) -> Totals5 {
    [
        i(u, "input_tokens"),
        i(u, "cached_input_tokens"),
        i(u, "cache_write_input_tokens"),
        i(u, "output_tokens"),
        i(u, "reasoning_output_tokens"),
    ]
}

fn codex_line(v: &Value, carry: &mut Carry, fallback: &str, out: &mut Vec<Parsed>) {
    let p = v.get("payload").unwrap_or(&Value::Null);
    match v.get("type").and_then(Value::as_str) {
        Some("session_meta") => {
            if carry.session.is_none() {
                carry.session = s(p, "id").or_else(|| s(p, "session_id"));
                carry.started_ms = ts_ms(p.get("timestamp")).or_else(|| ts_ms(v.get("timestamp")));
            }
            if carry.project.is_none() {
                carry.project = s(p, "cwd");
            }
            if carry.provider.is_none() {
                carry.provider = s(p, "model_provider");
            }
        }
        Some("turn_context") => {
            if let Some(m) = s(p, "model") {
                carry.model = Some(m);
            }
            if carry.project.is_none() {
                carry.project = s(p, "cwd");
            }
        }
        Some("event_msg") if p.get("type").and_then(Value::as_str) == Some("token_count") => {
            let Some(info) = p.get("info").filter(|x| x.is_object()) else {
                return; // `info: null`: a rate-limit update, no usage
            };
            let total = info
                .get("total_token_usage")
                .filter(|x| x.is_object())
                .map(totals5);
            let last_v = info.get("last_token_usage").filter(|x| x.is_object());
            let last = last_v.map(totals5);
            let delta = match (total, carry.prev_total, last) {
                (Some(t), Some(prev), l) => {
                    let d: Vec<i64> = t.iter().zip(prev).map(|(a, b)| a - b).collect();
                    if d.iter().any(|x| *x < 0) {
                        // The totals went down (a new count): charge the last request.
                        l.unwrap_or(t)
                    } else {
                        [d[0], d[1], d[2], d[3], d[4]]
                    }
                }
                (Some(t), None, l) => l.unwrap_or(t),
                (None, _, Some(l)) => l,
                (None, _, None) => return,
            };
            if let Some(t) = total {
                carry.prev_total = Some(t);
            }
            if delta.iter().all(|x| *x == 0) {
                return; // a repeated event: nothing new
            }
            // Reasoning is inside output unless the record's own total says otherwise.
            let usage_v = info.get("total_token_usage").or(last_v);
            let separate = usage_v.is_some_and(|u| {
                let t = totals5(u);
                let tt = i(u, "total_tokens");
                t[4] > 0 && tt == t[0] + t[3] + t[4]
            });
            let output = if separate {
                delta[3] + delta[4]
            } else {
                delta[3]
            };
            let at = ts_ms(v.get("timestamp")).unwrap_or(0);
            let key = match total {
                Some(t) => format!("{at}|t|{}|{}|{}|{}|{}", t[0], t[1], t[2], t[3], t[4]),
                None => format!(
                    "{at}|l|{}|{}|{}|{}|{}",
                    delta[0], delta[1], delta[2], delta[3], delta[4]
                ),
            };
            let model = carry.model.clone().unwrap_or_else(|| "unknown".into());
            out.push(Parsed {
                key,
                session: carry.session.clone().unwrap_or_else(|| fallback.into()),
                project: carry.project.clone(),
                model: format!("{}/{model}", provider_name(carry.provider.as_deref())),
                at_ms: at,
                input: delta[0],
                cached: delta[1].min(delta[0]),
                cache_write: delta[2],
                cache_write_1h: 0,
                replayed: carry.started_ms.is_some_and(|s| at < s),
                output,
                reasoning: delta[4],
                provider_cost: None,
            });
        }
        _ => {}
    }
}

fn claude_line(v: &Value, fallback: &str, out: &mut Vec<Parsed>) {
    if v.get("type").and_then(Value::as_str) != Some("assistant") {
        return;
    }
    let Some(m) = v.get("message") else { return };
    let Some(u) = m.get("usage").filter(|x| x.is_object()) else {
        return;
    };
    let model = s(m, "model").unwrap_or_else(|| "unknown".into());
    let (input, write, read, output) = (
        i(u, "input_tokens"),
        i(u, "cache_creation_input_tokens"),
        i(u, "cache_read_input_tokens"),
        i(u, "output_tokens"),
    );
    if input + write + read + output == 0 {
        return; // synthetic messages (model `<synthetic>`) carry no usage
    }
    let write_1h = u
        .get("cache_creation")
        .map(|c| i(c, "ephemeral_1h_input_tokens"))
        .unwrap_or(0)
        .min(write);
    let id = s(m, "id").or_else(|| s(v, "uuid")).unwrap_or_default();
    let key = match s(v, "requestId") {
        Some(r) => format!("{id}:{r}"),
        None => id,
    };
    out.push(Parsed {
        key,
        session: s(v, "sessionId").unwrap_or_else(|| fallback.into()),
        project: s(v, "cwd"),
        model: format!("anthropic/{model}"),
        at_ms: ts_ms(v.get("timestamp")).unwrap_or(0),
        input: input + write + read,
        cached: read,
        cache_write: write,
        cache_write_1h: write_1h,
        replayed: false,
        output,
        reasoning: 0,
        provider_cost: None,
    });
}

fn pi_line(v: &Value, carry: &mut Carry, fallback: &str, out: &mut Vec<Parsed>) {
    match v.get("type").and_then(Value::as_str) {
        Some("session") if carry.session.is_none() => {
            carry.session = s(v, "id");
            carry.project = s(v, "cwd");
        }
        Some("message") => {
            let Some(m) = v.get("message") else { return };
            if m.get("role").and_then(Value::as_str) != Some("assistant") {
                return;
            }
            let Some(u) = m.get("usage").filter(|x| x.is_object()) else {
                return;
            };
            let (input, output, read, write) = (
                i(u, "input"),
                i(u, "output"),
                i(u, "cacheRead"),
                i(u, "cacheWrite"),
            );
            if input + output + read + write == 0 {
                return;
            }
            let at = ts_ms(m.get("timestamp"))
                .or_else(|| ts_ms(v.get("timestamp")))
                .unwrap_or(0);
            let id = s(v, "id").unwrap_or_default();
            out.push(Parsed {
                key: format!("{id}|{at}"),
                session: carry.session.clone().unwrap_or_else(|| fallback.into()),
                project: carry.project.clone(),
                model: format!(
                    "{}/{}",
                    provider_name(m.get("provider").and_then(Value::as_str)),
                    s(m, "model").unwrap_or_else(|| "unknown".into())
                ),
                at_ms: at,
                input: input + read + write,
                cached: read,
                cache_write: write,
                cache_write_1h: 0,
                replayed: false,
                output,
                reasoning: 0,
                provider_cost: u
                    .get("cost")
                    .and_then(|c| c.get("total"))
                    .and_then(Value::as_f64),
            });
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codex(lines: &[&str]) -> Vec<Parsed> {
        let mut buf = lines.join("\n");
        buf.push('\n');
        let mut c = Carry::default();
        let mut out = Vec::new();
        parse_lines(Source::Codex, buf.as_bytes(), &mut c, "f", &mut out);
        out
    }

    fn tc(ts: &str, total: Option<(i64, i64, i64, i64)>, last: (i64, i64, i64, i64)) -> String {
        let u = |(a, b, c, d): (i64, i64, i64, i64)| {
            format!(
                r#"{{"input_tokens":{a},"cached_input_tokens":{b},"output_tokens":{c},"reasoning_output_tokens":{d},"total_tokens":{}}}"#,
                a + c
            )
        };
        let total = total
            .map(|t| format!(r#""total_token_usage":{},"#, u(t)))
            .unwrap_or_default();
        format!(
            r#"{{"timestamp":"{ts}","type":"event_msg","payload":{{"type":"token_count","info":{{{total}"last_token_usage":{}}}}}}}"#,
            u(last)
        )
    }

    #[test]
    fn codex_deltas_skip_repeats_and_null_info() {
        let meta = r#"{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"S","cwd":"/w","model_provider":"openai"}}"#;
        let ctx = r#"{"timestamp":"2026-01-01T00:00:00Z","type":"turn_context","payload":{"model":"gpt-5"}}"#;
        let null = r#"{"timestamp":"2026-01-01T00:00:03Z","type":"event_msg","payload":{"type":"token_count","info":null}}"#;
        let rows = codex(&[
            meta,
            ctx,
            &tc(
                "2026-01-01T00:00:01Z",
                Some((100, 40, 10, 5)),
                (100, 40, 10, 5),
            ),
            // Repeated event: same totals (its `last` would double count).
            &tc(
                "2026-01-01T00:00:02Z",
                Some((100, 40, 10, 5)),
                (100, 40, 10, 5),
            ),
            null,
            &tc(
                "2026-01-01T00:00:04Z",
                Some((250, 90, 30, 5)),
                (150, 50, 20, 0),
            ),
        ]);
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (
                rows[1].input,
                rows[1].cached,
                rows[1].output,
                rows[1].reasoning
            ),
            (150, 50, 20, 0)
        );
        assert_eq!(rows[0].model, "openai/gpt-5");
        assert_eq!(
            (rows[0].session.as_str(), rows[0].project.as_deref()),
            ("S", Some("/w"))
        );
        // Reasoning stays inside output (not added again).
        assert_eq!(rows[0].output, 10);
    }

    #[test]
    fn codex_first_event_of_a_resumed_file_charges_only_its_last_request() {
        let rows = codex(&[&tc(
            "2026-01-01T00:00:01Z",
            Some((5000, 0, 500, 0)),
            (300, 0, 20, 0),
        )]);
        assert_eq!((rows[0].input, rows[0].output), (300, 20));
        assert_eq!(rows[0].model, "openai/unknown");
    }

    #[test]
    fn a_line_with_invalid_utf8_is_repaired_and_counted_and_a_broken_one_skipped() {
        let good = r#"{"type":"assistant","timestamp":"2026-01-01T00:00:00Z","sessionId":"S","requestId":"r1","message":{"id":"m1","model":"claude-sonnet-4-5","content":[{"type":"text","text":"café"}],"usage":{"input_tokens":3,"output_tokens":7}}}"#;
        // Another message whose "é" (C3 A9) is cut to its first byte: invalid UTF-8.
        let mut bad = good.replace("m1", "m2").into_bytes();
        let at = bad.windows(2).position(|w| w == [0xC3, 0xA9]).unwrap();
        bad.remove(at + 1);
        let mut buf = Vec::new();
        buf.extend_from_slice(good.as_bytes());
        buf.push(b'\n');
        buf.extend_from_slice(&bad);
        buf.push(b'\n');
        buf.extend_from_slice(br#"{"type":"assistant","message":{"usage":{"input_tok"#);
        buf.push(b'\n');
        let mut out = Vec::new();
        let stats = parse_lines(Source::Claude, &buf, &mut Carry::default(), "f", &mut out);
        assert_eq!(out.len(), 2, "the repaired line counts");
        assert_eq!((out[1].key.as_str(), out[1].output), ("m2:r1", 7));
        assert_eq!(
            stats,
            LineStats {
                repaired: 1,
                skipped: 1
            }
        );
    }

    #[test]
    fn claude_sums_cache_into_input_and_keys_on_message_and_request() {
        let line = r#"{"type":"assistant","timestamp":"2026-01-01T00:00:00Z","sessionId":"S","cwd":"/w","requestId":"req_1","message":{"id":"msg_1","model":"claude-sonnet-4-5","usage":{"input_tokens":3,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":7}}}"#;
        let mut out = Vec::new();
        parse_lines(
            Source::Claude,
            format!("{line}\n").as_bytes(),
            &mut Carry::default(),
            "f",
            &mut out,
        );
        let r = &out[0];
        assert_eq!(
            (r.input, r.cached, r.cache_write, r.output),
            (1103, 1000, 100, 7)
        );
        assert_eq!(
            (r.key.as_str(), r.model.as_str()),
            ("msg_1:req_1", "anthropic/claude-sonnet-4-5")
        );
    }

    /// A real Claude Code line (Claude Code 2.1 writes `cache_creation` with the 5-minute
    /// and 1-hour parts of `cache_creation_input_tokens`).
    #[test]
    fn claude_one_hour_cache_writes_are_kept_apart() {
        let line = r#"{"type":"assistant","timestamp":"2026-01-01T00:00:00Z","sessionId":"S","requestId":"r","message":{"id":"m","model":"claude-sonnet-4-5","usage":{"input_tokens":3,"cache_creation_input_tokens":1000,"cache_read_input_tokens":0,"output_tokens":7,"cache_creation":{"ephemeral_1h_input_tokens":600,"ephemeral_5m_input_tokens":400}}}}"#;
        let mut out = Vec::new();
        parse_lines(
            Source::Claude,
            format!("{line}\n").as_bytes(),
            &mut Carry::default(),
            "f",
            &mut out,
        );
        assert_eq!((out[0].cache_write, out[0].cache_write_1h), (1000, 600));
    }

    /// A fork's file: its own `session_meta`, then the original's lines with their times
    /// (before the fork started), then a new turn.
    #[test]
    fn codex_history_timed_before_the_session_started_is_replayed() {
        let meta = r#"{"timestamp":"2026-01-01T01:00:00Z","type":"session_meta","payload":{"id":"FORK","timestamp":"2026-01-01T01:00:00Z","model_provider":"openai"}}"#;
        let rows = codex(&[
            meta,
            &tc(
                "2026-01-01T00:00:01Z",
                Some((100, 0, 10, 0)),
                (100, 0, 10, 0),
            ),
            &tc(
                "2026-01-01T01:00:05Z",
                Some((250, 0, 30, 0)),
                (150, 0, 20, 0),
            ),
        ]);
        let got: Vec<(bool, i64)> = rows.iter().map(|r| (r.replayed, r.input)).collect();
        assert_eq!(got, [(true, 100), (false, 150)]);
    }
}
