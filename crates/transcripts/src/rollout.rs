//! The one rollout model every transcript source is normalised into: a session's metadata
//! plus an ordered list of conversation [`Item`]s (user text, assistant text, tool calls,
//! tool results), and the [`ParseStats`] of what was skipped on the way.
//!
//! Invariant: an [`Item`] holds only conversation content; injected harness context
//! (environment blocks, skills/AGENTS.md instructions, developer messages), reasoning,
//! images and compaction summaries never become items (they are counted in
//! [`ParseStats::filtered`]). Nothing here is redacted yet: that is [`codex_free_redact`]'s job
//! at render time.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use codex_free_core::Error;

/// Which agent wrote a transcript. Spelled as in `memories.sources` (`codex`, `claude`,
/// `pi`, `mcp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// OpenAI Codex CLI (`$CODEX_HOME/sessions/**/rollout-*.jsonl`).
    Codex,
    /// Claude Code (`$CLAUDE_CONFIG_DIR/projects/*/*.jsonl`).
    Claude,
    /// pi coding agent (`$PI_CODING_AGENT_DIR/sessions/*/*.jsonl`).
    Pi,
    /// This server's own MCP sessions (`<state home>/transcripts/**/*.jsonl`).
    Mcp,
}

impl Source {
    /// Every source, in display order.
    pub const ALL: [Source; 4] = [Source::Codex, Source::Claude, Source::Pi, Source::Mcp];

    /// The config spelling: `"codex"`, `"claude"`, `"pi"` or `"mcp"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Codex => "codex",
            Source::Claude => "claude",
            Source::Pi => "pi",
            Source::Mcp => "mcp",
        }
    }

    /// Parse a list of config spellings (e.g. `memories.sources`).
    ///
    /// Errors: [`Error::InvalidArgument`] naming the first unknown entry.
    pub fn parse_list<S: AsRef<str>>(names: &[S]) -> Result<Vec<Source>, Error> {
        let mut out = Vec::new();
        for n in names {
            let s: Source = n.as_ref().parse()?;
            if !out.contains(&s) {
                out.push(s);
            }
        }
        Ok(out)
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Source {
    type Err = Error;

    /// Case-insensitive; errors name the value and the allowed spellings.
    fn from_str(s: &str) -> Result<Self, Error> {
        match s.trim().to_ascii_lowercase().as_str() {
            "codex" => Ok(Source::Codex),
            "claude" => Ok(Source::Claude),
            "pi" => Ok(Source::Pi),
            "mcp" => Ok(Source::Mcp),
            other => Err(Error::InvalidArgument(format!(
                "unknown source \"{other}\" (allowed codex|claude|pi|mcp)"
            ))),
        }
    }
}

/// One conversation step, in transcript order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Item {
    /// Text the human typed (injected context already removed).
    User {
        /// The message text, verbatim.
        text: String,
    },
    /// Text the assistant wrote to the user (reasoning excluded).
    Assistant {
        /// The message text, verbatim.
        text: String,
        /// True when the source marks it as progress commentary written while the turn was
        /// still working (Codex's `phase: "commentary"`) rather than the turn's final answer;
        /// V2's phase 1 ranks the two apart. Absent (false) for sources without phases.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        commentary: bool,
    },
    /// The assistant invoked a tool.
    ToolCall {
        /// The id linking the call to its result (source-specific; may be empty).
        call_id: String,
        /// Tool name; MCP tools as `mcp__<server>__<tool>` for every source.
        name: String,
        /// Arguments as the transcript stored them (usually JSON text).
        args: String,
    },
    /// What a tool returned.
    ToolResult {
        /// The id of the call this answers (may be empty when the source has none).
        call_id: String,
        /// The tool name when the source records it or the call was seen.
        name: Option<String>,
        /// The result text (text parts joined with newlines; images dropped).
        text: String,
        /// True when the source flagged an error (or a non-zero exit code).
        is_error: bool,
    },
}

impl Item {
    /// Short kind name: `user`, `assistant`, `tool_call`, `tool_result`.
    pub fn kind(&self) -> &'static str {
        match self {
            Item::User { .. } => "user",
            Item::Assistant { .. } => "assistant",
            Item::ToolCall { .. } => "tool_call",
            Item::ToolResult { .. } => "tool_result",
        }
    }
}

/// What a parser met besides conversation items. Every counter is in lines unless noted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParseStats {
    /// Physical lines read (including blank, bad and skipped ones).
    pub lines: usize,
    /// Lines that parsed as JSON records.
    pub records: usize,
    /// Records of a known type that carry no conversation (token counts, attachments,
    /// queue operations, model changes ...).
    pub ignored: usize,
    /// Records (or record payloads) of a type this parser does not know; skipped.
    pub skipped_unknown: usize,
    /// Lines that were not valid JSON objects (including a truncated last line).
    pub malformed: usize,
    /// Lines that were not valid UTF-8 (decoded lossily and still parsed).
    pub non_utf8: usize,
    /// Lines longer than the reader's cap (64 MiB by default), skipped unread.
    pub oversized: usize,
    /// Content parts dropped as non-conversation: injected context, developer/system
    /// messages, reasoning, images, compaction summaries, sidechain records.
    pub filtered: usize,
    /// pi only: entries not on the active branch.
    pub off_branch: usize,
}

/// A normalised session transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rollout {
    /// Session id from the transcript (falls back to the file stem).
    pub id: String,
    /// Which agent wrote it.
    pub source: Source,
    /// The transcript file (opened read-only, never modified).
    pub path: PathBuf,
    /// Working directory of the session, when recorded.
    pub cwd: Option<PathBuf>,
    /// First timestamp in the transcript (session start), when recorded.
    pub started_at: Option<DateTime<Utc>>,
    /// The later of the file's mtime and the last record's timestamp.
    pub updated_at: DateTime<Utc>,
    /// File size in bytes when parsed.
    pub size_bytes: u64,
    /// A sub-agent / sidechain transcript (excluded from extraction).
    pub is_subagent: bool,
    /// An ephemeral session (excluded from extraction).
    pub is_ephemeral: bool,
    /// Conversation items in order.
    pub items: Vec<Item>,
    /// What was skipped while parsing.
    pub stats: ParseStats,
}

impl Rollout {
    /// Number of items of `kind` (see [`Item::kind`]).
    pub fn count(&self, kind: &str) -> usize {
        self.items.iter().filter(|i| i.kind() == kind).count()
    }
}
