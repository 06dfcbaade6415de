//! Citations: the `<oai-mem-citation>` blocks a model ends its answer with when it used a
//! memory (the format the served policy block asks for, Codex's own), parsed so the cited
//! rollouts' usage counts rise (phase 1 reads them in later transcripts, phase 2 in the
//! consolidation agent's answers).

/// One entry of a `<citation_entries>` list: `path:START-END|note=[text]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CitationEntry {
    /// Cited file, relative to the memory folder.
    pub path: String,
    /// Cited line range (1-based, inclusive), when given.
    pub lines: Option<(usize, usize)>,
    /// The note, when given.
    pub note: Option<String>,
}

/// One `<oai-mem-citation>` block.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Citation {
    /// The cited memory lines.
    pub entries: Vec<CitationEntry>,
    /// The cited rollout ids.
    pub rollout_ids: Vec<String>,
}

fn between<'a>(s: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let a = s.find(open)? + open.len();
    let b = s[a..].find(close)? + a;
    Some(&s[a..b])
}

/// Every complete `<oai-mem-citation>` block in `text` (Codex's citation format: a
/// `<citation_entries>` list, one `path:START-END|note=[...]` per line, and a
/// `<rollout_ids>` list, one id per line). Unclosed blocks are ignored.
pub fn parse_citations(text: &str) -> Vec<Citation> {
    let mut out = Vec::new();
    for (open, close) in CITATION_TAGS {
        out.extend(parse_citation_blocks(text, open, close));
    }
    out
}

/// Citation block tags: the current form, then the legacy `<memory_citation>` one (whose
/// ids come as `<thread_ids>`), both still written by models trained on either.
const CITATION_TAGS: [(&str, &str); 2] = [
    ("<oai-mem-citation>", "</oai-mem-citation>"),
    ("<memory_citation>", "</memory_citation>"),
];

/// A plausible rollout id: 1-128 characters of letters, digits, `-`, `_`, `.` or `:`.
/// Anything else in an id list (prose, markup) is ignored rather than credited.
fn plausible_id(s: &str) -> bool {
    (1..=128).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

fn parse_citation_blocks(text: &str, open: &str, close: &str) -> Vec<Citation> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(open) {
        let after = &rest[i + open.len()..];
        let Some(j) = after.find(close) else { break };
        let block = &after[..j];
        rest = &after[j + close.len()..];
        let mut c = Citation::default();
        if let Some(list) = between(block, "<citation_entries>", "</citation_entries>") {
            for line in list.lines().map(str::trim).filter(|l| !l.is_empty()) {
                let (loc, note) = match line.split_once('|') {
                    Some((l, n)) => {
                        let n = n.trim().strip_prefix("note=").unwrap_or(n.trim());
                        let n = n
                            .strip_prefix('[')
                            .and_then(|n| n.strip_suffix(']'))
                            .unwrap_or(n);
                        (l.trim(), Some(n.to_string()))
                    }
                    None => (line, None),
                };
                let (path, lines) = match loc.rsplit_once(':') {
                    Some((p, r)) => {
                        let range = r.split_once('-').and_then(|(a, b)| {
                            Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
                        });
                        let single = r.trim().parse().ok().map(|n: usize| (n, n));
                        match range.or(single) {
                            Some(rg) => (p.to_string(), Some(rg)),
                            None => (loc.to_string(), None),
                        }
                    }
                    None => (loc.to_string(), None),
                };
                c.entries.push(CitationEntry { path, lines, note });
            }
        }
        for (a, b) in [
            ("<rollout_ids>", "</rollout_ids>"),
            ("<thread_ids>", "</thread_ids>"),
        ] {
            if let Some(list) = between(block, a, b) {
                for id in list
                    .split(|ch: char| ch.is_whitespace() || ch == ',')
                    .filter(|s| plausible_id(s))
                {
                    c.rollout_ids.push(id.to_string());
                }
            }
        }
        out.push(c);
    }
    out
}

/// The distinct rollout ids cited in `text`, in order of first appearance.
pub fn cited_rollout_ids(text: &str) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for c in parse_citations(text) {
        for id in c.rollout_ids {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn citations_parse() {
        let text = "done.\n\n<oai-mem-citation>\n<citation_entries>\nMEMORY.md:1-10|note=[workspace context]\nrollout_summaries/a.md:3|note=[x]\n</citation_entries>\n<rollout_ids>\nt-1\nt-2\n</rollout_ids>\n</oai-mem-citation>\nand <oai-mem-citation><rollout_ids>t-2, t-3</rollout_ids></oai-mem-citation> <oai-mem-citation><rollout_ids>t-9";
        let c = parse_citations(text);
        assert_eq!(c.len(), 2);
        assert_eq!(
            c[0].entries[0],
            CitationEntry {
                path: "MEMORY.md".into(),
                lines: Some((1, 10)),
                note: Some("workspace context".into())
            }
        );
        assert_eq!(c[0].entries[1].lines, Some((3, 3)));
        assert_eq!(
            cited_rollout_ids(text),
            ["t-1", "t-2", "t-3"],
            "unclosed block ignored, duplicates merged"
        );
    }
}
