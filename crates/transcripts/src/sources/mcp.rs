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
//! Invariant: the writer only appends whole lines through one locked `O_APPEND` write each,
//! so concurrent writers (several `serve --stdio` processes) never interleave inside a line;
//! a line that cannot be written whole (full disk) is cut back out, and a torn last line
//! left by anything else is ended before the next one (the parser counts and skips it).

use std::fs::{File, OpenOptions};
use std::io::BufRead;
use std::path::{Path, PathBuf};
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
///
/// Holds no open file: every append opens the file, writes one whole line and closes it
/// again ([`codex_free_core::home::append_whole`]), so the open files of a server do not
/// grow with its sessions (a thousand idle sessions used to exhaust the 1,024-file limit).
#[derive(Debug)]
pub struct TranscriptWriter {
    path: PathBuf,
    /// The `session` header line, written first whenever the file is (again) empty.
    header: Vec<u8>,
    seq: AtomicU64,
}

impl TranscriptWriter {
    /// Open (creating if needed) the transcript of `session_id` under `home` for today's
    /// UTC date, writing the `session` header line when the file is new. Reopening an
    /// existing transcript continues its `seq` numbering.
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
        let mut header = serde_json::to_vec(&json!({
            "type": "session",
            "version": 1,
            "id": session_id,
            "started_at": now.to_rfc3339(),
            "cwd": cwd.map(|c| c.to_string_lossy().into_owned()),
        }))
        .map_err(|e| Error::InvalidArgument(format!("transcript header: {e}")))?;
        header.push(b'\n');
        let file = Self::open_file(&path)?;
        // Lines already there (header included) when a writer is made again for a
        // transcript (a new process, or the server's bounded writer cache): calls go on.
        let lines = count_lines(&file).ctx(|| format!("reading {}", path.display()))?;
        let w = Self {
            path,
            header,
            seq: AtomicU64::new(lines.saturating_sub(1)),
        };
        if lines == 0 {
            codex_free_core::home::append_whole(&file, b"", &w.header)
                .ctx(|| format!("appending to {}", w.path.display()))?;
        }
        Ok(w)
    }

    fn open_file(path: &Path) -> Result<File> {
        let open = || {
            OpenOptions::new()
                .create(true)
                .read(true)
                .append(true)
                .open(path)
        };
        match open() {
            // The day folder was pruned while this session idled: make it again.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir).ctx(|| format!("creating {}", dir.display()))?;
                }
                open()
            }
            r => r,
        }
        .ctx(|| format!("opening transcript {}", path.display()))
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
        // Opened per line (no handle kept per session); one locked O_APPEND write that is
        // cut back out when it cannot be written whole; the header again if the file was
        // removed meanwhile.
        let f = Self::open_file(&self.path)?;
        codex_free_core::home::append_whole(&f, &line, &self.header)
            .ctx(|| format!("appending to {}", self.path.display()))
    }
}

/// Newlines in `f` (read from the start; `f` is only appended to).
fn count_lines(f: &File) -> std::io::Result<u64> {
    use std::io::Read;
    let mut r = f;
    let mut buf = vec![0u8; 64 << 10];
    let mut n = 0u64;
    loop {
        let k = r.read(&mut buf)?;
        if k == 0 {
            return Ok(n);
        }
        n += buf[..k].iter().filter(|b| **b == b'\n').count() as u64;
    }
}

/// How many transcripts the server keeps under `<home>/transcripts`, and their size.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct TranscriptUsage {
    /// `*.jsonl` files.
    pub files: u64,
    /// Their total size, bytes.
    pub bytes: u64,
}

/// Every transcript file (`<home>/transcripts/YYYY/MM/DD/*.jsonl`, regular files only, no
/// link followed) with its metadata.
fn transcript_files(home: &Path) -> Vec<(PathBuf, std::fs::Metadata)> {
    let mut out = Vec::new();
    let mut dirs = vec![(home.join(TRANSCRIPTS_DIR), 0)];
    while let Some((dir, depth)) = dirs.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let Ok(m) = std::fs::symlink_metadata(e.path()) else {
                continue;
            };
            if m.is_dir() && depth < 3 {
                dirs.push((e.path(), depth + 1));
            } else if m.is_file()
                && depth == 3
                && e.path().extension().is_some_and(|x| x == "jsonl")
            {
                out.push((e.path(), m));
            }
        }
    }
    out
}

/// Count and size of the transcripts under `home` (0 when there are none).
pub fn usage(home: &Path) -> TranscriptUsage {
    let files = transcript_files(home);
    TranscriptUsage {
        files: files.len() as u64,
        bytes: files.iter().map(|(_, m)| m.len()).sum(),
    }
}

/// Remove the transcripts under `home` last written more than `retention` before `now` and
/// already extracted: `extracted(path, mtime)` says phase 1 has read the file as it is
/// (the caller asks the store). Nothing else is removed, so a transcript is never lost
/// before the pipeline has used it; day folders left empty go too. Returns what was
/// removed; a file that cannot be removed is skipped (it is tried again next time).
pub fn prune(
    home: &Path,
    retention: std::time::Duration,
    now: std::time::SystemTime,
    extracted: impl Fn(&Path, std::time::SystemTime) -> bool,
) -> TranscriptUsage {
    let mut removed = TranscriptUsage::default();
    let Some(cutoff) = now.checked_sub(retention) else {
        return removed;
    };
    for (path, m) in transcript_files(home) {
        let Ok(mtime) = m.modified() else {
            continue;
        };
        if mtime >= cutoff || !extracted(&path, mtime) {
            continue;
        }
        if std::fs::remove_file(&path).is_ok() {
            removed.files += 1;
            removed.bytes += m.len();
            // Empty day, month and year folders (remove_dir refuses non-empty ones).
            let mut dir = path.parent();
            for _ in 0..3 {
                match dir {
                    Some(d) if std::fs::remove_dir(d).is_ok() => dir = d.parent(),
                    _ => break,
                }
            }
        }
    }
    removed
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

    /// No handle stays open per writer, a new writer of the same transcript continues its
    /// numbering, and a removed file gets its header back.
    #[cfg(target_os = "linux")]
    #[test]
    fn writers_hold_no_file_and_continue_the_numbering() {
        let d = tempfile::tempdir().unwrap();
        let fds = || std::fs::read_dir("/proc/self/fd").unwrap().count();
        let before = fds();
        let writers: Vec<TranscriptWriter> = (0..50)
            .map(|i| TranscriptWriter::open(d.path(), &format!("s{i}"), None).unwrap())
            .collect();
        for w in &writers {
            w.record_call("read_file", "{}", "ok", false).unwrap();
        }
        // Other tests of this process open files too: allow a few, not one per writer.
        assert!(
            fds() < before + 10,
            "{} open files for 50 writers",
            fds() - before
        );
        let again = TranscriptWriter::open(d.path(), "s0", None).unwrap();
        again.record_call("read_file", "{}", "ok", false).unwrap();
        let text = std::fs::read_to_string(again.path()).unwrap();
        let seqs: Vec<u64> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok()?.get("seq")?.as_u64())
            .collect();
        assert_eq!(seqs, [1, 2]);
        std::fs::remove_file(again.path()).unwrap();
        again.record_call("read_file", "{}", "ok", false).unwrap();
        let text = std::fs::read_to_string(again.path()).unwrap();
        assert!(text.starts_with("{\"type\":\"session\""), "{text}");
    }

    #[test]
    fn prune_removes_only_old_extracted_transcripts() {
        let d = tempfile::tempdir().unwrap();
        let now = Utc::now();
        let day = std::time::Duration::from_secs(86_400);
        let mk = |id: &str, age_days: u32| {
            let at = now - chrono::Duration::days(i64::from(age_days));
            let w = TranscriptWriter::open_at(d.path(), id, None, at).unwrap();
            w.record_call("read_file", "{}", &"x".repeat(100), false)
                .unwrap();
            let f = File::options().write(true).open(w.path()).unwrap();
            f.set_modified(std::time::SystemTime::from(at)).unwrap();
            w.path().to_path_buf()
        };
        let old_done = mk("old-done", 45);
        let old_pending = mk("old-pending", 40);
        let new_done = mk("new-done", 2);
        let before = usage(d.path());
        assert_eq!(before.files, 3);
        let done = |p: &Path, _: std::time::SystemTime| !p.ends_with("old-pending.jsonl");
        let removed = prune(d.path(), 30 * day, now.into(), done);
        assert_eq!(removed.files, 1);
        assert!(!old_done.exists());
        assert!(
            !old_done.parent().unwrap().exists(),
            "empty day folder kept"
        );
        assert!(
            old_pending.exists(),
            "a transcript phase 1 has not read was removed"
        );
        assert!(
            new_done.exists(),
            "a transcript inside the retention was removed"
        );
        assert_eq!(usage(d.path()).bytes, before.bytes - removed.bytes);
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
