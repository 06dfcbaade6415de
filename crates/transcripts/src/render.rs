//! Rollout → the text phase 1 sends to the model, in this order: remove every item's
//! `<private>…</private>` spans and redact its secrets ([`codex_free_redact`]), compact tool results ([`super::compact`]), then cap the whole input
//! to [`input_token_limit`] tokens keeping head and tail (upstream Codex: 70% of the
//! model's context window, 150,000 tokens when the window is unknown).
//!
//! Layout, one block per item separated by a blank line:
//! ```text
//! [user]
//! <text>
//!
//! [assistant]
//! <text>
//!
//! [tool call <name> #N]
//! <arguments>
//!
//! [tool <name> #N]            (or "[tool <name> #N] (error)")
//! <result>
//! ```
//! A call and its result share `N` (numbered by first appearance).
//!
//! Invariant: no byte of the rollout reaches [`Rendered::text`] without passing
//! [`codex_free_redact::redact`]; compaction and the cap run after redaction, so a cut can
//! never expose part of a secret.

use std::collections::HashMap;

use serde::Serialize;

use super::compact::{self, Compactor, cap_head_tail};
use super::rollout::{Item, Rollout};
use codex_free_core::tokens;

/// Phase-1 input limit when the model's window is unknown: 150,000 tokens (upstream
/// Codex `DEFAULT_STAGE_ONE_ROLLOUT_TOKEN_LIMIT`).
pub const DEFAULT_INPUT_TOKEN_LIMIT: usize = 150_000;
/// Share of the model's context window phase-1 input may use: 70% (upstream Codex
/// `CONTEXT_WINDOW_PERCENT`).
pub const CONTEXT_WINDOW_PERCENT: usize = 70;

/// The token limit for a model whose context window is `context_window` tokens:
/// 70% of it, or [`DEFAULT_INPUT_TOKEN_LIMIT`] when unknown or 0.
pub fn input_token_limit(context_window: Option<usize>) -> usize {
    match context_window {
        Some(w) if w > 0 => (w.saturating_mul(CONTEXT_WINDOW_PERCENT) / 100).max(1),
        _ => DEFAULT_INPUT_TOKEN_LIMIT,
    }
}

/// A rendered rollout and its token accounting (all counts are o200k tokens).
#[derive(Debug, Clone, Serialize)]
pub struct Rendered {
    /// The text for phase 1: redacted, compacted, capped.
    pub text: String,
    /// Tokens of the redacted rendering without compaction or cap.
    pub tokens_before: usize,
    /// Tokens after compaction, before the whole-input cap.
    pub tokens_compacted: usize,
    /// Tokens of [`Rendered::text`].
    pub tokens_after: usize,
    /// Tokens of tool-result bodies before compaction (part of `tokens_before`).
    pub tool_tokens_before: usize,
    /// Tokens of tool-result bodies after compaction.
    pub tool_tokens_after: usize,
    /// The whole-input limit applied ([`input_token_limit`]).
    pub input_limit: usize,
    /// True when the whole-input cap cut the middle out.
    pub capped: bool,
    /// Tool results rendered.
    pub tool_results: usize,
    /// Tool results that compaction changed.
    pub results_compacted: usize,
    /// Secrets redacted and private spans removed, by rule, counted on the items before
    /// compaction and the cap (a marker compaction later cut out is still counted).
    pub redactions: codex_free_redact::Tally,
}

/// Render `rollout` for phase 1 with `tool_result_token_budget` tokens per tool result
/// (0 disables compaction) and the cap of [`input_token_limit`]`(context_window)`.
pub fn render(
    rollout: &Rollout,
    tool_result_token_budget: usize,
    context_window: Option<usize>,
) -> Rendered {
    render_with(
        rollout,
        tool_result_token_budget,
        context_window,
        &mut vec![None; rollout.items.len()],
    )
}

/// [`render`] without and with compaction (`tool_result_token_budget`), redacting and
/// counting each item once for both: the same two results as two [`render`] calls, at
/// about half the cost (what `memories bench-compaction` measures).
pub fn render_pair(
    rollout: &Rollout,
    tool_result_token_budget: usize,
    context_window: Option<usize>,
) -> (Rendered, Rendered) {
    let mut memo = vec![None; rollout.items.len()];
    let raw = render_with(rollout, 0, context_window, &mut memo);
    let comp = render_with(rollout, tool_result_token_budget, context_window, &mut memo);
    (raw, comp)
}

/// Per item: its redacted body, that body's token count and its redactions, filled on
/// first use.
type Memo = Vec<Option<(String, usize, codex_free_redact::Tally)>>;

/// An item's body as it may leave: its `<private>` spans removed first, per item, so an
/// unclosed tag removes to the end of that message only (the outgoing gate, which sees
/// the whole rendering as one text, would remove to the end of the session), and before
/// compaction and the cap could cut a span's closing tag off; then its secrets redacted.
fn redacted_counted<'m>(
    memo: &'m mut Memo,
    i: usize,
    raw: &str,
    tally: &mut codex_free_redact::Tally,
) -> (&'m str, usize) {
    let (b, n, t) = memo[i].get_or_insert_with(|| {
        let mut t = codex_free_redact::Tally::new();
        let b = codex_free_redact::sanitize(raw, &mut t).into_owned();
        let n = tokens::count(&b);
        (b, n, t)
    });
    for (k, v) in t.iter() {
        *tally.entry(k).or_default() += v;
    }
    (b.as_str(), *n)
}

fn render_with(
    rollout: &Rollout,
    tool_result_token_budget: usize,
    context_window: Option<usize>,
    memo: &mut Memo,
) -> Rendered {
    let mut compactor = Compactor::new(tool_result_token_budget);
    let mut numbers: HashMap<&str, usize> = HashMap::new();
    let mut next = 0usize;
    let mut call_names: HashMap<&str, &str> = HashMap::new();

    let mut text = String::new();
    let (mut before, mut after, mut tool_before, mut tool_after) = (0, 0, 0, 0);
    let (mut results, mut changed) = (0, 0);
    let mut tally = codex_free_redact::Tally::new();

    for (i, item) in rollout.items.iter().enumerate() {
        match item {
            Item::User { text: t } | Item::Assistant { text: t, .. } => {
                let header = if matches!(item, Item::User { .. }) {
                    "[user]"
                } else {
                    "[assistant]"
                };
                let (body, bn) = redacted_counted(memo, i, t, &mut tally);
                let n = tokens::count(header) + bn + 1;
                before += n;
                after += n;
                push(&mut text, header, body);
            }
            Item::ToolCall {
                call_id,
                name,
                args,
            } => {
                let n = number_for(&mut numbers, &mut next, call_id);
                call_names.insert(call_id.as_str(), name.as_str());
                let header = format!("[tool call {name} #{n}]");
                let (body, bn) = redacted_counted(memo, i, args, &mut tally);
                let c = tokens::count(&header) + bn + 1;
                before += c;
                after += c;
                push(&mut text, &header, body);
            }
            Item::ToolResult {
                call_id,
                name,
                text: t,
                is_error,
            } => {
                let n = number_for(&mut numbers, &mut next, call_id);
                let name = name
                    .as_deref()
                    .or_else(|| call_names.get(call_id.as_str()).copied())
                    .unwrap_or("tool");
                let header = compact::label(name, n, *is_error);
                let (redacted, tb) = redacted_counted(memo, i, t, &mut tally);
                let compacted = compactor.result(n, redacted, *is_error);
                let head = tokens::count(&header) + 1;
                let ta = if compacted == redacted {
                    tb
                } else {
                    tokens::count(&compacted)
                };
                results += 1;
                if compacted != redacted {
                    changed += 1;
                }
                tool_before += tb;
                tool_after += ta;
                before += head + tb;
                after += head + ta;
                push(&mut text, &header, &compacted);
            }
        }
    }

    let limit = input_token_limit(context_window);
    let (text, capped, final_tokens) = if after > limit {
        let cut = cap_head_tail(&text, limit).into_owned();
        let n = tokens::count(&cut);
        (cut, true, n)
    } else {
        (text, false, after)
    };
    Rendered {
        text,
        tokens_before: before,
        tokens_compacted: after,
        tokens_after: final_tokens,
        tool_tokens_before: tool_before,
        tool_tokens_after: tool_after,
        input_limit: limit,
        capped,
        tool_results: results,
        results_compacted: changed,
        redactions: tally,
    }
}

/// The number of `call_id` (a call and its result share one); a new number for an unseen
/// or empty id.
fn number_for<'a>(
    numbers: &mut HashMap<&'a str, usize>,
    next: &mut usize,
    call_id: &'a str,
) -> usize {
    if !call_id.is_empty()
        && let Some(&n) = numbers.get(call_id)
    {
        return n;
    }
    *next += 1;
    if !call_id.is_empty() {
        numbers.insert(call_id, *next);
    }
    *next
}

/// Append one block: a blank line between blocks, the header line, the body ending in a
/// newline.
fn push(text: &mut String, header: &str, body: &str) {
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(header);
    text.push('\n');
    text.push_str(body);
    if !body.ends_with('\n') {
        text.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rollout::{ParseStats, Source};

    fn rollout(items: Vec<Item>) -> Rollout {
        Rollout {
            id: "t".into(),
            source: Source::Mcp,
            path: "/x".into(),
            cwd: None,
            started_at: None,
            updated_at: chrono::Utc::now(),
            size_bytes: 0,
            is_subagent: false,
            is_ephemeral: false,
            items,
            stats: ParseStats::default(),
        }
    }

    #[test]
    fn limit_is_seventy_percent_or_150k() {
        assert_eq!(input_token_limit(None), 150_000);
        assert_eq!(input_token_limit(Some(0)), 150_000);
        assert_eq!(input_token_limit(Some(200_000)), 140_000);
    }

    #[test]
    fn layout_numbers_calls_and_results_and_redacts() {
        let r = rollout(vec![
            Item::User {
                text: "my key is sk-proj-abcdefghij0123456789XYZ".into(),
            },
            Item::Assistant {
                text: "ok".into(),
                commentary: false,
            },
            Item::ToolCall {
                call_id: "c1".into(),
                name: "exec".into(),
                args: "{\"cmd\":\"false\"}".into(),
            },
            Item::ToolResult {
                call_id: "c1".into(),
                name: None,
                text: "boom".into(),
                is_error: true,
            },
        ]);
        let out = render(&r, 1000, None);
        assert_eq!(
            out.text,
            "[user]\nmy key is [REDACTED_SECRET]\n\n[assistant]\nok\n\n[tool call exec #1]\n{\"cmd\":\"false\"}\n\n[tool exec #1] (error)\nboom\n"
        );
        assert_eq!(out.tokens_before, out.tokens_after);
        assert!(!out.capped);
        assert_eq!(
            out.redactions.into_iter().collect::<Vec<_>>(),
            [("provider_key", 1)]
        );
    }

    /// A private span is removed per message: an unclosed tag takes the rest of its own
    /// message only, the next message is kept; a span inside a tool result goes too.
    #[test]
    fn private_spans_are_removed_per_message_and_an_unclosed_one_fails_closed() {
        let r = rollout(vec![
            Item::User {
                text: "deploy it <private>PLANTED-1 host db.internal".into(),
            },
            Item::Assistant {
                text: "which branch?".into(),
                commentary: false,
            },
            Item::ToolResult {
                call_id: "c1".into(),
                name: Some("read_file".into()),
                text: "a <PRIVATE>PLANTED-2</private> b".into(),
                is_error: false,
            },
        ]);
        let out = render(&r, 1000, None);
        assert!(!out.text.contains("PLANTED"), "{}", out.text);
        assert!(
            out.text.starts_with(
                "[user]\ndeploy it [private: removed]\n\n[assistant]\nwhich branch?\n"
            ),
            "{}",
            out.text
        );
        assert!(out.text.contains("a [private: removed] b"), "{}", out.text);
        assert_eq!(
            out.redactions.get(codex_free_redact::PRIVATE_SPAN),
            Some(&2)
        );
    }

    #[test]
    fn whole_input_cap_keeps_head_and_tail() {
        let mut items = vec![Item::User {
            text: "FIRST".into(),
        }];
        for i in 0..400 {
            items.push(Item::Assistant {
                commentary: false,
                text: format!("step {i} {}", "word ".repeat(40)),
            });
        }
        items.push(Item::User {
            text: "LAST".into(),
        });
        let out = render(&rollout(items), 1000, Some(2000));
        assert!(out.capped);
        assert!(out.text.starts_with("[user]\nFIRST\n"));
        assert!(out.text.ends_with("[user]\nLAST\n"));
        assert!(out.tokens_after <= 1400 + 8, "{}", out.tokens_after);
    }
}
