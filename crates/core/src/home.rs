//! The state home (`~/.codex-free/`, override `CODEX_FREE_HOME`) and the one way shared
//! files are written: under a cross-process lock, to a temp file in the same directory,
//! fsynced, then renamed over the target (and the directory fsynced).
//!
//! Invariant: nothing here writes inside a served project; every shared file goes through
//! [`write_atomic`] or [`with_lock`] + [`write_atomic_unlocked`].

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::Error;
use crate::Result;
use crate::error::IoContext;

/// Environment variable that overrides the state home.
pub const HOME_ENV: &str = "CODEX_FREE_HOME";

/// The state home: `$CODEX_FREE_HOME` if set and non-empty, else `~/.codex-free`.
///
/// Errors: [`Error::Config`] when neither the variable nor a home directory is available.
pub fn state_home() -> Result<PathBuf> {
    if let Some(v) = std::env::var_os(HOME_ENV)
        && !v.is_empty()
    {
        return Ok(PathBuf::from(v));
    }
    std::env::home_dir()
        .map(|h| h.join(".codex-free"))
        .ok_or_else(|| Error::Config(format!("no home directory; set {HOME_ENV}")))
}

/// Create the state home `dir` (and missing parents) readable by this user only (0700 on
/// Unix): it holds tokens, transcripts, the memory database and notes. An existing
/// directory is left as it is — it may be one the user chose and shares — but one open to
/// other users is reported in the log.
///
/// Errors: [`Error::Io`] when it cannot be created.
pub fn create_private_dir(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            if let Ok(m) = fs::metadata(dir)
                && m.permissions().mode() & 0o077 != 0
            {
                tracing::info!(
                    "state home {} is readable by other users (mode {:o}); chmod 700 keeps it private",
                    dir.display(),
                    m.permissions().mode() & 0o777
                );
            }
        }
        return Ok(());
    }
    make_private_dir(dir)
}

/// Create `dir` and its missing parents with mode 0700 on Unix (an existing one is left
/// as it is).
///
/// Errors: [`Error::Io`] when it cannot be created.
pub(crate) fn make_private_dir(dir: &Path) -> Result<()> {
    let mut b = fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir).ctx(|| format!("creating {}", dir.display()))
}

/// The homes of the other coding agents Codex Free reads transcripts from and keeps its
/// tools out of. Each is the environment variable when set and non-empty, else the
/// agent's default under the user's home directory; `None` only without either.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentHomes {
    /// Codex CLI: `$CODEX_HOME`, default `~/.codex`.
    pub codex: Option<PathBuf>,
    /// Claude Code: `$CLAUDE_CONFIG_DIR`, default `~/.claude`.
    pub claude: Option<PathBuf>,
    /// pi coding agent: `$PI_CODING_AGENT_DIR`, default `~/.pi/agent`.
    pub pi: Option<PathBuf>,
}

impl AgentHomes {
    /// Read the three variables (and `HOME` for the defaults) from the process environment.
    pub fn from_env() -> Self {
        let home = std::env::home_dir();
        let var = |k: &str, default: &[&str]| -> Option<PathBuf> {
            match std::env::var_os(k) {
                Some(v) if !v.is_empty() => Some(PathBuf::from(v)),
                _ => home
                    .as_ref()
                    .map(|h| default.iter().fold(h.clone(), |p, s| p.join(s))),
            }
        };
        Self {
            codex: var("CODEX_HOME", &[".codex"]),
            claude: var("CLAUDE_CONFIG_DIR", &[".claude"]),
            pi: var("PI_CODING_AGENT_DIR", &[".pi", "agent"]),
        }
    }

    /// Every place the agents keep their configuration, with a description: the homes of
    /// [`Self::from_env`], the default homes too when a variable points elsewhere (an agent
    /// started without the variable still reads them), and Claude Code's `~/.claude.json`
    /// (its MCP server list, commands it starts unconfined). The one list both the tools'
    /// path jail and the command sandbox protect.
    pub fn protected() -> Vec<(PathBuf, &'static str)> {
        let env = Self::from_env();
        let mut out: Vec<(PathBuf, &'static str)> = Vec::new();
        let named = [
            (env.codex, "Codex's home ($CODEX_HOME, default ~/.codex)"),
            (
                env.claude,
                "Claude Code's home ($CLAUDE_CONFIG_DIR, default ~/.claude)",
            ),
            (
                env.pi,
                "the pi agent's home ($PI_CODING_AGENT_DIR, default ~/.pi/agent)",
            ),
        ];
        out.extend(named.into_iter().filter_map(|(p, w)| p.map(|p| (p, w))));
        if let Some(h) = std::env::home_dir() {
            out.push((h.join(".codex"), "Codex's default home (~/.codex)"));
            out.push((h.join(".claude"), "Claude Code's default home (~/.claude)"));
            out.push((
                h.join(".pi").join("agent"),
                "the pi agent's default home (~/.pi/agent)",
            ));
            out.push((
                h.join(".claude.json"),
                "Claude Code's settings file (~/.claude.json)",
            ));
        }
        let mut seen = std::collections::HashSet::new();
        out.retain(|(p, _)| seen.insert(p.clone()));
        out
    }
}

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// `<name>-<hash>` for a canonical project root: the last path component (sanitised to
/// `[A-Za-z0-9._-]`, at most 40 chars) and the first 16 hex chars of SHA-256 of the full
/// path. Two checkouts of one repo get different names, so they never share notes.
pub fn project_slug(canonical_root: &Path) -> String {
    let name: String = canonical_root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "root".into())
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    let hash = sha256_hex(canonical_root.as_os_str().as_encoded_bytes());
    format!("{name}-{}", &hash[..16])
}

/// Run `f` while holding an exclusive advisory lock on `<path>.lock` (created if needed).
/// Blocks until the lock is free. The lock file is never deleted (deleting it would race).
pub fn with_lock<T>(path: &Path, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let lock_path = lock_path_for(path);
    if let Some(dir) = lock_path.parent() {
        fs::create_dir_all(dir).ctx(|| format!("creating {}", dir.display()))?;
    }
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .ctx(|| format!("opening lock {}", lock_path.display()))?;
    lock.lock()
        .ctx(|| format!("locking {}", lock_path.display()))?;
    let out = f();
    let _ = lock.unlock();
    out
}

fn lock_path_for(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

/// Write `bytes` to `path` atomically under its lock (see [`with_lock`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    with_lock(path, || write_atomic_unlocked(path, bytes))
}

/// Write `bytes` to `path` atomically, assuming the caller holds the lock: temp file in the
/// same directory, `fsync`, `rename`, `fsync` of the directory. A crash at any point leaves
/// either the old or the new content, never a mix. The file ends up with the temp file's
/// mode, 0600 on Unix whatever the umask: state-home files (notes, bindings, transcripts)
/// are the user's alone. Files in a project are written by the tools' own writer, which
/// honours the umask.
pub fn write_atomic_unlocked(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_mode(path, bytes, false)
}

/// As [`write_atomic`], creating the file with mode 0600 (token files).
pub fn write_atomic_private(path: &Path, bytes: &[u8]) -> Result<()> {
    with_lock(path, || write_atomic_mode(path, bytes, true))
}

/// As [`write_atomic_unlocked`] with mode 0600; the caller holds the lock.
pub fn write_atomic_private_unlocked(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_mode(path, bytes, true)
}

fn write_atomic_mode(path: &Path, bytes: &[u8], private: bool) -> Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(dir).ctx(|| format!("creating {}", dir.display()))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .tempfile_in(dir)
        .ctx(|| format!("creating temp file in {}", dir.display()))?;
    #[cfg(unix)]
    if private {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(fs::Permissions::from_mode(0o600))
            .ctx(|| "setting permissions".into())?;
    }
    #[cfg(not(unix))]
    let _ = private;
    tmp.write_all(bytes)
        .ctx(|| format!("writing {}", path.display()))?;
    tmp.as_file()
        .sync_all()
        .ctx(|| format!("syncing {}", path.display()))?;
    tmp.persist(path)
        .map_err(|e| Error::io(format!("renaming into {}", path.display()), e.error))?;
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Append one record (`line`, ending in `\n`) to `file` whole or not at all: the reason a
/// full disk used to leave torn lines (a partial record with the next one glued on).
///
/// `file` must be opened for reading and appending (`O_APPEND`). Under an exclusive advisory
/// lock on the file (so cooperating writers of other processes wait, and the length read
/// here is where this record starts): when the file is empty `if_empty` (e.g. a header
/// line, may be empty) is written first; when its last byte is not `\n` (a record torn by
/// an older writer or a crash) a `\n` is written first so the next record starts on its
/// own line. Everything goes out in one `write_all`; when that fails (ENOSPC, EFBIG, EIO)
/// the file is cut back to its previous length, so no partial record stays.
///
/// Errors: the I/O error of the lock, the write or the metadata read (after the cut-back).
pub fn append_whole(file: &File, line: &[u8], if_empty: &[u8]) -> std::io::Result<()> {
    file.lock()?;
    let out = append_locked(file, line, if_empty);
    let _ = file.unlock();
    out
}

fn append_locked(file: &File, line: &[u8], if_empty: &[u8]) -> std::io::Result<()> {
    let len = file.metadata()?.len();
    let prefix: &[u8] = if len == 0 {
        if_empty
    } else if ends_torn(file, len) {
        b"\n"
    } else {
        b""
    };
    let joined;
    let bytes = if prefix.is_empty() {
        line
    } else {
        joined = [prefix, line].concat();
        &joined[..]
    };
    let mut w = file;
    if let Err(e) = w.write_all(bytes) {
        // Whatever part reached the file is cut off again (the lock keeps others out).
        let _ = file.set_len(len);
        return Err(e);
    }
    Ok(())
}

/// Whether the last byte of `file` (of length `len` > 0) is not a newline; `false` when it
/// cannot be read (e.g. a write-only handle): no repair rather than a spurious blank line.
fn ends_torn(file: &File, len: u64) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        let mut b = [0u8; 1];
        matches!(file.read_at(&mut b, len - 1), Ok(1) if b[0] != b'\n')
    }
    #[cfg(not(unix))]
    {
        let _ = (file, len);
        false
    }
}

/// Move a corrupt file aside to `<path>.corrupt-<UTC timestamp>` and return the backup path.
pub fn move_aside(path: &Path) -> Result<PathBuf> {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ");
    let mut s = path.as_os_str().to_owned();
    s.push(format!(".corrupt-{stamp}"));
    let backup = PathBuf::from(s);
    fs::rename(path, &backup).ctx(|| format!("moving {} aside", path.display()))?;
    Ok(backup)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open_rw_append(p: &Path) -> File {
        OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(p)
            .unwrap()
    }

    #[test]
    fn append_whole_writes_the_header_once_and_repairs_a_torn_end() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t.jsonl");
        let f = open_rw_append(&p);
        append_whole(&f, b"{\"a\":1}\n", b"{\"h\":0}\n").unwrap();
        append_whole(&f, b"{\"a\":2}\n", b"{\"h\":0}\n").unwrap();
        // A crashed writer left half a record without its newline.
        fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .unwrap()
            .write_all(b"{\"a\":")
            .unwrap();
        append_whole(&f, b"{\"a\":3}\n", b"").unwrap();
        let text = fs::read_to_string(&p).unwrap();
        assert_eq!(
            text,
            "{\"h\":0}\n{\"a\":1}\n{\"a\":2}\n{\"a\":\n{\"a\":3}\n"
        );
    }

    /// A record that hits the file size limit half-way (as ENOSPC would) is cut back out:
    /// the file keeps its previous length. Runs in a forked child so the limit (and the
    /// ignored SIGXFSZ) stays out of the test process; the child only makes system calls.
    #[cfg(target_os = "linux")]
    #[test]
    fn append_whole_leaves_no_partial_record_when_the_write_fails() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("audit.jsonl");
        fs::write(
            &p,
            [b'x'; 49].iter().chain(b"\n").copied().collect::<Vec<u8>>(),
        )
        .unwrap();
        let f = open_rw_append(&p);
        let line = [b'y'; 1000];
        // SAFETY: the child calls only async-signal-safe functions and allocates nothing
        // (the file is not torn and not empty, so no buffer is joined), then `_exit`s.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            unsafe {
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                let lim = libc::rlimit {
                    rlim_cur: 100,
                    rlim_max: 100,
                };
                libc::setrlimit(libc::RLIMIT_FSIZE, &lim);
                let failed = append_whole(&f, &line, b"").is_err();
                libc::_exit(if failed { 0 } else { 1 });
            }
        }
        let mut status = 0;
        // SAFETY: waiting for the child forked above.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "the write did not fail: {status}"
        );
        assert_eq!(
            fs::metadata(&p).unwrap().len(),
            50,
            "a partial record stayed"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_new_state_home_is_private_and_an_existing_one_is_left_alone() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let new = d.path().join("a").join("state");
        create_private_dir(&new).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&new), 0o700);
        let shared = d.path().join("shared");
        fs::create_dir(&shared).unwrap();
        fs::set_permissions(&shared, fs::Permissions::from_mode(0o755)).unwrap();
        create_private_dir(&shared).unwrap();
        assert_eq!(
            mode(&shared),
            0o755,
            "an existing directory is never changed"
        );
    }

    #[test]
    fn atomic_write_replaces_content() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a/b.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "two");
        let names: Vec<_> = fs::read_dir(p.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "only the file and its lock: {names:?}");
    }

    #[test]
    fn slug_differs_per_checkout() {
        let a = project_slug(Path::new("/w/repo"));
        let b = project_slug(Path::new("/x/repo"));
        assert!(a.starts_with("repo-") && b.starts_with("repo-"));
        assert_ne!(a, b);
    }
}
