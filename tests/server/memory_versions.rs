//! Which memory version a new session is served, through the real binary: one state home
//! with `memories.dual_write` runs both pipelines end to end (`memories run`, `memories
//! consolidate`) over the real Codex fixture transcripts against a mock provider, so both
//! `memories/` (V1) and `memories_v2/` (V2) hold a summary, each with its own marker line.
//! Then MCP sessions over stdio and HTTP get the active version's summary and read path
//! (V2: its own policy, what must not be cited, no `MEMORY.md`) and never the other's;
//! switching `memories.version` reaches a running server's new sessions and the copy linked
//! into Codex's `AGENTS.md` only at the next start.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use crate::support::{self, Client};

/// A line only V1's consolidation writes into its summary.
pub(crate) const V1_MARK: &str = "- V1 marker: the user ships with make release.";
/// A line only V2's consolidation writes into its summary.
pub(crate) const V2_MARK: &str = "- V2 marker: the user asked to keep release notes short.";

fn summary(mark: &str) -> String {
    let s = codex_free_memory::budget::SUMMARY_SECTIONS;
    format!(
        "v1\n{}\n- Developer who works through AI agents.\n{mark}\n{}\n- Always pnpm, never npm.\n{}\n- Verify CI state live.\n{}\n- rollout_summaries/: the fixture sessions.\n",
        s[0], s[1], s[2], s[3]
    )
}

/// Requests seen, by kind (also the scheduler's dual-write test in `pipeline::v2`).
#[derive(Clone, Default)]
pub(crate) struct Mock {
    pub(crate) phase1_v1: Arc<Mutex<usize>>,
    pub(crate) phase1_v2: Arc<Mutex<usize>>,
    pub(crate) phase2_v1: Arc<Mutex<usize>>,
    pub(crate) phase2_v2: Arc<Mutex<usize>>,
    /// Answer HTTP 500 to every V2 extraction.
    pub(crate) fail_v2: Arc<std::sync::atomic::AtomicBool>,
}

fn usage() -> Value {
    json!({"prompt_tokens": 900, "completion_tokens": 100, "total_tokens": 1000})
}

/// Phase 1: a V1 or V2 answer, told apart by V2's system prompt. Phase 2 (a request with
/// tools): a stateless agent that writes its version's files (V1: MEMORY.md and the V1
/// summary; V2: the V2 summary only) and stops once it has seen its tool results.
async fn chat(State(m): State<Mock>, Json(body): Json<Value>) -> axum::response::Response {
    use axum::response::IntoResponse;
    let reply = |message: Value, finish: &str| {
        Json(
            json!({"id": "c", "object": "chat.completion", "created": 0, "model": "mock-model",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage()}),
        )
        .into_response()
    };
    let system = body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if body
        .get("tools")
        .is_some_and(|t| t.as_array().is_some_and(|a| !a.is_empty()))
    {
        let v2 = system == codex_free_pipeline::phase2::v2::SYSTEM_PROMPT;
        *if v2 { &m.phase2_v2 } else { &m.phase2_v1 }.lock().unwrap() += 1;
        let msgs = body["messages"].as_array().cloned().unwrap_or_default();
        if msgs.last().is_some_and(|l| l["role"] == "tool") {
            return reply(
                json!({"role": "assistant", "content": "Consolidated."}),
                "stop",
            );
        }
        let write = |id: &str, path: &str, content: String| json!({"id": id, "type": "function", "function": {"name": "write_file", "arguments": json!({"path": path, "content": content}).to_string()}});
        let calls = if v2 {
            json!([write("w1", "memory_summary.md", summary(V2_MARK))])
        } else {
            json!([
                write(
                    "w1",
                    "MEMORY.md",
                    "# Memory\n\n## Tooling\n\n- Always use pnpm, never npm.\n".into()
                ),
                write("w2", "memory_summary.md", summary(V1_MARK)),
            ])
        };
        return reply(
            json!({"role": "assistant", "content": null, "tool_calls": calls}),
            "tool_calls",
        );
    }
    let v2 = system == codex_free_pipeline::phase1::SYSTEM_PROMPT_V2;
    *if v2 { &m.phase1_v2 } else { &m.phase1_v1 }.lock().unwrap() += 1;
    if v2 && m.fail_v2.load(std::sync::atomic::Ordering::SeqCst) {
        return (
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({"error": {"message": "internal"}})),
        )
            .into_response();
    }
    let mut answer = json!({
        "rollout_summary": "The user asked to always use pnpm.",
        "rollout_slug": "pnpm",
    });
    if !v2 {
        answer["raw_memory"] = json!("- Always pnpm, never npm.");
    }
    reply(
        json!({"role": "assistant", "content": answer.to_string()}),
        "stop",
    )
}

/// Serve `m` on a loopback port; the provider base URL.
pub(crate) async fn start(m: Mock) -> String {
    let app = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(chat))
        .with_state(m);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/v1/")
}

/// A user's home (`HOME`, with `~/.codex`) and a state home inside it.
struct Homes {
    dir: tempfile::TempDir,
    project: tempfile::TempDir,
}

impl Homes {
    fn new() -> Self {
        let h = Self {
            dir: tempfile::tempdir().unwrap(),
            project: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(h.state()).unwrap();
        std::fs::write(h.project.path().join("README.md"), "# demo\n").unwrap();
        h
    }

    fn home(&self) -> &Path {
        self.dir.path()
    }

    fn state(&self) -> PathBuf {
        self.home().join("state")
    }

    fn agents_md(&self) -> PathBuf {
        self.home().join(".codex/AGENTS.md")
    }

    /// Write the config: the mock provider, both pipelines, `version` active.
    fn configure(&self, base: &str, version: &str) {
        let v = json!({"memories": {
            "version": version,
            "dual_write": true,
            "dedicated_tools": true,
            "extract_model": "local/mock-model",
            "consolidation_model": "local/mock-model",
            "sources": ["codex"],
            "max_rollouts_per_startup": 8,
            "providers": {"local": {"base_url": base, "api": "openai-chat"}},
        }});
        std::fs::write(
            self.state().join(codex_free_core::config::CONFIG_FILE),
            v.to_string(),
        )
        .unwrap();
    }

    /// Switch the active version in the config file (what a user's edit does).
    fn switch(&self, version: &str) {
        let p = self.state().join(codex_free_core::config::CONFIG_FILE);
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        v["memories"]["version"] = json!(version);
        std::fs::write(&p, v.to_string()).unwrap();
    }

    /// Copy the real Codex fixture transcripts into `~/.codex/sessions`, idle for 7 hours.
    fn copy_codex_fixtures(&self) -> usize {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sessions/codex/sessions");
        let files = support::jsonl_under(&src);
        for f in &files {
            let to = self
                .home()
                .join(".codex/sessions")
                .join(f.strip_prefix(&src).unwrap());
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(f, &to).unwrap();
            let h = std::fs::File::options().write(true).open(&to).unwrap();
            h.set_modified(SystemTime::now() - Duration::from_secs(7 * 3600))
                .unwrap();
        }
        files.len()
    }

    fn command(&self) -> tokio::process::Command {
        let mut c = tokio::process::Command::new(support::bin());
        c.env("HOME", self.home())
            .env("CODEX_FREE_HOME", self.state())
            .env("CODEX_FREE_LOG", "warn")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env_remove("CODEX_HOME")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("PI_CODING_AGENT_DIR");
        c
    }

    async fn cli(&self, args: &[&str]) -> String {
        let o = self.command().args(args).output().await.unwrap();
        assert!(
            o.status.success(),
            "{args:?}: exit {:?}\nstdout: {}\nstderr: {}",
            o.status.code(),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    async fn stdio(&self) -> Client {
        let mut cmd = self.command();
        cmd.args(["serve", "--stdio", "--no-pipeline", "--project"])
            .arg(self.project.path());
        support::stdio_client(cmd).await
    }

    async fn http(&self) -> support::HttpServer {
        let mut cmd = self.command();
        cmd.args([
            "serve",
            "--http",
            "--port",
            "0",
            "--no-pipeline",
            "--project",
        ])
        .arg(self.project.path());
        support::http_server(cmd, &self.state()).await
    }

    /// The managed block of Codex's `AGENTS.md`.
    fn linked(&self) -> String {
        std::fs::read_to_string(self.agents_md()).unwrap()
    }
}

/// What a fresh session over `client` is served: its instructions, `recall`'s memory part,
/// the memory folder's listing and `memory_summary.md` through `memories_read`.
struct Served {
    instructions: String,
    recall: String,
    listing: String,
    read: String,
}

async fn served(client: &Client) -> Served {
    let instructions = client
        .peer_info()
        .and_then(|i| i.instructions.clone())
        .unwrap_or_default();
    let (recall, err) = support::call(client, "recall", json!({})).await;
    assert!(!err, "{recall}");
    let (listing, err) = support::call(client, "memories_list", json!({})).await;
    assert!(!err, "{listing}");
    let (read, err) = support::call(
        client,
        "memories_read",
        json!({"path": "memory_summary.md"}),
    )
    .await;
    assert!(!err, "{read}");
    Served {
        instructions,
        recall,
        listing,
        read,
    }
}

/// V2 active: V2's summary and read path, nothing of V1's.
fn assert_v2(s: &Served) {
    for (what, text) in [("instructions", &s.instructions), ("recall", &s.recall)] {
        assert!(text.contains(V2_MARK), "{what}: {text}");
        assert!(!text.contains(V1_MARK), "{what}: {text}");
        // V2's read path: the summary is not a source, the rollout summaries are.
        assert!(
            text.contains("Do not cite `memory_summary.md`"),
            "{what}: {text}"
        );
        assert!(
            text.contains("rollout_summaries/<file>.md:8-10|note=["),
            "{what}: {text}"
        );
        assert!(
            text.contains("make any tool call only to build or check a citation"),
            "{what}: {text}"
        );
        assert!(
            !text.contains("MEMORY.md:10-12"),
            "no V1 citation example: {text}"
        );
    }
    assert!(
        s.read.contains(V2_MARK) && !s.read.contains(V1_MARK),
        "{}",
        s.read
    );
    assert!(s.listing.contains("rollout_summaries/"), "{}", s.listing);
    assert!(!s.listing.contains("MEMORY.md"), "{}", s.listing);
}

/// V1 active: V1's summary and read path, nothing of V2's.
fn assert_v1(s: &Served) {
    for (what, text) in [("instructions", &s.instructions), ("recall", &s.recall)] {
        assert!(text.contains(V1_MARK), "{what}: {text}");
        assert!(!text.contains(V2_MARK), "{what}: {text}");
        assert!(text.contains("MEMORY.md:10-12"), "{what}: {text}");
        assert!(
            !text.contains("Do not cite `memory_summary.md`"),
            "{what}: {text}"
        );
    }
    assert!(
        s.read.contains(V1_MARK) && !s.read.contains(V2_MARK),
        "{}",
        s.read
    );
    assert!(s.listing.contains("MEMORY.md"), "{}", s.listing);
}

/// Run both pipelines end to end through the binary (`memories run`, `memories
/// consolidate`): each folder ends with its own summary.
async fn both_pipelines(h: &Homes, mock: &Mock, n: usize) {
    let out = h.cli(&["memories", "run"]).await;
    assert!(out.contains("v1: ") && out.contains("v2: "), "{out}");
    assert_eq!(*mock.phase1_v1.lock().unwrap(), n);
    assert_eq!(*mock.phase1_v2.lock().unwrap(), n);
    let out = h.cli(&["memories", "consolidate"]).await;
    assert!(*mock.phase2_v1.lock().unwrap() >= 1, "{out}");
    assert!(*mock.phase2_v2.lock().unwrap() >= 1, "{out}");
    let v1 = std::fs::read_to_string(h.state().join("memories/memory_summary.md")).unwrap();
    let v2 = std::fs::read_to_string(h.state().join("memories_v2/memory_summary.md")).unwrap();
    assert!(v1.contains(V1_MARK) && v2.contains(V2_MARK));
    assert!(!h.state().join("memories_v2/MEMORY.md").exists());
}

/// Both pipelines run end to end through the binary into their own folders; a fresh MCP
/// session (stdio and HTTP) is served the active version's summary and read path only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_session_is_served_the_active_versions_summary() {
    let mock = Mock::default();
    let base = start(mock.clone()).await;
    let h = Homes::new();
    h.configure(&base, "v2");
    let n = h.copy_codex_fixtures();
    assert!(n >= 2, "fixtures present");

    both_pipelines(&h, &mock, n).await;

    // `memories status` shows both versions, which one is served, and V2's readiness.
    let text = h.cli(&["memories", "status"]).await;
    assert!(
        text.contains("memory versions: serving v2 (dual-write: both pipelines run)"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "  v1: written, not served; {n} sessions with output; jobs 0 pending, {n} done"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "  v2: served; {n} sessions with output; jobs 0 pending, {n} done"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "summary valid; readiness: not ready — {n} of 20 consolidated threads"
        )),
        "{text}"
    );
    assert!(text.contains("phase 1 (extraction) jobs (v1): "), "{text}");
    let json: Value =
        serde_json::from_str(&h.cli(&["memories", "status", "--json"]).await).unwrap();
    let v = &json["versions"];
    assert_eq!(v["served"], "v2");
    assert_eq!(v["dual_write"], true);
    assert!(v["pending_restart"].is_null());
    let (v1, v2) = (&v["versions"][0], &v["versions"][1]);
    assert_eq!(
        (v1["version"].as_str(), v2["version"].as_str()),
        (Some("v1"), Some("v2"))
    );
    assert_eq!(
        (v1["served"].as_bool(), v2["served"].as_bool()),
        (Some(false), Some(true))
    );
    assert_eq!(
        (v1["written"].as_bool(), v2["written"].as_bool()),
        (Some(true), Some(true))
    );
    for x in [v1, v2] {
        assert_eq!(x["with_output"], json!(n), "{x}");
        assert_eq!(x["last_phase1"]["outcome"], "ok", "{x}");
        assert_eq!(x["last_phase2"]["outcome"], "ok", "{x}");
        assert_eq!(x["summary_exists"], true, "{x}");
        assert_eq!(x["summary_problems"], json!([]), "{x}");
    }
    assert!(v1["readiness"].is_null());
    assert_eq!(
        v2["readiness"],
        json!({"consolidated_threads": n, "minimum": 20, "ready": false})
    );

    // V2 active: stdio and HTTP sessions get V2's.
    let c = h.stdio().await;
    assert_v2(&served(&c).await);
    c.cancel().await.unwrap();
    let server = h.http().await;
    let c = server.client().await;
    assert_v2(&served(&c).await);
    c.cancel().await.unwrap();
    drop(server);

    // The reverse: V1 active, the same home's sessions get V1's.
    h.switch("v1");
    let c = h.stdio().await;
    assert_v1(&served(&c).await);
    c.cancel().await.unwrap();
    let server = h.http().await;
    let c = server.client().await;
    assert_v1(&served(&c).await);
    c.cancel().await.unwrap();
}

/// Switching `memories.version` takes effect at the next start: a running server keeps
/// serving the version it started with to its new sessions, and so does the copy linked into
/// Codex's `AGENTS.md`; after a restart both follow the new version, and back again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switching_the_version_takes_effect_at_the_next_start_for_sessions_and_linked_copies() {
    let mock = Mock::default();
    let base = start(mock.clone()).await;
    let h = Homes::new();
    h.configure(&base, "v2");
    let n = h.copy_codex_fixtures();
    both_pipelines(&h, &mock, n).await;

    h.cli(&["connect", "codex"]).await;
    let linked = h.linked();
    assert!(
        linked.contains(V2_MARK) && !linked.contains(V1_MARK),
        "{linked}"
    );
    assert!(
        linked.contains("Do not cite `memory_summary.md`"),
        "{linked}"
    );
    assert!(
        !linked.contains("(MEMORY.md, rollout_summaries/)"),
        "{linked}"
    );

    // A running V2 server; the file switches to v1.
    let server = h.http().await;
    h.switch("v1");
    let c = server.client().await;
    assert_v2(&served(&c).await);
    c.cancel().await.unwrap();
    assert_eq!(h.linked(), linked, "the linked copy waits for the restart");

    // Restart: new sessions and the linked copy follow v1.
    drop(server);
    let server = h.http().await;
    let c = server.client().await;
    assert_v1(&served(&c).await);
    c.cancel().await.unwrap();
    let after = h.linked();
    assert!(
        after.contains(V1_MARK) && !after.contains(V2_MARK),
        "{after}"
    );
    assert!(after.contains("MEMORY.md:10-12"), "{after}");
    drop(server);

    // And back to v2 at the next start (a stdio server this time).
    h.switch("v2");
    let c = h.stdio().await;
    assert_v2(&served(&c).await);
    c.cancel().await.unwrap();
    assert_eq!(h.linked(), linked);
}
