//! Sharing the memory folder between machines through any git remote
//! (`memories.sync.remote`): fetched before each consolidation, pushed after it, and by
//! `codex-free memories sync`.
//!
//! Network work goes through the `git` command line (so the user's SSH agent, credential
//! helpers and `~/.ssh/config` apply; we store no credential), with the remote URL after
//! `--`, an allowlist of remote forms (https, ssh, `user@host:path`, local paths; no remote
//! helper, so no `ext::` or planted `git-remote-*` runs), no terminal prompt, provider keys removed
//! from the child's environment and a [`GIT_TIMEOUT`]. Everything local (the merge, the
//! commit) is libgit2, so no user git configuration (hooks, signing, merge drivers) can
//! change what is written.
//!
//! Layout with sync on: each machine writes its evidence only under its own name —
//! `raw_memories/<machine>.md` and `rollout_summaries/<machine>/<stem>.md` — so two
//! machines never write the same evidence file. The merge is per file (no text merge):
//! a file changed on one side only takes that side; a file changed on both sides takes
//! the remote's version (ours for this machine's own evidence) and the merge sets a
//! *reconcile base*, so the next consolidation runs from the union of the evidence and
//! rewrites the consolidated files. History is never rewritten: no force push, no reset
//! of a published commit; a rejected push keeps the local commit and is retried by the
//! next sync.
//!
//! Invariant: after [`pull`] the working tree is clean at `HEAD`, and every commit that was
//! `HEAD` before is an ancestor of `HEAD` after; what a pull would bring is gated before it
//! is checked out, so a refused pull leaves `HEAD`, index and files exactly as they were.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use git2::{Oid, Repository, build::CheckoutBuilder};
use serde::{Deserialize, Serialize};

use super::folder::{self, MemoryFolder, git_err, remove_untracked_leftovers, signature};
use codex_free_core::Error;
use codex_free_core::Result;

/// File in the state home holding this machine's name in the shared folder.
pub const MACHINE_ID_FILE: &str = "machine_id";
/// File in the state home with the last sync's outcome ([`SyncState`]).
pub const SYNC_STATE_FILE: &str = "memories_sync.json";
pub use crate::layout::RAW_MEMORIES_DIR;
/// The branch of the remote that holds the shared memory.
pub const REMOTE_BRANCH: &str = "main";
/// Where the fetched remote branches are kept locally (`<prefix><branch>`).
pub const TRACKING_PREFIX: &str = "refs/codex-free/sync/heads/";
/// Longest a single `git fetch`/`git push` may take; a remote that hangs (an SSH host-key
/// prompt, a dead server) fails the sync instead of the consolidation waiting forever.
pub const GIT_TIMEOUT: Duration = Duration::from_secs(120);

/// The outcome of the last sync, kept in `<home>/memories_sync.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SyncState {
    /// Last attempt, unix seconds.
    pub last_attempt: Option<i64>,
    /// Last attempt that fetched and pushed without error, unix seconds.
    pub last_success: Option<i64>,
    /// The last attempt's error (fetch, merge or push), cleared by a full success.
    pub last_error: Option<String>,
    /// Set by a merge of two histories: the remote commit whose consolidated files were
    /// kept. The next consolidation runs even without new input, showing the agent what the
    /// union holds beyond that commit, then clears it.
    pub reconcile_base: Option<String>,
}

/// Sync facts for `memories status` and the UI.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SyncStatus {
    /// The remote URL with any password in it hidden.
    pub remote: String,
    /// This machine's name in the shared folder.
    pub machine: String,
    /// Local commits the remote does not have (as of the last fetch).
    pub ahead: usize,
    /// Remote commits not merged here yet (as of the last fetch).
    pub behind: usize,
    /// Last successful sync, unix seconds.
    pub last_success: Option<i64>,
    /// Last attempt, unix seconds.
    pub last_attempt: Option<i64>,
    /// The last error, if the last attempt failed.
    pub last_error: Option<String>,
    /// A merge is waiting for the consolidation that rewrites it from the union.
    pub reconcile_pending: bool,
}

/// What [`pull`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Pulled {
    /// The remote branch does not exist yet (an empty repository).
    RemoteEmpty,
    /// Nothing new on the remote.
    UpToDate,
    /// Only local commits are new (the push sends them).
    Ahead,
    /// Local `HEAD` moved forward to the remote's commit.
    FastForward {
        /// The new `HEAD`.
        commit: String,
    },
    /// Both sides had new commits: a merge commit with both as parents.
    Merged {
        /// The merge commit.
        commit: String,
        /// Paths changed on both sides (the remote's version kept, or ours for this
        /// machine's evidence).
        both_changed: Vec<String>,
    },
}

/// What one [`sync_now`] did.
#[derive(Debug, Clone, Serialize)]
pub struct SyncReport {
    /// The remote (password hidden).
    pub remote: String,
    /// This machine's name.
    pub machine: String,
    /// The pull.
    pub pulled: Pulled,
    /// Commits pushed (0 when the remote was up to date).
    pub pushed: usize,
    /// Commits still not on the remote.
    pub ahead: usize,
    /// Remote commits not merged.
    pub behind: usize,
    /// A consolidation from the union is due (after a merge).
    pub reconcile_pending: bool,
}

impl SyncReport {
    /// Plain-words text for the CLI.
    pub fn describe(&self) -> String {
        let pulled = match &self.pulled {
            Pulled::RemoteEmpty => "the remote has no memory yet".to_string(),
            Pulled::UpToDate => "nothing new on the remote".to_string(),
            Pulled::Ahead => "only local commits are new".to_string(),
            Pulled::FastForward { commit } => {
                format!("took the remote's commits (now at {})", short(commit))
            }
            Pulled::Merged {
                commit,
                both_changed,
            } => format!(
                "merged the remote's commits as {} ({} file(s) changed on both sides; the remote's version kept)",
                short(commit),
                both_changed.len()
            ),
        };
        format!(
            "memory sync with {} (this machine: {}): {pulled}; pushed {} commit(s); {} ahead, {} behind{}\n",
            self.remote,
            self.machine,
            self.pushed,
            self.ahead,
            self.behind,
            if self.reconcile_pending {
                "\nthe next consolidation rewrites the memory from the evidence of every machine (`memories consolidate --force` runs it now)"
            } else {
                ""
            }
        )
    }
}

fn short(c: &str) -> &str {
    &c[..c.len().min(10)]
}

/// This machine's name in the shared folder: `<host>-<8 hex>`, created once and kept in
/// `<home>/machine_id` (the random part keeps two homes on one host apart).
///
/// Errors: the file cannot be written.
pub fn machine_id(home: &Path) -> Result<String> {
    let p = home.join(MACHINE_ID_FILE);
    if let Ok(s) = std::fs::read_to_string(&p) {
        let s = s.trim().to_string();
        if valid_machine(&s) {
            return Ok(s);
        }
    }
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .unwrap_or_default();
    let mut slug: String = host
        .trim()
        .chars()
        .map(|c| c.to_ascii_lowercase())
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(24)
        .collect();
    slug = slug.trim_matches('-').to_string();
    if slug.is_empty() {
        slug = "machine".into();
    }
    let id = format!("{slug}-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    codex_free_core::home::write_atomic(&p, format!("{id}\n").as_bytes())?;
    Ok(id)
}

fn valid_machine(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 48
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.starts_with('-')
}

/// The evidence paths this machine owns: `raw_memories/<m>.md` and `rollout_summaries/<m>/`.
pub fn owns(machine: &str, path: &str) -> bool {
    path == format!("{RAW_MEMORIES_DIR}/{machine}.md")
        || path.starts_with(&format!("{}/{machine}/", folder::ROLLOUT_SUMMARIES_DIR))
}

/// Load `<home>/memories_sync.json` (default when missing or unreadable).
pub fn load_state(home: &Path) -> SyncState {
    std::fs::read_to_string(home.join(SYNC_STATE_FILE))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

fn save_state(home: &Path, s: &SyncState) -> Result<()> {
    let text = serde_json::to_string_pretty(s).unwrap_or_default();
    codex_free_core::home::write_atomic(&home.join(SYNC_STATE_FILE), text.as_bytes())
}

/// Forget the reconcile base (the consolidation that rewrote from the union succeeded).
pub fn clear_reconcile(home: &Path) -> Result<()> {
    let mut s = load_state(home);
    if s.reconcile_base.take().is_some() {
        save_state(home, &s)?;
    }
    Ok(())
}

/// `url` with the password of `scheme://user:password@host` replaced by `***`, for display.
pub fn display_url(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://")
        && let Some((userinfo, host)) = rest.split_once('@')
        && let Some((user, _)) = userinfo.split_once(':')
        && !userinfo.contains('/')
    {
        return format!("{scheme}://{user}:***@{host}");
    }
    url.to_string()
}

/// Run `git -C <root> <args>` for a network step: only the https, ssh and file transports
/// allowed (so no remote helper runs), hooks off, no prompt, no provider key in the environment, stdin
/// closed, killed after [`GIT_TIMEOUT`].
///
/// Errors: [`Error::Io`] when git is missing, times out or exits non-zero (with its stderr).
async fn git(root: &Path, what: &str, args: &[OsString]) -> Result<String> {
    let mut c = tokio::process::Command::new("git");
    c.arg("-C")
        .arg(root)
        .args([
            // The same allowlist as `allowed_remote`, enforced by git itself: every other
            // transport, remote helpers included, is refused (also in a redirect).
            "-c",
            "protocol.allow=never",
            "-c",
            "protocol.https.allow=always",
            "-c",
            "protocol.ssh.allow=always",
            "-c",
            "protocol.file.allow=always",
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "credential.interactive=never",
        ])
        .args(args)
        .env_clear()
        .envs(std::env::vars_os().filter(|(k, _)| {
            let k = k.to_string_lossy().to_ascii_uppercase();
            !(k.contains("API_KEY") || k.contains("APIKEY"))
        }))
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("LC_ALL", "C")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let child = c.spawn().map_err(|e| Error::Io {
        context: format!("memory sync: running git for {what} (is git installed?)"),
        source: e,
    })?;
    let out = match tokio::time::timeout(GIT_TIMEOUT, child.wait_with_output()).await {
        Ok(r) => r.map_err(|e| Error::Io {
            context: format!("memory sync: git {what}"),
            source: e,
        })?,
        Err(_) => {
            return Err(Error::Io {
                context: format!("memory sync: git {what}"),
                source: std::io::Error::other(format!(
                    "no answer within {} s",
                    GIT_TIMEOUT.as_secs()
                )),
            });
        }
    };
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let err: Vec<&str> = err
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("hint:"))
            .collect();
        return Err(Error::Io {
            context: format!("memory sync: git {what}"),
            source: std::io::Error::other(if err.is_empty() {
                format!("git exited with {}", out.status)
            } else {
                err.join(" / ")
            }),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The forms a sync remote may take, as named in refusals.
pub const ALLOWED_REMOTES: &str = "https://host/path, ssh://[user@]host[:port]/path, user@host:path, or an absolute local path (/srv/memory.git, file:///srv/memory.git)";

fn checked(url: &str) -> Result<()> {
    codex_free_core::config::check_sync_remote(url)
        .and_then(|()| allowed_remote(url))
        .map_err(|why| Error::InvalidArgument(format!("memories.sync.remote = {url:?} {why}")))
}

/// The allowlist of remote forms ([`ALLOWED_REMOTES`]): https, ssh (URL or scp-like
/// `user@host:path`) and local paths; everything else is refused — plain http and git://
/// (unauthenticated), and every `<transport>::<address>` remote helper, which makes git run
/// a `git-remote-<transport>` program (`ext::`, `fd::`, or one planted on `PATH`). A host
/// must be a host name or address (no leading `-`, which ssh would read as an option).
fn allowed_remote(url: &str) -> std::result::Result<(), String> {
    let refuse = |what: &str| Err(format!("{what}; use {ALLOWED_REMOTES}"));
    let host_ok = |h: &str| {
        !h.is_empty()
            && !h.starts_with('-')
            && h.chars().all(|c| {
                c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '[' | ']' | ':')
            })
    };
    let user_ok = |u: &str| {
        !u.is_empty()
            && !u.starts_with('-')
            && u.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '%' | ':'))
    };
    if url.contains("::") && !url.contains("://") {
        return refuse(
            "is a remote-helper address (<transport>::<address>), which makes git run a program",
        );
    }
    if let Some((scheme, rest)) = url.split_once("://") {
        let scheme = scheme.to_ascii_lowercase();
        if scheme == "file" {
            return if rest.starts_with('/') {
                Ok(())
            } else {
                refuse("is a file:// URL without an absolute path")
            };
        }
        if scheme != "https" && scheme != "ssh" {
            return refuse(&format!("uses the {scheme}:// transport"));
        }
        let authority = rest.split('/').next().unwrap_or("");
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        if userinfo.is_some_and(|u| !user_ok(u)) || !host_ok(hostport) {
            return refuse("has no plain host name");
        }
        if !rest[authority.len()..].starts_with('/') || rest.len() == authority.len() + 1 {
            return refuse("has no repository path after the host");
        }
        return Ok(());
    }
    if url.starts_with('/') {
        return Ok(());
    }
    // scp-like `[user@]host:path`: git reads it so when a ':' comes before any '/'.
    if let Some((authority, path)) = url.split_once(':')
        && !authority.contains('/')
    {
        let (user, host) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        if user.is_some_and(|u| !user_ok(u)) || !host_ok(host) || host.contains(':') {
            return refuse("has no plain host name before ':'");
        }
        if path.is_empty() {
            return refuse("has no repository path after ':'");
        }
        return Ok(());
    }
    refuse("is a relative path (it would depend on git's working directory)")
}

/// Fetch the remote's branches into [`TRACKING_PREFIX`] (pruned, no tags).
///
/// Errors: a refused URL ([`Error::InvalidArgument`]); git's error ([`Error::Io`]).
pub async fn fetch(root: &Path, url: &str) -> Result<()> {
    checked(url)?;
    let args: Vec<OsString> = [
        "fetch",
        "--no-tags",
        "--no-recurse-submodules",
        "--prune",
        "--quiet",
        "--",
        url,
        &format!("+refs/heads/*:{TRACKING_PREFIX}*"),
    ]
    .iter()
    .map(OsString::from)
    .collect();
    git(root, "fetch", &args).await.map(|_| ())
}

/// Push `HEAD` to the remote's [`REMOTE_BRANCH`] — never forced: a remote that moved on
/// refuses it, and the next sync merges first.
///
/// Errors: a refused URL; git's error (rejected, unreachable, refused by a hook).
pub async fn push(root: &Path, url: &str) -> Result<()> {
    checked(url)?;
    let args: Vec<OsString> = [
        "push",
        "--quiet",
        "--no-verify",
        "--",
        url,
        &format!("HEAD:refs/heads/{REMOTE_BRANCH}"),
    ]
    .iter()
    .map(OsString::from)
    .collect();
    git(root, "push", &args).await?;
    // The remote now holds HEAD: keep the tracking ref in step for ahead/behind.
    let repo = Repository::open(root).map_err(git_err("open"))?;
    if let Ok(h) = repo.head()
        && let Some(id) = h.target()
    {
        repo.reference(
            &format!("{TRACKING_PREFIX}{REMOTE_BRANCH}"),
            id,
            true,
            "pushed",
        )
        .map_err(git_err("tracking ref"))?;
    }
    Ok(())
}

fn tracking(repo: &Repository) -> Option<Oid> {
    repo.find_reference(&format!("{TRACKING_PREFIX}{REMOTE_BRANCH}"))
        .ok()
        .and_then(|r| r.target())
}

/// Commits `HEAD` has that the last fetched remote state lacks, and the reverse.
pub fn ahead_behind(root: &Path) -> (usize, usize) {
    let Ok(repo) = Repository::open(root) else {
        return (0, 0);
    };
    let head = repo.head().ok().and_then(|h| h.target());
    match (head, tracking(&repo)) {
        (Some(h), Some(t)) => repo.graph_ahead_behind(h, t).unwrap_or((0, 0)),
        (Some(h), None) => {
            let mut w = match repo.revwalk() {
                Ok(w) => w,
                Err(_) => return (0, 0),
            };
            if w.push(h).is_err() {
                return (0, 0);
            }
            (w.count(), 0)
        }
        (None, Some(t)) => {
            let mut w = match repo.revwalk() {
                Ok(w) => w,
                Err(_) => return (0, 0),
            };
            if w.push(t).is_err() {
                return (0, 0);
            }
            (0, w.count())
        }
        (None, None) => (0, 0),
    }
}

type Flat = BTreeMap<String, (Oid, i32)>;

fn flatten(repo: &Repository, tree: Option<&git2::Tree<'_>>) -> Result<Flat> {
    let mut out = Flat::new();
    let Some(tree) = tree else { return Ok(out) };
    tree.walk(git2::TreeWalkMode::PreOrder, |dir, e| {
        if e.kind() == Some(git2::ObjectType::Blob) {
            let name = e.name().unwrap_or("");
            out.insert(format!("{dir}{name}"), (e.id(), e.filemode()));
        }
        git2::TreeWalkResult::Ok
    })
    .map_err(git_err("walk tree"))?;
    let _ = repo;
    Ok(out)
}

/// Largest file a pull may bring, in bytes: the folder holds model-written notes and
/// summaries of a few KiB (`MEMORY.md`'s budget is 15 KiB), so 1 MiB fits any of them with
/// room to spare and stops a remote from filling the disk through the working tree.
pub const MAX_PULLED_FILE_BYTES: u64 = 1 << 20;
/// Largest total of the files a pulled tree may hold, in bytes (years of per-rollout
/// summaries at a few KiB each stay far below it).
pub const MAX_PULLED_TREE_BYTES: u64 = 256 << 20;
/// Problems listed at most in one refusal (the rest are counted).
const MAX_LISTED: usize = 12;

/// What a pull would make `HEAD`, computed without touching `HEAD`, the index or the files.
struct Candidate {
    /// The commit `HEAD` would point at.
    commit: Oid,
    /// Its tree.
    tree: Oid,
    /// The message of the branch move.
    reflog: &'static str,
    /// What the caller is told.
    pulled: Pulled,
    /// The remote commit to record as reconcile base (a merge).
    reconcile: Option<Oid>,
}

/// Merge the fetched remote branch into `HEAD` (see the module doc for the per-file rule),
/// but only when the result passes the write gate: the candidate tree is checked from the
/// object database first ([`tree_problems`], then [`gate::check_tree`] under `budget`), and
/// only an accepted one is checked out. A refused pull leaves `HEAD`, the index and the
/// working tree exactly as they were, first pull (no `HEAD` yet) included. The working tree
/// must be clean (the caller commits or rescues first).
///
/// Errors: [`Error::Busy`] when the working tree has uncommitted changes; [`Error::Budget`]
/// listing every reason when the result fails the gate (nothing of it is kept); git errors
/// (a checkout that fails half-way is put back to the `HEAD` before).
///
/// [`gate::check_tree`]: super::gate::check_tree
pub fn integrate(
    folder: &MemoryFolder,
    home: &Path,
    machine: &str,
    budget: &super::budget::ArtifactBudget,
) -> Result<Pulled> {
    let repo = folder.repo()?;
    if tracking(&repo).is_none() {
        return Ok(Pulled::RemoteEmpty);
    }
    if folder.workspace_diff(0)?.has_changes() {
        return Err(Error::Busy(
            "the memory folder has uncommitted changes; commit or discard them before a sync"
                .into(),
        ));
    }
    let before = folder.head()?;
    let Some(c) = candidate(&repo, before, machine)? else {
        return Ok(if before == tracking(&repo) {
            Pulled::UpToDate
        } else {
            Pulled::Ahead
        });
    };
    let tree = repo.find_tree(c.tree).map_err(git_err("candidate tree"))?;
    let (mut problems, oversize) = tree_problems(&repo, &tree)?;
    // The contents are read only when no file is over the size limits; every other
    // problem is listed together with the content gate's.
    if !oversize {
        let base = folder::tree_of(&repo, before, "head tree")?;
        problems.extend(super::gate::check_tree(&repo, &tree, base.as_ref(), budget));
    }
    if !problems.is_empty() {
        let more = problems.len().saturating_sub(MAX_LISTED);
        problems.truncate(MAX_LISTED);
        return Err(Error::Budget(format!(
            "the sync remote's memory fails the write gate, not taken (HEAD, index and files stay as they were): {}{}",
            problems.join("; "),
            if more > 0 {
                format!("; and {more} more")
            } else {
                String::new()
            }
        )));
    }
    if let Err(e) = adopt(folder, &repo, &tree, &c) {
        // Put back what the half-done checkout changed; report the checkout's error.
        if let Err(back) = put_back(folder, &repo, before) {
            tracing::warn!("memory sync: putting the folder back failed: {back}");
        }
        return Err(e);
    }
    if let Some(base) = c.reconcile {
        let mut s = load_state(home);
        s.reconcile_base = Some(base.to_string());
        save_state(home, &s)?;
    }
    Ok(c.pulled)
}

/// The commit a pull would move `HEAD` to, or `None` when `HEAD` already holds the remote's
/// commit. A merge commit is written to the object database only (no ref points at it
/// unless it is adopted).
fn candidate(repo: &Repository, ours: Option<Oid>, machine: &str) -> Result<Option<Candidate>> {
    let Some(theirs) = tracking(repo) else {
        return Ok(None);
    };
    let theirs_c = repo.find_commit(theirs).map_err(git_err("remote commit"))?;
    let fast_forward = |reflog| Candidate {
        commit: theirs,
        tree: theirs_c.tree_id(),
        reflog,
        pulled: Pulled::FastForward {
            commit: theirs.to_string(),
        },
        reconcile: None,
    };
    let Some(ours) = ours else {
        return Ok(Some(fast_forward("sync: first pull")));
    };
    if ours == theirs
        || repo
            .graph_descendant_of(ours, theirs)
            .map_err(git_err("ancestry"))?
    {
        return Ok(None);
    }
    if repo
        .graph_descendant_of(theirs, ours)
        .map_err(git_err("ancestry"))?
    {
        return Ok(Some(fast_forward("sync: fast-forward")));
    }
    // Two histories: a per-file three-way merge (no text merge, so no conflict markers).
    let ours_c = repo.find_commit(ours).map_err(git_err("head"))?;
    // Unrelated histories (two folders started apart): no base, everything is "added" on both.
    let base_tree = folder::tree_of(repo, repo.merge_base(ours, theirs).ok(), "base tree")?;
    let b = flatten(repo, base_tree.as_ref())?;
    let o = flatten(repo, Some(&ours_c.tree().map_err(git_err("tree"))?))?;
    let t = flatten(repo, Some(&theirs_c.tree().map_err(git_err("tree"))?))?;
    let paths: BTreeSet<&String> = b.keys().chain(o.keys()).chain(t.keys()).collect();
    let mut index = git2::Index::new().map_err(git_err("index"))?;
    let mut both_changed = Vec::new();
    for p in paths {
        let (bv, ov, tv) = (b.get(p), o.get(p), t.get(p));
        let pick = if ov == tv {
            ov
        } else if ov == bv {
            tv
        } else if tv == bv {
            ov
        } else {
            both_changed.push(p.clone());
            if owns(machine, p) { ov } else { tv }
        };
        if let Some((id, mode)) = pick {
            index
                .add(&git2::IndexEntry {
                    ctime: git2::IndexTime::new(0, 0),
                    mtime: git2::IndexTime::new(0, 0),
                    dev: 0,
                    ino: 0,
                    mode: *mode as u32,
                    uid: 0,
                    gid: 0,
                    file_size: 0,
                    id: *id,
                    flags: (p.len().min(0xfff)) as u16,
                    flags_extended: 0,
                    path: p.as_bytes().to_vec(),
                })
                .map_err(git_err("merge index"))?;
        }
    }
    let tree_id = index.write_tree_to(repo).map_err(git_err("merge tree"))?;
    let tree = repo.find_tree(tree_id).map_err(git_err("merge tree"))?;
    let msg = format!(
        "Merge memory from the sync remote\n\nBoth machines consolidated since they last met. Files changed on both sides keep the remote's version (this machine's own evidence keeps ours); the next consolidation rewrites the memory from the evidence of both.\n\n{}",
        both_changed
            .iter()
            .map(|p| format!("both changed: {p}\n"))
            .collect::<String>()
    );
    let sig = signature()?;
    let id = repo
        .commit(None, &sig, &sig, &msg, &tree, &[&ours_c, &theirs_c])
        .map_err(git_err("merge commit"))?;
    Ok(Some(Candidate {
        commit: id,
        tree: tree_id,
        reflog: "sync: merge",
        pulled: Pulled::Merged {
            commit: id.to_string(),
            both_changed,
        },
        reconcile: Some(theirs),
    }))
}

/// What in `tree` no memory folder holds, one line per entry: symbolic links (a pull must
/// not plant a link to `/etc/passwd` or `~/.ssh/id_rsa`), submodules, hidden names (never
/// committed here: `.gitattributes` and the like would steer git), files over
/// [`MAX_PULLED_FILE_BYTES`] and a total over [`MAX_PULLED_TREE_BYTES`]; and whether a size
/// limit was passed. Sizes come from the object headers, so a huge blob is never read.
fn tree_problems(repo: &Repository, tree: &git2::Tree<'_>) -> Result<(Vec<String>, bool)> {
    let odb = repo.odb().map_err(git_err("object database"))?;
    let mut out = Vec::new();
    let mut total: u64 = 0;
    let mut oversize = false;
    let mut failed = None;
    tree.walk(git2::TreeWalkMode::PreOrder, |dir, e| {
        let name = String::from_utf8_lossy(e.name_bytes()).into_owned();
        let path = format!("{dir}{name}");
        if name.starts_with('.') {
            out.push(format!(
                "{path}: a hidden name, never part of a memory folder"
            ));
            return git2::TreeWalkResult::Skip;
        }
        match (e.kind(), e.filemode()) {
            (Some(git2::ObjectType::Tree), _) => {}
            (Some(git2::ObjectType::Blob), 0o120000) => {
                let target = repo
                    .find_blob(e.id())
                    .map(|b| {
                        String::from_utf8_lossy(&b.content()[..b.content().len().min(200)])
                            .chars()
                            .map(|c| if c.is_control() { '?' } else { c })
                            .collect::<String>()
                    })
                    .unwrap_or_default();
                out.push(format!(
                    "{path}: a symbolic link (to {target}); a memory folder holds only regular files"
                ));
            }
            (Some(git2::ObjectType::Blob), _) => match odb.read_header(e.id()) {
                Ok((size, _)) => {
                    let size = size as u64;
                    total += size;
                    if size > MAX_PULLED_FILE_BYTES {
                        oversize = true;
                        out.push(format!(
                            "{path}: {size} bytes, over the {MAX_PULLED_FILE_BYTES}-byte limit of a pulled file"
                        ));
                    }
                }
                Err(err) => {
                    failed = Some(err);
                    return git2::TreeWalkResult::Abort;
                }
            },
            _ => out.push(format!(
                "{path}: a submodule; a memory folder holds only regular files"
            )),
        }
        git2::TreeWalkResult::Ok
    })
    .or_else(|e| if failed.is_some() { Ok(()) } else { Err(e) })
    .map_err(git_err("walk tree"))?;
    if let Some(e) = failed {
        return Err(git_err("object header")(e));
    }
    if total > MAX_PULLED_TREE_BYTES {
        oversize = true;
        out.push(format!(
            "the files total {total} bytes, over the {MAX_PULLED_TREE_BYTES}-byte limit of a pulled tree"
        ));
    }
    Ok((out, oversize))
}

/// Check out the accepted `tree` and move the branch `HEAD` names to the candidate.
fn adopt(
    folder: &MemoryFolder,
    repo: &Repository,
    tree: &git2::Tree<'_>,
    c: &Candidate,
) -> Result<()> {
    let mut co = CheckoutBuilder::new();
    co.force().remove_untracked(true);
    repo.checkout_tree(tree.as_object(), Some(&mut co))
        .map_err(git_err("checkout"))?;
    let mut index = repo.index().map_err(git_err("index"))?;
    index.read_tree(tree).map_err(git_err("read tree"))?;
    index.write().map_err(git_err("write index"))?;
    repo.reference(&head_branch(repo)?, c.commit, true, c.reflog)
        .map_err(git_err("move branch"))?;
    remove_untracked_leftovers(folder.root(), repo)
}

/// The branch `HEAD` is a symbolic ref to (born or not).
fn head_branch(repo: &Repository) -> Result<String> {
    let head_ref = repo.find_reference("HEAD").map_err(git_err("HEAD"))?;
    Ok(head_ref
        .symbolic_target_bytes()
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_else(|| "refs/heads/main".to_string()))
}

/// Put the branch, index and files back at `to` (the `HEAD` before a pull); with no `HEAD`
/// before, the branch is removed again (unborn) and every visible entry goes.
fn put_back(folder: &MemoryFolder, repo: &Repository, to: Option<Oid>) -> Result<()> {
    let branch = head_branch(repo)?;
    match to {
        Some(to) => {
            repo.reference(&branch, to, true, "sync: put back")
                .map_err(git_err("restore branch"))?;
        }
        None => {
            if let Ok(mut r) = repo.find_reference(&branch) {
                r.delete().map_err(git_err("restore branch"))?;
            }
        }
    }
    folder.restore_head()
}

/// Fetch then merge ([`integrate`], which gates what the remote brings under `budget`, the
/// user's `memories` budgets); the error is recorded in the sync state.
///
/// Errors: as [`fetch`] and [`integrate`]; [`Error::Budget`] when the merged folder fails
/// the gate (nothing of it is kept: `HEAD`, index and files stay as they were).
pub async fn pull(
    folder: &MemoryFolder,
    home: &Path,
    url: &str,
    budget: &super::budget::ArtifactBudget,
) -> Result<Pulled> {
    let machine = machine_id(home)?;
    let r = async {
        fetch(folder.root(), url).await?;
        let pulled = integrate(folder, home, &machine, budget)?;
        if matches!(pulled, Pulled::FastForward { .. } | Pulled::Merged { .. }) {
            // HEAD moved to the remote's memory: whatever follows a commit runs.
            codex_free_core::events::emit(home, codex_free_core::events::MemoryEvent::Committed);
        }
        Ok(pulled)
    }
    .await;
    record(home, r.as_ref().err(), false);
    r
}

/// Push when local commits are ahead; the error is recorded, the local commits stay.
///
/// Errors: as [`push`].
pub async fn push_if_ahead(folder: &MemoryFolder, home: &Path, url: &str) -> Result<usize> {
    let (ahead, _) = ahead_behind(folder.root());
    if ahead == 0 || folder.head()?.is_none() {
        record(home, None, true);
        return Ok(0);
    }
    let r = push(folder.root(), url).await;
    record(home, r.as_ref().err(), true);
    r.map(|_| ahead)
}

fn record(home: &Path, err: Option<&Error>, finished: bool) {
    let mut s = load_state(home);
    let now = chrono::Utc::now().timestamp();
    s.last_attempt = Some(now);
    match err {
        Some(e) => s.last_error = Some(e.to_string()),
        None if finished => {
            s.last_error = None;
            s.last_success = Some(now);
        }
        None => {}
    }
    if let Err(e) = save_state(home, &s) {
        tracing::warn!("could not record the memory sync state: {e}");
    }
}

/// `memories sync`: pull (fetch + merge) then push, on the folder of `home`.
///
/// Errors: [`Error::InvalidArgument`] when no remote is configured; [`Error::Busy`] while a
/// consolidation runs (`running`) or with uncommitted changes; fetch/merge/push errors
/// (recorded in the status; nothing is lost — local commits stay and are pushed later).
pub async fn sync_now(
    home: &Path,
    remote: Option<&str>,
    running: bool,
    budget: &super::budget::ArtifactBudget,
) -> Result<SyncReport> {
    let url = remote.ok_or_else(|| {
        Error::InvalidArgument(
            "no sync remote: set memories.sync.remote in codex.config.json to a git remote URL (e.g. git@github.com:me/memory.git)".into(),
        )
    })?;
    checked(url)?;
    if running {
        return Err(Error::Busy(
            "a consolidation is running; it syncs when it finishes (or retry then)".into(),
        ));
    }
    let (folder, _) = MemoryFolder::open_or_init(home)?;
    let pulled = pull(&folder, home, url, budget).await?;
    let pushed = push_if_ahead(&folder, home, url).await?;
    let (ahead, behind) = ahead_behind(folder.root());
    Ok(SyncReport {
        remote: display_url(url),
        machine: machine_id(home)?,
        pulled,
        pushed,
        ahead,
        behind,
        reconcile_pending: load_state(home).reconcile_base.is_some(),
    })
}

/// True while a consolidation holds the job of the state home `home` (sync and review
/// refuse to move the folder under it).
///
/// Errors: the database cannot be opened.
pub fn consolidation_running(home: &Path) -> Result<bool> {
    let db = home.join(codex_free_store::DB_FILE);
    codex_free_store::Store::open_in_home(home)
        .and_then(|s| s.phase2_running())
        .map_err(|e| {
            Error::Store(format!(
                "{} (state home {}; is it writable by this user?)",
                e,
                db.parent().unwrap_or(home).display()
            ))
        })
}

/// Status facts, `None` when no remote is configured.
pub fn status(home: &Path, remote: Option<&str>) -> Option<SyncStatus> {
    let url = remote?;
    let s = load_state(home);
    let (ahead, behind) = ahead_behind(&folder::folder_path(home));
    Some(SyncStatus {
        remote: display_url(url),
        machine: std::fs::read_to_string(home.join(MACHINE_ID_FILE))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "(named at the first sync)".into()),
        ahead,
        behind,
        last_success: s.last_success,
        last_attempt: s.last_attempt,
        last_error: s.last_error,
        reconcile_pending: s.reconcile_base.is_some(),
    })
}

/// The one-line status text.
pub fn status_line(s: &SyncStatus) -> String {
    format!(
        "{} as {}: {} ahead, {} behind; last sync {}{}{}",
        s.remote,
        s.machine,
        s.ahead,
        s.behind,
        s.last_success
            .map(codex_free_core::time::iso)
            .unwrap_or_else(|| "never".into()),
        s.last_error
            .as_deref()
            .map(|e| format!("; LAST ERROR: {e}"))
            .unwrap_or_default(),
        if s.reconcile_pending {
            "; a merge waits for the next consolidation"
        } else {
            ""
        }
    )
}

/// Paths of this machine's evidence in the folder at `root`, for sync's layout.
pub fn evidence_paths(root: &Path, machine: &str) -> (PathBuf, PathBuf) {
    (
        root.join(RAW_MEMORIES_DIR).join(format!("{machine}.md")),
        root.join(folder::ROLLOUT_SUMMARIES_DIR).join(machine),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_that_make_git_run_commands_are_refused() {
        for bad in [
            "--upload-pack=touch /tmp/x",
            " -oProxyCommand=x",
            "ext::sh -c touch% /tmp/x",
            "FD::17",
            "a\nb",
            "",
            "evil::x",
            "x::/srv/memory.git",
            "Evil::https://example.com/m.git",
            "http://example.com/m.git",
            "git://example.com/m.git",
            "ftp://example.com/m.git",
            "ssh://-oProxyCommand=x/m.git",
            "ssh://host",
            "https://",
            "-oProxyCommand=x:m.git",
            "git@-oProxyCommand=x:m.git",
            "host:",
            "relative/memory.git",
            "memory.git",
            "file://relative/m.git",
        ] {
            let e = checked(bad).expect_err(bad).to_string();
            assert!(e.contains("memories.sync.remote"), "{e}");
        }
        assert!(
            checked("evil::x")
                .unwrap_err()
                .to_string()
                .contains("https://")
        );
        for ok in [
            "git@github.com:me/memory.git",
            "github.com:me/memory.git",
            "https://example.com/me/memory.git",
            "HTTPS://example.com/me/memory.git",
            "https://me:tok3n@example.com/m.git",
            "ssh://git@host:22/memory.git",
            "ssh://git@[::1]:22/memory.git",
            "/srv/git/memory.git",
            "/srv/git/with space.git",
            "file:///srv/git/memory.git",
        ] {
            assert!(checked(ok).is_ok(), "{ok}");
        }
        assert_eq!(
            display_url("https://me:tok3n@example.com/m.git"),
            "https://me:***@example.com/m.git"
        );
    }

    #[test]
    fn machine_ids_are_stable_and_owned_paths_scoped() {
        let d = tempfile::tempdir().unwrap();
        let a = machine_id(d.path()).unwrap();
        assert_eq!(machine_id(d.path()).unwrap(), a);
        assert!(valid_machine(&a), "{a}");
        assert!(owns(&a, &format!("raw_memories/{a}.md")));
        assert!(owns(&a, &format!("rollout_summaries/{a}/x.md")));
        assert!(!owns(&a, "rollout_summaries/other-1234/x.md"));
        assert!(!owns(&a, "MEMORY.md"));
    }
}
