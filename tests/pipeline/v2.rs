//! The V2 memory pipeline end to end: a V2-only state home runs phase 1 and phase 2 over the
//! real Codex fixture transcripts (`tests/data/sessions`, copied from the shared fixtures)
//! against a mock provider speaking OpenAI Chat Completions, into `memories_v2/` and
//! `state_v2.sqlite` only; then readiness reports it.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::Json;
use axum::extract::State;
use codex_free_core::config::{CONFIG_FILE, Config, MemoryVersion};
use codex_free_models::RetryPolicy;
use codex_free_pipeline::cli::{ControlEnv, MemoriesCmd, execute, readiness_with};
use codex_free_pipeline::phase2::Outcome;
use codex_free_pipeline::phase2::model::run_version_with_store;
use codex_free_pipeline::transcript_input::TranscriptInput;
use codex_free_secrets::{MemoryStore, SecretStore};
use codex_free_store::Store;
use codex_free_transcripts::discover::SourceRoots;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// pi-codex-memory `test/v2.test.mjs`'s `validSummary`, with content under each heading.
const SUMMARY: &str = "v1\n## User Profile\n- Developer working with AI coding agents.\n## User preferences\n- Always pnpm, never npm.\n## General Tips\n- Verify CI state live.\n## What's in Memory\n### fixtures\n- rollout_summaries/ — the fixture sessions.\n";

type Step = Vec<(&'static str, Value)>;

#[derive(Clone, Default)]
struct Mock {
    script: Arc<Mutex<VecDeque<Step>>>,
    phase1_bodies: Arc<Mutex<Vec<Value>>>,
    phase2_bodies: Arc<Mutex<Vec<Value>>>,
    /// Answer HTTP 500 to every V2 extraction (told apart by its instructions).
    fail_v2: Arc<std::sync::atomic::AtomicBool>,
}

fn usage() -> Value {
    json!({"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100})
}

async fn chat(State(m): State<Mock>, Json(body): Json<Value>) -> axum::response::Response {
    use axum::response::IntoResponse;
    let done = |message: Value, finish: &str| {
        Json(
            json!({"id": "chatcmpl-v2", "object": "chat.completion", "created": 0, "model": "mock-model",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage()}),
        )
        .into_response()
    };
    if body
        .get("tools")
        .is_some_and(|t| t.as_array().is_some_and(|a| !a.is_empty()))
    {
        m.phase2_bodies.lock().unwrap().push(body);
        let n = m.phase2_bodies.lock().unwrap().len();
        let step = m.script.lock().unwrap().pop_front().unwrap_or_default();
        if step.is_empty() {
            return done(
                json!({"role": "assistant", "content": "The summary is up to date."}),
                "stop",
            );
        }
        let calls: Vec<Value> = step
            .iter()
            .enumerate()
            .map(|(i, (name, args))| json!({"id": format!("call_{n}_{i}"), "type": "function", "function": {"name": name, "arguments": args.to_string()}}))
            .collect();
        return done(
            json!({"role": "assistant", "content": null, "tool_calls": calls}),
            "tool_calls",
        );
    }
    let text = body.to_string();
    let is_v2 = body["messages"][0]["content"]
        .as_str()
        .is_some_and(|t| t == codex_free_pipeline::phase1::SYSTEM_PROMPT_V2);
    m.phase1_bodies.lock().unwrap().push(body);
    if is_v2 && m.fail_v2.load(std::sync::atomic::Ordering::SeqCst) {
        return (
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({"error": {"message": "internal"}})),
        )
            .into_response();
    }
    let id = text
        .split("Session ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .unwrap_or("?")
        .to_string();
    let mut answer = json!({
        "rollout_summary": format!("In session {id} the user asked to always use pnpm."),
        "rollout_slug": format!("pnpm {id}"),
    });
    if !is_v2 {
        answer["raw_memory"] = json!(format!("- Always pnpm, never npm (session {id})."));
    }
    done(
        json!({"role": "assistant", "content": answer.to_string()}),
        "stop",
    )
}

async fn start(m: Mock) -> String {
    let app = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(chat))
        .with_state(m);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/v1/")
}

fn configure(home: &Path, base_url: &str) -> Config {
    configure_with(home, base_url, json!({"version": "v2"}))
}

fn configure_with(home: &Path, base_url: &str, extra: Value) -> Config {
    let mut m = json!({
        "extract_model": "local/mock-model",
        "consolidation_model": "local/mock-model",
        "sources": ["codex"],
        "max_rollouts_per_startup": 8,
        "providers": {"local": {"base_url": base_url, "api": "openai-chat"}},
        "prices": {"local/mock-model": {"input_per_mtok": 1.0, "output_per_mtok": 2.0}},
    });
    for (k, v) in extra.as_object().unwrap() {
        m[k] = v.clone();
    }
    let text = json!({ "memories": m }).to_string();
    let (cfg, warnings) = Config::parse(&text).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    cfg.save(&home.join(CONFIG_FILE)).unwrap();
    cfg
}

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

async fn phase2(home: &Path, cfg: &Config, force: bool) -> Outcome {
    let secrets = MemoryStore::default();
    run_version_with_store(
        home,
        cfg,
        Store::open_v2_in_home(home).unwrap(),
        MemoryVersion::V2,
        &secrets as &dyn SecretStore,
        RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(20),
            max_retry_after: Duration::from_secs(1),
        },
        "test",
        force,
        CancellationToken::new(),
    )
    .await
    .unwrap()
}

/// A V2-only home: phase 1 sends tiered evidence with the summary-only schema and stores
/// summaries (no raw memory) in `state_v2.sqlite`; phase 2 writes `memories_v2/` with a
/// valid V2 summary and no V1 file, refusing the agent's attempt to write `MEMORY.md`;
/// nothing of V1 (`state.sqlite` outputs, `memories/`) is written; readiness counts the
/// consolidated threads; an unchanged second run makes no model call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v2_only_home_runs_phase1_and_phase2_end_to_end() {
    let mock = Mock::default();
    let base = start(mock.clone()).await;
    let d = tempfile::tempdir().unwrap();
    let home = d.path();
    let cfg = configure(home, &base);
    let codex_home = home.join("codex-home");
    let n = copy_codex_fixtures(&codex_home);
    assert!(n >= 2, "fixtures present");
    let mut env = ControlEnv::new(home.to_path_buf(), Arc::new(MemoryStore::default()));
    env.input = Arc::new(TranscriptInput::new(SourceRoots {
        codex_home: Some(codex_home),
        ..Default::default()
    }));

    // Phase 1.
    let out = execute(MemoriesCmd::Run { json: false }, &env)
        .await
        .unwrap();
    assert!(out.contains("phase1 v2:"), "{out}");
    assert!(
        out.contains(&format!("{n} claimed, {n} with output")),
        "{out}"
    );
    let bodies = mock.phase1_bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), n);
    for b in &bodies {
        // The local provider runs in compatibility mode (no schema sent): the contract is
        // in the instructions, and the answer is validated locally.
        let system = b["messages"][0]["content"].as_str().unwrap();
        assert!(system.contains("\"rollout_slug\"") && !system.contains("raw_memory"));
        let text = b["messages"].to_string();
        assert!(text.contains("[human user]"), "tiered evidence: {text}");
        assert!(text.contains("[assistant final]"), "{text}");
    }
    // An injected environment block is labelled harness context, not human evidence.
    let all = serde_json::to_string(&bodies).unwrap();
    assert!(
        all.contains("[harness context]\\n<environment_context>"),
        "{all}"
    );
    let v2 = Store::open_v2_in_home(home).unwrap();
    let outputs = v2.phase2_candidates().unwrap();
    assert_eq!(outputs.len(), n);
    assert!(outputs.iter().all(|o| o.raw_memory.is_empty()));
    assert!(
        outputs
            .iter()
            .all(|o| o.rollout_summary.contains("always use pnpm"))
    );
    if home.join(codex_free_store::DB_FILE).exists() {
        let v1 = Store::open_in_home(home).unwrap();
        assert!(v1.phase2_candidates().unwrap().is_empty(), "V1 untouched");
    }

    // Phase 2: the agent first tries V1's MEMORY.md (refused by the V2 jail), then writes
    // the summary.
    mock.script.lock().unwrap().extend([
        vec![("list_files", json!({}))],
        vec![(
            "write_file",
            json!({"path": "MEMORY.md", "content": "# Memory\n"}),
        )],
        vec![(
            "write_file",
            json!({"path": "memory_summary.md", "content": SUMMARY}),
        )],
        vec![],
    ]);
    let out = phase2(home, &cfg, false).await;
    let Outcome::Consolidated { inputs, .. } = &out else {
        panic!("{out:?}")
    };
    assert_eq!(*inputs, n);
    let root = home.join("memories_v2");
    assert_eq!(
        std::fs::read_to_string(root.join("memory_summary.md")).unwrap(),
        SUMMARY
    );
    assert!(!root.join("MEMORY.md").exists());
    assert!(!root.join("raw_memories.md").exists());
    let summaries = std::fs::read_dir(root.join("rollout_summaries"))
        .unwrap()
        .count();
    assert_eq!(summaries, n);
    assert!(!home.join("memories").exists(), "no V1 folder");
    let bodies = mock.phase2_bodies.lock().unwrap().clone();
    let refusal = bodies[2]["messages"].to_string();
    assert!(
        refusal.contains("only memory_summary.md and files under skills/"),
        "{refusal}"
    );
    let log = std::fs::read_to_string(home.join("memories.log")).unwrap();
    assert!(
        log.contains("phase1 v2:") && log.contains("phase2 v2: succeeded"),
        "{log}"
    );

    // New sessions are served the active version's summary: V2's, with V2's citation rule;
    // the same home with v1 active has nothing to serve (no V1 folder).
    let served = codex_free_memory::readpath::summary_for_instructions(home, &cfg).unwrap();
    assert!(served.contains("- Always pnpm, never npm."), "{served}");
    assert!(
        served.contains("Do not cite `memory_summary.md`"),
        "{served}"
    );
    let mut v1 = cfg.clone();
    v1.memories.version = "v1".into();
    assert!(codex_free_memory::readpath::summary_for_instructions(home, &v1).is_none());

    // Readiness: n consolidated threads, a valid summary; the version stays as configured.
    let r = readiness_with(&env, n as u32).unwrap();
    assert!(r.v2.ready, "{:?}", r.v2);
    assert_eq!(r.v2.consolidated_threads, n as u32);
    assert!(!readiness_with(&env, n as u32 + 1).unwrap().v2.ready);
    let text = execute(MemoriesCmd::Readiness { minimum: None }, &env)
        .await
        .unwrap();
    assert!(
        text.contains(&format!(
            "v2: not ready — {n} of 20 consolidated threads; summary valid"
        )),
        "{text}"
    );

    // Nothing changed: a second run succeeds with no model request.
    let before = mock.phase2_bodies.lock().unwrap().len();
    let out = phase2(home, &cfg, true).await;
    assert!(matches!(out, Outcome::NoChanges { .. }), "{out:?}");
    assert_eq!(mock.phase2_bodies.lock().unwrap().len(), before);
}

/// Dual-write runs both pipelines on the same transcripts, independently: with the provider
/// failing only V2's requests, V1's run succeeds (outputs with raw memories in
/// `state.sqlite`) and V2's fails (nothing in `state_v2.sqlite`), the command reports the
/// V2 failure, and `memories.log` has one line per pipeline with its tokens and cost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dual_write_runs_both_pipelines_independently() {
    let mock = Mock::default();
    mock.fail_v2
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let base = start(mock.clone()).await;
    let d = tempfile::tempdir().unwrap();
    let home = d.path();
    configure_with(home, &base, json!({"dual_write": true}));
    let codex_home = home.join("codex-home");
    let n = copy_codex_fixtures(&codex_home);
    let mut env = ControlEnv::new(home.to_path_buf(), Arc::new(MemoryStore::default()));
    env.input = Arc::new(TranscriptInput::new(SourceRoots {
        codex_home: Some(codex_home),
        ..Default::default()
    }));
    env.retry = RetryPolicy {
        max_attempts: 1,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(20),
        max_retry_after: Duration::from_secs(1),
    };
    let (text, verdict) =
        codex_free_pipeline::cli::execute_with_verdict(MemoriesCmd::Run { json: false }, &env)
            .await
            .unwrap();
    let why = verdict.expect("the v2 run achieved nothing");
    assert!(why.starts_with("v2: memories run failed"), "{why}");
    assert!(!why.contains("v1:"), "{why}");
    assert!(text.contains("v1: ") && text.contains("v2: "), "{text}");
    let v1 = Store::open_in_home(home)
        .unwrap()
        .phase2_candidates()
        .unwrap();
    assert_eq!(v1.len(), n);
    assert!(v1.iter().all(|o| !o.raw_memory.is_empty()));
    let v2 = Store::open_v2_in_home(home).unwrap();
    assert!(v2.phase2_candidates().unwrap().is_empty());
    assert_eq!(
        v2.job_counts().unwrap().retrying,
        n as i64,
        "{:?}",
        v2.job_counts()
    );
    let log = std::fs::read_to_string(home.join("memories.log")).unwrap();
    let l1 = log.lines().find(|l| l.contains(" phase1: ")).unwrap();
    let l2 = log.lines().find(|l| l.contains(" phase1 v2: ")).unwrap();
    assert!(
        l1.contains(&format!(
            "{n} claimed, {n} with output, 0 no output, 0 failed"
        )),
        "{l1}"
    );
    assert!(
        l1.contains(&format!("{} tokens", n * 1100)) && l1.contains("$0."),
        "{l1}"
    );
    assert!(
        l2.contains(&format!(
            "{n} claimed, 0 with output, 0 no output, {n} failed"
        )),
        "{l2}"
    );
    assert!(l2.contains("0 tokens"), "{l2}");
}

/// The background scheduler's dual-write loop (not the CLI): started on a home with
/// `memories.dual_write`, its startup pass runs both pipelines over the same fixture
/// transcripts, each on its own database and folder, phase 1 then phase 2. With the provider
/// failing only V2's extractions, V1 still consolidates, V2 is left retrying with nothing
/// consolidated, and the loop's last error stays clear (the active version, V1, decides it).
/// A later trigger runs both again; a switch of `dual_write` in the file waits for the next
/// start (the loop keeps running V2).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schedulers_dual_write_loop_runs_both_pipelines_independently() {
    use crate::server::memory_versions::{Mock as VMock, V1_MARK, V2_MARK, start as vstart};
    use codex_free_pipeline::phase1::Trigger;
    use codex_free_pipeline::scheduler::Scheduler;
    use std::sync::atomic::Ordering;
    use std::time::Instant;

    async fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !f() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();

    for fail_v2 in [false, true] {
        let mock = VMock::default();
        mock.fail_v2.store(fail_v2, Ordering::SeqCst);
        let base = vstart(mock.clone()).await;
        let d = tempfile::tempdir().unwrap();
        let home = d.path().to_path_buf();
        let cfg = configure_with(&home, &base, json!({"dual_write": true}));
        let codex_home = home.join("codex-home");
        let n = copy_codex_fixtures(&codex_home);
        // Without the failure, one session arrives later, for the second pass.
        let late = crate::support::jsonl_under(&codex_home.join("sessions"))
            .into_iter()
            .next()
            .unwrap();
        let held = home.join("held.jsonl");
        if !fail_v2 {
            std::fs::rename(&late, &held).unwrap();
        }
        let first = if fail_v2 { n } else { n - 1 };
        let mut env = ControlEnv::new(home.clone(), Arc::new(MemoryStore::default()));
        env.input = Arc::new(TranscriptInput::new(SourceRoots {
            codex_home: Some(codex_home),
            ..Default::default()
        }));
        env.retry = RetryPolicy {
            max_attempts: 1,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(20),
            max_retry_after: Duration::from_secs(1),
        };
        let mut deps = env.scheduler_deps();
        deps.rescan_every = Duration::from_secs(3600);
        deps.watch = None;
        let cancel = CancellationToken::new();
        let sched = Scheduler::start(home.clone(), cfg, deps, cancel.clone()).unwrap();

        let (v1_summary, v2_summary) = (
            home.join("memories/memory_summary.md"),
            home.join("memories_v2/memory_summary.md"),
        );
        let log = home.join("memories.log");
        wait_until("V1's consolidation", || read(&v1_summary).contains(V1_MARK)).await;
        if fail_v2 {
            wait_until("V2's failed pass in memories.log", || {
                read(&log).contains(&format!("phase1 v2: {n} claimed, 0 with output"))
            })
            .await;
        } else {
            wait_until("V2's consolidation", || read(&v2_summary).contains(V2_MARK)).await;
        }
        // Each pipeline on its own database: V1 with raw memories, V2 summaries only.
        let v1 = Store::open_in_home(&home).unwrap();
        let v1_out = v1.phase2_candidates().unwrap();
        assert_eq!(v1_out.len(), first);
        assert!(v1_out.iter().all(|o| !o.raw_memory.is_empty()));
        let v2 = Store::open_v2_in_home(&home).unwrap();
        let v2_out = v2.phase2_candidates().unwrap();
        let runs = v2.recent_runs(10).unwrap();
        assert!(
            runs.iter()
                .filter(|r| r.phase == "phase1")
                .all(|r| r.trigger == "startup"),
            "{runs:?}"
        );
        if fail_v2 {
            assert!(v2_out.is_empty());
            assert_eq!(v2.job_counts().unwrap().retrying, n as i64);
            assert!(!v2_summary.exists(), "V2 consolidated nothing");
            assert_eq!(v2.max_consolidated_thread_count().unwrap(), 0);
            // The active version (V1) succeeded: the loop reports no failure.
            assert_eq!(sched.state().last_error(), None);
            assert_eq!(
                *mock.phase2_v2.lock().unwrap(),
                0,
                "no V2 consolidation request"
            );
        } else {
            assert_eq!(v2_out.len(), first);
            assert!(v2_out.iter().all(|o| o.raw_memory.is_empty()));
            assert!(!home.join("memories_v2/MEMORY.md").exists());
            assert!(read(&v1_summary).contains(V1_MARK) && !read(&v1_summary).contains(V2_MARK));
            wait_until("V2's phase 2 log line", || {
                read(&log).contains("phase2 v2: succeeded")
            })
            .await;
            assert_eq!(v2.max_consolidated_thread_count().unwrap(), first as u32);
            // `dual_write` switched off in the file waits for the next start: the late
            // session, at a later trigger, still reaches both pipelines.
            let mut c = Config::load(&home.join(CONFIG_FILE)).unwrap().config;
            c.memories.dual_write = false;
            c.save(&home.join(CONFIG_FILE)).unwrap();
            std::fs::rename(&held, &late).unwrap();
            let h = std::fs::File::options().write(true).open(&late).unwrap();
            h.set_modified(SystemTime::now() - Duration::from_secs(7 * 3600))
                .unwrap();
            sched.nudge(Trigger::Watch);
            wait_until("the late session in both databases", || {
                v2.phase2_candidates().unwrap().len() == n
                    && v1.phase2_candidates().unwrap().len() == n
            })
            .await;
        }
        assert_eq!(*mock.phase1_v1.lock().unwrap(), n);
        assert_eq!(*mock.phase1_v2.lock().unwrap(), n);
        let text = read(&log);
        assert!(
            text.lines().any(|l| l.contains(" phase1: ")
                && l.contains(&format!("{first} claimed, {first} with output"))),
            "{text}"
        );
        sched.shutdown().await;
        assert!(cancel.is_cancelled());
    }
}
