//! Claude Code transcripts (`$CLAUDE_CONFIG_DIR/projects/<cwd-slug>/<session>.jsonl`).
//!
//! Format (2.1, checked on the shared fixtures): no meta line; every record carries
//! `sessionId`, `cwd`, `timestamp`. `user` records hold the human's text (string content)
//! or `tool_result` blocks (`tool_use_id`, `content`, `is_error`); `assistant` records hold
//! one content block each (`text`, `thinking`, `tool_use`), one API message being split
//! over several lines that share `message.id`. `attachment`, `queue-operation`,
//! `last-prompt`, `mode`, `system`, `summary`, `file-history-snapshot` carry no
//! conversation.
//!
//! Dropped: sidechain (`isSidechain`) records, `isMeta` and compact-summary user records,
//! injected user text (`<system-reminder>`, local command echoes, ...), thinking blocks,
//! images. A file under a `subagents/` directory or named `agent-*.jsonl`, or whose
//! records are all sidechain records, is a sub-agent transcript.
//!
//! Invariant: a content block repeated under the same `message.id` yields one item.

use std::collections::{HashMap, HashSet};
use std::io::BufRead;

use serde_json::{Map, Value};

use super::{JsonlReader, ParseCtx, content_text, is_injected_context};
use crate::rollout::Item;
use codex_free_core::Result;

const IGNORED_TYPES: &[&str] = &[
    "attachment",
    "queue-operation",
    "last-prompt",
    "mode",
    "system",
    "summary",
    "file-history-snapshot",
    "progress",
    "custom-title",
    "ai-title",
    "tag",
];

pub(crate) fn parse<R: BufRead>(lines: &mut JsonlReader<R>, ctx: &mut ParseCtx) -> Result<()> {
    let mut names: HashMap<String, String> = HashMap::new();
    let mut seen_blocks: HashSet<(String, u64)> = HashSet::new();
    let (mut main, mut side) = (0usize, 0usize);
    while let Some(rec) = lines.next_record(&mut ctx.stats)? {
        let ty = rec.get("type").and_then(Value::as_str).unwrap_or("");
        if ty != "user" && ty != "assistant" {
            if IGNORED_TYPES.contains(&ty) {
                ctx.stats.ignored += 1;
            } else {
                ctx.stats.skipped_unknown += 1;
            }
            continue;
        }
        ctx.saw_timestamp(rec.get("timestamp"));
        if main + side == 0 {
            ctx.set_id(rec.get("sessionId"));
        }
        ctx.set_cwd(rec.get("cwd"));
        if rec.get("isSidechain").and_then(Value::as_bool) == Some(true) {
            side += 1;
            ctx.stats.filtered += 1;
            continue;
        }
        main += 1;
        let Some(Value::Object(msg)) = rec.get("message") else {
            ctx.stats.skipped_unknown += 1;
            continue;
        };
        if ty == "user" {
            user(&rec, msg, ctx, &names);
        } else {
            assistant(msg, ctx, &mut names, &mut seen_blocks);
        }
    }
    let p = ctx.rollout.path.to_string_lossy().replace('\\', "/");
    let file = ctx
        .rollout
        .path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    ctx.rollout.is_subagent =
        p.contains("/subagents/") || file.starts_with("agent-") || (side > 0 && main == 0);
    Ok(())
}

fn user(
    rec: &Map<String, Value>,
    msg: &Map<String, Value>,
    ctx: &mut ParseCtx,
    names: &HashMap<String, String>,
) {
    let flag = |k: &str| rec.get(k).and_then(Value::as_bool) == Some(true);
    if flag("isMeta") || flag("isCompactSummary") || flag("isVisibleInTranscriptOnly") {
        ctx.stats.filtered += 1;
        return;
    }
    match msg.get("content") {
        Some(Value::String(t)) => push_user(t, ctx),
        Some(Value::Array(blocks)) => {
            let mut texts = Vec::new();
            for b in blocks {
                match b.get("type").and_then(Value::as_str).unwrap_or("") {
                    "text" => {
                        let t = b.get("text").and_then(Value::as_str).unwrap_or("");
                        if is_injected_context(t) {
                            ctx.stats.filtered += 1;
                        } else {
                            texts.push(t.to_string());
                        }
                    }
                    "tool_result" => {
                        let call_id = b
                            .get("tool_use_id")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string();
                        let text = b
                            .get("content")
                            .map(|c| content_text(c, &mut ctx.stats.filtered))
                            .unwrap_or_default();
                        let is_error = b.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                        let name = names.get(&call_id).cloned();
                        ctx.rollout.items.push(Item::ToolResult {
                            call_id,
                            name,
                            text,
                            is_error,
                        });
                    }
                    _ => ctx.stats.filtered += 1,
                }
            }
            if !texts.is_empty() {
                push_user(&texts.join("\n"), ctx);
            }
        }
        _ => ctx.stats.skipped_unknown += 1,
    }
}

fn push_user(t: &str, ctx: &mut ParseCtx) {
    if is_injected_context(t) {
        ctx.stats.filtered += 1;
    } else if !t.trim().is_empty() {
        ctx.rollout.items.push(Item::User {
            text: t.to_string(),
        });
    }
}

fn assistant(
    msg: &Map<String, Value>,
    ctx: &mut ParseCtx,
    names: &mut HashMap<String, String>,
    seen: &mut HashSet<(String, u64)>,
) {
    let mid = msg
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let blocks: Vec<Value> = match msg.get("content") {
        Some(Value::Array(b)) => b.clone(),
        Some(Value::String(s)) => vec![serde_json::json!({"type": "text", "text": s})],
        _ => return,
    };
    for b in blocks {
        if !mid.is_empty() && !seen.insert((mid.clone(), hash_value(&b))) {
            continue;
        }
        match b.get("type").and_then(Value::as_str).unwrap_or("") {
            "text" => {
                let t = b.get("text").and_then(Value::as_str).unwrap_or("");
                if !t.trim().is_empty() {
                    ctx.rollout.items.push(Item::Assistant {
                        text: t.to_string(),
                        commentary: false,
                    });
                }
            }
            "tool_use" | "server_tool_use" => {
                super::push_tool_call(ctx, names, &b, "input");
            }
            _ => ctx.stats.filtered += 1,
        }
    }
}

fn hash_value(v: &Value) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    v.to_string().hash(&mut h);
    h.finish()
}
