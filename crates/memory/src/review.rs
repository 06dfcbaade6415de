//! Review before use (`memories.review: true`): a new consolidation commit is *held*.
//! The folder's `HEAD` moves as usual (the next consolidation builds on it, sync pushes
//! it), but new sessions and the agents' linked copies keep the summary of the last
//! accepted commit until the user accepts the pending diff (`memories review accept`, the
//! UI's Memory page). Rejecting restores the accepted state as a new commit (history is
//! never rewritten).
//!
//! Two refs in the folder's repository carry the state: [`PENDING_REF`] (the last held
//! commit; present while something waits) and [`ACCEPTED_REF`] (the last accepted
//! commit; absent when nothing was accepted yet, so nothing is served).
//!
//! Invariant: while review is on and [`PENDING_REF`] exists, the served summary is the
//! blob of [`ACCEPTED_REF`]'s tree, never the working tree's.

use std::path::Path;

use git2::Oid;
use serde::Serialize;

use super::folder::{self, FileChange, MemoryFolder, git_err};
use codex_free_core::Error;
use codex_free_core::Result;

/// The last held (not yet accepted) commit.
pub const PENDING_REF: &str = "refs/codex-free/review/pending";
/// The last accepted commit, whose summary is served while something is pending.
pub const ACCEPTED_REF: &str = "refs/codex-free/review/accepted";
/// Most bytes of the pending diff shown (1 MiB): the whole diff of two summaries and a
/// MEMORY.md within budget is far smaller; the rest is for huge evidence syncs.
pub const MAX_REVIEW_DIFF_BYTES: usize = 1 << 20;

/// `memories review [accept|reject]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReviewAction {
    /// Serve the pending consolidation from now on.
    Accept,
    /// Restore the last accepted state as a new commit.
    Reject,
}

/// The review queue as the CLI and the UI show it.
#[derive(Debug, Clone, Serialize)]
pub struct ReviewState {
    /// `memories.review`.
    pub enabled: bool,
    /// A consolidation waits for review.
    pub pending: bool,
    /// The commit served now (`None`: nothing accepted yet, nothing served).
    pub accepted: Option<String>,
    /// The commit waiting (the folder's `HEAD`).
    pub head: Option<String>,
    /// Files changed between the accepted commit and `HEAD`.
    pub changes: Vec<FileChange>,
    /// Unified diff accepted → `HEAD`, cut at [`MAX_REVIEW_DIFF_BYTES`].
    pub patch: String,
    /// True when `patch` was cut.
    pub truncated: bool,
    /// What was done, for accept/reject (`None` for a plain look).
    pub done: Option<String>,
}

impl ReviewState {
    /// Plain-words text for the CLI.
    pub fn render(&self) -> String {
        let mut s = String::new();
        if let Some(d) = &self.done {
            s.push_str(d);
            s.push('\n');
            return s;
        }
        if !self.enabled {
            s.push_str(
                "review is off (memories.review: false): every consolidation is used at once\n",
            );
        }
        if !self.pending {
            s.push_str("nothing waits for review\n");
            return s;
        }
        s.push_str(&format!(
            "a consolidation waits for review: {} → {} ({} file(s)); new sessions get the accepted summary until `memories review accept`\n{}\n{}{}",
            self.accepted
                .as_deref()
                .map(|c| &c[..c.len().min(10)])
                .unwrap_or("(nothing accepted yet)"),
            self.head
                .as_deref()
                .map(|c| &c[..c.len().min(10)])
                .unwrap_or("?"),
            self.changes.len(),
            folder::change_lines(&self.changes),
            self.patch,
            if self.truncated {
                "(diff cut)\n"
            } else {
                ""
            }
        ));
        s
    }
}

fn ref_target(repo: &git2::Repository, name: &str) -> Option<Oid> {
    repo.find_reference(name).ok().and_then(|r| r.target())
}

/// Record that the commit just made (now `HEAD`) is held; `before` is the `HEAD` before it.
/// The first hold of a queue marks `before` as the accepted state (nothing accepted when
/// the folder had no commit).
///
/// Errors: git errors.
pub fn hold(f: &MemoryFolder, before: Option<Oid>) -> Result<()> {
    let repo = f.repo()?;
    let Some(head) = f.head()? else { return Ok(()) };
    if ref_target(&repo, PENDING_REF).is_none() {
        match before {
            Some(b) => {
                repo.reference(ACCEPTED_REF, b, true, "accepted before review")
                    .map_err(git_err("accepted ref"))?;
            }
            None => {
                if let Ok(mut r) = repo.find_reference(ACCEPTED_REF) {
                    r.delete().map_err(git_err("accepted ref"))?;
                }
            }
        }
    }
    repo.reference(PENDING_REF, head, true, "held for review")
        .map_err(git_err("pending ref"))?;
    Ok(())
}

/// The summary text to serve while a review holds a commit: `Some(text)` is the accepted
/// commit's `memory_summary.md` (`Some(None)`: nothing accepted yet, serve nothing);
/// `None` means no review is in effect and the working tree's file is served.
pub fn served_summary(home: &Path, review_on: bool) -> Option<Option<String>> {
    if !review_on {
        return None;
    }
    let root = folder::folder_path(home);
    let repo = git2::Repository::open(&root).ok()?;
    ref_target(&repo, PENDING_REF)?;
    let Some(acc) = ref_target(&repo, ACCEPTED_REF) else {
        return Some(None);
    };
    let text = repo
        .find_commit(acc)
        .and_then(|c| c.tree())
        .ok()
        .and_then(|t| {
            let e = t.get_name(folder::SUMMARY_MD)?;
            let b = repo.find_blob(e.id()).ok()?;
            Some(String::from_utf8_lossy(b.content()).into_owned())
        });
    Some(text)
}

/// The review queue of the folder in `home` (see [`ReviewState`]).
///
/// Errors: git errors.
pub fn state(home: &Path, review_on: bool) -> Result<ReviewState> {
    let mut st = ReviewState {
        enabled: review_on,
        pending: false,
        accepted: None,
        head: None,
        changes: Vec::new(),
        patch: String::new(),
        truncated: false,
        done: None,
    };
    let Some(f) = MemoryFolder::open(home)? else {
        return Ok(st);
    };
    let repo = f.repo()?;
    st.head = f.head()?.map(|h| h.to_string());
    let pending = ref_target(&repo, PENDING_REF);
    let accepted = ref_target(&repo, ACCEPTED_REF);
    st.accepted = match pending {
        Some(_) => accepted.map(|a| a.to_string()),
        None => st.head.clone(),
    };
    st.pending = review_on && pending.is_some();
    if !st.pending {
        return Ok(st);
    }
    let Some(head) = f.head()? else { return Ok(st) };
    let new_tree = repo
        .find_commit(head)
        .and_then(|c| c.tree())
        .map_err(git_err("head tree"))?;
    let old_tree = folder::tree_of(&repo, accepted, "accepted tree")?;
    let diff = repo
        .diff_tree_to_tree(old_tree.as_ref(), Some(&new_tree), None)
        .map_err(git_err("diff"))?;
    st.changes = diff.deltas().map(|d| FileChange::of(&d)).collect();
    let (patch, cut) = folder::patch_text(&diff, MAX_REVIEW_DIFF_BYTES)?;
    st.patch = patch;
    st.truncated = cut;
    Ok(st)
}

/// Accept or reject the pending consolidation. `running` (a consolidation holds the job)
/// refuses both. Accept serves `HEAD` from now on; reject restores the accepted commit's
/// tree as a new commit (with the backup ref of a rollback) and serves it. Either way the
/// agents' linked copies are refreshed.
///
/// Errors: [`Error::Busy`] while a consolidation runs; [`Error::InvalidArgument`] when
/// nothing is pending, or for reject when nothing was ever accepted; rollback errors.
pub fn decide(
    home: &Path,
    review_on: bool,
    action: ReviewAction,
    running: bool,
    budget: &crate::budget::ArtifactBudget,
) -> Result<ReviewState> {
    if running {
        return Err(Error::Busy(
            "a consolidation is running; review when it has finished".into(),
        ));
    }
    let before = state(home, review_on)?;
    let f = match MemoryFolder::open(home)? {
        Some(f) if before.pending => f,
        _ => {
            return Err(Error::InvalidArgument(
                "nothing waits for review (`memories review` shows the queue)".into(),
            ));
        }
    };
    let repo = f.repo()?;
    let done = match action {
        ReviewAction::Accept => {
            let head = f
                .head()?
                .ok_or_else(|| Error::InvalidArgument("the folder has no commit".into()))?;
            repo.reference(ACCEPTED_REF, head, true, "accepted")
                .map_err(git_err("accepted ref"))?;
            format!(
                "accepted {}: new sessions and linked copies now get its summary",
                &head.to_string()[..10]
            )
        }
        ReviewAction::Reject => {
            let acc = ref_target(&repo, ACCEPTED_REF).ok_or_else(|| {
                Error::InvalidArgument(
                    "nothing was accepted before this consolidation, so there is no state to return to; accept it, or roll back with `memories rollback REV`".into(),
                )
            })?;
            let head = f.head()?;
            if head.is_some_and(|h| {
                repo.find_commit(h).map(|c| c.tree_id()).ok()
                    == repo.find_commit(acc).map(|c| c.tree_id()).ok()
            }) {
                "rejected: the folder already matches the accepted state".to_string()
            } else {
                let approved = crate::gate::approve_rollback(&f, &acc.to_string(), budget)
                    .map_err(|p| {
                        Error::Budget(format!(
                            "the accepted state would not pass today's memory checks ({}); nothing was changed",
                            p.join("; ")
                        ))
                    })?;
                let r = f.rollback(&acc.to_string(), &approved)?;
                repo.reference(
                    ACCEPTED_REF,
                    git2::Oid::from_str(&r.commit).map_err(git_err("oid"))?,
                    true,
                    "rejected",
                )
                .map_err(git_err("accepted ref"))?;
                format!(
                    "rejected: restored {} as new commit {} (the rejected state is kept at {})",
                    &r.restored[..10],
                    &r.commit[..10],
                    r.backup_ref
                )
            }
        }
    };
    if let Ok(mut r) = repo.find_reference(PENDING_REF) {
        r.delete().map_err(git_err("pending ref"))?;
    }
    codex_free_core::events::emit(home, codex_free_core::events::MemoryEvent::Committed);
    let mut st = state(home, review_on)?;
    st.done = Some(done);
    Ok(st)
}
