//! Landlock + seccomp (see the parent module).

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::sync::OnceLock;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope,
};

use super::read_grants::ReadGrants;
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
        let seccomp = crate::exec::seccomp::programs(spec.network, !spec.unix_sockets.is_empty())
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

pub(super) mod mountns;
