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

mod carve;
mod hint;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "macos")]
mod macos;
mod paths;
#[cfg(target_os = "linux")]
mod read_grants;
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod unsupported;

#[cfg(target_os = "linux")]
use linux as platform;
#[cfg(target_os = "macos")]
use macos as platform;
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
use unsupported as platform;

#[cfg_attr(not(target_os = "linux"), allow(unused_imports))]
pub(crate) use carve::{Grant, Listed, carve, carve_listing, dir_stamp};
pub(crate) use hint::denial_hint;
use paths::resolve;
pub use paths::{deny_read, git_dirs, protected_paths, unix_sockets, writable_roots};

use std::path::{Path, PathBuf};

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
