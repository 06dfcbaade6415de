//! Codex CLI rollouts (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl`).
//!
//! Format (0.171, checked on the shared fixtures): every line is
//! `{timestamp, ordinal, type, payload}`; the first is `session_meta` (`id`, `cwd`,
//! `source`, `thread_source`, ...). Conversation lives in `response_item` payloads:
//! `message` (roles `user`/`assistant`/`developer`), `function_call` (with an optional MCP
//! `namespace`), `function_call_output`, `custom_tool_call[_output]`, `local_shell_call`,
//! `web_search_call`, `tool_search_*`. `event_msg`, `turn_context`, `world_state`,
//! `token_usage_record` and `compacted` repeat or describe state and are ignored. Older
//! rollouts without the envelope (a bare meta line, then bare response items) are read too.
//!
//! What is dropped, after upstream `should_persist_response_item_for_memories` and the
//! phase-1 contextual-fragment filter: developer/system messages, reasoning, image
//! generation, ghost snapshots, compaction items, and user text parts that are injected
//! context (environment, skills, AGENTS.md, ...) or whose `content_item_kinds` metadata
//! marks them as not typed by the user.
//!
//! Invariant: a result's `is_error` is true only when the output says so (`success:
//! false`, a non-zero `exit_code`, or a `Process exited with code N` header with N != 0).

use std::collections::HashMap;
use std::io::BufRead;

use serde_json::{Map, Value};

use super::{JsonlReader, ParseCtx, args_text, content_text, is_injected_context};
use crate::rollout::Item;
use codex_free_core::Result;

/// Envelope types that carry no conversation.
const IGNORED_TYPES: &[&str] = &[
    "event_msg",
    "turn_context",
    "world_state",
    "token_usage_record",
    "compacted",
];

/// Response item types upstream excludes from memories.
const DROPPED_ITEMS: &[&str] = &[
    "reasoning",
    "image_generation_call",
    "ghost_snapshot",
    "compaction",
    "context_compaction",
    "compaction_trigger",
    "additional_tools",
    "configuration_update",
];

/// Response item types recognised in envelope-less (older) rollouts.
const BARE_ITEM_TYPES: &[&str] = &[
    "message",
    "reasoning",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "web_search_call",
];

pub(crate) fn parse<R: BufRead>(lines: &mut JsonlReader<R>, ctx: &mut ParseCtx) -> Result<()> {
    let mut names: HashMap<String, String> = HashMap::new();
    let mut first = true;
    while let Some(rec) = lines.next_record(&mut ctx.stats)? {
        ctx.saw_timestamp(rec.get("timestamp"));
        let ty = rec.get("type").and_then(Value::as_str).unwrap_or("");
        match (ty, rec.get("payload")) {
            ("session_meta", Some(Value::Object(p))) => meta(p, ctx),
            ("response_item", Some(Value::Object(p))) => item(p, ctx, &mut names),
            (t, _) if IGNORED_TYPES.contains(&t) => ctx.stats.ignored += 1,
            (t, None) if BARE_ITEM_TYPES.contains(&t) => item(&rec, ctx, &mut names),
            ("", None) if first && rec.contains_key("id") => meta(&rec, ctx),
            (_, None) if rec.contains_key("record_type") => ctx.stats.ignored += 1,
            _ => ctx.stats.skipped_unknown += 1,
        }
        first = false;
    }
    Ok(())
}

fn meta(p: &Map<String, Value>, ctx: &mut ParseCtx) {
    ctx.set_id(p.get("id"));
    ctx.set_cwd(p.get("cwd"));
    if let Some(ts) = p.get("timestamp").and_then(super::parse_ts) {
        ctx.rollout.started_at = Some(ts);
    }
    ctx.rollout.is_subagent =
        is_subagent_source(p.get("source")) || is_subagent_source(p.get("thread_source"));
    ctx.rollout.is_ephemeral = p.get("ephemeral").and_then(Value::as_bool).unwrap_or(false);
}

/// `source` is `"cli"`, `"vscode"`, `"exec"`, `"mcp"` or an object such as
/// `{"subagent": ...}` for threads spawned by another agent.
fn is_subagent_source(v: Option<&Value>) -> bool {
    match v {
        Some(Value::String(s)) => {
            let s = s.to_ascii_lowercase();
            s.contains("subagent") || s.contains("sub_agent")
        }
        Some(Value::Object(m)) => m.keys().any(|k| {
            let k = k.to_ascii_lowercase();
            k.contains("subagent") || k.contains("sub_agent")
        }),
        _ => false,
    }
}

fn item(p: &Map<String, Value>, ctx: &mut ParseCtx, names: &mut HashMap<String, String>) {
    let ty = p.get("type").and_then(Value::as_str).unwrap_or("");
    let call_id = p
        .get("call_id")
        .or_else(|| p.get("id"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    // A tool call: its name, its arguments, and whether a later output names it by call id
    // (web searches have no output item).
    let (name, args, has_output) = match ty {
        "function_call" | "custom_tool_call" => {
            let base = p.get("name").and_then(Value::as_str).unwrap_or("tool");
            let name = match p.get("namespace").and_then(Value::as_str) {
                Some(ns) if !ns.is_empty() => format!("{}__{base}", ns.trim_end_matches('_')),
                _ => base.to_string(),
            };
            (name, p.get("arguments").or_else(|| p.get("input")), true)
        }
        "local_shell_call" => ("shell".into(), p.get("action"), true),
        "web_search_call" => ("web_search".into(), p.get("action"), false),
        "tool_search_call" => ("tool_search".into(), p.get("arguments"), true),
        _ => return other_item(ty, p, ctx, names, call_id),
    };
    if has_output {
        names.insert(call_id.clone(), name.clone());
    }
    ctx.rollout.items.push(Item::ToolCall {
        call_id,
        name,
        args: args_text(args),
    });
}

/// An item that is not a tool call: a message, a tool's output, or one that is dropped.
fn other_item(
    ty: &str,
    p: &Map<String, Value>,
    ctx: &mut ParseCtx,
    names: &HashMap<String, String>,
    call_id: String,
) {
    match ty {
        "message" => message(p, ctx),
        "function_call_output" | "custom_tool_call_output" | "tool_search_output" => {
            let raw = p.get("output").or_else(|| p.get("tools"));
            let (text, is_error) = output(raw, &mut ctx.stats.filtered);
            let name = names.get(&call_id).cloned();
            ctx.rollout.items.push(Item::ToolResult {
                call_id,
                name,
                text,
                is_error,
            });
        }
        t if DROPPED_ITEMS.contains(&t) => ctx.stats.filtered += 1,
        _ => ctx.stats.skipped_unknown += 1,
    }
}

fn message(p: &Map<String, Value>, ctx: &mut ParseCtx) {
    let role = p.get("role").and_then(Value::as_str).unwrap_or("");
    let parts = p.get("content");
    match role {
        "user" => {
            if metadata_marks_context(p) {
                ctx.stats.filtered += 1;
                return;
            }
            let mut kept = Vec::new();
            if let Some(Value::Array(items)) = parts {
                for part in items {
                    match part.get("text").and_then(Value::as_str) {
                        Some(t) if is_injected_context(t) => ctx.stats.filtered += 1,
                        Some(t) => kept.push(t.to_string()),
                        None => ctx.stats.filtered += 1,
                    }
                }
            } else if let Some(Value::String(t)) = parts {
                if is_injected_context(t) {
                    ctx.stats.filtered += 1;
                } else {
                    kept.push(t.clone());
                }
            }
            let text = kept.join("\n");
            if !text.trim().is_empty() {
                ctx.rollout.items.push(Item::User { text });
            }
        }
        "assistant" => {
            let text = parts
                .map(|c| content_text(c, &mut ctx.stats.filtered))
                .unwrap_or_default();
            if !text.trim().is_empty() {
                // Newer Codex versions mark each assistant message `commentary` or
                // `final_answer`; older ones write no phase (read as a final answer).
                let commentary = p.get("phase").and_then(Value::as_str) == Some("commentary");
                ctx.rollout.items.push(Item::Assistant { text, commentary });
            }
        }
        _ => ctx.stats.filtered += 1,
    }
}

/// Codex tags each user message's parts with `content_item_kinds`; `user.*` kinds are typed
/// by the human, anything else is harness text. Harness text is dropped except the kinds
/// upstream's memories keep as context: environment context and sub-agent notifications
/// (their text markers are kept by [`is_injected_context`] for the same reason).
fn metadata_marks_context(p: &Map<String, Value>) -> bool {
    let kinds = p
        .get("internal_chat_message_metadata_passthrough")
        .and_then(|m| m.get("content_item_kinds"))
        .and_then(Value::as_array);
    let kept = |s: &str| {
        s.starts_with("user.") || s.contains("environment_context") || s.contains("subagent")
    };
    match kinds {
        Some(k) if !k.is_empty() => k.iter().all(|k| k.as_str().is_some_and(|s| !kept(s))),
        _ => false,
    }
}

/// Text and error flag of a tool output: a string, `{content, success}`, or a list of
/// content parts. A string that is itself `{"output": ..., "metadata": {"exit_code": N}}`
/// (older exec output) is unwrapped.
fn output(v: Option<&Value>, dropped: &mut usize) -> (String, bool) {
    match v {
        Some(Value::String(s)) => {
            if s.starts_with("{\"output\"")
                && let Ok(Value::Object(o)) = serde_json::from_str::<Value>(s)
            {
                let text = o
                    .get("output")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let code = o
                    .get("metadata")
                    .and_then(|m| m.get("exit_code"))
                    .and_then(Value::as_i64);
                return (text, code.is_some_and(|c| c != 0));
            }
            let err = exit_code_header(s).is_some_and(|c| c != 0);
            (s.clone(), err)
        }
        Some(Value::Object(o)) => {
            let text = o
                .get("content")
                .map(|c| content_text(c, dropped))
                .unwrap_or_default();
            let failed = o.get("success").and_then(Value::as_bool) == Some(false);
            let err = failed || exit_code_header(&text).is_some_and(|c| c != 0);
            (text, err)
        }
        Some(other @ Value::Array(_)) => (content_text(other, dropped), false),
        Some(other) => (other.to_string(), false),
        None => (String::new(), false),
    }
}

/// The exit code from the `Process exited with code N` header Codex's exec tools write
/// in the first lines of their output.
fn exit_code_header(s: &str) -> Option<i64> {
    s.lines().take(6).find_map(|l| {
        l.strip_prefix("Process exited with code ")?
            .trim()
            .parse()
            .ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_code_header_is_read_from_the_first_lines() {
        assert_eq!(
            exit_code_header("Chunk ID: a\nWall time: 1\nProcess exited with code 1\nOutput:\nx"),
            Some(1)
        );
        assert_eq!(
            exit_code_header("Output:\nProcess exited with code 1 is what I printed"),
            None
        );
    }

    #[test]
    fn subagent_sources_are_recognised() {
        assert!(is_subagent_source(Some(
            &serde_json::json!({"subagent": "review"})
        )));
        assert!(!is_subagent_source(Some(&serde_json::json!("cli"))));
        assert!(!is_subagent_source(Some(&serde_json::json!("exec"))));
    }
}
