//! Test harness: drive the real `codex-free` binary as an MCP server over stdio and over
//! streamable HTTP with rmcp's client, each test with its own state home.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use tokio::io::{AsyncBufReadExt, BufReader};

/// A connected MCP client.
pub type Client = RunningService<RoleClient, ()>;

/// The binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_codex-free"))
}

/// A temp state home plus a temp project (a git repo with a few files).
pub struct Env {
    pub home: tempfile::TempDir,
    pub project: tempfile::TempDir,
}

impl Env {
    /// New empty home and a project containing `files` (path, content).
    pub fn new(files: &[(&str, &str)]) -> Self {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        for (p, c) in files {
            let path = project.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, c).unwrap();
        }
        Self { home, project }
    }

    pub fn home(&self) -> &Path {
        self.home.path()
    }

    pub fn project(&self) -> &Path {
        self.project.path()
    }

    /// Write `codex.config.json` in the home.
    pub fn write_config(&self, json: serde_json::Value) {
        std::fs::write(
            self.home().join("codex.config.json"),
            serde_json::to_string_pretty(&json).unwrap(),
        )
        .unwrap();
    }

    /// Run `git init` + commit in the project.
    pub fn git_init(&self) {
        for args in [
            vec!["init", "-q"],
            vec!["add", "-A"],
            vec![
                "-c",
                "user.email=t@e",
                "-c",
                "user.name=t",
                "commit",
                "-qm",
                "init",
                "--allow-empty",
            ],
        ] {
            let st = std::process::Command::new("git")
                .args(&args)
                .current_dir(self.project())
                .status()
                .unwrap();
            assert!(st.success());
        }
    }

    /// A command for the binary with this env's home.
    pub fn command(&self) -> tokio::process::Command {
        let mut c = tokio::process::Command::new(bin());
        c.env("CODEX_FREE_HOME", self.home())
            .env("CODEX_FREE_LOG", "warn");
        c
    }

    /// Connect over stdio to `serve --stdio --project <project>` plus `extra` args.
    pub async fn stdio(&self, extra: &[&str]) -> Client {
        self.stdio_env(extra, &[], &[]).await
    }

    /// As [`Env::stdio`], with `set` added to and `remove` taken from the server's environment.
    pub async fn stdio_env(&self, extra: &[&str], set: &[(&str, &str)], remove: &[&str]) -> Client {
        let project = self.project().to_path_buf();
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let cmd = self.command().configure(|c| {
            c.arg("serve").arg("--stdio");
            if !extra.iter().any(|a| a == "--access-root") {
                c.arg("--project").arg(&project);
            }
            c.args(&extra);
            for (k, v) in set {
                c.env(k, v);
            }
            for k in remove {
                c.env_remove(k);
            }
        });
        stdio_client(cmd).await
    }

    /// Start `serve --http --port 0` and return the running server.
    pub async fn http(&self, extra: &[&str]) -> HttpServer {
        let mut cmd = self.command();
        cmd.arg("serve").arg("--http").arg("--port").arg("0");
        if !extra.contains(&"--access-root") {
            cmd.arg("--project").arg(self.project());
        }
        cmd.args(extra);
        http_server(cmd, self.home()).await
    }
}

/// Connect an rmcp client over stdio to `cmd` (a `serve --stdio` command line).
pub async fn stdio_client(cmd: tokio::process::Command) -> Client {
    let (transport, _stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    ().serve(transport).await.expect("stdio client connects")
}

/// Spawn `cmd` (a `serve --http --port 0` command line whose state home is `home`), wait
/// for its banner and read its token.
pub async fn http_server(mut cmd: tokio::process::Command, home: &Path) -> HttpServer {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    let mut child = cmd.spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("server banner in time")
        .unwrap()
        .expect("banner line");
    let url = first.rsplit(' ').next().unwrap().to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{first}");
    // The rest of the banner, up to "Press Ctrl-C" (holds the login link with --ui).
    let mut banner = vec![first];
    while !banner.last().unwrap().starts_with("Press Ctrl-C") {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("banner in time")
            .unwrap()
            .expect("banner line");
        banner.push(line);
    }
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let read = |f: &str| {
        std::fs::read_to_string(home.join(f))
            .unwrap()
            .trim()
            .to_string()
    };
    HttpServer {
        child,
        url,
        token: read("server-token"),
        admin: read("admin-token"),
        banner,
    }
}

/// A spawned HTTP server.
pub struct HttpServer {
    pub child: tokio::process::Child,
    /// `http://127.0.0.1:<port>/mcp`
    pub url: String,
    /// The MCP token (opens /mcp only).
    pub token: String,
    /// The admin token (opens the web UI and /api only).
    pub admin: String,
    /// The startup banner, line by line.
    pub banner: Vec<String>,
}

impl HttpServer {
    /// `http://127.0.0.1:<port>`
    pub fn base(&self) -> String {
        self.url.trim_end_matches("/mcp").to_string()
    }

    /// The one-time login link of the banner (`serve --http --ui`).
    pub fn login_link(&self) -> Option<String> {
        self.banner
            .iter()
            .find_map(|l| l.trim().strip_prefix("web UI:"))
            .map(|l| l.trim().to_string())
    }

    /// An rmcp client with the bearer token.
    pub async fn client(&self) -> Client {
        let t = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(self.url.clone())
                .auth_header(self.token.clone()),
        );
        ().serve(t).await.expect("http client connects")
    }
}

/// Call `name` with JSON `args`; returns (text, is_error).
pub async fn call(client: &Client, name: &str, args: serde_json::Value) -> (String, bool) {
    call_meta(client, name, args, None).await
}

/// As [`call`], with an `openai/session` value in `_meta`.
pub async fn call_meta(
    client: &Client,
    name: &str,
    args: serde_json::Value,
    session: Option<&str>,
) -> (String, bool) {
    let mut p = CallToolRequestParams::new(name.to_string())
        .with_arguments(args.as_object().cloned().unwrap_or_default());
    if let Some(s) = session {
        let mut meta = rmcp::model::RequestMetaObject::default();
        meta.0
            .0
            .insert("openai/session".into(), serde_json::Value::String(s.into()));
        p.meta = Some(meta);
    }
    let r: CallToolResult = client
        .call_tool(p)
        .await
        .unwrap_or_else(|e| panic!("call {name}: {e}"));
    (text(&r), r.is_error.unwrap_or(false))
}

/// Concatenated text content of a tool result.
pub fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Run `git args` in `dir` and return its stdout; panics with git's stderr when it fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `program` as found on `PATH`, if it is there (tests of optional CLIs skip without it).
pub fn which(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// Every regular file under `dir`, recursively, sorted (an unreadable directory is skipped).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The `.jsonl` files of [`files_under`] `dir` (transcripts), sorted.
pub fn jsonl_under(dir: &Path) -> Vec<PathBuf> {
    files_under(dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect()
}
