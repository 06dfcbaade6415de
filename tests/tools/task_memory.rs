//! Task memory over the real binary (`codex-free serve --stdio`, rmcp client): notes survive
//! a restart, replace/delete, budget refusal, `enabled: false`, the instructions snapshot,
//! multi-project bindings, and concurrency/crash safety of `memory.json` (issue 3).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::json;

use crate::support::{Client, Env, call, call_meta, files_under};

/// Spawn `serve --stdio` with `args`, an isolated `HOME` (so the user's real skills never
/// leak into a test) and no `CODEX_HOME`.
async fn spawn(env: &Env, user_home: &Path, args: &[&str]) -> Client {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let user_home = user_home.to_path_buf();
    let cmd = env.command().configure(|c| {
        c.arg("serve")
            .arg("--stdio")
            .args(&args)
            .env("HOME", &user_home)
            .env_remove("CODEX_HOME");
    });
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    ().serve(transport).await.expect("stdio client connects")
}

async fn single(env: &Env, user_home: &Path) -> Client {
    let p = env.project().to_str().unwrap().to_string();
    spawn(env, user_home, &["--project", &p]).await
}

fn instructions(c: &Client) -> String {
    c.peer_info()
        .and_then(|i| i.instructions.clone())
        .unwrap_or_default()
}

/// An [`Env`] whose state home is on `/dev/shm` when it exists. The stress test checks lost
/// updates between processes (locking + re-read), which does not depend on the disk; on a
/// RAM disk `fsync` returns at once, so 4000 writes do not spend a minute waiting on it.
fn ram_env() -> Env {
    let env = Env::new(&[]);
    match tempfile::tempdir_in("/dev/shm") {
        Ok(home) => Env {
            home,
            project: env.project,
        },
        Err(_) => env,
    }
}

fn memory_json(env: &Env) -> PathBuf {
    let root = std::fs::canonicalize(env.project()).unwrap();
    env.home()
        .join("projects")
        .join(codex_free_core::home::project_slug(&root))
        .join("memory.json")
}

#[tokio::test]
async fn notes_survive_restart_with_replace_and_delete() {
    let env = Env::new(&[("a.txt", "x\n")]);
    let user = tempfile::tempdir().unwrap();
    let c = single(&env, user.path()).await;
    assert!(instructions(&c).contains("Nothing saved for this project yet"));
    let (t, err) = call(
        &c,
        "remember",
        json!({"key": "build", "value": "cargo build"}),
    )
    .await;
    assert!(!err && t.starts_with("Saved note \"build\""), "{t}");
    call(
        &c,
        "remember",
        json!({"key": "build", "value": "cargo test --lib"}),
    )
    .await;
    call(&c, "remember", json!({"key": "gone", "value": "temporary"})).await;
    let (t, err) = call(&c, "remember", json!({"key": "gone", "value": ""})).await;
    assert!(!err && t.starts_with("Deleted note \"gone\""), "{t}");
    let (t, err) = call(&c, "update_plan", json!({"plan": [{"step": "port store", "status": "completed"}, {"step": "wire tools", "status": "in_progress"}]})).await;
    assert!(!err, "{t}");
    let (t, err) = call(&c, "update_plan", json!({"plan": [{"step": "a", "status": "in_progress"}, {"step": "b", "status": "in_progress"}]})).await;
    assert!(err && t.starts_with("error[invalid_argument]"), "{t}");
    c.cancel().await.unwrap();

    // A new process: the saved state is in the instructions and in recall, the same text.
    let c = single(&env, user.path()).await;
    let i = instructions(&c);
    assert!(i.contains("- `build`: cargo test --lib\n"), "{i}");
    assert!(!i.contains("gone") && !i.contains("cargo build\n"), "{i}");
    assert!(i.contains("2. [>] wire tools (in progress)"), "{i}");
    let (recall, err) = call(&c, "recall", json!({})).await;
    assert!(!err);
    assert!(
        i.contains(&recall),
        "recall is the Saved state section of the instructions:\n{recall}\n---\n{i}"
    );
    c.cancel().await.unwrap();
    assert!(
        files_under(env.project())
            .iter()
            .all(|p| !p.to_string_lossy().contains("memory")),
        "nothing written in the project"
    );
}

#[tokio::test]
async fn budget_refusal_leaves_old_notes_intact() {
    let env = Env::new(&[]);
    env.write_config(json!({"memory": {"maxBytes": 300}}));
    let user = tempfile::tempdir().unwrap();
    let c = single(&env, user.path()).await;
    call(
        &c,
        "remember",
        json!({"key": "keep", "value": "k".repeat(200)}),
    )
    .await;
    let before = std::fs::read(memory_json(&env)).unwrap();
    let (t, err) = call(
        &c,
        "remember",
        json!({"key": "big", "value": "b".repeat(200)}),
    )
    .await;
    assert!(err, "{t}");
    assert!(t.starts_with("error[budget_exceeded]"), "{t}");
    assert!(
        t.contains("204 bytes") && t.contains("300") && t.contains("203 bytes"),
        "current, limit and note size: {t}"
    );
    assert_eq!(std::fs::read(memory_json(&env)).unwrap(), before);
    let (r, _) = call(&c, "recall", json!({})).await;
    assert!(
        r.contains(&format!("- `keep`: {}", "k".repeat(200))) && !r.contains("`big`"),
        "{r}"
    );
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn disabled_memory_writes_nothing_anywhere() {
    let env = Env::new(&[("src/lib.rs", "fn main() {}\n"), ("AGENTS.md", "# rules\n")]);
    env.git_init();
    let cfg_dir = tempfile::tempdir().unwrap();
    let cfg = cfg_dir.path().join("codex.config.json");
    // task memory, the pipeline (whose MCP transcripts live in the state home) and the
    // audit trail (one line per call under <home>/audit/) off
    std::fs::write(
        &cfg,
        r#"{"memory":{"enabled":false},"memories":{"enabled":false},"audit":{"enabled":false}}"#,
    )
    .unwrap();
    let user = tempfile::tempdir().unwrap();
    let p = env.project().to_str().unwrap().to_string();
    let c = spawn(
        &env,
        user.path(),
        &["--project", &p, "--config", cfg.to_str().unwrap()],
    )
    .await;
    assert!(instructions(&c).contains("Task memory is disabled"));
    let (t, err) = call(&c, "remember", json!({"key": "k", "value": "v"})).await;
    assert!(
        err && t.starts_with("error[refused]") && t.contains("memory.enabled = false"),
        "{t}"
    );
    let (_, err) = call(
        &c,
        "update_plan",
        json!({"plan": [{"step": "s", "status": "pending"}]}),
    )
    .await;
    assert!(err);
    let (t, err) = call(&c, "recall", json!({})).await;
    assert!(!err && t.contains("disabled"), "{t}");
    call(&c, "skills_list", json!({})).await;
    call(&c, "get_agent_brief", json!({})).await;
    c.cancel().await.unwrap();
    let left = files_under(env.home());
    assert!(left.is_empty(), "state home must stay empty: {left:?}");
    let st = std::process::Command::new("git")
        .args(["status", "--porcelain", "--ignored"])
        .current_dir(env.project())
        .output()
        .unwrap();
    assert!(st.status.success());
    assert_eq!(String::from_utf8_lossy(&st.stdout), "", "project untouched");
}

#[tokio::test]
async fn instructions_snapshot_orders_saved_state_between_environment_and_agents_md() {
    let env = Env::new(&[
        (
            "AGENTS.md",
            "# Project rules\n\nRun `cargo test` before committing.\n",
        ),
        (
            ".agents/skills/release/SKILL.md",
            "---\nname: release\ndescription: Cut a release: bump the version, tag, publish.\n---\n# Release\n",
        ),
    ]);
    let user = tempfile::tempdir().unwrap();
    let c = single(&env, user.path()).await;
    call(
        &c,
        "update_plan",
        json!({"explanation": "first pass", "plan": [
        {"step": "read the store code", "status": "completed"},
        {"step": "add the budget check", "status": "in_progress"},
        {"step": "write the docs", "status": "pending"}]}),
    )
    .await;
    call(
        &c,
        "remember",
        json!({"key": "test-command", "value": "cargo test --lib memory"}),
    )
    .await;
    call(&c, "remember", json!({"key": "decision/locks", "value": "one lock file per memory.json\nre-read under the lock"})).await;
    c.cancel().await.unwrap();

    let c = single(&env, user.path()).await;
    let i = instructions(&c);
    c.cancel().await.unwrap();
    let pos = |s: &str| i.find(s).unwrap_or_else(|| panic!("{s} missing:\n{i}"));
    assert!(
        pos("## Environment") < pos("## Saved state")
            && pos("## Saved state") < pos("## Project instructions (AGENTS.md)")
    );
    let root = std::fs::canonicalize(env.project())
        .unwrap()
        .display()
        .to_string();
    insta::with_settings!({filters => vec![
        (root.as_str(), "[PROJECT]"),
        (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "[TIME]"),
        (r"(?m)^os: .*$", "os: [OS]"),
        (r"(?m)^shell: .*$", "shell: [SHELL]"),
        (r"(?m)^date: .*$", "date: [DATE]"),
        (r"(?m)^sandbox: .*$", "sandbox: [SANDBOX]"),
    ]}, {
        insta::assert_snapshot!("single_project_instructions", i);
    });
}

#[tokio::test]
async fn multi_project_binding_restore_and_fail_closed() {
    let env = Env::new(&[
        ("alpha/.git/HEAD", "ref: x\n"),
        ("alpha/AGENTS.md", "# Alpha rules\n"),
        ("beta/.git/HEAD", "ref: x\n"),
        ("notes/readme.txt", "x\n"),
    ]);
    let user = tempfile::tempdir().unwrap();
    let access = env.project().to_str().unwrap().to_string();
    let session = "conv-RAW-SESSION-VALUE-7f3a9c";
    let c = spawn(&env, user.path(), &["--access-root", &access]).await;
    let i = instructions(&c);
    assert!(
        i.contains("set_project_root") && !i.contains("## Saved state") && !i.contains("alpha"),
        "project-neutral: {i}"
    );

    // Without `openai/session` the connection is the conversation: unbound at first.
    let (t, err) = call(&c, "get_agent_brief", json!({})).await;
    assert!(!err && t.contains("set_project_root(path)` before"), "{t}");
    let (t, err) = call_meta(&c, "get_agent_brief", json!({}), Some(session)).await;
    assert!(
        !err && t.contains("set_project_root(path)` before")
            && t.contains("- alpha  (")
            && t.contains("- beta  ("),
        "{t}"
    );
    assert!(!t.contains("- notes"), "{t}");
    let (t, err) = call_meta(
        &c,
        "remember",
        json!({"key": "k", "value": "v"}),
        Some(session),
    )
    .await;
    assert!(err && t.contains("set_project_root"), "{t}");
    let (t, err) = call_meta(&c, "list_projects", json!({}), Some(session)).await;
    assert!(
        !err && t.contains("- alpha  (") && t.contains("- beta  ("),
        "{t}"
    );
    let (t, err) = call_meta(
        &c,
        "set_project_root",
        json!({"path": "/etc"}),
        Some(session),
    )
    .await;
    assert!(err && t.contains("outside the access root"), "{t}");
    let (t, err) = call_meta(
        &c,
        "set_project_root",
        json!({"path": "alpha"}),
        Some(session),
    )
    .await;
    assert!(
        !err && t.contains("now works on") && t.contains("# Alpha rules"),
        "{t}"
    );
    let (t, err) = call_meta(
        &c,
        "remember",
        json!({"key": "where", "value": "alpha notes"}),
        Some(session),
    )
    .await;
    assert!(!err, "{t}");
    // The file tools follow the binding too.
    let (t, err) = call_meta(&c, "read_file", json!({"path": "AGENTS.md"}), Some(session)).await;
    assert!(!err && t.contains("# Alpha rules"), "{t}");
    let (t, err) = call_meta(
        &c,
        "read_file",
        json!({"path": "AGENTS.md"}),
        Some("another-conversation"),
    )
    .await;
    assert!(err && t.contains("set_project_root"), "{t}");
    let (t, _) = call_meta(&c, "recall", json!({}), Some("another-conversation")).await;
    assert!(
        t.contains("set_project_root"),
        "other conversations are not bound: {t}"
    );
    c.cancel().await.unwrap();

    // Restart: the binding and the notes come back for the same conversation.
    let c = spawn(&env, user.path(), &["--access-root", &access]).await;
    let (t, err) = call_meta(&c, "get_agent_brief", json!({}), Some(session)).await;
    assert!(
        !err && t.contains("restored")
            && t.contains("- `where`: alpha notes")
            && t.contains("# Alpha rules"),
        "{t}"
    );

    // Nothing under the state home holds the raw session value, in content or name.
    for f in files_under(env.home()) {
        assert!(!f.to_string_lossy().contains(session), "{f:?}");
        let bytes = std::fs::read(&f).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(session),
            "raw session value in {f:?}"
        );
    }

    // Move the project away: fail closed, no silent rebinding, the record stays.
    std::fs::rename(
        env.project().join("alpha"),
        env.project().join("alpha-moved"),
    )
    .unwrap();
    let (t, err) = call_meta(&c, "get_agent_brief", json!({}), Some(session)).await;
    assert!(
        err && t.starts_with("error[binding]")
            && t.contains("no longer exists")
            && t.contains("set_project_root"),
        "{t}"
    );
    let (t, err) = call_meta(
        &c,
        "remember",
        json!({"key": "k", "value": "v"}),
        Some(session),
    )
    .await;
    assert!(err && t.contains("no longer exists"), "{t}");
    let (t, err) = call_meta(
        &c,
        "set_project_root",
        json!({"path": "alpha-moved"}),
        Some(session),
    )
    .await;
    assert!(!err && t.contains("now works on"), "{t}");
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn bindings_work_with_memory_disabled() {
    let env = Env::new(&[("alpha/.git/HEAD", "ref: x\n")]);
    env.write_config(json!({"memory": {"enabled": false}}));
    let user = tempfile::tempdir().unwrap();
    let access = env.project().to_str().unwrap().to_string();
    let c = spawn(&env, user.path(), &["--access-root", &access]).await;
    let (t, err) = call_meta(&c, "set_project_root", json!({"path": "alpha"}), Some("s")).await;
    assert!(!err && t.contains("Task memory is disabled"), "{t}");
    let (t, err) = call_meta(&c, "get_agent_brief", json!({}), Some("s")).await;
    assert!(!err && t.contains("restored"), "{t}");
    c.cancel().await.unwrap();
    assert!(!env.home().join("projects").exists());
    assert!(env.home().join("conversation-projects").exists());
}

/// Issue 3's stress test: 8 server processes x 500 `remember` calls on distinct keys against
/// one project; every key must be present at the end (no lost read-modify-write).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stress_eight_processes_no_lost_writes() {
    const PROCS: usize = 8;
    const CALLS: usize = 500;
    let env = ram_env();
    env.write_config(json!({"memory": {"maxBytes": 1048576}}));
    let user = tempfile::tempdir().unwrap();
    let mut clients = Vec::new();
    for _ in 0..PROCS {
        clients.push(single(&env, user.path()).await);
    }
    let started = std::time::Instant::now();
    let mut tasks = Vec::new();
    for (p, c) in clients.into_iter().enumerate() {
        tasks.push(tokio::spawn(async move {
            for i in 0..CALLS {
                let (t, err) = call(
                    &c,
                    "remember",
                    json!({"key": format!("p{p}-{i:03}"), "value": format!("v{i}")}),
                )
                .await;
                assert!(!err, "{t}");
            }
            c.cancel().await.unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    eprintln!(
        "stress: {} remember calls in {:?}",
        PROCS * CALLS,
        started.elapsed()
    );
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(memory_json(&env)).unwrap()).unwrap();
    let notes = doc["notes"].as_object().unwrap();
    let missing: Vec<String> = (0..PROCS)
        .flat_map(|p| (0..CALLS).map(move |i| format!("p{p}-{i:03}")))
        .filter(|k| !notes.contains_key(k))
        .collect();
    assert!(
        missing.is_empty(),
        "{} keys lost, e.g. {:?}",
        missing.len(),
        &missing[..missing.len().min(5)]
    );
    assert_eq!(notes.len(), PROCS * CALLS);
}

/// Issue 3's crash test: kill a writing server with SIGKILL at random moments, many times;
/// memory.json must always parse and keep every note acknowledged before the kill.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_write_never_corrupts() {
    // On disk, not /dev/shm: the fsync window makes most kills land inside a write.
    let env = Env::new(&[]);
    env.write_config(json!({"memory": {"maxBytes": 1048576}}));
    let user = tempfile::tempdir().unwrap();
    let path = memory_json(&env);
    let temps = || {
        files_under(path.parent().unwrap())
            .into_iter()
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(".tmp-")
            })
            .count()
    };
    let mut acknowledged: Vec<String> = Vec::new();
    let mut torn = 0;
    for round in 0..40u64 {
        let mut cmd = env.command();
        cmd.arg("serve")
            .arg("--stdio")
            .arg("--project")
            .arg(env.project())
            .env("HOME", user.path())
            .env_remove("CODEX_HOME");
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let client = ().serve((stdout, stdin)).await.expect("connects");
        let acked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let acked2 = acked.clone();
        let writer = tokio::spawn(async move {
            for i in 0.. {
                let key = format!("r{round}-{i:04}");
                let p = rmcp::model::CallToolRequestParams::new("remember").with_arguments(
                    json!({"key": key, "value": "x".repeat(64)})
                        .as_object()
                        .cloned()
                        .unwrap(),
                );
                match client.call_tool(p).await {
                    Ok(r) if !r.is_error.unwrap_or(false) => acked2.lock().unwrap().push(key),
                    _ => break,
                }
            }
        });
        // Once this server has written at least once, kill it somewhere inside the stream
        // of writes (each takes a few ms).
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while acked.lock().unwrap().is_empty() {
            assert!(
                std::time::Instant::now() < deadline,
                "round {round}: no write acknowledged in 30 s"
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        tokio::time::sleep(Duration::from_millis(5 + (round * 37) % 100)).await;
        child.start_kill().unwrap(); // SIGKILL on Unix
        let _ = child.wait().await;
        let _ = tokio::time::timeout(Duration::from_secs(10), writer).await;
        let text = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("round {round}: memory.json missing: {e}"));
        let doc: serde_json::Value = serde_json::from_slice(&text)
            .unwrap_or_else(|e| panic!("round {round}: memory.json does not parse: {e}"));
        acknowledged.extend(acked.lock().unwrap().drain(..));
        // A kill between creating the temp file and the rename leaves the temp file behind
        // (the next write removes it).
        torn += temps();
        let notes = doc["notes"].as_object().unwrap();
        for k in &acknowledged {
            assert!(
                notes.contains_key(k),
                "round {round}: acknowledged note {k} lost"
            );
        }
    }
    assert!(
        acknowledged.len() > 25,
        "the writer made progress before kills: {}",
        acknowledged.len()
    );
    eprintln!(
        "crash test: {} notes acknowledged, {torn} of 40 kills landed mid-write",
        acknowledged.len()
    );
    // The next write clears temp files left by killed writers.
    let c = single(&env, user.path()).await;
    let (t, err) = call(&c, "remember", json!({"key": "after", "value": "crashes"})).await;
    assert!(!err, "{t}");
    c.cancel().await.unwrap();
    assert_eq!(temps(), 0, "orphaned temp files are cleaned up");
    let leftovers: Vec<_> = files_under(path.parent().unwrap())
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("corrupt"))
        .collect();
    assert!(
        leftovers.is_empty(),
        "no corruption was ever detected: {leftovers:?}"
    );
}

#[tokio::test]
async fn memory_tools_are_listed_and_skills_read_pages() {
    let body: String = (1..=30).map(|i| format!("step {i}\n")).collect();
    let skill = format!("---\nname: long\ndescription: A long skill.\n---\n{body}");
    let env = Env::new(&[(".claude/skills/long/SKILL.md", skill.as_str())]);
    env.write_config(json!({"output": {"maxFileLines": 20}}));
    let user = tempfile::tempdir().unwrap();
    let c = single(&env, user.path()).await;
    let tools = c.list_all_tools().await.unwrap();
    for name in [
        "remember",
        "recall",
        "update_plan",
        "skills_list",
        "skills_read",
        "get_agent_brief",
    ] {
        let t = tools
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("{name} not listed"));
        assert!(
            t.description.as_deref().is_some_and(|d| !d.is_empty()),
            "{name} has a description"
        );
    }
    // Project selection is listed only in multi-project mode.
    assert!(
        !tools
            .iter()
            .any(|t| t.name == "list_projects" || t.name == "set_project_root")
    );
    let remember = tools.iter().find(|t| t.name == "remember").unwrap();
    let schema = serde_json::to_string(&remember.input_schema).unwrap();
    // The deletion rule is said once, in the description (tools/list is kept small).
    let said = format!("{schema} {}", remember.description.as_deref().unwrap_or(""));
    assert!(
        schema.contains("\"key\"") && said.contains("empty value deletes"),
        "{said}"
    );
    let (t, err) = call(&c, "skills_list", json!({})).await;
    assert!(!err && t.contains("- long: A long skill."), "{t}");
    let (t, err) = call(&c, "skills_read", json!({"name": "long"})).await;
    assert!(
        !err && t
            .ends_with("(showing lines 1-20 of 34 — call again with offset=20 for the rest)\n"),
        "{t}"
    );
    let (t, err) = call(&c, "skills_read", json!({"name": "long", "offset": 20})).await;
    assert!(!err && t.ends_with("step 30\n"), "{t}");
    c.cancel().await.unwrap();
}

/// Fake credentials of the shapes the redaction rules know (never valid).
const GH_TOKEN: &str = "ghp_Q7xZ9kLm2PvR4tYw8NbC6dFh1JsU3eGa5Wq0";
const BEARER: &str = "Zm9vYmFy+YmF6/cXV4~MTIzNDU2Nzg5MA==";
const OPENAI_KEY: &str = "sk-proj-Q7xZ9kLm2PvR4tYw8NbC6dFh";
const AWS_ID: &str = "AKIAQ7XZ9KLM2PVR4TYW";

/// Every file under `dir` whose bytes contain `needle`.
fn files_containing(dir: &Path, needle: &str) -> Vec<PathBuf> {
    files_under(dir)
        .into_iter()
        .filter(|p| {
            std::fs::read(p)
                .map(|b| String::from_utf8_lossy(&b).contains(needle))
                .unwrap_or(false)
        })
        .collect()
}

/// A prompt-injected model asks `remember` / `update_plan` to keep a credential (issue 27,
/// finding 10: it used to land in clear in `memory.json` and in every new session's
/// instructions). Each is refused with the field and the rule that matched, never the
/// secret itself; the model's retry without it is saved; nothing secret is stored.
#[tokio::test]
async fn secret_shaped_notes_and_plans_are_refused_and_never_stored() {
    let env = Env::new(&[]);
    let user = tempfile::tempdir().unwrap();
    let c = single(&env, user.path()).await;
    let refusals = [
        (
            "remember",
            json!({"key": "deploy", "value": format!("push with\nGH_TOKEN={GH_TOKEN} then tag")}),
            GH_TOKEN,
            "GitHub token",
        ),
        (
            "remember",
            json!({"key": "api", "value": format!("curl -H 'Authorization: Bearer {BEARER}' /v1")}),
            BEARER,
            "bearer",
        ),
        (
            "remember",
            json!({"key": format!("key {OPENAI_KEY}"), "value": "the staging key"}),
            OPENAI_KEY,
            "sk-",
        ),
        (
            "update_plan",
            json!({"plan": [{"step": "rotate", "status": "completed"}, {"step": format!("export OPENAI_API_KEY={OPENAI_KEY}"), "status": "pending"}]}),
            OPENAI_KEY,
            "sk-",
        ),
        (
            "update_plan",
            json!({"explanation": format!("creds are {AWS_ID}"), "plan": [{"step": "deploy", "status": "pending"}]}),
            AWS_ID,
            "AWS access key",
        ),
    ];
    for (tool, args, secret, rule) in &refusals {
        let (t, err) = call(&c, tool, args.clone()).await;
        assert!(err, "{tool} {args}: accepted: {t}");
        assert!(t.starts_with("error[invalid_argument]"), "{t}");
        assert!(
            t.to_lowercase().contains(&rule.to_lowercase()),
            "names the rule {rule:?}: {t}"
        );
        assert!(t.contains("secret"), "says why: {t}");
        assert!(!t.contains(secret), "echoes the secret: {t}");
        // the start of a secret is a secret too
        assert!(!t.contains(&secret[..12]), "echoes part of the secret: {t}");
    }
    // Which field and where: the note's value, line 2.
    let (t, _) = call(&c, "remember", refusals[0].1.clone()).await;
    assert!(t.contains("value") && t.contains("line 2"), "{t}");
    let (t, _) = call(&c, "update_plan", refusals[3].1.clone()).await;
    assert!(t.contains("step 2"), "{t}");

    // The retry without the secret, as the error asks, is saved; so is a placeholder.
    let (t, err) = call(
        &c,
        "remember",
        json!({"key": "deploy", "value": "push with GH_TOKEN from the key store, then tag"}),
    )
    .await;
    assert!(!err, "{t}");
    let (t, err) = call(
        &c,
        "remember",
        json!({"key": "env", "value": "set api_key=$OPENAI_API_KEY in .env; header Authorization: Bearer <token>"}),
    )
    .await;
    assert!(!err, "a placeholder is no secret: {t}");
    let (t, err) = call(
        &c,
        "update_plan",
        json!({"plan": [{"step": "export OPENAI_API_KEY from the key store", "status": "pending"}]}),
    )
    .await;
    assert!(!err, "{t}");
    c.cancel().await.unwrap();

    let c = single(&env, user.path()).await;
    let i = instructions(&c);
    assert!(i.contains("GH_TOKEN from the key store"), "{i}");
    let (r, _) = call(&c, "recall", json!({})).await;
    c.cancel().await.unwrap();
    let doc = std::fs::read_to_string(memory_json(&env)).unwrap();
    for (_, _, secret, _) in &refusals {
        assert!(!doc.contains(secret), "memory.json holds {secret}:\n{doc}");
        assert!(
            !i.contains(secret) && !r.contains(secret),
            "served {secret}"
        );
        let leaked = files_containing(env.home(), secret);
        assert!(leaked.is_empty(), "{secret} in the state home: {leaked:?}");
    }
}

/// A `memory.json` written before secrets were refused (or by hand) still serves none:
/// the instructions and `recall` show it redacted, and the file is left as the user has it.
#[tokio::test]
async fn a_secret_saved_earlier_is_served_redacted() {
    let env = Env::new(&[]);
    let user = tempfile::tempdir().unwrap();
    let path = memory_json(&env);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let doc = json!({
        "version": 1,
        "notes": {"old": format!("token {GH_TOKEN} for CI")},
        "plan": {"explanation": format!("uses {AWS_ID}"), "steps": [{"step": format!("Bearer {BEARER}"), "status": "pending"}], "updatedAt": "2026-01-01T00:00:00Z"}
    });
    std::fs::write(&path, doc.to_string()).unwrap();
    let c = single(&env, user.path()).await;
    let i = instructions(&c);
    let (r, _) = call(&c, "recall", json!({})).await;
    let (b, _) = call(&c, "get_agent_brief", json!({})).await;
    c.cancel().await.unwrap();
    for text in [&i, &r, &b] {
        for secret in [GH_TOKEN, AWS_ID, BEARER] {
            assert!(!text.contains(secret), "served {secret}:\n{text}");
        }
        assert!(
            text.contains("`old`: token [REDACTED_SECRET] for CI"),
            "{text}"
        );
    }
    assert_eq!(std::fs::read_to_string(&path).unwrap(), doc.to_string());
}
