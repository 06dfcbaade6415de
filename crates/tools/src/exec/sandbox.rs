//! The OS sandbox every `exec_command` runs in (`exec.sandbox = "os"`, the default). This is
//! the security boundary for commands; the allowlist ([`crate::policy`]) is a guardrail on top.
//!
//! A sandboxed command, and everything it starts, may
//! - read and execute every file except the protected paths ([`protected_paths`]: the state
//!   home, the config file's directory, `$CODEX_HOME`/`~/.codex`, `$CLAUDE_CONFIG_DIR`/
//!   `~/.claude`, `~/.claude.json`, `$PI_CODING_AGENT_DIR`/`~/.pi/agent`) and the devices
//!   under `/dev` other than `null`, `zero`, `full`, `random`, `urandom` and `shm/` (raw
//!   disks would bypass every file rule);
//! - write only inside the project root, a private temporary directory (`TMPDIR`, mode
//!   0700, removed when the command ends) and the existing directories of
//!   `exec.writableRoots`, minus the protected paths, plus the devices above;
//! - not reach a terminal: it leads a new session without a controlling terminal, and
//!   `/dev/tty` and `/dev/pts` are not granted;
//! - without network in allowlist mode unless `exec.network` is true: no TCP connect or bind
//!   (Landlock, ABI 4+) and no IPv4/IPv6/packet socket at all (seccomp, also covering UDP and
//!   kernels before ABI 4; `io_uring_setup` is refused too because io_uring can open sockets
//!   past seccomp);
//! - not signal, ptrace or read `/proc/<pid>/{environ,mem,fd}` of any process outside its
//!   sandbox, the server included (Landlock scoping, ABI 6+ for signals);
//! - when the server runs as root, keep only the file-ownership capabilities (see
//!   `KEPT_CAPS`): the others would reach around the rules (ptrace, raw I/O, modules);
//! - create no device nodes.
//!
//! **Linux**: Landlock. The ruleset is built in the server before the fork (paths opened
//! `O_PATH`, rules added, the seccomp program compiled); between fork and exec
//! (`CommandExt::pre_exec`) the child only makes three system calls — `prctl(NO_NEW_PRIVS)`,
//! `landlock_restrict_self`, `seccomp(SET_MODE_FILTER)` — with no allocation or lock, which
//! is what is safe in the child of a multi-threaded server. That was preferred to a re-exec
//! helper mode of the binary: the library (and its tests and benches) need not know where the
//! binary lives, and no extra process start is paid per command. A failure there fails the
//! spawn: a command never runs half-confined.
//!
//! Landlock grants by hierarchy (a rule on a directory covers all beneath it) and cannot deny
//! beneath a grant, so protected paths are **carved out**: a granted directory that contains
//! a protected path is not granted itself; each of its entries is, recursively, down to the
//! protected path (symbolic links are skipped: access through one is judged at its target).
//! Consequences, by design: directories on that way (`/`, `~`, or a project root holding the
//! state home) cannot be listed, and the command cannot create entries directly in them nor
//! see entries created there after it started.
//!
//! **macOS**: a Seatbelt profile through `/usr/bin/sandbox-exec` with the same write, read
//! and network rules (paths passed as `-D` parameters, never spliced into the profile). It
//! cannot be compiled or exercised on the Linux machine this was written on.
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
    if exec.sandbox == SandboxMode::Off {
        return unconfined("none", "exec.sandbox is \"off\"".into());
    }
    let unix_text = if exec.allow_unix_sockets.is_empty() {
        "no Unix sockets (exec.allowUnixSockets)"
    } else {
        "Unix sockets allowed (exec.allowUnixSockets)"
    };
    match platform::available() {
        Ok((mechanism, detail)) => SandboxStatus {
            enforced: true,
            mechanism: mechanism.into(),
            network,
            summary: format!(
                "{detail}: commands may write only in the project root, a private TMPDIR and exec.writableRoots, cannot read the state home or agent configs; {net_text}; {unix_text}"
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
pub fn writable_roots(exec: &ExecConfig) -> Vec<PathBuf> {
    exec.writable_roots
        .iter()
        .filter_map(|r| expand_home(r))
        .filter(|p| p.is_absolute())
        .map(|p| resolve(&p))
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
    let mut out = Vec::new();
    let mut budget = MAX_CARVED_ENTRIES;
    let Ok(meta) = std::fs::metadata(root) else {
        return out;
    };
    carve_into(root, meta.is_dir(), protected, &mut out, &mut budget);
    out
}

fn carve_into(
    path: &Path,
    dir: bool,
    protected: &[PathBuf],
    out: &mut Vec<Grant>,
    budget: &mut usize,
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
    let Ok(entries) = std::fs::read_dir(path) else {
        return;
    };
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
        if platform::available().is_err() {
            return Ok(None);
        }
        let tmp = tempfile::Builder::new()
            .prefix("codex-free-exec-")
            .tempdir()
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
/// resolved against `cwd`) and the rules; at most about 500 bytes.
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
    let shown: Vec<String> = paths
        .iter()
        .map(|p| {
            let abs = cwd.join(p);
            let abs = resolve(&abs);
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
    Some(format!(
        "Note: this command ran in the OS sandbox: it may write only in the project root, its TMPDIR and exec.writableRoots, and cannot read the state home or agent configs.{net}{blamed} If the access is legitimate, add the directory to exec.writableRoots and restart the server."
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
            // Reads: everything but the protected paths and /dev.
            let mut no_read = spec.protected.clone();
            no_read.push("/dev".into());
            rules.extend(
                carve(Path::new("/"), &no_read)
                    .into_iter()
                    .map(|g| (g, read)),
            );
            // Writes: project, TMPDIR, writable roots, minus the protected paths.
            for w in std::iter::once(spec.root.as_path())
                .chain(std::iter::once(tmp))
                .chain(spec.writable.iter().map(|p| p.as_path()))
            {
                rules.extend(carve(w, &spec.protected).into_iter().map(|g| (g, all)));
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
                    confine(fd, filters, drop_caps)
                });
            }
            cmd
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
    }

    impl Inner {
        pub(super) fn new(spec: &Spec, tmp: &Path) -> Result<Self> {
            let mut writable = vec![spec.root.clone(), tmp.to_path_buf()];
            writable.extend(spec.writable.iter().cloned());
            Ok(Self {
                writable,
                protected: spec.protected.clone(),
                network: spec.network,
            })
        }

        /// The profile: allow by default, deny every write but the writable roots and a
        /// few devices, then deny reads and writes of the protected paths (later rules win),
        /// and, without network, deny IP traffic. Paths are `-D` parameters.
        fn profile(&self) -> String {
            let mut p = String::from("(version 1)\n(allow default)\n(deny file-write*)\n");
            p.push_str("(allow file-write* (literal \"/dev/null\") (literal \"/dev/zero\") (literal \"/dev/tty\") (regex #\"^/dev/ttys[0-9]+$\")");
            for i in 0..self.writable.len() {
                p.push_str(&format!(" (subpath (param \"W{i}\"))"));
            }
            p.push_str(")\n");
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
            use std::os::unix::process::CommandExt;
            let mut cmd = std::process::Command::new(program);
            cmd.args(args).process_group(0);
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
            assert!(h.contains("exec.writableRoots") && h.len() < 600, "{h}");
        }
        assert!(denial_hint("all good\n", cwd, false, false).is_none());
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
