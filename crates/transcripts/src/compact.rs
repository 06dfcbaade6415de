//! Tool-output compaction before phase 1, so long tool output does not crowd out
//! what the session learned (`memories.tool_result_token_budget`,
//! default 1000 tokens, 0 disables). Rules, after the pi-codex-memory host
//! addition:
//! 1. a result longer than [`DEDUP_MIN_CHARS`] characters that is identical to an earlier
//!    result becomes `[identical to tool result #N: <first line>]`;
//! 2. a run of [`FOLD_MIN_RUN`] or more identical non-blank lines becomes the line once
//!    followed by `[… same line ×K]` (K = the run's length);
//! 3. the result is cut to the budget in tokens (o200k, [`codex_free_core::tokens::count`]) keeping
//!    head and tail around `[… L lines, B bytes omitted …]`; error results get
//!    [`ERROR_BUDGET_FACTOR`]× the budget.
//!
//! Tool rows are labelled by [`label`]: `[tool <name> #N]`, with ` (error)` appended.
//!
//! Invariant: only tool results pass through here; user and assistant text is never
//! altered. Output is deterministic for a given input and budget.

use std::borrow::Cow;
use std::collections::HashMap;

use codex_free_core::tokens;

/// Default `tool_result_token_budget`: 1000 tokens keeps a result's gist, as the
/// pi-codex-memory host does.
pub const DEFAULT_TOOL_RESULT_TOKEN_BUDGET: usize = 1000;
/// Error results keep this many times the budget: an error's detail is what the next
/// session needs to avoid repeating it.
pub const ERROR_BUDGET_FACTOR: usize = 3;
/// Results at most this many characters are never replaced by a back-reference (a
/// reference would save little and could hide short distinct facts).
pub const DEDUP_MIN_CHARS: usize = 200;
/// Shortest run of identical non-blank lines that is folded.
pub const FOLD_MIN_RUN: usize = 3;
/// Characters of the first line quoted in an identical-result reference.
pub const REF_FIRST_LINE_CHARS: usize = 80;
/// Tokens kept free for the omission marker when cutting.
const MARKER_RESERVE_TOKENS: usize = 16;

/// The label of tool result `n` of tool `name`: `[tool <name> #<n>]`, plus ` (error)`.
pub fn label(name: &str, n: usize, is_error: bool) -> String {
    if is_error {
        format!("[tool {name} #{n}] (error)")
    } else {
        format!("[tool {name} #{n}]")
    }
}

/// Fold runs of [`FOLD_MIN_RUN`]+ identical non-blank lines to the line plus
/// `[… same line ×K]`. Borrowed when nothing folds.
pub fn fold_repeated_lines(text: &str) -> Cow<'_, str> {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut has_run = false;
    let mut i = 0;
    while i < lines.len() {
        let mut j = i + 1;
        while j < lines.len() && lines[j] == lines[i] {
            j += 1;
        }
        if j - i >= FOLD_MIN_RUN && !lines[i].trim().is_empty() {
            has_run = true;
            break;
        }
        i = j;
    }
    if !has_run {
        return Cow::Borrowed(text);
    }
    let mut out: Vec<Cow<'_, str>> = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        let mut j = i + 1;
        while j < lines.len() && lines[j] == lines[i] {
            j += 1;
        }
        let run = j - i;
        if run >= FOLD_MIN_RUN && !lines[i].trim().is_empty() {
            out.push(Cow::Borrowed(lines[i]));
            out.push(Cow::Owned(format!("[… same line ×{run}]")));
        } else {
            out.extend(lines[i..j].iter().map(|l| Cow::Borrowed(*l)));
        }
        i = j;
    }
    Cow::Owned(out.join("\n"))
}

/// Cut `text` to about `budget` tokens keeping head and tail (half each, at line
/// boundaries when a whole line fits, else inside the line at a char boundary) around a
/// marker line `[… L lines, B bytes omitted …]`. Borrowed when it already fits or when
/// `budget` is 0 (no limit). Cost: tokenises at most about `budget` tokens' worth of lines
/// from each end plus the early-exit fit check.
pub fn cap_head_tail(text: &str, budget: usize) -> Cow<'_, str> {
    // o200k tokens are at least one byte each, so a text of <= budget bytes always fits.
    if budget == 0 || text.len() <= budget {
        return Cow::Borrowed(text);
    }
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut total = 0;
    let mut fits = true;
    for l in &lines {
        total += tokens::count(l);
        if total > budget {
            fits = false;
            break;
        }
    }
    if fits {
        return Cow::Borrowed(text);
    }
    let avail = budget.saturating_sub(MARKER_RESERVE_TOKENS).max(2);
    let head_budget = avail / 2;
    let tail_budget = avail - head_budget;

    let mut head_end = 0;
    let mut used = 0;
    for l in &lines {
        let c = tokens::count(l);
        if used + c > head_budget {
            break;
        }
        used += c;
        head_end += l.len();
    }
    if head_end == 0 {
        head_end = prefix_within(lines[0], head_budget);
    }

    let mut tail_start = text.len();
    let mut used = 0;
    for l in lines.iter().rev() {
        let c = tokens::count(l);
        if used + c > tail_budget || tail_start - l.len() < head_end {
            break;
        }
        used += c;
        tail_start -= l.len();
    }
    if tail_start == text.len() {
        let last = lines[lines.len() - 1];
        let start_of_last = text.len() - last.len();
        tail_start = (start_of_last + suffix_start_within(last, tail_budget)).max(head_end);
    }
    if tail_start <= head_end {
        return Cow::Borrowed(text);
    }
    let middle = &text[head_end..tail_start];
    let head = &text[..head_end];
    let sep = if head.is_empty() || head.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    let tail = &text[tail_start..];
    let nl = if tail.is_empty() { "" } else { "\n" };
    Cow::Owned(format!(
        "{head}{sep}[… {} lines, {} bytes omitted …]{nl}{tail}",
        middle.lines().count().max(1),
        middle.len()
    ))
}

/// Byte length of the longest char-boundary prefix of `s` with at most `budget` tokens.
fn prefix_within(s: &str, budget: usize) -> usize {
    let mut end = floor_boundary(s, budget.saturating_mul(4).min(s.len()));
    while end > 0 && tokens::count(&s[..end]) > budget {
        end = floor_boundary(s, end * 9 / 10);
    }
    end
}

/// Start offset of the longest char-boundary suffix of `s` with at most `budget` tokens.
fn suffix_start_within(s: &str, budget: usize) -> usize {
    let mut start = ceil_boundary(s, s.len().saturating_sub(budget.saturating_mul(4)));
    while start < s.len() && tokens::count(&s[start..]) > budget {
        let keep = (s.len() - start) * 9 / 10;
        start = ceil_boundary(s, s.len() - keep);
    }
    start
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Per-rollout compaction state: remembers earlier results for back-references.
#[derive(Debug)]
pub struct Compactor {
    budget: usize,
    seen: HashMap<String, usize>,
}

impl Compactor {
    /// A compactor for one rollout with `budget` tokens per result (0 disables).
    pub fn new(budget: usize) -> Self {
        Self {
            budget,
            seen: HashMap::new(),
        }
    }

    /// The budget in tokens (0 = disabled).
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Compact result number `n` (the number in its [`label`]). Applies the rules in the
    /// module doc order; returns the text unchanged when the budget is 0.
    pub fn result<'a>(&mut self, n: usize, text: &'a str, is_error: bool) -> Cow<'a, str> {
        if self.budget == 0 {
            return Cow::Borrowed(text);
        }
        if text.len() > DEDUP_MIN_CHARS && text.chars().count() > DEDUP_MIN_CHARS {
            if let Some(&first) = self.seen.get(text) {
                let line = text
                    .lines()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("")
                    .trim();
                let quoted: String = line.chars().take(REF_FIRST_LINE_CHARS).collect();
                let more = if line.chars().count() > REF_FIRST_LINE_CHARS {
                    "…"
                } else {
                    ""
                };
                return Cow::Owned(format!(
                    "[identical to tool result #{first}: {quoted}{more}]"
                ));
            }
            self.seen.insert(text.to_string(), n);
        }
        let budget = if is_error {
            self.budget.saturating_mul(ERROR_BUDGET_FACTOR)
        } else {
            self.budget
        };
        match fold_repeated_lines(text) {
            Cow::Borrowed(t) => cap_head_tail(t, budget),
            Cow::Owned(t) => Cow::Owned(cap_head_tail(&t, budget).into_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_marks_errors() {
        assert_eq!(label("exec_command", 3, false), "[tool exec_command #3]");
        assert_eq!(label("Bash", 1, true), "[tool Bash #1] (error)");
    }

    #[test]
    fn folds_runs_of_three_or_more_non_blank_lines() {
        assert_eq!(
            fold_repeated_lines("a\nx\nx\nx\nx\nb\n"),
            "a\nx\n[… same line ×4]\nb\n"
        );
        assert_eq!(fold_repeated_lines("x\nx\ny"), "x\nx\ny");
        assert_eq!(fold_repeated_lines("a\n\n\n\n\nb"), "a\n\n\n\n\nb");
        assert!(matches!(fold_repeated_lines("a\nb"), Cow::Borrowed(_)));
    }

    #[test]
    fn caps_keep_head_and_tail_with_exact_marker() {
        let text: String = (1..=5000).map(|i| format!("{i}\n")).collect();
        let out = cap_head_tail(&text, 100);
        assert!(out.starts_with("1\n2\n3\n"), "{out}");
        assert!(out.ends_with("4999\n5000\n"), "{out}");
        let marker = out.lines().find(|l| l.starts_with("[… ")).unwrap();
        let kept = out.lines().filter(|l| !l.starts_with("[… ")).count();
        let omitted_lines = 5000 - kept;
        let kept_bytes: usize = out
            .lines()
            .filter(|l| !l.starts_with("[… "))
            .map(|l| l.len() + 1)
            .sum();
        assert_eq!(
            marker,
            format!(
                "[… {omitted_lines} lines, {} bytes omitted …]",
                text.len() - kept_bytes
            )
        );
        assert!(tokens::count(&out) <= 100 + 4, "{}", tokens::count(&out));
    }

    #[test]
    fn cap_cuts_inside_a_single_huge_line() {
        let text = "abcdefghij ".repeat(2000);
        let out = cap_head_tail(&text, 50);
        assert!(out.starts_with("abcdefghij"));
        assert!(out.contains("\n[… 1 lines, "));
        assert!(out.len() < 600, "{}", out.len());
    }

    #[test]
    fn identical_results_reference_the_first_by_number() {
        let mut c = Compactor::new(1000);
        let big = format!("first line of output\n{}", "y".repeat(300));
        assert_eq!(c.result(1, &big, false), big.as_str());
        assert_eq!(
            c.result(2, &big, false),
            "[identical to tool result #1: first line of output]"
        );
        let small = "short";
        assert_eq!(c.result(3, small, false), "short");
        assert_eq!(c.result(4, small, false), "short");
    }

    #[test]
    fn errors_keep_three_times_the_budget_and_zero_disables() {
        let text: String = (1..=2000).map(|i| format!("line {i}\n")).collect();
        let mut c = Compactor::new(100);
        let normal = c.result(1, &text, false).into_owned();
        let mut c = Compactor::new(100);
        let err = c.result(1, &text, true).into_owned();
        assert!(tokens::count(&err) > 2 * tokens::count(&normal));
        assert!(tokens::count(&err) <= 300 + 4);
        let mut off = Compactor::new(0);
        assert_eq!(off.result(1, &text, false), text.as_str());
    }
}
