//! The exec sessions of one server: the session table and the three tools over it
//! (`exec_command`, `write_stdin`, `read_command_output`).

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::process::{ExitInfo, Group, describe_exit, send_input, spawn};
use super::*;
use crate::ToolCtx;
use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::jail::Jail;
use output::{Output, lossy_prefix};

/// One running (or ended but not yet collected) command.
#[derive(Debug)]
pub(super) struct Session {
    pub(super) id: u32,
    pub(super) root: PathBuf,
    pub(super) cmd: String,
    pub(super) group: Arc<Group>,
    pub(super) stdin: tokio::sync::Mutex<Option<tokio::process::ChildStdin>>,
    pub(super) output: Arc<Output>,
    pub(super) exit_rx: watch::Receiver<Option<ExitInfo>>,
    pub(super) last_used: Mutex<Instant>,
    /// Ran in the OS sandbox (with or without network), and its working directory.
    pub(super) sandbox: Option<SandboxedRun>,
    /// The project's runs-later files as last seen ([`codex_free_core::runs_later::stamps`]):
    /// at the start, then at each reply, which flags what changed in between.
    pub(super) runs_later: Mutex<RunsLaterStamps>,
}

pub(super) type RunsLaterStamps = std::collections::BTreeMap<PathBuf, (u64, i128, u64)>;

#[derive(Debug, Clone)]
pub(super) struct SandboxedRun {
    pub(super) cwd: PathBuf,
    pub(super) network: bool,
    /// `exec.allowUnixSockets` is not empty.
    pub(super) unix_sockets: bool,
}

impl Session {
    pub(super) fn exited(&self) -> bool {
        self.exit_rx.borrow().is_some()
    }
}

#[derive(Debug, Default)]
pub(super) struct Store {
    pub(super) sessions: HashMap<u32, Arc<Session>>,
    pub(super) retained: VecDeque<Arc<Output>>,
    pub(super) last_sweep: Option<Instant>,
}

/// The exec sessions of one server, shared by all its MCP sessions (`Send + Sync`).
#[derive(Debug, Default)]
pub struct ExecSessions {
    pub(super) store: Mutex<Store>,
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
    pub(super) async fn collect(
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
}

/// Bytes of output text allowed in a reply whose other parts take `used` bytes.
pub(super) fn body_budget(ctx: &ToolCtx, max_output_tokens: Option<usize>, used: usize) -> usize {
    let ceiling = ctx.max_output_bytes();
    let asked = max_output_tokens
        .map(codex_free_core::tokens::bytes_for)
        .unwrap_or(ceiling)
        .min(ceiling);
    asked
        .min(ceiling.saturating_sub(used + LINE_RESERVE))
        .max(MIN_BODY_BYTES)
}

pub(super) fn truncate_for_log(s: &str) -> String {
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
pub(super) fn resolve_workdir(jail: &Jail, workdir: Option<&str>) -> Result<PathBuf> {
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

/// A random session id in 1000..100000 not in use (as Codex's).
pub(super) fn new_session_id() -> u32 {
    use rand::Rng;
    rand::rng().random_range(1000..100_000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

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
}
