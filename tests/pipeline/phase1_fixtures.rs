//! Phase 1 on the real transcripts of all three CLIs (`tests/data/sessions`, copied from
//! the shared fixtures) through the transcript readers, against the mock provider; and a
//! planted-secrets transcript whose secrets must never reach the provider.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use codex_free_core::config::{CONFIG_FILE, Config};
use codex_free_models::RetryPolicy;
use codex_free_pipeline::cli::{ControlEnv, MemoriesCmd, execute, status};
use codex_free_pipeline::transcript_input::{SecretRedactor, TranscriptInput};
use codex_free_secrets::{MemoryStore, Secret, SecretStore};
use codex_free_store::Store;
use codex_free_transcripts::discover::SourceRoots;
use serde_json::json;

use codex_free_testkit::mock_provider::{MOCK_USAGE, MockProvider, session_id};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// Copy `src` to `dst` recursively, setting every file's mtime to `age` ago.
fn copy_tree(src: &Path, dst: &Path, age: Duration) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &to, age);
        } else {
            std::fs::copy(e.path(), &to).unwrap();
            let f = std::fs::File::options().write(true).open(&to).unwrap();
            f.set_modified(SystemTime::now() - age).unwrap();
        }
    }
}

fn env(home: &Path, roots: SourceRoots) -> ControlEnv {
    let s = MemoryStore::default();
    s.set("openai", &Secret::new("sk-test-openai-000000000000"))
        .unwrap();
    let secrets: Arc<dyn SecretStore> = Arc::new(s);
    let mut env = ControlEnv::new(home.to_path_buf(), secrets);
    env.input = Arc::new(TranscriptInput::new(roots));
    env.redactor = Arc::new(SecretRedactor);
    env.retry = RetryPolicy {
        base_delay: Duration::from_millis(20),
        ..RetryPolicy::default()
    };
    env
}

fn configure(home: &Path, mock: &MockProvider) {
    let text = json!({"memories": {
        "extract_model": "openai/gpt-5-mini",
        "max_rollouts_per_startup": 128,
        "providers": {"openai": {"base_url": mock.base_url()}},
    }})
    .to_string();
    Config::parse(&text)
        .unwrap()
        .0
        .save(&home.join(CONFIG_FILE))
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixtures_of_all_three_clis_end_to_end() {
    let mock = MockProvider::start().await;
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    let sessions = d.path().join("sessions");
    copy_tree(
        &data().join("sessions"),
        &sessions,
        Duration::from_secs(7 * 3600),
    );
    let roots = SourceRoots {
        codex_home: Some(sessions.join("codex")),
        claude_dir: Some(sessions.join("claude")),
        pi_dir: Some(sessions.join("pi")),
        state_home: None,
    };
    configure(&home, &mock);
    let env = env(&home, roots);
    let out = execute(MemoriesCmd::Run { json: false }, &env)
        .await
        .unwrap();

    let s = Store::open_in_home(&home).unwrap();
    let counts = s.source_counts().unwrap();
    let by = |src: &str| {
        counts
            .iter()
            .find(|c| c.source == src)
            .cloned()
            .unwrap_or_default()
    };
    let (codex, claude, pi) = (by("codex"), by("claude"), by("pi"));
    assert!(
        codex.threads >= 5 && claude.threads >= 5 && pi.threads >= 3,
        "{counts:?}"
    );
    let eligible: i64 = counts.iter().map(|c| c.threads - c.excluded).sum();
    // Every eligible session of every CLI: exactly one request, one stored output.
    let reqs = mock.requests();
    let mut ids: Vec<String> = reqs.iter().map(|r| session_id(&r.body)).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len() as i64, eligible, "{out}");
    assert_eq!(reqs.len() as i64, eligible, "each session sent once");
    for c in [&codex, &claude, &pi] {
        assert_eq!(c.with_output, c.threads - c.excluded, "{c:?}");
    }
    assert!(
        out.contains(&format!(
            "{eligible} claimed, {eligible} with output, 0 no output, 0 failed"
        )),
        "{out}"
    );

    // What was sent: the conversations, without injected context.
    let bodies: Vec<String> = reqs.iter().map(|r| r.body.to_string()).collect();
    assert!(
        bodies.iter().any(|b| b.contains("pnpm")),
        "the stated preference reaches the extractor"
    );
    assert!(
        bodies.iter().any(|b| b.contains("<environment_context>")),
        "environment context kept, as upstream keeps it"
    );
    assert!(bodies.iter().all(|b| !b.contains("<skills_instructions>")));

    // Usage rows and totals.
    let run = &s.recent_runs(1).unwrap()[0];
    let rows = s.run_usage(&run.id).unwrap();
    assert_eq!(rows.len() as i64, eligible);
    let (input, cached, output, _) = MOCK_USAGE;
    assert_eq!(run.input_tokens, eligible * input as i64);
    assert_eq!(run.cached_input_tokens, eligible * cached as i64);
    assert_eq!(run.output_tokens, eligible * output as i64);
    assert!(run.cost_usd.unwrap() > 0.0);
    let log = std::fs::read_to_string(home.join("memories.log")).unwrap();
    assert_eq!(log.lines().count(), 1);
    assert!(
        log.contains(&format!("{} tokens", eligible * (input + output) as i64)),
        "{log}"
    );
    let st = status(&env).unwrap().render();
    assert!(
        st.contains("codex") && st.contains("claude") && st.contains("pi"),
        "{st}"
    );

    // Nothing changed: a second run sends nothing.
    let out = execute(MemoriesCmd::Run { json: false }, &env)
        .await
        .unwrap();
    assert!(out.contains("nothing to do"), "{out}");
    assert_eq!(mock.requests().len() as i64, eligible);

    // Every transcript touched (newer mtime, same content), and a truncated copy of one
    // Codex session written beside it, newer: a fresh process extracts nothing again.
    let files = crate::support::files_under(&sessions);
    for f in &files {
        let h = std::fs::File::options().write(true).open(f).unwrap();
        h.set_modified(SystemTime::now() - Duration::from_secs(6 * 3600 + 600))
            .unwrap();
    }
    let codex_file = files
        .iter()
        .filter(|f| f.starts_with(sessions.join("codex")))
        .max_by_key(|f| std::fs::metadata(f).unwrap().len())
        .unwrap()
        .clone();
    let text = std::fs::read_to_string(&codex_file).unwrap();
    let half: String = text
        .lines()
        .take(text.lines().count() / 2)
        .map(|l| format!("{l}\n"))
        .collect();
    let copy = codex_file.with_file_name("copy-truncated.jsonl");
    std::fs::write(&copy, half).unwrap();
    let h = std::fs::File::options().write(true).open(&copy).unwrap();
    h.set_modified(SystemTime::now() - Duration::from_secs(6 * 3600 + 60))
        .unwrap();
    let env = self::env(&home, roots_of(&sessions));
    let out = execute(MemoriesCmd::Run { json: false }, &env)
        .await
        .unwrap();
    assert!(out.contains("nothing to do"), "{out}");
    assert_eq!(
        mock.requests().len() as i64,
        eligible,
        "a touch re-billed a session"
    );

    // New content in one transcript: exactly that session is extracted again.
    let mut grown = std::fs::read_to_string(&codex_file).unwrap();
    grown.push('\n');
    std::fs::write(&codex_file, grown).unwrap();
    let h = std::fs::File::options()
        .write(true)
        .open(&codex_file)
        .unwrap();
    h.set_modified(SystemTime::now() - Duration::from_secs(6 * 3600 + 30))
        .unwrap();
    let out = execute(MemoriesCmd::Run { json: false }, &env)
        .await
        .unwrap();
    assert_eq!(mock.requests().len() as i64, eligible + 1, "{out}");
}

fn roots_of(sessions: &Path) -> SourceRoots {
    SourceRoots {
        codex_home: Some(sessions.join("codex")),
        claude_dir: Some(sessions.join("claude")),
        pi_dir: Some(sessions.join("pi")),
        state_home: None,
    }
}

/// The planted values of `tests/data/secrets_corpus.txt` (`secret<TAB>text with «value»`).
fn planted() -> Vec<(String, String)> {
    let raw = std::fs::read_to_string(data().join("secrets_corpus.txt")).unwrap();
    raw.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split_once('\t'))
        .filter(|(k, _)| *k == "secret")
        .map(|(_, t)| {
            let t = t.replace('⏎', "\n");
            let s = t.find('«').unwrap() + '«'.len_utf8();
            let e = t.find('»').unwrap();
            (t.replace(['«', '»'], ""), t[s..e].to_string())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planted_secrets_never_reach_the_provider() {
    let mock = MockProvider::start().await;
    // The model echoes whatever it saw back into its memory: output redaction must catch it.
    mock.set_answer(|body| {
        json!({"rollout_summary": "echo", "rollout_slug": null, "raw_memory": body.to_string()})
            .to_string()
    });
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    let codex = d.path().join("codex");
    let dir = codex.join("sessions/2026/11/29");
    std::fs::create_dir_all(&dir).unwrap();
    let id = "01a2275c-0000-7000-8000-00000000beef";
    let secrets = planted();
    assert!(secrets.len() >= 20);
    let mut lines = vec![
        json!({"timestamp": "2026-11-29T12:00:00.000Z", "ordinal": 0, "type": "session_meta",
        "payload": {"id": id, "session_id": id, "cwd": "/home/dev/work/x", "originator": "codex_exec",
                    "cli_version": "0.171.0", "source": "exec", "timestamp": "2026-11-29T12:00:00.000Z"}}),
    ];
    for (i, (text, _)) in secrets.iter().enumerate() {
        let (role, kind) = if i % 2 == 0 {
            ("user", "input_text")
        } else {
            ("assistant", "output_text")
        };
        lines.push(json!({"timestamp": "2026-11-29T12:00:01.000Z", "ordinal": i + 1, "type": "response_item",
            "payload": {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}}));
    }
    let file = dir.join(format!("rollout-2026-11-29T12-00-00-{id}.jsonl"));
    std::fs::write(
        &file,
        lines
            .iter()
            .map(|l| l.to_string() + "\n")
            .collect::<String>(),
    )
    .unwrap();
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(7 * 3600))
        .unwrap();

    configure(&home, &mock);
    let roots = SourceRoots {
        codex_home: Some(codex),
        claude_dir: None,
        pi_dir: None,
        state_home: None,
    };
    let env = env(&home, roots);
    let out = execute(MemoriesCmd::Run { json: false }, &env)
        .await
        .unwrap();
    assert!(out.contains("1 claimed, 1 with output"), "{out}");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 1);
    let sent = reqs[0].body.to_string();
    // JSON escaping turns newlines into \n: probe each value's longest line.
    for (_, value) in &secrets {
        let probe = value.lines().max_by_key(|l| l.len()).unwrap_or(value);
        assert!(!sent.contains(probe), "{probe:?} reached the provider");
    }
    assert!(sent.contains("[REDACTED_SECRET]"));
    // And the stored memory (the model echoing its input) holds none either.
    let s = Store::open_in_home(&home).unwrap();
    let mem = s.stage1_output(id).unwrap().unwrap().raw_memory;
    for (_, value) in &secrets {
        let probe = value.lines().max_by_key(|l| l.len()).unwrap_or(value);
        assert!(!mem.contains(probe), "{probe:?} stored");
    }
}

/// One Codex transcript at `<codex>/sessions/...` run in `cwd` with the given user/assistant
/// messages, idle for 7 hours.
fn write_codex_session(codex: &Path, id: &str, cwd: &str, messages: &[&str]) {
    let dir = codex.join("sessions/2026/11/29");
    std::fs::create_dir_all(&dir).unwrap();
    let mut lines = vec![
        json!({"timestamp": "2026-11-29T12:00:00.000Z", "ordinal": 0, "type": "session_meta",
        "payload": {"id": id, "session_id": id, "cwd": cwd, "originator": "codex_exec",
                    "cli_version": "0.171.0", "source": "exec", "timestamp": "2026-11-29T12:00:00.000Z"}}),
    ];
    for (i, text) in messages.iter().enumerate() {
        let (role, kind) = if i % 2 == 0 {
            ("user", "input_text")
        } else {
            ("assistant", "output_text")
        };
        lines.push(json!({"timestamp": "2026-11-29T12:00:01.000Z", "ordinal": i + 1, "type": "response_item",
            "payload": {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}}));
    }
    let file = dir.join(format!("rollout-2026-11-29T12-00-00-{id}.jsonl"));
    let body: String = lines.iter().map(|l| l.to_string() + "\n").collect();
    std::fs::write(&file, body).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(7 * 3600))
        .unwrap();
}

/// Attack test: private spans in real transcripts (a closed one, one left open) and a
/// whole project listed in `memories.exclude_paths` never reach the provider; the public
/// text after an unclosed span's message still does (removed per message, not to the end
/// of the session); the preview shows the removal as a marker and names the excluded
/// session with its pattern; status says it is excluded. Before: the excluded project was
/// sent, and an open `<private>` in one prompt removed every later message of the session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_spans_and_excluded_projects_never_reach_the_provider() {
    let mock = MockProvider::start().await;
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    let codex = d.path().join("codex");
    let public = "01a2275c-0000-7000-8000-0000000000a1";
    let excluded = "01a2275c-0000-7000-8000-0000000000b2";
    write_codex_session(
        &codex,
        public,
        "/home/dev/work/oss",
        &[
            "fix the build <private>PLANTED-PRIVATE-CLOSED home address</private> with pnpm",
            "done",
            "deploy <private>PLANTED-PRIVATE-OPEN db.internal:5432 admin",
            "which branch?",
            "AFTER-THE-OPEN-SPAN use the release branch",
        ],
    );
    write_codex_session(
        &codex,
        excluded,
        "/home/dev/clients/acme/api",
        &["PLANTED-EXCLUDED-PROJECT contract terms", "noted"],
    );
    configure(&home, &mock);
    let mut cfg = Config::load(&home.join(CONFIG_FILE)).unwrap().config;
    cfg.memories.exclude_paths = vec!["/home/dev/clients/*".into()];
    cfg.save(&home.join(CONFIG_FILE)).unwrap();
    let roots = SourceRoots {
        codex_home: Some(codex),
        claude_dir: None,
        pi_dir: None,
        state_home: None,
    };
    let env = env(&home, roots);

    let preview = execute(
        MemoriesCmd::Preview {
            next: 5,
            rollout: None,
            json: true,
        },
        &env,
    )
    .await
    .unwrap();
    assert!(!preview.contains("PLANTED"), "{preview}");
    let p: serde_json::Value = serde_json::from_str(&preview).unwrap();
    let reqs = p["requests"].as_array().unwrap();
    assert_eq!(reqs.len(), 1, "{preview}");
    assert_eq!(reqs[0]["thread_id"], public);
    assert_eq!(reqs[0]["redaction_markers"], 2, "{preview}");
    assert_eq!(p["excluded"][0]["id"], excluded, "{preview}");
    assert_eq!(p["excluded"][0]["pattern"], "/home/dev/clients/*");
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
        text.contains(&format!("excluded: session {excluded}")) && !text.contains("PLANTED"),
        "{text}"
    );
    let e = execute(
        MemoriesCmd::Preview {
            next: 1,
            rollout: Some(excluded.into()),
            json: false,
        },
        &env,
    )
    .await
    .unwrap_err();
    assert!(e.to_string().contains("memories.exclude_paths"), "{e}");
    assert!(mock.requests().is_empty());

    let out = execute(MemoriesCmd::Force { json: false }, &env)
        .await
        .unwrap();
    assert!(out.contains("1 claimed"), "{out}");
    let sent: Vec<String> = mock.requests().iter().map(|r| r.body.to_string()).collect();
    assert_eq!(sent.len(), 1, "the excluded project is never sent");
    assert!(!sent[0].contains("PLANTED"), "{}", sent[0]);
    assert!(sent[0].contains("AFTER-THE-OPEN-SPAN"), "{}", sent[0]);
    assert!(sent[0].contains("[private: removed]"), "{}", sent[0]);
    let st = status(&env).unwrap();
    assert_eq!(st.excluded.len(), 1);
    assert!(
        st.render().contains("excluded by memories.exclude_paths"),
        "{}",
        st.render()
    );
}

/// The forecast on the shared fixtures: the backlog's sessions per source are the ones a
/// run would send, its input tokens within 10 % of what the gate counts on the requests
/// the preview shows (what the run then sends), costs for the configured model and cheaper
/// ones, and nothing sent or claimed; after the run the backlog is empty and the month's
/// spend is projected. Before: there was no forecast.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forecast_of_the_fixtures_matches_what_the_run_sends() {
    let mock = MockProvider::start().await;
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    let sessions = d.path().join("sessions");
    copy_tree(
        &data().join("sessions"),
        &sessions,
        Duration::from_secs(7 * 3600),
    );
    configure(&home, &mock);
    let env = env(&home, roots_of(&sessions));
    let f: serde_json::Value = serde_json::from_str(
        &execute(MemoriesCmd::Forecast { json: true }, &env)
            .await
            .unwrap(),
    )
    .unwrap();
    let p: serde_json::Value = serde_json::from_str(
        &execute(
            MemoriesCmd::Preview {
                next: 128,
                rollout: None,
                json: true,
            },
            &env,
        )
        .await
        .unwrap(),
    )
    .unwrap();
    let reqs = p["requests"].as_array().unwrap();
    assert!(reqs.len() >= 10, "{}", reqs.len());
    assert_eq!(f["sessions"].as_u64().unwrap() as usize, reqs.len(), "{f}");
    for src in ["codex", "claude", "pi"] {
        let want = reqs.iter().filter(|r| r["source"] == src).count() as u64;
        let got = f["sources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["source"] == src)
            .map_or(0, |s| s["sessions"].as_u64().unwrap());
        assert_eq!(got, want, "{src}: {f}");
    }
    let sent: u64 = reqs
        .iter()
        .map(|r| r["input_tokens"].as_u64().unwrap())
        .sum();
    let est = f["input_tokens"].as_u64().unwrap();
    let off = (est as f64 - sent as f64).abs() / sent as f64;
    assert!(
        off < 0.10,
        "forecast {est} vs sent {sent} tokens ({:.1} %)",
        off * 100.0
    );
    let models = f["models"].as_array().unwrap();
    assert_eq!(models[0]["model"], "openai/gpt-5-mini");
    assert_eq!(models[0]["configured"], true);
    assert!(models[0]["cost_usd"].as_f64().unwrap() > 0.0, "{f}");
    assert!(
        models[1..]
            .iter()
            .any(|m| m["cost_usd"].as_f64().unwrap() < models[0]["cost_usd"].as_f64().unwrap()),
        "a cheaper alternative: {f}"
    );
    assert!(mock.requests().is_empty(), "a forecast sends nothing");
    let text = execute(MemoriesCmd::Forecast { json: false }, &env)
        .await
        .unwrap();
    assert!(
        text.contains("backlog:") && text.contains("(configured)"),
        "{text}"
    );
    execute(MemoriesCmd::Run { json: false }, &env)
        .await
        .unwrap();
    assert_eq!(mock.requests().len(), reqs.len());
    let after: serde_json::Value = serde_json::from_str(
        &execute(MemoriesCmd::Forecast { json: true }, &env)
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(after["sessions"], 0, "{after}");
    assert!(after["month_spent_usd"].as_f64().unwrap() > 0.0, "{after}");
    assert!(
        after["month_projected_usd"].as_f64().unwrap()
            >= after["month_spent_usd"].as_f64().unwrap()
    );
    println!(
        "forecast: {} sessions, {est} tokens estimated vs {sent} sent ({:.2} %)",
        reqs.len(),
        off * 100.0
    );
}
