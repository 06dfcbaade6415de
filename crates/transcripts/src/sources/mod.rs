//! Transcript parsers, one per agent, all producing a [`Rollout`]. This module holds what
//! they share: a bounded, lossy JSONL line reader, the injected-context filter, and
//! [`parse_file`] / [`read_meta`] which dispatch on [`Source`].
//!
//! Invariant: source files are opened read-only and never written, renamed or deleted; a
//! malformed, truncated, oversized or non-UTF-8 line is counted in [`ParseStats`] and never
//! aborts a file. Only failing to open or read the file is an error.

pub mod claude;
pub mod codex;
pub mod mcp;
pub mod pi;

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::rollout::{ParseStats, Rollout, Source};
use codex_free_core::Result;
use codex_free_core::error::IoContext;

/// Longest line the reader will hold in memory: 64 MiB. Longer lines are skipped and
/// counted in [`ParseStats::oversized`] (a transcript line that large is a pasted binary or
/// a runaway tool output, not conversation).
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// Reader limits. [`ReadOptions::default`] uses [`MAX_LINE_BYTES`] and no line limit.
#[derive(Debug, Clone, Copy)]
pub struct ReadOptions {
    /// Lines longer than this many bytes are skipped (counted as oversized).
    pub max_line_bytes: usize,
    /// Stop after this many lines (used by [`read_meta`] to peek); `None` reads all.
    pub max_lines: Option<usize>,
}

impl Default for ReadOptions {
    fn default() -> Self {
        Self {
            max_line_bytes: MAX_LINE_BYTES,
            max_lines: None,
        }
    }
}

/// Session facts needed for eligibility without parsing the whole file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionMeta {
    /// Session id (file stem when the transcript has none).
    pub id: String,
    /// Working directory, when recorded.
    pub cwd: Option<PathBuf>,
    /// Session start, when recorded.
    pub started_at: Option<DateTime<Utc>>,
    /// Sub-agent / sidechain transcript.
    pub is_subagent: bool,
    /// Ephemeral session.
    pub is_ephemeral: bool,
}

/// Parse a transcript of `source` at `path` into a [`Rollout`] with default limits.
///
/// Errors: [`codex_free_core::Error::Io`] only when the file cannot be opened or read; bad lines are
/// counted, never fatal.
pub fn parse_file(path: &Path, source: Source) -> Result<Rollout> {
    parse_file_with(path, source, &ReadOptions::default())
}

/// [`parse_file`] with explicit reader limits.
pub fn parse_file_with(path: &Path, source: Source, opts: &ReadOptions) -> Result<Rollout> {
    let file = File::open(path).ctx(|| format!("opening transcript {}", path.display()))?;
    let md = file
        .metadata()
        .ctx(|| format!("reading metadata of {}", path.display()))?;
    let mtime: DateTime<Utc> = md.modified().unwrap_or(SystemTime::UNIX_EPOCH).into();
    let mut ctx = ParseCtx::new(path, source, md.len(), mtime);
    let mut lines = JsonlReader::new(BufReader::with_capacity(256 << 10, file), *opts);
    match source {
        Source::Codex => codex::parse(&mut lines, &mut ctx)?,
        Source::Claude => claude::parse(&mut lines, &mut ctx)?,
        Source::Pi => pi::parse(&mut lines, &mut ctx)?,
        Source::Mcp => mcp::parse(&mut lines, &mut ctx)?,
    }
    ctx.stats.lines = lines.lines;
    ctx.stats.non_utf8 = lines.non_utf8;
    ctx.stats.oversized = lines.oversized;
    Ok(ctx.finish())
}

/// Read only the first lines (at most 64 lines of at most 4 MiB each) to learn the
/// session's id, cwd, start and whether it is a sub-agent or ephemeral session. Claude
/// Code sub-agent files are recognised by path (`subagents/` directories, `agent-*.jsonl`)
/// or by their first records being sidechain records.
///
/// Errors: as [`parse_file`].
pub fn read_meta(path: &Path, source: Source) -> Result<SessionMeta> {
    let opts = ReadOptions {
        max_line_bytes: 4 << 20,
        max_lines: Some(64),
    };
    let r = parse_file_with(path, source, &opts)?;
    Ok(SessionMeta {
        id: r.id,
        cwd: r.cwd,
        started_at: r.started_at,
        is_subagent: r.is_subagent,
        is_ephemeral: r.is_ephemeral,
    })
}

/// Parser state shared by the source modules: the rollout under construction.
pub(crate) struct ParseCtx {
    pub(crate) rollout: Rollout,
    pub(crate) stats: ParseStats,
    last_ts: Option<DateTime<Utc>>,
}

impl ParseCtx {
    fn new(path: &Path, source: Source, size: u64, mtime: DateTime<Utc>) -> Self {
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Self {
            rollout: Rollout {
                id: stem,
                source,
                path: path.to_path_buf(),
                cwd: None,
                started_at: None,
                updated_at: mtime,
                size_bytes: size,
                is_subagent: false,
                is_ephemeral: false,
                items: Vec::new(),
                stats: ParseStats::default(),
            },
            stats: ParseStats::default(),
            last_ts: None,
        }
    }

    /// Note a record timestamp (RFC 3339 string); the first becomes `started_at` unless
    /// the source sets it explicitly, the last feeds `updated_at`.
    pub(crate) fn saw_timestamp(&mut self, v: Option<&Value>) {
        if let Some(ts) = v.and_then(parse_ts) {
            if self.rollout.started_at.is_none() {
                self.rollout.started_at = Some(ts);
            }
            if self.last_ts.is_none_or(|l| ts > l) {
                self.last_ts = Some(ts);
            }
        }
    }

    /// Set the cwd once (first non-empty value wins).
    pub(crate) fn set_cwd(&mut self, v: Option<&Value>) {
        if self.rollout.cwd.is_none()
            && let Some(s) = v.and_then(Value::as_str)
            && !s.is_empty()
        {
            self.rollout.cwd = Some(PathBuf::from(s));
        }
    }

    /// Set the session id from a non-empty string.
    pub(crate) fn set_id(&mut self, v: Option<&Value>) {
        if let Some(s) = v.and_then(Value::as_str)
            && !s.is_empty()
        {
            self.rollout.id = s.to_string();
        }
    }

    fn finish(mut self) -> Rollout {
        if let Some(l) = self.last_ts
            && l > self.rollout.updated_at
        {
            self.rollout.updated_at = l;
        }
        self.rollout.stats = self.stats;
        self.rollout
    }
}

/// Parse an RFC 3339 string or a Unix time in seconds/milliseconds.
pub fn parse_ts(v: &Value) -> Option<DateTime<Utc>> {
    match v {
        Value::String(s) => DateTime::parse_from_rfc3339(s)
            .ok()
            .map(|d| d.with_timezone(&Utc)),
        Value::Number(n) => {
            let n = n.as_i64()?;
            if n > 100_000_000_000 {
                DateTime::from_timestamp_millis(n)
            } else {
                DateTime::from_timestamp(n, 0)
            }
        }
        _ => None,
    }
}

/// One physical line from [`JsonlReader`].
pub(crate) enum Line {
    /// A JSON object.
    Record(serde_json::Map<String, Value>),
    /// Blank line (ignored, not counted as malformed).
    Blank,
    /// Not a JSON object (counted by the caller as malformed).
    Malformed,
}

/// Reads JSONL without ever holding more than `max_line_bytes` of one line: longer lines
/// are skipped to their end; invalid UTF-8 is decoded lossily; a final line without a
/// newline is still offered (and usually comes back [`Line::Malformed`] when truncated).
pub(crate) struct JsonlReader<R> {
    inner: R,
    opts: ReadOptions,
    buf: Vec<u8>,
    done: bool,
    pub(crate) lines: usize,
    pub(crate) non_utf8: usize,
    pub(crate) oversized: usize,
}

impl<R: BufRead> JsonlReader<R> {
    pub(crate) fn new(inner: R, opts: ReadOptions) -> Self {
        Self {
            inner,
            opts,
            buf: Vec::new(),
            done: false,
            lines: 0,
            non_utf8: 0,
            oversized: 0,
        }
    }

    /// Next JSON object, or `None` at the end: blank lines are skipped, and every object
    /// and every line that is not one is counted into `stats` (`records`, `malformed`).
    ///
    /// Errors: as [`Self::next_line`].
    pub(crate) fn next_record(
        &mut self,
        stats: &mut ParseStats,
    ) -> Result<Option<serde_json::Map<String, Value>>> {
        while let Some(line) = self.next_line()? {
            match line {
                Line::Record(m) => {
                    stats.records += 1;
                    return Ok(Some(m));
                }
                Line::Blank => {}
                Line::Malformed => stats.malformed += 1,
            }
        }
        Ok(None)
    }

    /// Next line, or `None` at end of file (or at the `max_lines` limit).
    ///
    /// Errors: read errors of the underlying file.
    pub(crate) fn next_line(&mut self) -> Result<Option<Line>> {
        loop {
            if self.done || self.opts.max_lines.is_some_and(|m| self.lines >= m) {
                return Ok(None);
            }
            self.buf.clear();
            let mut too_long = false;
            let mut saw_any = false;
            loop {
                let chunk = self.inner.fill_buf().ctx(|| "reading transcript".into())?;
                if chunk.is_empty() {
                    self.done = true;
                    break;
                }
                saw_any = true;
                let (take, found_nl) = match memchr_nl(chunk) {
                    Some(i) => (i + 1, true),
                    None => (chunk.len(), false),
                };
                if !too_long {
                    let body = if found_nl { &chunk[..take - 1] } else { chunk };
                    if self.buf.len() + body.len() > self.opts.max_line_bytes {
                        too_long = true;
                        self.buf = Vec::new();
                    } else {
                        self.buf.extend_from_slice(body);
                    }
                }
                self.inner.consume(take);
                if found_nl {
                    break;
                }
            }
            if !saw_any {
                return Ok(None);
            }
            self.lines += 1;
            if too_long {
                self.oversized += 1;
                continue;
            }
            return Ok(Some(self.decode()));
        }
    }

    fn decode(&mut self) -> Line {
        let bytes = if self.buf.last() == Some(&b'\r') {
            &self.buf[..self.buf.len() - 1]
        } else {
            &self.buf[..]
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Line::Blank;
        }
        let parsed = match std::str::from_utf8(bytes) {
            Ok(s) => serde_json::from_str::<Value>(s),
            Err(_) => {
                self.non_utf8 += 1;
                serde_json::from_str::<Value>(&String::from_utf8_lossy(bytes))
            }
        };
        match parsed {
            Ok(Value::Object(m)) => Line::Record(m),
            _ => Line::Malformed,
        }
    }
}

fn memchr_nl(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'\n')
}

/// Read a whole reader through [`JsonlReader`] (used by tests on in-memory data).
#[cfg(test)]
pub(crate) fn reader_from<T: std::io::Read>(r: T, opts: ReadOptions) -> JsonlReader<BufReader<T>> {
    JsonlReader::new(BufReader::new(r), opts)
}

/// Blocks upstream Codex's memories drop from phase-1 input, as (start, end) markers of the
/// whole trimmed text part (ASCII case-insensitive): the injected `AGENTS.md` instructions
/// and `<skill>` payloads are prompt scaffolding, not conversation, and add nothing to a
/// memory. Matched on the prefix `# AGENTS.md instructions` with or without `for <path>`.
const EXCLUDED_BLOCKS: &[(&str, &str)] = &[
    ("# agents.md instructions", "</instructions>"),
    ("<skill>", "</skill>"),
];

/// The same scaffolding in forms upstream's marker pair does not cover, dropped on the
/// prefix alone: Codex's older `<user_instructions>` AGENTS.md wrapper, its skills list,
/// and Claude Code's injected reminders and slash-command echoes (its equivalents of
/// harness text; upstream reads only Codex transcripts).
///
/// Kept on purpose, as upstream keeps them: `<environment_context>` (cwd, shell, sandbox:
/// useful execution context), `<subagent_notification>` (another agent's outcome) and
/// `<turn_aborted>` (the user interrupted: a signal about the work).
const EXCLUDED_PREFIXES: &[&str] = &[
    "<skills_instructions>",
    "<user_instructions>",
    "<system-reminder>",
    "<command-name>",
    "<command-message>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "caveat: the messages below were generated by the user while running local commands",
];

fn starts_with_ci(t: &str, p: &str) -> bool {
    t.len() >= p.len() && t.as_bytes()[..p.len()].eq_ignore_ascii_case(p.as_bytes())
}

fn ends_with_ci(t: &str, p: &str) -> bool {
    t.len() >= p.len() && t.as_bytes()[t.len() - p.len()..].eq_ignore_ascii_case(p.as_bytes())
}

/// True when a user text part is injected harness scaffolding that phase 1 drops (see
/// `EXCLUDED_BLOCKS` and `EXCLUDED_PREFIXES`, each with its reason).
pub fn is_injected_context(text: &str) -> bool {
    let t = text.trim();
    EXCLUDED_BLOCKS
        .iter()
        .any(|(open, close)| starts_with_ci(t, open) && ends_with_ci(t, close))
        || EXCLUDED_PREFIXES.iter().any(|p| starts_with_ci(t, p))
}

/// Join the text of a content value: a plain string, or an array of parts where parts
/// with a `text` string (types `text`, `input_text`, `output_text`) are kept and every
/// other part (images, audio, documents) is dropped and counted in `dropped`.
pub(crate) fn content_text(v: &Value, dropped: &mut usize) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => {
            let mut out = String::new();
            for p in parts {
                match p.get("text").and_then(Value::as_str) {
                    Some(t) => {
                        if !out.is_empty() {
                            out.push('\n');
                        }
                        out.push_str(t);
                    }
                    None => *dropped += 1,
                }
            }
            out
        }
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Tool arguments as text: strings verbatim, anything else as compact JSON.
pub(crate) fn args_text(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// Push a tool call from a content block holding `id`, `name` and the arguments under
/// `args_key` (Claude's `tool_use` uses `input`, pi's `toolCall` uses `arguments`), and
/// remember its name by call id so the matching result can be labelled.
pub(crate) fn push_tool_call(
    ctx: &mut ParseCtx,
    names: &mut std::collections::HashMap<String, String>,
    block: &Value,
    args_key: &str,
) {
    let call_id = block
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let name = block
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("tool")
        .to_string();
    names.insert(call_id.clone(), name.clone());
    ctx.rollout.items.push(super::rollout::Item::ToolCall {
        call_id,
        name,
        args: args_text(block.get(args_key)),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(data: &[u8], max: usize) -> (Vec<&'static str>, usize, usize, usize) {
        let mut r = reader_from(
            data,
            ReadOptions {
                max_line_bytes: max,
                max_lines: None,
            },
        );
        let mut kinds = Vec::new();
        while let Some(l) = r.next_line().unwrap() {
            kinds.push(match l {
                Line::Record(_) => "rec",
                Line::Blank => "blank",
                Line::Malformed => "bad",
            });
        }
        (kinds, r.lines, r.non_utf8, r.oversized)
    }

    #[test]
    fn reader_counts_bad_long_and_non_utf8_lines_and_keeps_going() {
        let mut data = Vec::new();
        data.extend_from_slice(b"{\"a\":1}\n");
        data.extend_from_slice(b"not json\n");
        data.extend_from_slice(b"\n");
        data.extend_from_slice(b"{\"long\":\"");
        data.extend(std::iter::repeat_n(b'x', 200));
        data.extend_from_slice(b"\"}\n");
        data.extend_from_slice(b"{\"t\":\"caf\xe9\"}\r\n");
        data.extend_from_slice(b"{\"cut\":\"abc");
        let (kinds, lines, non_utf8, oversized) = collect(&data, 100);
        assert_eq!(kinds, vec!["rec", "bad", "blank", "rec", "bad"]);
        assert_eq!((lines, non_utf8, oversized), (6, 1, 1));
    }

    #[test]
    fn injected_context_markers_match_case_insensitively_after_whitespace() {
        // Dropped as upstream drops them, with or without `for <path>`.
        assert!(is_injected_context(
            "# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\nbody\n</INSTRUCTIONS>"
        ));
        assert!(is_injected_context(
            "  # agents.md instructions\n<INSTRUCTIONS>\nbody\n</INSTRUCTIONS>\n"
        ));
        assert!(is_injected_context(
            "<skill>\n<name>demo</name>\nbody\n</skill>"
        ));
        // Kept as upstream keeps them.
        assert!(!is_injected_context(
            "  <environment_context>\n<cwd>/x</cwd>\n</environment_context>"
        ));
        assert!(!is_injected_context(
            "<subagent_notification>{\"agent_id\":\"a\",\"status\":\"completed\"}</subagent_notification>"
        ));
        // A user who merely mentions the marker is the human.
        assert!(!is_injected_context(
            "# AGENTS.md instructions are too long, trim them"
        ));
        assert!(!is_injected_context(
            "please read <environment_context> docs"
        ));
        assert!(!is_injected_context("always use pnpm"));
        assert!(is_injected_context("<system-reminder>x</system-reminder>"));
    }
}
