//! Where the tools' temporary files live, and what a killed server leaves behind.
//!
//! - **`write_file` temp files** (the atomic write's temp file, renamed over the target) go
//!   to `<repo>/.git/codex-free-tmp/` of the nearest repository around the target inside
//!   the project (a real `.git` directory on the same filesystem), where no `git status`,
//!   build or editor sees them; elsewhere they stay beside the target, as before. Their
//!   names carry the writing process (`.codex-free-tmp-<pid>-…`): one left by a process
//!   that is gone is removed the next time a write uses that folder, and the project's
//!   repository folder is swept when a server starts ([`sweep_project`]).
//! - **`show_changes` snapshot stores** (`<temp>/codex-free-changes-*`) hold a lock file
//!   while their process lives ([`OwnerLock`]); a store whose lock is free belongs to a
//!   process that is gone and is removed by the next tracker made ([`sweep_stores`]). A
//!   store without a lock file (an older version's) has no known owner and is left alone.
//!
//! Invariant: only our own, stale leftovers are removed: names with our prefix, regular
//! files or directories (never a link), and only when their owner is provably gone.

use std::collections::HashSet;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Name prefix of a write's temp file; the writing process's id follows.
pub const TMP_PREFIX: &str = ".codex-free-tmp-";

/// The folder for temp files inside a repository's `.git`.
pub const GIT_TMP_DIR: &str = "codex-free-tmp";

/// Name prefix of a `show_changes` snapshot folder under the temp folder.
pub const STORE_PREFIX: &str = "codex-free-changes-";

/// The lock file of a snapshot folder, held while its process lives.
const OWNER_LOCK: &str = "owner.lock";

/// Folders swept in this process already (at most this many are remembered).
const MAX_SWEPT: usize = 4096;

static SWEPT: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);

/// The temp-file name prefix of this process: `.codex-free-tmp-<pid>-`.
pub fn prefix() -> String {
    format!("{TMP_PREFIX}{}-", std::process::id())
}

/// Where the temp file of a write into `parent` (canonical, inside `root`) goes: the
/// `codex-free-tmp` folder of the nearest real `.git` directory from `parent` up to `root`
/// when it is on the same filesystem as `parent` (a rename cannot cross filesystems), else
/// `parent` itself. Stale temp files of that folder are removed on its first use here.
pub fn temp_dir_for(parent: &Path, root: &Path) -> PathBuf {
    let dir = git_tmp_dir(parent, root).unwrap_or_else(|| parent.to_path_buf());
    sweep_once(&dir);
    dir
}

fn git_tmp_dir(parent: &Path, root: &Path) -> Option<PathBuf> {
    let mut dir = Some(parent);
    while let Some(d) = dir {
        if !d.starts_with(root) {
            return None;
        }
        let git = d.join(".git");
        match fs::symlink_metadata(&git) {
            // A real repository folder (a `.git` file of a worktree or submodule points
            // elsewhere, possibly anywhere: not followed).
            Ok(m) if m.is_dir() => return usable_tmp(&git, parent),
            Ok(_) => return None,
            Err(_) => {}
        }
        dir = d.parent();
    }
    None
}

fn usable_tmp(git: &Path, parent: &Path) -> Option<PathBuf> {
    let tmp = git.join(GIT_TMP_DIR);
    if fs::symlink_metadata(&tmp).is_err() {
        let mut b = fs::DirBuilder::new();
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            b.mode(0o700);
        }
        // Another writer may make it at the same moment: checked below either way.
        let _ = b.create(&tmp);
    }
    let m = fs::symlink_metadata(&tmp).ok()?;
    if !m.is_dir() {
        return None;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if fs::metadata(parent).ok()?.dev() != m.dev() {
            return None;
        }
    }
    #[cfg(not(unix))]
    let _ = parent;
    Some(tmp)
}

/// The temp-file folder of the project at `root` (its `.git/codex-free-tmp`, when there is
/// one) swept of files of processes that are gone; returns how many were removed.
pub fn sweep_project(root: &Path) -> usize {
    let tmp = root.join(".git").join(GIT_TMP_DIR);
    match fs::symlink_metadata(&tmp) {
        Ok(m) if m.is_dir() => sweep_once(&tmp),
        _ => 0,
    }
}

fn sweep_once(dir: &Path) -> usize {
    {
        let mut swept = SWEPT.lock().unwrap_or_else(|p| p.into_inner());
        let set = swept.get_or_insert_with(HashSet::new);
        if set.contains(dir) || set.len() >= MAX_SWEPT {
            return 0;
        }
        set.insert(dir.to_path_buf());
    }
    sweep_dir(dir)
}

/// Remove the temp files in `dir` written by processes that are gone.
fn sweep_dir(dir: &Path) -> usize {
    let Ok(rd) = fs::read_dir(dir) else {
        return 0;
    };
    let mut n = 0;
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|s| s.strip_prefix(TMP_PREFIX))
            .and_then(|s| s.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let is_file = fs::symlink_metadata(e.path()).is_ok_and(|m| m.is_file());
        if is_file && !process_alive(pid) && fs::remove_file(e.path()).is_ok() {
            n += 1;
        }
    }
    if n > 0 {
        tracing::info!(
            "removed {n} temp file(s) of interrupted writes in {}",
            dir.display()
        );
    }
    n
}

/// Whether process `pid` exists (any owner). Unknown (non-Unix): assumed alive, so nothing
/// is removed.
fn process_alive(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return true;
        };
        // SAFETY: signal 0 only checks that the process exists; nothing is sent.
        if unsafe { libc::kill(pid, 0) } == 0 {
            return true;
        }
        std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
    }
    #[cfg(not(unix))]
    true
}

/// The lock a snapshot folder holds while its process lives (released by the kernel when
/// the process ends, however it ends).
#[derive(Debug)]
pub struct OwnerLock {
    _file: File,
}

impl OwnerLock {
    /// Lock `dir` as ours: the lock file is made and locked under a temporary name, then
    /// renamed into place, so no sweeper ever sees it unlocked.
    ///
    /// Errors: the file cannot be made or locked.
    pub fn take(dir: &Path) -> std::io::Result<Self> {
        let tmp = dir.join(format!("{OWNER_LOCK}.{}", std::process::id()));
        let file = File::create(&tmp)?;
        file.lock()?;
        fs::rename(&tmp, dir.join(OWNER_LOCK))?;
        Ok(Self { _file: file })
    }
}

/// Remove the snapshot folders under `temp` (the temp folder) whose owner is gone: ours by
/// name, a real folder, with a lock file nobody holds. Returns how many were removed.
pub fn sweep_stores(temp: &Path) -> usize {
    let n = sweep_owned(temp, STORE_PREFIX);
    if n > 0 {
        tracing::info!(
            "removed {n} show_changes snapshot folder(s) of servers that are gone from {}",
            temp.display()
        );
    }
    n
}

/// Name prefix of a process's folder for its commands' private `TMPDIR`s under the temp
/// folder ([`exec_tmp_parent`]).
pub const EXEC_TMP_PREFIX: &str = "codex-free-exec-";

/// This process's folder for its commands' private `TMPDIR`s: `<temp>/codex-free-exec-XXXXXX`
/// (mode 0700, locked as ours by an [`OwnerLock`]), made on first use; the folders of
/// processes that are gone are removed then. Reason: one folder per process, not one
/// `TMPDIR` per command directly in the temp folder, leaves the temp folder itself unchanged
/// by commands, so the sandbox's cached carve of it stays valid; and a killed server's
/// leftovers are found by their free lock. `None` when it cannot be made (each command then
/// gets its `TMPDIR` in the temp folder itself).
pub fn exec_tmp_parent() -> Option<&'static Path> {
    static PARENT: std::sync::OnceLock<Option<(PathBuf, OwnerLock)>> = std::sync::OnceLock::new();
    PARENT
        .get_or_init(|| {
            let temp = std::env::temp_dir();
            let n = sweep_owned(&temp, EXEC_TMP_PREFIX);
            if n > 0 {
                tracing::info!(
                    "removed {n} command TMPDIR folder(s) of servers that are gone from {}",
                    temp.display()
                );
            }
            let dir = tempfile::Builder::new()
                .prefix(EXEC_TMP_PREFIX)
                .tempdir_in(&temp)
                .ok()?
                .keep();
            let lock = OwnerLock::take(&dir).ok()?;
            Some((dir, lock))
        })
        .as_ref()
        .map(|(p, _)| p.as_path())
}

/// Remove the folders under `temp` named `prefix…` whose owner is gone (a real folder with
/// a lock file nobody holds); folders without a lock file have no known owner and stay.
fn sweep_owned(temp: &Path, prefix: &str) -> usize {
    let Ok(rd) = fs::read_dir(temp) else {
        return 0;
    };
    let mut n = 0;
    for e in rd.flatten() {
        let ours = e
            .file_name()
            .to_str()
            .is_some_and(|s| s.starts_with(prefix));
        if !ours || !fs::symlink_metadata(e.path()).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        let Ok(lock) = File::options().write(true).open(e.path().join(OWNER_LOCK)) else {
            continue; // no lock file: an older version's, owner unknown
        };
        if lock.try_lock().is_ok() && fs::remove_dir_all(e.path()).is_ok() {
            n += 1;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pid no process has: past the kernel's pid_max.
    const GONE: u32 = 4_194_305;

    #[test]
    fn writes_in_a_repository_use_its_git_folder_and_stale_files_go() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        fs::create_dir_all(root.join(".git")).unwrap();
        fs::create_dir_all(root.join("src/deep")).unwrap();
        let tmp = root.join(".git").join(GIT_TMP_DIR);
        fs::create_dir_all(&tmp).unwrap();
        let stale = tmp.join(format!("{TMP_PREFIX}{GONE}-abc"));
        let live = tmp.join(format!("{}xyz", prefix()));
        let other = tmp.join("notes.txt");
        for f in [&stale, &live, &other] {
            fs::write(f, "x").unwrap();
        }
        assert_eq!(temp_dir_for(&root.join("src/deep"), &root), tmp);
        assert!(!stale.exists(), "a stale temp file stayed");
        assert!(live.exists(), "a live process's temp file was removed");
        assert!(other.exists(), "a file not ours was removed");
        // Outside any repository: beside the target.
        let plain = tempfile::tempdir().unwrap();
        let p = plain.path().canonicalize().unwrap();
        assert_eq!(temp_dir_for(&p, &p), p);
    }

    #[cfg(unix)]
    #[test]
    fn a_git_link_is_not_followed() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), root.join(".git")).unwrap();
        assert_eq!(temp_dir_for(&root, &root), root);
        assert!(!elsewhere.path().join(GIT_TMP_DIR).exists());
    }

    #[test]
    fn only_stores_whose_owner_is_gone_are_removed() {
        let temp = tempfile::tempdir().unwrap();
        let mk = |name: &str| {
            let p = temp.path().join(name);
            fs::create_dir(&p).unwrap();
            fs::write(p.join("data"), "x").unwrap();
            p
        };
        let live = mk(&format!("{STORE_PREFIX}live"));
        let _held = OwnerLock::take(&live).unwrap();
        let gone = mk(&format!("{STORE_PREFIX}gone"));
        fs::write(gone.join(OWNER_LOCK), "").unwrap();
        let legacy = mk(&format!("{STORE_PREFIX}legacy"));
        let foreign = mk("someone-else");
        fs::write(foreign.join(OWNER_LOCK), "").unwrap();
        assert_eq!(sweep_stores(temp.path()), 1);
        assert!(!gone.exists());
        assert!(live.exists() && legacy.exists() && foreign.exists());
    }
}
