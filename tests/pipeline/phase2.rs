//! Phase 2 and the read path through the public surfaces: the MCP server over stdio and
//! HTTP (instructions carry the bounded summary; the `memories_*` tools' limits,
//! continuation lines and jail), and citations raising usage counts.

use std::path::Path;

use codex_free_core::config::Config;
use codex_free_memory::readpath::{self, SUMMARY_TOKEN_BUDGET};

use crate::support::{Env, call};

/// Write `files` into `<home>/memories/`.
fn seed_folder(home: &Path, files: &[(String, String)]) {
    for (p, c) in files {
        let path = home.join("memories").join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, c).unwrap();
    }
}

fn big_summary() -> String {
    let mut s = String::from(
        "v1\n## User Profile\n- backend developer\n## User preferences\n- always pnpm, never npm\n## General Tips\n",
    );
    for i in 0..1500 {
        s.push_str(&format!(
            "- tip {i}: verify the deploy state live before acting on it\n"
        ));
    }
    s.push_str("## What's in Memory\n- MEMORY.md: tooling rules\n");
    s
}

fn folder_files() -> Vec<(String, String)> {
    let mut files = vec![
        ("memory_summary.md".to_string(), big_summary()),
        (
            "MEMORY.md".to_string(),
            (1..=812)
                .map(|i| format!("- rule {i}: keep secrets out of logs\n"))
                .collect(),
        ),
        (
            "raw_memories.md".to_string(),
            "# Raw memories\n\n## rollout_id: thread-a\n\n- prefers pnpm\n".to_string(),
        ),
    ];
    for i in 0..2050 {
        files.push((
            format!("rollout_summaries/2025-01-01T00-00-00-{i:04}.md"),
            format!(
                "# Rollout summary\n\nrollout_id: thread-{i}\n\nSession {i} used pnpm workspaces.\n"
            ),
        ));
    }
    files
}

#[tokio::test]
async fn instructions_carry_bounded_summary_and_tools_page_over_stdio() {
    let env = Env::new(&[("a.txt", "hello\n")]);
    seed_folder(env.home(), &folder_files());
    env.write_config(serde_json::json!({"memories": {"dedicated_tools": true}}));
    // No scheduler: its phase 2 would sync this hand-seeded folder with the (empty) database.
    let client = env.stdio(&["--no-pipeline"]).await;
    let info = client.peer_info().expect("server info");
    let instr = info.instructions.clone().unwrap_or_default();
    let start = instr
        .find("## Memory from earlier sessions")
        .expect("memory block in instructions");
    let block = &instr[start..];
    let n = codex_free_core::tokens::count(block);
    assert!(n <= SUMMARY_TOKEN_BUDGET, "memory block is {n} tokens");
    assert!(block.contains("- always pnpm, never npm") && block.contains("<oai-mem-citation>"));
    // The seeded summary is over its byte budget, which cuts before the token budget does.
    assert!(block.ends_with("(memory summary cut to its line and byte budget)\n"));

    let tools: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    for t in [
        "memories_list",
        "memories_search",
        "memories_read",
        "memories_add_ad_hoc_note",
    ] {
        assert!(tools.contains(&t.to_string()), "{t} registered: {tools:?}");
    }

    let (out, err) = call(&client, "memories_list", serde_json::json!({})).await;
    assert!(!err, "{out}");
    assert_eq!(
        out.lines().count(),
        2001,
        "2,000 entries and the continuation line"
    );
    assert!(
        out.trim_end().ends_with(
            "(showing entries 1-2000 of 2054 — call again with offset=2000 for the rest)"
        ),
        "{}",
        out.lines().last().unwrap()
    );

    let (out, _) = call(
        &client,
        "memories_read",
        serde_json::json!({"path": "MEMORY.md", "limit": 200}),
    )
    .await;
    assert!(
        out.trim_end()
            .ends_with("(showing lines 1-200 of 812 — call again with offset=200 for the rest)"),
        "{out}"
    );
    let (out, _) = call(
        &client,
        "memories_read",
        serde_json::json!({"path": "MEMORY.md", "offset": 800}),
    )
    .await;
    assert!(
        out.starts_with("- rule 801:") && !out.contains("showing"),
        "{out}"
    );

    let (out, _) = call(
        &client,
        "memories_search",
        serde_json::json!({"query": "pnpm workspaces"}),
    )
    .await;
    assert_eq!(
        out.lines().count(),
        201,
        "200 matches and the continuation line"
    );
    assert!(
        out.lines()
            .last()
            .unwrap()
            .starts_with("(showing matches 1-200 of "),
        "{out}"
    );

    for bad in ["../codex.config.json", "/etc/passwd", ".git/config"] {
        let (out, err) = call(&client, "memories_read", serde_json::json!({"path": bad})).await;
        assert!(
            err && out.starts_with("error[path_outside_root]"),
            "{bad}: {out}"
        );
    }
    let (out, err) = call(
        &client,
        "memories_add_ad_hoc_note",
        serde_json::json!({"note": "use pnpm in this repo"}),
    )
    .await;
    assert!(!err && out.starts_with("Queued note "), "{out}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn memory_tools_are_absent_by_default_and_summary_survives_http() {
    let env = Env::new(&[("a.txt", "hello\n")]);
    seed_folder(
        env.home(),
        &[(
            "memory_summary.md".into(),
            "v1\n## User Profile\n- likes short answers\n".into(),
        )],
    );
    // No scheduler: this hand-seeded summary fails the memory checks, so phase 2 would
    // (rightly) set it aside before the client connects.
    let srv = env.http(&["--no-pipeline"]).await;
    let client = srv.client().await;
    let instr = client
        .peer_info()
        .unwrap()
        .instructions
        .clone()
        .unwrap_or_default();
    assert!(instr.contains("- likes short answers"), "{instr}");
    let tools = client.list_all_tools().await.unwrap();
    assert!(
        !tools.iter().any(|t| t.name.starts_with("memories_")),
        "dedicated_tools defaults to false"
    );
    client.cancel().await.unwrap();
}

#[test]
fn use_memories_off_hides_summary() {
    let home = tempfile::tempdir().unwrap();
    seed_folder(
        home.path(),
        &[("memory_summary.md".into(), "v1\n- x\n".into())],
    );
    let mut cfg = Config::default();
    assert!(readpath::summary_for_instructions(home.path(), &cfg).is_some());
    cfg.memories.use_memories = false;
    assert!(readpath::summary_for_instructions(home.path(), &cfg).is_none());
    let e = readpath::memories_list(home.path(), &cfg, &Default::default()).unwrap_err();
    assert_eq!(e.code(), "refused");
}

// ---------------------------------------------------------------------------------------
// End to end: phase 1 then phase 2 against a mock provider speaking OpenAI Chat
// Completions (tool calls included), real `state.sqlite`, real memory folder.

mod e2e {
    use std::collections::VecDeque;
    use std::path::Path;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, SystemTime};

    use axum::Json;
    use axum::extract::State;
    use codex_free_core::config::{CONFIG_FILE, Config};
    use codex_free_memory::budget;
    use codex_free_memory::folder::MemoryFolder;
    use codex_free_models::RetryPolicy;
    use codex_free_pipeline::cli::{ControlEnv, MemoriesCmd, execute};
    use codex_free_pipeline::phase1::TextDirInput;
    use codex_free_pipeline::phase2::Outcome;
    use codex_free_pipeline::phase2::model::run_with_store;
    use codex_free_pipeline::transcript_input::TranscriptInput;
    use codex_free_secrets::{MemoryStore, SecretStore};
    use codex_free_store::Store;
    use codex_free_transcripts::discover::SourceRoots;
    use serde_json::{Value, json};
    use tokio_util::sync::CancellationToken;

    /// Copy the real Codex fixture transcripts (`tests/data`, from the shared fixtures)
    /// into `dst` with their mtime 7 hours back so they count as idle; returns how many.
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

    /// A scripted phase-2 step: tool calls `(name, arguments)`, or none (the agent stops).
    type Step = Vec<(&'static str, Value)>;

    #[derive(Clone, Default)]
    struct Mock {
        script: Arc<Mutex<VecDeque<Step>>>,
        phase2_bodies: Arc<Mutex<Vec<Value>>>,
        phase1_requests: Arc<Mutex<usize>>,
        /// Answer phase-2 requests with an OpenAI-format 400 error (not retried).
        fail_phase2: Arc<Mutex<bool>>,
    }

    fn usage() -> Value {
        json!({"prompt_tokens": 1200, "completion_tokens": 150, "total_tokens": 1350, "prompt_tokens_details": {"cached_tokens": 200}})
    }

    async fn chat(State(m): State<Mock>, Json(body): Json<Value>) -> axum::response::Response {
        use axum::response::IntoResponse as _;
        if body
            .get("tools")
            .is_some_and(|t| t.as_array().is_some_and(|a| !a.is_empty()))
            && *m.fail_phase2.lock().unwrap()
        {
            m.phase2_bodies.lock().unwrap().push(body);
            return (
                axum::http::StatusCode::BAD_REQUEST,
                Json(json!({"error": {"message": "Invalid schema for function 'write_file'", "type": "invalid_request_error", "param": "tools", "code": null}})),
            )
                .into_response();
        }
        chat_ok(m, body).into_response()
    }

    fn chat_ok(m: Mock, body: Value) -> Json<Value> {
        if body
            .get("tools")
            .is_some_and(|t| t.as_array().is_some_and(|a| !a.is_empty()))
        {
            m.phase2_bodies.lock().unwrap().push(body);
            let step = m.script.lock().unwrap().pop_front().unwrap_or_default();
            let n = m.phase2_bodies.lock().unwrap().len();
            let message = if step.is_empty() {
                json!({"role": "assistant", "content": "Consolidated the memory."})
            } else {
                let calls: Vec<Value> = step
                    .iter()
                    .enumerate()
                    .map(|(i, (name, args))| json!({"id": format!("call_{n}_{i}"), "type": "function", "function": {"name": name, "arguments": args.to_string()}}))
                    .collect();
                json!({"role": "assistant", "content": null, "tool_calls": calls})
            };
            let finish = if step.is_empty() {
                "stop"
            } else {
                "tool_calls"
            };
            return Json(
                json!({"id": "chatcmpl-p2", "object": "chat.completion", "created": 0, "model": "mock-model",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage()}),
            );
        }
        *m.phase1_requests.lock().unwrap() += 1;
        let text = body.to_string();
        let id = text
            .split("Session ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .unwrap_or("?")
            .to_string();
        let answer = json!({
            "rollout_summary": format!("In session {id} the user set up the build and asked to always use pnpm."),
            "rollout_slug": format!("pnpm build {id}"),
            "raw_memory": format!("- The user always uses pnpm, never npm (session {id}).\n- Verify the CI state live before reporting it."),
        });
        Json(
            json!({"id": "chatcmpl-p1", "object": "chat.completion", "created": 0, "model": "mock-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer.to_string()}, "finish_reason": "stop"}], "usage": usage()}),
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
        let text = json!({"memories": {
            "extract_model": "local/mock-model",
            "consolidation_model": "local/mock-model",
            "sources": ["codex"],
            "max_rollouts_per_startup": 8,
            "providers": {"local": {"base_url": base_url, "api": "openai-chat"}},
        }})
        .to_string();
        let (cfg, warnings) = Config::parse(&text).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        cfg.save(&home.join(CONFIG_FILE)).unwrap();
        cfg
    }

    fn write_rollouts(home: &Path, ids: &[&str]) {
        let dir = home.join("rollouts").join("codex");
        std::fs::create_dir_all(&dir).unwrap();
        for id in ids {
            let p = dir.join(format!("{id}.txt"));
            std::fs::write(&p, format!("user: always use pnpm, never npm. Fix the build of {id}.\nassistant: done with pnpm install\n")).unwrap();
            let f = std::fs::File::options().write(true).open(&p).unwrap();
            f.set_modified(SystemTime::now() - Duration::from_secs(7 * 3600))
                .unwrap();
        }
    }

    fn retry() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(20),
            max_retry_after: Duration::from_secs(1),
        }
    }

    fn summary() -> String {
        let s = budget::SUMMARY_SECTIONS;
        format!(
            "v1\n{}\n- Developer who works through AI agents.\n{}\n- Always pnpm, never npm.\n{}\n- Verify CI state live.\n{}\n- MEMORY.md: tooling rules.\n",
            s[0], s[1], s[2], s[3]
        )
    }

    fn good_script(ids: &[String]) -> Vec<Step> {
        vec![
            vec![("list_files", json!({}))],
            vec![("read_file", json!({"path": "raw_memories.md"}))],
            vec![
                (
                    "write_file",
                    json!({"path": "MEMORY.md", "content": format!("# Memory\n\n## Tooling\n\n- Always use pnpm, never npm (rollouts: {}).\n- CI state changes: verify it at task start.\n", ids.join(", "))}),
                ),
                (
                    "write_file",
                    json!({"path": "memory_summary.md", "content": summary()}),
                ),
            ],
            vec![],
        ]
    }

    async fn phase2(home: &Path, cfg: &Config, force: bool) -> Outcome {
        let secrets = MemoryStore::default();
        let store = Store::open_in_home(home).unwrap();
        run_with_store(
            home,
            cfg,
            store,
            &secrets as &dyn SecretStore,
            retry(),
            "test",
            force,
            CancellationToken::new(),
        )
        .await
        .unwrap()
    }

    /// `memories consolidate --preview`: phase 2's first request from a dry run on a copy,
    /// sent nowhere and written nowhere (no memory folder, no job or run change); the real
    /// consolidation that follows sends exactly those bytes (its first receipt carries the
    /// preview's hash). Before: no preview existed.
    #[tokio::test]
    async fn consolidate_preview_equals_the_first_request_and_writes_nothing() {
        let mock = Mock::default();
        let base = start(mock.clone()).await;
        let d = tempfile::tempdir().unwrap();
        let home = d.path();
        let cfg = configure(home, &base);
        let codex_home = home.join("codex-home");
        let n = copy_codex_fixtures(&codex_home);
        let mut env = ControlEnv::new(home.to_path_buf(), Arc::new(MemoryStore::default()));
        env.input = Arc::new(TranscriptInput::new(SourceRoots {
            codex_home: Some(codex_home),
            ..Default::default()
        }));
        execute(MemoriesCmd::Run { json: false }, &env)
            .await
            .unwrap();
        let s = Store::open_in_home(home).unwrap();
        let (jobs, runs) = (s.job_counts().unwrap(), s.recent_runs(50).unwrap());
        let p = codex_free_pipeline::phase2::preview::preview(
            home,
            &cfg,
            codex_free_core::config::MemoryVersion::V1,
            &MemoryStore::default(),
        )
        .await
        .unwrap();
        let sha = p.sha256.clone().unwrap_or_else(|| panic!("{p:?}"));
        let sealed: serde_json::Value = serde_json::from_str(p.sealed.as_deref().unwrap()).unwrap();
        assert!(!sealed["tools"].as_array().unwrap().is_empty(), "{sealed}");
        assert!(p.input_tokens > 100 && p.bytes > 1000, "{p:?}");
        assert!(p.render().contains("nothing was sent"));
        assert!(
            mock.phase2_bodies.lock().unwrap().is_empty(),
            "nothing sent"
        );
        assert!(!home.join("memories").exists(), "no memory folder written");
        assert_eq!(s.job_counts().unwrap(), jobs, "no job state changed");
        assert_eq!(s.recent_runs(50).unwrap(), runs, "no run recorded");

        let ids: Vec<String> = s
            .phase2_candidates()
            .unwrap()
            .into_iter()
            .map(|m| m.thread_id)
            .collect();
        assert_eq!(ids.len(), n);
        mock.script.lock().unwrap().extend(good_script(&ids));
        let out = phase2(home, &cfg, false).await;
        assert!(matches!(out, Outcome::Consolidated { .. }), "{out:?}");
        let run = s
            .recent_runs(10)
            .unwrap()
            .into_iter()
            .find(|r| r.phase == "phase2")
            .unwrap();
        let rows = s.run_usage(&run.id).unwrap();
        let first = rows.iter().min_by_key(|r| r.request_no).unwrap();
        assert_eq!(
            first.sent_sha256.as_deref(),
            Some(sha.as_str()),
            "the preview is the first request byte for byte"
        );
        assert_eq!(first.sent_bytes, Some(p.bytes as i64));
    }

    /// A phase-2 request that passed the outgoing gate and that the provider then refused
    /// still left the machine: its usage row says failed and carries the receipt (hash and
    /// size of the bytes that left), and those bytes are kept for `keep_sent_days`. Before:
    /// the failed row had no receipt.
    #[tokio::test]
    async fn a_provider_failure_after_sealing_keeps_the_receipt() {
        let mock = Mock::default();
        *mock.fail_phase2.lock().unwrap() = true;
        let base = start(mock.clone()).await;
        let d = tempfile::tempdir().unwrap();
        let home = d.path();
        let cfg = configure(home, &base);
        inbox_note(home);
        let out = phase2(home, &cfg, false).await;
        assert!(!matches!(out, Outcome::Consolidated { .. }), "{out:?}");
        assert_eq!(
            mock.phase2_bodies.lock().unwrap().len(),
            1,
            "one request left"
        );
        let s = Store::open_in_home(home).unwrap();
        let run = s
            .recent_runs(10)
            .unwrap()
            .into_iter()
            .find(|r| r.phase == "phase2")
            .unwrap_or_else(|| panic!("no phase-2 run: {out:?}"));
        let rows = s.run_usage(&run.id).unwrap();
        assert_eq!(rows.len(), 1, "{rows:?}");
        let row = &rows[0];
        assert_ne!(row.outcome, "ok", "{row:?}");
        let sha = row
            .sent_sha256
            .clone()
            .unwrap_or_else(|| panic!("a failed request that left has a receipt: {row:?}"));
        let sent = serde_json::to_vec(&mock.phase2_bodies.lock().unwrap()[0]).unwrap();
        assert!(row.sent_bytes.unwrap_or(0) > 1000, "{row:?}");
        assert!(
            (row.sent_bytes.unwrap() - sent.len() as i64).abs() < sent.len() as i64 / 2,
            "the receipt's size is the request's: {} vs {}",
            row.sent_bytes.unwrap(),
            sent.len()
        );
        assert_eq!(sha.len(), 64);
    }

    #[tokio::test]
    async fn phase1_then_phase2_commits_within_budget_and_idles_without_requests() {
        let mock = Mock::default();
        let base = start(mock.clone()).await;
        let d = tempfile::tempdir().unwrap();
        let home = d.path();
        let cfg = configure(home, &base);
        // Phase 1 on the real fixture transcripts, through the production input.
        let codex_home = home.join("codex-home");
        let n = copy_codex_fixtures(&codex_home);
        assert!(n >= 2, "fixtures present");
        let mut env = ControlEnv::new(home.to_path_buf(), Arc::new(MemoryStore::default()));
        env.input = Arc::new(TranscriptInput::new(SourceRoots {
            codex_home: Some(codex_home),
            ..Default::default()
        }));
        let out = execute(MemoriesCmd::Run { json: false }, &env)
            .await
            .unwrap();
        assert!(
            out.contains(&format!("{n} claimed, {n} with output")),
            "{out}"
        );
        assert_eq!(*mock.phase1_requests.lock().unwrap(), n);

        let ids: Vec<String> = Store::open_in_home(home)
            .unwrap()
            .phase2_candidates()
            .unwrap()
            .into_iter()
            .map(|m| m.thread_id)
            .collect();
        assert_eq!(ids.len(), n);
        mock.script.lock().unwrap().extend(good_script(&ids));
        let out = phase2(home, &cfg, false).await;
        let Outcome::Consolidated {
            report, changes, ..
        } = &out
        else {
            panic!("{out:?}")
        };
        assert_eq!(report.requests, 4);
        assert!(report.refused.is_empty(), "{:?}", report.refused);
        assert!(changes.iter().any(|c| c.path == "MEMORY.md"));

        // Real wire format: tools offered as functions, tool results sent back by id.
        let bodies = mock.phase2_bodies.lock().unwrap().clone();
        assert_eq!(bodies.len(), 4);
        let tools: Vec<&str> = bodies[0]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            tools,
            ["list_files", "read_file", "write_file", "edit_file"]
        );
        let last = bodies[3]["messages"].as_array().unwrap();
        assert!(
            last.iter()
                .any(|m| m["role"] == "tool" && m["tool_call_id"] == "call_3_0"),
            "tool results carry the call id"
        );

        // Both artifacts within budget, one commit, clean tree.
        let f = MemoryFolder::open(home).unwrap().unwrap();
        assert!(budget::check(f.root(), &budget::ArtifactBudget::default()).is_empty());
        let h = f.history(10).unwrap();
        assert_eq!(h.len(), 1);
        assert!(
            h[0].subject
                .starts_with(&format!("Initialize memory from {n} raw memories")),
            "{}",
            h[0].subject
        );
        assert!(!f.workspace_diff(0).unwrap().has_changes());
        assert_eq!(
            std::fs::read_dir(f.root().join("rollout_summaries"))
                .unwrap()
                .count(),
            n
        );

        // Usage accounted: one phase-2 run with 4 requests and a log line.
        let runs = Store::open_in_home(home).unwrap().recent_runs(10).unwrap();
        let r = runs
            .iter()
            .find(|r| r.phase == "phase2")
            .expect("phase-2 run");
        assert_eq!(
            (
                r.requests,
                r.input_tokens,
                r.cached_input_tokens,
                r.output_tokens
            ),
            (4, 4800, 800, 600)
        );
        // Each phase-2 request has its receipt, as phase 1's: hash and size of the sealed
        // bytes, distinct per request (the conversation grows).
        let rows = Store::open_in_home(home).unwrap().run_usage(&r.id).unwrap();
        assert_eq!(rows.len(), 4);
        let hashes: std::collections::BTreeSet<_> = rows
            .iter()
            .map(|u| u.sent_sha256.clone().expect("a receipt"))
            .collect();
        assert_eq!(hashes.len(), 4);
        assert!(rows.iter().all(|u| u.sent_bytes.unwrap_or(0) > 1000));
        let log = std::fs::read_to_string(home.join("memories.log")).unwrap();
        assert!(
            log.lines().any(|l| l.contains(
                "phase2: succeeded, usage requests=4 input=4800 cacheRead=800 output=600"
            )),
            "{log}"
        );

        // Second run with no new input (forced past the cooldown): zero model requests.
        let out = phase2(home, &cfg, true).await;
        assert!(
            matches!(out, Outcome::NoChanges { inputs } if inputs == n),
            "{out:?}"
        );
        assert_eq!(mock.phase2_bodies.lock().unwrap().len(), 4, "no request");
        assert_eq!(f.history(10).unwrap().len(), 1, "no commit");
        // And without force, the 6 h cooldown applies.
        let out = phase2(home, &cfg, false).await;
        assert!(
            matches!(out, Outcome::Skipped { ref reason, .. } if reason == "cooldown"),
            "{out:?}"
        );

        // A citation in a later session raises the cited memory's usage count.
        let s = Store::open_in_home(home).unwrap();
        let text = format!(
            "Done.\n<oai-mem-citation>\n<citation_entries>\nMEMORY.md:5-5|note=[pnpm rule]\n</citation_entries>\n<rollout_ids>\n{}\n</rollout_ids>\n</oai-mem-citation>\n",
            ids[0]
        );
        let db = codex_free_pipeline::phase2::db::Phase2Db {
            store: s.clone(),
            home: home.to_path_buf(),
            price: None,
            spend_cap_usd: None,
            version: codex_free_core::config::MemoryVersion::V1,
        };
        assert_eq!(
            codex_free_pipeline::phase2::record_citations(&db, &text).unwrap(),
            1
        );
        let o = s.stage1_output(&ids[0]).unwrap().unwrap();
        assert_eq!(o.usage_count, 1);
        assert!(o.last_usage.is_some());
    }

    /// Every blob reachable from any ref of the memory folder's repository, as text.
    fn all_blobs(root: &Path) -> String {
        let repo = git2::Repository::open(root).unwrap();
        let mut out = String::new();
        repo.odb()
            .unwrap()
            .foreach(|id| {
                if let Ok(b) = repo.find_blob(*id) {
                    out.push_str(&String::from_utf8_lossy(b.content()));
                }
                true
            })
            .unwrap();
        out
    }

    #[tokio::test]
    async fn secrets_in_an_ad_hoc_note_reach_no_file_commit_or_request() {
        use codex_free_memory::readpath::{MemoriesAddAdHocNoteArgs, memories_add_ad_hoc_note};
        let mock = Mock::default();
        let base = start(mock.clone()).await;
        let d = tempfile::tempdir().unwrap();
        let home = d.path();
        let mut cfg = configure(home, &base);
        cfg.memories.dedicated_tools = true;
        let planted = [
            "AKIAIOSFODNN7EXAMPLE",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "hunter2-Secret!",
        ];
        let args = MemoriesAddAdHocNoteArgs {
            note: format!(
                "Deploy uses AWS key {} and GitHub token {}; db password: {}. Keep pnpm.",
                planted[0], planted[1], planted[2]
            ),
            title: Some(format!("creds {}", planted[1])),
        };
        memories_add_ad_hoc_note(home, &cfg, &args).unwrap();
        // A note dropped into the inbox by hand is redacted too.
        std::fs::write(
            home.join("memories_inbox")
                .join("2099-01-01T00-00-00-hand.md"),
            format!("# Hand\n\napi_key = {}\n", planted[2]),
        )
        .unwrap();
        mock.script.lock().unwrap().extend(good_script(&[]));
        let out = phase2(home, &cfg, false).await;
        assert!(matches!(out, Outcome::Consolidated { .. }), "{out:?}");
        let bodies = serde_json::to_string(&*mock.phase2_bodies.lock().unwrap()).unwrap();
        assert!(bodies.contains("Keep pnpm"), "the note reached the model");
        let f = MemoryFolder::open(home).unwrap().unwrap();
        let mut files = String::new();
        for e in walkdir(f.root()) {
            files.push_str(&std::fs::read_to_string(e).unwrap_or_default());
        }
        let history = all_blobs(f.root());
        assert!(history.contains("Keep pnpm"));
        for p in planted {
            assert!(!bodies.contains(p), "{p} reached the model");
            assert!(!files.contains(p), "{p} is in the folder");
            assert!(!history.contains(p), "{p} is in the folder's history");
        }
    }

    /// The outgoing gate: a key the model itself writes into a tool call is redacted in
    /// every later request that carries that call back (the agent's history), and the memory
    /// folder never keeps it.
    #[tokio::test]
    async fn a_key_in_the_models_own_tool_call_never_goes_back_out() {
        let mock = Mock::default();
        let base = start(mock.clone()).await;
        let d = tempfile::tempdir().unwrap();
        let home = d.path();
        let cfg = configure(home, &base);
        let key = "AKIAIOSFODNN7EXAMPLE";
        let mut script = vec![vec![(
            "write_file",
            json!({"path": "notes.md", "content": format!("- deploy with aws key {key}\n")}),
        )]];
        script.extend(good_script(&[]));
        mock.script.lock().unwrap().extend(script);
        inbox_note(home);
        let out = phase2(home, &cfg, false).await;
        let bodies = mock.phase2_bodies.lock().unwrap().clone();
        assert!(
            bodies.len() >= 2,
            "{out:?}: the agent's call went back at least once"
        );
        let later = serde_json::to_string(&bodies[1..]).unwrap();
        assert!(
            later.contains("write_file") && later.contains("deploy with aws key"),
            "the call itself is still in the history"
        );
        assert!(!later.contains(key), "the key went back to the provider");
        let f = MemoryFolder::open(home).unwrap().unwrap();
        assert!(
            !all_blobs(f.root()).contains(key),
            "the key is in the folder's history"
        );
    }

    /// One note in the inbox: work for phase 2 without any rollout.
    fn inbox_note(home: &Path) {
        std::fs::create_dir_all(home.join("memories_inbox")).unwrap();
        std::fs::write(
            home.join("memories_inbox").join("2099-01-01T00-00-00-n.md"),
            "# Note\n\nKeep pnpm.\n",
        )
        .unwrap();
    }

    fn walkdir(dir: &Path) -> Vec<std::path::PathBuf> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if e.file_name() == ".git" {
                continue;
            }
            if p.is_dir() {
                out.extend(walkdir(&p));
            } else {
                out.push(p);
            }
        }
        out
    }

    #[tokio::test]
    async fn an_agent_that_stays_over_budget_fails_and_keeps_the_previous_commit() {
        let mock = Mock::default();
        let base = start(mock.clone()).await;
        let d = tempfile::tempdir().unwrap();
        let home = d.path();
        let cfg = configure(home, &base);
        write_rollouts(home, &["r001"]);
        let mut env = ControlEnv::new(home.to_path_buf(), Arc::new(MemoryStore::default()));
        env.input = Arc::new(TextDirInput::new(home.join("rollouts")));
        execute(MemoriesCmd::Run { json: false }, &env)
            .await
            .unwrap();
        let ids: Vec<String> = Store::open_in_home(home)
            .unwrap()
            .phase2_candidates()
            .unwrap()
            .into_iter()
            .map(|m| m.thread_id)
            .collect();
        mock.script.lock().unwrap().extend(good_script(&ids));
        assert!(matches!(
            phase2(home, &cfg, false).await,
            Outcome::Consolidated { .. }
        ));
        let f = MemoryFolder::open(home).unwrap().unwrap();
        let head = f.head().unwrap();
        let memory = std::fs::read_to_string(f.root().join("MEMORY.md")).unwrap();

        // New input arrives; the agent writes 400 lines, is asked to cut, and does not.
        write_rollouts(home, &["r002"]);
        execute(MemoriesCmd::Run { json: false }, &env)
            .await
            .unwrap();
        let long: String = (0..400).map(|i| format!("- fact {i}\n")).collect();
        mock.script.lock().unwrap().extend([
            vec![("write_file", json!({"path": "MEMORY.md", "content": long}))],
            vec![],
            vec![(
                "edit_file",
                json!({"path": "MEMORY.md", "old_text": "- fact 0\n", "new_text": ""}),
            )],
            vec![],
        ]);
        let out = phase2(home, &cfg, true).await;
        let Outcome::Failed { reason, .. } = &out else {
            panic!("{out:?}")
        };
        assert!(
            reason.contains("MEMORY.md: 399 lines, over the budget of 150 lines"),
            "{reason}"
        );
        let bodies = mock.phase2_bodies.lock().unwrap().clone();
        let repair = bodies.last().unwrap()["messages"].to_string();
        assert!(
            repair.contains("400 lines, over the budget of 150 lines"),
            "the repair turn names the problem"
        );
        assert_eq!(f.head().unwrap(), head, "previous commit intact");
        assert_eq!(
            std::fs::read_to_string(f.root().join("MEMORY.md")).unwrap(),
            memory
        );
        assert!(!f.workspace_diff(0).unwrap().has_changes());
        let job = Store::open_in_home(home)
            .unwrap()
            .phase2_job()
            .unwrap()
            .unwrap();
        assert_eq!(job.status, "error");
        assert!(job.last_error.unwrap().contains("over the budget"));
        assert!(job.retry_at.is_some());
    }
}

/// A later Codex session (a real fixture transcript plus one assistant message carrying a
/// citation block) raises the cited memory's usage count; `memories_read` of a rollout
/// summary does too.
#[test]
fn citations_in_a_real_transcript_and_memory_reads_raise_usage() {
    use codex_free_pipeline::phase2::db::Phase2Db;
    use codex_free_pipeline::phase2::record_rollout_citations;
    use codex_free_store::{ClaimParams, Stage1OutputInput, Store, ThreadUpsert};
    use codex_free_transcripts::rollout::Source;

    let home = tempfile::tempdir().unwrap();
    let store = Store::open_in_home(home.path()).unwrap();
    let now = store.now();
    // Two stored memories to cite, through phase 1's own claim/succeed calls.
    let threads: Vec<ThreadUpsert> = ["mem-a", "mem-b"]
        .iter()
        .map(|id| ThreadUpsert {
            id: id.to_string(),
            source: "codex".into(),
            path: format!("/x/{id}.jsonl"),
            cwd: None,
            title: None,
            created_at: None,
            updated_at: now - 7 * 3600,
            is_subagent: false,
            is_ephemeral: false,
            content_hash: None,
        })
        .collect();
    store.upsert_threads(&threads, true).unwrap();
    let params = ClaimParams {
        sources: vec!["codex".into()],
        max_claimed: 8,
        max_running: 8,
        max_age_days: 10,
        min_idle_hours: 6,
        lease_seconds: 3600,
        worker_id: "t".into(),
        force: false,
        exclude: Default::default(),
    };
    let claims = store.claim_stage1_jobs(&params).unwrap();
    assert_eq!(claims.len(), 2);
    for c in &claims {
        let out = Stage1OutputInput {
            raw_memory: "- use pnpm",
            rollout_summary: "pnpm session",
            rollout_slug: None,
        };
        assert!(store.mark_stage1_succeeded(c, &out).unwrap());
    }

    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sessions/codex/sessions");
    let original = crate::support::jsonl_under(&fixtures)
        .into_iter()
        .next()
        .expect("a Codex fixture transcript");
    let copy = home.path().join("later.jsonl");
    let mut text = std::fs::read_to_string(&original).unwrap();
    let cite = "Done, using pnpm.\n\n<oai-mem-citation>\n<citation_entries>\nMEMORY.md:3-3|note=[pnpm rule]\n</citation_entries>\n<rollout_ids>\nmem-a\n</rollout_ids>\n</oai-mem-citation>";
    let line = serde_json::json!({"timestamp": "2026-11-29T13:00:00.000Z", "type": "response_item",
        "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": cite}]}});
    text.push_str(&format!("{line}\n"));
    std::fs::write(&copy, text).unwrap();
    let rollout = codex_free_transcripts::sources::parse_file(&copy, Source::Codex).unwrap();

    let db = Phase2Db {
        store: store.clone(),
        home: home.path().to_path_buf(),
        price: None,
        spend_cap_usd: None,
        version: codex_free_core::config::MemoryVersion::V1,
    };
    assert_eq!(record_rollout_citations(&db, &rollout).unwrap(), 1);
    let a = store.stage1_output("mem-a").unwrap().unwrap();
    assert_eq!((a.usage_count, a.last_usage.is_some()), (1, true));
    assert_eq!(
        store.stage1_output("mem-b").unwrap().unwrap().usage_count,
        0
    );

    // Reading mem-b's rollout summary through memories_read counts as a use.
    let stem = codex_free_memory::select::rollout_stem(now - 7 * 3600, "mem-b", None);
    seed_folder(
        home.path(),
        &[(
            format!("rollout_summaries/{stem}.md"),
            "# Rollout summary\n\nrollout_id: mem-b\n\npnpm session\n".into(),
        )],
    );
    let args = readpath::MemoriesReadArgs {
        path: format!("rollout_summaries/{stem}.md"),
        ..Default::default()
    };
    let out = readpath::memories_read(home.path(), &Config::default(), &args).unwrap();
    assert!(out.contains("pnpm session"));
    assert_eq!(
        store.stage1_output("mem-b").unwrap().unwrap().usage_count,
        1
    );
}

/// `memories rollback` refuses while the phase-2 job holds a live lease, then restores an
/// older state as a new commit with a backup ref.
#[test]
fn rollback_refuses_during_a_run_and_restores_as_new_commit() {
    use codex_free_memory::cli::MemoryHistoryCmd;
    use codex_free_memory::folder::MemoryFolder;
    use codex_free_pipeline::phase2::model::history_command_in_home;
    use codex_free_store::Store;

    let home = tempfile::tempdir().unwrap();
    let (f, _) = MemoryFolder::open_or_init(home.path()).unwrap();
    std::fs::write(f.root().join("MEMORY.md"), "# Memory\n\n- first\n").unwrap();
    let first = f
        .commit_all(
            &codex_free_memory::gate::approve_as_is(&f).unwrap(),
            "first",
        )
        .unwrap()
        .unwrap();
    std::fs::write(f.root().join("MEMORY.md"), "# Memory\n\n- second\n").unwrap();
    f.commit_all(
        &codex_free_memory::gate::approve_as_is(&f).unwrap(),
        "second",
    )
    .unwrap()
    .unwrap();

    let store = Store::open_in_home(home.path()).unwrap();
    let claim = store.claim_phase2("other-process", 3600, true).unwrap();
    let cmd = MemoryHistoryCmd::Rollback {
        rev: first.to_string(),
    };
    let e = history_command_in_home(home.path(), &cmd, &Default::default()).unwrap_err();
    assert_eq!(e.code(), "busy", "{e}");
    let codex_free_pipeline::phase2::Claim::Claimed { token, watermark } = claim else {
        panic!()
    };
    assert!(store.succeed_phase2(&token, watermark, &[]).unwrap());

    let out = history_command_in_home(home.path(), &cmd, &Default::default()).unwrap();
    assert!(out.contains("refs/codex-free/backups/"), "{out}");
    assert_eq!(
        std::fs::read_to_string(f.root().join("MEMORY.md")).unwrap(),
        "# Memory\n\n- first\n"
    );
    let log = history_command_in_home(
        home.path(),
        &MemoryHistoryCmd::History { limit: 10 },
        &Default::default(),
    )
    .unwrap();
    assert_eq!(log.lines().count(), 3, "{log}");
    assert!(
        log.lines().next().unwrap().contains("Roll back memory to"),
        "{log}"
    );
    let diff = history_command_in_home(
        home.path(),
        &MemoryHistoryCmd::Diff { rev: None },
        &Default::default(),
    )
    .unwrap();
    assert!(
        diff.contains("-- second") && diff.contains("+- first"),
        "{diff}"
    );
}

#[test]
fn cli_rollback_to_an_over_budget_commit_is_refused_and_changes_nothing() {
    use codex_free_memory::folder::MemoryFolder;
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("state");
    let (f, _) = MemoryFolder::open_or_init(&home).unwrap();
    let big: String = (0..401).map(|i| format!("- old rule {i}\n")).collect();
    std::fs::write(f.root().join("MEMORY.md"), &big).unwrap();
    let bad = f
        .commit_all(
            &codex_free_memory::gate::approve_as_is(&f).unwrap(),
            "legacy",
        )
        .unwrap()
        .unwrap();
    std::fs::write(f.root().join("MEMORY.md"), "# Memory\n\n- ok\n").unwrap();
    f.commit_all(
        &codex_free_memory::gate::approve_as_is(&f).unwrap(),
        "fixed",
    )
    .unwrap()
    .unwrap();
    let out = std::process::Command::new(crate::support::bin())
        .args(["memories", "rollback", &bad.to_string()])
        .env("HOME", d.path())
        .env("CODEX_FREE_HOME", &home)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("refusing to roll back") && err.contains("401 lines"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(f.root().join("MEMORY.md")).unwrap(),
        "# Memory\n\n- ok\n"
    );
    assert_eq!(f.history(10).unwrap().len(), 2, "no commit made");
}
