//! One client must not be able to brick the server (the attack: ~1,000 HTTP sessions kept
//! their transcript files open until the process hit its 1,024-file limit and every tool
//! failed; idle and half-sent connections were never closed; a stdio message over 16 MiB
//! was dropped without an answer; a full disk tore audit lines; a SIGKILL left temp files
//! in the project and snapshot stores in the temp folder). Each test drives the real
//! binary and fails on the server as it was.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::support::{Env, HttpServer, call, git};

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"soak","version":"1"}}}"#;

/// Raw MCP over HTTP: one request, one answer, so thousands of sessions stay cheap.
#[derive(Clone)]
struct Raw {
    http: reqwest::Client,
    url: String,
    token: String,
}

impl Raw {
    fn new(srv: &HttpServer) -> Self {
        Self {
            http: reqwest::Client::builder()
                .pool_max_idle_per_host(16)
                .build()
                .unwrap(),
            url: srv.url.clone(),
            token: srv.token.clone(),
        }
    }

    async fn post(
        &self,
        session: Option<&str>,
        body: String,
    ) -> (StatusCode, Option<String>, String) {
        let mut r = self
            .http
            .post(&self.url)
            .bearer_auth(&self.token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .body(body);
        if let Some(s) = session {
            r = r.header("mcp-session-id", s);
        }
        let resp = r.send().await.unwrap();
        let status = resp.status();
        let sid = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        (status, sid, resp.text().await.unwrap_or_default())
    }

    /// Initialize a session (and send `initialized`): its id, or the refusal.
    async fn open(&self) -> Result<String, (StatusCode, String)> {
        let (status, sid, body) = self.post(None, INIT.into()).await;
        let Some(sid) = sid.filter(|_| status == StatusCode::OK) else {
            return Err((status, body));
        };
        let (st, _, _) = self
            .post(
                Some(&sid),
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.into(),
            )
            .await;
        assert_eq!(st, StatusCode::ACCEPTED);
        Ok(sid)
    }

    async fn call(&self, sid: &str, name: &str, args: Value) -> (StatusCode, String) {
        let body = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":name,"arguments":args}});
        let (st, _, text) = self.post(Some(sid), body.to_string()).await;
        (st, text)
    }
}

fn pid(srv: &HttpServer) -> u32 {
    srv.child.id().unwrap()
}

/// Resident memory of `pid`, MB.
fn rss_mb(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

/// What the open files of `pid` are, by kind (`socket`, `anon_inode:[eventpoll]`, a
/// directory of files, ...), most first: said when a bound fails.
fn fd_kinds(pid: u32) -> String {
    let mut kinds = std::collections::BTreeMap::<String, usize>::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
    {
        let target = std::fs::read_link(e.path())
            .map(|t| t.display().to_string())
            .unwrap_or_default();
        let kind = match target.split_once(':') {
            Some((k, _)) if !target.starts_with('/') => k.to_string(),
            _ => std::path::Path::new(&target)
                .parent()
                .map(|p| p.display().to_string())
                .unwrap_or(target),
        };
        *kinds.entry(kind).or_default() += 1;
    }
    let mut v: Vec<_> = kinds.into_iter().collect();
    v.sort_by_key(|b| std::cmp::Reverse(b.1));
    v.iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// This test process's soft open-file limit raised to its hard one (it holds thousands of
/// client sockets); returns the new soft limit.
fn raise_own_fd_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        lim.rlim_cur = lim.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
    }
    lim.rlim_cur
}

/// At the cap a new session closes the longest-idle one of the token; with every session
/// in a request it is refused (429, saying why); idle sessions expire.
#[tokio::test]
async fn http_sessions_are_capped_per_token_and_idle_ones_expire() {
    let env = Env::new(&[("a.txt", "hello\n")]);
    env.write_config(json!({"server": {"maxSessionsPerToken": 3, "sessionIdleSecs": 5}}));
    let srv = env.http(&["--no-pipeline"]).await;
    let raw = Raw::new(&srv);
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(raw.open().await.unwrap());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let fourth = raw.open().await.unwrap();
    let (st, _) = raw
        .call(&ids[0], "read_file", json!({"path": "a.txt"}))
        .await;
    assert_eq!(
        st,
        StatusCode::NOT_FOUND,
        "the longest-idle session was kept past the cap"
    );
    for sid in [&ids[1], &ids[2], &fourth] {
        let (st, text) = raw.call(sid, "read_file", json!({"path": "a.txt"})).await;
        assert_eq!(st, StatusCode::OK, "{text}");
    }
    // Every session busy with a command: a new one is refused, clearly.
    let busy: Vec<_> = [&ids[1], &ids[2], &fourth]
        .into_iter()
        .map(|sid| {
            let (raw, sid) = (raw.clone(), sid.clone());
            tokio::spawn(async move {
                raw.call(
                    &sid,
                    "exec_command",
                    json!({"cmd": "sleep 2", "yield_time_ms": 5000}),
                )
                .await
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(700)).await;
    let (st, body) = raw.open().await.unwrap_err();
    assert_eq!(st, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert!(body.contains("maxSessionsPerToken"), "{body}");
    for b in busy {
        let (st, text) = b.await.unwrap();
        assert_eq!(st, StatusCode::OK, "a session was closed mid-call: {text}");
    }
    // Idle for 5 s: gone (the sweep runs every second).
    tokio::time::sleep(Duration::from_secs(7)).await;
    let (st, _) = raw
        .call(&fourth, "read_file", json!({"path": "a.txt"}))
        .await;
    assert_eq!(st, StatusCode::NOT_FOUND, "an idle session did not expire");
    assert!(raw.open().await.is_ok());
}

/// The soak: 1,000 sessions opened (many with a tool call) and abandoned, 1,100
/// bare connections, half-sent headers and bodies; then a normal client still answers at
/// once, the server's open files stay bounded, and the half-sent connections are closed
/// by their deadlines. A tool call longer than the header deadline still completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn soak_abandoned_sessions_and_connections_leave_the_server_answering() {
    let limit = raise_own_fd_limit();
    let env = Env::new(&[("a.txt", &"line of text\n".repeat(50))]);
    env.write_config(json!({"server": {
        "maxSessionsPerToken": 32, "maxConnections": 64,
        "headerReadTimeoutSecs": 2, "bodyReadTimeoutSecs": 2
    }}));
    let srv = env.http(&["--no-pipeline"]).await;
    let pid = pid(&srv);
    let raw = Raw::new(&srv);
    let base = open_fds(pid);
    let rss_base = rss_mb(pid);
    let started = Instant::now();
    // 1,000 sessions, one in four with a tool call (a transcript line), none closed.
    let workers: Vec<_> = (0..16)
        .map(|w| {
            let raw = raw.clone();
            tokio::spawn(async move {
                for i in 0..63 {
                    let sid = raw.open().await.expect("a session at the cap is admitted");
                    if (w + i) % 4 == 0 {
                        let (st, text) =
                            raw.call(&sid, "read_file", json!({"path": "a.txt"})).await;
                        assert_eq!(st, StatusCode::OK, "{text}");
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.await.unwrap();
    }
    let sessions_took = started.elapsed();
    let transcripts = crate::support::jsonl_under(&env.home().join("transcripts")).len();
    assert!(transcripts >= 240, "{transcripts} transcripts written");
    let after_sessions = open_fds(pid);
    let rss_after = rss_mb(pid);
    // Bare connects, half-sent headers, half-sent bodies, all held.
    let addr = srv.base().trim_start_matches("http://").to_string();
    let bare_n = if limit > 2_000 {
        1_100
    } else {
        (limit as usize).saturating_sub(500)
    };
    let mut held: Vec<TcpStream> = (0..bare_n)
        .filter_map(|_| TcpStream::connect(&addr).ok())
        .collect();
    let mut half = Vec::new();
    for i in 0..350 {
        let Ok(mut s) = TcpStream::connect(&addr) else {
            continue;
        };
        let msg = if i < 300 {
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n".to_string()
        } else {
            format!(
                "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: 100000\r\n\r\n{{\"jsonrpc\"",
                srv.token
            )
        };
        let _ = s.write_all(msg.as_bytes());
        half.push(s);
    }
    let flood = held.len() + half.len();
    // A normal client gets through at once.
    let t = Instant::now();
    let client = tokio::time::timeout(Duration::from_secs(10), srv.client())
        .await
        .expect("a normal client connects while the flood holds its sockets");
    let (text, err) = call(&client, "read_file", json!({"path": "a.txt"})).await;
    assert!(!err && text.contains("line of text"), "{text}");
    let answered_in = t.elapsed();
    let during = open_fds(pid);
    // Bounded: the connection cap (64) plus the process's own files, whatever the flood.
    assert!(
        during <= base + 64 + 40,
        "{during} open files with {flood} client sockets held (base {base}, after sessions {after_sessions}): {}",
        fd_kinds(pid)
    );
    assert!(
        after_sessions <= base + 64 + 40,
        "{after_sessions} open files after 1,000 sessions (base {base})"
    );
    // A call longer than the header deadline is not cut by it (runs during the wait).
    let long = tokio::spawn(async move {
        let r = call(
            &client,
            "exec_command",
            json!({"cmd": "sleep 3 && echo done", "yield_time_ms": 10000}),
        )
        .await;
        (r, client)
    });
    // The deadlines close the half-sent ones (2 s each; the cap evicted most already).
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut still_open = 0;
    for s in half.iter_mut().chain(held.iter_mut()) {
        s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        let mut b = [0u8; 512];
        match s.read(&mut b) {
            Ok(0) => {}
            Ok(_) => {
                // An answer (408 or 503) then the close.
                if !matches!(s.read(&mut b), Ok(0) | Err(_)) {
                    still_open += 1;
                }
            }
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                still_open += 1
            }
            Err(_) => {}
        }
    }
    assert_eq!(still_open, 0, "connections the server never closed");
    let ((text, err), _client) = long.await.unwrap();
    assert!(!err && text.contains("done"), "{text}");
    eprintln!(
        "soak: 1,000 sessions in {sessions_took:?}, {flood} sockets held; a new client answered in {answered_in:?}; open files {base} at start, {after_sessions} after the sessions, {during} during the flood; RSS {rss_base:.0} MB at start, {rss_after:.0} MB after the sessions"
    );
}

/// The open-file limit a login shell leaves (often 1,024) is raised to the hard one.
#[tokio::test]
async fn the_soft_open_file_limit_is_raised_to_the_hard_one() {
    let hard = raise_own_fd_limit().min(8192);
    let env = Env::new(&[("a.txt", "x\n")]);
    let mut cmd = env.command();
    cmd.args([
        "serve",
        "--http",
        "--port",
        "0",
        "--no-pipeline",
        "--project",
    ])
    .arg(env.project());
    // SAFETY: setrlimit only, between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: 256,
                rlim_max: hard as libc::rlim_t,
            };
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
            Ok(())
        });
    }
    let srv = crate::support::http_server(cmd, env.home()).await;
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", pid(&srv))).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap()
        .to_string();
    let soft: u64 = line.split_whitespace().nth(3).unwrap().parse().unwrap();
    assert_eq!(soft, hard, "{line}");
}

/// Over stdio a message over 16 MiB is answered with -32600 and its id (wherever the id
/// stands, null when there is none), and the session goes on.
#[tokio::test]
async fn stdio_oversize_message_is_answered_and_the_session_goes_on() {
    let env = Env::new(&[("a.txt", "still here\n")]);
    let mut child = env
        .command()
        .args(["serve", "--stdio", "--no-pipeline", "--project"])
        .arg(env.project())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let big = "x".repeat(17 << 20);
    let msgs = [
        INIT.to_string(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_string(),
        format!(r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"write_file","arguments":{{"path":"big.txt","content":"{big}"}}}}}}"#),
        format!(r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"write_file","arguments":{{"path":"big.txt","content":"{big}"}}}},"id":"late"}}"#),
        format!(r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"data":"{big}"}}}}"#),
        r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a.txt"}}}"#.to_string(),
    ];
    let writer = tokio::spawn(async move {
        for m in msgs {
            stdin.write_all(m.as_bytes()).await.unwrap();
            stdin.write_all(b"\n").await.unwrap();
        }
        stdin
    });
    let mut got: Vec<Value> = Vec::new();
    while got.len() < 5 {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("no answer in time; so far {got:?}"))
            .unwrap()
            .expect("server closed stdout");
        got.push(serde_json::from_str(&line).unwrap());
    }
    let _stdin = writer.await.unwrap();
    assert_eq!(got[0]["id"], 1);
    let errs: Vec<&Value> = got[1..4].iter().collect();
    for (e, id) in errs.iter().zip([json!(7), json!("late"), Value::Null]) {
        assert_eq!(e["id"], id, "{e}");
        assert_eq!(e["error"]["code"], -32600, "{e}");
        assert!(
            e["error"]["message"].as_str().unwrap().contains("16 MiB"),
            "{e}"
        );
    }
    assert_eq!(got[4]["id"], 9);
    assert!(
        got[4]["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("still here")
    );
    assert!(!env.project().join("big.txt").exists());
}

/// A full disk (here the file-size limit, which fails a write half-way as ENOSPC does)
/// leaves no torn line in the audit trail or the transcript: every line parses; and every
/// call is still answered when the server's log cannot be written either.
#[tokio::test]
async fn appends_that_cannot_be_written_whole_leave_no_torn_line() {
    let env = Env::new(&[("a.txt", &"0123456789abcdef\n".repeat(200))]);
    let project = env.project().to_path_buf();
    let cmd = {
        use rmcp::transport::ConfigureCommandExt;
        env.command().configure(|c| {
            c.args(["serve", "--stdio", "--no-pipeline", "--project"])
                .arg(&project);
            // SAFETY: signal disposition and setrlimit only, between fork and exec. An
            // ignored SIGXFSZ stays ignored across exec, so a write past the limit fails
            // with EFBIG instead of killing the server.
            unsafe {
                c.pre_exec(|| {
                    libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                    let lim = libc::rlimit {
                        rlim_cur: 20_000,
                        rlim_max: 20_000,
                    };
                    libc::setrlimit(libc::RLIMIT_FSIZE, &lim);
                    Ok(())
                });
            }
        })
    };
    // Its stderr a file already past the limit, as a log redirected to a full disk: every
    // log line fails too (that used to panic the task serving the call: no answer).
    let log = env.home().join("server.log");
    std::fs::write(&log, vec![b'.'; 30_000]).unwrap();
    let (transport, _) = rmcp::transport::TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::from(
            std::fs::File::options().append(true).open(&log).unwrap(),
        ))
        .spawn()
        .unwrap();
    let client = tokio::time::timeout(
        Duration::from_secs(30),
        rmcp::ServiceExt::serve((), transport),
    )
    .await
    .expect("initialize answered")
    .unwrap();
    for _ in 0..120 {
        let (text, err) = tokio::time::timeout(
            Duration::from_secs(30),
            call(&client, "read_file", json!({"path": "a.txt"})),
        )
        .await
        .expect("every call is answered, whatever the disk");
        assert!(!err, "{text}");
    }
    client.cancel().await.unwrap();
    let audit = env.home().join("audit/audit.jsonl");
    let mut files = crate::support::jsonl_under(&env.home().join("transcripts"));
    files.push(audit.clone());
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        assert!(!bytes.is_empty(), "{f:?}");
        assert!(bytes.len() <= 20_000);
        assert_eq!(bytes.last(), Some(&b'\n'), "{f:?} ends inside a line");
        for l in String::from_utf8_lossy(&bytes).lines() {
            assert!(
                serde_json::from_str::<Value>(l).is_ok(),
                "torn line in {f:?}: {l:.80}"
            );
        }
    }
    // The trail filled up to the limit (the condition under test happened).
    assert!(std::fs::metadata(&audit).unwrap().len() > 19_000);
}

fn changes_stores(tmp: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("codex-free-changes-"))
        .collect();
    v.sort();
    v
}

/// SIGKILL during writes: nothing of ours in `git status` of the project (temp files live
/// in `.git`), and at the next start the killed server's temp files and its `show_changes`
/// snapshot store are removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigkill_during_writes_leaves_nothing_behind_after_the_next_start() {
    let env = Env::new(&[("README.md", "hi\n")]);
    env.git_init();
    // No transcript: the writes' own work is what the kill lands in.
    env.write_config(json!({"memories": {"enabled": false}}));
    let tmp = tempfile::tempdir().unwrap();
    let start = || {
        let mut cmd = env.command();
        cmd.env("TMPDIR", tmp.path())
            .args([
                "serve",
                "--http",
                "--port",
                "0",
                "--no-pipeline",
                "--project",
            ])
            .arg(env.project());
        crate::support::http_server(cmd, env.home())
    };
    // 3 MB: under the 4 MiB a request body may hold.
    let content = "z".repeat(3 << 20);
    let temp_files = |root: &Path| -> Vec<std::path::PathBuf> {
        crate::support::files_under(root)
            .into_iter()
            .filter(|p| {
                let n = p.file_name().unwrap().to_string_lossy().into_owned();
                n.starts_with(".codex-free-tmp-")
                    || p.parent().unwrap().ends_with(".git/codex-free-tmp")
            })
            .collect()
    };
    for _round in 0..3 {
        let mut srv = start().await;
        let raw = Raw::new(&srv);
        let sid = raw.open().await.unwrap();
        // A first call so the snapshot store exists.
        let (st, _) = raw
            .call(&sid, "read_file", json!({"path": "README.md"}))
            .await;
        assert_eq!(st, StatusCode::OK);
        let writers: Vec<_> = (0..3)
            .map(|i| {
                let (raw, sid, content) = (raw.clone(), sid.clone(), content.clone());
                tokio::spawn(async move {
                    let body = json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"write_file","arguments":{"path":format!("out/f{i}.bin"),"content":content}}}).to_string();
                    while raw
                        .http
                        .post(&raw.url)
                        .bearer_auth(&raw.token)
                        .header("content-type", "application/json")
                        .header("accept", "application/json, text/event-stream")
                        .header("mcp-session-id", &sid)
                        .body(body.clone())
                        .send()
                        .await
                        .is_ok()
                    {}
                })
            })
            .collect();
        // SIGKILL the moment a write's temp file exists: mid-write, every round.
        let deadline = Instant::now() + Duration::from_secs(20);
        while temp_files(env.project()).is_empty() {
            assert!(Instant::now() < deadline, "no write reached its temp file");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        srv.child.start_kill().unwrap();
        let _ = srv.child.wait().await;
        for w in writers {
            let _ = w.await;
        }
        let status = git(env.project(), &["status", "--porcelain", "-uall"]);
        for l in status.lines() {
            let path = &l[3..];
            assert!(
                path.starts_with("out/f") && path.ends_with(".bin"),
                "debris in git status after a SIGKILL: {l}"
            );
            let len = std::fs::metadata(env.project().join(path)).unwrap().len();
            assert_eq!(len, content.len() as u64, "{path} half-written");
        }
    }
    assert!(
        !temp_files(env.project()).is_empty(),
        "the last kill left a temp file to clean"
    );
    // Each start removed the store of the server killed before it; the last one's is here.
    let killed = changes_stores(tmp.path());
    assert_eq!(killed.len(), 1, "{killed:?}");
    // The next start cleans up: the stores of the killed servers and their temp files.
    let srv = start().await;
    let raw = Raw::new(&srv);
    let sid = raw.open().await.unwrap();
    let (st, _) = raw
        .call(&sid, "read_file", json!({"path": "README.md"}))
        .await;
    assert_eq!(st, StatusCode::OK);
    let stores = changes_stores(tmp.path());
    assert_eq!(
        stores.len(),
        1,
        "stores of servers that are gone: {stores:?}"
    );
    assert_ne!(stores, killed, "the killed server's store is still there");
    let left = temp_files(env.project());
    assert!(left.is_empty(), "temp files of killed writes: {left:?}");
    assert_eq!(
        git(env.project(), &["status", "--porcelain", "-uall"])
            .lines()
            .filter(|l| !l[3..].starts_with("out/f"))
            .count(),
        0
    );
}

/// The server's own transcripts are pruned once phase 1 has extracted them and they are
/// older than `memories.mcp_transcript_retention_days`; one not extracted yet and a recent
/// one stay; the count and size are in `/api/status` and `memories status`.
#[tokio::test]
async fn extracted_transcripts_past_the_retention_are_pruned_and_shown() {
    use codex_free_store::stage1::{ClaimOutcome, Stage1Claim, ThreadUpsert};
    let env = Env::new(&[("a.txt", "x\n")]);
    let user_home = tempfile::tempdir().unwrap();
    let now = chrono::Utc::now();
    let mk = |id: &str, age_days: i64| {
        let at = now - chrono::Duration::days(age_days);
        let dir = env
            .home()
            .join("transcripts")
            .join(at.format("%Y/%m/%d").to_string());
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{id}.jsonl"));
        let header =
            json!({"type":"session","version":1,"id":id,"started_at":at.to_rfc3339(),"cwd":null});
        let call = json!({"type":"call","seq":1,"ts":at.to_rfc3339(),"tool":"read_file","args":"{}","result":"x".repeat(2000),"is_error":false});
        std::fs::write(&path, format!("{header}\n{call}\n")).unwrap();
        let f = std::fs::File::options().write(true).open(&path).unwrap();
        f.set_modified(at.into()).unwrap();
        (path, at.timestamp())
    };
    let (done, done_at) = mk("mcp-done", 40);
    let (pending, pending_at) = mk("mcp-pending", 41);
    let (recent, recent_at) = mk("mcp-recent", 3);
    let store = codex_free_store::Store::open_in_home(env.home()).unwrap();
    let row = |id: &str, path: &Path, at: i64| ThreadUpsert {
        id: id.into(),
        source: "mcp".into(),
        path: path.to_string_lossy().into_owned(),
        cwd: None,
        title: None,
        created_at: Some(at),
        updated_at: at,
        is_subagent: false,
        is_ephemeral: false,
        content_hash: None,
    };
    store
        .upsert_threads(
            &[
                row("mcp-done", &done, done_at),
                row("mcp-pending", &pending, pending_at),
                row("mcp-recent", &recent, recent_at),
            ],
            true,
        )
        .unwrap();
    let params = codex_free_store::ClaimParams {
        sources: vec!["mcp".into()],
        max_claimed: 4,
        max_running: 4,
        max_age_days: 90,
        min_idle_hours: 1,
        lease_seconds: 600,
        worker_id: "test".into(),
        force: true,
        exclude: Default::default(),
    };
    // Phase 1 finished two of them (as it would after extracting).
    for (id, at) in [("mcp-done", done_at), ("mcp-recent", recent_at)] {
        let ClaimOutcome::Claimed { ownership_token } =
            store.try_claim_stage1(id, at, &params).unwrap()
        else {
            panic!("not claimed");
        };
        let claim = Stage1Claim {
            thread: store.thread(id).unwrap().unwrap(),
            ownership_token,
            source_updated_at: at,
        };
        assert!(store.mark_stage1_succeeded_no_output(&claim).unwrap());
    }
    drop(store);
    let mut cmd = env.command();
    cmd.env("HOME", user_home.path())
        .args(["serve", "--http", "--port", "0", "--ui", "--project"])
        .arg(env.project());
    let srv = crate::support::http_server(cmd, env.home()).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while done.exists() {
        assert!(
            Instant::now() < deadline,
            "an extracted transcript past the retention was kept"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        !done.parent().unwrap().exists(),
        "its empty day folder was kept"
    );
    assert!(
        pending.exists(),
        "a transcript phase 1 has not read was deleted"
    );
    assert!(
        recent.exists(),
        "a transcript inside the retention was deleted"
    );
    let status: Value = reqwest::Client::new()
        .get(format!("{}/api/status", srv.base()))
        .bearer_auth(&srv.admin)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let t = &status["transcripts"];
    assert_eq!(t["files"], 2, "{t}");
    assert!(t["bytes"].as_u64().unwrap() > 4000, "{t}");
    assert_eq!(t["retention_days"], 30);
    let out = env
        .command()
        .env("HOME", user_home.path())
        .args(["memories", "status"])
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("MCP transcripts (this server's): 2 file(s)"),
        "{text}"
    );
}
