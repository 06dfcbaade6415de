//! `exec_command`, `write_stdin` and `read_command_output`: shell commands with the
//! semantics of Codex's unified exec (codex-rs `core/src/unified_exec`), over pipes.
//!
//! - `exec_command` runs `bash -c CMD` (`bash -lc` with `login: true`; `sh -c` when bash
//!   is missing) in the project root or a `workdir` inside it, after the exec policy
//!   ([`crate::policy`]) accepted the command line. It waits up to `yield_time_ms`
//!   (default 10 000, clamped to 250..=30 000, as Codex). If the process ended by then, the
//!   reply carries its exit code and output; otherwise the output so far and a
//!   `session_id`.
//! - `write_stdin` writes `chars` to that process's stdin, waits `yield_time_ms` (default
//!   250; an empty `chars` is a poll and waits at least 5 000 ms unless the process ends,
//!   as Codex), and returns the output produced since the previous reply. There is no
//!   pseudo-terminal, so two control characters are interpreted here: `\u0003` (Ctrl-C)
//!   sends SIGINT to the process group and `\u0004` (Ctrl-D) closes stdin. `tty: true`
//!   is refused.
//! - Every command has a timeout (`timeout_ms`, default `command.defaultTimeout`, at most
//!   `command.maxTimeout`). The child is the leader of its own process group; on timeout
//!   everything the command started is killed (SIGKILL) and the reply says so. When the
//!   shell exits, whatever it left running is killed too, so no command outlives its call.
//!   On Linux the leader is a supervisor ([`mod@supervisor`]), a child subreaper that
//!   keeps even double-forked, `setsid` descendants in its tree and kills them all, also
//!   when the server is killed; elsewhere the process group is killed.
//! - Output (stdout and stderr merged into one pipe, in order) is streamed to a spool file
//!   `<home>/spool/<output_id>.out` (mode 0600) capped at `exec.maxSpoolBytes`; memory holds
//!   only a head and a tail of the bytes not yet returned. A reply longer than its budget
//!   (`max_output_tokens`, default and ceiling `output.maxToolOutputTokens`, tokens =
//!   bytes / 4) keeps its head and tail (cut at line ends) and ends with the exact
//!   `read_command_output` call that pages through the omitted bytes only: those pages stop
//!   where the shown tail begins, so following them and placing the tail last gives the
//!   output byte for byte, each byte once. Bytes past the spool cap are reported as
//!   dropped, never silently.
//! - Live sessions are capped by `exec.maxSessions`. At the cap, sessions whose process
//!   already ended (output not yet collected) are pruned oldest first; if all are still
//!   running, `exec_command` is refused with the list of sessions.
//! - Spool lifetime: a spool is deleted as soon as its command ended and no reply was ever
//!   cut (nothing to page). Cut outputs are kept for paging: the last [`RETAINED_OUTPUTS`]
//!   of this server, each at most [`SPOOL_TTL`] old (older spool files in the directory,
//!   from any server process, are swept on the next `exec_command`). Dropping
//!   [`ExecSessions`] kills every running command's tree and deletes its spools.
//! - The child's environment is the server's minus credentials, and in the sandbox minus
//!   the variables naming Unix sockets (see [`mod@env`]).
//! - With `exec.sandbox = "os"` (the default) every command runs in the OS sandbox
//!   ([`sandbox`]): writes only in the project root, a private `TMPDIR` and
//!   `exec.writableRoots`; no access to the protected paths; no network in allowlist mode
//!   unless `exec.network`. A sandboxed command that fails with a permission error gets a
//!   last line naming the path and the rule.
//!
//! Invariant: the server's memory per command is bounded (window ≤ the tool-output ceiling
//! plus a 64 KiB read buffer) whatever the command prints, and no reply exceeds
//! `output.maxToolOutputTokens` × 4 bytes.

pub mod env;
mod output;
mod process;
mod retention;
pub mod sandbox;
#[cfg(target_os = "linux")]
mod seccomp;
mod sessions;
#[cfg(target_os = "linux")]
mod supervisor;

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

pub use env::{child_env, is_secret_name};
pub(crate) use process::{kill_tree, unsupported_os};
pub use sandbox::{SandboxStatus, protected_paths, sandbox_status};
pub use sessions::ExecSessions;

/// Default `yield_time_ms` of `exec_command` (Codex: 10 s).
pub const DEFAULT_EXEC_YIELD_MS: u64 = 10_000;
/// Default `yield_time_ms` of `write_stdin` with input (Codex: 250 ms).
pub const DEFAULT_WRITE_YIELD_MS: u64 = 250;
/// Smallest `yield_time_ms` (Codex: 250 ms).
pub const MIN_YIELD_MS: u64 = 250;
/// Smallest wait of an empty `write_stdin` poll, unless the process ends (Codex: 5 s).
pub const MIN_POLL_YIELD_MS: u64 = 5_000;
/// Largest `yield_time_ms` (Codex: 30 s).
pub const MAX_YIELD_MS: u64 = 30_000;
/// Finished, cut outputs whose spool files this server keeps for `read_command_output`.
pub const RETAINED_OUTPUTS: usize = 8;
/// Spool files older than this (by modification time) are deleted by the next sweep.
pub const SPOOL_TTL: Duration = Duration::from_secs(6 * 3600);
/// How long after the process exits we wait for the pipe to reach EOF.
const EXIT_DRAIN_GRACE: Duration = Duration::from_millis(500);
/// Bytes of a reply reserved for the cut marker and the continuation line.
const LINE_RESERVE: usize = 640;
/// Bytes of a reply reserved for the sandbox hint of a failed sandboxed command.
const HINT_RESERVE: usize = 900;
/// Smallest output budget in bytes, whatever `max_output_tokens` says.
const MIN_BODY_BYTES: usize = 256;
/// Minimum time between two sweeps of the spool directory.
const SWEEP_EVERY: Duration = Duration::from_secs(600);

/// Arguments of `exec_command`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ExecCommandArgs {
    /// Shell command line to run with `bash -c` (stdout and stderr merged). In
    /// exec.mode "allowlist" every program in it must be allowed.
    pub cmd: String,
    /// Directory to run in: relative to the project root, or absolute inside it. Default: the project root.
    #[serde(default)]
    pub workdir: Option<String>,
    /// Milliseconds to wait for the command before replying (250..=30000, default 10000).
    /// A command still running then keeps running; its reply carries a session_id for write_stdin.
    #[serde(default)]
    pub yield_time_ms: Option<u64>,
    /// Output budget of this reply in tokens (1 token = 4 bytes). Default and ceiling:
    /// output.maxToolOutputTokens. Longer output keeps its head and tail; the last line says how to page the rest.
    #[serde(default)]
    pub max_output_tokens: Option<usize>,
    /// Milliseconds after which the command's whole process group is killed. Default
    /// command.defaultTimeout, at most command.maxTimeout.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Must be false or absent: this server runs commands on pipes, without a pseudo-terminal.
    #[serde(default)]
    pub tty: Option<bool>,
    /// true runs a login shell (`bash -lc`), which reads the profile files first. Default false.
    #[serde(default)]
    pub login: Option<bool>,
}

/// Arguments of `write_stdin`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct WriteStdinArgs {
    /// The session_id from an exec_command reply whose process was still running.
    pub session_id: u32,
    /// Text to write to the process's stdin; empty just polls for output. "\u0003" sends
    /// SIGINT (Ctrl-C) to the process group, "\u0004" (Ctrl-D) closes stdin.
    #[serde(default)]
    pub chars: String,
    /// Milliseconds to wait for output before replying (250..=30000, default 250; an empty poll waits at least 5000 unless the process ends).
    #[serde(default)]
    pub yield_time_ms: Option<u64>,
    /// Output budget of this reply in tokens (1 token = 4 bytes). Default and ceiling: output.maxToolOutputTokens.
    #[serde(default)]
    pub max_output_tokens: Option<usize>,
}

/// Arguments of `read_command_output`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ReadOutputArgs {
    /// The output_id named by a cut exec_command or write_stdin reply.
    pub output_id: String,
    /// Byte offset into the command's output to read from (as named by the previous reply's last line). Default 0.
    #[serde(default)]
    pub offset: u64,
    /// Page size in tokens (1 token = 4 bytes). Default and ceiling: output.maxToolOutputTokens.
    #[serde(default)]
    pub max_output_tokens: Option<usize>,
    /// Stop before this byte offset: where the tail a cut reply already showed begins (as its
    /// last line names it), so the tail is not read twice. Default: the end of the output.
    #[serde(default)]
    pub end: Option<u64>,
}
