//! `codex-free memories tidy --plan | --apply`: move what does not belong in the
//! default-load layer (`MEMORY.md`, `memory_summary.md`) to the layer where it does, by
//! rules and without a model.
//!
//! A file is cut into Markdown units ([`super::units`]: a heading, a list item with its
//! children, a fenced code block, a table, a paragraph) and each unit gets one destination
//! ([`Dest`]):
//! - a unit whose every content line is stale by the rules ([`super::text::stale_lines`]) goes
//!   out: to `daily/YYYY-MM-DD.md` when it is a dated log entry (the date of the line or of
//!   its heading; an undated one is never filed under today), else to `archive/`, and
//!   `MEMORY.md` gains the matching "verify at task start" check instead of a live value;
//! - an exact copy of an earlier unit is dropped (the first copy stays, so the text
//!   survives); a restatement of a rule that differs only in case and punctuation goes to
//!   `archive/`;
//! - one-line rules that differ only in one value (`in repo 1`, `in repo 2`, …) are merged
//!   into one rule listing the values; the originals go to `archive/`;
//! - **everything else stays loaded**: a unit the rules are not sure about is never moved.
//!
//! Headings travel with their units (into every file that receives one of them). When the
//! part that stays is still over the `MEMORY.md` budget, whole sections are laid out into
//! topic files (`topics/<slug>.md`, loaded on demand) indexed from `MEMORY.md` with one line
//! each saying when to read it; only what cannot be laid out that way is refused.
//!
//! Units are copied byte for byte: whitespace (Markdown hard breaks included), blank lines
//! inside code, indentation and order are kept; files keep their mode, and new files get
//! `MEMORY.md`'s.
//!
//! `--apply` works in this order and stops at the first failure: checks (every file
//! readable UTF-8 under [`super::MAX_FILE_BYTES`], no link out of the folder, no git conflict
//! marker, the folder writable, a git repository not mid-merge, no consolidation running on
//! the state home's folder, the result within the budgets, every line placed) → backup (a git
//! commit when the folder is a repository's work tree, else a copy under `<home>/backups/`)
//! → writes (destinations first, `MEMORY.md` last, each atomic) → commit → read-back (`git
//! status --short` clean, `git diff --stat`, the real `git diff --check` over the tidy's
//! commit, budgets, every line before still in some file). Any failure after the backup
//! restores it and is reported as a failure.
//!
//! Invariant: `plan` never writes; `apply` never deletes a line's text and never reports
//! success before the read-back passed.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use chrono::NaiveDate;
use serde::Serialize;

use super::text::{self, Shape, Topic};
use super::units::{self, Unit, UnitKind};
use super::{ARCHIVE_DIR, DAILY_DIR, VERIFY_HEADING, check_inside, read_memory_file};
use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::error::IoContext;
use codex_free_memory::budget::{self, ArtifactBudget};
use codex_free_memory::folder::{MEMORY_MD, MemoryFolder, SUMMARY_MD};

/// The pointer `MEMORY.md` gains when a tidy moves lines out of it.
pub const LAYERS_LINE: &str = "- History is not loaded: progress is in daily/YYYY-MM-DD.md, evidence (incidents, releases, old snapshots) in archive/; find it with memories_search.";

/// Folder of topic files laid out from an over-budget `MEMORY.md` (read on demand).
pub const TOPICS_DIR: &str = "topics";

/// The heading of `MEMORY.md`'s index of topic files.
pub const TOPICS_HEADING: &str = "## Topics (read on demand)";

/// Where one unit goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "to", rename_all = "snake_case")]
pub enum Dest {
    /// Stays in its file.
    Stay,
    /// To `daily/<date>.md`.
    Daily {
        /// `YYYY-MM-DD`.
        date: String,
    },
    /// To `archive/<stem>-<today>.md`; `check` is the verify line that replaces a stale value.
    Archive {
        /// The topic whose check `MEMORY.md` gains, for a stale fact.
        check: Option<Topic>,
    },
    /// Dropped: the identical unit stays at `kept_at` (1-based, same file).
    Duplicate {
        /// Line of the copy that is kept.
        kept_at: usize,
    },
    /// Merged with rules that differ from it in one value into the rule at `into`; the
    /// original goes to `archive/`.
    Merged {
        /// 1-based line (of the original file) where the merged rule stands.
        into: usize,
    },
    /// Laid out into a topic file loaded on demand.
    Topic {
        /// `topics/<slug>.md`.
        file: String,
    },
}

/// One unit of the plan.
#[derive(Debug, Clone, Serialize)]
pub struct Move {
    /// `MEMORY.md` or `memory_summary.md`.
    pub file: String,
    /// 1-based first line.
    pub line: usize,
    /// How many lines the unit has (its trailing blank lines included).
    pub lines: usize,
    /// The unit's first line.
    pub text: String,
    /// Where it goes.
    pub dest: Dest,
    /// Why, in a few words.
    pub reason: String,
}

/// A rule made of several that differ in one value.
#[derive(Debug, Clone, Serialize)]
pub struct Merge {
    /// The merged rule as written to `MEMORY.md`.
    pub text: String,
    /// 1-based lines of the originals (all archived).
    pub from: Vec<usize>,
}

/// A section laid out into a topic file.
#[derive(Debug, Clone, Serialize)]
pub struct TopicFile {
    /// `topics/<slug>.md`.
    pub file: String,
    /// The section's heading.
    pub heading: String,
    /// Lines moved into it.
    pub lines: usize,
}

/// Size of the default-load layer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LoadSize {
    /// Lines of `MEMORY.md`.
    pub memory_lines: usize,
    /// Bytes of `MEMORY.md`.
    pub memory_bytes: usize,
    /// Lines of `memory_summary.md` (0 when absent).
    pub summary_lines: usize,
    /// Bytes of `memory_summary.md`.
    pub summary_bytes: usize,
    /// Tokens of both files (what a session that loads them pays).
    pub tokens: usize,
}

impl LoadSize {
    fn of(memory: &str, summary: Option<&str>) -> Self {
        let s = summary.unwrap_or("");
        Self {
            memory_lines: memory.lines().count(),
            memory_bytes: memory.len(),
            summary_lines: s.lines().count(),
            summary_bytes: s.len(),
            tokens: codex_free_core::tokens::count(memory) + codex_free_core::tokens::count(s),
        }
    }
}

/// What `tidy` would do. Built by [`plan`]; applied by [`apply`].
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// The memory folder (canonical path).
    pub dir: PathBuf,
    /// Every unit with its destination, in file order.
    pub moves: Vec<Move>,
    /// Rules merged from several that differ in one value.
    pub merged: Vec<Merge>,
    /// Sections laid out into topic files (when the part that stays is over budget).
    pub topics: Vec<TopicFile>,
    /// Checks added to `MEMORY.md`'s verify section.
    pub checks_added: Vec<String>,
    /// New content of every file the apply writes (relative path → text).
    pub outputs: BTreeMap<String, String>,
    /// Which of `outputs` exist today (the rest are created).
    pub existing: BTreeSet<String>,
    /// Default-load size now.
    pub before: LoadSize,
    /// Default-load size after the apply.
    pub after: LoadSize,
    /// Budget problems the result would still have (apply refuses while any).
    pub over_budget: Vec<String>,
    /// What else would make `--apply` refuse (conflict markers, a merge in progress, a
    /// folder that cannot be written), found without writing anything.
    pub blockers: Vec<String>,
    /// The original texts (relative path → text), for the read-back.
    #[serde(skip)]
    pub originals: BTreeMap<String, String>,
}

impl Plan {
    /// True when applying would change nothing.
    pub fn is_noop(&self) -> bool {
        self.outputs
            .iter()
            .all(|(k, v)| self.originals.get(k) == Some(v))
    }

    /// The plan as text: one line per unit (`file:line -> destination [reason] text`), then
    /// the merges, topic files, checks added, files written, projected sizes and blockers.
    pub fn render(&self) -> String {
        let mut s = String::new();
        for m in &self.moves {
            let archive = self.archive_name(&m.file);
            let to = match &m.dest {
                Dest::Stay => "stays".to_string(),
                Dest::Daily { date } => format!("-> {DAILY_DIR}/{date}.md"),
                Dest::Archive { check: None } => format!("-> {archive}"),
                Dest::Archive { check: Some(t) } => format!(
                    "-> {archive} + verify at task start: {}",
                    t.check().trim_start_matches("- ")
                ),
                Dest::Duplicate { kept_at } => {
                    format!("dropped: identical to line {kept_at}, which is kept")
                }
                Dest::Merged { into } => {
                    format!("merged into the rule at line {into}; original -> {archive}")
                }
                Dest::Topic { file } => format!("-> {file} (on demand, indexed from {MEMORY_MD})"),
            };
            let span = if m.lines > 1 {
                format!("{}-{}", m.line, m.line + m.lines - 1)
            } else {
                m.line.to_string()
            };
            let _ = writeln!(
                s,
                "{}:{span}: {to}  [{}]  {}",
                m.file,
                m.reason,
                clip(&m.text, 100)
            );
        }
        let count = |f: &dyn Fn(&Dest) -> bool| {
            self.moves
                .iter()
                .filter(|m| f(&m.dest))
                .map(|m| m.lines)
                .sum::<usize>()
        };
        let _ = writeln!(
            s,
            "\nLines: {} stay, {} to {DAILY_DIR}/, {} to {ARCHIVE_DIR}/ ({} as stale facts replaced by checks), {} exact duplicates dropped, {} merged, {} to {TOPICS_DIR}/.",
            count(&|d| *d == Dest::Stay),
            count(&|d| matches!(d, Dest::Daily { .. })),
            count(&|d| matches!(d, Dest::Archive { .. })),
            count(&|d| matches!(d, Dest::Archive { check: Some(_) })),
            count(&|d| matches!(d, Dest::Duplicate { .. })),
            count(&|d| matches!(d, Dest::Merged { .. })),
            count(&|d| matches!(d, Dest::Topic { .. })),
        );
        for m in &self.merged {
            let _ = writeln!(
                s,
                "Merges lines {} into one rule: {}",
                m.from
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                m.text.trim()
            );
        }
        for t in &self.topics {
            let _ = writeln!(
                s,
                "Lays out `{}` ({} lines) into {} (loaded on demand, one index line in {MEMORY_MD}).",
                t.heading.trim(),
                t.lines,
                t.file
            );
        }
        for c in &self.checks_added {
            let _ = writeln!(s, "Adds to {MEMORY_MD} under `{VERIFY_HEADING}`: {c}");
        }
        for (k, v) in &self.outputs {
            let verb = if self.existing.contains(k) {
                "rewrites"
            } else {
                "creates"
            };
            let _ = writeln!(s, "Would write: {verb} {k} ({} lines)", v.lines().count());
        }
        let _ = writeln!(
            s,
            "Default-load layer: {} -> {} lines, {} -> {} bytes, {} -> {} tokens ({MEMORY_MD} {} -> {} lines, {} -> {} bytes).",
            self.before.memory_lines + self.before.summary_lines,
            self.after.memory_lines + self.after.summary_lines,
            self.before.memory_bytes + self.before.summary_bytes,
            self.after.memory_bytes + self.after.summary_bytes,
            self.before.tokens,
            self.after.tokens,
            self.before.memory_lines,
            self.after.memory_lines,
            self.before.memory_bytes,
            self.after.memory_bytes,
        );
        for p in &self.over_budget {
            let _ = writeln!(
                s,
                "Over budget after the move, so --apply would refuse: {p}"
            );
        }
        for b in &self.blockers {
            let _ = writeln!(s, "--apply would refuse: {b}");
        }
        s.push_str("Plan only: nothing was changed.\n");
        s
    }

    fn archive_name(&self, file: &str) -> String {
        let stem = file.trim_end_matches(".md");
        self.outputs
            .keys()
            .find(|k| k.starts_with(&format!("{ARCHIVE_DIR}/{stem}-")))
            .cloned()
            .unwrap_or_else(|| format!("{ARCHIVE_DIR}/{stem}-<date>.md"))
    }
}

fn clip(s: &str, n: usize) -> String {
    let t = s.trim();
    if t.chars().count() <= n {
        t.to_string()
    } else {
        format!("{}…", t.chars().take(n).collect::<String>())
    }
}

/// Inputs of a tidy.
#[derive(Debug, Clone)]
pub struct TidyOptions {
    /// The memory folder.
    pub dir: PathBuf,
    /// The state home (non-git backups go to `<home>/backups/`).
    pub home: PathBuf,
    /// The day used for archive file names.
    pub today: NaiveDate,
    /// Size budgets the result must meet.
    pub budget: ArtifactBudget,
    /// Test hook: fail as if the write after this many writes had failed (exercises the
    /// restore path). `None` in normal use.
    pub fail_after_writes: Option<usize>,
}

impl TidyOptions {
    /// Options for `dir` with today's UTC date and no test hook.
    pub fn new(dir: PathBuf, home: PathBuf, budget: ArtifactBudget) -> Self {
        Self {
            dir,
            home,
            today: chrono::Utc::now().date_naive(),
            budget,
            fail_after_writes: None,
        }
    }
}

/// Command-line arguments of `memories tidy`.
#[derive(Debug, Clone, clap::Args)]
#[command(group(clap::ArgGroup::new("mode").required(true).args(["plan", "apply"])))]
pub struct TidyArgs {
    /// Memory folder to tidy: this state home's (default), a Codex `~/.codex/memories`, or
    /// a Claude Code `~/.claude/projects/<slug>/memory`.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Print, unit by unit, what would move where; change nothing.
    #[arg(long)]
    pub plan: bool,
    /// Back up, move the units, commit and verify with a read-back.
    #[arg(long)]
    pub apply: bool,
}

/// A unit with its destination and the headings above it.
#[derive(Debug, Clone)]
struct Decided {
    unit: Unit,
    dest: Dest,
    reason: String,
    /// Indices (into the file's decided units) of the enclosing headings, outermost first.
    parents: Vec<usize>,
}

fn date_of(s: &str) -> Option<String> {
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
fn is_transcript(u: &Unit) -> bool {
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

/// The verdicts of a unit's content lines (structure lines excluded); `None` entries are
/// lines the rules cannot call stale.
fn verdicts_of<'a>(u: &Unit, all: &'a [Option<text::Stale>]) -> Vec<Option<&'a text::Stale>> {
    u.content_lines()
        .enumerate()
        .filter(|(_, l)| !text::is_structural(l) || text::is_conflict_marker(l))
        .map(|(i, _)| all.get(u.first + i).and_then(Option::as_ref))
        .collect()
}

/// Tokens of a rule line for value merges: runs of letters/digits and runs of the rest.
fn tokens(s: &str) -> Vec<&str> {
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

/// Groups of one-line rule units (indices into `ds`) that differ in exactly one word — a
/// value (`repo 1` / `repo 2`), which must hold a digit unless three or more lines share the
/// pattern — with the merged text of each group.
fn value_merges(ds: &[Decided]) -> Vec<(Vec<usize>, String)> {
    let mut by_key: BTreeMap<String, Vec<(usize, usize)>> = BTreeMap::new();
    for (i, d) in ds.iter().enumerate() {
        if d.dest != Dest::Stay || d.unit.kind != UnitKind::Item || d.unit.content != 1 {
            continue;
        }
        let line = d.unit.content_lines().next().unwrap_or("");
        let toks = tokens(line);
        let words = toks
            .iter()
            .filter(|t| t.chars().any(char::is_alphanumeric))
            .count();
        if words < 4 {
            continue;
        }
        for (p, t) in toks.iter().enumerate() {
            if !t.chars().any(char::is_alphanumeric) {
                continue;
            }
            let mut key = format!("{p}\u{0}");
            for (q, u) in toks.iter().enumerate() {
                key.push_str(if q == p { "\u{1}" } else { u });
            }
            by_key.entry(key).or_default().push((i, p));
        }
    }
    let mut taken: HashSet<usize> = HashSet::new();
    let mut groups: Vec<(Vec<usize>, String)> = Vec::new();
    let mut candidates: Vec<Vec<(usize, usize)>> =
        by_key.into_values().filter(|g| g.len() >= 2).collect();
    candidates.sort_by_key(|g| std::cmp::Reverse(g.len()));
    for g in candidates {
        if g.iter().any(|(i, _)| taken.contains(i)) {
            continue;
        }
        let p = g[0].1;
        let values: Vec<String> = g
            .iter()
            .map(|(i, _)| tokens(ds[*i].unit.content_lines().next().unwrap_or(""))[p].to_string())
            .collect();
        let distinct: BTreeSet<&String> = values.iter().collect();
        if distinct.len() != values.len() {
            continue;
        }
        if g.len() < 3 && !values.iter().all(|v| v.chars().any(|c| c.is_ascii_digit())) {
            continue;
        }
        let first = ds[g[0].0].unit.content_lines().next().unwrap_or("");
        let toks = tokens(first);
        let mut text = String::new();
        for (q, t) in toks.iter().enumerate() {
            if q == p {
                text.push('{');
                text.push_str(&values.join(", "));
                text.push('}');
            } else {
                text.push_str(t);
            }
        }
        taken.extend(g.iter().map(|(i, _)| *i));
        groups.push((g.iter().map(|(i, _)| *i).collect(), text));
    }
    groups.sort();
    groups
}

/// A file's decided units and its value merges (member indices, merged text).
type Decision = (Vec<Decided>, Vec<(Vec<usize>, String)>);

/// Decide every unit of one file (see the module doc).
///
/// Long on purpose: one pass over a file's units whose heading stack and seen-content maps every
/// branch reads and updates.
#[expect(
    clippy::too_many_lines,
    reason = "one pass over a file's units whose heading stack and seen-content maps every branch reads and updates"
)]
fn decide(body: &str, in_summary: bool) -> Decision {
    let units = units::parse(body);
    let verdicts = text::stale_lines(body);
    let mut ds: Vec<Decided> = Vec::with_capacity(units.len());
    let mut stack: Vec<(usize, usize)> = Vec::new(); // (level, index)
    let mut kept: HashMap<String, usize> = HashMap::new(); // exact content -> first line
    let mut kept_norm: HashMap<String, usize> = HashMap::new();
    let mut in_verify = false;
    let first_content = units.iter().position(|u| u.kind != UnitKind::Blank);
    for (idx, u) in units.into_iter().enumerate() {
        if let UnitKind::Heading(level) = u.kind {
            while stack.last().is_some_and(|(l, _)| *l >= level) {
                stack.pop();
            }
            let parents = stack.iter().map(|(_, i)| *i).collect();
            let h = u.content_lines().next().unwrap_or("").trim().to_string();
            in_verify = h == VERIFY_HEADING || h == TOPICS_HEADING;
            stack.push((level, idx));
            ds.push(Decided {
                unit: u,
                dest: Dest::Stay,
                reason: "heading".into(),
                parents,
            });
            continue;
        }
        let parents: Vec<usize> = stack.iter().map(|(_, i)| *i).collect();
        let content: String = u.content_lines().collect::<Vec<_>>().join("\n");
        let first_line = u.first + 1;
        let (dest, reason) = if u.kind == UnitKind::Blank || content.trim().is_empty() {
            (Dest::Stay, "blank".to_string())
        } else if u.content_lines().any(text::is_conflict_marker) {
            (
                Dest::Stay,
                "git conflict marker: resolve the merge first".to_string(),
            )
        } else if in_verify || content.trim() == LAYERS_LINE {
            (
                Dest::Stay,
                "check to run live, or the index of the topic files".to_string(),
            )
        } else if Some(idx) == first_content && in_summary && content.trim() == "v1" {
            (Dest::Stay, "summary version line".to_string())
        } else if let Some(at) = kept.get(&content) {
            (
                Dest::Duplicate { kept_at: *at },
                "exact duplicate".to_string(),
            )
        } else {
            let vs = verdicts_of(&u, &verdicts);
            let all_stale = !vs.is_empty() && vs.iter().all(Option::is_some);
            let transcript = u.kind == UnitKind::Code && is_transcript(&u);
            if all_stale || transcript {
                let first = vs.iter().flatten().next().copied();
                let reason = match first {
                    Some(s) => format!("stale: {}", s.evidence),
                    None => "command output: evidence of one run".into(),
                };
                let date = first
                    .filter(|s| {
                        matches!(s.shape, Shape::Dated | Shape::Checkbox | Shape::Narrative)
                    })
                    .and_then(|_| date_of(&content));
                // A unit under a heading that opens with a date belongs to that day's log.
                let heading_date = parents.last().and_then(|p| {
                    let h = ds[*p].unit.content_lines().next().unwrap_or("");
                    text::stale_heading(h)
                        .filter(|(s, inherits)| s.shape == Shape::Dated && *inherits)
                        .and_then(|_| date_of(h))
                });
                match date.or(heading_date) {
                    Some(date) => (Dest::Daily { date }, reason),
                    None => {
                        let check = first.filter(|s| {
                            matches!(
                                s.shape,
                                Shape::Commit
                                    | Shape::Version
                                    | Shape::StatusField
                                    | Shape::RelativeTime
                            )
                        });
                        (
                            Dest::Archive {
                                check: check.map(|s| s.topic),
                            },
                            reason,
                        )
                    }
                }
            } else {
                let norm = text::normalize(&content);
                match kept_norm.get(&norm) {
                    Some(at) if u.kind == UnitKind::Item && !norm.is_empty() => (
                        Dest::Archive { check: None },
                        format!("restates line {at} (case and punctuation only)"),
                    ),
                    _ => {
                        kept.insert(content.clone(), first_line);
                        kept_norm.insert(norm, first_line);
                        (
                            Dest::Stay,
                            if vs.iter().any(Option::is_some) {
                                "partly stale: not sure, stays".into()
                            } else {
                                "not stale by the rules: stays".into()
                            },
                        )
                    }
                }
            }
        };
        ds.push(Decided {
            unit: u,
            dest,
            reason,
            parents,
        });
    }
    // Value merges among the rules that stay.
    let merges = value_merges(&ds);
    for (group, _) in &merges {
        let into = ds[group[0]].unit.first + 1;
        for i in group {
            ds[*i].dest = Dest::Merged { into };
            ds[*i].reason = "differs from its group in one value".into();
        }
    }
    // Headings: a heading stays when anything under it stays, or when nothing is under it
    // and it is not stale itself; it always travels with what leaves.
    let n = ds.len();
    for i in 0..n {
        let UnitKind::Heading(_) = ds[i].unit.kind else {
            continue;
        };
        let below: Vec<usize> = (i + 1..n).filter(|j| ds[*j].parents.contains(&i)).collect();
        let content: Vec<usize> = below
            .iter()
            .copied()
            .filter(|j| {
                !matches!(ds[*j].unit.kind, UnitKind::Heading(_) | UnitKind::Blank)
                    && ds[*j].reason != "blank"
            })
            .collect();
        let h = ds[i].unit.content_lines().next().unwrap_or("").to_string();
        let title = Some(i) == first_content && ds[i].unit.kind == UnitKind::Heading(1);
        let required =
            in_summary && codex_free_memory::budget::SUMMARY_SECTIONS.contains(&h.trim());
        let stays = title
            || required
            || content.iter().any(|j| {
                ds[*j].dest == Dest::Stay
                    || ds[*j].dest
                        == Dest::Merged {
                            into: ds[*j].unit.first + 1,
                        }
            })
            || (content.is_empty() && text::stale_heading(&h).is_none());
        if !stays {
            let dest = content
                .iter()
                .map(|j| ds[*j].dest.clone())
                .find(|d| matches!(d, Dest::Archive { .. } | Dest::Daily { .. }))
                .unwrap_or(Dest::Archive { check: None });
            ds[i].dest = match dest {
                Dest::Daily { date } => Dest::Daily { date },
                _ => Dest::Archive { check: None },
            };
            ds[i].reason = if content.is_empty() {
                "stale heading of an empty section".into()
            } else {
                "heading of a section that leaves".into()
            };
        } else if title {
            ds[i].reason = "title".into();
        } else if text::stale_heading(&h).is_some() {
            // A heading moves only with its section; the lint keeps flagging it until the
            // section's own lines leave, and the plan says so instead of calling it clean.
            ds[i].reason = "stale heading kept: what it heads stays".into();
        }
    }
    (ds, merges)
}

/// Heading lines (exact, with endings) of the chain above unit `i` that `emitted` has not yet
/// written, in order.
fn heading_chain(ds: &[Decided], i: usize, emitted: &mut HashSet<usize>) -> String {
    let mut out = String::new();
    for p in &ds[i].parents {
        if emitted.insert(*p) {
            let l = &ds[*p].unit.lines[0];
            out.push_str(l);
            if !l.ends_with('\n') {
                out.push('\n');
            }
            out.push('\n');
        }
    }
    out
}

/// The text of every unit `pick` selects, each under its headings, byte for byte.
fn render_out(ds: &[Decided], pick: &dyn Fn(&Dest) -> bool) -> String {
    let mut out = String::new();
    let mut emitted = HashSet::new();
    for (i, d) in ds.iter().enumerate() {
        if !pick(&d.dest) {
            continue;
        }
        let chain = heading_chain(ds, i, &mut emitted);
        if !chain.is_empty() && !out.is_empty() && !out.ends_with("\n\n") {
            out.push('\n');
        }
        out.push_str(&chain);
        if matches!(d.unit.kind, UnitKind::Heading(_)) {
            if !emitted.insert(i) {
                continue;
            }
            if !out.is_empty() && !out.ends_with("\n\n") {
                out.push('\n');
            }
        }
        out.push_str(&d.unit.text());
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// The part of a file that stays, with merged rules in place of their groups.
fn render_stay(ds: &[Decided], merges: &[(Vec<usize>, String)]) -> String {
    let mut out = String::new();
    let merged_at: HashMap<usize, &String> = merges.iter().map(|(g, t)| (g[0], t)).collect();
    for (i, d) in ds.iter().enumerate() {
        match &d.dest {
            Dest::Stay => out.push_str(&d.unit.text()),
            Dest::Merged { .. } => {
                if let Some(t) = merged_at.get(&i) {
                    out.push_str(t);
                    // Keep the first member's line ending and trailing blank lines.
                    let first = &d.unit.lines[0];
                    out.push_str(&first[first.trim_end_matches(['\n', '\r']).len()..]);
                    for l in &d.unit.lines[1..] {
                        out.push_str(l);
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Lowercase ASCII slug of a heading for a topic file name (`topic` when nothing is left).
fn slug(h: &str) -> String {
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

/// True when `dir` (canonical) is the memory folder of the state home `home`.
fn is_state_home_folder(home: &Path, dir: &Path) -> bool {
    std::fs::canonicalize(super::default_folder(home)).is_ok_and(|own| own == dir)
}

/// Resolve and check the folder: an existing directory; returns its canonical path.
fn resolve_dir(dir: &Path) -> Result<PathBuf> {
    let md = std::fs::metadata(dir).map_err(|_| Error::NotFound(dir.to_path_buf()))?;
    if !md.is_dir() {
        return Err(Error::InvalidArgument(format!(
            "{} is not a directory",
            dir.display()
        )));
    }
    std::fs::canonicalize(dir).ctx(|| format!("resolving {}", dir.display()))
}

/// What would make `--apply` refuse, found without writing: conflict markers in the loaded
/// files, a git operation in progress, a folder (or destination folder) this user cannot
/// write.
fn blockers(dir: &Path, originals: &BTreeMap<String, String>) -> Vec<String> {
    let mut out = Vec::new();
    for (name, t) in originals {
        let lines: Vec<usize> = t
            .lines()
            .enumerate()
            .filter(|(_, l)| text::is_conflict_marker(l))
            .map(|(i, _)| i + 1)
            .collect();
        if !lines.is_empty() {
            out.push(format!(
                "{name} has git conflict markers on line(s) {}: resolve the merge first",
                lines
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    if let Some(st) = own_repo(dir).and_then(|r| r.operation_in_progress().ok().flatten()) {
        out.push(format!(
            "{} is a git repository in the middle of an operation ({st}); finish or abort it first",
            dir.display()
        ));
    }
    for d in [
        Some(dir.to_path_buf()),
        Some(dir.join(DAILY_DIR)),
        Some(dir.join(ARCHIVE_DIR)),
    ]
    .into_iter()
    .flatten()
    .filter(|d| d.is_dir())
    {
        if !writable(&d) {
            out.push(format!("{} is not writable by this user", d.display()));
        }
    }
    out
}

/// `access(2)` with `W_OK`: whether this user may write into `d` (no file is created).
#[cfg(unix)]
fn writable(d: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(d.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// Elsewhere only the read-only attribute is known (no file is created).
#[cfg(not(unix))]
fn writable(d: &Path) -> bool {
    std::fs::metadata(d).is_ok_and(|m| !m.permissions().readonly())
}

/// The permission bits of `p` (`& 0o7777`), `None` when unreadable or not on Unix.
pub(crate) fn mode_of(p: &Path) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p)
            .ok()
            .map(|m| m.permissions().mode() & 0o7777)
    }
    #[cfg(not(unix))]
    {
        let _ = p;
        None
    }
}

/// Set `p`'s permission bits to `mode`; elsewhere than Unix the file keeps what its folder
/// gives it (there are no mode bits to copy).
pub(crate) fn set_mode(p: &Path, mode: u32) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode))
    }
    #[cfg(not(unix))]
    {
        let _ = (p, mode);
        Ok(())
    }
}

/// Build the plan for `opts.dir`. Reads only.
///
/// Errors (each naming the file): no `MEMORY.md`; a memory file that is not UTF-8, too big,
/// or a link out of the folder; a destination (`daily/`, `archive/`, `topics/` or a file in
/// them) that is a link out of the folder.
///
/// Long on purpose: the plan's steps (load, decide, lay out over budget, rebuild MEMORY.md, check
/// the served shape) share one set of per-file maps and one budget.
#[expect(
    clippy::too_many_lines,
    reason = "the plan's steps (load, decide, lay out over budget, rebuild MEMORY.md, check the served shape) share one set of per-file maps and one budget"
)]
pub fn plan(opts: &TidyOptions) -> Result<Plan> {
    let dir = resolve_dir(&opts.dir)?;
    let today = opts.today.format("%Y-%m-%d").to_string();
    let mut originals = BTreeMap::new();
    let memory = read_memory_file(Some(&dir), &dir.join(MEMORY_MD))?;
    originals.insert(MEMORY_MD.to_string(), memory.clone());
    let summary = match std::fs::symlink_metadata(dir.join(SUMMARY_MD)) {
        Ok(_) => Some(read_memory_file(Some(&dir), &dir.join(SUMMARY_MD))?),
        Err(_) => None,
    };
    if let Some(s) = &summary {
        originals.insert(SUMMARY_MD.to_string(), s.clone());
    }
    for d in [DAILY_DIR, ARCHIVE_DIR, TOPICS_DIR] {
        check_inside(Some(&dir), &dir.join(d))?;
    }

    let (mem, mem_merges) = decide(&memory, false);
    let (sum, sum_merges) = match summary.as_deref().map(|s| decide(s, true)) {
        Some((d, m)) => (Some(d), m),
        None => (None, Vec::new()),
    };

    // MEMORY.md: what stays (the verify section kept apart), the layers pointer under the
    // title, the topic index when sections were laid out, the verify section (existing
    // checks + new ones) at the end.
    let heading_text = |d: &Decided| {
        d.unit
            .content_lines()
            .next()
            .unwrap_or("")
            .trim()
            .to_string()
    };
    let verify_idx: Vec<usize> = mem
        .iter()
        .enumerate()
        .filter(|(_, d)| {
            heading_text(d) == VERIFY_HEADING
                || d.parents
                    .iter()
                    .any(|p| heading_text(&mem[*p]) == VERIFY_HEADING)
        })
        .map(|(i, _)| i)
        .collect();
    // An index of topic files from an earlier tidy is kept and extended, not repeated.
    let topics_idx: Vec<usize> = mem
        .iter()
        .enumerate()
        .filter(|(_, d)| {
            heading_text(d) == TOPICS_HEADING
                || d.parents
                    .iter()
                    .any(|p| heading_text(&mem[*p]) == TOPICS_HEADING)
        })
        .map(|(i, _)| i)
        .collect();
    let mut verify_lines: Vec<String> = verify_idx
        .iter()
        .filter(|i| !matches!(mem[**i].unit.kind, UnitKind::Heading(_)))
        .flat_map(|i| {
            mem[*i]
                .unit
                .content_lines()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .filter(|l| !l.trim().is_empty())
        .collect();
    let mut topics: BTreeSet<Topic> = BTreeSet::new();
    for d in mem.iter().chain(sum.iter().flatten()) {
        if let Dest::Archive { check: Some(t) } = d.dest {
            topics.insert(t);
        }
    }
    let present: HashSet<&str> = memory.lines().map(str::trim).collect();
    let mut checks_added = Vec::new();
    for t in &topics {
        let c = t.check().to_string();
        if !present.contains(c.as_str()) && !verify_lines.contains(&c) {
            checks_added.push(c.clone());
            verify_lines.push(c);
        }
    }
    let moves_out = mem
        .iter()
        .any(|d| !matches!(d.dest, Dest::Stay | Dest::Duplicate { .. }));
    let layers = moves_out && !present.contains(LAYERS_LINE);
    let verify_block = if !verify_lines.is_empty() || !verify_idx.is_empty() {
        let mut v = String::from(VERIFY_HEADING);
        v.push_str("\n\n");
        for l in &verify_lines {
            v.push_str(l);
            v.push('\n');
        }
        v
    } else {
        String::new()
    };
    // `laid`: MEMORY.md's units with the verify section hidden and sections laid out into
    // topic files marked `Topic`.
    let mut laid = mem.clone();
    for i in verify_idx.iter().chain(&topics_idx) {
        laid[*i].dest = Dest::Duplicate { kept_at: 0 };
    }
    let mut index: Vec<String> = topics_idx
        .iter()
        .filter(|i| !matches!(mem[**i].unit.kind, UnitKind::Heading(_)))
        .flat_map(|i| {
            mem[*i]
                .unit
                .content_lines()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .filter(|l| !l.trim().is_empty())
        .collect();
    let compose = |laid: &[Decided], index: &[String]| {
        let mut m = render_stay(laid, &mem_merges);
        if layers {
            m = insert_after_title(&m, LAYERS_LINE);
        }
        if !index.is_empty() {
            let mut block = String::from(TOPICS_HEADING);
            block.push_str("\n\n");
            for l in index {
                block.push_str(l);
                block.push('\n');
            }
            m = join_blocks(m, &block);
        }
        join_blocks(m, &verify_block)
    };
    let fits = |t: &str| {
        budget::size_problems(
            t,
            opts.budget.memory_max_lines,
            opts.budget.memory_max_bytes,
        )
        .is_empty()
    };
    // Over budget: lay whole sections out into topic files, largest first, until it fits.
    let mut topic_files: Vec<TopicFile> = Vec::new();
    let mut topic_outputs: BTreeMap<String, String> = BTreeMap::new();
    let mut new_memory = compose(&laid, &index);
    let mut used: HashSet<String> = HashSet::new();
    // Units of MEMORY.md that still stand there (not laid out): a staying unit, or the
    // first member of a merge (which carries the merged rule).
    let merge_first: HashSet<usize> = mem_merges.iter().map(|(g, _)| g[0]).collect();
    let mut gone: HashSet<usize> = HashSet::new();
    let standing = |j: usize, laid: &[Decided], gone: &HashSet<usize>| {
        !gone.contains(&j) && (laid[j].dest == Dest::Stay || merge_first.contains(&j))
    };
    while !fits(&new_memory) {
        // Rules stay loaded longest: sections are laid out by rule density (fewest rules
        // first), then by size (largest first).
        let next = layout_sections(&laid)
            .into_iter()
            .filter(|(h, _)| standing(*h, &laid, &gone))
            .map(|(h, members)| {
                let staying: Vec<usize> = members
                    .iter()
                    .copied()
                    .filter(|j| standing(*j, &laid, &gone))
                    .collect();
                let bytes: usize = staying.iter().map(|j| laid[*j].unit.text().len()).sum();
                let rules = staying
                    .iter()
                    .filter(|j| laid[**j].unit.content_lines().any(text::is_rule_line))
                    .count();
                let density = (rules * 1000) / staying.len().max(1);
                (h, staying, bytes, density)
            })
            .filter(|(_, _, b, _)| *b > 0)
            .min_by_key(|(h, _, b, d)| (*d, std::cmp::Reverse(*b), *h));
        let Some((h, members, _, _)) = next else {
            break;
        };
        let heading = heading_text(&laid[h]);
        let name = heading.trim_start_matches('#').trim().to_string();
        let mut stem = slug(&heading);
        while !used.insert(stem.clone()) {
            stem.push_str("-2");
        }
        let file = format!("{TOPICS_DIR}/{stem}.md");
        let mut part = String::new();
        for j in std::iter::once(h).chain(members) {
            let own: Vec<(Vec<usize>, String)> = mem_merges
                .iter()
                .filter(|(g, _)| g[0] == j)
                .map(|(_, t)| (vec![0], t.clone()))
                .collect();
            part.push_str(&render_stay(&laid[j..=j], &own));
            if !part.ends_with('\n') {
                part.push('\n');
            }
            gone.insert(j);
            if laid[j].dest == Dest::Stay {
                laid[j].dest = Dest::Topic { file: file.clone() };
                laid[j].reason = format!("laid out: {MEMORY_MD} is over budget");
            }
        }
        let lines = part.lines().count();
        topic_outputs.insert(
            file.clone(),
            format!(
                "<!-- laid out of {MEMORY_MD} by codex-free memories tidy on {today}: loaded on demand; read it when the task touches {name} -->\n\n{part}"
            ),
        );
        index.push(format!(
            "- [{name}]({file}) — read when the task touches {name} ({lines} lines)"
        ));
        topic_files.push(TopicFile {
            file,
            heading: heading.clone(),
            lines,
        });
        let shown: Vec<Decided> = laid
            .iter()
            .enumerate()
            .map(|(j, d)| {
                let mut d = d.clone();
                if gone.contains(&j) {
                    d.dest = Dest::Duplicate { kept_at: 0 };
                }
                d
            })
            .collect();
        new_memory = compose(&shown, &index);
    }

    let mut moves = Vec::new();
    for (file, ds) in [
        (MEMORY_MD, &mem),
        (SUMMARY_MD, sum.as_ref().unwrap_or(&Vec::new())),
    ] {
        for (i, d) in ds.iter().enumerate() {
            if d.unit.kind == UnitKind::Blank {
                continue;
            }
            let (dest, reason) = match (file == MEMORY_MD).then(|| &laid[i].dest) {
                Some(t @ Dest::Topic { .. }) => (t.clone(), laid[i].reason.clone()),
                _ => (d.dest.clone(), d.reason.clone()),
            };
            moves.push(Move {
                file: file.into(),
                line: d.unit.first + 1,
                lines: d.unit.lines.len(),
                text: d.unit.content_lines().next().unwrap_or("").to_string(),
                dest,
                reason,
            });
        }
    }
    let mut merged: Vec<Merge> = mem_merges
        .iter()
        .map(|(g, t)| Merge {
            text: t.clone(),
            from: g.iter().map(|i| mem[*i].unit.first + 1).collect(),
        })
        .collect();
    if let Some(s) = &sum {
        merged.extend(sum_merges.iter().map(|(g, t)| Merge {
            text: t.clone(),
            from: g.iter().map(|i| s[*i].unit.first + 1).collect(),
        }));
    }

    let mut outputs: BTreeMap<String, String> = BTreeMap::new();
    let note = format!(
        "<!-- moved here by codex-free memories tidy on {today}; searchable with memories_search, never loaded by default -->"
    );
    let add_part = |rel: String,
                    title: String,
                    part: String,
                    outputs: &mut BTreeMap<String, String>|
     -> Result<()> {
        if part.is_empty() {
            return Ok(());
        }
        let path = dir.join(&rel);
        let base = match outputs.get(&rel) {
            Some(t) => t.clone(),
            None if std::fs::symlink_metadata(&path).is_ok() => {
                read_memory_file(Some(&dir), &path)?
            }
            None => format!("{title}\n"),
        };
        let mut t = base;
        if !t.ends_with('\n') {
            t.push('\n');
        }
        t.push('\n');
        t.push_str(&note);
        t.push_str("\n\n");
        t.push_str(&part);
        if !t.ends_with('\n') {
            t.push('\n');
        }
        outputs.insert(rel, t);
        Ok(())
    };
    for (file, ds) in [(MEMORY_MD, Some(&mem)), (SUMMARY_MD, sum.as_ref())] {
        let Some(ds) = ds else { continue };
        let stem = file.trim_end_matches(".md");
        let archived = render_out(ds, &|d| {
            matches!(d, Dest::Archive { .. } | Dest::Merged { .. })
        });
        add_part(
            format!("{ARCHIVE_DIR}/{stem}-{today}.md"),
            format!("# Archived from {file} on {today}"),
            archived,
            &mut outputs,
        )?;
        let dates: BTreeSet<String> = ds
            .iter()
            .filter_map(|d| match &d.dest {
                Dest::Daily { date } => Some(date.clone()),
                _ => None,
            })
            .collect();
        for date in dates {
            let part = render_out(ds, &|d| matches!(d, Dest::Daily { date: x } if *x == date));
            add_part(
                format!("{DAILY_DIR}/{date}.md"),
                format!("# {date}"),
                part,
                &mut outputs,
            )?;
        }
    }
    for (k, v) in topic_outputs {
        outputs.insert(k, v);
    }
    let mut new_summary = sum.as_ref().map(|ds| render_stay(ds, &sum_merges));
    if let Some(s) = new_summary.as_mut()
        && s.trim().is_empty()
    {
        // Never leave an empty summary where there was one: keep its first line.
        *s = summary
            .as_deref()
            .and_then(|x| x.lines().next())
            .unwrap_or("v1")
            .to_string()
            + "\n";
    }
    let mut new_memory = trim_blank_tail(new_memory);
    let new_summary = new_summary.map(trim_blank_tail);
    if new_memory.is_empty() {
        new_memory.push('\n');
    }
    outputs.insert(MEMORY_MD.to_string(), new_memory.clone());
    if let Some(s) = &new_summary {
        outputs.insert(SUMMARY_MD.to_string(), s.clone());
    }
    for v in outputs.values_mut() {
        *v = trim_blank_tail(std::mem::take(v));
    }
    for rel in outputs.keys() {
        check_inside(Some(&dir), &dir.join(rel))?;
    }
    let existing: BTreeSet<String> = outputs
        .keys()
        .filter(|k| std::fs::symlink_metadata(dir.join(k)).is_ok())
        .cloned()
        .collect();
    let mut over_budget: Vec<String> = budget::size_problems(
        &new_memory,
        opts.budget.memory_max_lines,
        opts.budget.memory_max_bytes,
    )
    .into_iter()
    .map(|p| {
        format!(
            "{MEMORY_MD}: {} (even with {} section(s) laid out into topic files; what is left cannot be split by section)",
            p.message,
            topic_files.len()
        )
    })
    .collect();
    if let Some(s) = &new_summary {
        over_budget.extend(
            budget::size_problems(
                s,
                opts.budget.summary_max_lines,
                opts.budget.summary_max_bytes,
            )
            .into_iter()
            .map(|p| format!("{SUMMARY_MD}: {}", p.message)),
        );
    }
    // The state home's summary is served to every new session: a tidy must not break its
    // served shape (tokens, structure). A problem the summary already had is not the
    // tidy's to refuse (phase 2's next run repairs or rescues it); one the tidy would
    // introduce is.
    if is_state_home_folder(&opts.home, &dir)
        && let Some(s) = new_summary.as_deref().or(summary.as_deref())
    {
        over_budget.extend(introduced_shape_problems(summary.as_deref(), s));
    }
    let before = LoadSize::of(&memory, summary.as_deref());
    let after = LoadSize::of(&new_memory, new_summary.as_deref());
    let blockers = blockers(&dir, &originals);
    Ok(Plan {
        dir,
        moves,
        merged,
        topics: topic_files,
        checks_added,
        outputs,
        existing,
        before,
        after,
        over_budget,
        blockers,
        originals,
    })
}

/// `t` without empty lines at its end (it still ends with a newline when it had text): a
/// blank line at the end of a file is no content, and `git diff --check` reports it.
fn trim_blank_tail(mut t: String) -> String {
    while t.ends_with("\n\n") {
        t.pop();
    }
    t
}

/// `a`, a blank line, then `b` (nothing when `b` is empty).
fn join_blocks(mut a: String, b: &str) -> String {
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
fn layout_sections(ds: &[Decided]) -> Vec<(usize, Vec<usize>)> {
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
fn insert_after_title(text: &str, line: &str) -> String {
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

/// The served-shape problems of `after` that `before` (the summary as it was) did not have.
fn introduced_shape_problems(before: Option<&str>, after: &str) -> Vec<String> {
    let had = before
        .map(codex_free_memory::gate::summary_shape_problems)
        .unwrap_or_default();
    codex_free_memory::gate::summary_shape_problems(after)
        .into_iter()
        .filter(|p| !had.contains(p))
        .collect()
}

/// Lines of `originals` (exact, whitespace included; blank lines aside) missing from every
/// Markdown file under `dir` — the "nothing lost" read-back. Empty = nothing lost.
pub fn missing_lines(dir: &Path, originals: &BTreeMap<String, String>) -> Result<Vec<String>> {
    let mut have: HashSet<String> = HashSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)
            .ctx(|| format!("listing {}", d.display()))?
            .flatten()
        {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let md = std::fs::symlink_metadata(e.path())
                .ctx(|| format!("reading {}", e.path().display()))?;
            if md.is_dir() {
                stack.push(e.path());
            } else if md.is_file() && name.ends_with(".md") {
                let t = read_memory_file(Some(dir), &e.path())?;
                have.extend(t.lines().map(str::to_string));
            }
        }
    }
    let mut missing: Vec<String> = originals
        .values()
        .flat_map(|t| t.lines())
        .filter(|l| !l.is_empty() && !have.contains(*l))
        .map(str::to_string)
        .collect();
    missing.sort();
    missing.dedup();
    Ok(missing)
}

/// The text a plan leaves loaded: `MEMORY.md` and the topic files it indexes.
pub fn loaded_text(plan: &Plan) -> String {
    let mut s = plan.outputs.get(MEMORY_MD).cloned().unwrap_or_default();
    for t in &plan.topics {
        if let Some(x) = plan.outputs.get(&t.file) {
            s.push_str(x);
        }
    }
    s
}

/// What a finished apply did.
#[derive(Debug, Clone, Serialize)]
pub struct Applied {
    /// Files written: (relative path, "created" | "rewritten", lines before, lines after).
    pub files: Vec<(String, String, usize, usize)>,
    /// How the backup can be restored (a commit id, or a backup folder).
    pub backup: String,
    /// The tidy commit, when the folder is a git work tree.
    pub commit: Option<String>,
    /// The read-back, one line per check, as printed.
    pub read_back: Vec<String>,
    /// Default-load size before and after.
    pub before: LoadSize,
    /// Default-load size after.
    pub after: LoadSize,
}

impl Applied {
    /// The report printed after a verified apply.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "Backup: {}", self.backup);
        for (f, how, b, a) in &self.files {
            let _ = writeln!(s, "{how:>9} {f} ({b} -> {a} lines)");
        }
        if let Some(c) = &self.commit {
            let _ = writeln!(s, "Commit: {c}");
        }
        s.push_str("Read-back:\n");
        for r in &self.read_back {
            let _ = writeln!(s, "  {r}");
        }
        let _ = writeln!(
            s,
            "{MEMORY_MD}: {} -> {} lines, {} -> {} bytes; default-load tokens {} -> {}.",
            self.before.memory_lines,
            self.after.memory_lines,
            self.before.memory_bytes,
            self.after.memory_bytes,
            self.before.tokens,
            self.after.tokens
        );
        s.push_str("Tidy applied and verified.\n");
        s
    }
}

enum Backup {
    Git {
        folder: MemoryFolder,
        head: codex_free_memory::folder::Oid,
        /// What the gate already found at the undo point: not the tidy's to refuse.
        problems_before: Vec<String>,
    },
    Copy {
        root: PathBuf,
        saved: Vec<String>,
        created: Vec<String>,
        created_dirs: Vec<PathBuf>,
    },
}

/// The repository whose work tree is exactly `dir`, if any (see
/// [`MemoryFolder::own_repo_at`]).
fn own_repo(dir: &Path) -> Option<MemoryFolder> {
    MemoryFolder::own_repo_at(dir)
}

fn preflight(dir: &Path) -> Result<()> {
    let probe = tempfile::Builder::new()
        .prefix(".codex-free-tidy-probe")
        .tempfile_in(dir)
        .map_err(|e| {
            Error::Refused(format!(
                "the memory folder {} is not writable ({e}); nothing was changed",
                dir.display()
            ))
        })?;
    drop(probe);
    for d in [DAILY_DIR, ARCHIVE_DIR] {
        let p = dir.join(d);
        if p.is_dir() {
            let probe = tempfile::Builder::new()
                .prefix(".codex-free-tidy-probe")
                .tempfile_in(&p)
                .map_err(|e| {
                    Error::Refused(format!(
                        "{} is not writable ({e}); nothing was changed",
                        p.display()
                    ))
                })?;
            drop(probe);
        }
    }
    if let Some(repo) = own_repo(dir)
        && let Some(st) = repo.operation_in_progress()?
    {
        return Err(Error::Refused(format!(
            "{} is a git repository in the middle of an operation ({st}); finish or abort it first; nothing was changed",
            dir.display()
        )));
    }
    Ok(())
}

/// The state home's own folder is also written by phase 2: refuse while a consolidation
/// holds a live lease (as `memories rollback` does). Other folders are not ours to lock.
fn refuse_while_consolidating(dir: &Path, home: &Path) -> Result<()> {
    let own = std::fs::canonicalize(super::default_folder(home)).ok();
    if own.as_deref() != Some(dir) || !home.join(codex_free_store::DB_FILE).is_file() {
        return Ok(());
    }
    if codex_free_store::Store::open_in_home(home)?.phase2_running()? {
        return Err(Error::Busy(
            "a phase-2 consolidation is running on this memory folder; retry when it has finished; nothing was changed".into(),
        ));
    }
    Ok(())
}

/// Whether `dir` is the state home's own memory folder (served to sessions, gated fully).
fn is_home_folder(dir: &Path, home: &Path) -> bool {
    std::fs::canonicalize(crate::default_folder(home))
        .ok()
        .as_deref()
        == std::fs::canonicalize(dir).ok().as_deref()
}

fn make_backup(plan: &Plan, home: &Path, stamp: &str, budget: &ArtifactBudget) -> Result<Backup> {
    let dir = &plan.dir;
    if own_repo(dir).is_some() {
        let folder = MemoryFolder::at(dir);
        let approved = codex_free_memory::gate::approve_as_is(&folder)?;
        folder.commit_all(&approved, "Backup before memories tidy\n\nUncommitted changes saved so the tidy can be undone exactly.")?;
        let head = folder
            .head()?
            .ok_or_else(|| Error::Store(format!("{}: no commit to back up to", dir.display())))?;
        let problems_before = if is_home_folder(dir, home) {
            codex_free_memory::gate::problems(
                &folder,
                budget,
                codex_free_memory::gate::Scope::Present,
            )
        } else {
            Vec::new()
        };
        return Ok(Backup::Git {
            folder,
            head,
            problems_before,
        });
    }
    let root = home.join("backups").join(format!("tidy-{stamp}"));
    std::fs::create_dir_all(&root)
        .ctx(|| format!("creating the backup folder {}", root.display()))?;
    let mut saved = Vec::new();
    let mut manifest = format!("codex-free memories tidy backup of {}\n", dir.display());
    for rel in &plan.existing {
        let text = read_memory_file(Some(dir), &dir.join(rel))?;
        codex_free_core::home::write_atomic_unlocked(&root.join(rel), text.as_bytes())?;
        // Read back the copy before trusting it.
        if read_memory_file(None, &root.join(rel))? != text {
            return Err(Error::Store(format!(
                "backup copy of {rel} does not match the original"
            )));
        }
        saved.push(rel.clone());
        let _ = writeln!(manifest, "saved: {rel}");
    }
    let created: Vec<String> = plan
        .outputs
        .keys()
        .filter(|k| !plan.existing.contains(*k))
        .cloned()
        .collect();
    for c in &created {
        let _ = writeln!(manifest, "created by the tidy: {c}");
    }
    codex_free_core::home::write_atomic_unlocked(&root.join("MANIFEST.txt"), manifest.as_bytes())?;
    Ok(Backup::Copy {
        root,
        saved,
        created,
        created_dirs: Vec::new(),
    })
}

fn restore(b: &Backup, dir: &Path) -> Result<()> {
    match b {
        Backup::Git { folder, head, .. } => folder.undo_commit(Some(*head)),
        Backup::Copy {
            root,
            saved,
            created,
            created_dirs,
        } => {
            for rel in saved {
                let text = read_memory_file(None, &root.join(rel))?;
                codex_free_core::home::write_atomic_unlocked(&dir.join(rel), text.as_bytes())?;
            }
            for rel in created {
                let p = dir.join(rel);
                if std::fs::symlink_metadata(&p).is_ok() {
                    std::fs::remove_file(&p).ctx(|| format!("removing {}", p.display()))?;
                }
            }
            for d in created_dirs.iter().rev() {
                let _ = std::fs::remove_dir(d);
            }
            Ok(())
        }
    }
}

/// Apply a fresh plan of `opts.dir` (see the module doc for the order of steps).
///
/// Errors: every check of [`plan`]; [`Error::Budget`] when the result would still be over a
/// budget (nothing changed); [`Error::Refused`] for a folder that is not writable or a
/// repository mid-merge (nothing changed); any failure after the backup, reported after
/// the backup was restored (the message says so, or says that the restore failed too).
pub fn apply(opts: &TidyOptions) -> Result<Applied> {
    let plan = plan(opts)?;
    if !plan.over_budget.is_empty() {
        return Err(Error::Budget(format!(
            "tidy would leave the memory over budget ({}); review the plan (`--plan`) and move or merge rules by hand; nothing was changed",
            plan.over_budget.join("; ")
        )));
    }
    // A committed conflict marker means a merge was never finished: moving the markers
    // would hide it.
    if let Some(b) = plan.blockers.iter().find(|b| b.contains("conflict marker")) {
        return Err(Error::Refused(format!("{b}; nothing was changed")));
    }
    // The plan must place every line before anything is written.
    let lost = planned_losses(&plan);
    if !lost.is_empty() {
        return Err(Error::Store(format!(
            "internal error: the plan would lose {} line(s) (first: {:?}); nothing was changed",
            lost.len(),
            lost[0]
        )));
    }
    preflight(&plan.dir)?;
    refuse_while_consolidating(&plan.dir, &opts.home)?;
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ").to_string();
    let mut backup = make_backup(&plan, &opts.home, &stamp, &opts.budget)?;
    let backup_text = match &backup {
        Backup::Git { head, .. } => format!(
            "commit {head} (undo with `git -C {} reset --hard {head}`)",
            plan.dir.display()
        ),
        Backup::Copy { root, .. } => format!(
            "{} (copies of the files the tidy rewrote; MANIFEST.txt lists them)",
            root.display()
        ),
    };
    match write_and_verify(&plan, opts, &mut backup) {
        Ok((commit, read_back)) => {
            // The state home's own folder changed: whatever follows a memory commit runs.
            if is_home_folder(&plan.dir, &opts.home) {
                codex_free_core::events::emit(
                    &opts.home,
                    codex_free_core::events::MemoryEvent::Committed,
                );
            }
            let files = plan
                .outputs
                .iter()
                .filter(|(k, v)| plan.originals.get(*k) != Some(*v) || !plan.existing.contains(*k))
                .map(|(k, v)| {
                    let before = if plan.existing.contains(k) {
                        read_before_lines(&plan, k)
                    } else {
                        0
                    };
                    (
                        k.clone(),
                        if plan.existing.contains(k) {
                            "rewritten"
                        } else {
                            "created"
                        }
                        .to_string(),
                        before,
                        v.lines().count(),
                    )
                })
                .collect();
            Ok(Applied {
                files,
                backup: backup_text,
                commit,
                read_back,
                before: plan.before,
                after: plan.after,
            })
        }
        Err(e) => match restore(&backup, &plan.dir) {
            Ok(()) => Err(Error::Store(format!(
                "tidy failed and was undone: {e}. The folder is as it was before (backup: {backup_text})."
            ))),
            Err(re) => Err(Error::Store(format!(
                "tidy failed: {e}; restoring the backup ALSO failed: {re}. Restore by hand from {backup_text}."
            ))),
        },
    }
}

fn read_before_lines(plan: &Plan, rel: &str) -> usize {
    plan.originals
        .get(rel)
        .map(|t| t.lines().count())
        .or_else(|| {
            std::fs::read_to_string(plan.dir.join(rel))
                .ok()
                .map(|t| t.lines().count())
        })
        .unwrap_or(0)
}

fn planned_losses(plan: &Plan) -> Vec<String> {
    let mut have: HashSet<&str> = HashSet::new();
    for t in plan.outputs.values() {
        have.extend(t.lines());
    }
    let mut lost: Vec<String> = plan
        .originals
        .iter()
        .filter(|(k, _)| plan.outputs.contains_key(*k))
        .flat_map(|(_, t)| t.lines())
        .filter(|l| !l.is_empty() && !have.contains(l))
        .map(str::to_string)
        .collect();
    lost.dedup();
    lost
}

/// Long on purpose: one crash-safe sequence (back up, write destinations before sources, read back,
/// check no line was lost) whose steps share the backup state.
#[expect(
    clippy::too_many_lines,
    reason = "one crash-safe sequence (back up, write destinations before sources, read back, check no line was lost) whose steps share the backup state"
)]
fn write_and_verify(
    plan: &Plan,
    opts: &TidyOptions,
    backup: &mut Backup,
) -> Result<(Option<String>, Vec<String>)> {
    let dir = &plan.dir;
    // Destinations first, the loaded files last: a crash midway leaves lines in two places,
    // never in none.
    let mut order: Vec<&String> = plan
        .outputs
        .keys()
        .filter(|k| *k != MEMORY_MD && *k != SUMMARY_MD)
        .collect();
    order.extend(plan.outputs.keys().filter(|k| *k == SUMMARY_MD));
    order.extend(plan.outputs.keys().filter(|k| *k == MEMORY_MD));
    // Files keep their mode; new ones get MEMORY.md's (a tidy must not make a shared
    // memory private, or a private one readable).
    let default_mode = mode_of(&dir.join(MEMORY_MD)).unwrap_or(0o644);
    let modes: BTreeMap<&String, u32> = plan
        .outputs
        .keys()
        .map(|k| (k, mode_of(&dir.join(k)).unwrap_or(default_mode)))
        .collect();
    for (i, rel) in order.iter().enumerate() {
        if opts.fail_after_writes == Some(i) {
            return Err(Error::Store(format!(
                "simulated failure before writing {rel}"
            )));
        }
        let path = dir.join(rel);
        if let Some(parent) = path.parent()
            && !parent.exists()
        {
            std::fs::create_dir_all(parent).ctx(|| format!("creating {}", parent.display()))?;
            if let Backup::Copy { created_dirs, .. } = backup {
                created_dirs.push(parent.to_path_buf());
            }
        }
        check_inside(Some(dir), &path)?;
        codex_free_core::home::write_atomic_unlocked(&path, plan.outputs[*rel].as_bytes())
            .map_err(|e| Error::Store(format!("writing {}: {e}", path.display())))?;
        set_mode(&path, modes[*rel]).ctx(|| format!("setting the mode of {}", path.display()))?;
    }
    let mut read_back = Vec::new();
    // Every file reads back as planned.
    for (rel, want) in &plan.outputs {
        let got = read_memory_file(Some(dir), &dir.join(rel))?;
        if &got != want {
            return Err(Error::Store(format!(
                "read-back of {rel} differs from what was written"
            )));
        }
    }
    let missing = missing_lines(dir, &plan.originals)?;
    if !missing.is_empty() {
        return Err(Error::Store(format!(
            "{} line(s) are in no file after the move (first: {:?})",
            missing.len(),
            missing[0]
        )));
    }
    read_back.push(format!(
        "every distinct line before is in some file after ({} files checked)",
        plan.outputs.len()
    ));
    let mem = read_memory_file(Some(dir), &dir.join(MEMORY_MD))?;
    let mut budget_problems: Vec<String> = budget::size_problems(
        &mem,
        opts.budget.memory_max_lines,
        opts.budget.memory_max_bytes,
    )
    .into_iter()
    .map(|p| format!("{MEMORY_MD}: {}", p.message))
    .collect();
    let sum = plan.outputs.get(SUMMARY_MD);
    if let Some(s) = sum {
        budget_problems.extend(
            budget::size_problems(
                s,
                opts.budget.summary_max_lines,
                opts.budget.summary_max_bytes,
            )
            .into_iter()
            .map(|p| format!("{SUMMARY_MD}: {}", p.message)),
        );
    }
    if is_state_home_folder(&opts.home, dir) {
        let served = match sum {
            Some(s) => Some(s.clone()),
            None => std::fs::symlink_metadata(dir.join(SUMMARY_MD))
                .ok()
                .map(|_| read_memory_file(Some(dir), &dir.join(SUMMARY_MD)))
                .transpose()?,
        };
        if let Some(s) = served {
            budget_problems.extend(introduced_shape_problems(
                plan.originals.get(SUMMARY_MD).map(String::as_str),
                &s,
            ));
        }
    }
    // The memory folder's write gate: nothing a tidy writes may carry a credential.
    for (name, text) in &plan.outputs {
        budget_problems.extend(codex_free_memory::gate::secret_lines(name, text));
    }
    if !budget_problems.is_empty() {
        return Err(Error::Budget(format!(
            "budget check failed: {}",
            budget_problems.join("; ")
        )));
    }
    read_back.push(format!(
        "budget: {MEMORY_MD} {}/{} lines, {}/{} bytes{}",
        mem.lines().count(),
        opts.budget.memory_max_lines,
        mem.len(),
        opts.budget.memory_max_bytes,
        sum.map(|s| format!(
            "; {SUMMARY_MD} {}/{} lines, {}/{} bytes",
            s.lines().count(),
            opts.budget.summary_max_lines,
            s.len(),
            opts.budget.summary_max_bytes
        ))
        .unwrap_or_default()
    ));
    let commit = match backup {
        Backup::Git {
            folder,
            head,
            problems_before,
        } => {
            let moved = plan.moves.iter().filter(|m| m.dest != Dest::Stay).count();
            let msg = format!(
                "Tidy memory: {moved} lines moved out of the default-load layer\n\nBy codex-free memories tidy; every distinct line is kept in daily/ or archive/.\n"
            );
            // The state home's folder is served: every present file passes the full gate;
            // another folder's budget is its owner's, so only secrets are refused there.
            let approved = if is_home_folder(&plan.dir, &opts.home) {
                codex_free_memory::gate::approve_no_new(
                    folder,
                    &opts.budget,
                    codex_free_memory::gate::Scope::Present,
                    problems_before,
                )
                .map_err(|p| {
                    Error::Budget(format!(
                        "the memory checks refused the tidy: {}",
                        p.join("; ")
                    ))
                })?
            } else {
                codex_free_memory::gate::approve_as_is(folder)?
            };
            // No `verify_committed` here: its whitespace check would refuse the trailing
            // spaces of lines moved byte for byte; `git_diff_check` below allows exactly those.
            let c = folder.commit_all(&approved, &msg)?;
            let short = folder.status_short()?;
            if !short.is_empty() {
                return Err(Error::Store(format!(
                    "git status --short is not clean: {}",
                    short.join(", ")
                )));
            }
            read_back.push("git status --short: clean".into());
            let (files, ins, del) = folder.diff_stat_to_head(*head)?;
            read_back.push(format!(
                "git diff --stat {}..HEAD: {files} files changed, {ins} insertions(+), {del} deletions(-)",
                &head.to_string()[..10],
            ));
            let to = c.map(|c| c.to_string()).unwrap_or_else(|| head.to_string());
            read_back.push(git_diff_check(dir, &head.to_string(), &to, plan)?);
            c.map(|c| c.to_string())
        }
        Backup::Copy { .. } => {
            read_back.push("not a git work tree: verified by reading every file back".into());
            let bad = own_diff_check(plan);
            if !bad.is_empty() {
                return Err(Error::Store(format!(
                    "whitespace check of the written files: {}",
                    bad.join("; ")
                )));
            }
            read_back.push(
                "whitespace: no conflict marker and no trailing whitespace the tidy introduced (lines kept byte for byte from the original may end in spaces)".into(),
            );
            None
        }
    };
    Ok((commit, read_back))
}

/// Lines of `plan`'s written files that the tidy made wrong: conflict markers, and trailing
/// whitespace on a line that is not a line of the original (a moved original keeps its
/// bytes: in Markdown, two trailing spaces are a hard break).
fn own_diff_check(plan: &Plan) -> Vec<String> {
    let originals: HashSet<&str> = plan.originals.values().flat_map(|t| t.lines()).collect();
    let mut out = Vec::new();
    for (k, v) in &plan.outputs {
        for (i, l) in v.lines().enumerate() {
            if text::is_conflict_marker(l) {
                out.push(format!("{k}:{}: leftover conflict marker", i + 1));
            } else if l.ends_with([' ', '\t']) && !originals.contains(l) {
                out.push(format!(
                    "{k}:{}: trailing whitespace the tidy introduced",
                    i + 1
                ));
            }
        }
    }
    out
}

/// The real `git diff --check from..to` in `dir`: fails on a conflict marker or on a
/// whitespace error in a line that is not byte for byte a line of the original; reports the
/// rest (original lines kept as they were). Falls back to [`own_diff_check`] when no `git`
/// program can be run.
///
/// Errors: [`Error::Store`] listing the problems.
fn git_diff_check(dir: &Path, from: &str, to: &str, plan: &Plan) -> Result<String> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "core.quotepath=off",
            "diff",
            "--check",
            from,
            to,
            "--",
        ])
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output();
    let Ok(out) = out else {
        let bad = own_diff_check(plan);
        if !bad.is_empty() {
            return Err(Error::Store(format!(
                "whitespace check: {}",
                bad.join("; ")
            )));
        }
        return Ok(
            "git diff --check: no git program; the written files were checked instead: clean"
                .into(),
        );
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    if out.status.success() {
        return Ok(format!(
            "git diff --check {}..{}: clean",
            &from[..10.min(from.len())],
            &to[..10.min(to.len())]
        ));
    }
    let originals: HashSet<&str> = plan.originals.values().flat_map(|t| t.lines()).collect();
    let lines: Vec<&str> = stdout.lines().collect();
    let (mut kept, mut bad) = (0usize, Vec::new());
    let mut i = 0;
    while i < lines.len() {
        let head = lines[i];
        let body = lines.get(i + 1).and_then(|l| l.strip_prefix('+'));
        i += if body.is_some() { 2 } else { 1 };
        let eof_ok = || {
            // "new blank line at EOF": fine when the file ends with an original line that
            // is only whitespace (kept as it was), never for an empty line the tidy added.
            let file = head.split(':').next().unwrap_or("");
            plan.outputs.get(file).is_some_and(|t| {
                t.lines()
                    .last()
                    .is_some_and(|l| !l.is_empty() && originals.contains(l))
            })
        };
        if head.contains("conflict marker") {
            bad.push(head.to_string());
        } else if head.contains("blank line at EOF") {
            if eof_ok() {
                kept += 1;
            } else {
                bad.push(head.to_string());
            }
        } else if body.is_some_and(|b| originals.contains(b)) {
            kept += 1;
        } else {
            bad.push(head.to_string());
        }
    }
    if lines.is_empty() {
        bad.push(format!(
            "git diff --check exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    if !bad.is_empty() {
        return Err(Error::Store(format!(
            "git diff --check: {}",
            bad.join("; ")
        )));
    }
    Ok(format!(
        "git diff --check {}..{}: {kept} whitespace finding(s), all on lines kept byte for byte from the original",
        &from[..10.min(from.len())],
        &to[..10.min(to.len())]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::replay_set;
    use crate::synth::RULES;

    fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut out = BTreeMap::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                if e.file_name() == ".git" {
                    continue;
                }
                let md = std::fs::symlink_metadata(e.path()).unwrap();
                if md.is_dir() {
                    stack.push(e.path());
                } else {
                    out.insert(e.path(), std::fs::read(e.path()).unwrap_or_default());
                }
            }
        }
        out
    }

    fn opts(dir: &Path, home: &Path) -> TidyOptions {
        TidyOptions {
            dir: dir.to_path_buf(),
            home: home.to_path_buf(),
            today: NaiveDate::from_ymd_opt(2026, 12, 1).unwrap(),
            budget: ArtifactBudget::default(),
            fail_after_writes: None,
        }
    }

    fn git_clean(dir: &Path) -> bool {
        let repo = git2::Repository::open(dir).unwrap();
        let mut so = git2::StatusOptions::new();
        so.include_untracked(true).recurse_untracked_dirs(true);
        repo.statuses(Some(&mut so)).unwrap().is_empty()
    }

    /// The bloated memory in all three layouts: plan changes no byte; apply leaves
    /// MEMORY.md within 150 lines / 15 KiB with every rule, every other line somewhere,
    /// a backup, and (for git folders) a clean status.
    #[test]
    fn bloated_memory_tidies_in_every_layout() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let cases = replay_set(tmp.path()).unwrap();
        // The Claude copy is also put under git, so both backup kinds run on foreign layouts.
        let claude = &cases[2].1;
        let (f, _) = (MemoryFolder::at(claude), ());
        git2::Repository::init(claude).unwrap();
        f.commit_all(
            &codex_free_memory::gate::approve_as_is(&f).unwrap(),
            "claude memory",
        )
        .unwrap();
        for (name, dir) in &cases {
            let before = snapshot(dir);
            let originals: BTreeMap<String, String> = [MEMORY_MD, SUMMARY_MD]
                .iter()
                .filter_map(|f| {
                    std::fs::read_to_string(dir.join(f))
                        .ok()
                        .map(|t| (f.to_string(), t))
                })
                .collect();
            let p = plan(&opts(dir, &home)).unwrap();
            assert!(p.over_budget.is_empty(), "{name}: {:?}", p.over_budget);
            assert!(p.render().contains("Plan only: nothing was changed."));
            assert_eq!(snapshot(dir), before, "{name}: --plan changed bytes");
            let is_git = own_repo(&std::fs::canonicalize(dir).unwrap()).is_some();
            let head_before = is_git.then(|| MemoryFolder::at(dir).head().unwrap().unwrap());
            let applied = apply(&opts(dir, &home)).unwrap();
            let mem = std::fs::read_to_string(dir.join(MEMORY_MD)).unwrap();
            assert!(
                mem.lines().count() <= 150 && mem.len() <= 15 * 1024,
                "{name}: {} lines {} bytes",
                mem.lines().count(),
                mem.len()
            );
            let loaded = loaded_lines(dir);
            for r in RULES {
                assert!(
                    loaded.contains(*r),
                    "{name}: rule left the loaded layer: {r}"
                );
            }
            assert!(
                mem.contains(LAYERS_LINE),
                "{name}: MEMORY.md says where history went"
            );
            let title = originals[MEMORY_MD].lines().next().unwrap();
            assert!(
                mem.starts_with(&format!("{title}\n")),
                "{name}: the title stays on top"
            );
            assert!(
                mem.contains(VERIFY_HEADING)
                    && mem.contains(Topic::Commit.check())
                    && mem.contains(Topic::Deploy.check()),
                "{name}"
            );
            assert!(
                !mem.contains("当前线上版本") && !mem.contains("is currently down"),
                "{name}: stale values stayed"
            );
            assert_eq!(
                missing_lines(dir, &originals).unwrap(),
                Vec::<String>::new(),
                "{name}"
            );
            assert!(dir.join(ARCHIVE_DIR).is_dir() && dir.join(DAILY_DIR).is_dir());
            assert!(applied.render().ends_with("Tidy applied and verified.\n"));
            if is_git {
                assert!(git_clean(dir), "{name}: git status not clean");
                let repo = git2::Repository::open(dir).unwrap();
                let head = repo.head().unwrap().peel_to_commit().unwrap();
                assert_eq!(
                    head.parent_id(0).unwrap(),
                    head_before.unwrap(),
                    "{name}: the backup is the parent commit"
                );
                assert!(
                    applied
                        .read_back
                        .iter()
                        .any(|r| r.contains("git status --short: clean"))
                );
                assert!(
                    applied
                        .read_back
                        .iter()
                        .any(|r| r.starts_with("git diff --stat"))
                );
            } else {
                let backups: Vec<_> = std::fs::read_dir(home.join("backups"))
                    .unwrap()
                    .flatten()
                    .collect();
                let b = backups.last().unwrap().path();
                assert_eq!(
                    std::fs::read_to_string(b.join(MEMORY_MD)).unwrap(),
                    originals[MEMORY_MD],
                    "{name}: backup copy"
                );
                assert!(
                    std::fs::read_to_string(b.join("MANIFEST.txt"))
                        .unwrap()
                        .contains("created by the tidy: archive/")
                );
            }
            // A second tidy has nothing left to move out and still loses nothing.
            let again = plan(&opts(dir, &home)).unwrap();
            assert!(
                again
                    .moves
                    .iter()
                    .all(|m| m.dest == Dest::Stay || matches!(m.dest, Dest::Duplicate { .. })),
                "{name}: {}",
                again
                    .render()
                    .lines()
                    .filter(|l| !l.contains(": stays"))
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
    }

    /// Lines of `MEMORY.md` and of the topic files it indexes.
    fn loaded_lines(dir: &Path) -> HashSet<String> {
        let mem = std::fs::read_to_string(dir.join(MEMORY_MD)).unwrap();
        let mut out: HashSet<String> = mem.lines().map(str::to_string).collect();
        if let Ok(rd) = std::fs::read_dir(dir.join(TOPICS_DIR)) {
            for e in rd.flatten() {
                let name = format!("{TOPICS_DIR}/{}", e.file_name().to_string_lossy());
                assert!(mem.contains(&format!("]({name})")), "{name} is not indexed");
                out.extend(
                    std::fs::read_to_string(e.path())
                        .unwrap()
                        .lines()
                        .map(str::to_string),
                );
            }
        }
        out
    }

    fn git_folder(text: &str) -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("mem");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join(MEMORY_MD), text).unwrap();
        let f = MemoryFolder::init_at(&dir).unwrap();
        f.commit_all(
            &codex_free_memory::gate::approve_as_is(&f).unwrap(),
            "start",
        )
        .unwrap();
        (tmp, dir)
    }

    /// Finding: durable rules without a rule word were archived, and ten preferences that
    /// differ in one value were treated as near duplicates (9 of 10 archived).
    #[test]
    fn durable_rules_stay_and_rules_that_differ_in_a_value_merge() {
        let durable = [
            "- 本项目是**工作流生成器**,不是MODSDK项目",
            "- Docker-first testing — No local ROS2 fallback",
            "- Adopted Bun over npm",
            "- File Size Limit <500 LOC",
            "- No secrets committed; env vars in .env.* only",
            "- **Git工作流**: commit后自动push",
            "- trash > rm",
        ];
        let mut text = String::from("# Memory\n\n## Rules\n\n");
        for d in durable {
            text.push_str(d);
            text.push('\n');
        }
        for n in 1..=10 {
            text.push_str(&format!("- Always use pnpm, never npm, in repo {n}\n"));
        }
        text.push_str("- 2026-03-04: moved the cache to Redis\n");
        let (tmp, dir) = git_folder(&text);
        apply(&opts(&dir, &tmp.path().join("home"))).unwrap();
        let mem = std::fs::read_to_string(dir.join(MEMORY_MD)).unwrap();
        for d in durable {
            assert!(
                mem.lines().any(|l| l == d),
                "archived a durable rule: {d}\n{mem}"
            );
        }
        assert!(
            mem.contains("- Always use pnpm, never npm, in repo {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}"),
            "{mem}"
        );
        assert!(!mem.contains("in repo 3\n"), "{mem}");
        let archive =
            std::fs::read_to_string(dir.join(ARCHIVE_DIR).join("MEMORY-2026-12-01.md")).unwrap();
        for n in 1..=10 {
            assert!(
                archive.contains(&format!("in repo {n}\n")),
                "original {n} kept: {archive}"
            );
        }
        assert!(!mem.contains("moved the cache"), "{mem}");
        assert!(dir.join(DAILY_DIR).join("2026-03-04.md").is_file());
    }

    /// Finding: trailing double spaces (Markdown hard breaks) were stripped, an 8-space code
    /// line was dropped as a duplicate of a 4-space one, and MEMORY.md went from 644 to 600.
    #[test]
    fn a_tidy_is_byte_exact_and_keeps_modes() {
        use std::os::unix::fs::PermissionsExt;
        let text = "# Memory\n\n## Conventions\n\nRead the spec first.  \nThen ask.\n\n- Status: ✅ done with the migration  \n- Keep PRs small.  \n\n```rust\nfn main() {\n    call();\n        call();\n}\n```\n";
        for git in [false, true] {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path().join("mem");
            std::fs::create_dir(&dir).unwrap();
            std::fs::write(dir.join(MEMORY_MD), text).unwrap();
            std::fs::set_permissions(dir.join(MEMORY_MD), std::fs::Permissions::from_mode(0o644))
                .unwrap();
            if git {
                let f = MemoryFolder::init_at(&dir).unwrap();
                f.commit_all(
                    &codex_free_memory::gate::approve_as_is(&f).unwrap(),
                    "start",
                )
                .unwrap();
            }
            let applied = apply(&opts(&dir, &tmp.path().join("home"))).unwrap();
            let mut all = String::new();
            for f in [MEMORY_MD, "archive/MEMORY-2026-12-01.md"] {
                let p = dir.join(f);
                let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
                assert_eq!(mode, 0o644, "git={git} {f}: mode {mode:o}");
                all.push_str(&std::fs::read_to_string(p).unwrap());
            }
            let have: HashSet<&str> = all.lines().collect();
            for l in text.lines() {
                assert!(have.contains(l), "git={git}: lost {l:?}\n{all}");
            }
            let mem = std::fs::read_to_string(dir.join(MEMORY_MD)).unwrap();
            assert!(mem.contains("Read the spec first.  \nThen ask.\n"), "{mem}");
            assert!(mem.contains("    call();\n        call();\n"), "{mem}");
            assert!(!mem.contains("migration"), "{mem}");
            if git {
                assert!(
                    applied
                        .read_back
                        .iter()
                        .any(|r| r.starts_with("git diff --check")),
                    "{:?}",
                    applied.read_back
                );
            }
        }
    }

    /// Finding: with conflict markers committed in MEMORY.md, --apply moved them to archive/
    /// and claimed "git diff --check: no whitespace errors"; --plan said nothing of them.
    #[test]
    fn conflict_markers_are_reported_by_plan_and_refused_by_apply() {
        let text = "# Memory\n\n- Keep PRs small.\n<<<<<<< HEAD\n- Use pnpm.\n=======\n- Use yarn.\n>>>>>>> other\n- 2026-03-04: moved the cache to Redis\n";
        let (tmp, dir) = git_folder(text);
        let home = tmp.path().join("home");
        let p = plan(&opts(&dir, &home)).unwrap();
        assert!(
            p.render().contains(
                "--apply would refuse: MEMORY.md has git conflict markers on line(s) 4, 6, 8"
            ),
            "{}",
            p.render()
        );
        let before = snapshot(&dir);
        let e = apply(&opts(&dir, &home)).unwrap_err().to_string();
        assert!(e.contains("resolve the merge first"), "{e}");
        assert_eq!(snapshot(&dir), before);
        let lint = crate::lint::lint(
            &[crate::lint::Source {
                name: MEMORY_MD.into(),
                path: dir.join(MEMORY_MD),
                text: text.into(),
            }],
            &[],
            &ArtifactBudget::default(),
            crate::lint::Checks { all: true },
        );
        assert_eq!(
            lint.count(crate::lint::Kind::ConflictMarker),
            3,
            "{}",
            lint.render()
        );
        assert!(lint.has_errors());
    }

    /// Finding: --plan did not mention a git operation in progress.
    #[test]
    fn plan_names_a_merge_in_progress() {
        let (_tmp, dir) = git_folder("# Memory\n\n- 2026-03-04: moved the cache to Redis\n");
        let repo = git2::Repository::open(&dir).unwrap();
        let head = repo.head().unwrap().target().unwrap();
        std::fs::write(repo.path().join("MERGE_HEAD"), format!("{head}\n")).unwrap();
        let p = plan(&opts(&dir, dir.parent().unwrap())).unwrap();
        assert!(
            p.blockers
                .iter()
                .any(|b| b.contains("middle of an operation")),
            "{:?}",
            p.blockers
        );
        assert!(p.render().contains("--apply would refuse:"));
    }

    /// Finding: a lead-in line stayed while its list was archived, and an undated TODO was
    /// filed under today's date.
    #[test]
    fn a_lead_in_keeps_its_list_and_an_undated_todo_is_not_filed_under_today() {
        let text = "# Memory\n\n## 发版\n\n修改版本号时**必须**同步更新以下3个位置：\n- `package.json`\n- `src-tauri/tauri.conf.json`\n- `docs/install.md`\n\n## Next steps\n\n- [ ] write the migration guide\n";
        let (tmp, dir) = git_folder(text);
        apply(&opts(&dir, &tmp.path().join("home"))).unwrap();
        let mem = std::fs::read_to_string(dir.join(MEMORY_MD)).unwrap();
        assert!(
            mem.contains("修改版本号时**必须**同步更新以下3个位置：\n- `package.json`\n- `src-tauri/tauri.conf.json`\n- `docs/install.md`\n"),
            "{mem}"
        );
        assert!(!mem.contains("migration guide"), "{mem}");
        assert!(
            !dir.join(DAILY_DIR).join("2026-12-01.md").exists(),
            "filed under today"
        );
        let archive =
            std::fs::read_to_string(dir.join(ARCHIVE_DIR).join("MEMORY-2026-12-01.md")).unwrap();
        assert!(
            archive.contains("## Next steps\n\n- [ ] write the migration guide\n"),
            "{archive}"
        );
    }

    /// Finding: a real bloated memory (its durable part alone over budget) was refused
    /// ("move or merge rules by hand"); it is laid out into indexed topic files instead.
    #[test]
    fn an_over_budget_durable_memory_is_laid_out_into_topic_files() {
        let mut text = String::from(
            "# Memory\n\n## Core rules\n\n- Never force-push to main.\n- Always run the tests before committing.\n",
        );
        for s in 0..8 {
            text.push_str(&format!("\n## Module {s} reference\n\n"));
            for k in 0..40 {
                text.push_str(&format!(
                    "- `src/mod{s}/file{k}.rs` holds the {k}th handler of module {s}, wired through the router table.\n"
                ));
            }
        }
        let (tmp, dir) = git_folder(&text);
        let home = tmp.path().join("home");
        let p = plan(&opts(&dir, &home)).unwrap();
        assert!(p.over_budget.is_empty(), "{:?}", p.over_budget);
        assert!(!p.topics.is_empty());
        apply(&opts(&dir, &home)).unwrap();
        let mem = std::fs::read_to_string(dir.join(MEMORY_MD)).unwrap();
        assert!(
            mem.lines().count() <= 150 && mem.len() <= 15 * 1024,
            "{}",
            mem.len()
        );
        assert!(
            mem.contains("- Never force-push to main.\n"),
            "rules stay in MEMORY.md: {mem}"
        );
        assert!(mem.contains(TOPICS_HEADING), "{mem}");
        let loaded = loaded_lines(&dir);
        for l in text.lines().filter(|l| !l.is_empty()) {
            assert!(loaded.contains(l), "not loaded: {l}");
        }
    }

    #[test]
    fn refuses_while_phase_2_runs_on_the_state_home_folder() {
        let home = tempfile::tempdir().unwrap();
        let dir = crate::default_folder(home.path());
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(MEMORY_MD),
            "- Never do X.\n- 2025-01-01: done the thing\n",
        )
        .unwrap();
        let store = codex_free_store::Store::open_in_home(home.path()).unwrap();
        assert!(matches!(
            store.claim_phase2("w", 3600, true).unwrap(),
            codex_free_store::phase2::Claim::Claimed { .. }
        ));
        let before = snapshot(&dir);
        let e = apply(&opts(&dir, home.path())).unwrap_err().to_string();
        assert!(e.contains("phase-2 consolidation is running"), "{e}");
        assert_eq!(snapshot(&dir), before);
    }

    #[test]
    fn a_failed_write_restores_everything() {
        for git in [false, true] {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path().join("mem");
            std::fs::create_dir(&dir).unwrap();
            let b = crate::synth::bloated(7);
            std::fs::write(dir.join(MEMORY_MD), &b.memory).unwrap();
            std::fs::create_dir(dir.join(ARCHIVE_DIR)).unwrap();
            std::fs::write(dir.join(ARCHIVE_DIR).join("old.md"), "# old evidence\n").unwrap();
            if git {
                git2::Repository::init(&dir).unwrap();
                MemoryFolder::at(&dir)
                    .commit_all(
                        &codex_free_memory::gate::approve_as_is(&MemoryFolder::at(&dir)).unwrap(),
                        "start",
                    )
                    .unwrap();
            }
            let before = snapshot(&dir);
            for after in [0, 3, 50] {
                let mut o = opts(&dir, &tmp.path().join("home"));
                o.fail_after_writes = Some(after);
                let e = apply(&o).unwrap_err().to_string();
                if after < plan(&o).unwrap().outputs.len() {
                    assert!(
                        e.contains("tidy failed and was undone") && e.contains("simulated failure"),
                        "{e}"
                    );
                    assert_eq!(
                        snapshot(&dir),
                        before,
                        "git={git} after={after}: not restored"
                    );
                    if git {
                        assert!(git_clean(&dir));
                    }
                }
            }
        }
    }

    #[test]
    fn bad_input_is_refused_naming_the_file_and_nothing_changes() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let dir = tmp.path().join("mem");
        std::fs::create_dir(&dir).unwrap();
        let check = |dir: &Path, want: &str| {
            let before = snapshot(dir);
            let e = apply(&opts(dir, &home)).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
            assert_eq!(snapshot(dir), before);
            e
        };
        // Not UTF-8.
        std::fs::write(dir.join(MEMORY_MD), b"- ok\n- \xff\xfe broken\n").unwrap();
        let e = check(&dir, "not UTF-8");
        assert!(e.contains("MEMORY.md"), "{e}");
        // Huge.
        std::fs::write(
            dir.join(MEMORY_MD),
            vec![b'x'; (crate::MAX_FILE_BYTES + 1) as usize],
        )
        .unwrap();
        check(&dir, "a memory file may be at most");
        // A link to a file outside the folder.
        let outside = tmp.path().join("outside.md");
        std::fs::write(&outside, "- Never do X.\n- 2025-01-01: done\n").unwrap();
        std::fs::remove_file(dir.join(MEMORY_MD)).unwrap();
        std::os::unix::fs::symlink(&outside, dir.join(MEMORY_MD)).unwrap();
        let e = check(&dir, "outside the memory folder");
        assert!(e.contains("MEMORY.md"), "{e}");
        assert_eq!(
            std::fs::read_to_string(&outside).unwrap(),
            "- Never do X.\n- 2025-01-01: done\n"
        );
        // A destination folder linked outside.
        std::fs::remove_file(dir.join(MEMORY_MD)).unwrap();
        std::fs::write(
            dir.join(MEMORY_MD),
            "- Never do X.\n- 2025-01-01: done with the release\n",
        )
        .unwrap();
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, dir.join(ARCHIVE_DIR)).unwrap();
        check(&dir, "archive");
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
        std::fs::remove_file(dir.join(ARCHIVE_DIR)).unwrap();
        // A git repository in the middle of a merge.
        let repo = git2::Repository::init(&dir).unwrap();
        MemoryFolder::at(&dir)
            .commit_all(
                &codex_free_memory::gate::approve_as_is(&MemoryFolder::at(&dir)).unwrap(),
                "start",
            )
            .unwrap();
        let head = repo.head().unwrap().target().unwrap();
        std::fs::write(repo.path().join("MERGE_HEAD"), format!("{head}\n")).unwrap();
        check(&dir, "middle of an operation");
        std::fs::remove_file(repo.path().join("MERGE_HEAD")).unwrap();
        // A destination that cannot be written (a file where the folder must go): the
        // writes stop and the backup is restored.
        std::fs::write(dir.join(DAILY_DIR), "not a folder\n").unwrap();
        let f = MemoryFolder::at(&dir);
        f.commit_all(
            &codex_free_memory::gate::approve_as_is(&f).unwrap(),
            "daily is a file",
        )
        .unwrap();
        check(&dir, "undone");
        // A folder this user cannot write (root writes anyway, so only checked as a user).
        std::fs::remove_file(dir.join(DAILY_DIR)).unwrap();
        MemoryFolder::at(&dir)
            .commit_all(
                &codex_free_memory::gate::approve_as_is(&MemoryFolder::at(&dir)).unwrap(),
                "clean",
            )
            .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555)).unwrap();
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            check(&dir, "not writable");
        }
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}
