//! This server's own MCP sessions, so work done through Codex Free's tools (e.g. from
//! ChatGPT) becomes pipeline input like any agent transcript.
//!
//! Format, one JSON object per line, under
//! `<state home>/transcripts/YYYY/MM/DD/<session-id>.jsonl` (UTC date of the session's
//! first call):
//! ```text
//! {"type":"session","version":1,"id":"<session-id>","started_at":"<RFC 3339>","cwd":"/path"|null}
//! {"type":"call","seq":1,"ts":"<RFC 3339>","tool":"read","args":"<JSON text>","result":"<text>","is_error":false}
//! ```
//! `args` and `result` are redacted with [`codex_free_redact`] and bounded to
//! [`MAX_FIELD_BYTES`] each (head kept, then [`CUT_MARKER`] naming the bytes cut).
//!
//! Invariant: the writer only appends whole lines through one `O_APPEND` write each, so
//! concurrent writers (several `serve --stdio` processes) never interleave inside a line,
//! and a crash leaves at worst one truncated last line (which the parser counts and skips).

use std::fs::{File, OpenOptions};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::{JsonlReader, ParseCtx};
use crate::rollout::Item;
use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::error::IoContext;
use codex_free_redact::redact;

/// Directory under the state home holding MCP transcripts.
pub const TRANSCRIPTS_DIR: &str = "transcripts";

/// Longest `args` or `result` kept per call: 16 KiB (bytes, cut at a char boundary).
pub const MAX_FIELD_BYTES: usize = 16 << 10;

/// Appended after a cut field; `{}` is the number of bytes removed.
pub const CUT_MARKER: &str = "\n[… {} bytes cut by codex-free transcript limit]";

/// Appends one MCP session's tool calls to its transcript file.
#[derive(Debug)]
pub struct TranscriptWriter {
    path: PathBuf,
    file: Mutex<File>,
    seq: AtomicU64,
}

impl TranscriptWriter {
    /// Open (creating if needed) the transcript of `session_id` under `home` for today's
    /// UTC date, writing the `session` header line when the file is new.
    ///
    /// `session_id` may hold `[A-Za-z0-9._-]` only (at most 128 chars) so it cannot escape
    /// the directory. Errors: [`Error::InvalidArgument`] for a bad id; [`Error::Io`] when the
    /// directory or file cannot be created.
    pub fn open(home: &Path, session_id: &str, cwd: Option<&Path>) -> Result<Self> {
        Self::open_at(home, session_id, cwd, Utc::now())
    }

    /// [`TranscriptWriter::open`] with an explicit clock (tests).
    pub fn open_at(
        home: &Path,
        session_id: &str,
        cwd: Option<&Path>,
        now: DateTime<Utc>,
    ) -> Result<Self> {
        let ok = !session_id.is_empty()
            && session_id.len() <= 128
            && !session_id.starts_with('.')
            && session_id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
        if !ok {
            return Err(Error::InvalidArgument(format!(
                "session_id \"{session_id}\" must be 1-128 chars of [A-Za-z0-9._-] not starting with '.'"
            )));
        }
        let dir = home
            .join(TRANSCRIPTS_DIR)
            .join(now.format("%Y/%m/%d").to_string());
        std::fs::create_dir_all(&dir).ctx(|| format!("creating {}", dir.display()))?;
        let path = dir.join(format!("{session_id}.jsonl"));
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .ctx(|| format!("opening transcript {}", path.display()))?;
        let len = file
            .metadata()
            .ctx(|| format!("reading metadata of {}", path.display()))?
            .len();
        let w = Self {
            path,
            file: Mutex::new(file),
            seq: AtomicU64::new(0),
        };
        if len == 0 {
            let header = json!({
                "type": "session",
                "version": 1,
                "id": session_id,
                "started_at": now.to_rfc3339(),
                "cwd": cwd.map(|c| c.to_string_lossy().into_owned()),
            });
            w.append(&header)?;
        }
        Ok(w)
    }

    /// The transcript file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append one tool call: `args_json` (the call's arguments as JSON text) and
    /// `result_text` are redacted, then cut to [`MAX_FIELD_BYTES`] each.
    ///
    /// Errors: [`Error::Io`] when the append fails (the caller should log and go on: a
    /// transcript is never worth failing a tool call for).
    pub fn record_call(
        &self,
        tool: &str,
        args_json: &str,
        result_text: &str,
        is_error: bool,
    ) -> Result<()> {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        // Serialised from borrowed text (not a `Value` holding copies): a result is up to
        // a page of output on every call.
        #[derive(serde::Serialize)]
        struct CallLine<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            seq: u64,
            ts: String,
            tool: &'a str,
            args: &'a str,
            result: &'a str,
            is_error: bool,
        }
        let (args, result) = (redact(args_json), redact(result_text));
        self.append(&CallLine {
            kind: "call",
            seq,
            ts: Utc::now().to_rfc3339(),
            tool,
            args: &bound(&args),
            result: &bound(&result),
            is_error,
        })
    }

    fn append(&self, v: &impl serde::Serialize) -> Result<()> {
        let mut line = serde_json::to_vec(v)
            .map_err(|e| Error::InvalidArgument(format!("transcript line: {e}")))?;
        line.push(b'\n');
        let mut f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        // One write call per line: with O_APPEND the kernel places it at the end atomically.
        f.write_all(&line)
            .ctx(|| format!("appending to {}", self.path.display()))
    }
}

/// `s` cut to [`MAX_FIELD_BYTES`] at a char boundary, with [`CUT_MARKER`] appended; borrowed
/// when it fits.
fn bound(s: &str) -> std::borrow::Cow<'_, str> {
    if s.len() <= MAX_FIELD_BYTES {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut end = MAX_FIELD_BYTES;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    std::borrow::Cow::Owned(format!(
        "{}{}",
        &s[..end],
        CUT_MARKER.replace("{}", &(s.len() - end).to_string())
    ))
}

pub(crate) fn parse<R: BufRead>(lines: &mut JsonlReader<R>, ctx: &mut ParseCtx) -> Result<()> {
    while let Some(rec) = lines.next_record(&mut ctx.stats)? {
        match rec.get("type").and_then(Value::as_str).unwrap_or("") {
            "session" => {
                ctx.set_id(rec.get("id"));
                ctx.set_cwd(rec.get("cwd"));
                ctx.saw_timestamp(rec.get("started_at"));
            }
            "call" => {
                ctx.saw_timestamp(rec.get("ts"));
                let call_id = rec.get("seq").map(|s| s.to_string()).unwrap_or_default();
                let name = rec
                    .get("tool")
                    .and_then(Value::as_str)
                    .unwrap_or("tool")
                    .to_string();
                let s = |k: &str| rec.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                ctx.rollout.items.push(Item::ToolCall {
                    call_id: call_id.clone(),
                    name: name.clone(),
                    args: s("args"),
                });
                ctx.rollout.items.push(Item::ToolResult {
                    call_id,
                    name: Some(name),
                    text: s("result"),
                    is_error: rec
                        .get("is_error")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                });
            }
            _ => ctx.stats.skipped_unknown += 1,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bound_cuts_at_char_boundary_with_marker() {
        let s = "é".repeat(MAX_FIELD_BYTES); // 2 bytes each
        let b = bound(&s);
        assert!(b.ends_with(&format!(
            "[… {} bytes cut by codex-free transcript limit]",
            s.len() - MAX_FIELD_BYTES
        )));
        assert!(b.len() < MAX_FIELD_BYTES + 80);
    }

    #[test]
    fn rejects_path_like_session_ids() {
        let d = tempfile::tempdir().unwrap();
        for bad in ["../x", "a/b", "", ".hidden"] {
            assert_eq!(
                TranscriptWriter::open(d.path(), bad, None)
                    .unwrap_err()
                    .code(),
                "invalid_argument"
            );
        }
    }
}
