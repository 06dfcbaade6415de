//! The proof a commit into the memory folder needs: an [`Approved`] names the exact tree
//! the gate checked, and only the gate ([`crate::gate`]) builds one (its constructor is
//! private to this crate), so no writer can commit a tree the checks have not seen — the
//! same guarantee `codex_free_models::Outgoing` gives for model requests.

use std::path::{Path, PathBuf};

use git2::Oid;

/// How much of the folder a commit's checks covered (decided by the gate's caller, written
/// into the commit's audit trail by the approval's `Debug`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// What the next session is served from (a consolidation's result): `MEMORY.md` and
    /// `memory_summary.md` must exist and pass every check.
    Served,
    /// Every file present passes; an artifact missing both at `HEAD` and in the working
    /// tree is not a problem (nothing is served without one): the first sync before any
    /// consolidation, the snapshot of hand edits before a consolidation, a tidy of the
    /// state home's folder, a rollback to before the first summary.
    Present,
    /// Checked for secrets only: a tidy's undo point (the user's state exactly as it was,
    /// possibly over budget — that is why one tidies; the tidy's own commit follows at once
    /// or the undo restores it) and tidies of folders that are not the state home's (their
    /// budgets are their owner's business, credentials never are).
    AsIs,
    /// A V2 consolidation's result (`<home>/memories_v2`): `memory_summary.md` must exist
    /// and be a valid V2 summary ([`crate::v2::artifact_problems`]: no `MEMORY.md`, no
    /// `raw_memories.md`, no link), no text file may hold a secret, and the changes must
    /// have no whitespace errors.
    V2Served,
}

/// A tree the gate checked, for one folder: pass it to
/// [`crate::folder::MemoryFolder::commit_all`] or `rollback`, which refuse it when the
/// folder's tree is no longer the one checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approved {
    root: PathBuf,
    tree: Oid,
    scope: Scope,
}

impl Approved {
    /// Only the gate calls this, after its checks passed on exactly `tree`.
    pub(crate) fn new(root: &Path, tree: Oid, scope: Scope) -> Self {
        Self {
            root: root.to_path_buf(),
            tree,
            scope,
        }
    }

    /// The checked tree.
    pub fn tree(&self) -> Oid {
        self.tree
    }

    /// What the checks covered.
    pub fn scope(&self) -> Scope {
        self.scope
    }

    /// The folder whose tree was checked.
    pub fn root(&self) -> &Path {
        &self.root
    }
}
