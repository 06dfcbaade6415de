//! `grep`: a regex search over the project with ripgrep's crates (`ignore` parallel walker,
//! `grep-regex`, `grep-searcher`), printed like `rg -n`: `path:line:text` for matching
//! lines, `path-line-text` for context lines, `--` between non-adjacent groups.
//!
//! Paging is by **match** (a matching line), in a fixed order: files sorted by their
//! root-relative path (byte order), lines in file order. To make `offset` exact and the
//! total known, the search runs in two passes:
//! 1. count matching lines in every file, in parallel, keeping only `(path, count)`;
//! 2. re-search only the files that hold the requested page, with line numbers and context.
//!
//! Pass 1 costs about what `rg --count` costs; pass 2 touches a handful of files. So the
//! footer gives an exact total: `(showing matches 1-500 of 2310 — call again with offset=500
//! for the rest)`. Memory stays bounded by the number of matching files, not by the
//! matched text. A file that changes between two calls can shift the page; that is the
//! only source of instability.
//!
//! Search rules match ripgrep's defaults except hidden files, which are searched (the
//! `.git` directory is skipped): `.gitignore`/`.ignore` respected (also outside a git
//! repository), binary files (a NUL byte) skipped from the point it is seen, symlinks not
//! followed. Lines longer than [`MAX_LINE_BYTES`] are cut with a visible marker.
//!
//! Invariant: output order depends only on the tree's content; no result exceeds
//! `ToolCtx::max_output_bytes`.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use schemars::JsonSchema;
use serde::Deserialize;

use super::ToolCtx;
use super::fs::walker;
use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::jail::{Jail, display_rel};
use codex_free_core::paging::{self as budget, append_footer, entries_footer, page_budget};

/// Bytes of one printed line after which it is cut with a `… [+N bytes]` marker.
pub const MAX_LINE_BYTES: usize = 500;
/// Largest `context` accepted (lines before and after each match).
pub const MAX_CONTEXT: usize = 20;

/// Arguments of `grep`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct GrepArgs {
    /// Regular expression (Rust regex syntax, as ripgrep), matched against each line.
    pub pattern: String,
    /// File or directory to search, relative to the project root (default: the root).
    #[serde(default)]
    pub path: Option<String>,
    /// Only search files whose path matches this glob (ripgrep `-g` syntax, e.g. `*.rs`; a leading `!` excludes).
    #[serde(default)]
    pub glob: Option<String>,
    /// Match case-insensitively (default false).
    #[serde(default)]
    pub case_insensitive: Option<bool>,
    /// Lines of context to show before and after each match (default 0, at most 20).
    #[serde(default)]
    pub context: Option<usize>,
    /// 0-based index of the first match to return (default 0), as named by a cut page's last line.
    #[serde(default)]
    pub offset: Option<usize>,
}

/// Counts matching lines; pass 1.
struct CountSink(u64);

impl Sink for CountSink {
    type Error = std::io::Error;
    fn matched(
        &mut self,
        _: &Searcher,
        _: &SinkMatch<'_>,
    ) -> std::result::Result<bool, Self::Error> {
        self.0 += 1;
        Ok(true)
    }
}

/// One line seen in pass 2.
struct SeenLine {
    number: u64,
    is_match: bool,
    text: Vec<u8>,
}

/// Collects matching and context lines of one file; pass 2. Stops once it has seen match
/// number `stop_after` (0-based within the file) and the context that follows it.
struct CollectSink {
    lines: Vec<SeenLine>,
    matches: u64,
    stop_after: u64,
    context: u64,
    stop_line: Option<u64>,
}

impl CollectSink {
    fn push(&mut self, number: u64, is_match: bool, bytes: &[u8]) -> bool {
        if let Some(stop) = self.stop_line
            && number > stop
        {
            return false;
        }
        let end = bytes
            .iter()
            .rposition(|&b| b != b'\n' && b != b'\r')
            .map_or(0, |i| i + 1);
        self.lines.push(SeenLine {
            number,
            is_match,
            text: bytes[..end].to_vec(),
        });
        true
    }
}

impl Sink for CollectSink {
    type Error = std::io::Error;
    fn matched(
        &mut self,
        _: &Searcher,
        m: &SinkMatch<'_>,
    ) -> std::result::Result<bool, Self::Error> {
        let n = m.line_number().unwrap_or(0);
        if !self.push(n, true, m.bytes()) {
            return Ok(false);
        }
        if self.matches == self.stop_after {
            self.stop_line = Some(n + self.context);
        }
        self.matches += 1;
        Ok(self.stop_line.is_none_or(|s| n < s))
    }
    fn context(
        &mut self,
        _: &Searcher,
        c: &SinkContext<'_>,
    ) -> std::result::Result<bool, Self::Error> {
        let n = c.line_number().unwrap_or(0);
        Ok(self.push(n, false, c.bytes()))
    }
}

fn searcher(line_numbers: bool, context: usize) -> Searcher {
    SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .line_number(line_numbers)
        .before_context(context)
        .after_context(context)
        .build()
}

/// Pass 1: every file under `base` (or `base` itself) with at least one matching line, and
/// its count, sorted by root-relative path.
fn count_matches(
    jail: &Jail,
    base: &Path,
    matcher: &RegexMatcher,
    glob: Option<&str>,
) -> Result<Vec<(String, PathBuf, u64)>> {
    let root = jail.root();
    let found: Mutex<Vec<(PathBuf, u64)>> = Mutex::new(Vec::new());
    if base.is_file() {
        let mut sink = CountSink(0);
        searcher(false, 0)
            .search_path(matcher, base, &mut sink)
            .map_err(|e| Error::io(format!("searching {}", display_rel(root, base)), e))?;
        if sink.0 > 0 {
            found
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((base.to_path_buf(), sink.0));
        }
    } else {
        let mut wb = walker(jail, base);
        if let Some(g) = glob {
            let mut ob = ignore::overrides::OverrideBuilder::new(base);
            ob.add(g)
                .map_err(|e| Error::InvalidArgument(format!("glob \"{g}\" is not valid: {e}")))?;
            let ov = ob
                .build()
                .map_err(|e| Error::InvalidArgument(format!("glob \"{g}\" is not valid: {e}")))?;
            wb.overrides(ov);
        }
        wb.build_parallel().run(|| {
            struct Local<'a> {
                hits: Vec<(PathBuf, u64)>,
                out: &'a Mutex<Vec<(PathBuf, u64)>>,
            }
            impl Drop for Local<'_> {
                fn drop(&mut self) {
                    if let Ok(mut g) = self.out.lock() {
                        g.append(&mut self.hits);
                    }
                }
            }
            let mut local = Local { hits: Vec::new(), out: &found };
            let mut s = searcher(false, 0);
            Box::new(move |entry| {
                let Ok(entry) = entry else { return ignore::WalkState::Continue };
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    return ignore::WalkState::Continue;
                }
                let mut sink = CountSink(0);
                match s.search_path(matcher, entry.path(), &mut sink) {
                    Ok(()) if sink.0 > 0 => local.hits.push((entry.into_path(), sink.0)),
                    Ok(()) => {}
                    Err(err) => tracing::debug!(path = %entry.path().display(), %err, "grep: skipping unreadable file"),
                }
                ignore::WalkState::Continue
            })
        });
    }
    let mut hits: Vec<(String, PathBuf, u64)> = found
        .into_inner()
        .unwrap_or_default()
        .into_iter()
        .map(|(p, n)| (display_rel(root, &p), p, n))
        .collect();
    hits.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(hits)
}

/// Render one output line, cutting long text with a marker.
fn render_line(path: &str, number: u64, is_match: bool, text: &[u8]) -> String {
    let sep = if is_match { ':' } else { '-' };
    let (shown, cut) = if text.len() > MAX_LINE_BYTES {
        let k = budget::utf8_complete_prefix(&text[..MAX_LINE_BYTES]);
        (&text[..k], text.len() - k)
    } else {
        (text, 0)
    };
    let mut s = format!("{path}{sep}{number}{sep}{}", String::from_utf8_lossy(shown));
    if cut > 0 {
        s.push_str(&format!(" … [+{cut} bytes]"));
    }
    s.push('\n');
    s
}

/// Search the project for `pattern` and return one page of matching lines.
///
/// Page: at most `output.maxEntries` matches and what fits in the output ceiling (context
/// lines included); a page always holds at least one match. The footer
/// `(showing matches a-b of n — call again with offset=b for the rest)` continues; the
/// total is exact (see the module doc). No match gives `(no matches for ...)`.
///
/// Errors: [`Error::InvalidArgument`] for a bad regex or glob, `context` over 20, or an
/// `offset` past the last match; path errors as [`codex_free_core::jail::Jail::resolve`].
#[expect(
    clippy::expect_used,
    reason = "the value was checked or pushed just above in this function"
)]
pub fn grep(ctx: &ToolCtx, a: &GrepArgs) -> Result<String> {
    let jail = ctx.jail();
    let base = jail.resolve(a.path.as_deref().unwrap_or("."))?;
    let context = a.context.unwrap_or(0);
    if context > MAX_CONTEXT {
        return Err(Error::InvalidArgument(format!(
            "context={context} is out of range (allowed 0..={MAX_CONTEXT})"
        )));
    }
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(a.case_insensitive.unwrap_or(false))
        .line_terminator(Some(b'\n'))
        .build(&a.pattern)
        .map_err(|e| Error::InvalidArgument(format!("pattern is not a valid regex: {e}")))?;
    let hits = count_matches(jail, &base, &matcher, a.glob.as_deref())?;
    let total: u64 = hits.iter().map(|h| h.2).sum();
    let offset = a.offset.unwrap_or(0) as u64;
    if total == 0 {
        if offset > 0 {
            return Err(Error::InvalidArgument(format!(
                "offset={offset} is past the end (there are no matches)"
            )));
        }
        let glob = a
            .glob
            .as_deref()
            .map(|g| format!(" in files matching \"{g}\""))
            .unwrap_or_default();
        return Ok(format!(
            "(no matches for /{}/ under {}{glob})",
            a.pattern,
            jail.display(&base)
        ));
    }
    if offset >= total {
        return Err(Error::InvalidArgument(format!(
            "offset={offset} is past the end: there are {total} matches ({})",
            codex_free_core::paging::valid_offsets(total as u64)
        )));
    }
    let max_matches = ctx.config.output.max_entries as u64;
    let budget = page_budget(usize::MAX, ctx.max_output_bytes());
    let mut out = String::new();
    let mut shown = 0u64;
    let mut before = 0u64; // matches in files before the current one
    let mut full = false;
    for (rel, path, count) in &hits {
        if before + count <= offset {
            before += count;
            continue;
        }
        if full || shown >= max_matches {
            break;
        }
        // Matches of this file to show: [first, last] (0-based within the file).
        let first = offset.saturating_sub(before).min(*count);
        let want = (max_matches - shown).min(count - first);
        let last = first + want - 1;
        let mut sink = CollectSink {
            lines: Vec::new(),
            matches: 0,
            stop_after: last,
            context: context as u64,
            stop_line: None,
        };
        searcher(true, context)
            .search_path(&matcher, path, &mut sink)
            .map_err(|e| Error::io(format!("searching {rel}"), e))?;
        // Line numbers of the selected matches, in order.
        let selected: Vec<u64> = sink
            .lines
            .iter()
            .filter(|l| l.is_match)
            .skip(first as usize)
            .take(want as usize)
            .map(|l| l.number)
            .collect();
        let mut printed_up_to = 0u64; // last line number printed in this file
        let mut li = 0usize; // cursor into sink.lines (lines before it are done)
        for (k, &m) in selected.iter().enumerate() {
            // This match's block: context before (not re-printing lines already shown)
            // and after (stopping before the next selected match, whose block shows it).
            let lo = m.saturating_sub(context as u64).max(printed_up_to + 1);
            let hi = match selected.get(k + 1) {
                Some(&next) => (m + context as u64).min(next - 1),
                None => m + context as u64,
            };
            while li < sink.lines.len() && sink.lines[li].number < lo {
                li += 1;
            }
            let mut lj = li;
            let mut block_lines: Vec<&SeenLine> = Vec::new();
            while lj < sink.lines.len() && sink.lines[lj].number <= hi {
                let l = &sink.lines[lj];
                lj += 1;
                if l.is_match && l.number != m {
                    // A match outside this page (before its start or after its end) is
                    // never shown as context: it belongs to another page.
                    if l.number < m {
                        block_lines.clear();
                        continue;
                    }
                    break;
                }
                block_lines.push(l);
            }
            let mut block = String::new();
            let block_start = block_lines.first().map_or(m, |l| l.number);
            if !out.is_empty()
                && context > 0
                && (printed_up_to == 0 || block_start > printed_up_to + 1)
            {
                block.push_str("--\n");
            }
            for l in &block_lines {
                block.push_str(&render_line(rel, l.number, l.is_match, &l.text));
            }
            let block_end = block_lines.last().map_or(m, |l| l.number);
            if out.len() + block.len() > budget {
                if shown == 0 {
                    // Not even one match with its context fits: show the match line alone.
                    let l = sink
                        .lines
                        .iter()
                        .find(|l| l.number == m && l.is_match)
                        .expect("selected match was collected");
                    out.push_str(&render_line(rel, l.number, true, &l.text));
                    shown = 1;
                }
                full = true;
                break;
            }
            out.push_str(&block);
            printed_up_to = block_end;
            shown += 1;
        }
        before += count;
    }
    let next = offset + shown;
    if next < total {
        append_footer(
            &mut out,
            &entries_footer(
                "matches",
                (offset + 1) as usize,
                next as usize,
                total as usize,
                next as usize,
            ),
        );
    } else if out.ends_with('\n') {
        out.pop();
    }
    Ok(budget::enforce_ceiling(out, ctx.max_output_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use codex_free_core::config::Config;
    use std::fs;

    fn ctx_with(root: &Path, f: impl FnOnce(&mut Config)) -> ToolCtx {
        let mut c = Config::default();
        f(&mut c);
        ToolCtx::open(
            root,
            std::sync::Arc::new(codex_free_core::jail::Protected::none()),
            c,
            root.join(".home"),
        )
        .unwrap()
    }

    fn args(p: &str) -> GrepArgs {
        GrepArgs {
            pattern: p.into(),
            path: None,
            glob: None,
            case_insensitive: None,
            context: None,
            offset: None,
        }
    }

    #[test]
    fn prints_like_rg_sorted_by_path() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir_all(d.path().join("b")).unwrap();
        fs::write(d.path().join("b/x.rs"), "fn main() {}\nlet needle = 1;\n").unwrap();
        fs::write(d.path().join("a.txt"), "needle\r\nhay\nNEEDLE\n").unwrap();
        let ctx = ctx_with(d.path(), |_| {});
        assert_eq!(
            grep(&ctx, &args("needle")).unwrap(),
            "a.txt:1:needle\nb/x.rs:2:let needle = 1;"
        );
        let mut a = args("needle");
        a.case_insensitive = Some(true);
        assert_eq!(
            grep(&ctx, &a).unwrap(),
            "a.txt:1:needle\na.txt:3:NEEDLE\nb/x.rs:2:let needle = 1;"
        );
        a.glob = Some("*.rs".into());
        assert_eq!(grep(&ctx, &a).unwrap(), "b/x.rs:2:let needle = 1;");
        a.glob = None;
        a.path = Some("a.txt".into());
        a.context = Some(1);
        assert_eq!(
            grep(&ctx, &a).unwrap(),
            "a.txt:1:needle\na.txt-2-hay\na.txt:3:NEEDLE"
        );
        assert!(
            grep(&ctx, &args("zzz"))
                .unwrap()
                .starts_with("(no matches for /zzz/")
        );
        assert_eq!(
            grep(&ctx, &args("(")).unwrap_err().code(),
            "invalid_argument"
        );
    }

    #[test]
    fn context_groups_are_separated() {
        let d = tempfile::tempdir().unwrap();
        let text: String = (1..=20)
            .map(|i| {
                if i == 3 || i == 15 {
                    "hit\n".to_string()
                } else {
                    format!("l{i}\n")
                }
            })
            .collect();
        fs::write(d.path().join("f"), text).unwrap();
        let ctx = ctx_with(d.path(), |_| {});
        let mut a = args("hit");
        a.context = Some(1);
        assert_eq!(
            grep(&ctx, &a).unwrap(),
            "f-2-l2\nf:3:hit\nf-4-l4\n--\nf-14-l14\nf:15:hit\nf-16-l16"
        );
    }

    #[test]
    fn adjacent_matches_split_across_pages_are_each_shown_once() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("f"), "l1\nl2\nhit\nhit\nl5\n").unwrap();
        let ctx = ctx_with(d.path(), |c| c.output.max_entries = 1);
        let mut a = args("hit");
        a.context = Some(1);
        assert_eq!(
            grep(&ctx, &a).unwrap(),
            "f-2-l2\nf:3:hit\n(showing matches 1-1 of 2 — call again with offset=1 for the rest)"
        );
        a.offset = Some(1);
        assert_eq!(grep(&ctx, &a).unwrap(), "f:4:hit\nf-5-l5");
    }

    #[test]
    fn long_lines_are_cut_with_a_marker() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("f"), format!("needle{}\n", "x".repeat(1000))).unwrap();
        let ctx = ctx_with(d.path(), |_| {});
        let out = grep(&ctx, &args("needle")).unwrap();
        assert!(out.ends_with("… [+506 bytes]"), "{out}");
        assert!(out.len() < 600);
    }

    #[test]
    fn paging_is_exact_across_files() {
        let d = tempfile::tempdir().unwrap();
        for f in 0..5 {
            let text: String = (0..7).map(|i| format!("m {f} {i}\n")).collect();
            fs::write(d.path().join(format!("f{f}")), text).unwrap();
        }
        let ctx = ctx_with(d.path(), |c| c.output.max_entries = 4);
        let mut all = Vec::new();
        let mut offset = 0;
        loop {
            let mut a = args("^m");
            a.offset = Some(offset);
            let page = grep(&ctx, &a).unwrap();
            let mut lines: Vec<&str> = page.lines().collect();
            if lines.last().unwrap().starts_with("(showing") {
                let f = lines.pop().unwrap();
                assert!(
                    f.starts_with(&format!("(showing matches {}-", offset + 1)),
                    "{f}"
                );
                assert!(f.contains(" of 35 —"), "{f}");
                all.extend(lines.iter().map(|s| s.to_string()));
                offset += 4;
            } else {
                all.extend(lines.iter().map(|s| s.to_string()));
                break;
            }
        }
        let expected: Vec<String> = (0..5)
            .flat_map(|f| (0..7).map(move |i| format!("f{f}:{}:m {f} {i}", i + 1)))
            .collect();
        assert_eq!(all, expected);
    }
}
