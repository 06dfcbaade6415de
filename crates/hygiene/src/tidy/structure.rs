//! Shape helpers over Markdown text and units: dates, terminal transcripts, word tokens,
//! top-level sections, slugs and block joins.

use chrono::NaiveDate;

use super::TOPICS_HEADING;
use super::classify::Decided;
use crate::VERIFY_HEADING;
use crate::text;
use crate::units::{Unit, UnitKind};

pub(super) fn date_of(s: &str) -> Option<String> {
    #[expect(
        clippy::expect_used,
        reason = "a fixed pattern written in this file; every test that runs the matcher compiles it"
    )]
    static ISO: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?:^|\D)((?:19|20)\d{2})[-/.](\d{1,2})[-/.](\d{1,2})(?:\D|$)")
            .expect("regex")
    });
    #[expect(
        clippy::expect_used,
        reason = "a fixed pattern written in this file; every test that runs the matcher compiles it"
    )]
    static ZH: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"((?:19|20)\d{2})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*日")
            .expect("regex")
    });
    let c = ISO.captures(s).or_else(|| ZH.captures(s))?;
    let (y, m, d): (i32, u32, u32) = (c[1].parse().ok()?, c[2].parse().ok()?, c[3].parse().ok()?);
    NaiveDate::from_ymd_opt(y, m, d).map(|x| x.format("%Y-%m-%d").to_string())
}

/// A fenced block that is a terminal transcript: a prompt line (`$ `, `> `, `PS> `)
/// followed by output (a line without a prompt). Command output is evidence of one run.
pub(super) fn is_transcript(u: &Unit) -> bool {
    let body: Vec<&str> = u.content_lines().collect();
    if body.len() < 3 {
        return false;
    }
    let inner = &body[1..body.len().saturating_sub(1)];
    let prompt = |l: &str| {
        let t = l.trim_start();
        t.starts_with("$ ") || t.starts_with("PS> ") || t.starts_with("PS ") || t.starts_with("❯ ")
    };
    inner.iter().any(|l| prompt(l))
        && inner
            .iter()
            .any(|l| !prompt(l) && !l.trim().is_empty() && !l.trim_start().starts_with('#'))
}

/// Tokens of a rule line for value merges: runs of letters/digits and runs of the rest.
pub(super) fn tokens(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut kind = None;
    for (i, c) in s.char_indices() {
        let k = c.is_alphanumeric();
        if kind.is_some_and(|x| x != k) {
            out.push(&s[start..i]);
            start = i;
        }
        kind = Some(k);
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}
/// Lowercase ASCII slug of a heading for a topic file name (`topic` when nothing is left).
pub(super) fn slug(h: &str) -> String {
    let mut s = String::new();
    for c in h.trim_start_matches('#').trim().chars() {
        if c.is_ascii_alphanumeric() {
            s.push(c.to_ascii_lowercase());
        } else if !s.ends_with('-') && !s.is_empty() {
            s.push('-');
        }
    }
    let s = s.trim_matches('-').chars().take(40).collect::<String>();
    let s = s.trim_end_matches('-').to_string();
    if s.is_empty() { "topic".into() } else { s }
}

/// `t` without empty lines at its end (it still ends with a newline when it had text): a
/// blank line at the end of a file is no content, and `git diff --check` reports it.
pub(super) fn trim_blank_tail(mut t: String) -> String {
    while t.ends_with("\n\n") {
        t.pop();
    }
    t
}

/// `a`, a blank line, then `b` (nothing when `b` is empty).
pub(super) fn join_blocks(mut a: String, b: &str) -> String {
    if b.is_empty() {
        return a;
    }
    if !a.is_empty() && !a.ends_with('\n') {
        a.push('\n');
    }
    if !a.is_empty() && !a.ends_with("\n\n") {
        a.push('\n');
    }
    a.push_str(b);
    a
}

/// Top-level sections (the shallowest heading level below the title) with the indices of
/// the units they hold.
pub(super) fn layout_sections(ds: &[Decided]) -> Vec<(usize, Vec<usize>)> {
    let skip = |d: &Decided| {
        let h = d.unit.content_lines().next().unwrap_or("").trim();
        d.reason == "title" || h == VERIFY_HEADING || h == TOPICS_HEADING
    };
    let Some(top) = ds
        .iter()
        .filter(|d| !skip(d))
        .filter_map(|d| match d.unit.kind {
            UnitKind::Heading(l) => Some(l),
            _ => None,
        })
        .min()
    else {
        return Vec::new();
    };
    ds.iter()
        .enumerate()
        .filter(|(_, d)| d.unit.kind == UnitKind::Heading(top) && !skip(d))
        .map(|(i, _)| {
            (
                i,
                (i + 1..ds.len())
                    .filter(|j| ds[*j].parents.contains(&i))
                    .collect(),
            )
        })
        .collect()
}

/// `text` with `line` (and a blank line) after its first-line title, or on top.
pub(super) fn insert_after_title(text: &str, line: &str) -> String {
    let mut first_end = 0;
    let has_title = text
        .lines()
        .next()
        .is_some_and(|l| text::heading_level(l) == Some(1));
    if has_title {
        first_end = text.find('\n').map_or(text.len(), |i| i + 1);
    }
    let (head, rest) = text.split_at(first_end);
    let rest_trim = rest.trim_start_matches('\n');
    let mut out = String::from(head);
    if has_title {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push('\n');
    }
    out.push_str(line);
    out.push_str("\n\n");
    out.push_str(rest_trim);
    out
}
