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
