//! Nothing a command starts outlives its call (Linux): every command runs under a
//! **supervisor**, a process between the server and the shell that is a child subreaper.
//!
//! Between fork and exec (`pre_exec`), the server's child blocks every signal, marks itself
//! a child subreaper (`PR_SET_CHILD_SUBREAPER`) with a parent-death signal, and forks again:
//! the grandchild unblocks its signals and goes on to exec the command (inside the sandbox
//! when there is one); the child stays behind as the supervisor, closes every descriptor and
//! waits for signals. Because it is a subreaper, every process of the command's tree that is
//! orphaned — a double fork, `setsid`, `nohup`, `disown` — is re-parented to the supervisor
//! instead of init, so the tree stays a tree it can walk. The supervisor kills it (SIGKILL to
//! every child listed in `/proc/thread-self/children`, again as orphans arrive, until none is
//! left) when
//! - the command's process exits (whatever it left running goes with it),
//! - the server asks (SIGTERM: timeout, `write_stdin` session ended, server shutdown),
//! - the server dies, even by SIGKILL (`PR_SET_PDEATHSIG`; a spurious one, sent when only the
//!   server *thread* that forked exits, is told apart by `getppid()`),
//!
//! and then exits as the command did (same code, or killed by the same signal, without a
//! core file). The server waits for the supervisor, so an ended call means an empty tree.
//! The supervisor ignores SIGINT and other signals the server sends to the process group.
//!
//! Why this and not the alternatives: a PID namespace needs `CAP_SYS_ADMIN` (a user
//! namespace for an unprivileged server, which many distributions restrict, and which the
//! sandbox denies commands anyway) and makes the shell an init that ignores Ctrl-C; a cgroup
//! needs a delegated, writable cgroup v2 subtree, which a CLI-spawned server often lacks;
//! the server as a subreaper cannot tell whose orphan a re-parented process is, and would
//! also adopt what the tray app launches. A subreaper per command needs nothing but Linux 3.4
//! and keeps the tree attributable. Outside the sandbox's Landlock domain, the supervisor
//! cannot be signalled or traced by the command (Landlock scoping; on kernels before Landlock
//! ABI 6 a command can signal it, as it can any process of the user).
//!
//! Cost: one more fork per command. The supervisor is a copy-on-write copy of the server
//! that never execs: it touches almost nothing, but pages the server rewrites while a
//! command runs are duplicated for the supervisor's lifetime (bounded by `exec.maxSessions`
//! live commands). It is renamed `exec-supervise` (ps, top) and made non-dumpable.
//!
//! Invariant: between fork and exec only async-signal-safe calls are made (raw system calls,
//! no allocation, no lock): the server is multi-threaded.

use std::io;

/// The signal the kernel sends the supervisor when the server (thread) that forked it dies.
const PDEATH_SIG: libc::c_int = libc::SIGHUP;
/// The signal the server sends the supervisor to kill the command's whole tree.
pub(crate) const KILL_TREE_SIG: libc::c_int = libc::SIGTERM;
/// How often, while killing, the supervisor looks for orphans re-parented to it (a deeper
/// process's death re-parents its children here without a SIGCHLD).
const RESCAN_NS: libc::c_long = 20_000_000;

fn errno() -> libc::c_int {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Split the forked child of `server` into supervisor and command (see the module doc).
/// Returns `Ok(())` in the process that goes on to exec the command; the supervisor never
/// returns. Errors (before the second fork) fail the spawn.
///
/// # Safety
/// Only between fork and exec in the child of a `Command` (`pre_exec`).
pub(crate) unsafe fn split(server: libc::pid_t) -> io::Result<()> {
    // SAFETY (whole body): raw system calls on stack memory; see the module invariant.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        let mut before: libc::sigset_t = std::mem::zeroed();
        if libc::sigprocmask(libc::SIG_SETMASK, &all, &mut before) != 0 {
            return Err(io::Error::last_os_error());
        }
        let restore = |e: io::Error| {
            libc::sigprocmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
            Err(e)
        };
        if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0
            || libc::prctl(libc::PR_SET_PDEATHSIG, PDEATH_SIG, 0, 0, 0) != 0
        {
            return restore(io::Error::last_os_error());
        }
        if libc::getppid() != server {
            // The server died before the death signal was armed.
            return restore(io::Error::from_raw_os_error(libc::ESRCH));
        }
        // A raw fork: glibc's would run atfork handlers, which are not async-signal-safe.
        let pid = libc::syscall(libc::SYS_clone, libc::SIGCHLD as libc::c_ulong, 0, 0, 0, 0);
        if pid < 0 {
            return restore(io::Error::last_os_error());
        }
        if pid == 0 {
            // The command: not a subreaper, no death signal (both are not inherited).
            libc::sigprocmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
            return Ok(());
        }
        supervise(pid as libc::pid_t, server, &all)
    }
}

/// The supervisor's life: wait for signals, reap, kill the tree, exit as the command did.
unsafe fn supervise(command: libc::pid_t, server: libc::pid_t, all: &libc::sigset_t) -> ! {
    // SAFETY (whole body): raw system calls on stack memory.
    unsafe {
        // Every descriptor: the output pipe (EOF must come when the tree is gone, not when
        // the supervisor exits), stdin, and std's exec-status pipe (its spawn waits for it).
        if libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) != 0 {
            let mut lim: libc::rlimit = std::mem::zeroed();
            let max = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
                lim.rlim_cur.min(1 << 16) as libc::c_int
            } else {
                1024
            };
            for fd in 0..max {
                libc::close(fd);
            }
        }
        libc::prctl(libc::PR_SET_NAME, c"exec-supervise".as_ptr(), 0, 0, 0);
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        let mut status: Option<libc::c_int> = None;
        let mut killing = false;
        loop {
            loop {
                let mut st: libc::c_int = 0;
                let r = libc::waitpid(-1, &mut st, libc::WNOHANG);
                if r > 0 {
                    if r == command {
                        status = Some(st);
                        killing = true;
                    }
                    continue;
                }
                if r == 0 {
                    break;
                }
                if errno() == libc::EINTR {
                    continue;
                }
                // ECHILD: the tree is empty.
                exit_as(status);
            }
            if killing {
                kill_children();
            }
            let rescan = libc::timespec {
                tv_sec: 0,
                tv_nsec: RESCAN_NS,
            };
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let sig = libc::syscall(
                libc::SYS_rt_sigtimedwait,
                all as *const libc::sigset_t,
                &mut info as *mut libc::siginfo_t,
                if killing {
                    &rescan as *const libc::timespec
                } else {
                    std::ptr::null()
                },
                // The kernel's sigset_t: 64 signals.
                8usize,
            ) as libc::c_int;
            if sig == KILL_TREE_SIG || (sig == PDEATH_SIG && libc::getppid() != server) {
                killing = true;
            }
            // SIGCHLD: reaped above. Anything else (SIGINT sent to the group, a spurious
            // death signal): ignored.
        }
    }
}

/// SIGKILL every child of this process (`/proc/thread-self/children`; a scan of `/proc`
/// where the kernel lacks that file). A listed child cannot be a recycled pid: only this
/// process reaps its children, and it does not while killing.
unsafe fn kill_children() {
    // SAFETY (whole body): raw system calls on stack memory.
    unsafe {
        let fd = libc::open(
            c"/proc/thread-self/children".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        );
        if fd < 0 {
            kill_children_by_scan();
            return;
        }
        let mut buf = [0u8; 4096];
        let mut pid: libc::pid_t = 0;
        loop {
            let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
            if n <= 0 {
                break;
            }
            for &b in &buf[..n as usize] {
                if b.is_ascii_digit() {
                    pid = pid
                        .saturating_mul(10)
                        .saturating_add(libc::pid_t::from(b - b'0'));
                } else if pid > 0 {
                    libc::kill(pid, libc::SIGKILL);
                    pid = 0;
                }
            }
        }
        if pid > 0 {
            libc::kill(pid, libc::SIGKILL);
        }
        libc::close(fd);
    }
}

/// The fallback of [`kill_children`]: every `/proc/<pid>/stat` whose parent is this process.
unsafe fn kill_children_by_scan() {
    // SAFETY (whole body): raw system calls on stack memory.
    unsafe {
        let me = libc::getpid();
        let dir = libc::open(
            c"/proc".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        );
        if dir < 0 {
            return;
        }
        let mut ents = [0u8; 8192];
        loop {
            let n = libc::syscall(libc::SYS_getdents64, dir, ents.as_mut_ptr(), ents.len());
            if n <= 0 {
                break;
            }
            let mut off = 0usize;
            while off + 19 < n as usize {
                // struct linux_dirent64: ino u64, off i64, reclen u16, type u8, name.
                let reclen = u16::from_ne_bytes([ents[off + 16], ents[off + 17]]) as usize;
                if reclen == 0 {
                    break;
                }
                let name = &ents[off + 19..(off + reclen).min(n as usize)];
                let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
                off += reclen;
                if name.is_empty() || !name.iter().all(u8::is_ascii_digit) || name.len() > 10 {
                    continue;
                }
                let mut path = [0u8; 32];
                let prefix = b"/proc/";
                let suffix = b"/stat\0";
                path[..prefix.len()].copy_from_slice(prefix);
                path[prefix.len()..prefix.len() + name.len()].copy_from_slice(name);
                let end = prefix.len() + name.len();
                path[end..end + suffix.len()].copy_from_slice(suffix);
                let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    continue;
                }
                let mut stat = [0u8; 512];
                let got = libc::read(fd, stat.as_mut_ptr().cast(), stat.len());
                libc::close(fd);
                if got <= 0 {
                    continue;
                }
                if let Some(ppid) = stat_ppid(&stat[..got as usize])
                    && ppid == me
                {
                    let mut pid: libc::pid_t = 0;
                    for &b in name {
                        pid = pid * 10 + libc::pid_t::from(b - b'0');
                    }
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
        libc::close(dir);
    }
}

/// The parent pid in a `/proc/<pid>/stat` line: the second field after the last `)` (the
/// command name may itself hold parentheses and spaces).
fn stat_ppid(stat: &[u8]) -> Option<libc::pid_t> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    let mut fields = stat[close + 1..]
        .split(|&b| b == b' ')
        .filter(|f| !f.is_empty());
    let _state = fields.next()?;
    let ppid = fields.next()?;
    let mut v: libc::pid_t = 0;
    for &b in ppid {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v
            .checked_mul(10)?
            .checked_add(libc::pid_t::from(b - b'0'))?;
    }
    Some(v)
}

/// Exit as the command did: its exit code, or death by its signal (no core file: this
/// process holds a copy of the server's memory).
unsafe fn exit_as(status: Option<libc::c_int>) -> ! {
    // SAFETY (whole body): raw system calls on stack memory.
    unsafe {
        match status {
            Some(st) if libc::WIFEXITED(st) => libc::_exit(libc::WEXITSTATUS(st)),
            Some(st) if libc::WIFSIGNALED(st) => {
                let sig = libc::WTERMSIG(st);
                let none = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                libc::setrlimit(libc::RLIMIT_CORE, &none);
                libc::signal(sig, libc::SIG_DFL);
                let mut one: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut one);
                libc::sigaddset(&mut one, sig);
                libc::sigprocmask(libc::SIG_UNBLOCK, &one, std::ptr::null_mut());
                libc::kill(libc::getpid(), sig);
                libc::_exit(128 + sig)
            }
            _ => libc::_exit(1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parent_pid_from_a_stat_line() {
        assert_eq!(stat_ppid(b"123 (sh) S 45 123 123 0 -1"), Some(45));
        assert_eq!(stat_ppid(b"7 (a) b) (c) R 1 7 7"), Some(1));
        assert_eq!(stat_ppid(b"7 (x"), None);
    }
}
