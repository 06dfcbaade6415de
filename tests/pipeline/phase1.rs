//! Phase 1 end to end against the mock provider (each wire format), fault handling,
//! spend cap, cancellation, and several real processes sharing one database.
//!
//! Rollouts here are plain-text files read by `TextDirInput` (the engine's seam); the
//! transcript parsers plug into the same seam.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use codex_free_core::config::{CONFIG_FILE, Config};
use codex_free_models::{ModelRef, PriceTable, RetryPolicy, TokenUsage};
use codex_free_pipeline::cli::{ControlEnv, MemoriesCmd, execute, status};
use codex_free_pipeline::phase1::{Redactor, TextDirInput};
use codex_free_secrets::{MemoryStore, Secret, SecretStore};
use codex_free_store::Store;
use serde_json::{Value, json};

use codex_free_testkit::mock_provider::{Fault, MOCK_USAGE, MockProvider, session_id};

/// Replaces the planted test secret, standing in for the real redactor.
struct PlantedSecretRedactor;
impl Redactor for PlantedSecretRedactor {
    fn redact(&self, text: &str) -> String {
        text.replace("sk-live-PLANTED0123456789", "[REDACTED_SECRET]")
    }
}

fn write_rollouts(home: &Path, source: &str, ids: &[String], age: Duration) {
    let dir = home.join("rollouts").join(source);
    std::fs::create_dir_all(&dir).unwrap();
    for id in ids {
        let p = dir.join(format!("{id}.txt"));
        std::fs::write(
            &p,
            format!("user: please fix the build of {id}\nassistant: done, use pnpm\n"),
        )
        .unwrap();
        let f = std::fs::File::options().write(true).open(&p).unwrap();
        f.set_modified(SystemTime::now() - age).unwrap();
    }
}

fn ids(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i:03}")).collect()
}

fn fast_retry() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 4,
        base_delay: Duration::from_millis(20),
        max_delay: Duration::from_millis(100),
        max_retry_after: Duration::from_secs(5),
    }
}

fn secrets() -> Arc<dyn SecretStore> {
    let s = MemoryStore::default();
    s.set("openai", &Secret::new("sk-test-openai-000000000000"))
        .unwrap();
    s.set("anthropic", &Secret::new("sk-ant-test-0000000000000"))
        .unwrap();
    Arc::new(s)
}

fn env_for(home: &Path) -> ControlEnv {
    let mut env = ControlEnv::new(home.to_path_buf(), secrets());
    env.input = Arc::new(TextDirInput::new(home.join("rollouts")));
    env.redactor = Arc::new(PlantedSecretRedactor);
    env.retry = fast_retry();
    env
}

/// Write `codex.config.json` pointing `provider` at the mock.
fn configure(home: &Path, mock: &MockProvider, provider: &str, model: &str, extra: Value) {
    let mut memories = json!({
        "extract_model": format!("{provider}/{model}"),
        "max_rollouts_per_startup": 8,
        "sources": ["codex"],
        "providers": { provider: { "base_url": mock.base_url() } },
    });
    if provider == "local" {
        memories["providers"]["local"]["api"] = json!("openai-chat");
    }
    if let (Some(m), Some(e)) = (memories.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            m.insert(k.clone(), v.clone());
        }
    }
    let text = json!({ "memories": memories }).to_string();
    let (cfg, warnings) = Config::parse(&text).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    cfg.save(&home.join(CONFIG_FILE)).unwrap();
}

fn store(home: &Path) -> Store {
    Store::open_in_home(home).unwrap()
}

fn log_lines(home: &Path) -> Vec<String> {
    std::fs::read_to_string(home.join("memories.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

fn mock_usage() -> TokenUsage {
    let (input, cached, output, reasoning) = MOCK_USAGE;
    TokenUsage {
        input,
        cached_input: cached,
        cache_write: 0,
        output,
        reasoning,
    }
}

struct Case {
    provider: &'static str,
    model: &'static str,
    path: &'static str,
}

async fn end_to_end(case: Case) {
    let mock = MockProvider::start().await;
    let d = tempfile::tempdir().unwrap();
    let home = d.path();
    configure(home, &mock, case.provider, case.model, json!({}));
    let rollouts = ids("r", 3);
    write_rollouts(home, "codex", &rollouts, Duration::from_secs(7 * 3600));
    // r000 has nothing worth keeping; r001's answer carries a planted secret.
    mock.set_answer(|body| {
        let id = session_id(body);
        match id.as_str() {
            "r000" => {
                json!({"rollout_summary": "", "rollout_slug": null, "raw_memory": ""}).to_string()
            }
            _ => json!({
                "rollout_summary": format!("summary of {id}"),
                "rollout_slug": format!("Fix {id}"),
                "raw_memory": format!("- {id}: always use pnpm; key sk-live-PLANTED0123456789")
            })
            .to_string(),
        }
    });
    let env = env_for(home);
    let out = execute(MemoriesCmd::Run { json: false }, &env)
        .await
        .unwrap();
    assert!(
        out.contains("3 claimed, 2 with output, 1 no output, 0 failed, 0 released"),
        "{out}"
    );

    // Requests: one per rollout, real wire format, key sent, rollout text sent.
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3);
    for r in &reqs {
        assert!(r.path.ends_with(case.path), "{}", r.path);
        assert!(
            r.auth.as_deref().is_some_and(|a| a.contains("test")),
            "key header sent"
        );
        assert!(
            r.body.to_string().contains("please fix the build of"),
            "rollout text is in the request"
        );
        match case.path {
            "/responses" => {
                assert_eq!(r.body["text"]["format"]["type"], "json_schema");
                assert_eq!(r.body["text"]["format"]["strict"], true);
                assert_eq!(
                    r.body["text"]["format"]["schema"]["additionalProperties"],
                    false
                );
            }
            "/chat/completions" => {
                assert_eq!(r.body["response_format"]["type"], "json_schema");
                assert_eq!(r.body["response_format"]["json_schema"]["strict"], true);
            }
            _ => {
                assert!(
                    r.body["system"].to_string().contains("rollout_summary"),
                    "instructions describe the shape"
                );
                assert!(
                    r.body.get("output_config").is_none(),
                    "anthropic defaults to compatibility mode"
                );
            }
        }
    }

    // Outputs stored, redacted again; the empty answer stored nothing.
    let s = store(home);
    assert!(s.stage1_output("r000").unwrap().is_none());
    let o = s.stage1_output("r001").unwrap().unwrap();
    assert_eq!(o.rollout_summary, "summary of r001");
    assert_eq!(o.rollout_slug.as_deref(), Some("fix-r001"));
    assert!(
        o.raw_memory.contains("[REDACTED_SECRET]") && !o.raw_memory.contains("PLANTED"),
        "{}",
        o.raw_memory
    );
    assert_eq!(s.job_counts().unwrap().done, 3);

    // Usage rows and run totals: exact token sums, cost from the bundled table.
    let run = &s.recent_runs(1).unwrap()[0];
    let usage = s.run_usage(&run.id).unwrap();
    assert_eq!(usage.len(), 3);
    let mut u = mock_usage();
    if case.path == "/messages" {
        // Anthropic's usage does not break reasoning out of output_tokens.
        u.reasoning = 0;
    }
    for row in &usage {
        assert_eq!(
            (
                row.tokens.input_tokens,
                row.tokens.cached_input_tokens,
                row.tokens.output_tokens,
                row.tokens.reasoning_tokens,
                row.attempts
            ),
            (
                u.input as i64,
                u.cached_input as i64,
                u.output as i64,
                u.reasoning as i64,
                1
            )
        );
    }
    assert_eq!(usage.iter().filter(|r| r.outcome == "no_output").count(), 1);
    assert_eq!(
        (run.input_tokens, run.cached_input_tokens, run.output_tokens),
        (3 * 1200, 3 * 200, 3 * 150)
    );
    let price = PriceTable::bundled()
        .lookup(
            &ModelRef::parse(&format!("{}/{}", case.provider, case.model)).unwrap(),
            &Default::default(),
        )
        .price
        .expect("model is in the bundled price table");
    let expect = 3.0 * price.cost(&u);
    assert!(expect > 0.0);
    assert!(
        (run.cost_usd.unwrap() - expect).abs() < 1e-12,
        "{:?} vs {expect}",
        run.cost_usd
    );

    // One log line with the same numbers.
    let lines = log_lines(home);
    assert_eq!(lines.len(), 1, "{lines:?}");
    let total = 3 * (1200 + 150);
    assert!(
        lines[0].contains(&format!(
            "phase1: 3 claimed, 2 with output, 1 no output, 0 failed, 0 released, {total} tokens, $"
        )),
        "{}",
        lines[0]
    );

    // Unchanged rollouts are never re-extracted.
    let out = execute(MemoriesCmd::Run { json: false }, &env)
        .await
        .unwrap();
    assert!(out.contains("nothing to do"), "{out}");
    assert_eq!(mock.requests().len(), 3);

    // Status shows the run, tokens and cost.
    let st = status(&env).unwrap();
    assert_eq!(st.sources[0].with_output, 2);
    assert_eq!(st.recent_runs.len(), 1);
    let text = st.render();
    assert!(text.contains("3 claimed, 2 with output"), "{text}");
    assert!(
        text.contains(&format!("{} in ({} cached)", 3 * 1200, 3 * 200)),
        "{text}"
    );
    mock.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_to_end_openai_responses() {
    end_to_end(Case {
        provider: "openai",
        model: "gpt-5-mini",
        path: "/responses",
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_to_end_openai_chat_completions() {
    end_to_end(Case {
        provider: "openai-chat",
        model: "gpt-5-mini",
        path: "/chat/completions",
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_to_end_anthropic_messages() {
    end_to_end(Case {
        provider: "anthropic",
        model: "claude-haiku-4-5",
        path: "/messages",
    })
    .await;
}

/// One rollout, one run, with `faults` queued; returns (stdout line, store, requests).
async fn one_rollout_with(
    faults: Vec<Fault>,
    extra: Value,
) -> (String, Store, MockProvider, tempfile::TempDir, ControlEnv) {
    let mock = MockProvider::start().await;
    let d = tempfile::tempdir().unwrap();
    configure(d.path(), &mock, "openai-chat", "gpt-5-mini", extra);
    write_rollouts(
        d.path(),
        "codex",
        &ids("f", 1),
        Duration::from_secs(7 * 3600),
    );
    mock.push_faults(faults);
    let env = env_for(d.path());
    let out = execute(MemoriesCmd::Run { json: false }, &env)
        .await
        .unwrap();
    let s = store(d.path());
    (out, s, mock, d, env)
}

fn only_usage(s: &Store) -> codex_free_store::UsageRow {
    let run = &s.recent_runs(1).unwrap()[0];
    let rows = s.run_usage(&run.id).unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    rows.into_iter().next().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limit_429_honours_retry_after_then_succeeds() {
    let started = Instant::now();
    let (out, s, mock, _d, _) = one_rollout_with(
        vec![Fault::Status(
            429,
            json!({"error": {"message": "slow down", "type": "rate_limit"}}),
            vec![("retry-after", "1".into())],
        )],
        json!({}),
    )
    .await;
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "waited for Retry-After"
    );
    assert!(out.contains("1 with output"), "{out}");
    assert_eq!(mock.requests().len(), 2);
    assert_eq!(only_usage(&s).attempts, 2);
    assert!(s.stage1_output("f000").unwrap().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_are_retried_then_succeed() {
    let e500 = || Fault::Status(500, json!({"error": {"message": "internal"}}), vec![]);
    let (out, s, mock, _d, _) = one_rollout_with(vec![e500(), e500()], json!({})).await;
    assert!(out.contains("1 with output"), "{out}");
    assert_eq!(mock.requests().len(), 3);
    assert_eq!(only_usage(&s).attempts, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn persistent_server_error_fails_the_job_with_backoff_and_stores_nothing() {
    let e500 = || Fault::Status(503, json!({"error": {"message": "overloaded"}}), vec![]);
    let (out, s, mock, d, _) = one_rollout_with((0..4).map(|_| e500()).collect(), json!({})).await;
    assert!(
        out.contains("1 claimed, 0 with output, 0 no output, 1 failed"),
        "{out}"
    );
    assert_eq!(mock.requests().len(), 4, "max_attempts");
    assert!(s.stage1_output("f000").unwrap().is_none());
    let jobs = s.job_counts().unwrap();
    assert_eq!((jobs.retrying, jobs.done, jobs.running), (1, 0, 0));
    let u = only_usage(&s);
    assert_eq!(
        (u.outcome.as_str(), u.attempts, u.tokens.input_tokens),
        ("failed", 4, 0)
    );
    // The backoff holds: an immediate second run does not retry it.
    let env = env_for(d.path());
    let out = execute(MemoriesCmd::Run { json: false }, &env)
        .await
        .unwrap();
    assert!(out.contains("nothing to do"), "{out}");
    assert_eq!(mock.requests().len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_is_retried() {
    let (out, s, mock, _d, _) = one_rollout_with(
        vec![Fault::Delay(Duration::from_secs(3), None)],
        json!({"request_timeout_secs": 1}),
    )
    .await;
    assert!(out.contains("1 with output"), "{out}");
    assert_eq!(mock.requests().len(), 2);
    assert_eq!(only_usage(&s).attempts, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_body_is_retried_then_fails_cleanly() {
    let (out, s, mock, _d, _) = one_rollout_with(vec![Fault::Malformed], json!({})).await;
    assert!(out.contains("1 with output"), "{out}");
    assert_eq!(mock.requests().len(), 2);
    assert!(s.stage1_output("f000").unwrap().is_some());

    let (out, s, mock, _d, _) =
        one_rollout_with((0..4).map(|_| Fault::Malformed).collect(), json!({})).await;
    assert!(out.contains("1 failed"), "{out}");
    assert_eq!(mock.requests().len(), 4);
    assert!(s.stage1_output("f000").unwrap().is_none());
    assert!(only_usage(&s).error.unwrap().contains("Malformed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_response_is_retried_then_fails_cleanly() {
    let (out, s, mock, _d, _) = one_rollout_with(vec![Fault::Cut], json!({})).await;
    assert!(out.contains("1 with output"), "{out}");
    assert_eq!(mock.requests().len(), 2);
    assert_eq!(only_usage(&s).attempts, 2);

    let (out, s, mock, _d, _) =
        one_rollout_with((0..4).map(|_| Fault::Cut).collect(), json!({})).await;
    assert!(out.contains("1 failed"), "{out}");
    assert_eq!(mock.requests().len(), 4);
    assert!(s.stage1_output("f000").unwrap().is_none());
    assert_eq!(s.job_counts().unwrap().retrying, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_invalid_answer_fails_without_storing_and_counts_tokens() {
    let bad =
        json!({"rollout_summary": "s", "rollout_slug": null, "raw_memory": "m", "confidence": 0.9})
            .to_string();
    let (out, s, mock, _d, _) = one_rollout_with(vec![Fault::Answer(bad)], json!({})).await;
    assert!(out.contains("1 failed"), "{out}");
    assert_eq!(
        mock.requests().len(),
        1,
        "a wrong answer is not a transport error: no retry in the run"
    );
    assert!(s.stage1_output("f000").unwrap().is_none());
    let u = only_usage(&s);
    assert_eq!(u.outcome, "invalid_output");
    assert_eq!(
        u.tokens.input_tokens, 1200,
        "tokens spent on a bad answer are still counted"
    );
    assert!(u.cost_usd.unwrap() > 0.0);
    assert!(u.error.unwrap().contains("confidence"));
    let (out, s, _, _d, _) = one_rollout_with(
        vec![Fault::Answer("Sure! Here is the memory.".into())],
        json!({}),
    )
    .await;
    assert!(out.contains("1 failed"), "{out}");
    assert!(only_usage(&s).error.unwrap().contains("not JSON"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unavailable_model_fails_the_run_and_releases_jobs() {
    let mock = MockProvider::start().await;
    let d = tempfile::tempdir().unwrap();
    configure(d.path(), &mock, "openai-chat", "gpt-5-mini", json!({}));
    write_rollouts(
        d.path(),
        "codex",
        &ids("m", 3),
        Duration::from_secs(7 * 3600),
    );
    let nf = || {
        Fault::Status(
            404,
            json!({"error": {"message": "The model `gpt-5-mini` does not exist", "code": "model_not_found"}}),
            vec![],
        )
    };
    mock.push_faults((0..3).map(|_| nf()));
    let env = env_for(d.path());
    let out = execute(MemoriesCmd::Run { json: false }, &env)
        .await
        .unwrap();
    assert!(
        out.contains("3 claimed, 0 with output, 0 no output, 0 failed, 3 released"),
        "{out}"
    );
    assert!(
        out.contains("stopped: model openai-chat/gpt-5-mini is not available"),
        "{out}"
    );
    let s = store(d.path());
    let jobs = s.job_counts().unwrap();
    assert_eq!(
        (jobs.pending, jobs.retrying),
        (3, 0),
        "released, no retry spent"
    );
    let reqs = mock.requests();
    assert!(reqs.len() <= 3);
    assert!(
        reqs.iter().all(|r| r.body["model"] == "gpt-5-mini"),
        "never a different model"
    );
    assert_eq!(s.recent_runs(1).unwrap()[0].summary.outcome, "failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spend_cap_stops_model_calls_and_status_says_so() {
    let mock = MockProvider::start().await;
    let d = tempfile::tempdir().unwrap();
    // A request's worst case (16,384 output tokens of gpt-5-mini) is about $0.033: a cap of
    // $0.05 lets one through; then other spend this month reaches the cap.
    configure(
        d.path(),
        &mock,
        "openai-chat",
        "gpt-5-mini",
        json!({"monthly_spend_cap_usd": 0.05, "max_rollouts_per_startup": 1}),
    );
    write_rollouts(
        d.path(),
        "codex",
        &ids("c", 2),
        Duration::from_secs(7 * 3600),
    );
    let env = env_for(d.path());
    let out = execute(MemoriesCmd::Run { json: false }, &env)
        .await
        .unwrap();
    assert!(out.contains("1 claimed, 1 with output"), "{out}");
    let s = store(d.path());
    let run = s.begin_run("phase1", "test", Some("gpt-5-mini")).unwrap();
    s.record_usage(&codex_free_store::UsageRow {
        run_id: run,
        phase: "phase1".into(),
        request_no: 1,
        model: "gpt-5-mini".into(),
        cost_usd: Some(0.05),
        outcome: "ok".into(),
        ..Default::default()
    })
    .unwrap();
    let out = execute(MemoriesCmd::Run { json: false }, &env)
        .await
        .unwrap();
    assert!(out.contains("stopped: monthly spend cap reached"), "{out}");
    assert_eq!(
        mock.requests().len(),
        1,
        "no model call once the cap is reached"
    );
    let st = status(&env).unwrap();
    assert!(st.cap_reached);
    assert!(st.render().contains("CAP REACHED"), "{}", st.render());
    assert_eq!(st.eligible_now, 1, "the other rollout waits");
    assert!(log_lines(d.path()).last().unwrap().contains("spend cap"));
    // Said once: a further trigger while capped adds no run and no log line.
    let lines = log_lines(d.path()).len();
    let out = execute(MemoriesCmd::Run { json: false }, &env)
        .await
        .unwrap();
    assert!(
        out.contains("spend_cap: monthly spend cap reached"),
        "{out}"
    );
    assert_eq!(log_lines(d.path()).len(), lines);
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spend_cap_holds_with_four_requests_in_flight() {
    let mock = MockProvider::start().await;
    let d = tempfile::tempdir().unwrap();
    // Each answer reports 16,000 output tokens (about $0.032 at gpt-5-mini's price), close
    // to the $0.033 worst case reserved per request; a $0.07 cap fits two.
    configure(
        d.path(),
        &mock,
        "openai-chat",
        "gpt-5-mini",
        json!({"monthly_spend_cap_usd": 0.07, "max_rollouts_per_startup": 8}),
    );
    write_rollouts(
        d.path(),
        "codex",
        &ids("c", 8),
        Duration::from_secs(7 * 3600),
    );
    let answer = json!({"rollout_summary": "Set up pnpm.", "rollout_slug": "pnpm", "raw_memory": "- uses pnpm"});
    let body = json!({"id": "chatcmpl-x", "object": "chat.completion", "created": 0, "model": "gpt-5-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": answer.to_string()}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1200, "completion_tokens": 16000, "total_tokens": 17200}});
    mock.push_faults((0..8).map(|_| {
        Fault::Delay(
            Duration::from_millis(400),
            Some(Box::new(Fault::Body(body.clone()))),
        )
    }));
    let env = env_for(d.path());
    let out = execute(MemoriesCmd::Run { json: false }, &env)
        .await
        .unwrap();
    let spent = store(d.path()).spend_this_month().unwrap().usd;
    assert!(spent <= 0.07, "spent ${spent} over the $0.07 cap: {out}");
    assert_eq!(mock.requests().len(), 2, "{out}");
    assert!(out.contains("may cost up to"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_price_is_reported_as_unknown_not_zero() {
    let mock = MockProvider::start().await;
    let d = tempfile::tempdir().unwrap();
    configure(d.path(), &mock, "local", "tiny-model", json!({}));
    write_rollouts(
        d.path(),
        "codex",
        &ids("u", 1),
        Duration::from_secs(7 * 3600),
    );
    let env = env_for(d.path());
    let out = execute(MemoriesCmd::Run { json: false }, &env)
        .await
        .unwrap();
    assert!(out.contains("price unknown"), "{out}");
    let s = store(d.path());
    assert_eq!(only_usage(&s).cost_usd, None);
    assert_eq!(s.recent_runs(1).unwrap()[0].cost_usd, None);
    let text = status(&env).unwrap().render();
    assert!(text.contains("price unknown"), "{text}");
    // With a cap set, an unpriced model is not called at all.
    configure(
        d.path(),
        &mock,
        "local",
        "tiny-model",
        json!({"monthly_spend_cap_usd": 5.0}),
    );
    write_rollouts(
        d.path(),
        "codex",
        &ids("v", 1),
        Duration::from_secs(7 * 3600),
    );
    let out = execute(MemoriesCmd::Run { json: false }, &env)
        .await
        .unwrap();
    assert!(
        out.contains("price of local/tiny-model is unknown"),
        "{out}"
    );
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_releases_the_job_promptly() {
    let mock = MockProvider::start().await;
    let d = tempfile::tempdir().unwrap();
    configure(d.path(), &mock, "openai-chat", "gpt-5-mini", json!({}));
    write_rollouts(
        d.path(),
        "codex",
        &ids("x", 1),
        Duration::from_secs(7 * 3600),
    );
    mock.push_faults([Fault::Delay(Duration::from_secs(10), None)]);
    let env = env_for(d.path());
    let cancel = env.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let out = execute(MemoriesCmd::Run { json: false }, &env)
        .await
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "stopped promptly"
    );
    assert!(out.contains("1 released"), "{out}");
    let s = store(d.path());
    assert_eq!(s.job_counts().unwrap().pending, 1);
    assert_eq!(s.recent_runs(1).unwrap()[0].summary.outcome, "cancelled");
    assert!(s.stage1_output("x000").unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thread_off_force_and_reset() {
    let mock = MockProvider::start().await;
    let d = tempfile::tempdir().unwrap();
    configure(d.path(), &mock, "openai-chat", "gpt-5-mini", json!({}));
    // Active 2 hours ago: not idle enough for `run`, fine for `force`.
    write_rollouts(
        d.path(),
        "codex",
        &ids("t", 2),
        Duration::from_secs(2 * 3600),
    );
    let env = env_for(d.path());
    let out = execute(MemoriesCmd::Run { json: false }, &env)
        .await
        .unwrap();
    assert!(out.contains("nothing to do"), "{out}");
    let out = execute(MemoriesCmd::Force { json: false }, &env)
        .await
        .unwrap();
    assert!(out.contains("2 claimed, 2 with output"), "{out}");
    execute(
        MemoriesCmd::Thread {
            state: codex_free_pipeline::cli::OnOff::Off,
            id: "t000".into(),
        },
        &env,
    )
    .await
    .unwrap();
    let s = store(d.path());
    assert!(s.stage1_output("t000").unwrap().is_none());
    assert!(!s.thread("t000").unwrap().unwrap().memory_enabled);
    let out = execute(MemoriesCmd::Reset { yes: true }, &env)
        .await
        .unwrap();
    assert!(out.contains("1 extracted memories"), "{out}");
    // Transcripts untouched; spend history kept.
    assert!(d.path().join("rollouts/codex/t001.txt").exists());
    assert_eq!(s.spend_this_month().unwrap().requests, 2);
}

/// Helper process for [`concurrent_processes_extract_each_rollout_once`]: runs phase 1
/// repeatedly on `$PHASE1_WORKER_HOME` until nothing is eligible or running.
#[test]
#[ignore = "spawned as a separate process by concurrent_processes_extract_each_rollout_once"]
fn concurrency_worker() {
    let Ok(home) = std::env::var("PHASE1_WORKER_HOME") else {
        return;
    };
    let home = PathBuf::from(home);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let env = env_for(&home);
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            execute(MemoriesCmd::Run { json: false }, &env)
                .await
                .unwrap();
            let st = status(&env).unwrap();
            if st.eligible_now == 0 && st.jobs.running == 0 {
                break;
            }
            assert!(Instant::now() < deadline, "worker did not finish: {st:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_processes_extract_each_rollout_once() {
    const N: usize = 50;
    let mock = MockProvider::start().await;
    mock.set_delay(Duration::from_millis(30));
    let d = tempfile::tempdir().unwrap();
    configure(
        d.path(),
        &mock,
        "openai-chat",
        "gpt-5-mini",
        json!({"max_rollouts_per_startup": 4}),
    );
    write_rollouts(
        d.path(),
        "codex",
        &ids("p", N),
        Duration::from_secs(7 * 3600),
    );
    // Create the schema once so the workers race only on claims.
    drop(store(d.path()));
    let exe = std::env::current_exe().unwrap();
    // The worker's test name from this module's path, so a move of the file cannot leave
    // `--exact` matching nothing (which passes with zero workers run).
    let worker = format!(
        "{}::concurrency_worker",
        module_path!().split_once("::").unwrap().1
    );
    let mut children = Vec::new();
    for _ in 0..3 {
        children.push(
            tokio::process::Command::new(&exe)
                .args([
                    "--ignored",
                    "--exact",
                    &worker,
                    "--test-threads=1",
                    "--nocapture",
                ])
                .env("PHASE1_WORKER_HOME", d.path())
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap(),
        );
    }
    for mut c in children {
        let st = c.wait().await.unwrap();
        assert!(st.success(), "worker failed: {st}");
    }
    let reqs = mock.requests();
    let mut seen: Vec<String> = reqs.iter().map(|r| session_id(&r.body)).collect();
    seen.sort();
    let unique = {
        let mut u = seen.clone();
        u.dedup();
        u
    };
    assert_eq!(unique.len(), N, "every rollout extracted");
    assert_eq!(seen.len(), N, "none extracted twice: {seen:?}");
    let s = store(d.path());
    assert_eq!(s.job_counts().unwrap().done, N as i64);
    assert_eq!(s.list_stage1_outputs(1000).unwrap().len(), N);
    // Runs from all processes add up, and each claimed run wrote one log line.
    let runs = s.recent_runs(1000).unwrap();
    assert_eq!(
        runs.iter().map(|r| r.summary.claimed).sum::<i64>(),
        N as i64
    );
    let workers: std::collections::BTreeSet<_> = runs.iter().map(|r| r.id.clone()).collect();
    assert_eq!(log_lines(d.path()).len(), workers.len());
    let claimed_in_log: i64 = log_lines(d.path())
        .iter()
        .map(|l| {
            l.split("phase1: ")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .parse::<i64>()
                .unwrap()
        })
        .sum();
    assert_eq!(claimed_in_log, N as i64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduler_runs_on_start_and_on_trigger_and_respects_off() {
    use codex_free_pipeline::phase1::Trigger;
    use codex_free_pipeline::scheduler::Scheduler;
    let mock = MockProvider::start().await;
    let d = tempfile::tempdir().unwrap();
    let home = d.path().to_path_buf();
    configure(&home, &mock, "openai-chat", "gpt-5-mini", json!({}));
    write_rollouts(&home, "codex", &ids("s", 1), Duration::from_secs(7 * 3600));
    let env = env_for(&home);
    let mut deps = env.scheduler_deps();
    deps.rescan_every = Duration::from_secs(3600);
    deps.watch = None;
    let cfg = Config::load(&home.join(CONFIG_FILE)).unwrap().config;
    let cancel = tokio_util::sync::CancellationToken::new();
    let sched = Scheduler::start(home.clone(), cfg, deps, cancel.clone()).unwrap();
    let wait_for = |n: usize| {
        let mock = &mock;
        async move {
            let deadline = Instant::now() + Duration::from_secs(10);
            while mock.requests().len() < n {
                assert!(
                    Instant::now() < deadline,
                    "expected {n} requests, got {}",
                    mock.requests().len()
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    wait_for(1).await; // startup run
    write_rollouts(&home, "codex", &ids("t", 1), Duration::from_secs(7 * 3600));
    sched.nudge(Trigger::Watch);
    wait_for(2).await;
    // Off in the config file: a later trigger makes no call.
    execute(MemoriesCmd::Off, &env).await.unwrap();
    write_rollouts(&home, "codex", &ids("u", 1), Duration::from_secs(7 * 3600));
    sched.nudge(Trigger::Watch);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(mock.requests().len(), 2);
    sched.shutdown().await;
    assert!(cancel.is_cancelled());
    // two phase-1 runs; phase 2 follows each run and logs its own lines
    let phase1: Vec<_> = log_lines(&home)
        .into_iter()
        .filter(|l| l.contains(" phase1: "))
        .collect();
    assert_eq!(phase1.len(), 2, "{phase1:?}");
}

/// The provider trait already carries what phase 2's tool-using agent needs: tools out,
/// tool calls back, tool results in the next request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_calls_round_trip_through_chat_completions() {
    use codex_free_models::genai_client::GenaiClient;
    use codex_free_models::{
        Api, CompletionRequest, Message, ModelClient, Outgoing, StopKind, StructuredMode, ToolSpec,
    };
    let mock = MockProvider::start().await;
    mock.push_faults([Fault::Body(json!({
        "id": "chatcmpl-tools", "object": "chat.completion", "created": 1, "model": "gpt-5-mini",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "call_1", "type": "function",
                            "function": {"name": "read_file", "arguments": "{\"path\":\"MEMORY.md\"}"}}]}}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}
    }))]);
    let client = GenaiClient::new(
        ModelRef::parse("openai-chat/gpt-5-mini").unwrap(),
        Api::OpenaiChat,
        &mock.base_url(),
        Some(Secret::new("sk-test-tools-0000000000")),
        StructuredMode::Strict,
        Duration::from_secs(10),
        fast_retry(),
    )
    .unwrap();
    let tool = ToolSpec {
        name: "read_file".into(),
        description: "Read a file of the memory folder".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    };
    let mut req = CompletionRequest {
        system: "consolidate".into(),
        messages: vec![Message::User("go".into())],
        tools: vec![tool],
        ..Default::default()
    };
    let cancel = tokio_util::sync::CancellationToken::new();
    let out = Outgoing::seal(req.clone(), None).unwrap();
    let c = client.complete(&out, &cancel).await.unwrap();
    assert_eq!(c.stop, StopKind::ToolCalls);
    assert_eq!(c.tool_calls.len(), 1);
    assert_eq!(
        (c.tool_calls[0].id.as_str(), c.tool_calls[0].name.as_str()),
        ("call_1", "read_file")
    );
    assert_eq!(c.tool_calls[0].arguments, json!({"path": "MEMORY.md"}));
    assert_eq!((c.usage.input, c.usage.output), (50, 10));
    let sent = &mock.requests()[0].body;
    assert_eq!(sent["tools"][0]["function"]["name"], "read_file");
    // Second turn: the call and its result go back in the wire format.
    req.messages.push(Message::Assistant {
        content: String::new(),
        tool_calls: c.tool_calls.clone(),
    });
    req.messages.push(Message::Tool {
        call_id: "call_1".into(),
        content: "# Memory".into(),
    });
    let out = Outgoing::seal(req, None).unwrap();
    let c2 = client.complete(&out, &cancel).await.unwrap();
    assert!(c2.tool_calls.is_empty());
    let sent = &mock.requests()[1].body;
    let msgs = sent["messages"].as_array().unwrap();
    let tool_msg = msgs
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("tool result message sent");
    assert_eq!(tool_msg["tool_call_id"], "call_1");
    assert_eq!(tool_msg["content"], "# Memory");
    assert!(
        msgs.iter()
            .any(|m| m["role"] == "assistant" && m["tool_calls"][0]["id"] == "call_1")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_provider_is_said_in_plain_words_and_the_run_is_failed() {
    let d = tempfile::tempdir().unwrap();
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let text = json!({"memories": {
        "extract_model": "openai/gpt-5-mini",
        "sources": ["codex"],
        "providers": {"openai": {"base_url": format!("http://127.0.0.1:{port}/v1/")}},
    }})
    .to_string();
    Config::parse(&text)
        .unwrap()
        .0
        .save(&d.path().join(CONFIG_FILE))
        .unwrap();
    write_rollouts(
        d.path(),
        "codex",
        &ids("u", 2),
        Duration::from_secs(7 * 3600),
    );
    let env = env_for(d.path());
    let out = execute(MemoriesCmd::Run { json: false }, &env)
        .await
        .unwrap();
    assert!(
        out.contains(&format!("could not reach http://127.0.0.1:{port}/"))
            && out.contains("connection refused"),
        "{out}"
    );
    assert!(!out.to_lowercase().contains("reqwest error"), "{out}");
    let st = status(&env).unwrap();
    let run = &st.recent_runs[0];
    assert_eq!(
        run.summary.outcome, "failed",
        "every request failed: {run:?}"
    );
    assert!(
        st.render().contains("phase 2 (consolidation): not run yet"),
        "{}",
        st.render()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn citations_in_a_later_session_raise_usage_once_in_both_forms() {
    let mock = MockProvider::start().await;
    let d = tempfile::tempdir().unwrap();
    configure(d.path(), &mock, "openai", "gpt-5-mini", json!({}));
    let first = ids("m", 3);
    write_rollouts(d.path(), "codex", &first, Duration::from_secs(8 * 3600));
    let env = env_for(d.path());
    let out = execute(MemoriesCmd::Run { json: false }, &env)
        .await
        .unwrap();
    assert!(out.contains("3 claimed, 3 with output"), "{out}");
    // A later session cites m000 (current form) and m001 (legacy form), plus an id that
    // names no memory and some markup that is not an id.
    let later = d.path().join("rollouts/codex/later.txt");
    let cite = "user: fix it\nassistant: done.\n<oai-mem-citation>\n<citation_entries>\nMEMORY.md:1-2|note=[pnpm]\n</citation_entries>\n<rollout_ids>\nm000\nno-such-rollout\n</rollout_ids>\n</oai-mem-citation>\nassistant: also\n<memory_citation>\n<thread_ids>m001, <b>x</b></thread_ids>\n</memory_citation>\n";
    std::fs::write(&later, cite).unwrap();
    let set_age = |secs: u64| {
        let f = std::fs::File::options().write(true).open(&later).unwrap();
        f.set_modified(SystemTime::now() - Duration::from_secs(secs))
            .unwrap();
    };
    set_age(7 * 3600);
    execute(MemoriesCmd::Run { json: false }, &env)
        .await
        .unwrap();
    let usage = |id: &str| {
        store(d.path())
            .stage1_output(id)
            .unwrap()
            .unwrap()
            .usage_count
    };
    assert_eq!((usage("m000"), usage("m001"), usage("m002")), (1, 1, 0));
    // The session grows and is read again: its citations are not counted twice.
    std::fs::write(&later, format!("{cite}user: thanks\n")).unwrap();
    set_age(6 * 3600 + 600);
    let out = execute(MemoriesCmd::Run { json: false }, &env)
        .await
        .unwrap();
    assert!(out.contains("1 claimed"), "re-extracted: {out}");
    assert_eq!((usage("m000"), usage("m001")), (1, 1));
}

/// A run in which every request failed is a failed command: the in-process verdict says
/// why, and the real binary exits 1 with the reason on stderr (a scheduler, a script or CI
/// can tell), while a run with a success stays exit 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_every_request_failed_exits_non_zero() {
    use codex_free_pipeline::cli::execute_with_verdict;
    let e500 = || Fault::Status(500, json!({"error": {"message": "internal"}}), vec![]);
    // In process: four failed attempts of the one rollout.
    let mock = MockProvider::start().await;
    let d = tempfile::tempdir().unwrap();
    configure(d.path(), &mock, "openai-chat", "gpt-5-mini", json!({}));
    write_rollouts(
        d.path(),
        "codex",
        &ids("v", 1),
        Duration::from_secs(7 * 3600),
    );
    mock.push_faults((0..4).map(|_| e500()));
    let (text, verdict) =
        execute_with_verdict(MemoriesCmd::Run { json: false }, &env_for(d.path()))
            .await
            .unwrap();
    assert!(text.contains("1 failed"), "{text}");
    let why = verdict.expect("a run with no success has a failure verdict");
    assert!(why.contains("1 of 1 requests failed"), "{why}");

    // The real binary on a real Codex rollout, every request answered 500.
    let home = tempfile::tempdir().unwrap();
    let state = home.path().join("state");
    let sessions = home.path().join(".codex/sessions/2026/11/29");
    std::fs::create_dir_all(&sessions).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "tests/data/usage/codex/sessions/2026/11/29/rollout-2026-11-29T12-52-11-01a2275c-efdc-77a0-96ee-02aaa639a804.jsonl",
    );
    let copy = sessions.join(fixture.file_name().unwrap());
    std::fs::copy(&fixture, &copy).unwrap();
    // Idle for a day, as a finished session is (eligibility waits for idle rollouts).
    std::fs::File::options()
        .write(true)
        .open(&copy)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(24 * 3600))
        .unwrap();
    std::fs::create_dir_all(&state).unwrap();
    let mock = MockProvider::start().await;
    configure(&state, &mock, "openai-chat", "gpt-5-mini", json!({}));
    mock.push_faults((0..100).map(|_| e500()));
    let run = || {
        std::process::Command::new(crate::support::bin())
            .args(["memories", "run"])
            .env("HOME", home.path())
            .env("CODEX_FREE_HOME", &state)
            .env("CODEX_HOME", home.path().join(".codex"))
            .env("OPENAI_API_KEY", "sk-test-not-a-real-key")
            .output()
            .unwrap()
    };
    let o = run();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        o.status.code(),
        Some(1),
        "stdout: {}\nstderr: {stderr}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(stderr.contains("none succeeded"), "{stderr}");
    assert!(
        stderr.contains("HTTP 500") || stderr.contains("500"),
        "{stderr}"
    );
    assert!(!mock.requests().is_empty(), "requests were sent");

    let bin = |state: &Path, args: &[&str]| {
        std::process::Command::new(crate::support::bin())
            .args(args)
            .env("HOME", home.path())
            .env("CODEX_FREE_HOME", state)
            .env("CODEX_HOME", home.path().join(".codex"))
            .env("OPENAI_API_KEY", "sk-test-not-a-real-key")
            .output()
            .unwrap()
    };
    // `force --json` (the job is in its retry backoff, force retries it): the same verdict
    // in the JSON as in the exit code.
    let o = bin(&state, &["memories", "force", "--json"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["outcome"], "failed", "{v}");
    assert_eq!(v["achieved"], false, "{v}");
    assert!(
        v["failure"].as_str().unwrap().contains("none succeeded"),
        "{v}"
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("none succeeded"));

    // A run that succeeds exits 0 and says so in its JSON.
    let ok_state = home.path().join("state-ok");
    std::fs::create_dir_all(&ok_state).unwrap();
    let good = MockProvider::start().await;
    configure(
        &ok_state,
        &good,
        "openai-chat",
        "gpt-5-mini",
        json!({"consolidation_model": "openai-chat/gpt-5-mini"}),
    );
    let o = bin(&ok_state, &["memories", "run", "--json"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (v["outcome"].as_str(), v["achieved"].as_bool()),
        (Some("ok"), Some(true)),
        "{v}"
    );
    assert!(v["failure"].is_null(), "{v}");

    // Consolidation whose every request fails: exit 1, the reason on stderr, and the JSON
    // outcome says failed.
    let bad = MockProvider::start().await;
    configure(
        &ok_state,
        &bad,
        "openai-chat",
        "gpt-5-mini",
        json!({"consolidation_model": "openai-chat/gpt-5-mini"}),
    );
    bad.push_faults((0..100).map(|_| e500()));
    let o = bin(&ok_state, &["memories", "consolidate", "--force", "--json"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        o.status.code(),
        Some(1),
        "stdout: {}\nstderr: {stderr}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(stderr.contains("memories consolidate failed"), "{stderr}");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "failed", "{v}");
    assert!(!bad.requests().is_empty(), "phase 2 sent requests");
}

/// A prompt's `<private>…</private>` span (the user's own marking) never reaches the
/// provider, also when a budget cut removed its closing tag; the public part still does.
/// Before: the planted marker was in the request body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_spans_never_reach_the_provider() {
    let mock = MockProvider::start().await;
    let d = tempfile::tempdir().unwrap();
    let home = d.path();
    configure(home, &mock, "openai-chat", "gpt-5-mini", json!({}));
    let dir = home.join("rollouts").join("codex");
    std::fs::create_dir_all(&dir).unwrap();
    for (id, text) in [
        (
            "p000",
            "user: please fix the build <private>PLANTED-PRIVATE-ONE my home address</private> using pnpm\nassistant: done\n",
        ),
        (
            "p001",
            "user: please fix the build\nassistant: noted <PRIVATE>PLANTED-PRIVATE-TWO and the rest was cut",
        ),
    ] {
        let p = dir.join(format!("{id}.txt"));
        std::fs::write(&p, text).unwrap();
        let f = std::fs::File::options().write(true).open(&p).unwrap();
        f.set_modified(SystemTime::now() - Duration::from_secs(7 * 3600))
            .unwrap();
    }
    mock.set_answer(|_| {
        json!({"rollout_summary": "", "rollout_slug": null, "raw_memory": ""}).to_string()
    });
    let env = env_for(home);
    execute(MemoriesCmd::Run { json: false }, &env)
        .await
        .unwrap();
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2);
    for r in &reqs {
        let body = r.body.to_string();
        assert!(!body.contains("PLANTED-PRIVATE"), "{body}");
        assert!(body.contains("please fix the build"), "{body}");
        assert!(body.contains("[private: removed]"), "{body}");
    }
    mock.stop();
}

/// A chat-completions message's text, whether sent as a string or as content parts.
fn message_text(m: &Value) -> String {
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

#[tokio::test]
async fn preview_shows_the_exact_bytes_a_run_then_sends_and_sends_nothing() {
    let mock = MockProvider::start().await;
    let d = tempfile::tempdir().unwrap();
    let home = d.path();
    configure(home, &mock, "openai-chat", "gpt-5-mini", json!({}));
    write_rollouts(home, "codex", &ids("p", 2), Duration::from_secs(7 * 3600));
    // One session carries a secret: the preview shows its marker, never the secret.
    let secret_file = home.join("rollouts/codex/p001.txt");
    std::fs::write(
        &secret_file,
        "user: deploy with key sk-live-PLANTED0123456789 please\nassistant: done\n",
    )
    .unwrap();
    std::fs::File::options()
        .write(true)
        .open(&secret_file)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(7 * 3600))
        .unwrap();
    let env = env_for(home);
    let jobs_before = store(home).job_counts().unwrap();
    let text = execute(
        MemoriesCmd::Preview {
            next: 5,
            rollout: None,
            json: false,
        },
        &env,
    )
    .await
    .unwrap();
    assert!(
        text.contains("=== request 1 of 2") && text.contains("nothing was sent"),
        "{text}"
    );
    assert!(!text.contains("PLANTED0123456789"), "{text}");
    let json_out = execute(
        MemoriesCmd::Preview {
            next: 5,
            rollout: None,
            json: true,
        },
        &env,
    )
    .await
    .unwrap();
    let preview: Value = serde_json::from_str(&json_out).unwrap();
    let previews: Vec<Value> = preview["requests"].as_array().unwrap().clone();
    assert_eq!(previews.len(), 2, "{json_out}");
    assert!(mock.requests().is_empty(), "a preview sends nothing");
    assert_eq!(
        store(home).job_counts().unwrap(),
        jobs_before,
        "no job state changed"
    );
    let p1 = previews.iter().find(|p| p["thread_id"] == "p001").unwrap();
    assert_eq!(p1["redaction_markers"], 1, "{p1}");
    assert!(p1["input_tokens"].as_u64().unwrap() > 10);
    assert!(
        p1["input_cost_usd"].as_f64().unwrap() > 0.0,
        "gpt-5-mini is priced: {p1}"
    );
    // The run sends exactly the previewed bytes.
    let out = execute(MemoriesCmd::Run { json: false }, &env)
        .await
        .unwrap();
    assert!(out.contains("2 claimed"), "{out}");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2);
    for r in &reqs {
        let id = session_id(&r.body);
        let p = previews
            .iter()
            .find(|p| p["thread_id"] == id.as_str())
            .unwrap_or_else(|| panic!("no preview for {id}"));
        let msgs = r.body["messages"].as_array().unwrap();
        let system = msgs
            .iter()
            .find(|m| m["role"] == "system" || m["role"] == "developer")
            .unwrap();
        let user = msgs.iter().find(|m| m["role"] == "user").unwrap();
        assert_eq!(
            message_text(system),
            p["system"].as_str().unwrap(),
            "system of {id}"
        );
        assert_eq!(
            message_text(user),
            p["user"].as_str().unwrap(),
            "message of {id}"
        );
    }
    // A session that is not eligible (now extracted) is refused by name.
    let e = execute(
        MemoriesCmd::Preview {
            next: 1,
            rollout: Some("p000".into()),
            json: true,
        },
        &env,
    )
    .await
    .unwrap_err();
    assert!(e.to_string().contains("p000"), "{e}");
    mock.stop();
}

/// Receipts: each request's usage row carries the SHA-256 and size of the sealed bytes and
/// the redactions by rule; the preview shows the same hash before anything is sent; with
/// `memories.keep_sent_days` the bytes are kept (0600) under that hash, hold no secret and
/// no private text, and their message is the one the provider received. Before: usage rows
/// carried no receipt and nothing was kept.
#[tokio::test]
async fn each_request_has_a_receipt_and_its_sealed_bytes_are_kept() {
    use sha2::Digest;
    let mock = MockProvider::start().await;
    let d = tempfile::tempdir().unwrap();
    let home = d.path();
    configure(
        home,
        &mock,
        "openai-chat",
        "gpt-5-mini",
        json!({"keep_sent_days": 3}),
    );
    write_rollouts(home, "codex", &ids("r", 1), Duration::from_secs(7 * 3600));
    let file = home.join("rollouts/codex/r000.txt");
    std::fs::write(
        &file,
        "user: deploy with sk-live-PLANTED0123456789 <private>PLANTED-PRIVATE</private> now\nassistant: done\n",
    )
    .unwrap();
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(7 * 3600))
        .unwrap();
    let env = env_for(home);
    let preview: Value = serde_json::from_str(
        &execute(
            MemoriesCmd::Preview {
                next: 1,
                rollout: None,
                json: true,
            },
            &env,
        )
        .await
        .unwrap(),
    )
    .unwrap();
    let p = &preview["requests"][0];
    let want = json!({"private_span": 1, "provider_key": 1});
    assert_eq!(p["redactions"], want, "{p}");
    execute(MemoriesCmd::Run { json: false }, &env)
        .await
        .unwrap();
    let s = store(home);
    let run = &s.recent_runs(1).unwrap()[0];
    let rows = s.run_usage(&run.id).unwrap();
    assert_eq!(rows.len(), 1);
    let sha = rows[0].sent_sha256.clone().expect("a receipt");
    assert_eq!(p["sent_sha256"], sha.as_str(), "preview = receipt");
    assert_eq!(rows[0].redactions.get("provider_key"), Some(&1));
    assert_eq!(rows[0].redactions.get("private_span"), Some(&1));
    let kept = home.join("sent").join(format!("{sha}.json"));
    let bytes = std::fs::read(&kept).unwrap();
    assert_eq!(hex::encode(sha2::Sha256::digest(&bytes)), sha);
    assert_eq!(rows[0].sent_bytes, Some(bytes.len() as i64));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    let text = String::from_utf8(bytes).unwrap();
    assert!(!text.contains("PLANTED"), "{text}");
    let sealed: Value = serde_json::from_str(&text).unwrap();
    let reqs = mock.requests();
    let user = reqs[0].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap()
        .clone();
    assert_eq!(
        sealed["messages"][0]["content"].as_str().unwrap(),
        message_text(&user)
    );
    mock.stop();
}
