//! Latency of MCP calls over one reused HTTP connection (issue 9b: without `TCP_NODELAY`
//! on the server's sockets, every call on a kept-alive connection waited for the client's
//! delayed ACK, ~40 ms, against 0.6 ms).
//!
//! `cargo bench --bench http_keepalive` starts `codex-free serve --http` (this build), opens
//! one MCP session, and times 200 `ping`s and 200 `read_file` calls sent one after another on one
//! keep-alive connection (the client sets `TCP_NODELAY` on its side, as reqwest does by
//! default, so only the server's socket is measured). With `REFERENCE_BIN=<a codex-free
//! built before TCP_NODELAY>` it times that binary the same way, interleaved, and prints
//! both medians side by side. `KEEPALIVE_BENCH_RUNS` overrides the count.
//!
//! Invariant: both binaries get the same requests on the same kind of connection; nothing
//! is asserted here.
// A measurement program: it prints its figures and may panic on a broken setup.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;

fn runs() -> usize {
    std::env::var("KEEPALIVE_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

/// One running server and a session on one kept-alive connection.
struct Server {
    child: Child,
    url: String,
    token: String,
    sid: String,
    http: reqwest::Client,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    async fn start(bin: &Path) -> Self {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        std::fs::write(project.path().join("a.txt"), "hello\n".repeat(20)).unwrap();
        let mut child = Command::new(bin)
            .args([
                "serve",
                "--http",
                "--port",
                "0",
                "--no-pipeline",
                "--project",
            ])
            .arg(project.path())
            .env("CODEX_FREE_HOME", home.path())
            .env("CODEX_FREE_LOG", "error")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut first = String::new();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        out.read_line(&mut first).unwrap();
        // Keep reading: the banner goes on, and a closed pipe would fail its writes.
        std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        let url = first.trim().rsplit(' ').next().unwrap().to_string();
        let token = std::fs::read_to_string(home.path().join("server-token"))
            .unwrap()
            .trim()
            .to_string();
        // One connection, reused for every call.
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(1)
            .tcp_nodelay(true)
            .build()
            .unwrap();
        let mut s = Self {
            child,
            url,
            token,
            sid: String::new(),
            http,
            _dirs: (home, project),
        };
        let r = s.post(INIT.into()).await;
        s.sid = r
            .headers()
            .get("mcp-session-id")
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        r.text().await.unwrap();
        s.post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.into())
            .await
            .text()
            .await
            .unwrap();
        s
    }

    async fn post(&self, body: String) -> reqwest::Response {
        let mut r = self
            .http
            .post(&self.url)
            .bearer_auth(&self.token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .body(body);
        if !self.sid.is_empty() {
            r = r.header("mcp-session-id", &self.sid);
        }
        r.send().await.unwrap()
    }

    /// One `read_file` call (`tool`) or one `ping`.
    async fn call(&self, id: usize, tool: bool) -> Duration {
        let body = if tool {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"read_file","arguments":{{"path":"a.txt"}}}}}}"#
            )
        } else {
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#)
        };
        let t = Instant::now();
        let text = self.post(body).await.text().await.unwrap();
        let d = t.elapsed();
        assert!(
            text.contains(if tool { "hello" } else { "result" }),
            "{text}"
        );
        d
    }
}

fn pct(v: &mut [Duration], p: f64) -> f64 {
    v.sort();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i].as_secs_f64() * 1e3
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let ours_bin = PathBuf::from(env!("CARGO_BIN_EXE_codex-free"));
    let reference_bin = std::env::var_os("REFERENCE_BIN").map(PathBuf::from);
    let ours = Server::start(&ours_bin).await;
    let reference = match &reference_bin {
        Some(b) => Some(Server::start(b).await),
        None => None,
    };
    // Warm-up: first calls open the connection and fill caches.
    for i in 0..5 {
        ours.call(i, true).await;
        if let Some(r) = &reference {
            r.call(i, true).await;
        }
    }
    let n = runs();
    for (tool, what) in [(false, "ping"), (true, "read_file")] {
        let (mut a, mut b) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for i in 0..n {
            a.push(ours.call(100 + i, tool).await);
            if let Some(r) = &reference {
                b.push(r.call(100 + i, tool).await);
            }
        }
        println!("{what} over one kept-alive HTTP connection, {n} calls one after another:");
        println!(
            "  this build:  median {:.2} ms, p90 {:.2} ms",
            pct(&mut a, 0.5),
            pct(&mut a, 0.9)
        );
        if let Some(p) = &reference_bin {
            println!(
                "  reference:   median {:.2} ms, p90 {:.2} ms  ({})",
                pct(&mut b, 0.5),
                pct(&mut b, 0.9),
                p.display()
            );
        }
    }
    if reference_bin.is_none() {
        println!(
            "reference: set REFERENCE_BIN to a codex-free built before TCP_NODELAY (issue 9b measured 44 ms there against 0.6 ms)"
        );
    }
}
