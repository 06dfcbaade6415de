//! Paging helpers shared by every bounded tool: how big a page may be, the one line pager
//! ([`page_lines`]), and the exact continuation lines that end a cut page — built by the
//! `*_footer` functions here and read back by [`parse_footer`], nowhere else.
//!
//! A bounded tool's output is `content` followed, when the content was cut, by one footer
//! line naming the argument that continues. How to recover the content exactly:
//! - line and entry pages end with a complete line, so the footer follows the content's
//!   own final `\n` directly ([`append_footer`]): drop the last line only;
//! - byte pages (a cut line, a cut document) may end anywhere, so one separator `\n` is
//!   always inserted before the footer ([`append_byte_footer`]): drop the last line and
//!   that one `\n`.
//!
//! The footer formats are fixed:
//!
//! - lines: `(showing lines 1-1000 of 4820 — call again with offset=1000 for the rest)`
//!   (1-based inclusive display, `offset` is the 0-based line to resume at);
//! - bytes of one line: `(showing bytes 0-131072 of 6291456 of line 1 — call again with
//!   offset=0 byte_offset=131072 for the rest)` (byte ranges are 0-based half-open, so the
//!   next `byte_offset` is the range's end; nothing is skipped or repeated);
//! - entries: `(showing entries 1-500 of 2310 — call again with offset=500 for the rest)`
//!   with the noun `entries`, `nodes`, `matches`, `commits`, `skills` or `projects`, and
//!   `call again` or `call <tool>` ([`Call`]);
//! - command output: `(showing bytes 0-40000 of 1288895 — call read_command_output with
//!   output_id=<id> offset=40000 for the rest)` ([`command_output_footer`] and kin). A cut
//!   reply shows a head and a tail around [`command_omitted_marker`]; its continuation pages
//!   only the omitted bytes (its `end=` argument stops at the tail: [`command_gap_footer`])
//!   and the last of those pages ends with
//!   [`command_gap_done_footer`]: head + pages + tail is the output. Command pages are byte
//!   pages (one separator `\n` before the footer on every page, the reply's first included)
//!   but end at a line end whenever a line fits.
//!
//! A caller (or a test) follows a footer with [`parse_footer`]: the next call's tool and
//! arguments, and where the page's content ends.
//!
//! **Token counting.** Budgets are in bytes: a result of `n` bytes is counted as
//! `ceil(n / 4)` tokens ([`crate::tokens::estimate`], the public Codex Free's rule of thumb),
//! so `maxToolOutputTokens` becomes a byte ceiling of `maxToolOutputTokens * 4`
//! (`codex_free_tools::ToolCtx::max_output_bytes`). No tokenizer runs on the hot path.
//!
//! Invariant: [`page_budget`] leaves [`FOOTER_RESERVE`] bytes for the footer, so a page
//! sized by it plus its footer never exceeds the ceiling; [`enforce_ceiling`] is the last
//! guard that cuts anything still too long (and says so).

/// Bytes kept free under the ceiling for the footer line(s) of a page. The longest footer
/// (the byte one, with five 20-digit numbers) is under 200 bytes; notes add under 200 more.
pub const FOOTER_RESERVE: usize = 512;

/// Bytes a page's content may take: the tool's own cap, but never more than the output
/// ceiling minus [`FOOTER_RESERVE`]. Always at least 1.
pub fn page_budget(cap_bytes: usize, max_output_bytes: usize) -> usize {
    cap_bytes
        .min(max_output_bytes.saturating_sub(FOOTER_RESERVE))
        .max(1)
}

/// The offsets a paged tool accepts for `total` items, inclusive, for error messages:
/// `valid offsets 0..=4819` (never the exclusive `0..4820`, which reads as if 4820 were
/// valid), or `there is nothing to page` when `total` is 0.
pub fn valid_offsets(total: u64) -> String {
    match total {
        0 => "there is nothing to page".into(),
        n => format!("valid offsets 0..={}", n - 1),
    }
}

/// Which call continues a page: the same tool again, or another tool by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call<'a> {
    /// `call again` (the same tool with the new offset).
    Again,
    /// `call <tool>` (e.g. `get_project_doc` from the instructions).
    Tool(&'a str),
}

impl std::fmt::Display for Call<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Call::Again => f.write_str("call again"),
            Call::Tool(t) => write!(f, "call {t}"),
        }
    }
}

/// The footer of a page of counted items (`lines`, `entries`, `matches`, ...). `first` and
/// `last` are 1-based inclusive, `next` the 0-based index to resume at (= `last`).
pub fn range_footer(
    noun: &str,
    first: u64,
    last: u64,
    total: u64,
    call: Call<'_>,
    next: u64,
) -> String {
    format!("(showing {noun} {first}-{last} of {total} — {call} with offset={next} for the rest)")
}

/// The line-paging footer. `first` and `last` are 1-based inclusive line numbers shown,
/// `total` the file's line count, `next_offset` the 0-based line to resume at (= `last`).
pub fn lines_footer(first: u64, last: u64, total: u64, next_offset: u64) -> String {
    range_footer("lines", first, last, total, Call::Again, next_offset)
}

/// The footer of a page cut inside one long line. `start..end` is the 0-based half-open
/// byte range of the line shown, `line_len` its length in bytes without the newline,
/// `line_index` its 0-based index; the call that continues is
/// `offset=<line_index> byte_offset=<end>`.
pub fn bytes_footer(start: u64, end: u64, line_len: u64, line_index: u64) -> String {
    format!(
        "(showing bytes {start}-{end} of {line_len} of line {} — call again with offset={line_index} byte_offset={end} for the rest)",
        line_index + 1
    )
}

/// The footer of a byte-paged whole document (e.g. `AGENTS.md`): `start..end` 0-based
/// half-open of `total` bytes, resumed with `offset=<end>`.
pub fn doc_bytes_footer(name: &str, start: u64, end: u64, total: u64) -> String {
    format!(
        "(showing bytes {start}-{end} of {total} of {name} — call again with offset={end} for the rest)"
    )
}

/// The footer of the start of a document embedded elsewhere (the MCP instructions): the
/// first `end` of `total` bytes of `name` were shown; `call` with `offset=<end>` reads on.
pub fn doc_cut_footer(name: &str, end: u64, total: u64, call: Call<'_>) -> String {
    format!("({name} cut at {end} of {total} bytes — {call} with offset={end} for the rest)")
}

/// The footer of an entry-paged result. `noun` is `entries`, `nodes` or `matches`; `first`
/// and `last` are 1-based inclusive, `next` the 0-based index to resume at (= `last`).
pub fn entries_footer(noun: &str, first: usize, last: usize, total: usize, next: usize) -> String {
    range_footer(
        noun,
        first as u64,
        last as u64,
        total as u64,
        Call::Again,
        next as u64,
    )
}

/// The note after the head of one line too long for a page on its own: line `index`
/// (0-based) has `len` bytes, its first `shown` are shown, and the next page starts after it.
pub fn long_line_note(index: usize, len: usize, shown: usize, call: Call<'_>) -> String {
    format!(
        "(line {} is {len} bytes; showing its first {shown} — {call} with offset={} to continue after it)",
        index + 1,
        index + 1
    )
}

/// The footer of a `read_command_output` page that has more spooled bytes after it:
/// bytes `offset..next` of `spooled` shown (`so far` while the command runs); `split` says
/// the page ends inside a line longer than a page (pages otherwise end at a line end).
pub fn command_output_footer(
    offset: u64,
    next: u64,
    spooled: u64,
    id: &str,
    running: bool,
    split: bool,
) -> String {
    let so_far = if running { " so far" } else { "" };
    let split = if split {
        "; the page ends inside a line longer than a page"
    } else {
        ""
    };
    format!(
        "(showing bytes {offset}-{next} of {spooled}{so_far}{split} — call read_command_output with output_id={id} offset={next} for the rest)"
    )
}

/// The last line of a `read_command_output` page at the end of what was spooled when the
/// spool stopped early (`why`): nothing more can be read; `total` bytes were produced.
pub fn command_output_unspooled_footer(
    offset: u64,
    next: u64,
    total: u64,
    spooled: u64,
    why: &str,
    running: bool,
) -> String {
    let so_far = if running { " so far" } else { "" };
    format!(
        "(showing bytes {offset}-{next} of {total}{so_far}; bytes from {spooled} on were not spooled: {why})"
    )
}

/// The footer of a `read_command_output` page that reached the end of the spool while the
/// command still runs: call again later from `next` for newer output.
pub fn command_output_running_footer(offset: u64, next: u64, spooled: u64, id: &str) -> String {
    format!(
        "(showing bytes {offset}-{next} of {spooled} so far; the command is still running — call read_command_output with output_id={id} offset={next} later for newer output)"
    )
}

/// The footer of a `read_command_output` page inside the bytes a reply omitted, when more
/// of them follow: bytes `offset..next` of `total` shown, the omitted part ends at `gap_end`
/// (where the tail shown by that reply begins, passed on as `end=`); `split` says the page
/// ends inside a line longer than a page.
pub fn command_gap_footer(
    offset: u64,
    next: u64,
    total: u64,
    gap_end: u64,
    id: &str,
    split: bool,
) -> String {
    let split = if split {
        "; the page ends inside a line longer than a page"
    } else {
        ""
    };
    format!(
        "(showing bytes {offset}-{next} of {total}; the omitted part ends at {gap_end}{split} — call read_command_output with output_id={id} offset={next} end={gap_end} for the rest)"
    )
}

/// The last line of the `read_command_output` page that reaches `end`, the end of the bytes
/// a reply omitted: bytes `offset..gap_end` shown; the bytes from `gap_end` on are the tail
/// that reply already showed, so nothing is left to read for it. Recognised by
/// [`final_line_start`].
pub fn command_gap_done_footer(offset: u64, gap_end: u64, total: u64) -> String {
    format!(
        "(showing bytes {offset}-{gap_end} of {total}; {GAP_DONE} from {gap_end} on were shown as the tail of the reply that named end={gap_end})"
    )
}

/// Words that mark [`command_gap_done_footer`].
const GAP_DONE: &str = "the omitted bytes are complete: bytes";

/// The marker line between the head and the tail of a cut command reply: bytes
/// `head_end..tail_start` are omitted; `head_split` / `tail_split` say the head ends or the
/// tail starts inside a line (only when a line is longer than the half of a page). The
/// marker always has one `\n` before and after it (see [`split_head_tail`]).
pub fn command_omitted_marker(
    head_end: u64,
    tail_start: u64,
    head_split: bool,
    tail_split: bool,
) -> String {
    let mut notes = String::new();
    if head_split {
        notes.push_str("; the head ends inside a line");
    }
    if tail_split {
        notes.push_str("; the tail starts inside a line");
    }
    format!("[… bytes {head_end}-{tail_start} omitted{notes}; read_command_output returns them …]")
}

/// Split the content of a cut command reply (its body after `Output:`, footer removed by
/// [`parse_footer`]) into the head and the tail around its omitted-bytes marker, using the
/// range its footer names (`showing bytes F-A and B-T`): `(head, tail)`, each byte for byte.
/// `None` when the content has no such marker.
pub fn split_head_tail(content: &str, head_end: u64, tail_start: u64) -> Option<(&str, &str)> {
    let probe = format!("\n[… bytes {head_end}-{tail_start} omitted");
    let at = content.rfind(&probe)?;
    let rest = &content[at + 1..];
    let nl = rest.find("…]\n")? + "…]\n".len();
    Some((&content[..at], &rest[nl..]))
}

/// Where the last line of a byte page starts when that line is a final line that names no
/// next call but is not content either (the end of a command's omitted bytes, or bytes that
/// were not spooled): the content is `page[..start - 1]` (one separator `\n`). `None` for any
/// other last line.
pub fn final_line_start(page: &str) -> Option<usize> {
    let body = page.strip_suffix('\n').unwrap_or(page);
    let start = body.rfind('\n').map(|i| i + 1).unwrap_or(0);
    let last = &body[start..];
    let known = last.starts_with("(showing bytes ")
        && last.ends_with(')')
        && (last.contains(GAP_DONE) || last.contains(" were not spooled: "));
    known.then_some(start)
}

/// The footer of a command reply whose output window was cut in the middle: `shown` says
/// which bytes are shown (e.g. `showing bytes 0-50 and 950-1000 of 1000`), `lost` any
/// part that was not spooled (`""` or `; bytes 10-20 were not spooled (why)`), and
/// `read_command_output` from `offset` up to `end` (where the shown tail starts) reads the
/// omitted part.
pub fn command_window_footer(shown: &str, lost: &str, id: &str, offset: u64, end: u64) -> String {
    format!(
        "(output cut: {shown}{lost} — call read_command_output with output_id={id} offset={offset} end={end} for the rest)"
    )
}

/// The footer of `AGENTS.md` embedded in a brief and cut at `projectDoc.maxBytes` on a
/// line end: lines `1..=lines` (`shown` of `total` bytes) are shown; `read_file` from
/// `offset=<lines>` reads on.
pub fn agents_md_lines_footer(lines: usize, shown: usize, total: usize) -> String {
    format!(
        "(AGENTS.md cut at projectDoc.maxBytes: showing lines 1-{lines}, {shown} of {total} bytes — call read_file with path=\"AGENTS.md\" and offset={lines} for the rest)"
    )
}

/// The footer of `AGENTS.md` embedded in a brief and cut inside its first line (no line end
/// to cut at): `shown` of `total` bytes; `read_file` reads the whole file.
pub fn agents_md_first_line_footer(shown: usize, total: usize) -> String {
    format!(
        "(AGENTS.md cut at projectDoc.maxBytes inside its first line: showing {shown} of {total} bytes — call read_file with path=\"AGENTS.md\" to read it)"
    )
}

/// The last line of a listing capped at `shown` of `total` entries that has no offset to
/// continue with: `hint` says how to see the rest (e.g. `list a subdirectory`).
pub fn capped_footer(noun: &str, shown: usize, total: usize, hint: &str) -> String {
    format!("(showing {noun} 1-{shown} of {total}; {hint} for the rest)")
}

/// A parsed continuation line: which call reads on, with which arguments, and where the
/// page's content ends. Built only by [`parse_footer`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Continuation {
    /// What the page counts (`lines`, `entries`, `bytes`, ...) when the footer says.
    pub unit: Option<String>,
    /// The shown range as written (`first`/`start`, `last`/`end`), when the footer says.
    pub range: Option<(u64, u64)>,
    /// The total (`of N`), when the footer says.
    pub total: Option<u64>,
    /// The tool to call next; `None` for `call again` (the same tool).
    pub tool: Option<String>,
    /// The next call's arguments in order, e.g. `[("offset", "1000"), ("byte_offset", "5")]`
    /// (quotes around values removed).
    pub args: Vec<(String, String)>,
    /// Byte index in the page where the content ends: the footer line and, for byte
    /// pages, the one separator `\n` before it are not content.
    pub content_end: usize,
}

impl Continuation {
    /// The value of argument `name`, if the footer names it.
    pub fn arg(&self, name: &str) -> Option<&str> {
        self.args
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The `offset` argument as a number.
    pub fn offset(&self) -> Option<u64> {
        self.arg("offset")?.parse().ok()
    }

    /// The `byte_offset` argument as a number.
    pub fn byte_offset(&self) -> Option<u64> {
        self.arg("byte_offset")?.parse().ok()
    }
}

/// Read the continuation line at the end of `page` (a trailing `\n` after it is allowed).
/// `None` when the last line is not a footer that names a next call (the last page, or a
/// final line like `bytes from N on were not spooled`).
pub fn parse_footer(page: &str) -> Option<Continuation> {
    let body = page.strip_suffix('\n').unwrap_or(page);
    let start = body.rfind('\n').map(|i| i + 1).unwrap_or(0);
    let inner = body[start..].strip_prefix('(')?.strip_suffix(')')?;
    let (desc, call) = inner.rsplit_once(" — ")?;
    let call = [
        " for the rest",
        " later for newer output",
        " to continue after it",
    ]
    .iter()
    .find_map(|s| call.strip_suffix(s))?;
    let (verb, args) = call.split_once(" with ")?;
    let tool = match verb {
        "call again" => None,
        v => Some(v.strip_prefix("call ")?.to_string()),
    };
    let args = args
        .split(' ')
        .filter(|w| *w != "and")
        .map(|kv| {
            let (k, v) = kv.split_once('=')?;
            Some((k.to_string(), v.trim_matches('"').to_string()))
        })
        .collect::<Option<Vec<_>>>()?;
    let desc = desc.strip_prefix("output cut: ").unwrap_or(desc);
    let (unit, range, total) = match desc.strip_prefix("showing ") {
        Some(rest) => {
            let mut w = rest.split(' ');
            let unit = w.next().map(str::to_string);
            let range = w
                .next()
                .and_then(|r| r.split_once('-'))
                .and_then(|(a, b)| Some((a.parse().ok()?, b.trim_end_matches(',').parse().ok()?)));
            let total = match (w.next(), w.next()) {
                (Some("of"), Some(n)) => n.trim_end_matches(';').parse().ok(),
                _ => None,
            };
            (unit, range, total)
        }
        None => (None, None, None),
    };
    // Byte pages may end mid-line, so one separator newline precedes their footer.
    let content_end = if unit.as_deref() == Some("bytes") || desc.contains(" cut at ") {
        start.saturating_sub(1)
    } else {
        start
    };
    Some(Continuation {
        unit,
        range,
        total,
        tool,
        args,
        content_end,
    })
}

/// Limits of one page of lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineLimits {
    /// Most lines on the page (at least 1 is used).
    pub max_lines: usize,
    /// Most bytes of content (the footer is extra; size it with the caller's reserve).
    pub max_bytes: usize,
    /// Most tokens of content counted with [`crate::tokens::count`] (each line plus 1 for
    /// its newline), when the page is for a model.
    pub max_tokens: Option<usize>,
}

/// One page of whole lines of a text, as cut by [`page_lines`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinePage<'a> {
    /// The whole lines shown, byte for byte (each with its own `\n`, except a text's last
    /// line without one). Empty when only a cut line is shown.
    pub lines: &'a str,
    /// 0-based index of the first line shown (= the offset asked for).
    pub start: usize,
    /// 0-based index after the last line shown: the next page's offset.
    pub end: usize,
    /// Lines in the text.
    pub total: usize,
    /// When line `start` alone is over the limits: its first bytes (cut at a character
    /// boundary) and its full length (newline included); the next page starts after it.
    pub cut_line: Option<(&'a str, usize)>,
}

impl LinePage<'_> {
    /// True when `offset` asked for was at or past the last line (nothing shown).
    pub fn past_end(&self) -> bool {
        self.start >= self.total
    }

    /// The page as a tool returns it: the lines, then either the long-line note or, when
    /// lines remain, the lines footer — each followed by `\n`.
    pub fn render(&self, call: Call<'_>) -> String {
        let mut out = String::with_capacity(self.lines.len() + 200);
        out.push_str(self.lines);
        if let Some((head, len)) = self.cut_line {
            out.push_str(head);
            out.push('\n');
            out.push_str(&long_line_note(self.start, len, head.len(), call));
            out.push('\n');
        } else if self.end < self.total {
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&range_footer(
                "lines",
                self.start as u64 + 1,
                self.end as u64,
                self.total as u64,
                call,
                self.end as u64,
            ));
            out.push('\n');
        }
        out
    }
}

/// The lines of `text` from line `offset` (0-based) within `limits`. Lines are split after
/// each `\n` and kept byte for byte, so concatenating the pages gives the text back. A
/// line too long for the limits on its own is returned as [`LinePage::cut_line`] (its head
/// within `max_bytes`, and within about half the token budget's bytes).
pub fn page_lines(text: &str, offset: usize, limits: LineLimits) -> LinePage<'_> {
    let mut starts = Vec::new();
    let mut at = 0;
    for l in text.split_inclusive('\n') {
        starts.push(at);
        at += l.len();
    }
    let total = starts.len();
    let line = |i: usize| &text[starts[i]..starts.get(i + 1).copied().unwrap_or(text.len())];
    let mut page = LinePage {
        lines: "",
        start: offset,
        end: offset,
        total,
        cut_line: None,
    };
    if offset >= total {
        return page;
    }
    let (mut bytes, mut tokens) = (0usize, 0usize);
    let mut end = offset;
    while end < total && end - offset < limits.max_lines.max(1) {
        let l = line(end);
        let bare = l.strip_suffix('\n').unwrap_or(l);
        let b = bare.len() + 1;
        let t = limits
            .max_tokens
            .map(|_| crate::tokens::count(bare) + 1)
            .unwrap_or(0);
        let over_bytes = bytes + b > limits.max_bytes;
        let over_tokens = limits.max_tokens.is_some_and(|m| tokens + t > m);
        if over_bytes || over_tokens {
            if end == offset {
                let mut cut = limits.max_bytes.min(bare.len());
                if let Some(m) = limits.max_tokens {
                    cut = cut.min(crate::tokens::bytes_for(m) / 2);
                }
                let cut = floor_char_boundary(bare, cut);
                page.cut_line = Some((&bare[..cut], l.len()));
                page.end = offset + 1;
                return page;
            }
            break;
        }
        bytes += b;
        tokens += t;
        end += 1;
    }
    page.lines = &text[starts[offset]..starts.get(end).copied().unwrap_or(text.len())];
    page.end = end;
    page
}

/// Append `footer` as the last line of `out`, inserting one `\n` first unless `out` is
/// empty or already ends with one.
pub fn append_footer(out: &mut String, footer: &str) {
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(footer);
}

/// Append a byte-page footer: always one separator `\n`, then `footer` (see the module doc).
pub fn append_byte_footer(out: &mut String, footer: &str) {
    out.push('\n');
    out.push_str(footer);
}

/// The largest index `<= i` that is a char boundary of `s`.
pub fn floor_char_boundary(s: &str, i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    let mut i = i;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Length of the longest prefix of `bytes` that does not end inside a UTF-8 character:
/// if the last (at most 3) bytes are the start of a multi-byte character whose remaining
/// bytes are missing, they are left out. Invalid bytes elsewhere are not judged (they are
/// shown lossily). Used to cut pages of text without splitting a character.
pub fn utf8_complete_prefix(bytes: &[u8]) -> usize {
    let len = bytes.len();
    // Look back at most 3 bytes for the lead byte of the last character.
    for back in 1..=len.min(4) {
        let b = bytes[len - back];
        if b & 0b1100_0000 == 0b1000_0000 {
            continue; // continuation byte
        }
        let width = match b {
            0x00..=0x7f => 1,
            0xc0..=0xdf => 2,
            0xe0..=0xef => 3,
            0xf0..=0xf7 => 4,
            _ => return len,
        };
        return if width > back { len - back } else { len };
    }
    len
}

/// The last guard on any tool result: if `text` is longer than `max_bytes`, cut it at a
/// char boundary and end it with a line saying it was cut at the ceiling, all within
/// `max_bytes`. Tools size their pages with [`page_budget`] so this normally returns `text`
/// untouched; when it does cut, the note tells the caller to narrow the request (the cut
/// part has no exact continuation).
pub fn enforce_ceiling(text: String, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text;
    }
    let note = format!(
        "\n(output cut at the {max_bytes}-byte ceiling, maxToolOutputTokens x 4 — narrow the request, e.g. a smaller limit or a more specific path or pattern)"
    );
    let keep = floor_char_boundary(&text, max_bytes.saturating_sub(note.len()));
    let mut out = String::with_capacity(max_bytes);
    out.push_str(&text[..keep]);
    out.push_str(&note);
    if out.len() > max_bytes {
        // Absurdly small ceiling: the note alone does not fit.
        let k = floor_char_boundary(&out, max_bytes);
        out.truncate(k);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footers_have_the_exact_shapes() {
        assert_eq!(
            lines_footer(1, 1000, 4820, 1000),
            "(showing lines 1-1000 of 4820 — call again with offset=1000 for the rest)"
        );
        assert_eq!(
            bytes_footer(0, 131072, 6291456, 0),
            "(showing bytes 0-131072 of 6291456 of line 1 — call again with offset=0 byte_offset=131072 for the rest)"
        );
        assert_eq!(
            entries_footer("entries", 1, 500, 2310, 500),
            "(showing entries 1-500 of 2310 — call again with offset=500 for the rest)"
        );
    }

    #[test]
    fn valid_offsets_are_inclusive() {
        assert_eq!(valid_offsets(4820), "valid offsets 0..=4819");
        assert_eq!(valid_offsets(1), "valid offsets 0..=0");
        assert_eq!(valid_offsets(0), "there is nothing to page");
    }

    #[test]
    fn footer_separator_only_when_needed() {
        let mut a = String::from("x\n");
        append_footer(&mut a, "(f)");
        assert_eq!(a, "x\n(f)");
        let mut b = String::from("x");
        append_footer(&mut b, "(f)");
        assert_eq!(b, "x\n(f)");
    }

    #[test]
    fn ceiling_cuts_and_says_so() {
        let t = "é".repeat(5000);
        let out = enforce_ceiling(t.clone(), 2000);
        assert!(out.len() <= 2000, "{}", out.len());
        assert!(out.ends_with("more specific path or pattern)"), "{out}");
        assert_eq!(enforce_ceiling("short".into(), 2000), "short");
        // Exactly at the ceiling is untouched; one over is cut.
        let at = "a".repeat(2000);
        assert_eq!(enforce_ceiling(at.clone(), 2000), at);
        let over = "a".repeat(2001);
        let cut = enforce_ceiling(over, 2000);
        assert!(cut.len() <= 2000 && cut.contains("ceiling"));
    }

    #[test]
    fn utf8_prefix_backs_off_split_chars() {
        let s = "aé😀".as_bytes(); // 61 c3 a9 f0 9f 98 80
        assert_eq!(utf8_complete_prefix(&s[..2]), 1);
        assert_eq!(utf8_complete_prefix(&s[..3]), 3);
        assert_eq!(utf8_complete_prefix(&s[..4]), 3);
        assert_eq!(utf8_complete_prefix(&s[..6]), 3);
        assert_eq!(utf8_complete_prefix(s), 7);
        assert_eq!(
            utf8_complete_prefix(b"\xff\xfe"),
            2,
            "invalid bytes are not judged"
        );
        assert_eq!(utf8_complete_prefix(b""), 0);
        assert_eq!(page_budget(131072, 40_000), 40_000 - FOOTER_RESERVE);
    }

    /// Every footer that names a next call parses back to that call; final lines do not.
    #[test]
    fn footers_parse_back() {
        let c = parse_footer(&format!("a\nb\n{}\n", lines_footer(1, 2, 9, 2))).unwrap();
        assert_eq!(
            (c.unit.as_deref(), c.range, c.total, c.tool.as_deref()),
            (Some("lines"), Some((1, 2)), Some(9), None)
        );
        assert_eq!(
            (c.offset(), c.byte_offset(), c.content_end),
            (Some(2), None, 4)
        );
        let page = format!("abc\n{}", bytes_footer(0, 3, 10, 4));
        let c = parse_footer(&page).unwrap();
        assert_eq!((c.offset(), c.byte_offset()), (Some(4), Some(3)));
        assert_eq!(
            &page[..c.content_end],
            "abc",
            "byte pages drop the separator"
        );
        let c = parse_footer(&command_output_footer(5, 9, 20, "ab12", true, false)).unwrap();
        assert_eq!(c.tool.as_deref(), Some("read_command_output"));
        assert_eq!((c.arg("output_id"), c.offset()), (Some("ab12"), Some(9)));
        let c = parse_footer(&command_output_running_footer(5, 9, 9, "ab12")).unwrap();
        assert_eq!(c.offset(), Some(9));
        let c = parse_footer(&command_window_footer(
            "showing bytes 0-5 and 90-100 of 100",
            "",
            "ff",
            5,
            90,
        ))
        .unwrap();
        assert_eq!(
            (c.arg("output_id"), c.offset(), c.arg("end")),
            (Some("ff"), Some(5), Some("90"))
        );
        let c = parse_footer(&doc_cut_footer(
            "AGENTS.md",
            7,
            20,
            Call::Tool("get_project_doc"),
        ))
        .unwrap();
        assert_eq!(
            (c.tool.as_deref(), c.offset()),
            (Some("get_project_doc"), Some(7))
        );
        let c = parse_footer(&agents_md_lines_footer(3, 30, 90)).unwrap();
        assert_eq!((c.arg("path"), c.offset()), (Some("AGENTS.md"), Some(3)));
        let c = parse_footer(&long_line_note(4, 9000, 100, Call::Again)).unwrap();
        assert_eq!(c.offset(), Some(5));
        for last in [
            "plain text".to_string(),
            command_output_unspooled_footer(0, 9, 20, 9, "spool full", false),
            capped_footer("entries", 5, 9, "list a subdirectory"),
            agents_md_first_line_footer(3, 9),
        ] {
            assert_eq!(parse_footer(&format!("x\n{last}")), None, "{last}");
        }
    }

    /// Following the footers of [`page_lines`] yields the text byte for byte (no final
    /// newline, CRLF, a line over the budget), and the limits hold.
    #[test]
    fn line_pages_cover_the_text_once() {
        let long = "y".repeat(300);
        let text = format!("a\r\nbb\n{long}\nccc\ndddd");
        let limits = LineLimits {
            max_lines: 2,
            max_bytes: 100,
            max_tokens: None,
        };
        let (mut offset, mut got, mut pages) = (0, String::new(), 0);
        loop {
            let page = page_lines(&text, offset, limits);
            pages += 1;
            assert!(page.lines.len() <= 100 && page.end - page.start <= 2);
            let out = page.render(Call::Again);
            match parse_footer(&out) {
                Some(c) => {
                    match page.cut_line {
                        Some((head, len)) => {
                            assert_eq!((head.len(), len), (100, 301));
                            got.push_str(&long);
                            got.push('\n');
                        }
                        None => got.push_str(&out[..c.content_end]),
                    }
                    offset = c.offset().unwrap() as usize;
                }
                None => {
                    got.push_str(&out);
                    break;
                }
            }
        }
        assert_eq!(got, text);
        assert_eq!(pages, 3);
        assert!(page_lines(&text, 5, limits).past_end());
        let tok = page_lines(
            &text,
            0,
            LineLimits {
                max_lines: 10,
                max_bytes: usize::MAX,
                max_tokens: Some(3),
            },
        );
        assert_eq!(
            (tok.start, tok.end),
            (0, 1),
            "the token budget stops the page: {tok:?}"
        );
    }
}
