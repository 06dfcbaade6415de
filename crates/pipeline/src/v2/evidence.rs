//! V2 phase-1 input: a session's items become labelled rows, each row is given a tier by
//! who wrote it, and rows are chosen tier by tier (newest first inside a tier) within a
//! byte budget, then rendered in transcript order with one marker per gap. The text is
//! sent as consecutive user messages of at most [`CHUNK_BYTES`], cut on UTF-8 boundaries.
//!
//! The numbers follow Codex's `memories/write/src/rollout_input.rs` (pinned 5bf132cd):
//! 4 bytes per token, a 96-byte reserve for truncation markers, tool output capped at
//! 2,000 tokens, every row at 10,000 bytes, chunks of 8,900 bytes.
//!
//! Invariant: every row is redacted before it is truncated, so a cut can never leave the
//! tail of a credential that the whole value would have matched.

use std::collections::HashMap;

use codex_free_transcripts::rollout::Item;

/// The gap marker: stands for one or more consecutive rows left out.
pub const OMITTED: &str = "[... response items omitted ...]\n";
/// Bytes kept free for a truncation marker when a row is cut.
pub const TRUNCATION_RESERVE_BYTES: usize = 96;
/// Tool output (a tool's result) is capped at this many tokens before the row cap.
pub const TOOL_OUTPUT_TOKENS: usize = 2_000;
/// Every row is capped at this many bytes (marker reserve included).
pub const MAX_ROW_BYTES: usize = 10_000;
/// The largest evidence message sent, bytes.
pub const CHUNK_BYTES: usize = 8_900;
/// The estimate of bytes per token the budgets use (as the rest of the pipeline).
pub const BYTES_PER_TOKEN: usize = 4;

/// Who wrote a row, in the order rows are chosen (the first tier is kept first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tier {
    /// What the human typed, and their answers to the agent's questions.
    Human,
    /// The assistant's answers.
    Final,
    /// Messages from other agents (sub-agent notifications, inter-agent messages).
    OtherAgent,
    /// The assistant's progress commentary.
    Commentary,
    /// Context the harness injected into the conversation.
    Context,
    /// Tool calls and their results.
    Tool,
}

impl Tier {
    /// Every tier, in selection order.
    pub const ORDER: [Tier; 6] = [
        Tier::Human,
        Tier::Final,
        Tier::OtherAgent,
        Tier::Commentary,
        Tier::Context,
        Tier::Tool,
    ];

    /// The row label (`[human user]`, ...).
    pub fn label(self) -> &'static str {
        match self {
            Tier::Human => "human user",
            Tier::Final => "assistant final",
            Tier::OtherAgent => "other agent",
            Tier::Commentary => "assistant commentary",
            Tier::Context => "harness context",
            Tier::Tool => "tool",
        }
    }
}

/// One labelled row: `[<label>]\n<content>\n`, already redacted and capped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Who wrote it.
    pub tier: Tier,
    /// The rendered row.
    pub text: String,
}

/// Approximate bytes for `tokens` tokens.
pub fn bytes_for_tokens(tokens: usize) -> usize {
    tokens.saturating_mul(BYTES_PER_TOKEN)
}

/// Cut `text` to at most `max_bytes` bytes plus a marker: the first half of the budget and
/// the last half are kept (each moved to a character boundary, the head down and the tail
/// up), and the middle becomes `…N chars truncated…` (N = characters removed). The marker
/// is not counted in `max_bytes` (callers keep [`TRUNCATION_RESERVE_BYTES`] for it).
/// Returned as is when it fits.
pub fn truncate_middle(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_string();
    }
    let mut head = max_bytes / 2;
    while head > 0 && !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - (max_bytes - max_bytes / 2);
    while tail < text.len() && !text.is_char_boundary(tail) {
        tail += 1;
    }
    let removed = text[head..tail].chars().count();
    format!(
        "{}…{removed} chars truncated…{}",
        &text[..head],
        &text[tail..]
    )
}

fn marked(text: &str, start: &str, end: &str) -> bool {
    let t = text.trim_start();
    let starts = t
        .get(..start.len())
        .is_some_and(|c| c.eq_ignore_ascii_case(start));
    let t = t.trim_end();
    let ends = t
        .get(t.len().saturating_sub(end.len())..)
        .is_some_and(|c| c.eq_ignore_ascii_case(end));
    starts && ends
}

/// A user-role text that another agent wrote: a sub-agent notification, or an inter-agent
/// message (`Message Type:` / `Task name:` / `Sender:` / `Payload:` on its first four lines).
fn from_other_agent(text: &str) -> bool {
    let t = text.trim_start();
    if t.starts_with("<subagent_notification>") {
        return true;
    }
    let mut lines = t.lines();
    lines.next().is_some_and(|l| l.starts_with("Message Type:"))
        && lines.next().is_some_and(|l| l.starts_with("Task name:"))
        && lines.next().is_some_and(|l| l.starts_with("Sender:"))
        && lines.next() == Some("Payload:")
}

/// True when a `request_user_input` result carries at least one non-blank answer.
fn has_answer(result: &str) -> bool {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(result) else {
        return false;
    };
    let Some(answers) = v.get("answers").and_then(|a| a.as_object()) else {
        return false;
    };
    answers.values().any(|a| {
        a.get("answers")
            .and_then(|x| x.as_array())
            .is_some_and(|xs| {
                xs.iter()
                    .any(|x| x.as_str().is_some_and(|s| !s.trim().is_empty()))
            })
    })
}

/// The rows of a session, in transcript order: each item labelled by its tier, redacted by
/// `redact`, then capped (a tool result at [`TOOL_OUTPUT_TOKENS`], every row at
/// [`MAX_ROW_BYTES`], each minus [`TRUNCATION_RESERVE_BYTES`]). A `request_user_input`
/// call is held back and its answered result becomes a human row that quotes the question.
pub fn rows(items: &[Item], redact: &dyn Fn(&str) -> String) -> Vec<Row> {
    let mut out = Vec::new();
    let mut questions: HashMap<String, String> = HashMap::new();
    for item in items {
        let (tier, content, tool_output) = match item {
            Item::User { text } => {
                let tier = if from_other_agent(text) {
                    Tier::OtherAgent
                } else if marked(text, "<environment_context>", "</environment_context>") {
                    Tier::Context
                } else {
                    Tier::Human
                };
                (tier, text.clone(), false)
            }
            Item::Assistant { text, commentary } => {
                let tier = if from_other_agent(text) {
                    Tier::OtherAgent
                } else if *commentary {
                    Tier::Commentary
                } else {
                    Tier::Final
                };
                (tier, text.clone(), false)
            }
            Item::ToolCall {
                call_id,
                name,
                args,
            } => {
                if name == "request_user_input" && !call_id.is_empty() {
                    questions.insert(call_id.clone(), args.clone());
                    continue;
                }
                (Tier::Tool, format!("call {name}: {args}"), false)
            }
            Item::ToolResult {
                call_id,
                name,
                text,
                is_error,
            } => {
                if let Some(q) = questions.get(call_id)
                    && has_answer(text)
                {
                    let q = q.clone();
                    questions.remove(call_id);
                    (
                        Tier::Human,
                        format!("Assistant question: {q}\nHuman reply: {text}"),
                        false,
                    )
                } else {
                    let head = match (name, is_error) {
                        (Some(n), true) => format!("result of {n} (error): "),
                        (Some(n), false) => format!("result of {n}: "),
                        (None, true) => "result (error): ".to_string(),
                        (None, false) => "result: ".to_string(),
                    };
                    (Tier::Tool, format!("{head}{text}"), true)
                }
            }
        };
        let mut text = redact(&content);
        if tool_output {
            text = truncate_middle(
                &text,
                bytes_for_tokens(TOOL_OUTPUT_TOKENS).saturating_sub(TRUNCATION_RESERVE_BYTES),
            );
        }
        text = truncate_middle(&text, MAX_ROW_BYTES - TRUNCATION_RESERVE_BYTES);
        out.push(Row {
            tier,
            text: format!("[{}]\n{text}\n", tier.label()),
        });
    }
    out
}

/// Choose rows within `token_limit` tokens ([`bytes_for_tokens`]): tier by tier in
/// [`Tier::ORDER`], newest first inside a tier, each chosen row costing its bytes plus one
/// [`OMITTED`] (the most a gap beside it can add); a row larger than what is left is cut
/// to fit (keeping [`TRUNCATION_RESERVE_BYTES`]), and nothing more is chosen once no more
/// than a marker and the reserve are left. Rendered in transcript order, one [`OMITTED`]
/// per run of left-out rows. Empty when even that would exceed the limit.
pub fn select(rows: &[Row], token_limit: usize) -> String {
    let limit = bytes_for_tokens(token_limit);
    let mut remaining = limit.saturating_sub(OMITTED.len());
    let mut chosen: Vec<Option<String>> = vec![None; rows.len()];
    for tier in Tier::ORDER {
        for (i, row) in rows.iter().enumerate().rev() {
            if row.tier != tier || remaining <= OMITTED.len() + TRUNCATION_RESERVE_BYTES {
                continue;
            }
            let budget = remaining - OMITTED.len();
            let text = if row.text.len() <= budget {
                row.text.clone()
            } else {
                truncate_middle(&row.text, budget - TRUNCATION_RESERVE_BYTES)
            };
            remaining = remaining.saturating_sub(text.len() + OMITTED.len());
            chosen[i] = Some(text);
        }
    }
    let mut out = String::new();
    let mut gap = false;
    for row in chosen {
        match row {
            Some(t) => {
                out.push_str(&t);
                gap = false;
            }
            None if !gap => {
                out.push_str(OMITTED);
                gap = true;
            }
            None => {}
        }
    }
    if out.len() > limit {
        return String::new();
    }
    out
}

/// Split `text` into consecutive pieces of at most [`CHUNK_BYTES`] bytes, each ending on a
/// character boundary; joined they are `text` exactly. Empty text gives no piece.
pub fn chunks(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut end = rest.len().min(CHUNK_BYTES);
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        out.push(&rest[..end]);
        rest = &rest[end..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(s: &str) -> String {
        s.to_string()
    }

    fn user(t: &str) -> Item {
        Item::User { text: t.into() }
    }

    fn tool_result(t: &str) -> Item {
        Item::ToolResult {
            call_id: "c1".into(),
            name: Some("bash".into()),
            text: t.into(),
            is_error: false,
        }
    }

    /// pi-codex-memory `test/v2.test.mjs` ("V2 evidence budgets preserve human priority"):
    /// a human row and a 50,000-byte tool row under a 100-token budget keep the human text
    /// and stay within 400 bytes (100 tokens × 4).
    #[test]
    fn a_tiny_budget_keeps_the_human_row_first() {
        let rows = rows(
            &[user("important request"), tool_result(&"x".repeat(50_000))],
            &plain,
        );
        let out = select(&rows, 100);
        assert!(out.contains("important request"), "{out}");
        assert!(out.len() <= 400, "{} bytes", out.len());
        assert!(
            out.starts_with("[human user]\nimportant request\n"),
            "{out}"
        );
        // The tool row came second: it was cut to what was left, with its marker.
        assert!(out.contains("chars truncated"), "{out}");
    }

    /// Tier order beats recency: with room for two rows only, the older human row is kept
    /// over two newer assistant rows, and inside a tier the newest wins. The gaps are marked
    /// once per run.
    #[test]
    fn tiers_first_then_newest_inside_a_tier() {
        let big = "a".repeat(300);
        let items = [
            user("first ask"),
            Item::Assistant {
                text: big.clone(),
                commentary: false,
            },
            Item::Assistant {
                text: big.clone(),
                commentary: false,
            },
            user("second ask"),
        ];
        let rows = rows(&items, &plain);
        // Room for both human rows (~30 bytes each + markers) and no 300-byte row in full.
        let out = select(&rows, 60);
        assert!(
            out.contains("first ask") && out.contains("second ask"),
            "{out}"
        );
        assert_eq!(out.matches(OMITTED).count(), 1, "{out}");
        let i_first = out.find("first ask").unwrap();
        let i_gap = out.find(OMITTED).unwrap();
        let i_second = out.find("second ask").unwrap();
        assert!(
            i_first < i_gap && i_gap < i_second,
            "transcript order: {out}"
        );
        // Enough for one assistant row too: the newer of the two is the one kept.
        let out = select(&rows, 140);
        let kept = out.matches("[assistant final]").count();
        assert_eq!(kept, 1, "{out}");
        let i_assistant = out.find("[assistant final]").unwrap();
        assert!(
            out[..i_assistant].contains(OMITTED),
            "the older one is the gap: {out}"
        );
    }

    /// Tool output is capped at 2,000 tokens minus the reserve (7,904 bytes), tool calls and
    /// other rows at 10,000 minus the reserve (9,904) — the caps of upstream's
    /// `rollout_input.rs` (`TOOL_OUTPUT_TOKENS`, `MAX_ROW_BYTES`, `TRUNCATION_RESERVE_BYTES`)
    /// and pi-codex-memory's `v2.ts` (7904 / 9904).
    #[test]
    fn tool_results_are_capped_apart_from_tool_calls() {
        let items = [
            Item::ToolCall {
                call_id: "c1".into(),
                name: "write".into(),
                args: "y".repeat(20_000),
            },
            tool_result(&"x".repeat(20_000)),
            user(&"z".repeat(20_000)),
        ];
        let rows = rows(&items, &plain);
        let body = |r: &Row| r.text.split_once('\n').unwrap().1.trim_end().to_string();
        let kept = |s: &str| s.bytes().filter(|b| b"xyz".contains(b)).count();
        let call = body(&rows[0]);
        let result = body(&rows[1]);
        let human = body(&rows[2]);
        // Content bytes kept (the marker aside): the call's prefix counts towards its cap.
        assert_eq!(kept(&result) + "result of bash: ".len(), 7_904);
        assert_eq!(kept(&call) + "call write: ".len(), 9_904);
        assert_eq!(kept(&human), 9_904);
    }

    /// Redaction precedes truncation: a credential longer than the row cap is replaced
    /// whole, so no tail of it survives the cut (pi-codex-memory `v2.test.mjs`, "redaction
    /// must precede truncation so credential tails cannot survive").
    #[test]
    fn rows_are_redacted_before_they_are_cut() {
        let secret = format!("sk-{}", "a".repeat(20_000));
        let red = |s: &str| codex_free_redact::redact(s).into_owned();
        let rows = rows(&[user(&secret)], &red);
        assert!(
            !rows[0].text.contains("aaaaaaaaaaaaaaaa"),
            "{}",
            rows[0].text
        );
        assert!(rows[0].text.len() < 200, "{}", rows[0].text);
    }

    /// Upstream `rollout_input_tests.rs`
    /// (`extraction_chunks_preserve_unicode_evidence_with_bounded_messages`):
    /// "User correction: 🐈\n" × 2,000 is split into pieces under 9,000 bytes that join
    /// back exactly; and pi-codex-memory's vector "한글😀" × 5,000 (pieces ≤ 8,900).
    #[test]
    fn chunks_cut_on_char_boundaries_and_join_back() {
        for input in [
            "User correction: 🐈\n".repeat(2_000),
            "한글😀".repeat(5_000),
        ] {
            let pieces = chunks(&input);
            assert!(pieces.len() > 1);
            assert!(
                pieces
                    .iter()
                    .all(|p| p.len() <= CHUNK_BYTES && p.len() < 9_000)
            );
            assert_eq!(pieces.concat(), input);
        }
        assert!(chunks("").is_empty());
    }

    /// Human replies to the agent's `request_user_input` questions are human evidence and
    /// quote the question; sub-agent notifications are other-agent rows; an injected
    /// environment block is harness context.
    #[test]
    fn provenance_of_rows() {
        let items = [
            Item::ToolCall {
                call_id: "q1".into(),
                name: "request_user_input".into(),
                args: "{\"questions\":[{\"id\":\"pm\",\"question\":\"npm or pnpm?\"}]}".into(),
            },
            Item::ToolResult {
                call_id: "q1".into(),
                name: Some("request_user_input".into()),
                text: "{\"answers\":{\"pm\":{\"answers\":[\"pnpm\"]}}}".into(),
                is_error: false,
            },
            user(
                "<subagent_notification>{\"agent_id\":\"a\",\"status\":\"completed\"}</subagent_notification>",
            ),
            user("<environment_context>\n<cwd>/tmp</cwd>\n</environment_context>"),
        ];
        let rows = rows(&items, &plain);
        let tiers: Vec<Tier> = rows.iter().map(|r| r.tier).collect();
        assert_eq!(tiers, [Tier::Human, Tier::OtherAgent, Tier::Context]);
        assert!(rows[0].text.contains("Assistant question: {\"questions\""));
        assert!(rows[0].text.contains("Human reply: {\"answers\""));
    }

    /// A Codex rollout's assistant messages carry `phase`: `commentary` rows rank below final
    /// answers and other agents (upstream's tier order), a message without a phase is final.
    #[test]
    fn codex_commentary_is_its_own_tier() {
        use codex_free_transcripts::rollout::Source;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rollout-2026-11-29T12-00-00-x.jsonl");
        let msg = |phase: Option<&str>, text: &str| {
            let mut p = serde_json::json!({"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": text}]});
            if let Some(ph) = phase {
                p["phase"] = ph.into();
            }
            serde_json::json!({"timestamp": "2026-11-29T12:00:01Z", "type": "response_item",
                "payload": p})
            .to_string()
        };
        let lines = [
            serde_json::json!({"timestamp": "2026-11-29T12:00:00Z", "type": "session_meta",
                "payload": {"id": "01a2275c-0000-7000-8000-000000000001",
                "timestamp": "2026-11-29T12:00:00Z", "cwd": "/tmp/p"}})
            .to_string(),
            msg(Some("commentary"), "checking the tests first"),
            msg(Some("final_answer"), "done: tests pass"),
            msg(None, "older codex, no phase"),
        ];
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let rollout = codex_free_transcripts::sources::parse_file(&path, Source::Codex).unwrap();
        let rows = rows(&rollout.items, &plain);
        let tiers: Vec<Tier> = rows.iter().map(|r| r.tier).collect();
        assert_eq!(tiers, [Tier::Commentary, Tier::Final, Tier::Final]);
        let out = select(&rows, 1000);
        assert!(
            out.starts_with("[assistant commentary]\nchecking the tests first\n"),
            "{out}"
        );
        assert!(
            out.contains("[assistant final]\ndone: tests pass\n"),
            "{out}"
        );
    }

    /// The middle cut keeps half the budget at each end on character boundaries and counts
    /// the removed characters (upstream `truncate_text` with a byte policy, as
    /// pi-codex-memory's `codex-truncate.ts` ports it).
    #[test]
    fn truncate_middle_counts_removed_chars() {
        assert_eq!(truncate_middle("abcdefghij", 4), "ab…6 chars truncated…ij");
        assert_eq!(truncate_middle("short", 10), "short");
        // 4 bytes per 😀: a budget of 6 keeps 3 → 0 bytes of head (boundary), tail from 3
        // bytes before the end moved up to the boundary → the last emoji is dropped too.
        let s = "😀😀😀";
        let t = truncate_middle(s, 6);
        assert!(t.is_char_boundary(0));
        assert_eq!(t, "…3 chars truncated…");
    }
}
