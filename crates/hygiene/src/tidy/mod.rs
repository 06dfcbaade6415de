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

mod apply;
mod classify;
pub mod model;
mod plan;
mod render;
mod structure;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use chrono::NaiveDate;
use serde::Serialize;

use super::text::Topic;
use codex_free_memory::budget::ArtifactBudget;

pub use apply::{Applied, apply, missing_lines};
pub(crate) use apply::{mode_of, set_mode};
pub use model::{ModelReport, Verdict, unit_hash};
pub use plan::{loaded_text, plan};

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
    /// True when the rules could not decide the unit (some lines stale and some not, or a
    /// rule's form stale only by its section): it stays unless a model is asked.
    pub undecided: bool,
    /// The unit's content lines (what a model is shown for an undecided unit).
    pub body: String,
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
    /// What `--model` asked (or would ask) about the undecided units; `None` without it.
    pub model: Option<ModelReport>,
    /// The original texts (relative path → text), for the read-back.
    #[serde(skip)]
    pub originals: BTreeMap<String, String>,
}

impl Move {
    /// The unit's key for accepting it: `<file>:<first line>`.
    pub fn key(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

impl Plan {
    /// True when applying would change nothing.
    pub fn is_noop(&self) -> bool {
        self.outputs
            .iter()
            .all(|(k, v)| self.originals.get(k) == Some(v))
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
    /// Verdicts a model gave on undecided units, by [`unit_hash`] (from `tidy --model`);
    /// empty: every undecided unit stays.
    pub model_verdicts: BTreeMap<String, Verdict>,
    /// The units the user accepted, as [`Move::key`]s (`MEMORY.md:12`); every other unit
    /// stays. `None`: the whole plan.
    pub accept: Option<BTreeSet<String>>,
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
            model_verdicts: BTreeMap::new(),
            accept: None,
        }
    }
}
