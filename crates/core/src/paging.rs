//! Paging helpers shared by every bounded tool: how big a page may be, and the exact
//! continuation lines (SRV-3) that end a cut page.
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
//!   with the noun `entries`, `nodes` or `matches`.
//!
//! **Token counting.** Budgets are in bytes: a result of `n` bytes is counted as
//! `ceil(n / 4)` tokens ([`crate::tokens::estimate`], the public Codex Free's rule of thumb),
//! so `maxToolOutputTokens` becomes a byte ceiling of `maxToolOutputTokens * 4`
//! ([`ToolCtx::max_output_bytes`]). No tokenizer runs on the hot path.
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

/// The line-paging footer. `first` and `last` are 1-based inclusive line numbers shown,
/// `total` the file's line count, `next_offset` the 0-based line to resume at (= `last`).
pub fn lines_footer(first: u64, last: u64, total: u64, next_offset: u64) -> String {
    format!(
        "(showing lines {first}-{last} of {total} — call again with offset={next_offset} for the rest)"
    )
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

/// The footer of an entry-paged result. `noun` is `entries`, `nodes` or `matches`; `first`
/// and `last` are 1-based inclusive, `next` the 0-based index to resume at (= `last`).
pub fn entries_footer(noun: &str, first: usize, last: usize, total: usize, next: usize) -> String {
    format!(
        "(showing {noun} {first}-{last} of {total} — call again with offset={next} for the rest)"
    )
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
}
