//! `show_changes`: the project's diff since this conversation's first tool call, or since
//! its last `show_changes`, paged by lines exactly like `git_diff`.
//!
//! How a snapshot is taken: the whole work tree is written as a git tree object into a
//! **private** object store (a bare git directory under this process's temporary folder,
//! removed when the server exits), through a private index — `git add -A` then
//! `git write-tree` with `GIT_DIR`, `GIT_INDEX_FILE` and `GIT_WORK_TREE` pointing there. Two
//! snapshots are compared with `git diff <tree> <tree>`. Why this way:
//! - it sees untracked files too (which `git stash create` leaves out), honours
//!   `.gitignore`, and works the same for projects that are not git repositories;
//! - it writes nothing into the user's repository (no object, ref, index or stash entry)
//!   and nothing under the state home: a project's own `.git/config` (filters, hooks) is
//!   never read, since git runs with the private store as its repository;
//! - for a git project the store borrows the repository's objects (read-only, through
//!   `objects/info/alternates`) and starts from a copy of its index, so a snapshot re-hashes
//!   only files changed since git last looked at them.
//!
//! git runs through the same sandboxed runner as the `git_*` tools (no pager, hooks or
//! external diff; the OS sandbox may write only the project and the private store), limited
//! to the project root and excluding every protected directory inside it.
//!
//! Trade-off: a large file that is neither tracked nor ignored is copied into the private
//! store once per change (it is part of the work tree a diff must cover).

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::ToolCtx;
use crate::git::{GitEnv, diff_page, read_timeout, run_git_in, scoped};
use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::error::IoContext;

/// Arguments of `show_changes`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct ShowChangesArgs {
    /// true: diff since this conversation's first call; default: since the last show_changes.
    #[serde(default)]
    pub from_start: Option<bool>,
    /// Diff lines to skip, as named by the previous page's last line (continues that same diff).
    #[serde(default)]
    pub offset: Option<usize>,
}

/// One conversation's snapshots.
#[derive(Debug, Clone)]
struct Tracked {
    /// The project root the snapshots are of.
    root: PathBuf,
    /// The work tree git sees (the repository's top level, or the root).
    top: PathBuf,
    /// The private store.
    store: PathBuf,
    /// Tree at the conversation's first call.
    start: String,
    /// Tree at the last `show_changes` (or the first call).
    last: String,
    /// The diff the last `show_changes` showed: (from, to, what "from" is), for offsets.
    shown: Option<(String, String, &'static str)>,
}

/// Snapshots of every conversation of one server process. Keys are conversation keys (a
/// hash of `openai/session`, or the connection), never raw session values.
#[derive(Debug)]
pub struct ChangeTracker {
    dir: tempfile::TempDir,
    /// Held while this process lives, so a later sweep knows the folder is in use.
    _owner: Option<crate::tmpfiles::OwnerLock>,
    conversations: Mutex<HashMap<String, Tracked>>,
    /// Serialises snapshots: two `git add` on one private index would fight over its lock.
    snapshot_lock: Mutex<()>,
}

impl ChangeTracker {
    /// A tracker with its private stores in a fresh temporary folder.
    ///
    /// Errors: the temporary folder cannot be created.
    /// Folders left by servers that are gone are removed first
    /// ([`crate::tmpfiles::sweep_stores`]).
    pub fn new() -> Result<Self> {
        crate::tmpfiles::sweep_stores(&std::env::temp_dir());
        let dir = tempfile::Builder::new()
            .prefix(crate::tmpfiles::STORE_PREFIX)
            .tempdir()
            .ctx(|| "creating the show_changes snapshot folder".to_string())?;
        let owner = crate::tmpfiles::OwnerLock::take(dir.path())
            .inspect_err(|e| tracing::warn!("show_changes snapshot folder not locked: {e}"))
            .ok();
        Ok(Self {
            dir,
            _owner: owner,
            conversations: Mutex::new(HashMap::new()),
            snapshot_lock: Mutex::new(()),
        })
    }

    /// Whether conversation `key` already has its first snapshot (cheap: no git).
    pub fn has(&self, key: &str) -> bool {
        self.lock().contains_key(key)
    }

    /// Take conversation `key`'s first snapshot (of `ctx`'s project) unless it has one for
    /// that project. Called before the conversation's first tool runs.
    ///
    /// Errors: git is missing or fails (the caller logs it; the tool still runs).
    pub fn ensure_start(&self, ctx: &ToolCtx, key: &str) -> Result<()> {
        if self.lock().get(key).is_some_and(|t| t.root == ctx.root()) {
            return Ok(());
        }
        let (top, store, tree) = self.snapshot(ctx)?;
        self.lock().insert(
            key.to_string(),
            Tracked {
                root: ctx.root().to_path_buf(),
                top,
                store,
                start: tree.clone(),
                last: tree,
                shown: None,
            },
        );
        Ok(())
    }

    /// `show_changes` for conversation `key`.
    ///
    /// Errors: [`Error::InvalidArgument`] for an offset with no diff shown before, an offset
    /// past the end, or git failing.
    pub fn show(&self, ctx: &ToolCtx, key: &str, a: &ShowChangesArgs) -> Result<String> {
        let offset = a.offset.unwrap_or(0);
        let mut note = String::new();
        let t = if offset > 0 {
            self.lock()
                .get(key)
                .filter(|t| t.root == ctx.root() && t.shown.is_some())
                .cloned()
                .ok_or_else(|| {
                    Error::InvalidArgument(
                        "offset continues the diff the last show_changes showed, and there is none: call show_changes without offset first".into(),
                    )
                })?
        } else {
            if self.lock().get(key).is_none_or(|t| t.root != ctx.root()) {
                self.ensure_start(ctx, key)?;
                note = "(changes are tracked from this call on: this project had no snapshot in this conversation yet)\n".into();
            }
            let (_, _, now) = self.snapshot(ctx)?;
            let mut map = self.lock();
            let t = map.get_mut(key).ok_or_else(|| {
                Error::Cancelled("the snapshot of this conversation was dropped".into())
            })?;
            let (from, since) = if a.from_start == Some(true) {
                (t.start.clone(), "this conversation's first call")
            } else {
                (t.last.clone(), "the last show_changes")
            };
            t.shown = Some((from, now.clone(), since));
            t.last = now;
            t.clone()
        };
        let Some((from, to, since)) = t.shown.clone() else {
            return Err(Error::Cancelled("no diff recorded".into()));
        };
        let env = store_env(&t.store, &t.top);
        let args = [
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            from.as_str(),
            to.as_str(),
        ];
        let page = diff_page(ctx, &env, &args, &scoped(ctx, Vec::new()), offset)?;
        if page.total == 0 {
            return Ok(format!("{note}(no changes since {since})"));
        }
        if offset == 0 {
            // Flag the changed files that another program runs later (first page only).
            let mut changed = Vec::new();
            let names = [
                "diff",
                "--name-only",
                "--no-renames",
                from.as_str(),
                to.as_str(),
            ];
            run_git_in(
                ctx,
                &env,
                &names,
                &scoped(ctx, Vec::new()),
                read_timeout(ctx),
                |l| {
                    let rel = String::from_utf8_lossy(l).trim_end().to_string();
                    let abs = t.top.join(&rel);
                    if let Ok(in_root) = abs.strip_prefix(ctx.root())
                        && let Some(what) = codex_free_core::runs_later::runs_later(in_root)
                    {
                        changed.push((in_root.to_string_lossy().into_owned(), what));
                    }
                },
            )?
            .map_err(|f| f.into_error("diff --name-only"))?;
            if let Some(n) = codex_free_core::runs_later::note(&changed) {
                note.push_str(&n);
                note.push('\n');
            }
        }
        Ok(format!("{note}{}", page.render(offset)))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Tracked>> {
        self.conversations.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Write the project's work tree into its private store: (work tree, store, tree id).
    fn snapshot(&self, ctx: &ToolCtx) -> Result<(PathBuf, PathBuf, String)> {
        let _one = self.snapshot_lock.lock().unwrap_or_else(|p| p.into_inner());
        let repo = repository_of(ctx)?;
        let top = repo
            .as_ref()
            .map(|r| r.top.clone())
            .unwrap_or_else(|| ctx.root().to_path_buf());
        let id = codex_free_core::home::sha256_hex(top.as_os_str().as_encoded_bytes());
        let store = self.dir.path().join(format!("{}.git", &id[..16]));
        if !store.join("HEAD").exists() {
            init_store(&store, repo.as_ref())?;
        }
        let env = store_env(&store, &top);
        // The snapshot may hash a whole fresh work tree: the longer command timeout applies.
        let timeout = Duration::from_millis(ctx.config.command.max_timeout);
        // --ignore-errors: an unreadable file is left out instead of failing the snapshot
        // (git then exits 1; write-tree below still records everything else).
        if let Err(f) = run_git_in(
            ctx,
            &env,
            &["add", "-A", "--ignore-errors"],
            &scoped(ctx, Vec::new()),
            timeout,
            |_| {},
        )? {
            if f.code != Some(1) {
                return Err(f.into_error("add"));
            }
            tracing::warn!("show_changes snapshot: some files could not be read and are left out");
        }
        let mut tree = String::new();
        run_git_in(ctx, &env, &["write-tree"], &[], read_timeout(ctx), |l| {
            tree = String::from_utf8_lossy(l).trim().to_string()
        })?
        .map_err(|f| f.into_error("write-tree"))?;
        if tree.len() < 40 || !tree.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(Error::InvalidArgument(format!(
                "git write-tree gave no tree id ({tree:?})"
            )));
        }
        Ok((top, store, tree))
    }
}

/// The project's repository, when it is inside one.
struct Repo {
    top: PathBuf,
    git_dir: PathBuf,
    common_dir: PathBuf,
}

fn repository_of(ctx: &ToolCtx) -> Result<Option<Repo>> {
    let mut lines = Vec::new();
    let r = run_git_in(
        ctx,
        &GitEnv::default(),
        &[
            "rev-parse",
            "--path-format=absolute",
            "--show-toplevel",
            "--git-dir",
            "--git-common-dir",
        ],
        &[],
        read_timeout(ctx),
        |l| lines.push(PathBuf::from(String::from_utf8_lossy(l).into_owned())),
    )?;
    Ok(match (r, lines.as_slice()) {
        (Ok(()), [top, git_dir, common_dir]) => Some(Repo {
            top: top.clone(),
            git_dir: git_dir.clone(),
            common_dir: common_dir.clone(),
        }),
        // Not a repository (or a bare one): the root's files are the work tree.
        _ => None,
    })
}

/// Create a bare store; for a repository, borrow its objects, index and excludes.
fn init_store(store: &Path, repo: Option<&Repo>) -> Result<()> {
    let io = |what: &str, e: std::io::Error| Error::io(format!("{what} {}", store.display()), e);
    for d in ["objects/info", "refs/heads", "info"] {
        std::fs::create_dir_all(store.join(d)).map_err(|e| io("creating", e))?;
    }
    std::fs::write(
        store.join("config"),
        "[core]\n\trepositoryformatversion = 0\n",
    )
    .map_err(|e| io("writing", e))?;
    if let Some(r) = repo {
        let objects = r.common_dir.join("objects");
        std::fs::write(
            store.join("objects/info/alternates"),
            format!("{}\n", objects.display()),
        )
        .map_err(|e| io("writing", e))?;
        // Missing index (a fresh repository) or excludes: the store starts without them.
        let _ = std::fs::copy(r.git_dir.join("index"), store.join("index"));
        let _ = std::fs::copy(
            r.common_dir.join("info/exclude"),
            store.join("info/exclude"),
        );
    }
    // HEAD last: its presence marks a finished store.
    std::fs::write(store.join("HEAD"), "ref: refs/heads/main\n").map_err(|e| io("writing", e))
}

fn store_env(store: &Path, top: &Path) -> GitEnv {
    GitEnv {
        vars: vec![
            ("GIT_DIR", OsString::from(store)),
            ("GIT_WORK_TREE", OsString::from(top)),
            ("GIT_INDEX_FILE", OsString::from(store.join("index"))),
            // The repository's own config is not read; neither is the system's.
            ("GIT_CONFIG_NOSYSTEM", OsString::from("1")),
        ],
        writable: vec![store.to_path_buf()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use codex_free_core::config::Config;
    use codex_free_core::jail::Protected;
    use std::sync::Arc;

    fn ctx(root: &Path, home: &Path, lines: usize) -> ToolCtx {
        let mut c = Config::default();
        c.output.max_file_lines = lines;
        let p = Protected::standard(home, &home.join("codex.config.json"));
        ToolCtx::open(root, Arc::new(p), c, home).unwrap()
    }

    fn git(root: &Path, args: &[&str]) {
        let o = std::process::Command::new("git")
            .args(args)
            .current_dir(root)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }

    fn show(t: &ChangeTracker, c: &ToolCtx, from_start: bool, offset: usize) -> Result<String> {
        t.show(
            c,
            "conv",
            &ShowChangesArgs {
                from_start: Some(from_start),
                offset: Some(offset),
            },
        )
    }

    fn check(root: &Path, repo: bool) {
        // The state home beside the project (inside it, the OS sandbox keeps git from
        // listing the root: see `git::run_git_in`).
        let home = root.with_extension("home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(root.join("a.txt"), "one\n").unwrap();
        std::fs::write(root.join(".gitignore"), "ignored/\n").unwrap();
        if repo {
            git(root, &["init", "-q"]);
            git(root, &["add", "a.txt", ".gitignore"]);
            git(root, &["commit", "-qm", "init"]);
        }
        let head_before = repo.then(|| std::fs::read(root.join(".git/index")).unwrap());
        let c = ctx(root, &home, 1000);
        let t = ChangeTracker::new().unwrap();
        t.ensure_start(&c, "conv").unwrap();
        assert_eq!(
            show(&t, &c, false, 0).unwrap(),
            "(no changes since the last show_changes)"
        );
        std::fs::write(root.join("a.txt"), "one\ntwo\n").unwrap();
        std::fs::write(root.join("new.txt"), "fresh\n").unwrap();
        std::fs::create_dir_all(root.join("ignored")).unwrap();
        std::fs::write(root.join("ignored/x"), "skip\n").unwrap();
        let d = show(&t, &c, false, 0).unwrap();
        assert!(d.contains("+two") && d.contains("+fresh"), "{d}");
        assert!(!d.contains("skip"), "ignored files stay out: {d}");
        // Since the last show_changes: nothing; since the start: both again.
        assert_eq!(
            show(&t, &c, false, 0).unwrap(),
            "(no changes since the last show_changes)"
        );
        std::fs::remove_file(root.join("new.txt")).unwrap();
        let d = show(&t, &c, true, 0).unwrap();
        assert!(d.contains("+two") && !d.contains("fresh"), "{d}");
        if let Some(before) = head_before {
            assert_eq!(
                std::fs::read(root.join(".git/index")).unwrap(),
                before,
                "the user's index is untouched"
            );
            let o = std::process::Command::new("git")
                .args(["stash", "list"])
                .current_dir(root)
                .output()
                .unwrap();
            assert!(o.stdout.is_empty());
        }
    }

    #[test]
    fn tracks_changes_in_a_repository_and_outside_one() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("repo"), d.path().join("plain"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        check(&a, true);
        check(&b, false);
    }

    #[test]
    fn pages_cover_the_diff_once_and_offsets_continue_the_same_diff() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("p");
        let home = d.path().join("home");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        let c = ctx(&root, &home, 7);
        let t = ChangeTracker::new().unwrap();
        assert!(
            show(&t, &c, false, 3).is_err(),
            "an offset needs a diff shown first"
        );
        t.ensure_start(&c, "conv").unwrap();
        let body: String = (0..40).map(|i| format!("line {i}\n")).collect();
        std::fs::write(root.join("f.txt"), &body).unwrap();
        let mut all = String::new();
        let mut offset = 0;
        loop {
            let page = show(&t, &c, false, offset).unwrap();
            // A change made while paging does not leak into the diff being paged.
            std::fs::write(root.join("late.txt"), "late\n").unwrap();
            match codex_free_core::paging::parse_footer(&page) {
                Some(n) => {
                    let cut = page.rfind("\n(").unwrap();
                    all.push_str(&page[..cut + 1]);
                    offset = n.offset().unwrap() as usize;
                }
                None => {
                    all.push_str(&page);
                    break;
                }
            }
        }
        let added: Vec<&str> = all.lines().filter(|l| l.starts_with("+line")).collect();
        assert_eq!(added.len(), 40, "{all}");
        assert!(!all.contains("late"), "{all}");
        let e = show(&t, &c, false, 10_000).unwrap_err().to_string();
        assert!(e.contains("past the last diff line"), "{e}");
        // The next call without offset shows what came after.
        assert!(show(&t, &c, false, 0).unwrap().contains("+late"));
    }
}
