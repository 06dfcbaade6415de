//! The read path: what new sessions get from the memory folder.
//!
//! - [`summary_for_instructions`]: `memory_summary.md` with a short usage policy, at most
//!   [`SUMMARY_TOKEN_BUDGET`] tokens in all (Codex's 2,500-token summary budget),
//!   for the MCP server's instructions and `recall`.
//! - The dedicated tools, each `fn(home, config, &Args) -> Result<String>` with the limits
//!   of the pi-codex-memory host's tools: [`memories_list`] (default/max [`LIST_MAX`]
//!   entries), [`memories_search`] (default/max [`SEARCH_MAX`] matches, SQLite FTS5 index),
//!   [`memories_read`] (line offset/limit, at most [`READ_MAX_TOKENS`] tokens, continuation
//!   line), and [`memories_add_ad_hoc_note`] (a timestamped note queued for the next
//!   consolidation).
//! - Rollouts whose memory `memories_read` returned raise usage counts (citations, the
//!   other source of those counts, are parsed in [`crate::citations`]).
//!
//! Invariant: every path goes through the folder's read-only [`FolderJail`]; nothing here
//! writes inside the folder (notes go to the inbox outside it); every output is bounded
//! and says how to continue when cut.

use std::path::Path;

use serde::Deserialize;

use super::folder::{RAW_MEMORIES_MD, ROLLOUT_SUMMARIES_DIR, SUMMARY_MD};
use super::jail::{FolderJail, WritePolicy, page_lines};
use super::select::{NOTES_INBOX_DIR, ROLLOUT_ID_KEY};
use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::config::Config;

pub use crate::policy::{
    POLICY, SUMMARY_TOKEN_BUDGET, detail_line, policy_text, summary_token_room,
};
use codex_free_store::fts::{INDEX_FILE, IndexedFile, MemoryIndex};

/// Default and maximum entries of one `memories_list` page (the pi-codex-memory host's limit).
pub const LIST_MAX: usize = 2000;
/// Default and maximum matches of one `memories_search` page (the pi-codex-memory host's limit).
pub const SEARCH_MAX: usize = 200;
/// Default and maximum tokens of one `memories_read` page (the pi-codex-memory host's limit).
pub const READ_MAX_TOKENS: usize = 20_000;
/// Largest ad-hoc note, bytes (16 KiB).
pub const NOTE_MAX_BYTES: usize = 16 * 1024;
/// Longest line text shown in a search hit, characters.
const HIT_MAX_CHARS: usize = 300;

fn enabled(cfg: &Config) -> Result<()> {
    if !cfg.memories.enabled || !cfg.memories.use_memories {
        return Err(Error::Refused(
            "memories are turned off (memories.enabled / memories.use_memories is false)".into(),
        ));
    }
    Ok(())
}

/// The folder new sessions are served from: the active version's (`memories.version`),
/// `<home>/memories` for V1, `<home>/memories_v2` for V2.
pub fn served_root(home: &Path, cfg: &Config) -> std::path::PathBuf {
    home.join(crate::layout::folder_dir(cfg.memories.active_version()))
}

fn jail(home: &Path, cfg: &Config) -> Result<Option<FolderJail>> {
    let root = served_root(home, cfg);
    if std::fs::symlink_metadata(&root).is_err() {
        return Ok(None);
    }
    FolderJail::new(&root, WritePolicy::ReadOnly).map(Some)
}

const NO_FOLDER: &str = "No memories yet: the memory folder has not been created (it appears after the first consolidation).\n";

/// The memory block for a new session's instructions: [`POLICY`] (V2: [`crate::policy::POLICY_V2`])
/// then the active version's `memory_summary.md`,
/// cut at line boundaries so the whole block stays within [`SUMMARY_TOKEN_BUDGET`] tokens
/// (counted with [`codex_free_core::tokens::count`]); a cut is announced in a last line. `None` when
/// memories are off, or the summary is missing, empty or unreadable (e.g. a link).
pub fn summary_for_instructions(home: &Path, cfg: &Config) -> Option<String> {
    let dedicated = cfg.memories.dedicated_tools;
    match cfg.memories.active_version() {
        codex_free_core::config::MemoryVersion::V1 => {
            summary_block(home, cfg, detail_line(dedicated), 0)
        }
        codex_free_core::config::MemoryVersion::V2 => summary_block(
            home,
            cfg,
            &crate::policy::v2_detail_line(dedicated, None),
            0,
        ),
    }
}

/// The memory block for a copy linked into another agent's instructions file (see
/// `crate::connect`): as [`summary_for_instructions`], with `detail` as the line on where
/// to find more (the caller words it for the active version: V2 has no `MEMORY.md`, see
/// [`crate::policy::v2_detail_line`]), and `reserved` tokens of the caller's own wrapper (marker lines) counted
/// against the same [`SUMMARY_TOKEN_BUDGET`], so the file's block never exceeds it.
pub fn summary_for_linked_copy(
    home: &Path,
    cfg: &Config,
    detail: &str,
    reserved: usize,
) -> Option<String> {
    summary_block(home, cfg, detail, reserved)
}

fn summary_block(home: &Path, cfg: &Config, detail: &str, reserved: usize) -> Option<String> {
    enabled(cfg).ok()?;
    let v2 = cfg.memories.active_version() == codex_free_core::config::MemoryVersion::V2;
    // Review before use: while a consolidation waits, the last accepted summary is served
    // (review holds V1 consolidations only).
    let held = if v2 {
        None
    } else {
        super::review::served_summary(home, cfg.memories.review)
    };
    let raw = match held {
        Some(held) => codex_free_redact::redact_string(held?),
        None => {
            let j = jail(home, cfg).ok()??;
            j.read_to_string(SUMMARY_MD).ok()?
        }
    };
    if raw.trim().is_empty() {
        return None;
    }
    // V2 serves only a summary its gate accepted as valid (under 10,000 bytes).
    if v2 && !crate::v2::is_valid_summary(&raw) {
        tracing::warn!("memories_v2/memory_summary.md is not a valid v2 summary; not served");
        return None;
    }
    let mut budget = super::budget::ArtifactBudget::from_config(&cfg.memories);
    if v2 {
        budget.summary_max_bytes = crate::v2::SUMMARY_MAX_BYTES;
        budget.summary_max_lines = usize::MAX;
    }
    let (summary, cut) = super::gate::serve_summary(&raw, &budget);
    if cut {
        tracing::warn!(
            "memory_summary.md exceeds its line or byte budget; serving its first {} bytes",
            summary.len()
        );
    }
    let policy = if v2 {
        super::policy::policy_text_v2(detail)
    } else {
        policy_text(detail)
    };
    let note = "(memory summary cut to fit the 2,500-token budget)\n";
    let fixed = codex_free_core::tokens::count(&policy) + reserved;
    let mut out = policy;
    let mut used = fixed;
    let lines: Vec<&str> = summary.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        let t = codex_free_core::tokens::count(l) + 1;
        let reserve = if i + 1 < lines.len() {
            codex_free_core::tokens::count(note) + 1
        } else {
            0
        };
        if used + t + reserve > SUMMARY_TOKEN_BUDGET {
            out.push_str(note);
            return Some(out);
        }
        out.push_str(l);
        out.push('\n');
        used += t;
    }
    if cut {
        out.push_str("(memory summary cut to its line and byte budget)\n");
    }
    Some(out)
}

/// Arguments of `memories_list`.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoriesListArgs {
    /// Directory (or file) inside the memory folder, e.g. `rollout_summaries`; omitted = the whole folder.
    #[serde(default)]
    pub path: Option<String>,
    /// Entries to skip (from a previous page's continuation line). Default 0.
    #[serde(default)]
    pub offset: Option<usize>,
    /// Most entries to return. Default and maximum 2000.
    #[serde(default)]
    pub max_results: Option<usize>,
}

/// Arguments of `memories_search`.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoriesSearchArgs {
    /// Words to look for (any word matches; lines with more of them rank first; word prefixes match).
    pub query: String,
    /// Limit the search to this file or directory of the memory folder.
    #[serde(default)]
    pub path: Option<String>,
    /// Matches to skip (from a previous page's continuation line). Default 0.
    #[serde(default)]
    pub offset: Option<usize>,
    /// Most matches to return. Default and maximum 200.
    #[serde(default)]
    pub max_results: Option<usize>,
}

/// Arguments of `memories_read`.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoriesReadArgs {
    /// File inside the memory folder, e.g. `MEMORY.md` or `rollout_summaries/<file>.md`.
    pub path: String,
    /// Lines to skip from the start (0-based; use the value from a continuation line). Default 0.
    #[serde(default)]
    pub offset: Option<usize>,
    /// Most lines to return. Default: as many as fit the token cap.
    #[serde(default)]
    pub limit: Option<usize>,
    /// Most tokens to return. Default and maximum 20000.
    #[serde(default)]
    pub max_tokens: Option<usize>,
    /// Byte inside line `offset` to continue from, for a line longer than a page (as named
    /// by the previous page's last line). Default 0.
    #[serde(default)]
    pub byte_offset: Option<u64>,
}

/// Arguments of `memories_add_ad_hoc_note`.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoriesAddAdHocNoteArgs {
    /// What to remember, in plain words (at most 16 KiB). It is considered at the next consolidation.
    pub note: String,
    /// Optional short title.
    #[serde(default)]
    pub title: Option<String>,
}

/// `memories_list`: visible files and directories under `path`, recursively, sorted, with
/// sizes; at most `max_results` (default/max 2,000) per page; a cut page ends with
/// `(showing entries A-B of N — call again with offset=B for the rest)`.
///
/// Errors: [`Error::Refused`] when memories are off; path rules of [`FolderJail`];
/// [`Error::NotFound`] for a missing path.
pub fn memories_list(home: &Path, cfg: &Config, a: &MemoriesListArgs) -> Result<String> {
    enabled(cfg)?;
    let Some(j) = jail(home, cfg)? else {
        return Ok(NO_FOLDER.into());
    };
    let entries = j.walk(a.path.as_deref().unwrap_or(""))?;
    let total = entries.len();
    let offset = a.offset.unwrap_or(0);
    let max = a.max_results.unwrap_or(LIST_MAX).clamp(1, LIST_MAX);
    if total == 0 {
        return Ok("(no files)\n".into());
    }
    if offset >= total {
        return Err(Error::InvalidArgument(format!(
            "offset={offset} is past the end: there are {total} entries"
        )));
    }
    let mut out = String::new();
    for e in entries.iter().skip(offset).take(max) {
        if e.is_dir {
            out.push_str(&format!("{}/\n", e.path));
        } else {
            out.push_str(&format!("{} ({} bytes)\n", e.path, e.bytes));
        }
    }
    let last = (offset + max).min(total);
    if last < total {
        out.push_str(&codex_free_core::paging::entries_footer(
            "entries",
            offset + 1,
            last,
            total,
            last,
        ));
        out.push('\n');
    }
    Ok(out)
}

/// `memories_search`: full-text search over the folder's text files through the FTS5
/// index at `<home>/memories_index.sqlite` (brought up to date first). Hits are
/// `path:line: text`, best first; at most `max_results` (default/max 200) per page, with a
/// continuation line when cut.
///
/// Errors: [`Error::Refused`] when memories are off; [`Error::InvalidArgument`] for an
/// empty query; path rules of [`FolderJail`]; [`Error::Store`] when the index cannot be opened.
pub fn memories_search(home: &Path, cfg: &Config, a: &MemoriesSearchArgs) -> Result<String> {
    enabled(cfg)?;
    if a.query.trim().is_empty() {
        return Err(Error::InvalidArgument(
            "query is empty; give one or more words".into(),
        ));
    }
    let Some(j) = jail(home, cfg)? else {
        return Ok(NO_FOLDER.into());
    };
    let prefix = match a.path.as_deref() {
        Some(p) => {
            let c = FolderJail::components(p)?.join("/");
            j.resolve(&c)?;
            Some(c)
        }
        None => None,
    };
    let files: Vec<IndexedFile> = j
        .walk("")?
        .into_iter()
        .filter(|e| !e.is_dir)
        .filter_map(|e| {
            let md = std::fs::symlink_metadata(j.root().join(&e.path)).ok()?;
            let mtime_ns = md
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_nanos() as i64)
                .unwrap_or(0);
            Some(IndexedFile {
                path: e.path,
                mtime_ns,
                size: md.len() as i64,
            })
        })
        .collect();
    let mut idx = MemoryIndex::open(&home.join(INDEX_FILE))?;
    idx.sync(&files, &mut |p| j.read_to_string(p).ok())?;
    let offset = a.offset.unwrap_or(0);
    let max = a.max_results.unwrap_or(SEARCH_MAX).clamp(1, SEARCH_MAX);
    let (hits, total) = idx.search(&a.query, prefix.as_deref(), offset, max)?;
    if total == 0 {
        return Ok(format!("No matches for {:?}.\n", a.query));
    }
    if hits.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "offset={offset} is past the end: there are {total} matches"
        )));
    }
    let mut out = String::new();
    for h in &hits {
        let mut text: String = h.text.trim().chars().take(HIT_MAX_CHARS).collect();
        if h.text.trim().chars().count() > HIT_MAX_CHARS {
            text.push('…');
        }
        out.push_str(&format!("{}:{}: {text}\n", h.path, h.line));
    }
    let last = offset + hits.len();
    if last < total {
        out.push_str(&codex_free_core::paging::entries_footer(
            "matches",
            offset + 1,
            last,
            total,
            last,
        ));
        out.push('\n');
    }
    Ok(out)
}

/// `memories_read` returning the text and the rollout ids whose memory it showed (for
/// usage counting): the id in a rollout summary's header, or the `rollout_id` sections of
/// `raw_memories.md` that overlap the lines shown.
///
/// Errors: as [`memories_read`].
pub fn read_with_rollouts(
    home: &Path,
    cfg: &Config,
    a: &MemoriesReadArgs,
) -> Result<(String, Vec<String>)> {
    enabled(cfg)?;
    let Some(j) = jail(home, cfg)? else {
        return Err(Error::NotFound(Path::new(&a.path).to_path_buf()));
    };
    let text = j.read_to_string(&a.path)?;
    let max_tokens = a
        .max_tokens
        .unwrap_or(READ_MAX_TOKENS)
        .clamp(1, READ_MAX_TOKENS);
    let offset = a.offset.unwrap_or(0);
    let limit = a.limit.unwrap_or(usize::MAX).max(1);
    let byte_offset = a.byte_offset.unwrap_or(0) as usize;
    let (body, first, last) = if byte_offset > 0 {
        (
            page_inside_line(&text, offset, byte_offset, max_tokens)?,
            offset + 1,
            offset + 1,
        )
    } else {
        let cut = codex_free_core::paging::page_lines(
            &text,
            offset,
            codex_free_core::paging::LineLimits {
                max_lines: limit,
                max_bytes: usize::MAX,
                max_tokens: Some(max_tokens),
            },
        )
        .cut_line
        .map(|(head, _)| head.len());
        match cut {
            // A line longer than the page: its head, then the byte continuation inside it.
            Some(shown) => {
                let line = text.split_inclusive('\n').nth(offset).unwrap_or("");
                let bare = line.strip_suffix('\n').unwrap_or(line);
                let mut t = bare[..shown].to_string();
                codex_free_core::paging::append_byte_footer(
                    &mut t,
                    &codex_free_core::paging::bytes_footer(
                        0,
                        shown as u64,
                        bare.len() as u64,
                        offset as u64,
                    ),
                );
                t.push('\n');
                (t, offset + 1, offset + 1)
            }
            None => {
                let page = page_lines(&text, offset, limit, usize::MAX, Some(max_tokens));
                (page.text, page.first, page.last)
            }
        }
    };
    let path = FolderJail::components(&a.path)?.join("/");
    let mut ids = Vec::new();
    if last > 0 {
        if path.starts_with(&format!("{ROLLOUT_SUMMARIES_DIR}/")) {
            if let Some(id) = text.lines().find_map(|l| l.strip_prefix(ROLLOUT_ID_KEY)) {
                ids.push(id.trim().to_string());
            }
        } else if path == RAW_MEMORIES_MD {
            let header = format!("## {ROLLOUT_ID_KEY}");
            let mut current: Option<String> = None;
            for (i, l) in text.lines().enumerate() {
                if let Some(id) = l.strip_prefix(&header) {
                    current = Some(id.trim().to_string());
                }
                let n = i + 1;
                if n >= first
                    && n <= last
                    && let Some(id) = &current
                    && !ids.contains(id)
                {
                    ids.push(id.clone());
                }
                if n > last {
                    break;
                }
            }
        }
    }
    Ok((body, ids))
}

/// The rest of line `offset` (0-based) of `text` from byte `byte_offset`, at most about
/// half the token budget's bytes (as the first page of a long line), never splitting a
/// character: cut again with the byte continuation, or finished with the line's newline
/// and, when lines follow, the lines footer naming `offset + 1`.
///
/// Errors: [`Error::InvalidArgument`] for a line past the end, or a `byte_offset` that is
/// not inside the line or not on a character boundary.
fn page_inside_line(
    text: &str,
    offset: usize,
    byte_offset: usize,
    max_tokens: usize,
) -> Result<String> {
    use codex_free_core::paging;
    let total = text.split_inclusive('\n').count();
    let Some(line) = text.split_inclusive('\n').nth(offset) else {
        return Err(Error::InvalidArgument(format!(
            "offset={offset} is past the end: the file has {total} lines ({})",
            paging::valid_offsets(total as u64)
        )));
    };
    let bare = line.strip_suffix('\n').unwrap_or(line);
    if byte_offset >= bare.len() || !bare.is_char_boundary(byte_offset) {
        return Err(Error::InvalidArgument(format!(
            "byte_offset={byte_offset} is not inside line {} ({} bytes) on a character boundary; use the value the previous page's last line names",
            offset + 1,
            bare.len()
        )));
    }
    let room = (codex_free_core::tokens::bytes_for(max_tokens) / 2).max(4);
    let mut end = paging::floor_char_boundary(bare, byte_offset + room);
    if end <= byte_offset {
        end = (byte_offset + 1..=bare.len())
            .find(|&i| bare.is_char_boundary(i))
            .unwrap_or(bare.len());
    }
    let mut out = bare[byte_offset..end].to_string();
    if end < bare.len() {
        paging::append_byte_footer(
            &mut out,
            &paging::bytes_footer(
                byte_offset as u64,
                end as u64,
                bare.len() as u64,
                offset as u64,
            ),
        );
        out.push('\n');
    } else {
        out.push_str(&line[bare.len()..]);
        if offset + 1 < total {
            out.push_str(&paging::lines_footer(
                offset as u64 + 1,
                offset as u64 + 1,
                total as u64,
                offset as u64 + 1,
            ));
            out.push('\n');
        }
    }
    Ok(out)
}

/// `memories_read`: lines `offset+1 ..` of a file, at most `limit` lines and `max_tokens`
/// (default/max 20,000) tokens; a cut page ends with
/// `(showing lines A-B of N — call again with offset=B for the rest)`. Reading a rollout's
/// memory (its summary file, or its section of `raw_memories.md`) counts as a use of it.
///
/// Errors: [`Error::Refused`] when memories are off; path rules of [`FolderJail`];
/// [`Error::NotFound`]; [`Error::InvalidArgument`] for a directory or non-UTF-8 file.
pub fn memories_read(home: &Path, cfg: &Config, a: &MemoriesReadArgs) -> Result<String> {
    let (text, ids) = read_with_rollouts(home, cfg, a)?;
    // What the read path serves passes the redactor, whatever is on disk (a hand edit or
    // an older commit may hold what the write gate now refuses).
    let text = codex_free_redact::redact_string(text);
    if !ids.is_empty()
        && let Err(e) = record_usage_in_home(home, &ids)
    {
        tracing::warn!("could not record memory usage: {e}");
    }
    Ok(text)
}

/// Raise the usage counts of `ids` in `<home>/state.sqlite` (no-op when the database does
/// not exist yet).
pub fn record_usage_in_home(home: &Path, ids: &[String]) -> Result<usize> {
    codex_free_store::phase2::record_usage_in_home(home, ids)
}

/// `memories_add_ad_hoc_note`: queue a timestamped note (`<home>/memories_inbox/
/// YYYY-MM-DDTHH-MM-SS-xxxx.md`) that the next consolidation moves into `ad_hoc_notes/`
/// and considers. Returns a confirmation naming the file.
///
/// Errors: [`Error::Refused`] when memories are off; [`Error::InvalidArgument`] for an
/// empty note; [`Error::Budget`] over [`NOTE_MAX_BYTES`].
pub fn memories_add_ad_hoc_note(
    home: &Path,
    cfg: &Config,
    a: &MemoriesAddAdHocNoteArgs,
) -> Result<String> {
    enabled(cfg)?;
    // Redacted before it is queued: notes reach the memory folder, its history and the
    // consolidation model, none of which may hold a credential.
    let redacted = codex_free_redact::redact(a.note.trim()).into_owned();
    let note = redacted.as_str();
    if note.is_empty() {
        return Err(Error::InvalidArgument(
            "note is empty; write what should be remembered".into(),
        ));
    }
    if note.len() > NOTE_MAX_BYTES {
        return Err(Error::Budget(format!(
            "note is {} bytes; at most {NOTE_MAX_BYTES} bytes",
            note.len()
        )));
    }
    let now = chrono::Utc::now();
    let name = super::select::note_file_name(now);
    let title = a.title.as_deref().map(codex_free_redact::redact);
    let title = title
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .unwrap_or("Note");
    let title: String = title
        .lines()
        .next()
        .unwrap_or("Note")
        .chars()
        .take(120)
        .collect();
    let body = super::select::normalize(&format!(
        "# {title}\n\nadded_at: {}\n\n{note}\n",
        now.format("%Y-%m-%dT%H:%M:%SZ")
    ));
    let path = home.join(NOTES_INBOX_DIR).join(&name);
    codex_free_core::home::write_atomic_unlocked(&path, body.as_bytes())?;
    Ok(format!(
        "Queued note {name}; the next memory consolidation will consider it.\n"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn home_with(files: &[(&str, &str)]) -> tempfile::TempDir {
        let h = tempfile::tempdir().unwrap();
        for (p, c) in files {
            let path = crate::folder::folder_path(h.path()).join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, c).unwrap();
        }
        h
    }

    #[test]
    fn summary_is_bounded_and_carries_policy() {
        let big: String = (0..3000)
            .map(|i| format!("- remembered fact number {i} about the project\n"))
            .collect();
        let h = home_with(&[(SUMMARY_MD, &format!("v1\n## User Profile\n{big}"))]);
        // The byte budget (4 KiB by default) cuts first...
        let cfg = Config::default();
        let s = summary_for_instructions(h.path(), &cfg).unwrap();
        assert!(
            s.ends_with("(memory summary cut to its line and byte budget)\n"),
            "{s}"
        );
        assert!(s.len() < POLICY.len() + 4096 + 400, "{}", s.len());
        // ...and with roomy line/byte budgets the token budget still holds.
        let mut cfg = Config::default();
        cfg.memories.memory_summary_max_bytes = 1 << 20;
        cfg.memories.memory_summary_max_lines = 100_000;
        let s = summary_for_instructions(h.path(), &cfg).unwrap();
        let n = codex_free_core::tokens::count(&s);
        assert!(n <= SUMMARY_TOKEN_BUDGET, "{n}");
        assert!(n > SUMMARY_TOKEN_BUDGET - 50, "{n}");
        assert!(s.contains("<oai-mem-citation>") && s.contains("out of date"));
        assert!(s.ends_with("(memory summary cut to fit the 2,500-token budget)\n"));
        let small = home_with(&[(SUMMARY_MD, "v1\n## User Profile\n- likes pnpm\n")]);
        let s = summary_for_instructions(small.path(), &cfg).unwrap();
        assert!(s.ends_with("- likes pnpm\n"));
        let mut off = Config::default();
        off.memories.use_memories = false;
        assert!(summary_for_instructions(small.path(), &off).is_none());
        assert!(summary_for_instructions(tempfile::tempdir().unwrap().path(), &cfg).is_none());
    }

    #[test]
    fn list_pages_with_continuation() {
        let files: Vec<(String, String)> = (0..2100)
            .map(|i| (format!("rollout_summaries/{i:05}.md"), "x\n".to_string()))
            .collect();
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let h = home_with(&refs);
        let cfg = Config::default();
        let out = memories_list(h.path(), &cfg, &MemoriesListArgs::default()).unwrap();
        assert_eq!(out.lines().count(), 2001);
        assert!(
            out.ends_with(
                "(showing entries 1-2000 of 2101 — call again with offset=2000 for the rest)\n"
            ),
            "{}",
            out.lines().last().unwrap()
        );
        let out = memories_list(
            h.path(),
            &cfg,
            &MemoriesListArgs {
                offset: Some(2000),
                max_results: Some(5000),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(out.lines().count(), 101);
        let e = memories_list(
            h.path(),
            &cfg,
            &MemoriesListArgs {
                path: Some("../".into()),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert_eq!(e.code(), "path_outside_root");
    }

    /// A line longer than a page continues by `byte_offset`: following every footer
    /// returns the file byte for byte, the long line included.
    #[test]
    fn read_continues_inside_a_long_line() {
        let long: String = (0..30_000).map(|i| ["a", "é", "b", "😀"][i % 4]).collect();
        let text = format!("first\n{long}\nlast\n");
        let h = home_with(&[("MEMORY.md", &text)]);
        let cfg = Config::default();
        let (mut offset, mut byte_offset, mut got, mut pages) = (0usize, 0u64, String::new(), 0);
        loop {
            let page = memories_read(
                h.path(),
                &cfg,
                &MemoriesReadArgs {
                    path: "MEMORY.md".into(),
                    offset: Some(offset),
                    max_tokens: Some(2000),
                    byte_offset: Some(byte_offset),
                    ..Default::default()
                },
            )
            .unwrap();
            pages += 1;
            assert!(pages < 100, "paging does not end");
            match codex_free_core::paging::parse_footer(&page) {
                Some(c) => {
                    got.push_str(&page[..c.content_end]);
                    offset = c.offset().unwrap() as usize;
                    byte_offset = c.byte_offset().unwrap_or(0);
                }
                None => {
                    got.push_str(&page);
                    break;
                }
            }
        }
        assert!(pages > 5, "{pages}");
        assert_eq!(got, text);
        let e = memories_read(
            h.path(),
            &cfg,
            &MemoriesReadArgs {
                path: "MEMORY.md".into(),
                offset: Some(1),
                byte_offset: Some(2),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert!(e.to_string().contains("character boundary"), "{e}");
    }

    #[test]
    fn read_caps_tokens_and_reports_rollouts() {
        let long: String = (1..=812).map(|i| format!("line {i}\n")).collect();
        let raw =
            "# Raw memories\n\n## rollout_id: t-1\n\nmem one\n\n## rollout_id: t-2\n\nmem two\n";
        let h = home_with(&[
            ("MEMORY.md", &long),
            ("raw_memories.md", raw),
            (
                "rollout_summaries/2024-01-01T00-00-00-abcd.md",
                "# Rollout summary\n\nrollout_id: t-9\n\nbody\n",
            ),
        ]);
        let cfg = Config::default();
        let a = MemoriesReadArgs {
            path: "MEMORY.md".into(),
            limit: Some(200),
            ..Default::default()
        };
        let out = memories_read(h.path(), &cfg, &a).unwrap();
        assert!(
            out.ends_with(
                "(showing lines 1-200 of 812 — call again with offset=200 for the rest)\n"
            )
        );
        let a = MemoriesReadArgs {
            path: "MEMORY.md".into(),
            max_tokens: Some(100),
            ..Default::default()
        };
        let out = memories_read(h.path(), &cfg, &a).unwrap();
        assert!(codex_free_core::tokens::count(&out) < 150, "{out}");
        let (_, ids) = read_with_rollouts(
            h.path(),
            &cfg,
            &MemoriesReadArgs {
                path: "raw_memories.md".into(),
                offset: Some(6),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(ids, ["t-2"]);
        let (_, ids) = read_with_rollouts(
            h.path(),
            &cfg,
            &MemoriesReadArgs {
                path: "rollout_summaries/2024-01-01T00-00-00-abcd.md".into(),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(ids, ["t-9"]);
        for bad in ["/etc/passwd", "../x", ".git/config"] {
            let e = memories_read(
                h.path(),
                &cfg,
                &MemoriesReadArgs {
                    path: bad.into(),
                    ..Default::default()
                },
            )
            .unwrap_err();
            assert_eq!(e.code(), "path_outside_root", "{bad}");
        }
    }

    #[test]
    fn search_finds_and_pages() {
        let many: String = (0..250).map(|i| format!("pnpm fact {i}\n")).collect();
        let h = home_with(&[
            ("MEMORY.md", "- always use pnpm\n"),
            ("rollout_summaries/a.md", &many),
        ]);
        let cfg = Config::default();
        let out = memories_search(
            h.path(),
            &cfg,
            &MemoriesSearchArgs {
                query: "pnpm".into(),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(out.lines().count(), 201);
        assert!(
            out.ends_with(
                "(showing matches 1-200 of 251 — call again with offset=200 for the rest)\n"
            ),
            "{}",
            out.lines().last().unwrap()
        );
        let out = memories_search(
            h.path(),
            &cfg,
            &MemoriesSearchArgs {
                query: "always".into(),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(out, "MEMORY.md:1: - always use pnpm\n");
        let out = memories_search(
            h.path(),
            &cfg,
            &MemoriesSearchArgs {
                query: "pnpm".into(),
                path: Some("MEMORY.md".into()),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(out.lines().count(), 1);
    }

    #[test]
    fn notes_are_queued_outside_the_folder() {
        let h = tempfile::tempdir().unwrap();
        let cfg = Config::default();
        let out = memories_add_ad_hoc_note(
            h.path(),
            &cfg,
            &MemoriesAddAdHocNoteArgs {
                note: "prefer pnpm  ".into(),
                title: None,
            },
        )
        .unwrap();
        assert!(out.starts_with("Queued note "));
        let inbox: Vec<_> = std::fs::read_dir(h.path().join(NOTES_INBOX_DIR))
            .unwrap()
            .flatten()
            .collect();
        assert_eq!(inbox.len(), 1);
        let text = std::fs::read_to_string(inbox[0].path()).unwrap();
        assert!(text.contains("prefer pnpm\n") && text.starts_with("# Note\n"));
        assert!(
            memories_add_ad_hoc_note(
                h.path(),
                &cfg,
                &MemoriesAddAdHocNoteArgs {
                    note: "x".repeat(NOTE_MAX_BYTES + 1),
                    title: None
                }
            )
            .is_err()
        );
    }
}
