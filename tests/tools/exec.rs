//! exec_command / write_stdin / read_command_output and the git tools, through their
//! public API, on real processes and real repositories.

use std::process::Command;
use std::time::Duration;

use codex_free_core::config::{Config, ExecMode};
use codex_free_testkit::pages;
use codex_free_tools::ToolCtx;
use codex_free_tools::exec::{ExecCommandArgs, ExecSessions, ReadOutputArgs, WriteStdinArgs};
use codex_free_tools::git::{self, GitCommitArgs, GitDiffArgs, GitLogArgs, GitStatusArgs};

use crate::support::git;

struct Env {
    _tmp: tempfile::TempDir,
    ctx: ToolCtx,
}

fn env_with(f: impl FnOnce(&mut Config)) -> Env {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let root = base.join("proj");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    let mut config = Config::default();
    f(&mut config);
    config.validate().unwrap();
    let home = base.join("home");
    let protected =
        codex_free_core::jail::Protected::standard(&home, &home.join("codex.config.json"));
    let ctx = ToolCtx::open(&root, std::sync::Arc::new(protected), config, home).unwrap();
    Env { _tmp: tmp, ctx }
}

fn args(cmd: &str) -> ExecCommandArgs {
    ExecCommandArgs {
        cmd: cmd.into(),
        workdir: None,
        yield_time_ms: None,
        max_output_tokens: None,
        timeout_ms: None,
        tty: None,
        login: None,
    }
}

fn poll(id: u32) -> WriteStdinArgs {
    WriteStdinArgs {
        session_id: id,
        chars: String::new(),
        yield_time_ms: Some(30_000),
        max_output_tokens: None,
    }
}

fn session_id(reply: &str) -> Option<u32> {
    reply
        .lines()
        .find_map(|l| l.strip_prefix("Process running with session ID "))
        .map(|s| s.trim().parse().unwrap())
}

fn body(reply: &str) -> &str {
    reply
        .split_once("\nOutput:\n")
        .expect("reply has an Output: section")
        .1
}

/// Run until the process ends, polling as needed; returns the final reply.
async fn run_to_end(ex: &ExecSessions, ctx: &ToolCtx, a: ExecCommandArgs) -> String {
    let mut reply = ex.exec_command(ctx, a).await.unwrap();
    while let Some(id) = session_id(&reply) {
        reply = ex.write_stdin(ctx, poll(id)).await.unwrap();
    }
    reply
}

/// `(content, next offset)` of a read_command_output page.
fn split_page(page: &str) -> (&str, Option<u64>) {
    let (content, next) = pages::split_page(page);
    (content, next.and_then(|c| c.offset()))
}

/// SHA-256 and length of a command's stdout, by the system `sha256sum` (fast in debug builds).
fn sha_of_command(cmd: &str) -> (String, u64) {
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!("{cmd} | tee >(wc -c >&2) | sha256sum"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let sha = String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let len = String::from_utf8(out.stderr)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    (sha, len)
}

/// A running `sha256sum` fed page by page.
struct Hasher(std::process::Child);

impl Hasher {
    fn new() -> Self {
        Hasher(
            Command::new("sha256sum")
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap(),
        )
    }
    fn update(&mut self, b: &[u8]) {
        std::io::Write::write_all(self.0.stdin.as_mut().unwrap(), b).unwrap();
    }
    fn finish(mut self) -> String {
        drop(self.0.stdin.take());
        let out = self.0.wait_with_output().unwrap();
        String::from_utf8(out.stdout)
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .to_string()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_of_200_mb_is_bounded_and_pages_back_byte_for_byte() {
    let e = env_with(|c| {
        c.exec.max_spool_bytes = 256 << 20;
        c.output.max_tool_output_tokens = 100_000;
    });
    let cmd = "seq 1 23000000";
    let (want_sha, want_len) = sha_of_command(cmd);
    assert!(want_len > 190_000_000, "{want_len}");
    let ex = ExecSessions::new();
    let mut a = args(cmd);
    a.yield_time_ms = Some(30_000);
    let reply = run_to_end(&ex, &e.ctx, a).await;
    assert!(
        reply.len() <= e.ctx.max_output_bytes(),
        "reply is {} bytes",
        reply.len()
    );
    assert!(
        reply.contains("Process exited with code 0"),
        "{}",
        &reply[..300]
    );
    let last = reply.lines().last().unwrap();
    assert!(
        last.starts_with("(output cut: showing bytes 0-")
            && last.contains(&format!(" of {want_len}; the omitted bytes are "))
            && last.contains(" — call read_command_output with output_id="),
        "{last}"
    );
    let next = pages::parse_footer(last).expect("the last line names the next call");
    let id = next.arg("output_id").unwrap().to_string();
    let mut offset: u64 = next.offset().unwrap();
    let next_end: Option<u64> = next.arg("end").map(|e| e.parse().unwrap());
    let (content, _) = pages::split_page(body(&reply));
    let tail_start = want_len - {
        let t = content.split_once("…]\n").unwrap().1;
        t.len() as u64
    };
    let (head, tail) =
        codex_free_core::paging::split_head_tail(content, offset, tail_start).unwrap();
    assert_eq!(
        head.len() as u64,
        offset,
        "the head shown is exactly bytes 0-offset"
    );
    assert!(head.starts_with("1\n2\n3\n"));

    let mut h = Hasher::new();
    h.update(head.as_bytes());
    let mut got = offset;
    let mut pages = 0;
    loop {
        let page = ex
            .read_command_output(
                &e.ctx,
                ReadOutputArgs {
                    output_id: id.clone(),
                    offset,
                    max_output_tokens: None,
                    end: next_end,
                },
            )
            .await
            .unwrap();
        assert!(page.len() <= e.ctx.max_output_bytes());
        pages += 1;
        let (content, next) = split_page(&page);
        h.update(content.as_bytes());
        got += content.len() as u64;
        match next {
            Some(n) => {
                assert_eq!(n, offset + content.len() as u64, "no gap, no overlap");
                offset = n;
            }
            None => break,
        }
    }
    assert_eq!(next_end, Some(tail_start));
    assert_eq!(got, tail_start, "paging stops where the shown tail starts");
    h.update(tail.as_bytes());
    got += tail.len() as u64;
    assert!(pages > 400, "{pages} pages");
    assert_eq!(got, want_len);
    assert_eq!(h.finish(), want_sha);
    // Past the end is an error naming the end, not silence.
    let err = ex
        .read_command_output(
            &e.ctx,
            ReadOutputArgs {
                output_id: id,
                offset: want_len,
                max_output_tokens: None,
                end: None,
            },
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("nothing more to read"), "{err}");
}

/// `seq 1 300000` (1,988,895 bytes): the reply shows a head and a tail; following its
/// continuation returns exactly the omitted middle, page by page, each page ending at a line
/// end, and head + pages + tail is the output byte for byte, every line once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn following_a_cut_reply_returns_each_byte_once_in_line_pages() {
    let e = env_with(|_| {});
    let want: String = (1..=300_000).map(|i| format!("{i}\n")).collect();
    assert_eq!(want.len(), 1_988_895);
    let ex = ExecSessions::new();
    let mut a = args("seq 1 300000");
    a.yield_time_ms = Some(30_000);
    let reply = run_to_end(&ex, &e.ctx, a).await;
    assert!(reply.len() <= e.ctx.max_output_bytes(), "{}", reply.len());
    let handle = tokio::runtime::Handle::current();
    let (got, pages) = pages::follow_exec(&reply, 10_000, |c| {
        let page = tokio::task::block_in_place(|| {
            handle.block_on(ex.read_command_output(
                &e.ctx,
                ReadOutputArgs {
                    output_id: c.arg("output_id").unwrap().to_string(),
                    offset: c.offset().unwrap(),
                    max_output_tokens: None,
                    end: c.arg("end").map(|e| e.parse().unwrap()),
                },
            ))
        })
        .unwrap();
        assert!(page.len() <= e.ctx.max_output_bytes(), "{}", page.len());
        page
    });
    assert_eq!(got.len(), want.len(), "each byte once");
    assert!(got == want, "byte for byte");
    assert!(pages.len() > 40, "{} pages", pages.len());
    // Every page's content ends at a line end; the footer follows one separator `\n`.
    let body = pages::exec_body(&reply);
    let (first, _) = pages::split_page(body);
    let (head, tail) = first.split_once("\n[… bytes ").unwrap();
    assert!(
        head.ends_with('\n') && tail.ends_with("300000\n"),
        "{tail:.80}"
    );
    assert!(
        tail.split_once("…]\n")
            .unwrap()
            .1
            .starts_with(|c: char| c.is_ascii_digit())
    );
    for p in &pages {
        let (content, _) = pages::split_page(p);
        assert!(
            content.ends_with('\n'),
            "page ends mid-line: {:?}",
            &content[content.len() - 20..]
        );
        assert!(
            p[content.len()..].starts_with("\n(showing bytes "),
            "{}",
            &p[content.len()..]
        );
    }
    let last = pages.last().unwrap();
    assert!(
        last.lines()
            .last()
            .unwrap()
            .contains("the omitted bytes are complete"),
        "{}",
        last.lines().last().unwrap()
    );
    // Same separator on the reply: content, one `\n`, then the footer.
    assert!(body[first.len()..].starts_with("\n(output cut: showing bytes 0-"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bytes_past_the_spool_cap_are_reported_dropped() {
    let e = env_with(|c| c.exec.max_spool_bytes = 1 << 20);
    let ex = ExecSessions::new();
    let reply = run_to_end(&ex, &e.ctx, args("head -c 3000000 /dev/zero | tr '\\0' x")).await;
    let last = reply.lines().last().unwrap();
    assert!(
        last.contains("bytes 1048576-")
            && last.contains("were not spooled (they went past exec.maxSpoolBytes = 1048576)"),
        "{last}"
    );
    let next = pages::parse_footer(last).expect("the last line names the next call");
    let id = next.arg("output_id").unwrap().to_string();
    let mut offset: u64 = next.offset().unwrap();
    let final_page;
    loop {
        let page = ex
            .read_command_output(
                &e.ctx,
                ReadOutputArgs {
                    output_id: id.clone(),
                    offset,
                    max_output_tokens: None,
                    end: None,
                },
            )
            .await
            .unwrap();
        match split_page(&page) {
            (c, Some(n)) if n < 1 << 20 => {
                assert!(c.bytes().all(|b| b == b'x'));
                offset = n;
            }
            _ => {
                final_page = page;
                break;
            }
        }
    }
    assert!(
        final_page.ends_with(
            "of 3000000; bytes from 1048576 on were not spooled: they went past exec.maxSpoolBytes = 1048576)"
        ),
        "{}",
        final_page.lines().last().unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_output_is_whole_and_its_spool_is_removed() {
    let e = env_with(|_| {});
    let ex = ExecSessions::new();
    let reply = ex
        .exec_command(&e.ctx, args("echo hello; echo err >&2; exit 3"))
        .await
        .unwrap();
    assert!(reply.contains("Process exited with code 3"), "{reply}");
    assert_eq!(body(&reply), "hello\nerr\n");
    let spool = e.ctx.home.join("spool");
    assert_eq!(
        std::fs::read_dir(&spool).unwrap().count(),
        0,
        "an uncut output keeps no spool file"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_kills_the_whole_process_group() {
    let e = env_with(|_| {});
    let ex = ExecSessions::new();
    let mut a = args("sleep 300 & echo $! > grandchild.pid; echo started; sleep 300");
    a.timeout_ms = Some(1000);
    a.yield_time_ms = Some(10_000);
    let t = std::time::Instant::now();
    let reply = ex.exec_command(&e.ctx, a).await.unwrap();
    assert!(t.elapsed() < Duration::from_secs(8), "{:?}", t.elapsed());
    assert!(
        reply.contains(
            "Process timed out after 1000 ms (timeout_ms) and its whole process group was killed"
        ),
        "{reply}"
    );
    assert!(body(&reply).contains("started"));
    let pid: i32 = std::fs::read_to_string(e.ctx.root().join("grandchild.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let mut gone = false;
    for _ in 0..50 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // Gone, or a zombie waiting for init to reap it: either way not running.
        if stat.is_empty() || stat.split(") ").nth(1).is_some_and(|s| s.starts_with('Z')) {
            gone = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(gone, "grandchild {pid} survived the timeout");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_is_clamped_to_the_maximum_with_a_warning() {
    let e = env_with(|c| {
        c.command.max_timeout = 2000;
        c.command.default_timeout = 1000;
    });
    let ex = ExecSessions::new();
    let mut a = args("echo ok");
    a.timeout_ms = Some(999_999);
    let reply = ex.exec_command(&e.ctx, a).await.unwrap();
    assert!(
        reply.starts_with(
            "Warning: timeout_ms = 999999 exceeds command.maxTimeout = 2000; using 2000."
        ),
        "{reply}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_stdin_drives_a_running_session() {
    let e = env_with(|_| {});
    let ex = ExecSessions::new();
    let mut a = args("cat");
    a.yield_time_ms = Some(300);
    let reply = ex.exec_command(&e.ctx, a).await.unwrap();
    let id = session_id(&reply).expect("cat keeps running");
    let r = ex
        .write_stdin(
            &e.ctx,
            WriteStdinArgs {
                session_id: id,
                chars: "hello\n".into(),
                yield_time_ms: Some(500),
                max_output_tokens: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(body(&r), "hello\n");
    assert_eq!(session_id(&r), Some(id));
    let r = ex
        .write_stdin(
            &e.ctx,
            WriteStdinArgs {
                session_id: id,
                chars: "bye\n\u{4}".into(),
                yield_time_ms: Some(2000),
                max_output_tokens: None,
            },
        )
        .await
        .unwrap();
    assert!(r.contains("Closed stdin (Ctrl-D)."), "{r}");
    assert!(r.contains("Process exited with code 0"), "{r}");
    assert_eq!(body(&r), "bye\n");
    let err = ex.write_stdin(&e.ctx, poll(id)).await.unwrap_err();
    assert_eq!(err.code(), "invalid_argument");
    assert!(err.to_string().contains("is not a running exec session"));

    // A read loop answering line by line.
    let mut a = args("while read -r l; do echo \"got $l\"; done");
    a.yield_time_ms = Some(300);
    let id = session_id(&ex.exec_command(&e.ctx, a).await.unwrap()).unwrap();
    let r = ex
        .write_stdin(
            &e.ctx,
            WriteStdinArgs {
                session_id: id,
                chars: "a\nb\n".into(),
                yield_time_ms: Some(500),
                max_output_tokens: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(body(&r), "got a\ngot b\n");
    // Ctrl-C interrupts the whole group.
    let r = ex
        .write_stdin(
            &e.ctx,
            WriteStdinArgs {
                session_id: id,
                chars: "\u{3}".into(),
                yield_time_ms: Some(3000),
                max_output_tokens: None,
            },
        )
        .await
        .unwrap();
    assert!(
        r.contains("Sent SIGINT (Ctrl-C) to the process group."),
        "{r}"
    );
    assert!(r.contains("Process exited with code 130"), "{r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_poll_returns_as_soon_as_the_process_ends() {
    let e = env_with(|_| {});
    let ex = ExecSessions::new();
    let mut a = args("sleep 1; echo done");
    a.yield_time_ms = Some(250);
    let id = session_id(&ex.exec_command(&e.ctx, a).await.unwrap()).unwrap();
    let t = std::time::Instant::now();
    let r = ex.write_stdin(&e.ctx, poll(id)).await.unwrap();
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
    assert!(r.contains("Process exited with code 0"));
    assert_eq!(body(&r), "done\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tty_is_refused_clearly() {
    let e = env_with(|_| {});
    let mut a = args("ls");
    a.tty = Some(true);
    let err = ExecSessions::new()
        .exec_command(&e.ctx, a)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "refused");
    assert!(
        err.to_string().contains("tty: true is not supported"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_sessions_refuses_then_prunes_ended_sessions() {
    let e = env_with(|c| c.exec.max_sessions = 2);
    let ex = ExecSessions::new();
    let start = |cmd: &str| {
        let mut a = args(cmd);
        a.yield_time_ms = Some(250);
        a
    };
    let s1 = session_id(&ex.exec_command(&e.ctx, start("sleep 30")).await.unwrap()).unwrap();
    let s2 = session_id(&ex.exec_command(&e.ctx, start("sleep 1")).await.unwrap()).unwrap();
    let err = ex
        .exec_command(&e.ctx, start("sleep 30"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "busy");
    let msg = err.to_string();
    assert!(
        msg.contains("exec.maxSessions = 2") && msg.contains(&format!("{s1} `sleep 30`")),
        "{msg}"
    );
    // Once `sleep 1` has ended (never polled), it is pruned to make room.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let r = ex.exec_command(&e.ctx, start("echo third")).await.unwrap();
    assert!(r.contains("third"));
    assert!(
        ex.write_stdin(&e.ctx, poll(s2)).await.is_err(),
        "the ended session was pruned"
    );
    let r = ex
        .write_stdin(
            &e.ctx,
            WriteStdinArgs {
                session_id: s1,
                chars: "\u{3}".into(),
                yield_time_ms: Some(2000),
                max_output_tokens: None,
            },
        )
        .await
        .unwrap();
    assert!(r.contains("Process exited"), "{r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowlist_refusals_run_nothing() {
    let e = env_with(|_| {});
    let ex = ExecSessions::new();
    let victim = e.ctx.root().join("x");
    for (cmd, needle) in [
        ("ls; rm -rf x", "`rm` is not on the exec allowlist"),
        ("ls | sh", "`sh` is not on the exec allowlist"),
        ("echo $(rm x)", "command substitution"),
        ("echo `rm x`", "backtick"),
        ("ls\nrm x", "`rm`"),
        ("(ls; rm x)", "`rm`"),
        ("ls && { rm x; }", "`rm`"),
        ("eval 'rm x'", "`eval`"),
        ("xargs rm < list", "`rm`"),
    ] {
        std::fs::write(&victim, "keep").unwrap();
        let err = ex.exec_command(&e.ctx, args(cmd)).await.unwrap_err();
        assert_eq!(err.code(), "refused", "{cmd}");
        let msg = err.to_string();
        assert!(msg.contains(needle), "{cmd}: {msg}");
        assert!(
            msg.contains("exec.extraAllowedCommands") || msg.contains("unrestricted"),
            "{msg}"
        );
        assert!(victim.exists(), "{cmd} ran");
    }
    // The same command runs once allowed.
    let e2 = env_with(|c| c.exec.extra_allowed_commands = vec!["rm".into()]);
    std::fs::write(e2.ctx.root().join("x"), "").unwrap();
    let r = ex
        .exec_command(&e2.ctx, args("ls; rm -rf x"))
        .await
        .unwrap();
    assert!(r.contains("Process exited with code 0"));
    assert!(!e2.ctx.root().join("x").exists());
    let e3 = env_with(|c| c.exec.mode = ExecMode::Unrestricted);
    let r = ex
        .exec_command(&e3.ctx, args("echo $(echo nested)"))
        .await
        .unwrap();
    assert_eq!(body(&r), "nested\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_keys_are_not_inherited() {
    // SAFETY: std serialises its own environment access; the names are unique to this test.
    unsafe {
        std::env::set_var("CODEX_FREE_TEST_PROVIDER_API_KEY", "sk-should-not-leak");
        std::env::set_var("CODEX_FREE_TEST_GH_TOKEN", "ghp-should-not-leak");
        std::env::set_var("CODEX_FREE_TEST_VISIBLE", "visible-value");
    }
    let e = env_with(|c| c.exec.mode = ExecMode::Unrestricted);
    let r = ExecSessions::new()
        .exec_command(&e.ctx, args("env"))
        .await
        .unwrap();
    let out = body(&r);
    assert!(out.contains("PATH="), "{out}");
    assert!(!out.contains("should-not-leak"), "{out}");
    for line in out.lines() {
        let name = line.split('=').next().unwrap();
        assert!(
            !name.ends_with("_API_KEY") && !name.ends_with("_TOKEN"),
            "{line}"
        );
    }
    assert!(out.contains("TERM=dumb"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_run_in_the_root_or_a_workdir_inside_it() {
    let e = env_with(|_| {});
    let ex = ExecSessions::new();
    let r = ex.exec_command(&e.ctx, args("pwd")).await.unwrap();
    assert_eq!(body(&r).trim(), e.ctx.root().to_str().unwrap());
    let mut a = args("pwd");
    a.workdir = Some("sub".into());
    let r = ex.exec_command(&e.ctx, a).await.unwrap();
    assert_eq!(body(&r).trim(), e.ctx.root().join("sub").to_str().unwrap());
    let mut a = args("pwd");
    a.workdir = Some("../".into());
    assert_eq!(
        ex.exec_command(&e.ctx, a).await.unwrap_err().code(),
        "path_outside_root"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_output_tokens_bounds_one_reply() {
    let e = env_with(|_| {});
    let ex = ExecSessions::new();
    let mut a = args("seq 1 100000");
    a.max_output_tokens = Some(500);
    let r = ex.exec_command(&e.ctx, a).await.unwrap();
    let b = body(&r);
    assert!(b.len() < 2000 + 700, "{}", b.len());
    assert!(b.starts_with("1\n2\n"));
    assert!(b.contains("99999\n100000\n"));
    assert!(
        r.lines()
            .last()
            .unwrap()
            .starts_with("(output cut: showing bytes 0-1000 and "),
        "{}",
        r.lines().last().unwrap()
    );
}

// ---------------------------------------------------------------- git tools

fn repo(f: impl FnOnce(&mut Config)) -> Env {
    let e = env_with(f);
    let r = e.ctx.root();
    git(r, &["init", "-q", "-b", "main"]);
    git(r, &["config", "user.email", "t@example.com"]);
    git(r, &["config", "user.name", "Tester"]);
    git(r, &["config", "commit.gpgsign", "false"]);
    e
}

/// Every page of a paged tool, footers (and the newlines before them) removed.
fn pages(mut call: impl FnMut(usize) -> String) -> Vec<String> {
    pages::follow(100_000, |c| {
        call(c.map_or(0, |c| c.offset().unwrap() as usize))
    })
    .iter()
    .map(|p| match pages::split_page(p) {
        (content, Some(_)) => content.trim_end_matches('\n').to_string(),
        (_, None) => p.clone(),
    })
    .collect()
}

#[test]
fn git_log_pages_every_commit_once() {
    let e = repo(|_| {});
    let r = e.ctx.root().to_path_buf();
    for i in 0..123 {
        git(
            &r,
            &[
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                &format!("commit number {i}"),
            ],
        );
    }
    let want: Vec<String> = git(&r, &["log", "--format=%h"])
        .lines()
        .map(str::to_string)
        .collect();
    let got: Vec<String> = pages(|offset| {
        git::git_log(
            &e.ctx,
            &GitLogArgs {
                max_count: Some(7),
                offset: Some(offset),
                path: None,
            },
        )
        .unwrap()
    })
    .iter()
    .flat_map(|p| {
        p.lines()
            .filter(|l| !l.starts_with("    "))
            .map(|l| l.split(' ').next().unwrap().to_string())
            .collect::<Vec<_>>()
    })
    .collect();
    assert_eq!(got, want);
    let first = git::git_log(
        &e.ctx,
        &GitLogArgs {
            max_count: Some(7),
            offset: None,
            path: None,
        },
    )
    .unwrap();
    assert!(
        first.ends_with("(showing commits 1-7 of 123 — call again with offset=7 for the rest)"),
        "{first}"
    );
    assert!(first.contains("\n    commit number 122\n"));
    let err = git::git_log(
        &e.ctx,
        &GitLogArgs {
            max_count: Some(100_000),
            offset: None,
            path: None,
        },
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("max_count = 100000 is out of range")
    );
}

#[test]
fn git_status_diff_and_commit() {
    let e = repo(|c| {
        c.output.max_entries = 5;
        c.output.max_file_lines = 10;
    });
    let r = e.ctx.root().to_path_buf();
    let base: String = (0..100).map(|i| format!("line {i}\n")).collect();
    std::fs::write(r.join("a.txt"), &base).unwrap();
    git(&r, &["add", "a.txt"]);
    git(&r, &["commit", "-q", "-m", "base"]);
    assert!(
        git::git_status(&e.ctx, &GitStatusArgs::default())
            .unwrap()
            .contains("(no changes: the working tree is clean)")
    );

    for i in 0..12 {
        std::fs::write(r.join(format!("new{i:02}.txt")), "x").unwrap();
    }
    let changed: String = (0..100).map(|i| format!("line {i} changed\n")).collect();
    std::fs::write(r.join("a.txt"), &changed).unwrap();

    let status = pages(|o| git::git_status(&e.ctx, &GitStatusArgs { offset: Some(o) }).unwrap());
    let entries: Vec<&str> = status
        .iter()
        .flat_map(|p| p.lines())
        .filter(|l| !l.starts_with("## "))
        .collect();
    assert_eq!(entries.len(), 13, "{status:?}");
    assert_eq!(
        entries.iter().filter(|l| l.starts_with("?? new")).count(),
        12
    );
    assert!(entries.contains(&" M a.txt"));

    let want = git(&r, &["diff", "--no-color"]);
    let got = pages(|o| {
        git::git_diff(
            &e.ctx,
            &GitDiffArgs {
                path: None,
                staged: None,
                offset: Some(o),
            },
        )
        .unwrap()
    })
    .join("\n");
    assert_eq!(format!("{got}\n"), want);
    assert!(
        git::git_diff(
            &e.ctx,
            &GitDiffArgs {
                path: None,
                staged: Some(true),
                offset: None
            }
        )
        .unwrap()
        .starts_with("(no staged changes")
    );

    let out = git::git_commit(
        &e.ctx,
        &GitCommitArgs {
            message: "change a".into(),
            paths: Some(vec!["a.txt".into()]),
            all: None,
        },
    )
    .unwrap();
    assert!(
        out.starts_with("[main ") && out.contains("] change a"),
        "{out}"
    );
    assert!(
        git(&r, &["status", "--porcelain"])
            .lines()
            .all(|l| l.starts_with("??")),
        "only a.txt was committed"
    );
    let err = git::git_commit(
        &e.ctx,
        &GitCommitArgs {
            message: "nothing".into(),
            paths: None,
            all: None,
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("all=true"), "{err}");
    let err = git::git_commit(
        &e.ctx,
        &GitCommitArgs {
            message: "x".into(),
            paths: Some(vec!["../outside".into()]),
            all: None,
        },
    )
    .unwrap_err();
    assert_eq!(err.code(), "path_outside_root");
    git::git_commit(
        &e.ctx,
        &GitCommitArgs {
            message: "the rest".into(),
            paths: None,
            all: Some(true),
        },
    )
    .unwrap();
    assert_eq!(git(&r, &["status", "--porcelain"]), "");
    assert_eq!(
        git(&r, &["log", "--format=%s"]),
        "the rest\nchange a\nbase\n"
    );
}

#[test]
fn git_tools_outside_a_repository_fail_clearly() {
    let e = env_with(|_| {});
    let err = git::git_status(&e.ctx, &GitStatusArgs::default()).unwrap_err();
    assert!(err.to_string().contains("not a git repository"), "{err}");
}
