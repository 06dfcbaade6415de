//! Test and benchmark seams: a redactor that changes nothing and rollouts read from a
//! directory of text files.

use super::{Redactor, RolloutInput, input_budget};
use std::path::{Path, PathBuf};

use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_store::{ThreadRow, ThreadUpsert};
use codex_free_transcripts::rollout::Item;

/// A [`Redactor`] that changes nothing. Only for tests and for inputs already redacted
/// upstream; production wiring uses `pipeline::redact`.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoRedaction;

impl Redactor for NoRedaction {
    fn redact(&self, text: &str) -> String {
        text.to_string()
    }
}

/// A [`RolloutInput`] over a directory of plain-text rollouts: `<dir>/<source>/<id>.txt`,
/// `updated_at` = file mtime, rendered text = the file (tail-truncated to
/// [`input_budget`] at 4 bytes per token). For tests and benchmarks of the engine without transcript parsing.
#[derive(Debug, Clone)]
pub struct TextDirInput {
    /// The root directory.
    pub dir: PathBuf,
}

impl TextDirInput {
    /// Over `dir`.
    pub fn new(dir: impl AsRef<Path>) -> Self {
        Self {
            dir: dir.as_ref().to_path_buf(),
        }
    }
}

impl RolloutInput for TextDirInput {
    fn scan(&self, sources: &[String]) -> Result<Vec<ThreadUpsert>> {
        let mut out = Vec::new();
        for s in sources {
            let d = self.dir.join(s);
            let Ok(rd) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in rd.flatten() {
                let p = e.path();
                if p.extension().and_then(|x| x.to_str()) != Some("txt") {
                    continue;
                }
                let meta = e
                    .metadata()
                    .map_err(|err| Error::io(format!("stat {}", p.display()), err))?;
                let mtime = meta
                    .modified()
                    .ok()
                    .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
                    .map(|d| d.as_secs() as i64)
                    .unwrap_or(0);
                let id = p
                    .file_stem()
                    .map(|x| x.to_string_lossy().into_owned())
                    .unwrap_or_default();
                out.push(ThreadUpsert {
                    id,
                    source: s.clone(),
                    path: p.to_string_lossy().into_owned(),
                    cwd: None,
                    title: None,
                    created_at: None,
                    updated_at: mtime,
                    is_subagent: false,
                    is_ephemeral: false,
                    content_hash: None,
                });
            }
        }
        out.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(out)
    }

    fn render(
        &self,
        thread: &ThreadRow,
        context_window: Option<u64>,
        _tool_budget: usize,
    ) -> Result<String> {
        let budget_tokens = input_budget(context_window);
        let text = std::fs::read_to_string(&thread.path)
            .map_err(|e| Error::io(format!("reading {}", thread.path), e))?;
        let max = codex_free_core::tokens::bytes_for(budget_tokens);
        if text.len() <= max {
            return Ok(text);
        }
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        Ok(text[..end].to_string())
    }

    /// Lines starting `user:`, `assistant:` or `tool:` open an item (a user message, an
    /// assistant message, a tool result); other lines continue the item before them.
    fn items(&self, thread: &ThreadRow) -> Result<Vec<Item>> {
        let text = std::fs::read_to_string(&thread.path)
            .map_err(|e| Error::io(format!("reading {}", thread.path), e))?;
        let mut items: Vec<Item> = Vec::new();
        for line in text.lines() {
            let opened = if let Some(t) = line.strip_prefix("user:") {
                Some(Item::User {
                    text: t.trim_start().to_string(),
                })
            } else if let Some(t) = line.strip_prefix("assistant:") {
                Some(Item::Assistant {
                    text: t.trim_start().to_string(),
                    commentary: false,
                })
            } else {
                line.strip_prefix("tool:").map(|t| Item::ToolResult {
                    call_id: String::new(),
                    name: None,
                    text: t.trim_start().to_string(),
                    is_error: false,
                })
            };
            match (opened, items.last_mut()) {
                (Some(item), _) => items.push(item),
                (
                    None,
                    Some(
                        Item::User { text }
                        | Item::Assistant { text, .. }
                        | Item::ToolResult { text, .. },
                    ),
                ) => {
                    text.push('\n');
                    text.push_str(line);
                }
                (None, _) => items.push(Item::User {
                    text: line.to_string(),
                }),
            }
        }
        Ok(items)
    }
}
