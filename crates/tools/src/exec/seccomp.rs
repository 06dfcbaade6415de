//! The seccomp programs every sandboxed command runs under on Linux (beside Landlock, see
//! [`super::sandbox`]). Three filters, one per answer, installed in order; each matches
//! only the calls below and allows everything else:
//!
//! - **EACCES** (what a firewall answers, so tools print "Permission denied"):
//!   - `socket`: only the families the command may use — `AF_UNIX` when
//!     `exec.allowUnixSockets` is not empty; `AF_INET`, `AF_INET6` and route netlink
//!     (`AF_NETLINK` with `NETLINK_ROUTE`, read-only without `CAP_NET_ADMIN`; `getifaddrs`
//!     needs it) when the network is allowed. Every other family is refused: packet, vsock
//!     (the host of a VM), other netlink protocols (sock_diag lists every socket of the
//!     machine, uevents, audit), alg, bluetooth, ... Without network and Unix sockets,
//!     `socket` is refused whatever its family.
//!   - `socketpair`: `AF_UNIX` only, and while Unix sockets are closed only stream and
//!     seqpacket pairs (a datagram socket can `sendto` any named socket, a pair included).
//!   - `io_uring_setup`, `io_uring_enter`, `io_uring_register`: io_uring opens and connects
//!     sockets without these system calls.
//! - **ENOSYS** (what a kernel without the feature answers, so callers fall back):
//!   `keyctl`, `add_key`, `request_key` (the kernel keyring holds the user's keys and is not
//!   confined by Landlock), and `clone3` (its flags sit behind a pointer seccomp cannot read;
//!   glibc then uses `clone`).
//! - **EPERM**: `unshare` and `clone` with any namespace flag, `setns`: a new user namespace
//!   would give the command every capability inside it, the kernel's largest attack surface.
//!
//! Why not filter `connect` by path: seccomp sees only the pointer to the address, not the
//! path (the same reason Claude Code's sandbox-runtime refuses AF_UNIX `socket` on Linux and
//! Codex's refuses `connect`); a pathname socket is only unreachable if the command cannot
//! make a Unix socket at all. Abstract sockets are scoped by Landlock (ABI 6+).
//!
//! On x86_64 every rule is repeated for the x32 numbers (bit 30 set); calls of another
//! architecture (i386 `int 0x80`) kill the process (seccompiler's architecture check).
//!
//! Invariant: the programs are compiled once per (network, unix sockets) pair, before any
//! fork, so the child only passes a pointer to `seccomp(2)`.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// `KEYCTL_JOIN_SESSION_KEYRING`: with a NULL name, join a new anonymous session keyring.
pub(crate) const KEYCTL_JOIN_SESSION_KEYRING: libc::c_ulong = 1;

/// The namespace flags of `clone` (`CLONE_NEWTIME` shares its bit with the exit signal
/// there, so it is only checked for `unshare`).
const CLONE_NS_FLAGS: &[i32] = &[
    libc::CLONE_NEWNS,
    libc::CLONE_NEWCGROUP,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
];
/// `CLONE_NEWTIME` (Linux 5.6), valid for `unshare` and `clone3` only.
const CLONE_NEWTIME: i32 = 0x80;
/// The socket type without `SOCK_NONBLOCK` / `SOCK_CLOEXEC`.
const SOCK_TYPE_MASK: u64 = 0xf;

/// The compiled filters for a command with (`network`, `unix`) allowed, in install order.
///
/// Errors: a text saying what could not be compiled (an unsupported architecture).
pub(crate) fn programs(network: bool, unix: bool) -> Result<&'static [BpfProgram], String> {
    static CACHE: [OnceLock<Result<Vec<BpfProgram>, String>>; 4] = [
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
    ];
    CACHE[usize::from(network) * 2 + usize::from(unix)]
        .get_or_init(|| compile(network, unix))
        .as_ref()
        .map(|v| v.as_slice())
        .map_err(Clone::clone)
}

type Rules = BTreeMap<i64, Vec<SeccompRule>>;

fn err(e: impl std::fmt::Debug) -> String {
    format!("{e:?}")
}

fn cond(arg: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, String> {
    SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value).map_err(err)
}

fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, String> {
    SeccompRule::new(conditions).map_err(err)
}

/// `nr` with `rules` (empty: always), and its x32 twin on x86_64.
fn insert(rules: &mut Rules, nr: i64, r: Vec<SeccompRule>) {
    #[cfg(target_arch = "x86_64")]
    {
        const X32: i64 = 0x4000_0000;
        rules.insert(X32 | nr, r.clone());
    }
    rules.insert(nr, r);
}

fn build(rules: Rules, errno: i32) -> Result<BpfProgram, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| format!("seccomp on {}: {e:?}", std::env::consts::ARCH))?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        arch,
    )
    .map_err(err)?;
    filter.try_into().map_err(err)
}

fn compile(network: bool, unix: bool) -> Result<Vec<BpfProgram>, String> {
    use SeccompCmpOp::{Eq, MaskedEq, Ne};
    let af = |d: i32| d as u64;

    // EACCES: sockets and io_uring.
    let mut allowed = Vec::new();
    if unix {
        allowed.push(libc::AF_UNIX);
    }
    if network {
        allowed.extend([libc::AF_INET, libc::AF_INET6, libc::AF_NETLINK]);
    }
    let mut socket = Vec::new();
    if !allowed.is_empty() {
        socket.push(rule(
            allowed
                .iter()
                .map(|d| cond(0, Ne, af(*d)))
                .collect::<Result<_, _>>()?,
        )?);
    }
    if network {
        socket.push(rule(vec![
            cond(0, Eq, af(libc::AF_NETLINK))?,
            cond(2, Ne, libc::NETLINK_ROUTE as u64)?,
        ])?);
    }
    let mut socketpair = vec![rule(vec![cond(0, Ne, af(libc::AF_UNIX))?])?];
    if !unix {
        for t in [libc::SOCK_DGRAM, libc::SOCK_RAW] {
            socketpair.push(rule(vec![cond(1, MaskedEq(SOCK_TYPE_MASK), t as u64)?])?);
        }
    }
    let mut access = Rules::new();
    insert(&mut access, libc::SYS_socket, socket);
    insert(&mut access, libc::SYS_socketpair, socketpair);
    for nr in [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ] {
        insert(&mut access, nr, Vec::new());
    }

    // ENOSYS: the keyring and clone3.
    let mut nosys = Rules::new();
    for nr in [
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_clone3,
    ] {
        insert(&mut nosys, nr, Vec::new());
    }

    // EPERM: new namespaces.
    let flag_rules = |flags: &[i32]| -> Result<Vec<SeccompRule>, String> {
        flags
            .iter()
            .map(|f| rule(vec![cond(0, MaskedEq(*f as u64), *f as u64)?]))
            .collect()
    };
    let mut unshare_flags = CLONE_NS_FLAGS.to_vec();
    unshare_flags.push(CLONE_NEWTIME);
    let mut perm = Rules::new();
    insert(&mut perm, libc::SYS_unshare, flag_rules(&unshare_flags)?);
    insert(&mut perm, libc::SYS_clone, flag_rules(CLONE_NS_FLAGS)?);
    insert(&mut perm, libc::SYS_setns, Vec::new());

    Ok(vec![
        build(access, libc::EACCES)?,
        build(nosys, libc::ENOSYS)?,
        build(perm, libc::EPERM)?,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_combination_compiles() {
        for network in [false, true] {
            for unix in [false, true] {
                let p = programs(network, unix).unwrap();
                assert_eq!(p.len(), 3);
                // seccomp(2) takes at most 4096 instructions per program.
                assert!(p.iter().all(|f| !f.is_empty() && f.len() < 4096));
            }
        }
    }
}
