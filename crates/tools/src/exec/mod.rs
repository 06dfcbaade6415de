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
pub mod sandbox;
#[cfg(target_os = "linux")]
mod seccomp;
#[cfg(target_os = "linux")]
mod supervisor;

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use schemars::JsonSchema;
use serde::Deserialize;
use tokio::io::AsyncWriteExt;
use tokio::sync::watch;

use crate::ToolCtx;
use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::error::IoContext;
use codex_free_core::jail::Jail;
use output::{Output, lossy_prefix};

pub use env::{child_env, is_secret_name};
pub use sandbox::{SandboxStatus, protected_paths, sandbox_status};

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

/// How a process ended.
#[derive(Debug, Clone, Copy)]
struct ExitInfo {
    code: Option<i32>,
    signal: Option<i32>,
    timed_out: bool,
    timeout: Duration,
}

#[derive(Debug, Default)]
struct ProcState {
    /// The leader exited (it may still be a zombie pinning the group id); never signal again.
    done: bool,
    timed_out: bool,
}

/// A process group led by `pid`. Signals are sent only while the leader is unreaped, so a
/// recycled process id is never hit.
#[derive(Debug)]
struct Group {
    pid: i32,
    /// `pid` is the command's supervisor (Linux, [`mod@supervisor`]): it kills the whole
    /// tree when asked, and must never be SIGKILLed itself (the tree would be orphaned).
    supervised: bool,
    /// Locks in this module recover a poisoned mutex (`into_inner`): the state is plain
    /// bookkeeping, so it stays usable and one panicking call does not end every session.
    st: Mutex<ProcState>,
}

impl Group {
    /// Send `sig` to the whole group if its leader has not exited. True if sent. (A
    /// supervisor ignores what is sent to its group; the command's processes get it.)
    #[cfg(unix)]
    fn signal(&self, sig: i32) -> bool {
        let st = self.st.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: killpg has no memory-safety preconditions.
        !st.done && unsafe { libc::killpg(self.pid, sig) } == 0
    }

    /// No process groups here: never reached, [`spawn`] refuses on this OS.
    #[cfg(not(unix))]
    fn signal(&self, _sig: i32) -> bool {
        false
    }

    /// Kill everything the command started, if its leader has not exited: the supervisor is
    /// asked to kill its tree; an unsupervised group gets SIGKILL.
    fn kill_tree(&self) {
        let st = self.st.lock().unwrap_or_else(|e| e.into_inner());
        if !st.done {
            self.kill_tree_locked();
        }
    }

    fn kill_tree_locked(&self) {
        kill_tree(self.pid, self.supervised);
    }

    fn kill_for_timeout(&self) {
        let mut st = self.st.lock().unwrap_or_else(|e| e.into_inner());
        if !st.done {
            st.timed_out = true;
            self.kill_tree_locked();
        }
    }
}

/// Kill everything the command led by `pid` started: its supervisor (`supervised`, Linux) is
/// asked to kill its tree; otherwise its process group gets SIGKILL. The caller guarantees
/// `pid` is its unreaped child (so not a recycled id).
#[cfg(unix)]
pub(crate) fn kill_tree(pid: i32, supervised: bool) {
    // SAFETY: kill and killpg have no memory-safety preconditions.
    unsafe {
        #[cfg(target_os = "linux")]
        if supervised {
            libc::kill(pid, supervisor::KILL_TREE_SIG);
            return;
        }
        let _ = supervised;
        libc::killpg(pid, libc::SIGKILL);
    }
}

/// No process groups here: never reached, every command is refused before it starts on this
/// OS ([`unsupported_os`]).
#[cfg(not(unix))]
pub(crate) fn kill_tree(_pid: i32, _supervised: bool) {}

/// The refusal for starting a command (`what`: "exec_command", "git") on an OS without the
/// process layer this module needs (process groups, `waitid`, an OS sandbox): only Unix
/// starts commands.
#[cfg_attr(unix, allow(dead_code))]
pub(crate) fn unsupported_os(what: &str) -> Error {
    Error::Refused(format!(
        "{what} is not supported on this OS ({}) yet: commands run only on Unix (Linux; macOS untested)",
        std::env::consts::OS
    ))
}

/// One running (or ended but not yet collected) command.
#[derive(Debug)]
struct Session {
    id: u32,
    root: PathBuf,
    cmd: String,
    group: Arc<Group>,
    stdin: tokio::sync::Mutex<Option<tokio::process::ChildStdin>>,
    output: Arc<Output>,
    exit_rx: watch::Receiver<Option<ExitInfo>>,
    last_used: Mutex<Instant>,
    /// Ran in the OS sandbox (with or without network), and its working directory.
    sandbox: Option<SandboxedRun>,
    /// The project's runs-later files as last seen ([`codex_free_core::runs_later::stamps`]):
    /// at the start, then at each reply, which flags what changed in between.
    runs_later: Mutex<RunsLaterStamps>,
}

type RunsLaterStamps = std::collections::BTreeMap<PathBuf, (u64, i128, u64)>;

#[derive(Debug, Clone)]
struct SandboxedRun {
    cwd: PathBuf,
    network: bool,
    /// `exec.allowUnixSockets` is not empty.
    unix_sockets: bool,
}

impl Session {
    fn exited(&self) -> bool {
        self.exit_rx.borrow().is_some()
    }
}

#[derive(Debug, Default)]
struct Store {
    sessions: HashMap<u32, Arc<Session>>,
    retained: VecDeque<Arc<Output>>,
    last_sweep: Option<Instant>,
}

/// The exec sessions of one server, shared by all its MCP sessions (`Send + Sync`).
#[derive(Debug, Default)]
pub struct ExecSessions {
    store: Mutex<Store>,
    /// Protected from sandboxed commands besides the state home and the agents' homes.
    extra_protected: Vec<PathBuf>,
}

impl Drop for ExecSessions {
    fn drop(&mut self) {
        let store = self.store.get_mut().unwrap_or_else(|e| e.into_inner());
        for s in store.sessions.values() {
            s.group.kill_tree();
            s.output.remove_file();
        }
        for o in &store.retained {
            o.remove_file();
        }
    }
}

impl ExecSessions {
    /// No sessions yet. Commands get the sandbox of each call's `exec` config; the paths
    /// they may not touch are [`sandbox::protected_paths`] of the call's state home.
    pub fn new() -> Self {
        Self::default()
    }

    /// Also protect `paths` from sandboxed commands (e.g. the directory of a config file
    /// given with `--config` outside the state home).
    pub fn with_protected(mut self, paths: Vec<PathBuf>) -> Self {
        self.extra_protected = paths;
        self
    }

    /// Run `a.cmd` (see the module doc). Returns the reply text:
    /// `Wall time: S seconds`, then `Process exited with code N` (or the signal / timeout)
    /// or `Process running with session ID N`, `Original token count: T`, `Output:` and the
    /// output (cut as described, its last line naming the continuation).
    ///
    /// Errors: [`Error::Refused`] (tty, exec policy), [`Error::PathOutsideRoot`] /
    /// [`Error::NotFound`] / [`Error::InvalidArgument`] (workdir), [`Error::Busy`]
    /// (`exec.maxSessions` processes still running), [`Error::Io`] (spawn, spool).
    pub async fn exec_command(&self, ctx: &ToolCtx, a: ExecCommandArgs) -> Result<String> {
        let started = Instant::now();
        if a.tty == Some(true) {
            return Err(Error::Refused(
                "tty: true is not supported: this server runs commands on pipes, without a pseudo-terminal. Run it with tty false (or omit tty); interactive programs still work through write_stdin (send \"\\u0003\" for Ctrl-C, \"\\u0004\" to close stdin)".into(),
            ));
        }
        if cfg!(not(unix)) {
            return Err(unsupported_os("exec_command"));
        }
        crate::policy::check(&a.cmd, &ctx.config.exec, ctx.root())?;
        let cwd = resolve_workdir(ctx.jail(), a.workdir.as_deref())?;
        let mut notes = Vec::new();
        let cmdcfg = &ctx.config.command;
        let timeout_ms = match a.timeout_ms {
            Some(t) if t > cmdcfg.max_timeout => {
                notes.push(format!(
                    "Warning: timeout_ms = {t} exceeds command.maxTimeout = {}; using {}.",
                    cmdcfg.max_timeout, cmdcfg.max_timeout
                ));
                cmdcfg.max_timeout
            }
            Some(0) => {
                return Err(Error::InvalidArgument(
                    "timeout_ms must be at least 1".into(),
                ));
            }
            Some(t) => t,
            None => cmdcfg.default_timeout,
        };
        let yield_ms = a
            .yield_time_ms
            .unwrap_or(DEFAULT_EXEC_YIELD_MS)
            .clamp(MIN_YIELD_MS, MAX_YIELD_MS);
        let spool_dir = ctx.home.join("spool");
        self.sweep(&spool_dir);
        // Built before taking the store lock: it lists directories around protected paths.
        let prepared = match ctx.config.exec.sandbox {
            codex_free_core::config::SandboxMode::Off => None,
            codex_free_core::config::SandboxMode::Os => sandbox::Prepared::new(&sandbox::Spec {
                root: ctx.root().to_path_buf(),
                writable: sandbox::writable_roots(&ctx.config.exec),
                // The jail's protected set too, so tools and commands refuse the same paths.
                protected: protected_paths(
                    &ctx.home,
                    &self
                        .extra_protected
                        .iter()
                        .cloned()
                        .chain(
                            ctx.jail()
                                .protected()
                                .paths()
                                .iter()
                                .map(|p| p.path().to_path_buf()),
                        )
                        .chain(sandbox::deny_read(&ctx.config.exec))
                        .collect::<Vec<_>>(),
                ),
                network: ctx.config.exec.network_allowed(),
                unix_sockets: sandbox::unix_sockets(&ctx.config.exec),
                read_only: sandbox::git_dirs(ctx.root()),
            })?,
        };

        let session = {
            let mut store = self.store.lock().unwrap_or_else(|e| e.into_inner());
            self.make_room(&mut store, ctx.config.exec.max_sessions)?;
            let mut id = new_session_id();
            while store.sessions.contains_key(&id) {
                id = new_session_id();
            }
            let session = spawn(
                ctx,
                &a,
                id,
                &cwd,
                &spool_dir,
                Duration::from_millis(timeout_ms),
                prepared,
            )?;
            store.sessions.insert(session.id, Arc::clone(&session));
            session
        };
        tracing::debug!(session = session.id, cmd = %truncate_for_log(&a.cmd), "exec_command started");
        self.collect(
            ctx,
            &session,
            started,
            Duration::from_millis(yield_ms),
            a.max_output_tokens,
            notes,
        )
        .await
    }

    /// Write `a.chars` to a running session and return its new output (reply shaped as
    /// [`ExecSessions::exec_command`]'s).
    ///
    /// Errors: [`Error::InvalidArgument`] for an unknown or already collected `session_id`
    /// (or one started for another project root).
    pub async fn write_stdin(&self, ctx: &ToolCtx, a: WriteStdinArgs) -> Result<String> {
        let started = Instant::now();
        let session = {
            let store = self.store.lock().unwrap_or_else(|e| e.into_inner());
            store
                .sessions
                .get(&a.session_id)
                .filter(|s| s.root == ctx.root())
                .cloned()
        };
        let Some(session) = session else {
            return Err(Error::InvalidArgument(format!(
                "session_id {} is not a running exec session: its process ended and its last output was already returned, it was pruned, or it was never started; run the command again with exec_command",
                a.session_id
            )));
        };
        *session.last_used.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
        let yield_ms = if a.chars.is_empty() {
            a.yield_time_ms
                .unwrap_or(MIN_POLL_YIELD_MS)
                .clamp(MIN_POLL_YIELD_MS, MAX_YIELD_MS)
        } else {
            a.yield_time_ms
                .unwrap_or(DEFAULT_WRITE_YIELD_MS)
                .clamp(MIN_YIELD_MS, MAX_YIELD_MS)
        };
        let deadline = started + Duration::from_millis(yield_ms);
        let notes = send_input(&session, &a.chars, deadline).await;
        self.collect(
            ctx,
            &session,
            started,
            Duration::from_millis(yield_ms),
            a.max_output_tokens,
            notes,
        )
        .await
    }

    /// Page through a command's spooled output: the bytes from `a.offset`, at most the
    /// budget, ending at a line end unless one line fills the page (the footer then says
    /// so), never splitting a UTF-8 character (invalid bytes show as U+FFFD). With `end`
    /// (named by a cut reply: where its shown tail begins) paging stops there, with a last
    /// line saying the omitted bytes are complete, so the tail is never sent twice; without
    /// it, paging runs to the end of the output. Otherwise, unless the page reaches the end of a finished output, its last
    /// line (after one separator `\n`) is
    /// `(showing bytes A-B of N — call read_command_output with output_id=ID offset=B for the rest)`;
    /// head + every page followed + tail is the output, each byte once.
    ///
    /// Errors: [`Error::InvalidArgument`] for a malformed id or an offset past the end;
    /// [`Error::NotFound`] when the spool is gone (expired or pruned).
    pub async fn read_command_output(&self, ctx: &ToolCtx, a: ReadOutputArgs) -> Result<String> {
        let id = a.output_id.trim();
        if id.len() < 8
            || id.len() > 32
            || !id
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        {
            return Err(Error::InvalidArgument(format!(
                "output_id {:?} is not an output id (lower-case hex, as named by a cut exec_command reply)",
                a.output_id
            )));
        }
        let known = {
            let store = self.store.lock().unwrap_or_else(|e| e.into_inner());
            store
                .sessions
                .values()
                .map(|s| &s.output)
                .chain(store.retained.iter())
                .find(|o| o.id == id)
                .cloned()
        };
        let expired = || {
            Error::InvalidArgument(format!(
                "output {id} is no longer available: spool files are deleted {} h after their last write, when more than {RETAINED_OUTPUTS} newer cut outputs exist, or when the server stops; run the command again",
                SPOOL_TTL.as_secs() / 3600
            ))
        };
        let (path, total, spooled, closed, stop_why) = match &known {
            Some(o) => {
                let p = o.progress();
                (o.path.clone(), p.total, p.spooled, p.closed, o.spool_stop())
            }
            None => {
                let path = ctx.home.join("spool").join(format!("{id}.out"));
                let len = std::fs::metadata(&path).map_err(|_| expired())?.len();
                (path, len, len, true, None)
            }
        };
        if !path.exists() {
            return Err(expired());
        }
        let budget = body_budget(ctx, a.max_output_tokens, 0);
        let offset = a.offset;
        if offset > spooled || (offset == spooled && closed && total == spooled) {
            return Err(Error::InvalidArgument(format!(
                "offset={offset} is at or past the end of output {id} ({spooled} bytes spooled{}); there is nothing more to read",
                if closed { "" } else { " so far" }
            )));
        }
        // Stop where a tail already shown begins: the omitted bytes end there.
        let end = a.end;
        if let Some(e) = end
            && e <= offset
        {
            return Err(Error::InvalidArgument(format!(
                "end={e} must be greater than offset={offset} (end is where the shown tail of the reply starts, as its last line names it)"
            )));
        }
        let stop = end.map_or(spooled, |e| e.min(spooled));
        let bytes = output::read_at(&path, offset, budget, stop)?;
        let page_end = offset + bytes.len() as u64;
        let stream_end = page_end == stop && (end.is_some() || closed);
        let (mut text, mut used) = lossy_prefix(&bytes, budget, stream_end);
        if used == 0 && !bytes.is_empty() {
            (text, used) = lossy_prefix(&bytes, budget, true);
        }
        // End the page at a line end unless it reaches the stop or one line fills it.
        let mut split = false;
        if offset + (used as u64) < stop {
            (text, used, split) = output::back_to_line_end(&bytes, text, used);
        }
        let next = offset + used as u64;
        use codex_free_core::paging as pg;
        let line = match end {
            Some(e) if next < e.min(spooled) => {
                Some(pg::command_gap_footer(offset, next, total, e, id, split))
            }
            Some(e) if e <= spooled => Some(pg::command_gap_done_footer(offset, e, total)),
            _ if next < spooled => Some(pg::command_output_footer(
                offset, next, spooled, id, !closed, split,
            )),
            _ => {
                if let Some(why) = &stop_why {
                    Some(pg::command_output_unspooled_footer(
                        offset, next, total, spooled, why, !closed,
                    ))
                } else if !closed {
                    Some(pg::command_output_running_footer(offset, next, spooled, id))
                } else {
                    None
                }
            }
        };
        if let Some(line) = line {
            text.push('\n');
            text.push_str(&line);
        }
        Ok(text)
    }

    /// Wait for exit or the yield deadline, then render the new output of `s`.
    async fn collect(
        &self,
        ctx: &ToolCtx,
        s: &Arc<Session>,
        started: Instant,
        yield_for: Duration,
        max_output_tokens: Option<usize>,
        mut notes: Vec<String>,
    ) -> Result<String> {
        let mut rx = s.exit_rx.clone();
        let deadline = tokio::time::Instant::from_std(started + yield_for);
        let exit = match tokio::time::timeout_at(deadline, rx.wait_for(|e| e.is_some())).await {
            Ok(Ok(v)) => *v,
            _ => None,
        };
        if exit.is_some() {
            s.output.wait_closed(EXIT_DRAIN_GRACE).await;
        }
        let window = s.output.take_window();
        let mut head = std::mem::take(&mut notes);
        {
            let now = codex_free_core::runs_later::stamps(&s.root);
            let mut seen = s.runs_later.lock().unwrap_or_else(|e| e.into_inner());
            let changed = codex_free_core::runs_later::changed(&seen, &now);
            *seen = now;
            head.extend(codex_free_core::runs_later::note(&changed));
        }
        head.push(format!(
            "Wall time: {:.4} seconds",
            started.elapsed().as_secs_f64()
        ));
        match exit {
            Some(e) => head.push(describe_exit(&e)),
            None => head.push(format!("Process running with session ID {}", s.id)),
        }
        head.push(format!(
            "Original token count: {}",
            (window.to - window.from).div_ceil(codex_free_core::tokens::BYTES_PER_TOKEN as u64)
        ));
        let failed = exit.is_some_and(|e| e.code != Some(0));
        let hint_room = if failed && s.sandbox.is_some() {
            HINT_RESERVE
        } else {
            0
        };
        let head_len: usize = head.iter().map(|l| l.len() + 1).sum::<usize>() + "Output:\n".len();
        let budget = body_budget(ctx, max_output_tokens, head_len + hint_room);
        let body = s.output.render(&window, budget);
        // The sandbox hint goes above the output, so a continuation stays the last line.
        if let (Some(run), true) = (&s.sandbox, failed) {
            head.extend(sandbox::denial_hint(
                &body,
                &run.cwd,
                run.network,
                run.unix_sockets,
            ));
        }
        head.push("Output:".into());
        let mut reply = head.join("\n");
        reply.push('\n');
        reply.push_str(&body);
        if exit.is_some() {
            let removed = self
                .store
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .sessions
                .remove(&s.id);
            if removed.is_some() {
                self.finish_output(&s.output);
            }
        }
        debug_assert!(
            reply.len()
                <= ctx
                    .max_output_bytes()
                    .max(MIN_BODY_BYTES + 2 * LINE_RESERVE)
        );
        Ok(reply)
    }

    /// Keep a finished output's spool if a reply was cut (paging may follow), else delete it.
    fn finish_output(&self, o: &Arc<Output>) {
        if !o.was_cut() {
            o.remove_file();
            return;
        }
        let mut store = self.store.lock().unwrap_or_else(|e| e.into_inner());
        store.retained.push_back(Arc::clone(o));
        while store.retained.len() > RETAINED_OUTPUTS {
            if let Some(old) = store.retained.pop_front() {
                old.remove_file();
            }
        }
    }

    /// At `max` sessions, prune ended ones (oldest use first); refuse if all still run.
    fn make_room(&self, store: &mut Store, max: usize) -> Result<()> {
        while store.sessions.len() >= max {
            let oldest_ended = store
                .sessions
                .values()
                .filter(|s| s.exited())
                .min_by_key(|s| *s.last_used.lock().unwrap_or_else(|e| e.into_inner()))
                .map(|s| s.id);
            let Some(id) = oldest_ended else {
                let mut running: Vec<_> = store
                    .sessions
                    .values()
                    .map(|s| format!("{} `{}`", s.id, truncate_for_log(&s.cmd)))
                    .collect();
                running.sort();
                return Err(Error::Busy(format!(
                    "exec.maxSessions = {max} commands are still running ({}). Poll them with write_stdin until they exit, stop one with write_stdin chars=\"\\u0003\", or raise exec.maxSessions",
                    running.join(", ")
                )));
            };
            if let Some(s) = store.sessions.remove(&id) {
                tracing::info!(
                    session = id,
                    "pruned an ended exec session whose output was never collected"
                );
                if s.output.was_cut() {
                    store.retained.push_back(Arc::clone(&s.output));
                } else {
                    s.output.remove_file();
                }
            }
        }
        while store.retained.len() > RETAINED_OUTPUTS {
            if let Some(old) = store.retained.pop_front() {
                old.remove_file();
            }
        }
        Ok(())
    }

    /// Delete spool files older than [`SPOOL_TTL`] (at most once per [`SWEEP_EVERY`]).
    fn sweep(&self, dir: &Path) {
        let live: Vec<PathBuf> = {
            let mut store = self.store.lock().unwrap_or_else(|e| e.into_inner());
            if store.last_sweep.is_some_and(|t| t.elapsed() < SWEEP_EVERY) {
                return;
            }
            store.last_sweep = Some(Instant::now());
            store
                .sessions
                .values()
                .map(|s| s.output.path.clone())
                .collect()
        };
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let now = SystemTime::now();
        for e in entries.flatten() {
            let path = e.path();
            if path.extension().is_none_or(|x| x != "out") || live.contains(&path) {
                continue;
            }
            let old = e
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|m| now.duration_since(m).is_ok_and(|age| age > SPOOL_TTL));
            if old {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
}

/// Bytes of output text allowed in a reply whose other parts take `used` bytes.
fn body_budget(ctx: &ToolCtx, max_output_tokens: Option<usize>, used: usize) -> usize {
    let ceiling = ctx.max_output_bytes();
    let asked = max_output_tokens
        .map(codex_free_core::tokens::bytes_for)
        .unwrap_or(ceiling)
        .min(ceiling);
    asked
        .min(ceiling.saturating_sub(used + LINE_RESERVE))
        .max(MIN_BODY_BYTES)
}

/// SIGKILL's number (9 on every Unix; named here for the OSes whose libc lacks it).
const SIGKILL: i32 = 9;

fn describe_exit(e: &ExitInfo) -> String {
    if e.timed_out {
        return format!(
            "Process timed out after {} ms (timeout_ms) and its whole process group was killed (SIGKILL); exit code {}",
            e.timeout.as_millis(),
            e.code.unwrap_or(128 + e.signal.unwrap_or(SIGKILL))
        );
    }
    match (e.code, e.signal) {
        (Some(c), _) => format!("Process exited with code {c}"),
        (None, Some(sig)) => format!(
            "Process exited with code {} (killed by signal {sig})",
            128 + sig
        ),
        (None, None) => "Process exited with code -1".into(),
    }
}

fn truncate_for_log(s: &str) -> String {
    let mut t: String = s.chars().take(60).collect();
    if t.len() < s.len() {
        t.push('…');
    }
    t.replace('\n', "⏎")
}

/// The directory a command runs in: the root, or `workdir` resolved through the project's
/// jail (inside the root after following symlinks, in no protected directory).
///
/// Errors: as [`Jail::resolve`]; [`Error::InvalidArgument`] when it is not a directory.
fn resolve_workdir(jail: &Jail, workdir: Option<&str>) -> Result<PathBuf> {
    let Some(w) = workdir.filter(|w| !w.trim().is_empty()) else {
        return Ok(jail.root().to_path_buf());
    };
    let dir = jail.resolve(w)?;
    if !dir.is_dir() {
        return Err(Error::InvalidArgument(format!(
            "workdir {w:?} ({}) is not a directory",
            dir.display()
        )));
    }
    Ok(dir)
}

fn shell() -> (&'static str, bool) {
    for b in ["/bin/bash", "/usr/bin/bash"] {
        if Path::new(b).exists() {
            return (b, true);
        }
    }
    ("/bin/sh", false)
}

/// A random session id in 1000..100000 not in use (as Codex's).
fn new_session_id() -> u32 {
    use rand::Rng;
    rand::rng().random_range(1000..100_000)
}

/// Start the process: own process group, merged stdout/stderr pipe, scrubbed environment,
/// inside `prepared` (the OS sandbox; `None` = unconfined), a reader thread (spool + window), a waiter
/// thread and a timeout task.
#[cfg(unix)]
fn spawn(
    ctx: &ToolCtx,
    a: &ExecCommandArgs,
    id: u32,
    cwd: &Path,
    spool_dir: &Path,
    timeout: Duration,
    prepared: Option<sandbox::Prepared>,
) -> Result<Arc<Session>> {
    use std::os::unix::process::CommandExt;
    let exec_cfg = &ctx.config.exec;
    let window_cap = ctx.max_output_bytes();
    let runs_later = codex_free_core::runs_later::stamps(ctx.root());
    let output = Output::create(spool_dir, exec_cfg.max_spool_bytes, window_cap)?;
    let (reader, writer) = std::io::pipe().ctx(|| "creating the output pipe".into())?;
    let writer2 = writer
        .try_clone()
        .ctx(|| "duplicating the output pipe".into())?;
    let (sh, is_bash) = shell();
    let flag = if is_bash && a.login == Some(true) {
        "-lc"
    } else {
        "-c"
    };
    let mut cmd = match &prepared {
        Some(p) => {
            let mut c = p.command(sh, &[flag, &a.cmd]);
            c.env_clear()
                .envs(env::without_socket_vars(child_env(), p.unix_sockets()))
                .env("TMPDIR", p.tmp());
            c
        }
        None => {
            let mut c = std::process::Command::new(sh);
            c.arg(flag).arg(&a.cmd).env_clear().envs(child_env());
            // (A sandboxed command leads its own group already: see `Prepared::command`.)
            c.process_group(0);
            #[cfg(target_os = "linux")]
            {
                let server = std::process::id() as libc::pid_t;
                // SAFETY: `split` makes only async-signal-safe system calls (its module doc).
                unsafe {
                    c.pre_exec(move || supervisor::split(server));
                }
            }
            c
        }
    };
    let supervised = sandbox::SUPERVISED;
    cmd.current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(writer)
        .stderr(writer2);
    {
        use std::os::unix::process::CommandExt;
        // A server started in the background (nohup, `cmd &` from a script) inherits
        // SIGINT/SIGQUIT ignored, and so would every command: then write_stdin's Ctrl-C
        // could not stop one. Commands always start with the default dispositions.
        // SAFETY: signal(2) is async-signal-safe; nothing is allocated in the child.
        unsafe {
            cmd.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                libc::signal(libc::SIGQUIT, libc::SIG_DFL);
                Ok(())
            });
        }
    }
    let spawned = cmd.spawn();
    drop(cmd); // closes the parent's copies of the pipe's write end
    let sandboxed = prepared.as_ref().map(|_| SandboxedRun {
        cwd: cwd.to_path_buf(),
        network: exec_cfg.network_allowed(),
        unix_sockets: !exec_cfg.allow_unix_sockets.is_empty(),
    });
    // Only the TMPDIR outlives the spawn (the ruleset fd closes here); it is removed when
    // the waiter thread sees the process end.
    let tmp = prepared.map(sandbox::Prepared::into_tmp);
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            output.remove_file();
            return Err(Error::io(
                format!(
                    "starting {sh} {flag} in {}{}",
                    cwd.display(),
                    if sandboxed.is_some() {
                        " inside the OS sandbox (exec.sandbox)"
                    } else {
                        ""
                    }
                ),
                e,
            ));
        }
    };
    let pid = child.id() as i32;
    let group = Arc::new(Group {
        pid,
        supervised,
        st: Mutex::new(ProcState::default()),
    });
    let stdin = child
        .stdin
        .take()
        .map(tokio::process::ChildStdin::from_std)
        .transpose()
        .ctx(|| "registering the child's stdin".into())?;
    output.start_reader(reader)?;

    let (exit_tx, exit_rx) = watch::channel(None);
    let g = Arc::clone(&group);
    std::thread::Builder::new()
        .name(format!("exec-wait-{pid}"))
        .spawn(move || {
            wait_no_reap(pid);
            let timed_out = {
                let mut st = g.st.lock().unwrap_or_else(|e| e.into_inner());
                st.done = true;
                // The leader is a zombie now, so its group id cannot be recycled: kill
                // whatever the shell left running in its group.
                // SAFETY: killpg has no memory-safety preconditions.
                unsafe { libc::killpg(pid, libc::SIGKILL) };
                st.timed_out
            };
            let status = child.wait();
            use std::os::unix::process::ExitStatusExt;
            let (code, signal) = match status {
                Ok(s) => (s.code(), s.signal()),
                Err(_) => (None, None),
            };
            exit_tx.send_replace(Some(ExitInfo {
                code,
                signal,
                timed_out,
                timeout,
            }));
            drop(tmp);
        })
        .ctx(|| "starting the exec wait thread".into())?;
    let g = Arc::clone(&group);
    let mut rx = exit_rx.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = tokio::time::sleep(timeout) => g.kill_for_timeout(),
            _ = rx.wait_for(|e| e.is_some()) => {}
        }
    });

    Ok(Arc::new(Session {
        id,
        root: ctx.root().to_path_buf(),
        cmd: a.cmd.clone(),
        group,
        stdin: tokio::sync::Mutex::new(stdin),
        output,
        exit_rx,
        last_used: Mutex::new(Instant::now()),
        sandbox: sandboxed,
        runs_later: Mutex::new(runs_later),
    }))
}

/// No process layer here: every command is refused ([`unsupported_os`]).
#[cfg(not(unix))]
fn spawn(
    _ctx: &ToolCtx,
    _a: &ExecCommandArgs,
    _id: u32,
    _cwd: &Path,
    _spool_dir: &Path,
    _timeout: Duration,
    _prepared: Option<sandbox::Prepared>,
) -> Result<Arc<Session>> {
    Err(unsupported_os("exec_command"))
}

/// Block until `pid` has exited, without reaping it (`waitid(WNOWAIT)`).
#[cfg(unix)]
fn wait_no_reap(pid: i32) {
    loop {
        // SAFETY: `info` is a plain C struct the kernel fills in; zeroed is a valid value.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: valid pointer to `info`; P_PID with our own child's pid.
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return;
        }
    }
}

/// Write `chars` to the session: text to stdin, `\u{3}` = SIGINT to the group,
/// `\u{4}` = close stdin. Returns notes for the reply header.
async fn send_input(s: &Session, chars: &str, deadline: Instant) -> Vec<String> {
    let mut notes = Vec::new();
    let mut stdin = s.stdin.lock().await;
    let mut pending = String::new();
    let mut ops: Vec<Option<char>> = Vec::new();
    let mut parts: Vec<String> = Vec::new();
    for c in chars.chars() {
        if c == '\u{3}' || c == '\u{4}' {
            parts.push(std::mem::take(&mut pending));
            ops.push(Some(c));
        } else {
            pending.push(c);
        }
    }
    parts.push(pending);
    ops.push(None);
    for (text, op) in parts.into_iter().zip(ops) {
        if !text.is_empty() {
            match stdin.as_mut() {
                None => notes.push("Note: stdin is closed (it was closed with \"\\u0004\"); the text was not written.".into()),
                Some(w) => {
                    let wait = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(MIN_YIELD_MS));
                    match tokio::time::timeout(wait, async {
                        w.write_all(text.as_bytes()).await?;
                        w.flush().await
                    })
                    .await
                    {
                        Ok(Ok(())) => {}
                        Ok(Err(e)) => notes.push(format!("Note: could not write to stdin ({e}); the process no longer reads its input.")),
                        Err(_) => notes.push("Note: the process is not reading stdin; part of the text may not have been written.".into()),
                    }
                }
            }
        }
        match op {
            Some('\u{3}') => {
                if s.group.signal(libc::SIGINT) {
                    notes.push("Sent SIGINT (Ctrl-C) to the process group.".into());
                } else {
                    notes.push("Note: the process already ended; SIGINT was not sent.".into());
                }
            }
            Some(_) if stdin.take().is_some() => notes.push("Closed stdin (Ctrl-D).".into()),
            _ => {}
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workdir_stays_inside_the_root() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap().join("proj");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(root.parent().unwrap().join("proj-evil")).unwrap();
        std::fs::create_dir_all(root.join(".state")).unwrap();
        let mut protected = codex_free_core::jail::Protected::none();
        protected.add(&root.join(".state"), "the state home");
        let jail = Jail::new(&root, Arc::new(protected)).unwrap();
        let resolve_workdir = |w: Option<&str>| resolve_workdir(&jail, w);
        assert_eq!(resolve_workdir(None).unwrap(), root);
        assert_eq!(resolve_workdir(Some("sub")).unwrap(), root.join("sub"));
        assert_eq!(
            resolve_workdir(Some(root.join("sub").to_str().unwrap())).unwrap(),
            root.join("sub")
        );
        for bad in ["..", "../proj-evil", "sub/../..", "/etc"] {
            assert_eq!(
                resolve_workdir(Some(bad)).unwrap_err().code(),
                "path_outside_root",
                "{bad}"
            );
        }
        std::os::unix::fs::symlink(root.parent().unwrap().join("proj-evil"), root.join("link"))
            .unwrap();
        assert_eq!(
            resolve_workdir(Some("link")).unwrap_err().code(),
            "path_outside_root"
        );
        assert_eq!(
            resolve_workdir(Some("nope")).unwrap_err().code(),
            "not_found"
        );
        // The protected directory and a link to it are refused as a working directory.
        std::os::unix::fs::symlink(root.join(".state"), root.join("st")).unwrap();
        for bad in [".state", "st", "sub/../.state"] {
            assert_eq!(
                resolve_workdir(Some(bad)).unwrap_err().code(),
                "path_protected",
                "{bad}"
            );
        }
    }

    #[test]
    fn sessions_and_their_futures_are_send() {
        fn send_sync<T: Send + Sync>() {}
        fn send<T: Send>(_: T) {}
        send_sync::<ExecSessions>();
        let ex = ExecSessions::new();
        let ctx = ToolCtx::open(
            Path::new("/"),
            Arc::new(codex_free_core::jail::Protected::none()),
            codex_free_core::config::Config::default(),
            "/nonexistent",
        )
        .unwrap();
        let a = ExecCommandArgs {
            cmd: "true".into(),
            workdir: None,
            yield_time_ms: None,
            max_output_tokens: None,
            timeout_ms: None,
            tty: None,
            login: None,
        };
        send(ex.exec_command(&ctx, a));
        send(ex.write_stdin(
            &ctx,
            WriteStdinArgs {
                session_id: 1,
                chars: String::new(),
                yield_time_ms: None,
                max_output_tokens: None,
            },
        ));
        send(ex.read_command_output(
            &ctx,
            ReadOutputArgs {
                output_id: "x".into(),
                offset: 0,
                max_output_tokens: None,
                end: None,
            },
        ));
    }

    #[test]
    fn exit_descriptions() {
        let t = Duration::from_millis(1500);
        assert_eq!(
            describe_exit(&ExitInfo {
                code: Some(3),
                signal: None,
                timed_out: false,
                timeout: t
            }),
            "Process exited with code 3"
        );
        assert!(
            describe_exit(&ExitInfo {
                code: None,
                signal: Some(9),
                timed_out: true,
                timeout: t
            })
            .starts_with("Process timed out after 1500 ms")
        );
        assert_eq!(
            describe_exit(&ExitInfo {
                code: None,
                signal: Some(15),
                timed_out: false,
                timeout: t
            }),
            "Process exited with code 143 (killed by signal 15)"
        );
    }
}
