//! `codex-free memories tidy --plan | --apply`: move what does not belong in the
//! default-load layer (`MEMORY.md`, `memory_summary.md`) to the layer where it does, by
//! rules and without a model.
//!
//! Each content line gets one destination ([`Dest`]), decided in this order: an exact
//! copy of an earlier line is dropped (the first copy stays, so the distinct line
//! survives); a stale fact goes to `archive/` and `MEMORY.md` gains the matching "verify at
//! task start" check instead of the value; a check to run live, a rule (preference,
//! boundary, principle) or a link to a file of the folder stays, unless it nearly repeats a
//! line that stays; progress goes to `daily/YYYY-MM-DD.md` (the line's date, else its
//! section's, else today); everything else — evidence and neutral facts, which fail the
//! keep test — goes to `archive/`. Headings travel with their lines.
//!
//! `--apply` works in this order and stops at the first failure: checks (every file
//! readable UTF-8 under [`super::MAX_FILE_BYTES`], no link out of the folder, the folder
//! writable, a git repository not mid-merge, no consolidation running on the state home's
//! folder, the result within the budgets, every line
//! placed) → backup (a git commit when the folder is a repository's work tree, else a copy
//! under `<home>/backups/`) → writes (destinations first, `MEMORY.md` last, each atomic) →
//! commit → read-back (`git status --short` clean, `git diff --stat`, `git diff --check`,
//! budgets, every distinct line before still in some file). Any failure after the backup
//! restores it and is reported as a failure.
//!
//! Invariant: `plan` never writes; `apply` never deletes a distinct line and never reports
//! success before the read-back passed.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use chrono::NaiveDate;
use serde::Serialize;

use super::text::{self, Topic, is_heading, is_structural};
use super::{ARCHIVE_DIR, DAILY_DIR, VERIFY_HEADING, check_inside, read_memory_file};
use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::error::IoContext;
use codex_free_memory::budget::{self, ArtifactBudget};
use codex_free_memory::folder::{MEMORY_MD, MemoryFolder, SUMMARY_MD};

/// The pointer `MEMORY.md` gains when a tidy moves lines out of it.
pub const LAYERS_LINE: &str = "- History is not loaded: progress is in daily/YYYY-MM-DD.md, evidence (incidents, releases, old snapshots) in archive/; find it with memories_search.";

/// Where one line goes.
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
    /// Dropped: the identical line stays at `kept_at` (1-based, same file).
    Duplicate {
        /// Line of the copy that is kept.
        kept_at: usize,
    },
}

/// One line of the plan.
#[derive(Debug, Clone, Serialize)]
pub struct Move {
    /// `MEMORY.md` or `memory_summary.md`.
    pub file: String,
    /// 1-based line number.
    pub line: usize,
    /// The line.
    pub text: String,
    /// Where it goes.
    pub dest: Dest,
    /// Why, in a few words.
    pub reason: String,
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
    /// Every content line with its destination, in file order.
    pub moves: Vec<Move>,
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

    /// The plan as text: one line per content line (`file:line -> destination (reason)`),
    /// then the checks added, the files written and the projected sizes.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let today = self.archive_name(MEMORY_MD);
        for m in &self.moves {
            let to = match &m.dest {
                Dest::Stay => "stays".to_string(),
                Dest::Daily { date } => format!("-> {DAILY_DIR}/{date}.md"),
                Dest::Archive { check: None } => format!(
                    "-> {}",
                    if m.file == MEMORY_MD {
                        today.clone()
                    } else {
                        self.archive_name(SUMMARY_MD)
                    }
                ),
                Dest::Archive { check: Some(t) } => format!(
                    "-> {} + verify at task start: {}",
                    if m.file == MEMORY_MD {
                        today.clone()
                    } else {
                        self.archive_name(SUMMARY_MD)
                    },
                    t.check().trim_start_matches("- ")
                ),
                Dest::Duplicate { kept_at } => {
                    format!("dropped: identical to line {kept_at}, which is kept")
                }
            };
            let _ = writeln!(
                s,
                "{}:{}: {to}  [{}]  {}",
                m.file,
                m.line,
                m.reason,
                clip(&m.text, 100)
            );
        }
        let count = |f: &dyn Fn(&Dest) -> bool| self.moves.iter().filter(|m| f(&m.dest)).count();
        let _ = writeln!(
            s,
            "\nLines: {} stay, {} to {DAILY_DIR}/, {} to {ARCHIVE_DIR}/ ({} stale facts replaced by checks), {} exact duplicates dropped.",
            count(&|d| *d == Dest::Stay),
            count(&|d| matches!(d, Dest::Daily { .. })),
            count(&|d| matches!(d, Dest::Archive { .. })),
            count(&|d| matches!(d, Dest::Archive { check: Some(_) })),
            count(&|d| matches!(d, Dest::Duplicate { .. })),
        );
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
    /// The day used for undated progress and archive file names.
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
    /// Print, line by line, what would move where; change nothing.
    #[arg(long)]
    pub plan: bool,
    /// Back up, move the lines, commit and verify with a read-back.
    #[arg(long)]
    pub apply: bool,
}

struct Section {
    heading: Option<String>,
    lines: Vec<(usize, String, Dest, String)>,
}

fn date_of(s: &str) -> Option<String> {
    let re = regex::Regex::new(r"\b(\d{4})-(\d{2})-(\d{2})\b").ok()?;
    let c = re.captures(s)?;
    let d = format!("{}-{}-{}", &c[1], &c[2], &c[3]);
    NaiveDate::parse_from_str(&d, "%Y-%m-%d").ok()?;
    Some(d)
}

/// True for a line that links a file present in the folder (an index line of a Claude
/// auto-memory `MEMORY.md`).
fn links_existing_file(dir: &Path, line: &str) -> bool {
    static L: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\]\(([^)\s#]+)\)").expect("regex"));
    L.captures_iter(line).any(|c| {
        let t = &c[1];
        !t.contains("://") && !t.contains("..") && dir.join(t).is_file()
    })
}

/// A preference stated without a rule word: an imperative opening ("Use …", "Run …") or a
/// statement about how the user works.
fn is_preference(line: &str) -> bool {
    static P: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)^(?:use|run|keep|write|ask|put|follow|read|answer|reply|name|format|commit|review|test|support)\b|^(?:the\s+)?user\s+(?:prefers|wants|likes|expects|works|writes|reviews|uses|asks|reads)\b|^用户|偏好|^用|^使用|^代码|^提交信息").expect("regex")
    });
    P.is_match(text::strip_bullet(line))
}

/// Classify one file's lines into sections with destinations. `lenient` (the summary,
/// which restates MEMORY.md on purpose): lines that are not stale, progress or evidence stay.
fn classify(
    dir: &Path,
    lenient: bool,
    body: &str,
    today: &str,
    kept_shingles: &mut Vec<Vec<u64>>,
) -> Vec<Section> {
    let mut sections = vec![Section {
        heading: None,
        lines: Vec::new(),
    }];
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut fence = false;
    let mut section_date: Option<String> = None;
    for (i, raw) in body.lines().enumerate() {
        let n = i + 1;
        let l = raw.trim_end().to_string();
        let t = l.trim();
        if t.starts_with("```") || t.starts_with("~~~") {
            fence = !fence;
            push_line(
                &mut sections,
                n,
                l,
                Dest::Archive { check: None },
                "code block: evidence",
            );
            continue;
        }
        if fence {
            push_line(
                &mut sections,
                n,
                l,
                Dest::Archive { check: None },
                "code block: evidence",
            );
            continue;
        }
        if !fence && is_heading(&l) {
            section_date = date_of(&l);
            sections.push(Section {
                heading: Some(l),
                lines: Vec::new(),
            });
            continue;
        }
        if t.is_empty() {
            continue;
        }
        if is_structural(&l) && t != "v1" {
            push_line(
                &mut sections,
                n,
                l,
                Dest::Archive { check: None },
                "formatting",
            );
            continue;
        }
        if t == "v1" {
            push_line(&mut sections, n, l, Dest::Stay, "summary version line");
            continue;
        }
        if let Some(first) = seen.get(t) {
            let kept_at = *first;
            push_line(
                &mut sections,
                n,
                l,
                Dest::Duplicate { kept_at },
                "exact duplicate",
            );
            continue;
        }
        seen.insert(t.to_string(), n);
        let in_verify = sections
            .last()
            .and_then(|s| s.heading.as_deref())
            .is_some_and(|h| h.trim() == VERIFY_HEADING);
        let (dest, reason) = if text::is_log_entry(&l) && !text::is_rule(&l) {
            // A dated or ticked log entry is history, not a live fact: it goes to its day.
            let date = date_of(&l)
                .or(section_date.clone())
                .unwrap_or_else(|| today.to_string());
            (Dest::Daily { date }, "progress log entry".to_string())
        } else if let Some(s) = text::stale(&l) {
            (
                Dest::Archive {
                    check: Some(s.topic),
                },
                format!("stale: {}", s.evidence),
            )
        } else if t == LAYERS_LINE {
            (Dest::Stay, "pointer to the layers".to_string())
        } else if in_verify || text::is_verify(&l) {
            (Dest::Stay, "check to run live".to_string())
        } else if text::is_rule(&l) || is_preference(&l) || links_existing_file(dir, &l) {
            let sh = text::shingles(&l);
            if kept_shingles
                .iter()
                .any(|k| text::jaccard(k, &sh) >= super::lint::NEAR_DUPLICATE)
            {
                (
                    Dest::Archive { check: None },
                    "near duplicate of a kept rule".to_string(),
                )
            } else {
                kept_shingles.push(sh);
                (
                    Dest::Stay,
                    if links_existing_file(dir, &l) {
                        "index link".into()
                    } else {
                        "rule or preference".into()
                    },
                )
            }
        } else if text::is_progress(&l) {
            let date = date_of(&l)
                .or(section_date.clone())
                .unwrap_or_else(|| today.to_string());
            (Dest::Daily { date }, "progress".to_string())
        } else if text::is_evidence(&l) {
            (Dest::Archive { check: None }, "evidence".to_string())
        } else if lenient {
            (Dest::Stay, "summary line".to_string())
        } else {
            (
                Dest::Archive { check: None },
                "fails the keep test".to_string(),
            )
        };
        push_line(&mut sections, n, l, dest, &reason);
    }
    sections
}

fn push_line(sections: &mut [Section], n: usize, l: String, d: Dest, reason: &str) {
    if let Some(s) = sections.last_mut() {
        s.lines.push((n, l, d, reason.to_string()));
    }
}

/// Text of a destination made of `sections`' lines that satisfy `pick`, headings included.
fn render_part(sections: &[Section], pick: &dyn Fn(&Dest) -> bool) -> String {
    render_part_keeping(sections, pick, &|_| false)
}

/// [`render_part`], also keeping the headings `keep` names when nothing stays under them
/// (the summary's required sections: a summary without them cannot be served).
fn render_part_keeping(
    sections: &[Section],
    pick: &dyn Fn(&Dest) -> bool,
    keep: &dyn Fn(&str) -> bool,
) -> String {
    let mut out = String::new();
    for s in sections {
        let lines: Vec<&String> = s
            .lines
            .iter()
            .filter(|x| pick(&x.2))
            .map(|x| &x.1)
            .collect();
        if lines.is_empty() && !s.heading.as_deref().is_some_and(|h| keep(h.trim())) {
            continue;
        }
        if let Some(h) = &s.heading {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(h);
            // A kept empty heading gets no blank line of its own (none at the end of file).
            out.push_str(if lines.is_empty() { "\n" } else { "\n\n" });
        }
        for l in lines {
            out.push_str(l);
            out.push('\n');
        }
    }
    out
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

/// Build the plan for `opts.dir`. Reads only.
///
/// Errors (each naming the file): no `MEMORY.md`; a memory file that is not UTF-8, too big,
/// or a link out of the folder; a destination (`daily/`, `archive/` or a file in them) that
/// is a link out of the folder.
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
    for d in [DAILY_DIR, ARCHIVE_DIR] {
        check_inside(Some(&dir), &dir.join(d))?;
    }

    let mut kept = Vec::new();
    let mem_sections = classify(&dir, false, &memory, &today, &mut kept);
    // The summary restates MEMORY.md on purpose: only its stale facts, progress, evidence
    // and repeats within itself move.
    let sum_sections = summary
        .as_deref()
        .map(|s| classify(&dir, true, s, &today, &mut Vec::new()));

    let mut moves = Vec::new();
    let mut topics: BTreeSet<Topic> = BTreeSet::new();
    for (file, secs) in [
        (MEMORY_MD, Some(&mem_sections)),
        (SUMMARY_MD, sum_sections.as_ref()),
    ] {
        let Some(secs) = secs else { continue };
        for s in secs {
            for (n, l, d, why) in &s.lines {
                if let Dest::Archive { check: Some(t) } = d {
                    topics.insert(*t);
                }
                moves.push(Move {
                    file: file.into(),
                    line: *n,
                    text: l.clone(),
                    dest: d.clone(),
                    reason: why.clone(),
                });
            }
        }
    }
    moves.sort_by_key(|m| (m.file != MEMORY_MD, m.line));

    // MEMORY.md: the kept lines, then the verify section (existing checks + new ones).
    let stay = |d: &Dest| *d == Dest::Stay;
    let (verify_secs, other_secs): (Vec<&Section>, Vec<&Section>) = mem_sections
        .iter()
        .partition(|s| s.heading.as_deref().map(str::trim) == Some(VERIFY_HEADING));
    let mut new_memory = render_part(
        &other_secs
            .into_iter()
            .map(clone_section)
            .collect::<Vec<_>>(),
        &stay,
    );
    let mut verify_lines: Vec<String> = verify_secs
        .iter()
        .flat_map(|s| s.lines.iter().filter(|x| stay(&x.2)).map(|x| x.1.clone()))
        .collect();
    let present: HashSet<String> = memory.lines().map(|l| l.trim().to_string()).collect();
    let mut checks_added = Vec::new();
    for t in &topics {
        let c = t.check().to_string();
        if !present.contains(&c) && !verify_lines.contains(&c) {
            checks_added.push(c.clone());
            verify_lines.push(c);
        }
    }
    // The file's title (a first-line `# …` heading) stays on top, followed by where the
    // moved history now is, so a session knows to search instead of guessing.
    let moves_out = mem_sections
        .iter()
        .flat_map(|s| s.lines.iter())
        .any(|x| matches!(x.2, Dest::Daily { .. } | Dest::Archive { .. }));
    let mut head = String::new();
    if let Some(first) = memory.lines().next().filter(|l| l.starts_with("# ")) {
        let first = first.trim_end();
        if let Some(rest) = new_memory.strip_prefix(&format!("{first}\n")) {
            new_memory = rest.trim_start_matches('\n').to_string();
        }
        if !new_memory.lines().any(|l| l == first) {
            head.push_str(first);
            head.push_str("\n\n");
        }
    }
    if moves_out && !present.contains(LAYERS_LINE) && !new_memory.contains(LAYERS_LINE) {
        head.push_str(LAYERS_LINE);
        head.push_str("\n\n");
    }
    if !head.is_empty() {
        new_memory = head + &new_memory;
    }
    let had_verify_heading = !verify_secs.is_empty();
    if !verify_lines.is_empty() || had_verify_heading {
        if !new_memory.is_empty() {
            new_memory.push('\n');
        }
        new_memory.push_str(VERIFY_HEADING);
        new_memory.push_str("\n\n");
        for l in &verify_lines {
            new_memory.push_str(l);
            new_memory.push('\n');
        }
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
        let mut t = base.trim_end().to_string();
        t.push_str("\n\n");
        t.push_str(&note);
        t.push_str("\n\n");
        t.push_str(part.trim_end());
        t.push('\n');
        outputs.insert(rel, t);
        Ok(())
    };
    for (file, secs) in [
        (MEMORY_MD, Some(&mem_sections)),
        (SUMMARY_MD, sum_sections.as_ref()),
    ] {
        let Some(secs) = secs else { continue };
        let stem = file.trim_end_matches(".md");
        let archived = render_part(secs, &|d| matches!(d, Dest::Archive { .. }));
        add_part(
            format!("{ARCHIVE_DIR}/{stem}-{today}.md"),
            format!("# Archived from {file} on {today}"),
            archived,
            &mut outputs,
        )?;
        let dates: BTreeSet<String> = secs
            .iter()
            .flat_map(|s| s.lines.iter())
            .filter_map(|x| match &x.2 {
                Dest::Daily { date } => Some(date.clone()),
                _ => None,
            })
            .collect();
        for date in dates {
            let part = render_part(
                secs,
                &|d| matches!(d, Dest::Daily { date: x } if *x == date),
            );
            add_part(
                format!("{DAILY_DIR}/{date}.md"),
                format!("# {date}"),
                part,
                &mut outputs,
            )?;
        }
    }
    // Headings whose lines all went elsewhere (or that had none) are kept in the archive so
    // that every distinct line survives.
    let mut placed: HashSet<String> = HashSet::new();
    for t in outputs.values().chain(std::iter::once(&new_memory)) {
        placed.extend(t.lines().map(|l| l.trim().to_string()));
    }
    let required = |h: &str| codex_free_memory::budget::SUMMARY_SECTIONS.contains(&h);
    let mut new_summary = sum_sections
        .as_ref()
        .map(|secs| render_part_keeping(secs, &stay, &required));
    if let Some(s) = &new_summary {
        placed.extend(s.lines().map(|l| l.trim().to_string()));
    }
    for (file, secs) in [
        (MEMORY_MD, Some(&mem_sections)),
        (SUMMARY_MD, sum_sections.as_ref()),
    ] {
        let Some(secs) = secs else { continue };
        let orphans: Vec<String> = secs
            .iter()
            .filter_map(|s| s.heading.clone())
            .filter(|h| !placed.contains(h.trim()))
            .collect();
        if !orphans.is_empty() {
            let stem = file.trim_end_matches(".md");
            let mut part = String::from("Headings without content that stays:\n\n");
            for h in orphans {
                placed.insert(h.trim().to_string());
                part.push_str(&h);
                part.push('\n');
            }
            add_part(
                format!("{ARCHIVE_DIR}/{stem}-{today}.md"),
                format!("# Archived from {file} on {today}"),
                part,
                &mut outputs,
            )?;
        }
    }
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
    outputs.insert(MEMORY_MD.to_string(), new_memory.clone());
    if let Some(s) = &new_summary {
        outputs.insert(SUMMARY_MD.to_string(), s.clone());
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
    .map(|p| format!("{MEMORY_MD}: {}", p.message))
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
    Ok(Plan {
        dir,
        moves,
        checks_added,
        outputs,
        existing,
        before,
        after,
        over_budget,
        originals,
    })
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

fn clone_section(s: &Section) -> Section {
    Section {
        heading: s.heading.clone(),
        lines: s.lines.clone(),
    }
}

/// Distinct lines of `originals` (trimmed, non-blank) missing from every Markdown file
/// under `dir` — the "nothing lost" read-back. Empty = nothing lost.
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
                have.extend(t.lines().map(|l| l.trim().to_string()));
            }
        }
    }
    let mut missing: Vec<String> = originals
        .values()
        .flat_map(|t| t.lines())
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty() && !have.contains(l))
        .collect();
    missing.sort();
    missing.dedup();
    Ok(missing)
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
    if let Some(repo) = own_repo(dir) {
        if let Some(st) = repo.operation_in_progress()? {
            return Err(Error::Refused(format!(
                "{} is a git repository in the middle of an operation ({st}); finish or abort it first; nothing was changed",
                dir.display()
            )));
        }
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
        have.extend(t.lines().map(str::trim));
    }
    let mut lost: Vec<String> = plan
        .originals
        .iter()
        .filter(|(k, _)| plan.outputs.contains_key(*k))
        .flat_map(|(_, t)| t.lines())
        .map(str::trim)
        .filter(|l| !l.is_empty() && !have.contains(l))
        .map(str::to_string)
        .collect();
    lost.dedup();
    lost
}

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
            let c = folder.commit_all(&approved, &msg)?;
            folder.verify_committed()?;
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
            read_back.push("git diff --check: no whitespace errors".into());
            c.map(|c| c.to_string())
        }
        Backup::Copy { .. } => {
            read_back.push("not a git work tree: verified by reading every file back".into());
            let ws: Vec<String> = plan
                .outputs
                .iter()
                .flat_map(|(k, v)| {
                    v.lines()
                        .enumerate()
                        .filter(|(_, l)| l.ends_with([' ', '\t']))
                        .map(move |(i, _)| format!("{k}:{}", i + 1))
                })
                .collect();
            if !ws.is_empty() {
                return Err(Error::Store(format!(
                    "trailing whitespace in {}",
                    ws.join(", ")
                )));
            }
            read_back.push("whitespace: no trailing whitespace in the written files".into());
            None
        }
    };
    Ok((commit, read_back))
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
            let lines: HashSet<&str> = mem.lines().collect();
            for r in RULES {
                assert!(lines.contains(r), "{name}: rule left MEMORY.md: {r}");
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
                again.render()
            );
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
