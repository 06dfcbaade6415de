//! pi coding agent sessions (`$PI_CODING_AGENT_DIR/sessions/--<cwd>--/<ts>_<uuid>.jsonl`).
//!
//! Format (v3, checked on the shared fixtures): the first line is
//! `{"type":"session","version":3,"id","timestamp","cwd"}`; every later entry has `id` and
//! `parentId`, forming a tree (branches appear when the user goes back and re-prompts).
//! `message` entries carry `message.role`: `user`, `assistant` (parts `text`, `thinking`,
//! `toolCall{id,name,arguments}`), `toolResult` (`toolCallId`, `toolName`, `content`,
//! `isError`), `bashExecution` (a command the user ran), and extension/summary roles.
//!
//! Only the active branch is read: from the last entry in the file (pi's leaf) follow
//! `parentId` to the root; entries elsewhere are counted in `off_branch`. Dropped:
//! thinking parts, images, compaction and branch summaries, extension-injected messages.
//!
//! Invariant: items come out in root-to-leaf order of the active branch; a `parentId`
//! cycle or a dangling parent ends the walk instead of looping.

use std::collections::{HashMap, HashSet};
use std::io::BufRead;

use serde_json::{Map, Value};

use super::{JsonlReader, ParseCtx, args_text, content_text, is_injected_context};
use crate::rollout::Item;
use codex_free_core::Result;

const IGNORED_TYPES: &[&str] = &[
    "model_change",
    "thinking_level_change",
    "label",
    "session_info",
    "custom",
];
const DROPPED_TYPES: &[&str] = &["compaction", "branch_summary", "custom_message"];

pub(crate) fn parse<R: BufRead>(lines: &mut JsonlReader<R>, ctx: &mut ParseCtx) -> Result<()> {
    let mut entries: Vec<Map<String, Value>> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    while let Some(rec) = lines.next_record(&mut ctx.stats)? {
        ctx.saw_timestamp(rec.get("timestamp"));
        if rec.get("type").and_then(Value::as_str) == Some("session") {
            ctx.set_id(rec.get("id"));
            ctx.set_cwd(rec.get("cwd"));
            if let Some(ts) = rec.get("timestamp").and_then(super::parse_ts) {
                ctx.rollout.started_at = Some(ts);
            }
            continue;
        }
        match rec.get("id").and_then(Value::as_str) {
            Some(id) => {
                index.insert(id.to_string(), entries.len());
                entries.push(rec);
            }
            None => ctx.stats.skipped_unknown += 1,
        }
    }

    // Active branch: leaf = last entry; walk parents, guarding against cycles.
    let mut path = Vec::new();
    let mut visited = HashSet::new();
    let mut cur = entries.len().checked_sub(1);
    while let Some(i) = cur {
        if !visited.insert(i) {
            break;
        }
        path.push(i);
        cur = entries[i]
            .get("parentId")
            .and_then(Value::as_str)
            .and_then(|p| index.get(p).copied());
    }
    path.reverse();
    ctx.stats.off_branch = entries.len() - path.len();

    let mut names: HashMap<String, String> = HashMap::new();
    for i in path {
        entry(&entries[i], ctx, &mut names);
    }
    Ok(())
}

fn entry(e: &Map<String, Value>, ctx: &mut ParseCtx, names: &mut HashMap<String, String>) {
    let ty = e.get("type").and_then(Value::as_str).unwrap_or("");
    if ty != "message" {
        if IGNORED_TYPES.contains(&ty) {
            ctx.stats.ignored += 1;
        } else if DROPPED_TYPES.contains(&ty) {
            ctx.stats.filtered += 1;
        } else {
            ctx.stats.skipped_unknown += 1;
        }
        return;
    }
    let Some(Value::Object(m)) = e.get("message") else {
        ctx.stats.skipped_unknown += 1;
        return;
    };
    match m.get("role").and_then(Value::as_str).unwrap_or("") {
        "user" => {
            let text = m
                .get("content")
                .map(|c| content_text(c, &mut ctx.stats.filtered))
                .unwrap_or_default();
            if is_injected_context(&text) {
                ctx.stats.filtered += 1;
            } else if !text.trim().is_empty() {
                ctx.rollout.items.push(Item::User { text });
            }
        }
        "assistant" => {
            let parts = match m.get("content") {
                Some(Value::Array(p)) => p.as_slice(),
                _ => &[],
            };
            let mut text = String::new();
            for p in parts {
                match p.get("type").and_then(Value::as_str).unwrap_or("") {
                    "text" => {
                        if !text.is_empty() {
                            text.push('\n');
                        }
                        text.push_str(p.get("text").and_then(Value::as_str).unwrap_or(""));
                    }
                    "toolCall" => {
                        flush_assistant(&mut text, ctx);
                        super::push_tool_call(ctx, names, p, "arguments");
                    }
                    _ => ctx.stats.filtered += 1,
                }
            }
            flush_assistant(&mut text, ctx);
        }
        "toolResult" => {
            let call_id = m
                .get("toolCallId")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let name = m
                .get("toolName")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| names.get(&call_id).cloned());
            let text = m
                .get("content")
                .map(|c| content_text(c, &mut ctx.stats.filtered))
                .unwrap_or_default();
            let is_error = m.get("isError").and_then(Value::as_bool).unwrap_or(false);
            ctx.rollout.items.push(Item::ToolResult {
                call_id,
                name,
                text,
                is_error,
            });
        }
        "bashExecution" => {
            let call_id = e
                .get("id")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let args = args_text(m.get("command"));
            let text = m
                .get("output")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let code = m.get("exitCode").and_then(Value::as_i64);
            let is_error = code.is_some_and(|c| c != 0)
                || m.get("cancelled").and_then(Value::as_bool) == Some(true);
            ctx.rollout.items.push(Item::ToolCall {
                call_id: call_id.clone(),
                name: "user_bash".into(),
                args,
            });
            ctx.rollout.items.push(Item::ToolResult {
                call_id,
                name: Some("user_bash".into()),
                text,
                is_error,
            });
        }
        _ => ctx.stats.filtered += 1,
    }
}

fn flush_assistant(text: &mut String, ctx: &mut ParseCtx) {
    if !text.trim().is_empty() {
        ctx.rollout.items.push(Item::Assistant {
            text: std::mem::take(text),
            commentary: false,
        });
    }
    text.clear();
}
