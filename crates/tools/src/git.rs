//! `git_status`, `git_log`, `git_diff`, `git_commit`: the `git` CLI run directly (no
//! shell) in the project root, with the environment scrubbed as for `exec_command`
//! ([`crate::exec::env`]), no pager, no colour, no prompts, and a timeout
//! (`command.defaultTimeout`, `command.maxTimeout` for commits) that kills the git process
//! group. Path arguments go through the project's jail and reach git as `:(literal)`
//! pathspecs; status, diff and `add -A` are limited to the project root and exclude every
//! protected directory inside it (`:(exclude,literal)`), and a commit is refused while the
//! index holds a protected file.
//!
//! Paging: `git_status` pages by entries and `git_log` by commits (page size
//! `output.maxEntries`, and both stop early at the byte budget); `git_diff` pages by lines
//! (`output.maxFileLines`). A page that is not the last ends with
//! `(showing <unit> A-B of N — call again with offset=B for the rest)` (1-based A-B,
//! 0-based offset); following the offsets yields every entry / line exactly once. A single
//! diff line longer than the byte budget is shown cut, and the page says so (the whole line
//! is available with read_file on the file itself).
//!
//! Invariant: output is streamed from git and only the page being built is kept in memory;
//! every path argument resolves inside the project root and outside protected directories.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::ToolCtx;
use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::error::IoContext;

/// Arguments of `git_status`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct GitStatusArgs {
    /// Number of status entries to skip (0-based), as named by the previous page's last line. Default 0.
    #[serde(default)]
    pub offset: Option<usize>,
}

/// Arguments of `git_log`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct GitLogArgs {
    /// Commits per page (1..=output.maxEntries, default 30).
    #[serde(default)]
    pub max_count: Option<usize>,
    /// Number of commits to skip from the newest (0-based), as named by the previous page's last line. Default 0.
    #[serde(default)]
    pub offset: Option<usize>,
    /// Only commits touching this file or directory (relative to the project root).
    #[serde(default)]
    pub path: Option<String>,
}

/// Arguments of `git_diff`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct GitDiffArgs {
    /// Limit the diff to this file or directory (relative to the project root).
    #[serde(default)]
    pub path: Option<String>,
    /// true: staged changes (index vs HEAD); false or absent: unstaged changes (working tree vs index).
    #[serde(default)]
    pub staged: Option<bool>,
    /// Number of diff lines to skip (0-based), as named by the previous page's last line. Default 0.
    #[serde(default)]
    pub offset: Option<usize>,
}

/// Arguments of `git_commit`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct GitCommitArgs {
    /// The commit message (must not be empty).
    pub message: String,
    /// Commit exactly these files or directories (relative to the project root): their
    /// current content, including new and deleted files; other staged changes stay staged.
    #[serde(default)]
    pub paths: Option<Vec<String>>,
    /// true: stage every change in the work tree (`git add -A`) and commit it. Ignored when paths is given.
    #[serde(default)]
    pub all: Option<bool>,
}

/// Default commits per `git_log` page.
pub const DEFAULT_LOG_COUNT: usize = 30;
/// Bytes of git's stderr kept for error messages.
const STDERR_KEEP: usize = 4096;
/// Bytes reserved in each page for the continuation line.
const LINE_RESERVE: usize = 256;

/// `git status` in porcelain v1 form with the branch line: `## <branch>...<upstream>`
/// then one `XY path` entry per line (X = index, Y = work tree; `??` untracked).
///
/// Errors: [`Error::InvalidArgument`] when the root is not in a git work tree or git fails.
pub fn git_status(ctx: &ToolCtx, a: &GitStatusArgs) -> Result<String> {
    let offset = a.offset.unwrap_or(0);
    let per_page = ctx.config.output.max_entries;
    let budget = page_budget(ctx);
    let mut branch = String::new();
    let mut page = String::new();
    let mut total = 0usize;
    let mut shown_end = offset;
    let mut full = false;
    run_git(
        ctx,
        &["status", "--porcelain=v1", "--branch"],
        &scoped(ctx, Vec::new()),
        read_timeout(ctx),
        |line| {
            let line = String::from_utf8_lossy(line);
            if total == 0 && branch.is_empty() && line.starts_with("## ") {
                branch = line.into_owned();
                return;
            }
            total += 1;
            if total > offset && !full {
                if total - offset > per_page || page.len() + line.len() + 1 > budget {
                    full = true;
                } else {
                    page.push_str(&line);
                    page.push('\n');
                    shown_end = total;
                }
            }
        },
    )?;
    if offset > total || (offset == total && total > 0) {
        return Err(Error::InvalidArgument(format!(
            "offset={offset} is past the last status entry ({total} entries)"
        )));
    }
    let mut out = String::new();
    out.push_str(&branch);
    out.push('\n');
    if total == 0 {
        out.push_str("(no changes: the working tree is clean)\n");
    }
    out.push_str(&page);
    Ok(finish_page(out, "entries", offset, shown_end, total))
}

/// `git log` newest first, one entry per commit: `<hash> <ISO date> <author>` then the
/// subject indented by four spaces.
///
/// Errors: [`Error::InvalidArgument`] for a bad `max_count`/`offset`/`path` or git failure.
pub fn git_log(ctx: &ToolCtx, a: &GitLogArgs) -> Result<String> {
    let max_entries = ctx.config.output.max_entries;
    let count = a.max_count.unwrap_or(DEFAULT_LOG_COUNT.min(max_entries));
    if count == 0 || count > max_entries {
        return Err(Error::InvalidArgument(format!(
            "max_count = {count} is out of range (allowed 1..={max_entries}, output.maxEntries)"
        )));
    }
    let offset = a.offset.unwrap_or(0);
    let pathspec = a.path.as_deref().map(|p| pathspec(ctx, p)).transpose()?;
    if !has_head(ctx)? {
        return Ok("(no commits yet)".into());
    }
    let tail: Vec<OsString> = match pathspec {
        Some(p) => scoped(ctx, vec![p]),
        None => Vec::new(),
    };
    let mut total_s = String::new();
    run_git(
        ctx,
        &["rev-list", "--count", "HEAD"],
        &tail,
        read_timeout(ctx),
        |l| total_s.push_str(&String::from_utf8_lossy(l)),
    )?;
    let total: usize = total_s.trim().parse().unwrap_or(0);
    if offset > 0 && offset >= total {
        return Err(Error::InvalidArgument(format!(
            "offset={offset} is past the last commit ({total} commits)"
        )));
    }
    let skip = format!("--skip={offset}");
    let n = format!("--max-count={count}");
    let budget = page_budget(ctx);
    let mut out = String::new();
    let mut shown = 0usize;
    let mut full = false;
    run_git(
        ctx,
        &[
            "log",
            &skip,
            &n,
            "--date=iso-strict",
            "--format=%h %ad %an%x1f%s",
        ],
        &tail,
        read_timeout(ctx),
        |l| {
            if full {
                return;
            }
            let l = String::from_utf8_lossy(l);
            let (head, subject) = l.split_once('\u{1f}').unwrap_or((&l, ""));
            let entry = format!("{head}\n    {subject}\n");
            if out.len() + entry.len() > budget && shown > 0 {
                full = true;
                return;
            }
            out.push_str(&entry);
            shown += 1;
        },
    )?;
    if total == 0 {
        return Ok("(no commits touch this path)".into());
    }
    Ok(finish_page(out, "commits", offset, offset + shown, total))
}

/// `git diff` (unstaged, or `--cached` with `staged: true`), paged by lines.
///
/// Errors: [`Error::InvalidArgument`] for a bad `path`/`offset` or git failure.
pub fn git_diff(ctx: &ToolCtx, a: &GitDiffArgs) -> Result<String> {
    let offset = a.offset.unwrap_or(0);
    let staged = a.staged.unwrap_or(false);
    let pathspec = a.path.as_deref().map(|p| pathspec(ctx, p)).transpose()?;
    let mut args: Vec<&str> = vec!["diff", "--no-color", "--no-ext-diff", "--no-textconv"];
    if staged {
        args.push("--cached");
    }
    let tail = scoped(ctx, pathspec.into_iter().collect());
    let page = diff_page(ctx, &GitEnv::default(), &args, &tail, offset)?;
    if page.total == 0 {
        return Ok(if staged {
            "(no staged changes; staged=false shows unstaged changes)".into()
        } else {
            "(no unstaged changes; staged=true shows staged changes)".into()
        });
    }
    Ok(page.render(offset))
}

/// One page of a diff's lines (see [`diff_page`]).
pub(crate) struct DiffPage {
    out: String,
    pub(crate) total: usize,
    shown_end: usize,
    long_lines: Vec<(usize, usize)>,
}

impl DiffPage {
    /// The page with its notes on cut lines and its continuation line.
    pub(crate) fn render(mut self, offset: usize) -> String {
        for (line, len) in self.long_lines {
            self.out.push_str(&format!("(line {line} is {len} bytes and was cut at the page budget; read the file itself with read_file for all of it)\n"));
        }
        finish_page(self.out, "lines", offset, self.shown_end, self.total)
    }
}

/// Run a diff and keep the lines after `offset` that fit one page (`output.maxFileLines`
/// lines and the byte budget); counts every line. Errors: git failed, or `offset` is past
/// the last line of a non-empty diff.
pub(crate) fn diff_page(
    ctx: &ToolCtx,
    env: &GitEnv,
    args: &[&str],
    tail: &[OsString],
    offset: usize,
) -> Result<DiffPage> {
    let per_page = ctx.config.output.max_file_lines;
    let budget = page_budget(ctx);
    let mut out = String::new();
    let mut total = 0usize;
    let mut shown_end = offset;
    let mut full = false;
    let mut long_lines: Vec<(usize, usize)> = Vec::new();
    run_git_in(ctx, env, args, tail, read_timeout(ctx), |l| {
        total += 1;
        if total <= offset || full {
            return;
        }
        if total - offset > per_page {
            full = true;
            return;
        }
        let text = String::from_utf8_lossy(l);
        let room = budget.saturating_sub(out.len());
        if text.len() < room {
            out.push_str(&text);
            out.push('\n');
            shown_end = total;
        } else if shown_end == offset {
            // A single line longer than the whole budget: show its head, move on.
            let mut cut = room.saturating_sub(1);
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            out.push_str(&text[..cut]);
            out.push('\n');
            long_lines.push((total, l.len()));
            shown_end = total;
            full = true;
        } else {
            full = true;
        }
    })?
    .map_err(|f| f.into_error(args.first().copied().unwrap_or("")))?;
    if total > 0 && offset >= total {
        return Err(Error::InvalidArgument(format!(
            "offset={offset} is past the last diff line ({total} lines; valid offsets 0..={})",
            total - 1
        )));
    }
    Ok(DiffPage {
        out,
        total,
        shown_end,
        long_lines,
    })
}
/// Commit: `paths` given → `git add -A -- paths` then `git commit --only -- paths`;
/// `all: true` → `git add -A` then commit everything; otherwise commit what is staged.
/// Hooks run as configured; the editor is never opened. Returns
/// `[<branch> <short hash>] <subject>` and git's short stat.
///
/// Errors: [`Error::InvalidArgument`] for an empty message, a path outside the root,
/// nothing to commit, or any git failure (with git's message).
pub fn git_commit(ctx: &ToolCtx, a: &GitCommitArgs) -> Result<String> {
    if a.message.trim().is_empty() {
        return Err(Error::InvalidArgument(
            "message is empty: give the commit message".into(),
        ));
    }
    let timeout = Duration::from_millis(ctx.config.command.max_timeout);
    let msg: OsString = a.message.clone().into();
    match &a.paths {
        Some(paths) if !paths.is_empty() => {
            let specs = paths
                .iter()
                .map(|p| pathspec(ctx, p))
                .collect::<Result<Vec<_>>>()?;
            let spec = scoped(ctx, specs);
            run_git(ctx, &["add", "-A"], &spec, timeout, |_| {})?;
            let mut tail: Vec<OsString> = vec!["-m".into(), msg];
            tail.extend(spec);
            run_git(
                ctx,
                &["commit", "--quiet", "--no-edit", "--only"],
                &tail,
                timeout,
                |_| {},
            )?;
        }
        Some(_) => {
            return Err(Error::InvalidArgument(
                "paths is empty: list the files to commit, or omit paths".into(),
            ));
        }
        None => {
            if a.all == Some(true) {
                run_git(
                    ctx,
                    &["add", "-A"],
                    &scoped(ctx, Vec::new()),
                    timeout,
                    |_| {},
                )?;
            }
            refuse_staged_protected(ctx, timeout)?;
            if a.all != Some(true)
                && run_git(ctx, &["diff", "--cached", "--quiet"], &[], timeout, |_| {}).is_ok()
            {
                return Err(Error::InvalidArgument(
                    "nothing is staged to commit: pass paths=[...] to commit given files, or all=true to commit every change in the work tree".into(),
                ));
            }
            run_git(
                ctx,
                &["commit", "--quiet", "--no-edit"],
                &["-m".into(), msg],
                timeout,
                |_| {},
            )?;
        }
    }
    let mut branch = String::new();
    run_git(
        ctx,
        &["rev-parse", "--abbrev-ref", "HEAD"],
        &[],
        read_timeout(ctx),
        |l| branch.push_str(&String::from_utf8_lossy(l)),
    )?;
    let mut summary = Vec::new();
    run_git(
        ctx,
        &["log", "-1", "--format=%h%x1f%s", "--shortstat"],
        &[],
        read_timeout(ctx),
        |l| {
            let l = String::from_utf8_lossy(l).into_owned();
            if !l.trim().is_empty() {
                summary.push(l);
            }
        },
    )?;
    let (hash, subject) = summary
        .first()
        .and_then(|s| s.split_once('\u{1f}'))
        .unwrap_or(("?", ""));
    let stat = summary
        .get(1)
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let subject: String = subject.chars().take(200).collect();
    Ok(format!("[{} {hash}] {subject}\n{stat}", branch.trim()))
}

pub(crate) fn read_timeout(ctx: &ToolCtx) -> Duration {
    Duration::from_millis(ctx.config.command.default_timeout)
}

fn page_budget(ctx: &ToolCtx) -> usize {
    ctx.max_output_bytes()
        .saturating_sub(LINE_RESERVE)
        .max(LINE_RESERVE)
}

/// Append the continuation line when `end < total` (1-based `offset+1`-`end` shown).
fn finish_page(mut out: String, unit: &str, offset: usize, end: usize, total: usize) -> String {
    if end < total {
        out.push_str(&codex_free_core::paging::entries_footer(
            unit,
            offset + 1,
            end,
            total,
            end,
        ));
    } else if out.ends_with('\n') {
        out.pop();
    }
    out
}

fn has_head(ctx: &ToolCtx) -> Result<bool> {
    match run_git_exit(
        ctx,
        &["rev-parse", "--verify", "--quiet", "HEAD"],
        &[],
        read_timeout(ctx),
        |_| {},
    )? {
        Ok(()) => Ok(true),
        Err(GitExit { code: Some(1), .. }) => Ok(false),
        Err(f) => Err(f.into_error("rev-parse")),
    }
}

/// A path argument as a literal git pathspec (`:(literal)<path relative to the root>`),
/// through the project's jail: `..` may not climb out, a symlink may not lead out, and
/// nothing in a protected directory is accepted. A missing path (a deleted file) is fine.
fn pathspec(ctx: &ToolCtx, p: &str) -> Result<OsString> {
    let rel = ctx.jail().relative(p)?;
    let mut spec = OsString::from(":(literal)");
    if rel.as_os_str().is_empty() {
        spec.push(".");
    } else {
        spec.push(rel.as_os_str());
    }
    Ok(spec)
}

/// `-- <specs or the whole root> <excludes>`: git limited to the project root (the root
/// may be a subfolder of the repository) with every protected directory inside it left out,
/// so status, diffs and `add -A` never show or stage the state home.
pub(crate) fn scoped(ctx: &ToolCtx, specs: Vec<OsString>) -> Vec<OsString> {
    let mut tail: Vec<OsString> = vec!["--".into()];
    if specs.is_empty() {
        tail.push(":(literal).".into());
    } else {
        tail.extend(specs);
    }
    let root = ctx.root();
    let mut seen = std::collections::HashSet::new();
    for p in ctx.jail().protected_inside(root) {
        if let Ok(rel) = p.strip_prefix(root)
            && seen.insert(rel.to_path_buf())
        {
            let mut ex = OsString::from(":(exclude,literal)");
            ex.push(rel.as_os_str());
            tail.push(ex);
        }
    }
    tail
}

/// Refuse a commit whose index holds a file in a protected directory (staged by some other
/// means than these tools), naming the file.
fn refuse_staged_protected(ctx: &ToolCtx, timeout: Duration) -> Result<()> {
    let mut top = String::new();
    run_git(ctx, &["rev-parse", "--show-toplevel"], &[], timeout, |l| {
        top.push_str(&String::from_utf8_lossy(l))
    })?;
    let top = PathBuf::from(top.trim());
    let mut names: Vec<u8> = Vec::new();
    run_git(
        ctx,
        &["diff", "--cached", "--name-only", "-z", "--no-renames"],
        &[],
        timeout,
        |l| {
            names.extend_from_slice(l);
            names.push(b'\n');
        },
    )?;
    for name in names.split(|b| *b == 0) {
        let name = String::from_utf8_lossy(name);
        let name = name.trim_matches('\n');
        if name.is_empty() {
            continue;
        }
        let abs = top.join(name);
        if let Some(d) = ctx.jail().protected().covering(&abs) {
            return Err(Error::PathProtected(format!(
                "nothing was committed: the index holds {name}, which lies in {} {}, and no tool may commit protected files; unstage it first",
                d.what(),
                d.path().display()
            )));
        }
    }
    Ok(())
}

/// Run `git <args> <tail>` in the root and feed each stdout line (without `\n`) to
/// `on_line`. Errors with git's stderr on a non-zero exit, and kills git's process group
/// after `timeout`.
fn run_git(
    ctx: &ToolCtx,
    args: &[&str],
    tail: &[OsString],
    timeout: Duration,
    on_line: impl FnMut(&[u8]),
) -> Result<()> {
    let sub = args.first().copied().unwrap_or("");
    run_git_exit(ctx, args, tail, timeout, on_line)?.map_err(|f| f.into_error(sub))
}

/// A git run that ended with a non-zero exit: its exit code (`None` when killed by a
/// signal) and what it said (stderr, or stdout when stderr was empty), trimmed.
pub(crate) struct GitExit {
    pub(crate) code: Option<i32>,
    message: String,
}

impl GitExit {
    /// The tool error for a failed `git <sub>`.
    pub(crate) fn into_error(self, sub: &str) -> Error {
        Error::InvalidArgument(format!(
            "git {sub} failed (exit {}): {}",
            self.code.unwrap_or(-1),
            self.message
        ))
    }
}

/// [`run_git`], with a non-zero exit returned as a value so callers can branch on the
/// exit code (e.g. `rev-parse --verify --quiet` answers "no such ref" with exit 1).
fn run_git_exit(
    ctx: &ToolCtx,
    args: &[&str],
    tail: &[OsString],
    timeout: Duration,
    on_line: impl FnMut(&[u8]),
) -> Result<std::result::Result<(), GitExit>> {
    run_git_in(ctx, &GitEnv::default(), args, tail, timeout, on_line)
}

/// Extra environment for a git run and the directories it may write besides the project
/// (the private snapshot store of `show_changes`).
#[derive(Debug, Default)]
pub(crate) struct GitEnv {
    pub(crate) vars: Vec<(&'static str, OsString)>,
    pub(crate) writable: Vec<PathBuf>,
}

/// Read git's stderr to its end, keeping the first [`STDERR_KEEP`] bytes (the rest is
/// drained so git never blocks on a full pipe).
fn keep_stderr(stderr: &mut impl Read) -> Vec<u8> {
    let mut keep = Vec::new();
    let mut buf = [0u8; 8192];
    while let Ok(n) = stderr.read(&mut buf) {
        if n == 0 {
            break;
        }
        let room = STDERR_KEEP.saturating_sub(keep.len()).min(n);
        keep.extend_from_slice(&buf[..room]);
    }
    keep
}

/// [`run_git_exit`] with `env` added to git's environment and sandbox.
pub(crate) fn run_git_in(
    ctx: &ToolCtx,
    env: &GitEnv,
    args: &[&str],
    tail: &[OsString],
    timeout: Duration,
    mut on_line: impl FnMut(&[u8]),
) -> Result<std::result::Result<(), GitExit>> {
    if cfg!(not(unix)) {
        return Err(crate::exec::unsupported_os("git"));
    }
    // git runs in the same OS sandbox as exec_command: a command can write `.git/config`
    // or `.gitattributes` (filters, fsmonitor), so whatever git starts must be contained
    // too. It may write only inside the project root; protected paths stay unreadable.
    let prepared = match ctx.config.exec.sandbox {
        codex_free_core::config::SandboxMode::Off => None,
        codex_free_core::config::SandboxMode::Os => {
            let extra: Vec<std::path::PathBuf> = ctx
                .jail()
                .protected()
                .paths()
                .iter()
                .map(|p| p.path().to_path_buf())
                .chain(crate::exec::sandbox::deny_read(&ctx.config.exec))
                .collect();
            // The product's own git tools write `.git` (commit, stage); they run git with
            // hooks, fsmonitor, external diff and pager off (below), so `.git` stays
            // writable for them only.
            crate::exec::sandbox::Prepared::new(&crate::exec::sandbox::Spec {
                root: ctx.root().to_path_buf(),
                writable: env.writable.clone(),
                protected: crate::exec::protected_paths(&ctx.home, &extra),
                network: false,
                unix_sockets: Vec::new(),
                read_only: Vec::new(),
            })?
        }
    };
    let mut cmd = match &prepared {
        // A sandboxed command is the leader of its own session (so of its process group).
        Some(p) => p.command("git", &[]),
        None => {
            let mut c = Command::new("git");
            #[cfg(unix)]
            std::os::unix::process::CommandExt::process_group(&mut c, 0);
            c
        }
    };
    // The repository's own config is writable by the agent (write_file .git/config, or a
    // command): never let it make this process run programs — no fsmonitor, no hooks, no
    // external diff or pager.
    cmd.args([
        "--no-pager",
        "-c",
        "core.fsmonitor=false",
        "-c",
        "core.hooksPath=/dev/null",
        "-c",
        "diff.external=",
        "-c",
        "core.pager=cat",
        "-c",
        "color.ui=never",
        "-c",
        "core.quotepath=on",
        "-c",
        "core.editor=true",
    ])
    .args(args)
    .args(tail)
    .current_dir(ctx.root())
    .env_clear()
    .envs(crate::exec::child_env())
    .env("GIT_OPTIONAL_LOCKS", "0")
    .env("GIT_EDITOR", "true")
    .envs(env.vars.iter().map(|(k, v)| (*k, v.as_os_str())))
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    if let Some(p) = &prepared {
        cmd.env("TMPDIR", p.tmp());
    }
    let sub = args.first().copied().unwrap_or("");
    let mut child = cmd
        .spawn()
        .ctx(|| format!("running git {sub} (is git installed?)"))?;
    let pid = child.id() as i32;
    let supervised = prepared.is_some() && crate::exec::sandbox::SUPERVISED;
    // Both were piped at spawn; taken before the watchdog, so a miss still stops git.
    let (Some(stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take()) else {
        crate::exec::kill_tree(pid, supervised);
        let _ = child.wait();
        return Err(Error::Refused(format!(
            "git {sub} started without its output pipes"
        )));
    };
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if done_rx.recv_timeout(timeout) == Err(mpsc::RecvTimeoutError::Timeout) {
            // The group leader is our unreaped child until `wait` below, so the id cannot be
            // recycled.
            crate::exec::kill_tree(pid, supervised);
            return true;
        }
        false
    });
    let err_thread = std::thread::spawn(move || keep_stderr(&mut stderr));
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut line = Vec::new();
    let mut out_keep = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => {
                if line.last() == Some(&b'\n') {
                    line.pop();
                }
                if out_keep.len() < STDERR_KEEP {
                    out_keep
                        .extend_from_slice(&line[..line.len().min(STDERR_KEEP - out_keep.len())]);
                    out_keep.push(b'\n');
                }
                on_line(&line);
            }
            Err(e) => return Err(Error::io(format!("reading git {sub} output"), e)),
        }
    }
    let status = child.wait().ctx(|| format!("waiting for git {sub}"))?;
    let _ = done_tx.send(());
    let timed_out = watchdog.join().unwrap_or(false);
    let err = err_thread.join().unwrap_or_default();
    if timed_out {
        return Err(Error::Cancelled(format!(
            "git {sub} timed out after {} ms and was killed",
            timeout.as_millis()
        )));
    }
    if prepared.is_some() && status.success() {
        let e = String::from_utf8_lossy(&err);
        if let Some(l) = e.lines().find(|l| l.contains("could not open directory")) {
            // Never report a partial status or diff as complete.
            return Err(Error::Refused(format!(
                "git {sub} could not read the whole project inside the command sandbox ({}): \
                 the project contains a protected directory (such as the state home), and the \
                 sandbox cannot let git list the folders around it. Serve a project that does \
                 not contain it, or set exec.sandbox to \"off\" (not recommended)",
                l.trim()
            )));
        }
    }
    if !status.success() {
        // Some failures (e.g. "nothing to commit") are reported on stdout only.
        let msg = if err.iter().all(u8::is_ascii_whitespace) {
            String::from_utf8_lossy(&out_keep)
        } else {
            String::from_utf8_lossy(&err)
        };
        return Ok(Err(GitExit {
            code: status.code(),
            message: msg.trim().to_string(),
        }));
    }
    Ok(Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pathspecs_go_through_the_jail() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let root = base.join("proj");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join(".state")).unwrap();
        std::fs::create_dir_all(base.join("proj-evil")).unwrap();
        std::os::unix::fs::symlink(base.join("proj-evil"), root.join("link")).unwrap();
        std::os::unix::fs::symlink(root.join(".state"), root.join("st")).unwrap();
        let mut protected = codex_free_core::jail::Protected::none();
        protected.add(&root.join(".state"), "the state home");
        let ctx = ToolCtx::open(
            &root,
            std::sync::Arc::new(protected),
            codex_free_core::config::Config::default(),
            base.join("home"),
        )
        .unwrap();
        assert_eq!(pathspec(&ctx, "src").unwrap(), ":(literal)src");
        assert_eq!(
            pathspec(&ctx, "src/new/file.rs").unwrap(),
            ":(literal)src/new/file.rs"
        );
        assert_eq!(pathspec(&ctx, ".").unwrap(), ":(literal).");
        for bad in ["..", "../proj-evil/x", "/etc/passwd", "link/x", "link"] {
            assert_eq!(
                pathspec(&ctx, bad).unwrap_err().code(),
                "path_outside_root",
                "{bad}"
            );
        }
        for bad in [
            ".state",
            ".state/codex.config.json",
            "st",
            "st/x",
            "src/../.state",
        ] {
            assert_eq!(
                pathspec(&ctx, bad).unwrap_err().code(),
                "path_protected",
                "{bad}"
            );
        }
        let tail = scoped(&ctx, Vec::new());
        assert_eq!(
            tail,
            vec![
                OsString::from("--"),
                ":(literal).".into(),
                ":(exclude,literal).state".into()
            ]
        );
    }

    #[test]
    fn finish_page_line() {
        assert_eq!(
            finish_page("a\n".into(), "lines", 0, 1, 3),
            "a\n(showing lines 1-1 of 3 — call again with offset=1 for the rest)"
        );
        assert_eq!(finish_page("a\n".into(), "lines", 2, 3, 3), "a");
    }

    /// `rev-parse --verify --quiet HEAD` exits 1 in a repository without commits: read as
    /// "no commits yet" from the exit code; outside a repository git exits 128 and the
    /// error surfaces.
    #[test]
    fn log_without_commits_and_outside_a_repo() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap().join("proj");
        std::fs::create_dir_all(&root).unwrap();
        let ctx = ToolCtx::open(
            &root,
            std::sync::Arc::new(codex_free_core::jail::Protected::none()),
            codex_free_core::config::Config::default(),
            tmp.path().join("home"),
        )
        .unwrap();
        let args = GitLogArgs {
            max_count: None,
            offset: None,
            path: None,
        };
        let e = git_log(&ctx, &args).unwrap_err();
        assert!(e.to_string().contains("(exit 128)"), "{e}");
        let init = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(&root)
            .status()
            .unwrap();
        assert!(init.success());
        assert_eq!(git_log(&ctx, &args).unwrap(), "(no commits yet)");
    }

    /// A repository whose own config defines a clean filter (as a command in the project
    /// could write it): committing runs the filter, and only the sandbox keeps it from
    /// writing outside the project. With `exec.sandbox: "off"` the same filter does write
    /// there, so the test would notice a sandbox that does nothing.
    #[test]
    fn repository_filters_run_inside_the_sandbox() {
        if super::super::exec::sandbox_status(&Default::default())
            .warning
            .is_some()
        {
            eprintln!("no OS sandbox on this system; skipped");
            return;
        }
        for mode in [
            codex_free_core::config::SandboxMode::Os,
            codex_free_core::config::SandboxMode::Off,
        ] {
            let tmp = tempfile::tempdir().unwrap();
            let base = std::fs::canonicalize(tmp.path()).unwrap();
            let (root, outside) = (base.join("proj"), base.join("outside"));
            std::fs::create_dir_all(&root).unwrap();
            std::fs::create_dir_all(&outside).unwrap();
            let marker = outside.join("pwned");
            let git = |args: &[&str]| {
                let st = std::process::Command::new("git")
                    .args(args)
                    .current_dir(&root)
                    .status()
                    .unwrap();
                assert!(st.success(), "git {args:?}");
            };
            git(&["init", "-q"]);
            git(&["config", "user.email", "t@e"]);
            git(&["config", "user.name", "t"]);
            git(&[
                "config",
                "filter.evil.clean",
                &format!("sh -c 'echo x > {}; cat'", marker.display()),
            ]);
            std::fs::write(root.join(".gitattributes"), "*.txt filter=evil\n").unwrap();
            std::fs::write(root.join("a.txt"), "hello\n").unwrap();
            let mut config = codex_free_core::config::Config::default();
            config.exec.sandbox = mode;
            let ctx = ToolCtx::open(
                &root,
                std::sync::Arc::new(codex_free_core::jail::Protected::none()),
                config,
                base.join("home"),
            )
            .unwrap();
            let _ = git_commit(
                &ctx,
                &GitCommitArgs {
                    message: "m".into(),
                    paths: None,
                    all: Some(true),
                },
            );
            match mode {
                codex_free_core::config::SandboxMode::Os => {
                    assert!(
                        !marker.exists(),
                        "the repository's filter wrote outside the project"
                    )
                }
                codex_free_core::config::SandboxMode::Off => {
                    assert!(marker.exists(), "control: the filter did not run at all")
                }
            }
        }
    }
}
