//! Markdown blocks ("units") of a memory file, the pieces a tidy moves whole: a heading, a
//! fenced code block, a table, a list item with its more-indented continuation and children,
//! a paragraph. Blank lines belong to the unit before them, so removing a unit removes its
//! spacing and nothing else.
//!
//! Invariant: the units of a text, concatenated in order, are the text byte for byte
//! (trailing spaces, tabs, blank lines and a missing final newline included).

use super::text;

/// What a unit is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitKind {
    /// An ATX heading of this level (1..=6).
    Heading(usize),
    /// A fenced code block, fences included.
    Code,
    /// Contiguous table rows.
    Table,
    /// A list item, its continuation lines and its children (more indented).
    Item,
    /// Contiguous lines of prose.
    Paragraph,
    /// Blank lines before the first block.
    Blank,
}

/// One block of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// What it is.
    pub kind: UnitKind,
    /// 0-based index of its first line.
    pub first: usize,
    /// Its lines, each with its own line ending (the last may have none).
    pub lines: Vec<String>,
    /// How many of `lines` are content (the rest are trailing blank lines).
    pub content: usize,
}

impl Unit {
    /// The unit's exact text.
    pub fn text(&self) -> String {
        self.lines.concat()
    }

    /// Its content lines without their line endings.
    pub fn content_lines(&self) -> impl Iterator<Item = &str> {
        self.lines[..self.content]
            .iter()
            .map(|l| l.trim_end_matches(['\n', '\r']))
    }
}

/// Lines of `text` with their endings kept.
pub fn split_lines(text: &str) -> Vec<String> {
    text.split_inclusive('\n').map(str::to_string).collect()
}

fn bare(l: &str) -> &str {
    l.trim_end_matches(['\n', '\r'])
}

fn indent(l: &str) -> usize {
    l.chars().take_while(|c| *c == ' ' || *c == '\t').count()
}

fn is_blank(l: &str) -> bool {
    bare(l).trim().is_empty()
}

fn is_item(l: &str) -> bool {
    let t = bare(l).trim_start();
    let mut chars = t.chars();
    match chars.next() {
        Some('-' | '*' | '+') => t.len() > 1 && t[1..].starts_with([' ', '\t']),
        Some(c) if c.is_ascii_digit() => {
            let digits = t.bytes().take_while(u8::is_ascii_digit).count();
            let rest = &t[digits..];
            (rest.starts_with(". ") || rest.starts_with(") ")) && digits <= 3
        }
        _ => false,
    }
}

fn is_fence(l: &str) -> bool {
    let t = bare(l).trim_start();
    t.starts_with("```") || t.starts_with("~~~")
}

fn is_row(l: &str) -> bool {
    bare(l).trim_start().starts_with('|')
}

/// Split `text` into units (see the module doc).
pub fn parse(text: &str) -> Vec<Unit> {
    let lines = split_lines(text);
    let mut out: Vec<Unit> = Vec::new();
    let mut i = 0;
    let push_blank_or_attach = |out: &mut Vec<Unit>, i: usize, l: &String| match out.last_mut() {
        Some(u) => u.lines.push(l.clone()),
        None => out.push(Unit {
            kind: UnitKind::Blank,
            first: i,
            lines: vec![l.clone()],
            content: 0,
        }),
    };
    while i < lines.len() {
        let l = &lines[i];
        if is_blank(l) {
            // A whitespace-only line inside an item keeps its bytes: it is attached like a
            // blank line and so travels with the item before it.
            push_blank_or_attach(&mut out, i, l);
            i += 1;
            continue;
        }
        let start = i;
        let (kind, end) = if let Some(level) = text::heading_level(bare(l)) {
            (UnitKind::Heading(level), i + 1)
        } else if is_fence(l) {
            let open = bare(l).trim_start();
            let marker = if open.starts_with("```") {
                "```"
            } else {
                "~~~"
            };
            let mut j = i + 1;
            while j < lines.len() && !bare(&lines[j]).trim_start().starts_with(marker) {
                j += 1;
            }
            (UnitKind::Code, (j + 1).min(lines.len()))
        } else if is_row(l) {
            let mut j = i + 1;
            while j < lines.len() && is_row(&lines[j]) {
                j += 1;
            }
            (UnitKind::Table, j)
        } else if is_item(l) {
            let base = indent(l);
            let mut j = i + 1;
            let mut fence = false;
            while j < lines.len() {
                let n = &lines[j];
                if fence {
                    fence = !is_fence(n);
                    j += 1;
                    continue;
                }
                if is_blank(n) {
                    // A blank line continues the item only when more-indented lines follow.
                    let k = (j..lines.len()).find(|k| !is_blank(&lines[*k]));
                    match k {
                        Some(k)
                            if indent(&lines[k]) > base && !text::is_heading(bare(&lines[k])) =>
                        {
                            j = k;
                            continue;
                        }
                        _ => break,
                    }
                }
                if text::is_heading(bare(n))
                    || indent(n) <= base && (is_item(n) || indent(n) < base)
                {
                    break;
                }
                if indent(n) <= base && !is_item(n) {
                    // A lazy continuation line of the item's paragraph.
                    if is_fence(n) || is_row(n) {
                        break;
                    }
                }
                if is_fence(n) {
                    fence = true;
                }
                j += 1;
            }
            (UnitKind::Item, j)
        } else {
            let mut j = i + 1;
            while j < lines.len() {
                let n = &lines[j];
                if is_blank(n)
                    || text::is_heading(bare(n))
                    || is_fence(n)
                    || is_row(n)
                    || is_item(n)
                {
                    break;
                }
                j += 1;
            }
            (UnitKind::Paragraph, j)
        };
        let body: Vec<String> = lines[start..end].to_vec();
        let content = body.len();
        out.push(Unit {
            kind,
            first: start,
            lines: body,
            content,
        });
        i = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(t: &str) -> Vec<(UnitKind, usize, usize)> {
        parse(t)
            .iter()
            .map(|u| (u.kind, u.first, u.content))
            .collect()
    }

    #[test]
    fn units_concatenate_to_the_text_byte_for_byte() {
        let t = "# T\n\nIntro line  \nmore\n\n- a\n  - child\n\n    indented code\n- b\n\n```\nx\n\n        y\n```\n| a | b |\n|---|---|\n| 1 | 2 |\n  \n## H\n* last";
        let us = parse(t);
        assert_eq!(us.iter().map(Unit::text).collect::<String>(), t);
        assert_eq!(
            kinds(t),
            vec![
                (UnitKind::Heading(1), 0, 1),
                (UnitKind::Paragraph, 2, 2),
                (UnitKind::Item, 5, 4),
                (UnitKind::Item, 9, 1),
                (UnitKind::Code, 11, 5),
                (UnitKind::Table, 16, 3),
                (UnitKind::Heading(2), 20, 1),
                (UnitKind::Item, 21, 1),
            ]
        );
    }
}
