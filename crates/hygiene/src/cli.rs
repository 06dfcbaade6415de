//! Command-line arguments of the hygiene commands (`memories lint`, `memories tidy`,
//! `memories bench-hygiene`); the binary parses them, the library takes them as plain values.

use std::path::PathBuf;

/// Command-line arguments of `memories lint`.
#[derive(Debug, Clone, clap::Args)]
pub struct LintArgs {
    /// Print findings as JSON (`{files, findings: [{file, line, kind, severity, message, suggestion}]}`).
    #[arg(long)]
    pub json: bool,
    /// Project whose AGENTS.md / CLAUDE.md the memory must not contradict (default: the
    /// current directory).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Memory files or folders (a folder means its MEMORY.md and memory_summary.md; default:
    /// the state home's memory folder).
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// A memory folder to lint, as `memories tidy --dir` takes it (the same as giving the
    /// folder as FILE).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

impl LintArgs {
    /// The files and folders to lint: FILE arguments, then `--dir`.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.files.iter().cloned().chain(self.dir.clone()).collect()
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
    /// Ask the pipeline's cheap model (`memories.extract_model`) about the units the rules
    /// cannot decide: the estimated tokens and cost are printed before anything is sent;
    /// answers are cached, so a second run sends nothing. Without it, such units stay.
    #[arg(long, conflicts_with = "no_model")]
    pub model: bool,
    /// Rules only for this run, even with `memories.tidy_ask_model = true` (which makes
    /// `--model` the default).
    #[arg(long)]
    pub no_model: bool,
}

impl TidyArgs {
    /// Whether this run asks the model: `--model`, or the `memories.tidy_ask_model`
    /// setting (`ask_by_setting`) unless `--no-model`.
    pub fn asks_model(&self, ask_by_setting: bool) -> bool {
        self.model || (ask_by_setting && !self.no_model)
    }
}

/// Command-line arguments of `memories bench-hygiene`.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchHygieneArgs {
    /// Measure a copy of this memory folder instead of the shipped replay set.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Write the shipped bloated memory (MEMORY.md, memory_summary.md) into DIR and stop.
    #[arg(long, value_name = "DIR")]
    pub write_fixture: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Measure the labelled corpus of real memory files instead (each file tidied as the
    /// `MEMORY.md` of its own folder, both halves): durable lines kept loaded, stale lines
    /// moved out, bytes lost, modes. Without DIR, the corpus shipped in this repository.
    #[arg(long, value_name = "DIR", num_args = 0..=1, default_missing_value = crate::world::DEFAULT_DIR)]
    pub corpus: Option<PathBuf>,
}
