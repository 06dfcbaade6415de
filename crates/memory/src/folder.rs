//! The memory folder `<home>/memories/`, a git repository (libgit2 through `git2`):
//! `MEMORY.md`, `memory_summary.md`, `raw_memories.md`, `rollout_summaries/<stem>.md`,
//! `ad_hoc_notes/`, `skills/`. Every successful consolidation is one commit whose message
//! says what changed; history, diffs and rollback are library calls here, mounted by the
//! CLI as `codex-free memories history | diff [REV] | rollback REV` ([`crate::cli::MemoryHistoryCmd`]).
//!
//! Hidden names (`.git`, editors' swap files, atomic-write temp files) are excluded through
//! `.git/info/exclude` and symbolic links are never staged, so a commit only ever holds the
//! visible files the tools could have touched.
//!
//! Invariant: the working tree is either at `HEAD` (clean) or holds the changes of the one
//! phase-2 run that owns the global job; [`MemoryFolder::restore_head`] puts it back to
//! `HEAD` exactly, and rollback is a new commit (history is never rewritten).

pub use crate::layout::{
    AD_HOC_DIR, FOLDER_DIR, MEMORY_MD, RAW_MEMORIES_MD, ROLLOUT_SUMMARIES_DIR, SKILLS_DIR,
    SUMMARY_MD,
};
use std::fs;
use std::path::{Path, PathBuf};

/// The id of a commit of the folder (git2's; re-exported so callers need no git2).
pub use git2::Oid;

use crate::approval::Approved;
use git2::{
    Delta, DiffFormat, DiffOptions, IndexAddOption, ObjectType, Repository, ResetType, Signature,
    StatusOptions, build::CheckoutBuilder,
};

use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::error::IoContext;

/// Prefix of the refs that keep discarded uncommitted changes (a killed run's leftovers,
/// hand edits the gate refused).
pub const RESCUED_REF_PREFIX: &str = "refs/codex-free/rescued/";

const AUTHOR_NAME: &str = "codex-free";
const AUTHOR_EMAIL: &str = "codex-free@localhost";
const BACKUP_REF_PREFIX: &str = "refs/codex-free/backups/";

/// `<home>/memories`.
pub fn folder_path(home: &Path) -> PathBuf {
    home.join(FOLDER_DIR)
}

pub(crate) fn git_err(what: &str) -> impl Fn(git2::Error) -> Error + '_ {
    move |e| Error::Io {
        context: format!("memory folder git: {what}"),
        source: std::io::Error::other(e.message().to_string()),
    }
}

/// The tree of commit `id` (`None` for no commit); `what` names it in the error.
///
/// Errors: [`Error::Io`] when the commit or its tree cannot be read.
pub(crate) fn tree_of<'r>(
    repo: &'r Repository,
    id: Option<Oid>,
    what: &str,
) -> Result<Option<git2::Tree<'r>>> {
    id.map(|id| repo.find_commit(id).and_then(|c| c.tree()))
        .transpose()
        .map_err(git_err(what))
}

/// How a file changed against the last commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    /// New file.
    Added,
    /// Content changed.
    Modified,
    /// File removed.
    Deleted,
    /// Other (type change, rename).
    Other,
}

impl ChangeKind {
    fn from_delta(d: Delta) -> Self {
        match d {
            Delta::Added | Delta::Untracked => ChangeKind::Added,
            Delta::Modified => ChangeKind::Modified,
            Delta::Deleted => ChangeKind::Deleted,
            _ => ChangeKind::Other,
        }
    }

    fn letter(self) -> char {
        match self {
            ChangeKind::Added => 'A',
            ChangeKind::Modified => 'M',
            ChangeKind::Deleted => 'D',
            ChangeKind::Other => 'T',
        }
    }
}

/// One changed path.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FileChange {
    /// What happened.
    pub kind: ChangeKind,
    /// Path relative to the folder, `/`-separated.
    pub path: String,
}

impl FileChange {
    /// The change one diff entry describes, at its new path (its old one for a deletion).
    pub(crate) fn of(d: &git2::DiffDelta<'_>) -> Self {
        FileChange {
            kind: ChangeKind::from_delta(d.status()),
            path: d
                .new_file()
                .path()
                .or(d.old_file().path())
                .map(|p| p.to_string_lossy().replace('\\', "/"))
                .unwrap_or_default(),
        }
    }
}

/// The working tree against `HEAD` (git status + diff), as handed to the consolidation agent.
#[derive(Debug, Clone, Default)]
pub struct WorkspaceDiff {
    /// Changed paths, sorted.
    pub changes: Vec<FileChange>,
    /// Unified diff text, cut at the cap given to [`MemoryFolder::workspace_diff`].
    pub patch: String,
    /// True when `patch` was cut.
    pub truncated: bool,
}

impl WorkspaceDiff {
    /// True when anything differs from `HEAD`.
    pub fn has_changes(&self) -> bool {
        !self.changes.is_empty()
    }
}

/// One commit of the folder's history.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HistoryEntry {
    /// Full commit id (hex).
    pub id: String,
    /// Commit time, unix seconds.
    pub time: i64,
    /// First line of the message.
    pub subject: String,
    /// Files changed against the first parent (or the empty tree).
    pub files_changed: usize,
    /// Lines added.
    pub insertions: usize,
    /// Lines removed.
    pub deletions: usize,
}

/// What [`MemoryFolder::rollback`] did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RollbackReport {
    /// The new commit (restoring the target's tree).
    pub commit: String,
    /// The commit whose tree was restored.
    pub restored: String,
    /// The ref that keeps the previous `HEAD` reachable (the backup).
    pub backup_ref: String,
    /// Paths that changed.
    pub changes: Vec<FileChange>,
}

/// A handle on the memory folder. Opens the repository per call (cheap), so the handle is
/// `Send + Sync` and can be held across `await`s.
#[derive(Debug, Clone)]
pub struct MemoryFolder {
    root: PathBuf,
}

impl MemoryFolder {
    /// Open `<home>/memories`, creating the directory and the repository when missing.
    /// Returns the folder and whether the repository was created now.
    ///
    /// Errors: [`Error::PathOutsideRoot`] when the folder is a symbolic link; I/O or git errors.
    pub fn open_or_init(home: &Path) -> Result<(Self, bool)> {
        Self::open_or_init_root(&folder_path(home))
    }

    /// [`MemoryFolder::open_or_init`] for the folder at `root` (the V2 folder,
    /// `<home>/memories_v2`, is opened this way): a real directory, a repository whose
    /// hidden files are excluded.
    ///
    /// Errors: as [`MemoryFolder::open_or_init`].
    pub fn open_or_init_root(root: &Path) -> Result<(Self, bool)> {
        let root = root.to_path_buf();
        if let Ok(md) = fs::symlink_metadata(&root)
            && (md.file_type().is_symlink() || !md.is_dir())
        {
            return Err(Error::PathOutsideRoot(format!(
                "{} must be a real directory",
                root.display()
            )));
        }
        fs::create_dir_all(&root).ctx(|| format!("creating {}", root.display()))?;
        let created = !root.join(".git").exists();
        let repo = if created {
            Repository::init(&root).map_err(git_err("init"))?
        } else {
            Repository::open(&root).map_err(git_err("open"))?
        };
        let exclude = repo.path().join("info").join("exclude");
        let want = "# codex-free: hidden files never enter the memory history\n.*\n";
        if fs::read_to_string(&exclude).ok().as_deref() != Some(want) {
            codex_free_core::home::write_atomic_unlocked(&exclude, want.as_bytes())?;
        }
        Ok((Self { root }, created))
    }

    /// Open an existing folder; `None` when it has no repository yet.
    pub fn open(home: &Path) -> Result<Option<Self>> {
        let root = folder_path(home);
        if !root.join(".git").is_dir() {
            return Ok(None);
        }
        Ok(Some(Self::open_or_init(home)?.0))
    }

    /// A handle on an existing git work tree at `root` (any memory folder kept in git, e.g.
    /// one `memories tidy` was pointed at). Opens and writes nothing; later calls fail with
    /// a git error when `root` is not a repository's work tree.
    pub fn at(root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
        }
    }

    /// `git init` a folder that is not the state home's (a corpus copy, a fixture) and
    /// return its handle; an existing repository is opened as is.
    ///
    /// Errors: I/O or git errors.
    pub fn init_at(root: &Path) -> Result<Self> {
        fs::create_dir_all(root).ctx(|| format!("creating {}", root.display()))?;
        if Repository::open(root).is_err() {
            Repository::init(root).map_err(git_err("init"))?;
        }
        Ok(Self::at(root))
    }

    /// The folder path.
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub(crate) fn repo(&self) -> Result<Repository> {
        Repository::open(&self.root).map_err(git_err("open"))
    }

    /// The `HEAD` commit id, `None` before the first commit.
    pub fn head(&self) -> Result<Option<Oid>> {
        let repo = self.repo()?;
        match repo.head() {
            Ok(h) => Ok(h.target()),
            Err(e)
                if e.code() == git2::ErrorCode::UnbornBranch
                    || e.code() == git2::ErrorCode::NotFound =>
            {
                Ok(None)
            }
            Err(e) => Err(git_err("head")(e)),
        }
    }

    /// Stage every visible, non-link file (additions, changes and deletions) in `repo`'s index.
    fn stage_all(&self, repo: &Repository) -> Result<git2::Index> {
        let mut index = repo.index().map_err(git_err("index"))?;
        let root = self.root.clone();
        let mut skip_links = |p: &Path, _: &[u8]| -> i32 {
            match fs::symlink_metadata(root.join(p)) {
                Ok(md) if md.file_type().is_symlink() => 1,
                _ => 0,
            }
        };
        index
            .add_all(
                ["*"],
                IndexAddOption::DEFAULT,
                Some(&mut skip_links as &mut git2::IndexMatchedPath),
            )
            .map_err(git_err("add"))?;
        index
            .update_all(["*"], None)
            .map_err(git_err("update index"))?;
        // update_all re-adds tracked links it finds; drop any link entries.
        let links: Vec<PathBuf> = index
            .iter()
            .filter(|e| e.mode == 0o120000)
            .map(|e| PathBuf::from(String::from_utf8_lossy(&e.path).into_owned()))
            .collect();
        for l in links {
            index.remove_path(&l).map_err(git_err("unstage link"))?;
        }
        Ok(index)
    }

    /// Changes of the working tree (visible files, links excluded) against `HEAD`, with a
    /// unified diff cut at `max_patch_bytes` (a marker line names the cut). Leaves the
    /// index matching `HEAD` (nothing stays staged).
    pub fn workspace_diff(&self, max_patch_bytes: usize) -> Result<WorkspaceDiff> {
        self.workspace_diff_from(None, max_patch_bytes)
    }

    /// As [`Self::workspace_diff`], against commit `base` instead of `HEAD` when given (a
    /// sync merge shows the agent what the union holds beyond the commit it kept).
    ///
    /// Errors: git errors, including a `base` that names no commit.
    pub fn workspace_diff_from(
        &self,
        base: Option<Oid>,
        max_patch_bytes: usize,
    ) -> Result<WorkspaceDiff> {
        let repo = self.repo()?;
        let head_tree = tree_of(&repo, self.head()?, "head tree")?;
        let base_tree = match base {
            Some(b) => tree_of(&repo, Some(b), "base tree")?,
            None => head_tree.clone(),
        };
        let mut index = self.stage_all(&repo)?;
        let mut opts = DiffOptions::new();
        opts.context_lines(2);
        let diff = repo
            .diff_tree_to_index(base_tree.as_ref(), Some(&index), Some(&mut opts))
            .map_err(git_err("diff"))?;
        let mut changes: Vec<FileChange> = diff.deltas().map(|d| FileChange::of(&d)).collect();
        changes.sort_by(|a, b| a.path.cmp(&b.path));
        let (patch, truncated) = patch_text(&diff, max_patch_bytes)?;
        // Unstage: the index goes back to HEAD's tree (or empty).
        match &head_tree {
            Some(t) => index.read_tree(t).map_err(git_err("reset index"))?,
            None => index.clear().map_err(git_err("reset index"))?,
        }
        index.write().map_err(git_err("write index"))?;
        Ok(WorkspaceDiff {
            changes,
            patch,
            truncated,
        })
    }

    /// The tree id the working tree would be committed as (links skipped, as
    /// [`MemoryFolder::commit_all`] does). Writes tree objects, not the index file.
    ///
    /// Errors: git errors.
    pub fn worktree_tree(&self) -> Result<Oid> {
        let repo = self.repo()?;
        let mut index = self.stage_all(&repo)?;
        index.write_tree().map_err(git_err("write tree"))
    }

    /// The tree id of commit `rev` (any revision git understands).
    ///
    /// Errors: [`Error::InvalidArgument`] for an unknown `rev`; git errors.
    pub fn tree_at(&self, rev: &str) -> Result<Oid> {
        let repo = self.repo()?;
        Ok(commit_at(&repo, rev)?.tree_id())
    }

    fn check_approved(&self, approved: &Approved, tree: Oid) -> Result<()> {
        let same_root =
            std::fs::canonicalize(approved.root()).ok() == std::fs::canonicalize(&self.root).ok();
        if !same_root || approved.tree() != tree {
            return Err(Error::Refused(format!(
                "not committed: the memory folder {} changed after the memory checks passed (checked tree {}, now {tree}); run the step again",
                self.root.display(),
                approved.tree()
            )));
        }
        Ok(())
    }

    /// Tell the registered listeners that a commit landed (the folder's state home is its
    /// parent directory): the one place "after a commit" runs, see [`codex_free_core::events`].
    fn committed(&self) {
        if let Some(home) = self.root.parent() {
            codex_free_core::events::emit(home, codex_free_core::events::MemoryEvent::Committed);
        }
    }

    /// Commit every visible change as one commit with `message` (subject + body), when the
    /// tree to commit is exactly the one the gate approved ([`crate::gate::approve`]).
    /// Returns `None` when the tree equals `HEAD`'s (nothing to commit). Listeners of
    /// [`codex_free_core::events::MemoryEvent::Committed`] run after the commit.
    ///
    /// Errors: [`Error::Refused`] when `approved` is for another folder or the working tree
    /// changed since it was checked (nothing is committed); git errors.
    pub fn commit_all(&self, approved: &Approved, message: &str) -> Result<Option<Oid>> {
        let repo = self.repo()?;
        let mut index = self.stage_all(&repo)?;
        let tree_id = index.write_tree().map_err(git_err("write tree"))?;
        self.check_approved(approved, tree_id)?;
        index.write().map_err(git_err("write index"))?;
        let parent = match self.head()? {
            Some(id) => Some(repo.find_commit(id).map_err(git_err("head"))?),
            None => None,
        };
        if parent.as_ref().is_some_and(|p| p.tree_id() == tree_id) {
            return Ok(None);
        }
        let tree = repo.find_tree(tree_id).map_err(git_err("tree"))?;
        let sig = signature()?;
        let parents: Vec<&git2::Commit> = parent.iter().collect();
        let id = repo
            .commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
            .map_err(git_err("commit"))?;
        self.committed();
        Ok(Some(id))
    }

    /// Move `HEAD` back to `before` (a commit of ours failed its read-back) and restore the
    /// tree; `None` (the folder had no commit before) leaves `HEAD` unborn again.
    ///
    /// Errors: git errors as [`Error::Store`].
    pub fn undo_commit(&self, before: Option<Oid>) -> Result<()> {
        let repo = git2::Repository::open(self.root())
            .map_err(|e| Error::Store(format!("memory folder: {e}")))?;
        match before {
            Some(id) => {
                let obj = repo
                    .find_object(id, None)
                    .map_err(|e| Error::Store(e.to_string()))?;
                let mut co = git2::build::CheckoutBuilder::new();
                co.force().remove_untracked(true);
                repo.reset(&obj, git2::ResetType::Hard, Some(&mut co))
                    .map_err(|e| Error::Store(e.to_string()))?;
            }
            None => {
                // Unborn before: drop the branch ref so HEAD is unborn again.
                if let Ok(mut r) = repo
                    .find_reference("refs/heads/master")
                    .or_else(|_| repo.find_reference("refs/heads/main"))
                {
                    r.delete().map_err(|e| Error::Store(e.to_string()))?;
                }
            }
        }
        self.restore_head()
    }

    /// The folder as a repository when `dir` is exactly the work tree of one (a folder
    /// inside a larger repository is `None`: committing it would commit unrelated files).
    pub fn own_repo_at(dir: &Path) -> Option<MemoryFolder> {
        let repo = Repository::open(dir).ok()?;
        let wd = std::fs::canonicalize(repo.workdir()?).ok()?;
        let dir = std::fs::canonicalize(dir).ok()?;
        (wd == dir).then(|| MemoryFolder::at(&dir))
    }

    /// The git operation in progress (`Merge`, `Rebase`, …, git2's names), `None` when the
    /// repository is clean of operations.
    ///
    /// Errors: the repository cannot be opened.
    pub fn operation_in_progress(&self) -> Result<Option<String>> {
        let st = self.repo()?.state();
        Ok((st != git2::RepositoryState::Clean).then(|| format!("{st:?}")))
    }

    /// Paths `git status --short` would list (untracked included, recursively), as
    /// `?? <path>` lines; empty when the work tree equals `HEAD`.
    ///
    /// Errors: git errors.
    pub fn status_short(&self) -> Result<Vec<String>> {
        let repo = self.repo()?;
        let status = repo
            .statuses(Some(
                StatusOptions::new()
                    .include_untracked(true)
                    .recurse_untracked_dirs(true),
            ))
            .map_err(git_err("status"))?;
        Ok(status
            .iter()
            .filter_map(|e| e.path().ok().map(|p| format!("?? {p}")))
            .collect())
    }

    /// `git diff --stat <from>..HEAD` as (files changed, insertions, deletions).
    ///
    /// Errors: `from` or `HEAD` is not a commit; git errors.
    pub fn diff_stat_to_head(&self, from: Oid) -> Result<(usize, usize, usize)> {
        let repo = self.repo()?;
        let old = repo
            .find_commit(from)
            .and_then(|c| c.tree())
            .map_err(git_err("backup tree"))?;
        let new_id = repo.head().ok().and_then(|h| h.target()).unwrap_or(from);
        let new = repo
            .find_commit(new_id)
            .and_then(|c| c.tree())
            .map_err(git_err("head tree"))?;
        let diff = repo
            .diff_tree_to_tree(Some(&old), Some(&new), None)
            .map_err(git_err("diff"))?;
        let st = diff.stats().map_err(git_err("diff --stat"))?;
        Ok((st.files_changed(), st.insertions(), st.deletions()))
    }

    /// Put the working tree and index back to `HEAD` exactly: tracked files restored,
    /// untracked visible files removed (`git reset --hard HEAD && git clean -fd`). Before the
    /// first commit, every visible entry is removed.
    pub fn restore_head(&self) -> Result<()> {
        let repo = self.repo()?;
        match self.head()? {
            Some(id) => {
                let obj = repo.find_object(id, None).map_err(git_err("head object"))?;
                let mut co = CheckoutBuilder::new();
                co.force().remove_untracked(true);
                repo.reset(&obj, ResetType::Hard, Some(&mut co))
                    .map_err(git_err("reset --hard"))?;
                // libgit2 leaves untracked links and empty directories; remove them too.
                remove_untracked_leftovers(&self.root, &repo)?;
            }
            None => {
                for e in fs::read_dir(&self.root)
                    .ctx(|| format!("listing {}", self.root.display()))?
                    .flatten()
                {
                    if e.file_name().to_string_lossy().starts_with('.') {
                        continue;
                    }
                    remove_any(&e.path())?;
                }
                let mut index = repo.index().map_err(git_err("index"))?;
                index.clear().map_err(git_err("clear index"))?;
                index.write().map_err(git_err("write index"))?;
            }
        }
        Ok(())
    }

    /// Read-back after a commit, so a run never reports success for work that did not land:
    /// the working tree must be clean (`git status`) and the last commit must introduce no
    /// whitespace errors (`git diff --check`).
    ///
    /// Errors: [`Error::Budget`] listing what is wrong.
    pub fn verify_committed(&self) -> Result<()> {
        let repo = self.repo()?;
        let mut so = StatusOptions::new();
        so.include_untracked(true)
            .recurse_untracked_dirs(true)
            .include_ignored(false);
        let st = repo.statuses(Some(&mut so)).map_err(git_err("status"))?;
        let dirty: Vec<String> = st
            .iter()
            .filter_map(|e| e.path().ok().map(str::to_owned))
            .filter(|p| {
                fs::symlink_metadata(self.root.join(p))
                    .map(|m| !m.file_type().is_symlink())
                    .unwrap_or(true)
            })
            .collect();
        if !dirty.is_empty() {
            return Err(Error::Budget(format!(
                "memory folder not clean after commit: {}",
                dirty.join(", ")
            )));
        }
        let Some(head) = self.head()? else {
            return Ok(());
        };
        let commit = repo.find_commit(head).map_err(git_err("head"))?;
        let parent_tree = commit.parent(0).ok().and_then(|p| p.tree().ok());
        let tree = commit.tree().map_err(git_err("tree"))?;
        let diff = repo
            .diff_tree_to_tree(parent_tree.as_ref(), Some(&tree), None)
            .map_err(git_err("diff"))?;
        let errs = whitespace_errors(&diff)?;
        if !errs.is_empty() {
            return Err(Error::Budget(format!(
                "whitespace errors in the commit: {}",
                errs.join("; ")
            )));
        }
        Ok(())
    }

    /// Whitespace errors (`git diff --check` rules: trailing whitespace, space before tab in
    /// the indent, blank line at end of file) in the uncommitted changes.
    pub fn pending_whitespace_errors(&self) -> Result<Vec<String>> {
        let repo = self.repo()?;
        let head_tree = tree_of(&repo, self.head()?, "head tree")?;
        let mut index = self.stage_all(&repo)?;
        let diff = repo
            .diff_tree_to_index(head_tree.as_ref(), Some(&index), None)
            .map_err(git_err("diff"))?;
        let errs = whitespace_errors(&diff)?;
        match &head_tree {
            Some(t) => index.read_tree(t).map_err(git_err("reset index"))?,
            None => index.clear().map_err(git_err("reset index"))?,
        }
        index.write().map_err(git_err("write index"))?;
        Ok(errs)
    }

    /// The newest `limit` commits, newest first.
    pub fn history(&self, limit: usize) -> Result<Vec<HistoryEntry>> {
        let repo = self.repo()?;
        let Some(head) = self.head()? else {
            return Ok(Vec::new());
        };
        let mut walk = repo.revwalk().map_err(git_err("revwalk"))?;
        walk.push(head).map_err(git_err("revwalk"))?;
        let mut out = Vec::new();
        for id in walk.take(limit) {
            let id = id.map_err(git_err("revwalk"))?;
            let c = repo.find_commit(id).map_err(git_err("commit"))?;
            let parent_tree = c.parent(0).ok().and_then(|p| p.tree().ok());
            let tree = c.tree().map_err(git_err("tree"))?;
            let stats = repo
                .diff_tree_to_tree(parent_tree.as_ref(), Some(&tree), None)
                .and_then(|d| d.stats())
                .map_err(git_err("stats"))?;
            out.push(HistoryEntry {
                id: id.to_string(),
                time: c.time().seconds(),
                subject: c.summary().ok().flatten().unwrap_or("").to_string(),
                files_changed: stats.files_changed(),
                insertions: stats.insertions(),
                deletions: stats.deletions(),
            });
        }
        Ok(out)
    }

    /// What `rev` changed against its first parent (default `HEAD`), as `git show`: header
    /// lines then a unified diff cut at `max_bytes`. With `rev = None` and uncommitted
    /// changes present, shows those instead (working tree against `HEAD`).
    ///
    /// Errors: [`Error::InvalidArgument`] when `rev` names no commit.
    pub fn show(&self, rev: Option<&str>, max_bytes: usize) -> Result<String> {
        let repo = self.repo()?;
        if rev.is_none() {
            let w = self.workspace_diff(max_bytes)?;
            if w.has_changes() {
                return Ok(format!(
                    "Uncommitted changes in the memory folder:\n{}{}",
                    w.patch,
                    cut_note(w.truncated, max_bytes)
                ));
            }
        }
        let spec = rev.unwrap_or("HEAD");
        if self.head()?.is_none() {
            return Ok("The memory folder has no commits yet.\n".into());
        }
        let c = commit_at(&repo, spec)?;
        let parent_tree = c.parent(0).ok().and_then(|p| p.tree().ok());
        let tree = c.tree().map_err(git_err("tree"))?;
        let diff = repo
            .diff_tree_to_tree(parent_tree.as_ref(), Some(&tree), None)
            .map_err(git_err("diff"))?;
        let (patch, cut) = patch_text(&diff, max_bytes)?;
        Ok(format!(
            "commit {}\nDate:   {}\n\n    {}\n\n{}{}",
            c.id(),
            fmt_time(c.time().seconds()),
            c.message().unwrap_or("").trim_end().replace('\n', "\n    "),
            patch,
            cut_note(cut, max_bytes)
        ))
    }

    /// Keep every uncommitted change (tracked and untracked visible files) as a commit under
    /// `refs/codex-free/rescued/<UTC stamp>` whose parent is `HEAD`, then put the working
    /// tree back to `HEAD` ([`Self::restore_head`]). `HEAD` does not move; the changes stay
    /// inspectable (`git show <ref>`) and are never adopted as input. Returns the ref, or
    /// `None` when there was nothing to keep.
    pub fn rescue(&self, reason: &str) -> Result<Option<String>> {
        let repo = self.repo()?;
        let mut index = self.stage_all(&repo)?;
        let tree_id = index.write_tree().map_err(git_err("write tree"))?;
        let parent = match self.head()? {
            Some(id) => Some(repo.find_commit(id).map_err(git_err("head"))?),
            None => None,
        };
        // The staged index must not survive: restore_head rewrites it from HEAD below.
        if parent.as_ref().is_some_and(|p| p.tree_id() == tree_id) {
            self.restore_head()?;
            return Ok(None);
        }
        let tree = repo.find_tree(tree_id).map_err(git_err("tree"))?;
        let sig = signature()?;
        let parents: Vec<&git2::Commit> = parent.iter().collect();
        let id = repo
            .commit(
                None,
                &sig,
                &sig,
                &format!("Rescued uncommitted changes (not adopted)\n\n{reason}\n"),
                &tree,
                &parents,
            )
            .map_err(git_err("rescue commit"))?;
        let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ");
        let name = format!("{RESCUED_REF_PREFIX}{stamp}");
        repo.reference(&name, id, false, reason)
            .map_err(git_err("rescue ref"))?;
        self.restore_head()?;
        Ok(Some(name))
    }

    /// `MEMORY.md` and `memory_summary.md` as committed in `rev` (`None` = absent there).
    ///
    /// Errors: [`Error::InvalidArgument`] for a rev that names no commit.
    pub fn artifacts_at(&self, rev: &str) -> Result<(Option<String>, Option<String>)> {
        let repo = self.repo()?;
        let commit = commit_at(&repo, rev)?;
        let tree = commit.tree().map_err(git_err("tree"))?;
        let blob = |name: &str| -> Option<String> {
            let e = tree.get_name(name)?;
            let b = repo.find_blob(e.id()).ok()?;
            Some(String::from_utf8_lossy(b.content()).into_owned())
        };
        Ok((blob(MEMORY_MD), blob(SUMMARY_MD)))
    }

    /// Restore the tree of `rev` as a new commit on top of `HEAD`. First a backup ref
    /// `refs/codex-free/backups/<UTC stamp>` is set to the current `HEAD`; then the tree is
    /// checked out, committed, and read back (status clean, `HEAD`'s tree = `rev`'s tree).
    /// The caller must have checked that no phase-2 job runs (the pipeline's `history_command` does).
    ///
    /// `approved` must be the gate's approval of `rev`'s tree ([`crate::gate::approve_rollback`]).
    ///
    /// Errors: [`Error::Refused`] for an approval of another tree; [`Error::InvalidArgument`]
    /// for an unknown `rev` or one equal to the current state; [`Error::Busy`] when the
    /// working tree has uncommitted changes (inspect them
    /// with `memories diff`); git errors.
    pub fn rollback(&self, rev: &str, approved: &Approved) -> Result<RollbackReport> {
        let repo = self.repo()?;
        let head = self.head()?.ok_or_else(|| {
            Error::InvalidArgument("the memory folder has no commits to roll back to".into())
        })?;
        let target = commit_at(&repo, rev)?;
        self.check_approved(approved, target.tree_id())?;
        let pending = self.workspace_diff(0)?;
        if pending.has_changes() {
            return Err(Error::Busy(format!(
                "the memory folder has {} uncommitted change(s); inspect them with `codex-free memories diff` and commit or discard them first",
                pending.changes.len()
            )));
        }
        let head_commit = repo.find_commit(head).map_err(git_err("head"))?;
        if head_commit.tree_id() == target.tree_id() {
            return Err(Error::InvalidArgument(format!(
                "the memory folder already matches {rev}"
            )));
        }
        // Backup first, so a failed cleanup can be undone.
        let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ");
        let backup_ref = format!("{BACKUP_REF_PREFIX}{stamp}");
        repo.reference(
            &backup_ref,
            head,
            false,
            &format!("backup before rollback to {rev}"),
        )
        .map_err(git_err("backup ref"))?;
        let target_tree = target.tree().map_err(git_err("tree"))?;
        let diff = repo
            .diff_tree_to_tree(
                Some(&head_commit.tree().map_err(git_err("tree"))?),
                Some(&target_tree),
                None,
            )
            .map_err(git_err("diff"))?;
        let changes: Vec<FileChange> = diff
            .deltas()
            .map(|d| FileChange {
                kind: ChangeKind::from_delta(d.status()),
                path: d
                    .new_file()
                    .path()
                    .or(d.old_file().path())
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            })
            .collect();
        let mut co = CheckoutBuilder::new();
        co.force().remove_untracked(true);
        repo.checkout_tree(target_tree.as_object(), Some(&mut co))
            .map_err(git_err("checkout"))?;
        let mut index = repo.index().map_err(git_err("index"))?;
        index
            .read_tree(&target_tree)
            .map_err(git_err("read tree"))?;
        index.write().map_err(git_err("write index"))?;
        let short = &target.id().to_string()[..10];
        let msg = format!(
            "Roll back memory to {short} ({})\n\nRestored the tree of {}.\nPrevious HEAD kept at {backup_ref}.\n\n{}",
            target.summary().ok().flatten().unwrap_or(""),
            target.id(),
            change_lines(&changes)
        );
        let sig = signature()?;
        let id = repo
            .commit(
                Some("HEAD"),
                &sig,
                &sig,
                &msg,
                &target_tree,
                &[&head_commit],
            )
            .map_err(git_err("commit"))?;
        remove_untracked_leftovers(&self.root, &repo)?;
        // Read-back.
        let now = repo.find_commit(id).map_err(git_err("commit"))?;
        if now.tree_id() != target.tree_id() || self.workspace_diff(0)?.has_changes() {
            return Err(Error::Io {
                context: "rollback read-back".into(),
                source: std::io::Error::other(format!(
                    "the folder does not match {rev} after the rollback; previous HEAD is at {backup_ref}"
                )),
            });
        }
        self.committed();
        Ok(RollbackReport {
            commit: id.to_string(),
            restored: target.id().to_string(),
            backup_ref,
            changes,
        })
    }
}

/// The commit `rev` names (an id, a prefix, or a rev such as `HEAD~1`).
///
/// Errors: [`Error::InvalidArgument`] naming `memories history` when it names none.
pub(crate) fn commit_at<'r>(repo: &'r Repository, rev: &str) -> Result<git2::Commit<'r>> {
    repo.revparse_single(rev)
        .and_then(|o| o.peel_to_commit())
        .map_err(|_| {
            Error::InvalidArgument(format!(
                "rev {rev:?} names no commit of the memory folder; see `memories history`"
            ))
        })
}

pub(crate) fn signature() -> Result<Signature<'static>> {
    Signature::now(AUTHOR_NAME, AUTHOR_EMAIL).map_err(git_err("signature"))
}

fn fmt_time(secs: i64) -> String {
    chrono::DateTime::from_timestamp(secs, 0)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_default()
}

fn cut_note(cut: bool, max: usize) -> String {
    if cut {
        format!("(diff cut at {max} bytes)\n")
    } else {
        String::new()
    }
}

/// `A path` / `M path` / `D path` lines for a commit body.
pub fn change_lines(changes: &[FileChange]) -> String {
    changes
        .iter()
        .map(|c| format!("{} {}\n", c.kind.letter(), c.path))
        .collect()
}

pub(crate) fn patch_text(diff: &git2::Diff<'_>, max: usize) -> Result<(String, bool)> {
    let mut out = Vec::new();
    let mut cut = false;
    diff.print(DiffFormat::Patch, |_, _, line| {
        if cut {
            return true;
        }
        let mut chunk = Vec::new();
        if matches!(line.origin(), '+' | '-' | ' ') {
            chunk.push(line.origin() as u8);
        }
        chunk.extend_from_slice(line.content());
        if out.len() + chunk.len() > max {
            cut = true;
        } else {
            out.extend_from_slice(&chunk);
        }
        true
    })
    .map_err(git_err("print diff"))?;
    Ok((String::from_utf8_lossy(&out).into_owned(), cut))
}

/// `git diff --check` over a diff: trailing whitespace or a space before a tab in the
/// indent on an added line, and a blank line added at the end of a file.
pub(crate) fn whitespace_errors(diff: &git2::Diff<'_>) -> Result<Vec<String>> {
    let mut errs = Vec::new();
    let mut last_added: Option<(String, bool)> = None;
    let flush = |last: &mut Option<(String, bool)>, errs: &mut Vec<String>| {
        if let Some((path, true)) = last.take() {
            errs.push(format!("{path}: new blank line at end of file"));
        }
    };
    diff.print(DiffFormat::Patch, |delta, _, line| {
        let path = delta
            .new_file()
            .path()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        if last_added.as_ref().is_some_and(|(p, _)| *p != path) {
            flush(&mut last_added, &mut errs);
        }
        match line.origin() {
            '+' => {
                let text = String::from_utf8_lossy(line.content());
                let body = text.strip_suffix('\n').unwrap_or(&text);
                let n = line.new_lineno().unwrap_or(0);
                if body.ends_with([' ', '\t']) {
                    errs.push(format!("{path}:{n}: trailing whitespace"));
                }
                let indent: String = body
                    .chars()
                    .take_while(|c| *c == ' ' || *c == '\t')
                    .collect();
                if indent.contains(" \t") {
                    errs.push(format!("{path}:{n}: space before tab in indent"));
                }
                last_added = Some((path, body.trim().is_empty()));
            }
            ' ' | '-' => last_added = None,
            _ => {}
        }
        true
    })
    .map_err(git_err("check diff"))?;
    // A trailing blank added line only counts when it is the file's last line; git's
    // hunks end at EOF for such additions, so the last '+' of the last hunk decides.
    flush(&mut last_added, &mut errs);
    Ok(errs)
}

fn remove_any(p: &Path) -> Result<()> {
    let md = fs::symlink_metadata(p).ctx(|| format!("inspecting {}", p.display()))?;
    if md.is_dir() && !md.file_type().is_symlink() {
        fs::remove_dir_all(p).ctx(|| format!("removing {}", p.display()))
    } else {
        fs::remove_file(p).ctx(|| format!("removing {}", p.display()))
    }
}

/// Remove every visible entry not in `HEAD`'s tree (`git clean -fd` for visible names:
/// untracked files, symbolic links, and directories left empty).
pub(crate) fn remove_untracked_leftovers(root: &Path, repo: &Repository) -> Result<()> {
    let head_tree = repo.head().ok().and_then(|h| h.peel_to_tree().ok());
    fn walk(dir: &Path, rel: &str, tree: Option<&git2::Tree<'_>>) -> Result<()> {
        for e in fs::read_dir(dir)
            .ctx(|| format!("listing {}", dir.display()))?
            .flatten()
        {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let relp = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            let tracked = tree.and_then(|t| t.get_path(Path::new(&relp)).ok());
            let md = fs::symlink_metadata(e.path()).ctx(|| format!("inspecting {relp}"))?;
            if md.file_type().is_symlink() || md.is_file() {
                if tracked.is_none() {
                    fs::remove_file(e.path()).ctx(|| format!("removing untracked {relp}"))?;
                }
            } else if md.is_dir() {
                walk(&e.path(), &relp, tree)?;
                let empty = fs::read_dir(e.path())
                    .map(|mut r| r.next().is_none())
                    .unwrap_or(false);
                let tracked_dir = tracked.is_some_and(|t| t.kind() == Some(ObjectType::Tree));
                if empty && !tracked_dir {
                    let _ = fs::remove_dir(e.path());
                }
            }
        }
        Ok(())
    }
    walk(root, "", head_tree.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    #[test]
    fn commit_diff_restore_and_rollback() {
        let home = tempfile::tempdir().unwrap();
        let (f, created) = MemoryFolder::open_or_init(home.path()).unwrap();
        assert!(created);
        assert!(f.head().unwrap().is_none());
        write(f.root(), "MEMORY.md", "one\n");
        write(f.root(), ".swap", "hidden\n");
        let d = f.workspace_diff(1 << 20).unwrap();
        assert_eq!(
            d.changes,
            vec![FileChange {
                kind: ChangeKind::Added,
                path: "MEMORY.md".into()
            }]
        );
        assert!(d.patch.contains("+one"), "{}", d.patch);
        let c1 = f
            .commit_all(&crate::gate::approve_as_is(&f).unwrap(), "first")
            .unwrap()
            .unwrap();
        f.verify_committed().unwrap();
        assert!(
            f.commit_all(&crate::gate::approve_as_is(&f).unwrap(), "again")
                .unwrap()
                .is_none(),
            "no change, no commit"
        );

        write(f.root(), "MEMORY.md", "two\n");
        write(f.root(), "rollout_summaries/a.md", "a\n");
        f.restore_head().unwrap();
        assert_eq!(
            fs::read_to_string(f.root().join("MEMORY.md")).unwrap(),
            "one\n"
        );
        assert!(
            !f.root().join("rollout_summaries").exists(),
            "untracked dir removed"
        );
        assert!(!f.workspace_diff(0).unwrap().has_changes());

        write(f.root(), "MEMORY.md", "two\n");
        f.commit_all(&crate::gate::approve_as_is(&f).unwrap(), "second")
            .unwrap()
            .unwrap();
        let h = f.history(10).unwrap();
        assert_eq!(h.len(), 2);
        assert_eq!(h[0].subject, "second");
        assert!(f.show(None, 1 << 20).unwrap().contains("+two"));

        let r = f
            .rollback(
                &c1.to_string()[..8],
                &crate::gate::approve_rollback(
                    &f,
                    &c1.to_string()[..8],
                    &crate::budget::ArtifactBudget::default(),
                )
                .unwrap(),
            )
            .unwrap();
        assert_eq!(
            fs::read_to_string(f.root().join("MEMORY.md")).unwrap(),
            "one\n"
        );
        assert_eq!(f.history(10).unwrap().len(), 3, "rollback is a new commit");
        let repo = Repository::open(f.root()).unwrap();
        let backup = repo.find_reference(&r.backup_ref).unwrap();
        assert_eq!(backup.target().unwrap().to_string(), h[0].id);
        assert!(
            f.rollback(
                &c1.to_string(),
                &crate::gate::approve_rollback(
                    &f,
                    &c1.to_string(),
                    &crate::budget::ArtifactBudget::default()
                )
                .unwrap()
            )
            .is_err(),
            "already there"
        );
    }

    #[test]
    fn whitespace_check_flags_trailing_spaces() {
        let home = tempfile::tempdir().unwrap();
        let (f, _) = MemoryFolder::open_or_init(home.path()).unwrap();
        write(f.root(), "MEMORY.md", "ok\nbad  \n");
        let errs = f.pending_whitespace_errors().unwrap();
        assert_eq!(errs, vec!["MEMORY.md:2: trailing whitespace".to_string()]);
        write(f.root(), "MEMORY.md", "ok\n\n");
        let errs = f.pending_whitespace_errors().unwrap();
        assert_eq!(
            errs,
            vec!["MEMORY.md: new blank line at end of file".to_string()]
        );
        write(f.root(), "MEMORY.md", "ok\n\nfine\n");
        assert!(f.pending_whitespace_errors().unwrap().is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn links_are_never_committed_and_are_cleaned() {
        let home = tempfile::tempdir().unwrap();
        let (f, _) = MemoryFolder::open_or_init(home.path()).unwrap();
        write(f.root(), "MEMORY.md", "x\n");
        std::os::unix::fs::symlink("/etc/passwd", f.root().join("evil.md")).unwrap();
        f.commit_all(&crate::gate::approve_as_is(&f).unwrap(), "c")
            .unwrap();
        let repo = Repository::open(f.root()).unwrap();
        let tree = repo.head().unwrap().peel_to_tree().unwrap();
        assert!(tree.get_path(Path::new("evil.md")).is_err());
        f.restore_head().unwrap();
        assert!(fs::symlink_metadata(f.root().join("evil.md")).is_err());
    }
}
