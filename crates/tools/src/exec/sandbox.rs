//! The OS sandbox every `exec_command` runs in (`exec.sandbox = "os"`, the default). This is
//! the security boundary for commands; the allowlist ([`crate::policy`]) is a guardrail on top.
//!
//! A sandboxed command, and everything it starts, may
//! - read and execute every file except the protected paths ([`protected_paths`]: the state
//!   home, the config file's directory, `$CODEX_HOME`/`~/.codex`, `$CLAUDE_CONFIG_DIR`/
//!   `~/.claude`, `~/.claude.json`, `$PI_CODING_AGENT_DIR`/`~/.pi/agent`, and the
//!   credentials of `exec.denyRead` minus `exec.allowRead`: [`deny_read`]) and the devices
//!   under `/dev` other than `null`, `zero`, `full`, `random` and `urandom` (raw disks would
//!   bypass every file rule; `/dev/shm` is shared by the whole machine and outlives the
//!   call: POSIX shared memory and named semaphores need it in `exec.writableRoots`);
//! - write only inside the project root except its git directory ([`git_dirs`]: `.git`, and
//!   for a linked worktree or submodule the git directory and `commondir` it names, read-only
//!   because hooks and config there run at the user's next `git`), a private temporary
//!   directory (`TMPDIR`, mode 0700, removed when the command ends) and the existing
//!   directories of `exec.writableRoots` (empty by default) and, only with the network,
//!   `exec.cacheRoots` (offline a command cannot change a cached package a later build
//!   runs), minus the protected paths, plus the devices above;
//! - not reach a terminal: it leads a new session without a controlling terminal, and
//!   `/dev/tty` and `/dev/pts` are not granted;
//! - without network in allowlist mode unless `exec.network` is true: no TCP connect or bind
//!   (Landlock, ABI 4+) and no IPv4/IPv6 socket at all (seccomp, also covering UDP and
//!   kernels before ABI 4); with it, IP and route netlink only (see
//!   [`crate::exec::seccomp`]: no packet, vsock, other netlink, ...); io_uring is refused
//!   because it opens sockets past seccomp;
//! - reach no Unix socket outside the sandbox: it cannot create an `AF_UNIX` socket at all
//!   unless `exec.allowUnixSockets` lists one (`socketpair` works: stream and seqpacket),
//!   abstract sockets outside its domain are scoped away (Landlock ABI 6+), and the
//!   variables naming sockets (`SSH_AUTH_SOCK`, `DBUS_SESSION_BUS_ADDRESS`, `DOCKER_HOST`,
//!   `XDG_RUNTIME_DIR`, ...: [`crate::exec::env::is_socket_var`]) are not passed, except for
//!   a listed socket. seccomp cannot read the path a `connect` names, so on Linux a
//!   non-empty list opens every pathname socket (the list still decides the variables);
//! - not use the kernel keyring (`keyctl`, `add_key`, `request_key` answer ENOSYS), and it
//!   starts in a new, empty session keyring, so not even the kernel's implicit key searches
//!   reach the user's;
//! - create no namespace (`unshare`/`clone` with a namespace flag, `setns`; `clone3` answers
//!   ENOSYS so libc falls back to `clone`): a user namespace would hand it every capability
//!   inside, the kernel's largest attack surface;
//! - not outlive its call: it runs under a supervisor ([`crate::exec::supervisor`]) that
//!   kills every process it started — double-forked and `setsid` ones included — when the
//!   shell exits, on timeout, when its exec session ends and when the server exits or is
//!   killed;
//! - not signal, ptrace or read `/proc/<pid>/{environ,mem,fd}` of any process outside its
//!   sandbox, the server and its supervisor included (Landlock scoping, ABI 6+ for signals);
//! - when the server runs as root, keep only the file-ownership capabilities (see
//!   `KEPT_CAPS`): the others would reach around the rules (ptrace, raw I/O, modules);
//! - create no device nodes.
//!
//! **Linux**: Landlock + seccomp. The ruleset is built in the server before the fork (paths
//! opened `O_PATH`, rules added, the seccomp programs compiled once); between fork and exec
//! (`CommandExt::pre_exec`) the child only makes system calls — `setsid`, the supervisor's
//! split (`prctl`, a raw `clone`), the read-only mounts (`unshare`, id maps, `mount`),
//! `keyctl(JOIN_SESSION_KEYRING)`, `prctl(CAPBSET_DROP)`
//! when root, `prctl(NO_NEW_PRIVS)`, `landlock_restrict_self`, two
//! `seccomp(SET_MODE_FILTER)` — with no allocation or lock, which is what is safe in the
//! child of a multi-threaded server. That was preferred to a re-exec helper mode of the
//! binary: the library (and its tests and benches) need not know where the binary lives, and
//! no extra program start is paid per command. A failure there fails the spawn: a command
//! never runs half-confined.
//!
//! Landlock grants by hierarchy (a rule on a directory covers all beneath it) and cannot deny
//! beneath a grant, so protected paths are **carved out**: a granted directory that contains
//! a protected path is not granted itself; each of its entries is, recursively, down to the
//! protected path (symbolic links are skipped: access through one is judged at its target).
//! Consequences, by design: directories on that way (`/`, `~`, or a project root holding the
//! state home) cannot be listed, and the command cannot create entries directly in them nor
//! see entries created there after it started.
//!
//! Read-only paths *inside* a write grant (the git directory) are not carved, which would
//! make the project's top level unable to take new files: they become read-only bind mounts
//! in a private mount namespace of the command ([`platform`]'s `mountns`: `CLONE_NEWNS`, and
//! a user namespace mapping the server's own uid and gid when it is not root), made before
//! Landlock, which then forbids any mount change. Where the kernel or distribution refuses
//! that (unprivileged user namespaces restricted, e.g. Ubuntu's AppArmor default) a probe at
//! first use says so in the log, and they are carved like protected paths instead.
//!
//! **macOS**: a Seatbelt profile through `/usr/bin/sandbox-exec` with the same write, read
//! and network rules (paths passed as `-D` parameters, never spliced into the profile), and
//! Unix sockets by path: none but `exec.allowUnixSockets` (and mDNSResponder's, for name
//! lookups, when the network is allowed). Not covered there: the keyring (the Keychain is
//! reached through Mach services, which the profile leaves open), namespaces (none exist),
//! and the process tree (no subreaper: the process group is killed, a `setsid` child
//! escapes). It cannot be compiled or exercised on the Linux machine this was written on.
//!
//! **Elsewhere**, or on a Linux kernel without Landlock: commands run unconfined, and
//! [`sandbox_status`] says so for `get_environment`, the server instructions, the startup
//! banner and the UI — never silently.
//!
//! Invariant: with `exec.sandbox = "os"` and a supported kernel, no command starts before
//! its restrictions are in force.

use std::path::{Component, Path, PathBuf};

use codex_free_core::Result;
use codex_free_core::config::{ExecConfig, SandboxMode};

/// What the OS sandbox does for commands on this machine with a given `exec` config: shown by
/// `get_environment`, the instructions, the startup banner and the UI's dashboard.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SandboxStatus {
    /// True when commands run confined (a mechanism is available and `exec.sandbox = "os"`).
    pub enforced: bool,
    /// `"landlock"`, `"seatbelt"` or `"none"`.
    pub mechanism: String,
    /// Whether commands may use the network (see [`ExecConfig::network_allowed`]; when not
    /// enforced, they always can).
    pub network: bool,
    /// One line for people and models, e.g. `Landlock (ABI 7): writes only in ...`.
    pub summary: String,
    /// Set when commands run unconfined: why, and what that means.
    pub warning: Option<String>,
}

/// The sandbox commands get with `exec`, probed once per process (see [`SandboxStatus`]).
pub fn sandbox_status(exec: &ExecConfig) -> SandboxStatus {
    let network = exec.network_allowed();
    let net_text = if network {
        if exec.network {
            "network allowed (exec.network)"
        } else {
            "network allowed (exec.mode unrestricted)"
        }
    } else {
        "no network (set exec.network to allow it)"
    };
    let unconfined = |mechanism: &str, why: String| SandboxStatus {
        enforced: false,
        mechanism: mechanism.into(),
        network: true,
        summary: format!("OFF: {why}"),
        warning: Some(format!(
            "commands run WITHOUT the OS sandbox ({why}): they can read and write everything your user can, including the server token and codex.config.json; the exec allowlist is only a guardrail"
        )),
    };
    #[cfg(not(unix))]
    return SandboxStatus {
        enforced: false,
        mechanism: "none".into(),
        network: false,
        summary: format!(
            "OFF: no commands run on {}: exec_command and the git tools are refused (Unix only)",
            std::env::consts::OS
        ),
        warning: None,
    };
    #[cfg_attr(not(unix), allow(unreachable_code))]
    if exec.sandbox == SandboxMode::Off {
        return unconfined("none", "exec.sandbox is \"off\"".into());
    }
    let unix_text = if exec.allow_unix_sockets.is_empty() {
        "no Unix sockets (exec.allowUnixSockets)"
    } else {
        "Unix sockets allowed (exec.allowUnixSockets)"
    };
    let caches = if network {
        "and exec.cacheRoots"
    } else {
        "exec.cacheRoots read-only without network"
    };
    match platform::available() {
        Ok((mechanism, detail)) => SandboxStatus {
            enforced: true,
            mechanism: mechanism.into(),
            network,
            summary: format!(
                "{detail}: commands may write only in the project root (its .git read-only), a private TMPDIR and exec.writableRoots ({caches}), cannot read the state home, agent configs or credentials (exec.denyRead); {net_text}; {unix_text}"
            ),
            warning: None,
        },
        Err(why) => unconfined("none", why),
    }
}

/// The paths no command may read or write, absolute and with symbolic links resolved as far
/// as they exist: the state home `home`, each of `extra` (the config file's directory), and
/// the other agents' homes — `$CODEX_HOME` and `~/.codex`, `$CLAUDE_CONFIG_DIR`, `~/.claude`
/// and `~/.claude.json`, `$PI_CODING_AGENT_DIR` and `~/.pi/agent` (both the variable's value
/// and the default, since either may hold live settings). Those hold credentials and settings
/// that start programs (hooks, MCP servers) outside any sandbox.
pub fn protected_paths(home: &Path, extra: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = vec![home.to_path_buf()];
    out.extend(extra.iter().cloned());
    out.extend(
        codex_free_core::home::AgentHomes::protected()
            .into_iter()
            .map(|(p, _)| p),
    );
    let mut out: Vec<PathBuf> = out
        .iter()
        .filter(|p| p.is_absolute())
        .map(|p| resolve(p))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// `exec.writableRoots` as absolute paths (`~` and `~/x` expanded against `$HOME`; entries
/// needing `$HOME` are dropped when it is unset), symbolic links resolved.
/// With the network allowed, `exec.cacheRoots` too (downloads need them); offline they stay
/// read-only so nothing planted there runs in a later, unsandboxed build.
pub fn writable_roots(exec: &ExecConfig) -> Vec<PathBuf> {
    let caches: &[String] = if exec.network_allowed() {
        &exec.cache_roots
    } else {
        &[]
    };
    exec.writable_roots
        .iter()
        .chain(caches)
        .filter_map(|r| expand_home(r))
        .filter(|p| p.is_absolute())
        .map(|p| resolve(&p))
        .collect()
}

/// `exec.denyRead` minus `exec.allowRead` (both `~`-expanded and resolved, compared
/// whole), absolute, and only the entries that exist when the command starts: added to the
/// protected paths of every command, so neither readable nor writable. A missing entry is
/// left out because there is nothing to read, while carving around it would cost rules on
/// every directory on its way (a command that creates one reads nothing of the user's).
pub fn deny_read(exec: &ExecConfig) -> Vec<PathBuf> {
    let expand = |list: &[String]| -> Vec<PathBuf> {
        list.iter()
            .filter_map(|r| expand_home(r))
            .filter(|p| p.is_absolute())
            .map(|p| resolve(&p))
            .collect()
    };
    // Only what exists, asked before resolving: most defaults do not exist on a given
    // machine, and resolving a missing path costs a failed canonicalize per component.
    let present: Vec<String> = exec
        .deny_read
        .iter()
        .filter(|r| expand_home(r).is_some_and(|p| std::fs::symlink_metadata(p).is_ok()))
        .cloned()
        .collect();
    if present.is_empty() {
        return Vec::new();
    }
    let allowed = expand(&exec.allow_read);
    expand(&present)
        .into_iter()
        .filter(|p| !allowed.contains(p) && std::fs::symlink_metadata(p).is_ok())
        .collect()
}

/// `exec.allowUnixSockets` as absolute paths (`~` expanded as for [`writable_roots`]),
/// symbolic links resolved: what the variables naming a socket are compared with.
pub fn unix_sockets(exec: &ExecConfig) -> Vec<PathBuf> {
    exec.allow_unix_sockets
        .iter()
        .filter_map(|r| expand_home(r))
        .filter(|p| p.is_absolute())
        .map(|p| resolve(&p))
        .collect()
}

fn user_home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

fn expand_home(s: &str) -> Option<PathBuf> {
    if s == "~" {
        return user_home();
    }
    match s.strip_prefix("~/") {
        Some(rest) => user_home().map(|h| h.join(rest)),
        None => Some(PathBuf::from(s)),
    }
}

/// `p` (absolute) with `.`/`..` removed lexically and its longest existing prefix
/// canonicalised (the rest appended), so a path that does not exist yet still compares
/// correctly with canonical paths.
fn resolve(p: &Path) -> PathBuf {
    let mut lexical = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                lexical.pop();
            }
            Component::CurDir => {}
            other => lexical.push(other),
        }
    }
    let mut existing = lexical.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(c) = std::fs::canonicalize(existing) {
            let mut out = c;
            for r in rest.iter().rev() {
                out.push(r);
            }
            return out;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return lexical,
        }
    }
}

/// Whether commands run under a supervisor that kills their whole process tree (Linux:
/// [`crate::exec::supervisor`]), sandboxed or not. Then the server asks the supervisor
/// (SIGTERM) and never SIGKILLs the group, which would orphan the tree.
pub(crate) const SUPERVISED: bool = cfg!(target_os = "linux");

/// What one command's sandbox is made of.
#[derive(Debug, Clone)]
pub(crate) struct Spec {
    /// Canonical project root (writable).
    pub root: PathBuf,
    /// Other writable directories (resolved).
    pub writable: Vec<PathBuf>,
    /// Paths neither readable nor writable (resolved).
    pub protected: Vec<PathBuf>,
    /// Network allowed.
    pub network: bool,
    /// `exec.allowUnixSockets`, resolved ([`unix_sockets`]): non-empty lets the command make
    /// Unix sockets.
    pub unix_sockets: Vec<PathBuf>,
    /// Existing paths inside the writable ones that stay read-only (the repository's `.git`:
    /// [`git_dirs`]): a read-only bind mount in a private mount namespace where the kernel
    /// allows one, else carved out of the writes.
    pub read_only: Vec<PathBuf>,
}

/// What git reads as code or settings for the repository at `root`, to keep read-only for
/// commands: `root/.git` (a directory, or the `.git` file of a linked worktree or submodule)
/// and, for such a file, the git directory it names and that directory's `commondir` target
/// (hooks and config live there). Only paths that exist; symbolic links resolved. Reason:
/// hooks, `core.fsmonitor`, `core.hooksPath` and filter drivers written there would run at
/// the user's next plain `git status`, outside any sandbox.
pub fn git_dirs(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let dot_git = root.join(".git");
    let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
        return out;
    };
    out.push(resolve(&dot_git));
    if meta.is_file()
        && let Ok(text) = std::fs::read_to_string(&dot_git)
        && let Some(dir) = text.lines().find_map(|l| l.strip_prefix("gitdir:"))
    {
        let dir = root.join(dir.trim());
        if dir.is_dir() {
            let dir = resolve(&dir);
            if let Ok(common) = std::fs::read_to_string(dir.join("commondir")) {
                let common = resolve(&dir.join(common.trim()));
                if common.is_dir() {
                    out.push(common);
                }
            }
            out.push(dir);
        }
    }
    out.sort();
    out.dedup();
    out
}

#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
/// Upper bound on the entries granted one by one while carving around protected paths
/// (a protected path inside a huge directory): past it the rest is left out (fail closed).
const MAX_CARVED_ENTRIES: usize = 20_000;

/// One grant of the carve: `path` (a directory when `dir`) gets the rights of its caller.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Grant {
    pub path: PathBuf,
    pub dir: bool,
}

/// The grants for `root` with every path in `protected` carved out (see the module doc).
/// `root` must be resolved; missing roots yield nothing.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) fn carve(root: &Path, protected: &[PathBuf]) -> Vec<Grant> {
    carve_listing(root, protected, &mut Vec::new())
}

/// [`carve`], also pushing onto `listed` every directory it had to list (the ones whose
/// entries were granted one by one) with its [`dir_stamp`] taken *before* the listing, so a
/// cached carve can tell when it went stale (a change during the listing shows too).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) fn carve_listing(root: &Path, protected: &[PathBuf], listed: &mut Listed) -> Vec<Grant> {
    let mut out = Vec::new();
    let mut budget = MAX_CARVED_ENTRIES;
    let Ok(meta) = std::fs::metadata(root) else {
        return out;
    };
    carve_into(
        root,
        meta.is_dir(),
        protected,
        &mut out,
        &mut budget,
        listed,
    );
    out
}

/// Directories a carve listed, each with its [`dir_stamp`] from before the listing.
pub(crate) type Listed = Vec<(PathBuf, Option<(u64, u64, i128)>)>;

/// The identity of a listed directory's entry set: device, inode and modification time
/// (ns). Adding, removing or renaming an entry changes the mtime; replacing the directory
/// changes the inode.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
#[cfg(unix)]
pub(crate) fn dir_stamp(path: &Path) -> Option<(u64, u64, i128)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(path).ok()?;
    Some((
        m.dev(),
        m.ino(),
        m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
    ))
}

/// No device/inode here: `None` (unknown), so a listing is never taken as unchanged.
#[cfg(not(unix))]
pub(crate) fn dir_stamp(_path: &Path) -> Option<(u64, u64, i128)> {
    None
}

fn carve_into(
    path: &Path,
    dir: bool,
    protected: &[PathBuf],
    out: &mut Vec<Grant>,
    budget: &mut usize,
    listed: &mut Listed,
) {
    if protected.iter().any(|p| path.starts_with(p)) {
        return;
    }
    if !dir || !protected.iter().any(|p| p.starts_with(path)) {
        out.push(Grant {
            path: path.to_path_buf(),
            dir,
        });
        return;
    }
    let stamp = dir_stamp(path);
    let Ok(entries) = std::fs::read_dir(path) else {
        return;
    };
    listed.push((path.to_path_buf(), stamp));
    for e in entries.flatten() {
        if *budget == 0 {
            tracing::warn!(
                "sandbox: more than {MAX_CARVED_ENTRIES} entries beside protected paths under {}; the rest is not accessible to commands",
                path.display()
            );
            return;
        }
        *budget -= 1;
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_symlink() {
            continue;
        }
        carve_into(
            &path.join(e.file_name()),
            ft.is_dir(),
            protected,
            out,
            budget,
            listed,
        );
    }
}

/// A sandbox ready to wrap one command: its private TMPDIR and the prepared restrictions.
#[derive(Debug)]
pub(crate) struct Prepared {
    tmp: tempfile::TempDir,
    inner: platform::Inner,
    unix_sockets: Vec<PathBuf>,
}

impl Prepared {
    /// Build the sandbox for `spec`. `Ok(None)` when this system has no sandbox (the command
    /// runs unconfined; [`sandbox_status`] reports it).
    ///
    /// Errors: [`codex_free_core::Error::Io`] when the private TMPDIR cannot be created,
    /// [`codex_free_core::Error::Refused`] when the kernel refuses the ruleset.
    pub(crate) fn new(spec: &Spec) -> Result<Option<Self>> {
        // Never run a command unconfined where commands are not supported at all.
        if cfg!(not(unix)) {
            return Err(super::unsupported_os("running a command in the OS sandbox"));
        }
        if platform::available().is_err() {
            return Ok(None);
        }
        let mut b = tempfile::Builder::new();
        b.prefix("cmd-");
        let tmp = match crate::tmpfiles::exec_tmp_parent() {
            Some(parent) => b.tempdir_in(parent),
            None => b.prefix(crate::tmpfiles::EXEC_TMP_PREFIX).tempdir(),
        }
        .map_err(|e| codex_free_core::Error::io("creating the command's private TMPDIR", e))?;
        let tmp_path = resolve(tmp.path());
        let inner = platform::Inner::new(spec, &tmp_path)?;
        Ok(Some(Self {
            tmp,
            inner,
            unix_sockets: spec.unix_sockets.clone(),
        }))
    }

    /// The private temporary directory (set as `TMPDIR`).
    pub(crate) fn tmp(&self) -> &Path {
        self.tmp.path()
    }

    /// The Unix sockets the command may use (the variables naming them are passed).
    pub(crate) fn unix_sockets(&self) -> &[PathBuf] {
        &self.unix_sockets
    }

    /// A command running `program args...` inside this sandbox, as the leader of a new
    /// process group (on Linux of a new session, without a controlling terminal, under a
    /// supervisor: [`supervised`]). The caller sets the environment, including `TMPDIR` =
    /// [`Prepared::tmp`], and must not set a process group itself.
    pub(crate) fn command(&self, program: &str, args: &[&str]) -> std::process::Command {
        self.inner.command(program, args, self.tmp.path())
    }

    /// Keep only the TMPDIR (dropped, i.e. deleted, when the command ended).
    pub(crate) fn into_tmp(self) -> tempfile::TempDir {
        self.tmp
    }
}

/// A hint for the reply of a sandboxed command that failed with a permission error, or
/// `None` when `output` shows none. Names up to three paths the output blames (absolute,
/// resolved against `cwd`) and the rules; at most about 800 bytes.
pub(crate) fn denial_hint(output: &str, cwd: &Path, network: bool, unix: bool) -> Option<String> {
    const MARKERS: &[&str] = &[
        "Permission denied",
        "Read-only file system",
        "Operation not permitted",
    ];
    let mut paths: Vec<String> = Vec::new();
    let mut found = false;
    for line in output.lines() {
        let Some(m) = MARKERS.iter().find(|m| line.contains(**m)) else {
            continue;
        };
        found = true;
        if let Some(p) = blamed_path(line, m)
            && !paths.contains(&p)
            && paths.len() < 3
        {
            paths.push(p);
        }
    }
    if !found {
        return None;
    }
    let resolved: Vec<PathBuf> = paths.iter().map(|p| resolve(&cwd.join(p))).collect();
    let shown: Vec<String> = resolved
        .iter()
        .map(|abs| {
            let s = abs.display().to_string();
            let chars = s.chars().count();
            if chars > 120 {
                format!("…{}", s.chars().skip(chars - 119).collect::<String>())
            } else {
                s
            }
        })
        .collect();
    let blamed = if shown.is_empty() {
        String::new()
    } else {
        format!(" Denied: {}.", shown.join(", "))
    };
    let net = match (network, unix) {
        (true, true) => "",
        (true, false) => " It has no Unix sockets (exec.allowUnixSockets).",
        (false, true) => " It has no network (exec.network).",
        (false, false) => {
            " It has no network (exec.network) and no Unix sockets (exec.allowUnixSockets)."
        }
    };
    // The advice fits the path: .git and credentials are closed on purpose.
    let in_git = resolved.iter().any(|p| {
        p.components().any(|c| {
            matches!(c, Component::Normal(n) if codex_free_core::jail::is_git_dir_name(&n.to_string_lossy()))
        })
    });
    let credential = resolved.iter().any(|p| {
        codex_free_core::config::DEFAULT_DENY_READ
            .iter()
            .filter_map(|d| expand_home(d))
            .any(|d| p.starts_with(d))
    });
    let advice = if in_git {
        " The repository's .git is read-only to commands on purpose (hooks and settings written there would run at the next git command, outside the sandbox): commit with the git_commit tool; git settings are the user's to change."
    } else if credential {
        " That is a credential file (exec.denyRead), unreadable to commands on purpose; only the user can let commands read it (exec.allowRead)."
    } else {
        " If the access is legitimate, add the directory to exec.writableRoots and restart the server."
    };
    Some(format!(
        "Note: this command ran in the OS sandbox: it may write only in the project root (not its .git), its TMPDIR and exec.writableRoots, and cannot read the state home, agent configs or credentials.{net}{blamed}{advice}"
    ))
}

/// The path a permission-error line names, in the usual shapes: `prog: PATH: Permission
/// denied`, `... Permission denied: 'PATH'`, `cannot open 'PATH'`, `couldn't open file PATH: ...`.
fn blamed_path(line: &str, marker: &str) -> Option<String> {
    let idx = line.find(marker)?;
    let after = line[idx + marker.len()..].trim_start_matches([':', ' ']);
    let unquote = |s: &str| -> Option<String> {
        let s = s.trim();
        let q = s.chars().next()?;
        if q == '\'' || q == '"' || q == '`' || q == '‘' {
            let body = &s[q.len_utf8()..];
            let end = body.find(['\'', '"', '`', '’'])?;
            return Some(body[..end].to_string());
        }
        None
    };
    if let Some(p) = unquote(after).filter(|p| !p.is_empty()) {
        return Some(p);
    }
    let before = line[..idx].trim_end_matches([':', ' ', '(']);
    let last = before.rsplit(": ").next().unwrap_or(before).trim();
    let last = last
        .trim_start_matches("couldn't open file ")
        .trim_start_matches("cannot open ")
        .trim_start_matches("cannot create ")
        .trim_start_matches("can't create ")
        .trim_start_matches("open ");
    let candidate = unquote(last).unwrap_or_else(|| {
        last.rsplit(' ')
            .next()
            .unwrap_or(last)
            .trim_matches(['\'', '"', '`', '‘', '’'])
            .to_string()
    });
    (candidate.contains('/') || candidate.contains('.')).then_some(candidate)
}

#[cfg(target_os = "linux")]
mod platform {
    //! Landlock + seccomp (see the parent module).

    use std::os::fd::{AsRawFd, OwnedFd};
    use std::path::Path;
    use std::sync::OnceLock;

    use landlock::{
        ABI, Access, AccessFs, AccessNet, BitFlags, PathBeneath, PathFd, Ruleset, RulesetAttr,
        RulesetCreatedAttr, Scope,
    };

    use super::{Grant, Spec, carve};
    use codex_free_core::{Error, Result};

    /// The Landlock ABI this code is written against: rights the kernel lacks are dropped
    /// (best effort); newer rights (e.g. v9's pathname UNIX socket rule) are not handled.
    const TARGET: ABI = ABI::V7;

    /// The kernel's Landlock ABI version (0 when absent), asked once.
    pub(super) fn kernel_abi() -> i32 {
        static ABI_VERSION: OnceLock<i32> = OnceLock::new();
        *ABI_VERSION.get_or_init(|| {
            // SAFETY: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) only
            // returns the ABI version (or -1 with errno); it reads no memory.
            let v = unsafe {
                libc::syscall(
                    libc::SYS_landlock_create_ruleset,
                    std::ptr::null::<libc::c_void>(),
                    0usize,
                    1u32,
                )
            };
            if v < 0 { 0 } else { v as i32 }
        })
    }

    /// `Ok((mechanism, detail))` when Landlock is usable, else why not.
    pub(super) fn available() -> std::result::Result<(&'static str, String), String> {
        let abi = kernel_abi();
        if abi < 1 {
            return Err("this Linux kernel has no Landlock (it needs Linux 5.13+ with landlock in the lsm= boot list)".into());
        }
        let net = if abi >= 4 {
            "TCP by Landlock, all IP sockets by seccomp"
        } else {
            "IP sockets by seccomp"
        };
        Ok(("landlock", format!("Landlock ABI {abi} ({net})")))
    }

    #[derive(Debug)]
    pub(super) struct Inner {
        /// Read-only bind mounts (the repository's `.git`) to make before confining, or
        /// `None` (nothing to protect, or carved out of the writes instead).
        mounts: Option<std::sync::Arc<mountns::Plan>>,
        ruleset: OwnedFd,
        /// The seccomp programs ([`crate::exec::seccomp`]), installed in order.
        seccomp: &'static [seccompiler::BpfProgram],
        /// The server runs as root: drop the capabilities of [`DROPPED_CAPS`] from the
        /// child's bounding set, so the command's root has none of them after exec.
        drop_caps: bool,
    }

    /// Capabilities a root command keeps: file ownership and permission overrides, which
    /// builds run as root rely on. Every other one is dropped: `CAP_SYS_PTRACE` (with it,
    /// Landlock still lets root read `/proc/<server>/environ` — seen on Linux 6.18),
    /// `CAP_DAC_READ_SEARCH` (`open_by_handle_at`), `CAP_SYS_ADMIN`, `CAP_SYS_MODULE`,
    /// `CAP_SYS_RAWIO`, `CAP_MKNOD`, `CAP_NET_RAW`, ...
    const KEPT_CAPS: &[libc::c_int] = &[
        0,  // CAP_CHOWN
        1,  // CAP_DAC_OVERRIDE
        3,  // CAP_FOWNER
        4,  // CAP_FSETID
        10, // CAP_NET_BIND_SERVICE
    ];
    /// Capability numbers tried (the kernel answers EINVAL past its last one).
    const DROPPED_CAPS: std::ops::Range<libc::c_int> = 0..64;

    fn refused(what: &str, e: impl std::fmt::Display) -> Error {
        Error::Refused(format!(
            "the OS sandbox could not be set up ({what}: {e}), so the command was not run; set exec.sandbox to \"off\" only if unconfined commands are acceptable"
        ))
    }

    impl Inner {
        pub(super) fn new(spec: &Spec, tmp: &Path) -> Result<Self> {
            let read = AccessFs::from_read(TARGET);
            // No device nodes anywhere: one in the project would open a raw disk.
            let all = AccessFs::from_all(TARGET) & !(AccessFs::MakeBlock | AccessFs::MakeChar);
            let file_only = AccessFs::from_file(TARGET);
            let mut rules: Vec<(Grant, BitFlags<AccessFs>)> = Vec::new();
            // Reads: everything but the protected paths and /dev (carved once, then reused
            // while nothing it listed changed).
            let mut no_read = spec.protected.clone();
            no_read.push("/dev".into());
            let reads = ReadGrants::get(no_read);
            // Read-only inside the writes: a bind mount where the kernel gives this process a
            // private mount namespace, else carved out of the write grants (then the
            // directories on the way, the project root among them, take no new entries).
            let read_only: Vec<std::path::PathBuf> = spec
                .read_only
                .iter()
                .filter(|p| p.exists())
                .cloned()
                .collect();
            let mounts = if read_only.is_empty() {
                None
            } else {
                mountns::Plan::new(&read_only)
            };
            let mut no_write = spec.protected.clone();
            if mounts.is_none() {
                no_write.extend(read_only);
            }
            // Writes: project, TMPDIR, writable roots, minus the protected paths.
            for w in std::iter::once(spec.root.as_path())
                .chain(std::iter::once(tmp))
                .chain(spec.writable.iter().map(|p| p.as_path()))
            {
                rules.extend(carve(w, &no_write).into_iter().map(|g| (g, all)));
            }
            // Devices.
            let dev_file =
                AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate | AccessFs::IoctlDev;
            // Not tty, ptmx or pts: a command could write to (or, as root, inject input
            // into) the terminal of the user who started the server.
            for f in ["null", "zero", "full", "random", "urandom"] {
                rules.push((
                    Grant {
                        path: Path::new("/dev").join(f),
                        dir: false,
                    },
                    dev_file,
                ));
            }
            // Not /dev/shm: shared by every process of the machine, a place to leave files
            // that outlive the call (add it to exec.writableRoots for POSIX semaphores).
            rules.push((
                Grant {
                    path: "/dev".into(),
                    dir: true,
                },
                BitFlags::from(AccessFs::ReadDir),
            ));

            let mut ruleset = Ruleset::default()
                .handle_access(all)
                .map_err(|e| refused("filesystem rights", e))?;
            // Abstract Unix sockets are local IPC, not network: scoped whatever exec.network.
            let scopes = Scope::Signal | Scope::AbstractUnixSocket;
            if !spec.network {
                ruleset = ruleset
                    .handle_access(AccessNet::from_all(TARGET))
                    .map_err(|e| refused("network rights", e))?;
            }
            if kernel_abi() >= 6 {
                ruleset = ruleset.scope(scopes).map_err(|e| refused("scopes", e))?;
            }
            let mut created = ruleset.create().map_err(|e| refused("ruleset", e))?;
            for (path, dir) in reads.paths.iter().zip(&reads.dirs) {
                let access = if *dir { read } else { read & file_only };
                let fd = match PathFd::new(path) {
                    Ok(fd) => fd,
                    // Vanished since the carve: nothing granted (fail closed).
                    Err(_) => continue,
                };
                created = created
                    .add_rule(PathBeneath::new(fd, access))
                    .map_err(|e| refused(&format!("rule for {}", path.display()), e))?;
            }
            for (g, access) in rules {
                let access = if g.dir { access } else { access & file_only };
                if access.is_empty() {
                    continue;
                }
                let fd = match PathFd::new(&g.path) {
                    Ok(fd) => fd,
                    // Vanished or unreadable since the carve: nothing granted (fail closed).
                    Err(_) => continue,
                };
                created = created
                    .add_rule(PathBeneath::new(fd, access))
                    .map_err(|e| refused(&format!("rule for {}", g.path.display()), e))?;
            }
            let ruleset: Option<OwnedFd> = created.into();
            let ruleset =
                ruleset.ok_or_else(|| refused("ruleset", "the kernel returned no ruleset"))?;
            let seccomp =
                crate::exec::seccomp::programs(spec.network, !spec.unix_sockets.is_empty())
                    .map_err(|e| refused("seccomp filter", e))?;
            // SAFETY: geteuid has no preconditions.
            let drop_caps = unsafe { libc::geteuid() } == 0;
            Ok(Self {
                mounts,
                ruleset,
                seccomp,
                drop_caps,
            })
        }

        pub(super) fn command(
            &self,
            program: &str,
            args: &[&str],
            _tmp: &Path,
        ) -> std::process::Command {
            use std::os::unix::process::CommandExt;
            let mut cmd = std::process::Command::new(program);
            cmd.args(args);
            let fd = self.ruleset.as_raw_fd();
            let filters = self.seccomp;
            let drop_caps = self.drop_caps;
            let mounts = self.mounts.clone();
            let server = std::process::id() as libc::pid_t;
            // SAFETY: the closure runs in the forked child before exec and only makes system
            // calls (setsid, the supervisor's prctl/clone, keyctl, prctl,
            // landlock_restrict_self, seccomp) on memory prepared in the parent (`fd` is open
            // and CLOEXEC, `filters` is static): no allocation, no lock, async-signal-safe.
            unsafe {
                cmd.pre_exec(move || {
                    // A new session and process group led by the child: no controlling
                    // terminal (no /dev/tty, no TIOCSTI into the user's shell).
                    if libc::setsid() == -1 {
                        return Err(std::io::Error::last_os_error());
                    }
                    // From here on this is the command's process; its parent, the
                    // supervisor, stays outside the sandbox and kills the whole tree.
                    crate::exec::supervisor::split(server)?;
                    if let Some(m) = &mounts {
                        m.enter()?;
                    }
                    confine(fd, filters, drop_caps)
                });
            }
            cmd
        }
    }

    /// The read grants of the carve of `/` around the protected paths, shared by every
    /// command whose protected set is the same. Reason: carving lists `/`, the home
    /// directory and every directory on the way to a protected path, which was most of a
    /// command's sandbox cost; reusing it is sound while no listed directory changed (an
    /// entry added, removed or renamed changes its mtime, a replaced directory its inode),
    /// which [`ReadGrants::get`] checks with one `lstat` per listed directory. Paths, not
    /// open descriptors, are kept: a carve beside a busy directory grants thousands of
    /// entries, and holding them open would count against the server's open-file limit.
    #[derive(Debug)]
    pub(super) struct ReadGrants {
        /// The protected paths it was carved around (`/dev` included).
        key: Vec<std::path::PathBuf>,
        /// What the carve listed, with the stamps from before each listing.
        listed: super::Listed,
        /// The granted paths.
        pub(super) paths: Vec<std::path::PathBuf>,
        /// Whether each of `paths` is a directory (files get file rights only).
        dirs: Vec<bool>,
    }

    /// One cached [`ReadGrants`] (the last protected set asked for).
    pub(super) type Slot = std::sync::Mutex<Option<std::sync::Arc<ReadGrants>>>;

    impl ReadGrants {
        /// The current grants for `no_read`: the cached ones when their key matches and
        /// every listed directory's stamp is unchanged, else a new carve (then cached).
        fn get(no_read: Vec<std::path::PathBuf>) -> std::sync::Arc<ReadGrants> {
            static CACHE: Slot = Slot::new(None);
            Self::get_in(&CACHE, no_read)
        }

        /// [`ReadGrants::get`] with the cache in `slot`.
        pub(super) fn get_in(
            slot: &Slot,
            no_read: Vec<std::path::PathBuf>,
        ) -> std::sync::Arc<ReadGrants> {
            use std::sync::Arc;
            let mut cache = slot.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(c) = cache.as_ref()
                && c.key == no_read
                && c.listed
                    .iter()
                    .all(|(p, st)| st.is_some() && super::dir_stamp(p) == *st)
            {
                return Arc::clone(c);
            }
            let mut listed = Vec::new();
            let (paths, dirs) = super::carve_listing(Path::new("/"), &no_read, &mut listed)
                .into_iter()
                .map(|g| (g.path, g.dir))
                .unzip();
            let fresh = Arc::new(ReadGrants {
                key: no_read,
                listed,
                paths,
                dirs,
            });
            *cache = Some(Arc::clone(&fresh));
            fresh
        }
    }

    pub(super) mod mountns {
        //! Read-only bind mounts in a private mount namespace, made in the command's process
        //! before Landlock (which forbids any mount change once in force, so the command
        //! cannot undo them). A root server needs only `CLONE_NEWNS`; any other user gets a
        //! user namespace mapping its own uid and gid to themselves, whose capabilities exist
        //! only until exec (an unprivileged uid keeps none). Mount events do not propagate
        //! back (`MS_SLAVE`). Kernels or distributions that refuse unprivileged user
        //! namespaces (Ubuntu's AppArmor restriction, `user.max_user_namespaces = 0`) are
        //! detected once per process by a probe, and the sandbox falls back to carving.

        use std::ffi::{CStr, CString};
        use std::os::unix::ffi::OsStrExt;
        use std::path::PathBuf;
        use std::sync::{Arc, OnceLock};

        /// The mounts to make, prepared in the server (the child only makes system calls).
        #[derive(Debug)]
        pub(crate) struct Plan {
            /// Each path with the per-mount flags it must keep (`nosuid`, `nodev`, `noexec`,
            /// `noatime`: a user namespace may not clear flags the outer mount has).
            targets: Vec<(CString, libc::c_ulong)>,
            /// `uid_map` and `gid_map` lines when a user namespace is needed (not root).
            maps: Option<(Vec<u8>, Vec<u8>)>,
        }

        impl Plan {
            /// A plan for `paths` (existing, resolved), or `None` when this process cannot
            /// have a private mount namespace (probed once) or a path holds a NUL byte.
            pub(crate) fn new(paths: &[PathBuf]) -> Option<Arc<Plan>> {
                if !available() {
                    return None;
                }
                build(paths).map(Arc::new)
            }

            /// Enter a new mount namespace (and user namespace when not root) and make each
            /// target a read-only bind mount of itself.
            ///
            /// # Safety
            /// Only between fork and exec, in a single-threaded child.
            pub(crate) unsafe fn enter(&self) -> std::io::Result<()> {
                let last = std::io::Error::last_os_error;
                // SAFETY (whole body): raw system calls on memory prepared in the parent.
                unsafe {
                    let flags = if self.maps.is_some() {
                        libc::CLONE_NEWUSER | libc::CLONE_NEWNS
                    } else {
                        libc::CLONE_NEWNS
                    };
                    if libc::unshare(flags) != 0 {
                        return Err(last());
                    }
                    if let Some((uid, gid)) = &self.maps {
                        write_all(c"/proc/self/setgroups", b"deny")?;
                        write_all(c"/proc/self/uid_map", uid)?;
                        write_all(c"/proc/self/gid_map", gid)?;
                    }
                    let null = std::ptr::null::<libc::c_char>();
                    if libc::mount(
                        null,
                        c"/".as_ptr(),
                        null,
                        libc::MS_REC | libc::MS_SLAVE,
                        std::ptr::null(),
                    ) != 0
                    {
                        return Err(last());
                    }
                    for (t, keep) in &self.targets {
                        if libc::mount(
                            t.as_ptr(),
                            t.as_ptr(),
                            null,
                            libc::MS_BIND,
                            std::ptr::null(),
                        ) != 0
                        {
                            return Err(last());
                        }
                        if libc::mount(
                            null,
                            t.as_ptr(),
                            null,
                            libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | keep,
                            std::ptr::null(),
                        ) != 0
                        {
                            return Err(last());
                        }
                    }
                    Ok(())
                }
            }
        }

        /// Write `bytes` to `path` in one `write` (the id-map files take one write each).
        ///
        /// # Safety
        /// Async-signal-safe; any context.
        unsafe fn write_all(path: &CStr, bytes: &[u8]) -> std::io::Result<()> {
            // SAFETY: open/write/close on a NUL-terminated path and a live buffer.
            unsafe {
                let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let n = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
                let e = std::io::Error::last_os_error();
                libc::close(fd);
                if n != bytes.len() as isize {
                    return Err(e);
                }
                Ok(())
            }
        }

        fn build(paths: &[PathBuf]) -> Option<Plan> {
            // SAFETY: geteuid/getegid have no preconditions.
            let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
            let maps = (uid != 0).then(|| {
                (
                    format!("{uid} {uid} 1\n").into_bytes(),
                    format!("{gid} {gid} 1\n").into_bytes(),
                )
            });
            let mut targets = Vec::new();
            for p in paths {
                let c = CString::new(p.as_os_str().as_bytes()).ok()?;
                targets.push((c.clone(), kept_flags(&c)));
            }
            Some(Plan { targets, maps })
        }

        /// The flags of the mount holding `path` that a remount must repeat.
        fn kept_flags(path: &CStr) -> libc::c_ulong {
            // SAFETY: statvfs writes into the zeroed struct it is given.
            let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
            if unsafe { libc::statvfs(path.as_ptr(), &mut st) } != 0 {
                return 0;
            }
            let f = st.f_flag;
            let mut out = 0;
            for (st_flag, ms_flag) in [
                (libc::ST_NOSUID, libc::MS_NOSUID),
                (libc::ST_NODEV, libc::MS_NODEV),
                (libc::ST_NOEXEC, libc::MS_NOEXEC),
                (libc::ST_NOATIME, libc::MS_NOATIME),
                (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
            ] {
                if f & st_flag != 0 {
                    out |= ms_flag;
                }
            }
            out
        }

        /// Whether a private mount namespace with a read-only bind mount works for this
        /// process: a real command is started under a plan for a scratch directory and must
        /// fail to write there. Asked once.
        pub(crate) fn available() -> bool {
            static OK: OnceLock<bool> = OnceLock::new();
            *OK.get_or_init(|| {
                let ok = probe();
                if !ok {
                    tracing::warn!(
                        "sandbox: no private mount namespace for commands here (user namespaces restricted?); .git is kept read-only by carving it out of the writes instead, so commands cannot create entries at the project's top level"
                    );
                }
                ok
            })
        }

        fn probe() -> bool {
            use std::os::unix::process::CommandExt;
            let Ok(dir) = tempfile::tempdir() else {
                return false;
            };
            let Some(plan) = build(&[super::super::resolve(dir.path())]) else {
                return false;
            };
            let mut cmd = std::process::Command::new("/bin/sh");
            // In a subshell: a failed redirection of the special built-in `:` would end the shell.
            cmd.args([
                "-c",
                "(: > \"$1/probe\") 2>/dev/null && exit 1; exit 0",
                "sh",
            ])
            .arg(dir.path())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
            // SAFETY: `enter` only makes system calls on memory prepared here.
            unsafe {
                cmd.pre_exec(move || plan.enter());
            }
            cmd.status().is_ok_and(|s| s.success()) && !dir.path().join("probe").exists()
        }
    }

    /// The restrictions, in the command's process before exec: a new empty session keyring,
    /// capabilities (root only), no new privileges, Landlock, seccomp. Async-signal-safe.
    ///
    /// # Safety
    /// Only between fork and exec; `fd` is a Landlock ruleset.
    unsafe fn confine(
        fd: std::os::fd::RawFd,
        filters: &[seccompiler::BpfProgram],
        drop_caps: bool,
    ) -> std::io::Result<()> {
        // SAFETY (whole body): raw system calls on memory owned by the caller.
        unsafe {
            // A new anonymous session keyring: the kernel's implicit key searches no longer
            // reach the user's session keyring (keyctl itself is refused by seccomp). A kernel
            // without keys, or an outer seccomp that refuses keyctl, has none to reach.
            if libc::syscall(
                libc::SYS_keyctl,
                crate::exec::seccomp::KEYCTL_JOIN_SESSION_KEYRING,
                std::ptr::null::<libc::c_char>(),
            ) < 0
            {
                let e = std::io::Error::last_os_error();
                if !matches!(
                    e.raw_os_error(),
                    Some(libc::ENOSYS | libc::EPERM | libc::EACCES)
                ) {
                    return Err(e);
                }
            }
            if drop_caps {
                for cap in DROPPED_CAPS {
                    if KEPT_CAPS.contains(&cap) {
                        continue;
                    }
                    if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 {
                        let e = std::io::Error::last_os_error();
                        if e.raw_os_error() != Some(libc::EINVAL) {
                            return Err(e);
                        }
                        // Past the kernel's last capability (they are numbered without gaps).
                        break;
                    }
                }
            }
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            for f in filters {
                let prog = libc::sock_fprog {
                    len: f.len() as u16,
                    filter: f.as_ptr() as *mut libc::sock_filter,
                };
                if libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    0u32,
                    &prog as *const libc::sock_fprog,
                ) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        }
    }
}

#[cfg(target_os = "macos")]
mod platform {
    //! Seatbelt through `/usr/bin/sandbox-exec` (see the parent module). Not compiled or
    //! tested on the Linux machine this was written on; kept deliberately simple.

    use std::path::{Path, PathBuf};

    use super::Spec;
    use codex_free_core::Result;

    const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

    pub(super) fn available() -> std::result::Result<(&'static str, String), String> {
        if Path::new(SANDBOX_EXEC).exists() {
            Ok(("seatbelt", "Seatbelt (sandbox-exec)".into()))
        } else {
            Err(format!("{SANDBOX_EXEC} is missing"))
        }
    }

    #[derive(Debug)]
    pub(super) struct Inner {
        writable: Vec<PathBuf>,
        protected: Vec<PathBuf>,
        network: bool,
        unix_sockets: Vec<PathBuf>,
        read_only: Vec<PathBuf>,
    }

    impl Inner {
        pub(super) fn new(spec: &Spec, tmp: &Path) -> Result<Self> {
            let mut writable = vec![spec.root.clone(), tmp.to_path_buf()];
            writable.extend(spec.writable.iter().cloned());
            Ok(Self {
                writable,
                protected: spec.protected.clone(),
                network: spec.network,
                unix_sockets: spec.unix_sockets.clone(),
                read_only: spec.read_only.clone(),
            })
        }

        /// The profile: allow by default, deny every write but the writable roots and a
        /// few devices, then deny reads and writes of the protected paths (later rules win),
        /// without network deny IP traffic, and deny connecting to any Unix socket but the
        /// listed ones (and, with network, mDNSResponder's, which name lookups go through).
        /// Paths are `-D` parameters.
        fn profile(&self) -> String {
            let mut p = String::from("(version 1)\n(allow default)\n(deny file-write*)\n");
            p.push_str("(allow file-write* (literal \"/dev/null\") (literal \"/dev/zero\") (literal \"/dev/tty\") (regex #\"^/dev/ttys[0-9]+$\")");
            for i in 0..self.writable.len() {
                p.push_str(&format!(" (subpath (param \"W{i}\"))"));
            }
            p.push_str(")\n");
            if !self.read_only.is_empty() {
                p.push_str("(deny file-write*");
                for i in 0..self.read_only.len() {
                    p.push_str(&format!(" (subpath (param \"R{i}\"))"));
                }
                p.push_str(")\n");
            }
            if !self.protected.is_empty() {
                p.push_str("(deny file-read* file-write*");
                for i in 0..self.protected.len() {
                    p.push_str(&format!(" (subpath (param \"P{i}\"))"));
                }
                p.push_str(")\n");
            }
            if !self.network {
                p.push_str("(deny network-outbound (remote ip))\n(deny network-bind (local ip))\n");
            }
            p.push_str("(deny network-outbound (remote unix-socket))\n");
            if self.network || !self.unix_sockets.is_empty() {
                p.push_str("(allow network-outbound");
                if self.network {
                    p.push_str(
                        " (remote unix-socket (path-literal \"/private/var/run/mDNSResponder\"))",
                    );
                }
                for i in 0..self.unix_sockets.len() {
                    p.push_str(&format!(
                        " (remote unix-socket (path-literal (param \"U{i}\")))"
                    ));
                }
                p.push_str(")\n");
            }
            p
        }

        pub(super) fn command(
            &self,
            program: &str,
            args: &[&str],
            _tmp: &Path,
        ) -> std::process::Command {
            let mut cmd = std::process::Command::new(SANDBOX_EXEC);
            cmd.arg("-p").arg(self.profile());
            for (i, w) in self.writable.iter().enumerate() {
                cmd.arg("-D").arg(format!("W{i}={}", w.display()));
            }
            for (i, p) in self.protected.iter().enumerate() {
                cmd.arg("-D").arg(format!("P{i}={}", p.display()));
            }
            for (i, u) in self.unix_sockets.iter().enumerate() {
                cmd.arg("-D").arg(format!("U{i}={}", u.display()));
            }
            for (i, r) in self.read_only.iter().enumerate() {
                cmd.arg("-D").arg(format!("R{i}={}", r.display()));
            }
            cmd.arg(program).args(args);
            {
                use std::os::unix::process::CommandExt;
                cmd.process_group(0);
            }
            cmd
        }
    }
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod platform {
    //! No sandbox on this OS: commands run unconfined and the status says so.

    use std::path::Path;

    use super::Spec;
    use codex_free_core::Result;

    pub(super) fn available() -> std::result::Result<(&'static str, String), String> {
        Err(format!(
            "no OS sandbox is implemented for {}",
            std::env::consts::OS
        ))
    }

    #[derive(Debug)]
    pub(super) struct Inner;

    impl Inner {
        pub(super) fn new(_spec: &Spec, _tmp: &Path) -> Result<Self> {
            Ok(Self)
        }

        pub(super) fn command(
            &self,
            program: &str,
            args: &[&str],
            _tmp: &Path,
        ) -> std::process::Command {
            let mut cmd = std::process::Command::new(program);
            cmd.args(args);
            #[cfg(unix)]
            std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
            cmd
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carve_grants_siblings_around_a_protected_path() {
        let t = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(t.path()).unwrap();
        for d in ["a/b/secret", "a/b/other", "a/c", "d"] {
            std::fs::create_dir_all(base.join(d)).unwrap();
        }
        std::fs::write(base.join("a/file"), "x").unwrap();
        std::os::unix::fs::symlink(base.join("a/b/secret"), base.join("a/link")).unwrap();
        let mut got: Vec<_> = carve(&base, &[base.join("a/b/secret")])
            .into_iter()
            .map(|g| {
                (
                    g.path.strip_prefix(&base).unwrap().display().to_string(),
                    g.dir,
                )
            })
            .collect();
        got.sort();
        assert_eq!(
            got,
            [
                ("a/b/other".to_string(), true),
                ("a/c".to_string(), true),
                ("a/file".to_string(), false),
                ("d".to_string(), true),
            ],
            "the root and the dirs on the way are not granted; the link is skipped"
        );
        // A root inside a protected path gets nothing; one beside it is granted whole.
        assert!(carve(&base.join("a/b/secret"), &[base.join("a/b/secret")]).is_empty());
        assert_eq!(carve(&base.join("d"), &[base.join("a/b/secret")]).len(), 1);
        // A protected path that does not exist yet still blocks creating it.
        let got = carve(&base.join("d"), &[base.join("d/not-yet/x")]);
        assert!(got.is_empty(), "{got:?}");
    }

    /// `.git` inside a writable project: read-only to the command, while the project's top
    /// level stays writable (a mount namespace where the kernel gives one; else carved, and
    /// then new top-level entries are refused, which this test reports).
    #[cfg(target_os = "linux")]
    #[test]
    fn git_dir_is_read_only_inside_a_writable_project() {
        if platform::available().is_err() {
            eprintln!("no Landlock here; skipped");
            return;
        }
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/config"), "[core]\n").unwrap();
        std::fs::write(root.join("a.txt"), "a").unwrap();
        let spec = Spec {
            root: root.clone(),
            writable: Vec::new(),
            protected: Vec::new(),
            network: false,
            unix_sockets: Vec::new(),
            read_only: git_dirs(&root),
        };
        assert_eq!(spec.read_only, vec![root.join(".git")]);
        let p = Prepared::new(&spec).unwrap().unwrap();
        let script = "echo x >> .git/config; r1=$?; touch .git/hooks/pre-commit; r2=$?; \
             echo b >> a.txt; r3=$?; touch new.txt; r4=$?; echo \"$r1 $r2 $r3 $r4\"";
        // The server's own environment never reaches a command (exec::env): a preloaded
        // library of the test process (libfaketime under the clock tests) must not either.
        let out = p
            .command("/bin/sh", &["-c", script])
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .current_dir(&root)
            .output()
            .unwrap();
        let got = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let mountns = platform::mountns::available();
        eprintln!("read-only .git by mount namespace: {mountns}");
        let want = if mountns { "2 1 0 0" } else { "2 1 0 1" };
        assert_eq!(
            got,
            want,
            "mount namespace: {mountns}; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            std::fs::read_to_string(root.join(".git/config")).unwrap(),
            "[core]\n"
        );
        assert!(!root.join(".git/hooks/pre-commit").exists());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn cached_read_grants_follow_changes_of_what_they_listed() {
        let d = tempfile::tempdir().unwrap();
        let base = resolve(d.path());
        std::fs::create_dir_all(base.join("a/secret")).unwrap();
        std::fs::create_dir_all(base.join("a/other")).unwrap();
        let key = vec![base.join("a/secret"), PathBuf::from("/dev")];
        let slot = platform::Slot::new(None);
        let first = platform::ReadGrants::get_in(&slot, key.clone());
        assert!(first.paths.contains(&base.join("a/other")));
        assert!(
            !first
                .paths
                .iter()
                .any(|p| p.starts_with(base.join("a/secret")))
        );
        // Nothing changed: the same carve is reused.
        let again = platform::ReadGrants::get_in(&slot, key.clone());
        assert!(std::sync::Arc::ptr_eq(&first, &again));
        // A new entry beside the protected path: carved again, and readable.
        std::fs::create_dir(base.join("a/new")).unwrap();
        let after_add = platform::ReadGrants::get_in(&slot, key.clone());
        assert!(!std::sync::Arc::ptr_eq(&first, &after_add));
        assert!(after_add.paths.contains(&base.join("a/new")));
        // Another protected set: carved for it.
        let other_key = vec![base.join("a/other"), PathBuf::from("/dev")];
        let other = platform::ReadGrants::get_in(&slot, other_key);
        assert!(other.paths.contains(&base.join("a/secret")));
        assert!(
            !other
                .paths
                .iter()
                .any(|p| p.starts_with(base.join("a/other")))
        );
        // A listed directory replaced by another (new inode): carved again.
        let before = platform::ReadGrants::get_in(&slot, key.clone());
        std::fs::rename(base.join("a"), base.join("a-old")).unwrap();
        std::fs::create_dir_all(base.join("a/secret")).unwrap();
        std::fs::create_dir_all(base.join("a/fresh")).unwrap();
        let replaced = platform::ReadGrants::get_in(&slot, key);
        assert!(!std::sync::Arc::ptr_eq(&before, &replaced));
        assert!(replaced.paths.contains(&base.join("a/fresh")));
        assert!(!replaced.paths.contains(&base.join("a/other")));
    }

    #[test]
    fn resolve_handles_missing_tails_and_dotdot() {
        let t = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir(base.join("real")).unwrap();
        std::os::unix::fs::symlink(base.join("real"), base.join("link")).unwrap();
        assert_eq!(
            resolve(&base.join("link/missing/x")),
            base.join("real/missing/x")
        );
        assert_eq!(resolve(&base.join("real/../link")), base.join("real"));
    }

    #[test]
    fn hints_name_the_denied_path() {
        let cwd = Path::new("/proj/sub");
        for (line, want) in [
            ("sed: couldn't open file ../x: Permission denied", "/proj/x"),
            (
                "PermissionError: [Errno 13] Permission denied: '../x'",
                "/proj/x",
            ),
            ("bash: line 1: /etc/x: Permission denied", "/etc/x"),
            ("touch: cannot touch '/opt/y': Permission denied", "/opt/y"),
            ("find: ‘../x’: Permission denied", "/proj/x"),
        ] {
            let h = denial_hint(line, cwd, false, false).unwrap();
            assert!(h.contains(want), "{line} -> {h}");
            assert!(h.contains("exec.writableRoots") && h.len() < 700, "{h}");
        }
        assert!(denial_hint("all good\n", cwd, false, false).is_none());
        let h = denial_hint(
            "bash: .git/config: Read-only file system",
            cwd,
            false,
            false,
        )
        .unwrap();
        assert!(
            h.contains("git_commit") && !h.contains("add the directory"),
            "{h}"
        );
        let h = denial_hint("connect: Permission denied", cwd, false, false).unwrap();
        assert!(
            h.contains("exec.network") && h.contains("exec.allowUnixSockets"),
            "{h}"
        );
        let h = denial_hint("connect: Permission denied", cwd, true, false).unwrap();
        assert!(
            !h.contains("exec.network") && h.contains("exec.allowUnixSockets"),
            "{h}"
        );
    }

    #[test]
    fn status_reports_off_loudly() {
        let mut c = ExecConfig {
            sandbox: SandboxMode::Off,
            ..ExecConfig::default()
        };
        let s = sandbox_status(&c);
        assert!(!s.enforced);
        assert!(
            s.warning
                .as_deref()
                .unwrap()
                .contains("WITHOUT the OS sandbox")
        );
        c.sandbox = SandboxMode::Os;
        let s = sandbox_status(&c);
        if cfg!(target_os = "linux") && platform::available().is_ok() {
            assert!(s.enforced && s.warning.is_none() && !s.network, "{s:?}");
            assert!(s.summary.starts_with("Landlock ABI"), "{}", s.summary);
        }
    }

    #[test]
    fn protected_paths_cover_home_and_agent_dirs() {
        let p = protected_paths(
            Path::new("/nonexistent/state"),
            &[PathBuf::from("/nonexistent/cfg")],
        );
        assert!(p.contains(&PathBuf::from("/nonexistent/state")));
        assert!(p.contains(&PathBuf::from("/nonexistent/cfg")));
        if let Some(h) = user_home() {
            let h = resolve(&h);
            assert!(
                p.contains(&h.join(".codex")) && p.contains(&h.join(".claude")),
                "{p:?}"
            );
        }
    }
}
