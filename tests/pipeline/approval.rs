//! The approval queue (`memories.approval`) end to end on real Codex transcripts
//! (`tests/data/sessions/codex`) against the mock provider: with `every_request` a run
//! sends nothing until approval; a denial turns the session off; an approved request is
//! re-checked against the spend cap and sent as exactly the stored sealed bytes;
//! `new_sources` lets a known project/agent through; "always allow" ends the waiting.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use codex_free_core::config::{CONFIG_FILE, Config};
use codex_free_pipeline::cli::{ControlEnv, MemoriesCmd, execute};
use codex_free_pipeline::phase1::TextDirInput;
use codex_free_pipeline::transcript_input::TranscriptInput;
use codex_free_secrets::{MemoryStore, Secret, SecretStore};
use codex_free_store::Store;
use codex_free_testkit::mock_provider::{MockProvider, session_id};
use codex_free_transcripts::discover::SourceRoots;
use serde_json::{Value, json};

fn secrets() -> Arc<dyn SecretStore> {
    let s = MemoryStore::default();
    s.set("openai", &Secret::new("sk-test-openai-000000000000"))
        .unwrap();
    Arc::new(s)
}

/// `codex.config.json` for the mock with `extra` merged into `memories`.
fn configure(home: &Path, mock: &MockProvider, extra: Value) {
    let mut memories = json!({
        "extract_model": "openai-chat/gpt-5-mini",
        "max_rollouts_per_startup": 16,
        "sources": ["codex"],
        "providers": { "openai-chat": { "base_url": mock.base_url() } },
    });
    for (k, v) in extra.as_object().unwrap() {
        memories[k] = v.clone();
    }
    let (cfg, warnings) = Config::parse(&json!({ "memories": memories }).to_string()).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    cfg.save(&home.join(CONFIG_FILE)).unwrap();
}

/// Copies of the real Codex sessions, idle for a week; returns how many.
fn copy_codex_fixtures(dst: &Path) -> usize {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sessions/codex/sessions");
    let files = crate::support::jsonl_under(&src);
    for f in &files {
        let to = dst.join("sessions").join(f.strip_prefix(&src).unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(f, &to).unwrap();
        let h = std::fs::File::options().write(true).open(&to).unwrap();
        h.set_modified(SystemTime::now() - Duration::from_secs(7 * 3600))
            .unwrap();
    }
    files.len()
}

fn answer(mock: &MockProvider) {
    mock.set_answer(|body| {
        json!({
            "rollout_summary": format!("summary of {}", session_id(body)),
            "rollout_slug": "a-session",
            "raw_memory": "- always use pnpm"
        })
        .to_string()
    });
}

async fn run(env: &ControlEnv) -> String {
    execute(MemoriesCmd::Run { json: false }, env)
        .await
        .unwrap()
}

async fn queue(env: &ControlEnv) -> Value {
    serde_json::from_str(
        &execute(
            MemoriesCmd::Outgoing {
                text: false,
                json: true,
            },
            env,
        )
        .await
        .unwrap(),
    )
    .unwrap()
}

fn waiting(q: &Value) -> Vec<Value> {
    q["requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["status"] == "waiting")
        .cloned()
        .collect()
}

/// A chat-completions message's text, whether a string or content parts.
fn text_of(m: &Value) -> String {
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        other => panic!("unexpected content {other}"),
    }
}

/// `every_request`: runs send nothing and queue each request once, sealed (no secret, the
/// estimate with it); a denial turns its session off for good; an approved request waits
/// while the spend cap would not hold it, then leaves as exactly the queued bytes (system
/// and message texts, and the receipt hash on its usage row). Before: every request was
/// sent at the first run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_waits_deny_turns_off_approve_sends_the_queued_bytes() {
    let mock = MockProvider::start().await;
    answer(&mock);
    let d = tempfile::tempdir().unwrap();
    let home = d.path();
    configure(home, &mock, json!({"approval": "every_request"}));
    let codex_home = home.join("codex-home");
    let n = copy_codex_fixtures(&codex_home);
    assert!(n >= 3, "fixtures present");
    let mut env = ControlEnv::new(home.to_path_buf(), secrets());
    env.input = Arc::new(TranscriptInput::new(SourceRoots {
        codex_home: Some(codex_home),
        ..Default::default()
    }));

    let out = run(&env).await;
    assert!(out.contains("wait for approval"), "{out}");
    assert!(mock.requests().is_empty(), "nothing sent before approval");
    let q = queue(&env).await;
    assert_eq!(q["mode"], "every_request");
    let w = waiting(&q);
    assert_eq!(w.len(), n, "{q}");
    for r in &w {
        assert_eq!(r["reason"], "every_request");
        assert!(r["input_tokens"].as_i64().unwrap() > 100, "{r}");
        assert!(r["max_cost_usd"].as_f64().unwrap() > 0.0, "priced: {r}");
        assert!(
            r["project"]
                .as_str()
                .unwrap()
                .starts_with("/home/dev/work/")
        );
    }
    // A second run queues nothing new and still sends nothing.
    run(&env).await;
    assert!(mock.requests().is_empty());
    assert_eq!(waiting(&queue(&env).await).len(), n);

    // Deny one: never sent, its session off.
    let denied = w[0]["thread_id"].as_str().unwrap().to_string();
    let out = execute(
        MemoriesCmd::Deny {
            id: w[0]["id"].as_str().unwrap().into(),
        },
        &env,
    )
    .await
    .unwrap();
    assert!(out.contains("denied"), "{out}");
    let s = Store::open_in_home(home).unwrap();
    assert!(!s.thread(&denied).unwrap().unwrap().memory_enabled);

    // Approve one while the cap cannot hold it: re-checked at send time, nothing leaves,
    // it stays approved.
    let chosen = &w[1];
    let sealed: Value = serde_json::from_str(
        s.queued_sealed(chosen["id"].as_str().unwrap())
            .unwrap()
            .as_deref()
            .map(|b| std::str::from_utf8(b).unwrap())
            .unwrap(),
    )
    .unwrap();
    execute(
        MemoriesCmd::Approve {
            id: Some(chosen["id"].as_str().unwrap().into()),
            all: false,
            always: false,
        },
        &env,
    )
    .await
    .unwrap();
    configure(
        home,
        &mock,
        json!({"approval": "every_request", "monthly_spend_cap_usd": 0.000001}),
    );
    let out = run(&env).await;
    assert!(out.contains("spend cap"), "{out}");
    assert!(
        mock.requests().is_empty(),
        "the cap holds an approved request"
    );
    assert_eq!(
        s.queued_request(chosen["id"].as_str().unwrap())
            .unwrap()
            .unwrap()
            .status,
        "approved"
    );

    // Without the cap it leaves: exactly the queued bytes, one request only.
    configure(home, &mock, json!({"approval": "every_request"}));
    run(&env).await;
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 1, "only the approved request is sent");
    let msgs = reqs[0].body["messages"].as_array().unwrap();
    let system = msgs
        .iter()
        .find(|m| m["role"] == "system" || m["role"] == "developer")
        .unwrap();
    let user = msgs.iter().find(|m| m["role"] == "user").unwrap();
    assert_eq!(text_of(system), sealed["system"].as_str().unwrap());
    assert_eq!(
        text_of(user),
        sealed["messages"][0]["content"].as_str().unwrap()
    );
    let run_row = &s.recent_runs(1).unwrap()[0];
    let rows = s.run_usage(&run_row.id).unwrap();
    assert_eq!(
        rows[0].sent_sha256.as_deref(),
        chosen["sha256"].as_str(),
        "the receipt is of the queued bytes"
    );
    let thread = chosen["thread_id"].as_str().unwrap();
    assert!(s.stage1_output(thread).unwrap().is_some(), "extracted");
    assert_eq!(
        s.queued_request(chosen["id"].as_str().unwrap())
            .unwrap()
            .unwrap()
            .status,
        "sent"
    );
    // The denied session is never sent, the rest still wait.
    assert!(
        reqs.iter()
            .all(|r| !r.body.to_string().contains(denied.as_str()))
    );
    assert_eq!(waiting(&queue(&env).await).len(), n - 2);

    // Approve all: the next run sends the rest, and nothing waits.
    let out = execute(
        MemoriesCmd::Approve {
            id: None,
            all: true,
            always: false,
        },
        &env,
    )
    .await
    .unwrap();
    assert_eq!(out.matches("approved ").count(), n - 2, "{out}");
    run(&env).await;
    assert_eq!(mock.requests().len(), 1 + (n - 2));
    assert!(queue(&env).await["requests"].as_array().unwrap().is_empty());
    mock.stop();
}

fn write_rollout(home: &Path, id: &str) {
    let dir = home.join("rollouts/codex");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("{id}.txt"));
    std::fs::write(
        &p,
        format!("user: please fix the build of {id}\nassistant: done\n"),
    )
    .unwrap();
    std::fs::File::options()
        .write(true)
        .open(&p)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(7 * 3600))
        .unwrap();
}

fn text_env(home: &Path) -> ControlEnv {
    let mut env = ControlEnv::new(home.to_path_buf(), secrets());
    env.input = Arc::new(TextDirInput::new(home.join("rollouts")));
    env
}

/// `new_sources`: the first requests of a project/agent wait; once one is approved the
/// others of that project/agent go through fresh (their waiting rows dropped), and a later
/// session is sent without waiting. Before: nothing ever waited.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_sources_waits_only_for_a_project_agent_never_sent_before() {
    let mock = MockProvider::start().await;
    answer(&mock);
    let d = tempfile::tempdir().unwrap();
    let home = d.path();
    configure(home, &mock, json!({"approval": "new_sources"}));
    write_rollout(home, "s000");
    write_rollout(home, "s001");
    let env = text_env(home);
    // The preview says, before any run, that these requests would wait and why.
    let preview = |env: &ControlEnv| {
        let env = env.clone();
        async move {
            execute(
                MemoriesCmd::Preview {
                    next: 3,
                    rollout: None,
                    json: true,
                },
                &env,
            )
            .await
            .unwrap()
        }
    };
    let p: Value = serde_json::from_str(&preview(&env).await).unwrap();
    let reqs = p["requests"].as_array().unwrap();
    assert_eq!(reqs.len(), 2, "{p}");
    assert!(
        reqs.iter().all(|r| r["waits_for_approval"] == "new_source"),
        "{p}"
    );
    execute(
        MemoriesCmd::Preview {
            next: 3,
            rollout: None,
            json: false,
        },
        &env,
    )
    .await
    .unwrap()
    .contains("WAITS FOR APPROVAL (new_source, memories.approval)")
    .then_some(())
    .expect("the text preview says the request waits");
    run(&env).await;
    assert!(mock.requests().is_empty());
    let w = waiting(&queue(&env).await);
    assert_eq!(w.len(), 2);
    assert!(w.iter().all(|r| r["reason"] == "new_source"));
    execute(
        MemoriesCmd::Approve {
            id: Some(w[0]["id"].as_str().unwrap().into()),
            all: false,
            always: false,
        },
        &env,
    )
    .await
    .unwrap();
    let p: Value = serde_json::from_str(&preview(&env).await).unwrap();
    assert!(
        p["requests"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["waits_for_approval"].is_null()),
        "approved or known now: nothing waits: {p}"
    );
    run(&env).await;
    assert_eq!(mock.requests().len(), 2, "the known source goes through");
    assert!(queue(&env).await["requests"].as_array().unwrap().is_empty());
    write_rollout(home, "s002");
    run(&env).await;
    assert_eq!(
        mock.requests().len(),
        3,
        "no wait for a known project/agent"
    );
    mock.stop();
}

/// `every_request` with "always allow" (`approve --always`): the project's later requests
/// never wait. Before: `--always` did not exist and every request waited.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn always_allow_ends_the_wait_for_a_project() {
    let mock = MockProvider::start().await;
    answer(&mock);
    let d = tempfile::tempdir().unwrap();
    let home = d.path();
    configure(home, &mock, json!({"approval": "every_request"}));
    write_rollout(home, "a000");
    let env = text_env(home);
    run(&env).await;
    let w = waiting(&queue(&env).await);
    assert_eq!(w.len(), 1);
    execute(
        MemoriesCmd::Approve {
            id: Some(w[0]["id"].as_str().unwrap().into()),
            all: false,
            always: true,
        },
        &env,
    )
    .await
    .unwrap();
    run(&env).await;
    assert_eq!(mock.requests().len(), 1);
    write_rollout(home, "a001");
    run(&env).await;
    assert_eq!(
        mock.requests().len(),
        2,
        "always allowed: sent without waiting"
    );
    let text = execute(
        MemoriesCmd::Outgoing {
            text: false,
            json: false,
        },
        &env,
    )
    .await
    .unwrap();
    assert!(text.contains("always allowed: (no project)"), "{text}");
    mock.stop();
}
