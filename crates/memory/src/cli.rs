//! The memory folder's command-line arguments (clap), kept apart from the folder's own
//! types: `memories history | diff | rollback` and `memories review`.

use crate::review::ReviewAction;

/// `codex-free memories history | diff [REV] | rollback REV` (mounted by the CLI).
#[derive(Debug, Clone, clap::Subcommand)]
pub enum MemoryHistoryCmd {
    /// List the memory folder's commits, newest first.
    History {
        /// Most commits to show.
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// Show what a commit changed (default: uncommitted changes, else the last commit).
    Diff {
        /// A commit id (or prefix) from `history`, or a git rev such as HEAD~1.
        rev: Option<String>,
    },
    /// Restore the memory folder as it was at REV, as a new commit (previous state kept in
    /// a backup ref). Refuses while a phase-2 job runs.
    Rollback {
        /// A commit id (or prefix) from `history`, or a git rev such as HEAD~1.
        rev: String,
    },
}

/// Arguments of `memories review`.
#[derive(Debug, Clone, clap::Args)]
pub struct ReviewArgs {
    /// accept | reject; without it, show the pending diff.
    pub action: Option<ReviewActionArg>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `memories review accept|reject` on the command line (mirrors [`ReviewAction`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReviewActionArg {
    /// Serve the pending consolidation from now on.
    Accept,
    /// Restore the last accepted state as a new commit.
    Reject,
}

impl From<ReviewActionArg> for ReviewAction {
    fn from(a: ReviewActionArg) -> Self {
        match a {
            ReviewActionArg::Accept => ReviewAction::Accept,
            ReviewActionArg::Reject => ReviewAction::Reject,
        }
    }
}
