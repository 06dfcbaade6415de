//! One command's process: how it ended, its process group or supervisor, starting it (in
//! the sandbox or not), waiting for it and writing to its stdin.

use std::path::Path;
#[cfg(unix)]
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
#[cfg(unix)]
use tokio::sync::watch;

#[cfg(unix)]
use super::sessions::SandboxedRun;
use super::sessions::Session;
use super::*;
use crate::ToolCtx;
use codex_free_core::Error;
use codex_free_core::Result;
#[cfg(unix)]
use codex_free_core::error::IoContext;
#[cfg(unix)]
use output::Output;

/// How a process ended.
#[derive(Debug, Clone, Copy)]
pub(super) struct ExitInfo {
    pub(super) code: Option<i32>,
    pub(super) signal: Option<i32>,
    pub(super) timed_out: bool,
    pub(super) timeout: Duration,
}

#[derive(Debug, Default)]
pub(super) struct ProcState {
    /// The leader exited (it may still be a zombie pinning the group id); never signal again.
    pub(super) done: bool,
    pub(super) timed_out: bool,
}

/// A process group led by `pid`. Signals are sent only while the leader is unreaped, so a
/// recycled process id is never hit.
#[derive(Debug)]
pub(super) struct Group {
    pub(super) pid: i32,
    /// `pid` is the command's supervisor (Linux, [`mod@supervisor`]): it kills the whole
    /// tree when asked, and must never be SIGKILLed itself (the tree would be orphaned).
    pub(super) supervised: bool,
    /// Locks in this module recover a poisoned mutex (`into_inner`): the state is plain
    /// bookkeeping, so it stays usable and one panicking call does not end every session.
    pub(super) st: Mutex<ProcState>,
}

impl Group {
    /// Send `sig` to the whole group if its leader has not exited. True if sent. (A
    /// supervisor ignores what is sent to its group; the command's processes get it.)
    #[cfg(unix)]
    pub(super) fn signal(&self, sig: i32) -> bool {
        let st = self.st.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: killpg has no memory-safety preconditions.
        !st.done && unsafe { libc::killpg(self.pid, sig) } == 0
    }

    /// No process groups here: never reached, [`spawn`] refuses on this OS.
    #[cfg(not(unix))]
    pub(super) fn signal(&self, _sig: i32) -> bool {
        false
    }

    /// Kill everything the command started, if its leader has not exited: the supervisor is
    /// asked to kill its tree; an unsupervised group gets SIGKILL.
    pub(super) fn kill_tree(&self) {
        let st = self.st.lock().unwrap_or_else(|e| e.into_inner());
        if !st.done {
            self.kill_tree_locked();
        }
    }

    pub(super) fn kill_tree_locked(&self) {
        kill_tree(self.pid, self.supervised);
    }

    pub(super) fn kill_for_timeout(&self) {
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

/// SIGKILL's number (9 on every Unix; named here for the OSes whose libc lacks it).
pub(super) const SIGKILL: i32 = 9;

pub(super) fn describe_exit(e: &ExitInfo) -> String {
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

pub(super) fn shell() -> (&'static str, bool) {
    for b in ["/bin/bash", "/usr/bin/bash"] {
        if Path::new(b).exists() {
            return (b, true);
        }
    }
    ("/bin/sh", false)
}

/// Start the process: own process group, merged stdout/stderr pipe, scrubbed environment,
/// inside `prepared` (the OS sandbox; `None` = unconfined), a reader thread (spool + window), a waiter
/// thread and a timeout task.
#[cfg(unix)]
pub(super) fn spawn(
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
pub(super) fn spawn(
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
pub(super) fn wait_no_reap(pid: i32) {
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
pub(super) async fn send_input(s: &Session, chars: &str, deadline: Instant) -> Vec<String> {
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
