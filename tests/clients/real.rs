//! The real agent CLIs — Codex CLI (`@openai/codex`), Claude Code
//! (`@anthropic-ai/claude-code`) and pi (`@mariozechner/pi-coding-agent`), installed by
//! scripts/install-deps.sh — each in a fresh HOME holding only what `codex-free connect`
//! wrote, run offline against the mock model (crates/testkit, streaming). Asserted from
//! the mock's recorded requests: the memory summary's text reaches the model, and (Codex,
//! Claude) the model's call of our `get_environment` tool reaches this server and its answer
//! comes back in the next request. A CLI that is not on PATH is skipped with a message.

use std::path::{Path, PathBuf};
use std::time::Duration;

use codex_free_testkit::mock_provider::{MockProvider, MockReply, Recorded};
use serde_json::Value;

use crate::support::{self, which};

/// In the memory summary: must reach the model's request.
const CODEWORD: &str = "periwinkle-7431";
/// In get_environment's answer: proves our tool ran and its output went back to the model.
const TOOL_MARK: &str = "project root from:";

/// One real CLI at a time: each starts Node, our server and the mock; together on two
/// cores they made MCP start-up slow enough for a CLI to send its first request without
/// our tools.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

struct Fresh {
    _dir: tempfile::TempDir,
    home: PathBuf,
    state: PathBuf,
    project: PathBuf,
}

fn fresh() -> Fresh {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let state = dir.path().join("state");
    let project = dir.path().join("project");
    for d in [&home, &state.join("memories"), &project] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(
        state.join("memories/memory_summary.md"),
        // A summary in the served shape: the spawned server's first phase-2 pass adopts it
        // (a malformed one is discarded as a hand edit that fails the checks, and the
        // linked copies follow the folder).
        format!(
            "v1\n## User Profile\n- Release checklist codeword: {CODEWORD}.\n## User preferences\n\n## General Tips\n\n## What's in Memory\n"
        ),
    )
    .unwrap();
    // Pipeline off in the spawned servers (no model key here, and no background work).
    std::fs::write(
        state.join("codex.config.json"),
        r#"{"memories": {"generate_memories": false}}"#,
    )
    .unwrap();
    std::fs::write(project.join("README.md"), "a project\n").unwrap();
    Fresh {
        _dir: dir,
        home,
        state,
        project,
    }
}

fn connect(f: &Fresh, client: &str) {
    let o = std::process::Command::new(support::bin())
        .args(["connect", client])
        .env("HOME", &f.home)
        .env("CODEX_FREE_HOME", &f.state)
        .env_remove("CODEX_HOME")
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("PI_CODING_AGENT_DIR")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Our `get_environment` tool in the request's `tools`, as (namespace, name): Claude lists
/// `mcp__codex_free__get_environment`, Codex a `mcp__codex_free` namespace holding
/// `get_environment`.
fn our_tool(body: &Value) -> Option<(Option<String>, String)> {
    for t in body.get("tools")?.as_array()? {
        let name = t.get("name").and_then(Value::as_str).unwrap_or("");
        if name.contains("codex_free") && name.contains("get_environment") {
            return Some((None, name.to_string()));
        }
        if t.get("type").and_then(Value::as_str) == Some("namespace") && name.contains("codex_free")
        {
            for inner in t.get("tools")?.as_array()? {
                if inner.get("name").and_then(Value::as_str) == Some("get_environment") {
                    return Some((Some(name.to_string()), "get_environment".into()));
                }
            }
        }
    }
    None
}

/// Call our tool once (when offered and not yet answered), else say done.
fn script(mock: &MockProvider) {
    mock.set_reply(|body| {
        let text = body.to_string();
        if text.contains(TOOL_MARK) {
            return MockReply::Text("Done: the environment was read.".into());
        }
        match our_tool(body) {
            Some((namespace, name)) => MockReply::Tool {
                namespace,
                name,
                arguments: serde_json::json!({}),
            },
            None => MockReply::Text("ok".into()),
        }
    });
}

fn dump(reqs: &[Recorded]) -> String {
    reqs.iter()
        .map(|r| {
            let s = r.body.to_string();
            format!("{} {}…", r.path, &s[..s.len().min(600)])
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `program` without the caller's provider keys or agent-home overrides (set what the
/// test needs after this).
fn command(program: PathBuf) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(program);
    for k in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "CODEX_HOME",
        "CLAUDE_CONFIG_DIR",
        "PI_CODING_AGENT_DIR",
    ] {
        cmd.env_remove(k);
    }
    cmd
}

async fn run(mut cmd: tokio::process::Command, what: &str) -> std::process::Output {
    cmd.stdin(std::process::Stdio::null()).kill_on_drop(true);
    match tokio::time::timeout(Duration::from_secs(120), cmd.output()).await {
        Ok(o) => o.unwrap(),
        Err(_) => panic!("{what} did not finish in 120 s"),
    }
}

/// Asserts the linked copy (not only the MCP instructions, which carry the summary too)
/// reached the model: the block's line on where more detail lives names the memory folder
/// by path, which the instructions never do.
fn assert_memory_and_tool(f: &Fresh, reqs: &[Recorded], tool: bool, out: &std::process::Output) {
    let linked = format!(
        "rollout_summaries/ under {}",
        f.state.join("memories").display()
    );
    let ctx = || {
        format!(
            "stdout: {}\nstderr: {}\nrequests:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            dump(reqs)
        )
    };
    if let Some(d) = std::env::var_os("CODEX_FREE_DUMP_REQUESTS") {
        // Debugging aid: every request body, one file each.
        for (i, r) in reqs.iter().enumerate() {
            let _ = std::fs::write(
                Path::new(&d).join(format!(
                    "{}-req-{i}.json",
                    f.project.display().to_string().replace('/', "_")
                )),
                r.body.to_string(),
            );
        }
    }
    assert!(!reqs.is_empty(), "no request reached the mock\n{}", ctx());
    assert!(
        reqs.iter().any(|r| r.body.to_string().contains(CODEWORD)),
        "the memory summary is in no request\n{}",
        ctx()
    );
    assert!(
        reqs.iter()
            .any(|r| r.body.to_string().contains(&linked) && r.body.to_string().contains(CODEWORD)),
        "the linked copy of the memory (the agent's own instructions file) is in no request\n{}",
        ctx()
    );
    if tool {
        assert!(
            reqs.iter().any(|r| our_tool(&r.body).is_some()),
            "our tool was not offered\n{}",
            ctx()
        );
        assert!(
            reqs.iter().any(|r| r.body.to_string().contains(TOOL_MARK)),
            "our tool's answer did not come back to the model\n{}",
            ctx()
        );
    }
}

/// Run the CLI built by `make` against a fresh scripted mock, again (at most 3 runs in all)
/// when its first request went out before our MCP server was listed: neither Codex nor
/// Claude Code waits for MCP servers, and on two busy cores ours sometimes starts after
/// the CLI's first request (seen about once in five runs under a load of 9). A CLI that
/// never lists our tool still fails the assertions on the last run.
async fn with_mcp_retry(
    make: impl Fn(&MockProvider) -> tokio::process::Command,
    what: &str,
) -> (Vec<Recorded>, std::process::Output) {
    let mut last = None;
    for attempt in 1..=3 {
        let mock = MockProvider::start().await;
        script(&mock);
        let out = run(make(&mock), what).await;
        let reqs = mock.requests();
        mock.stop();
        let listed = reqs.first().is_some_and(|r| our_tool(&r.body).is_some());
        if listed {
            return (reqs, out);
        }
        eprintln!("{what}: run {attempt} sent its first request without our MCP tools");
        last = Some((reqs, out));
    }
    last.expect("at least one run")
}

#[tokio::test]
async fn codex_cli_gets_the_memory_and_calls_our_tool() {
    let _serial = SERIAL.lock().await;
    let Some(codex) = which("codex") else {
        eprintln!("codex not on PATH: skipped (scripts/install-deps.sh installs @openai/codex)");
        return;
    };
    let f = fresh();
    connect(&f, "codex");
    let make = |mock: &MockProvider| {
        let base = format!("http://{}/v1", mock.addr);
        let mut cmd = command(codex.clone());
        cmd.current_dir(&f.project)
        .env("HOME", &f.home)
        .env("MOCK_API_KEY", "mock-key")
        .args(["exec", "--skip-git-repo-check", "--ephemeral"])
        .args(["-c", "model_provider=\"mock\""])
        .args(["-c", "model=\"mock-model\""])
        .args(["-c", &format!("model_providers.mock={{ name = \"mock\", base_url = \"{base}\", wire_api = \"responses\", env_key = \"MOCK_API_KEY\" }}")])
        .args(["-c", "approval_policy=\"never\""])
        // Codex does not wait for an optional MCP server before its first request; on two
        // busy cores ours could lose that race. `required` (a flag here, not written by
        // connect: a user's Codex must not fail when our server does) makes it wait.
        .args(["-c", "mcp_servers.codex_free.required=true"])
        .args(["-c", "mcp_servers.codex_free.startup_timeout_sec=60"])
        .args(["-c", "mcp_servers.codex_free.default_tools_approval_mode=\"approve\""])
        .arg("Read the environment with the codex_free get_environment tool.");
        cmd
    };
    let (reqs, out) = with_mcp_retry(make, "codex exec").await;
    assert_memory_and_tool(&f, &reqs, true, &out);
}

#[tokio::test]
async fn claude_code_gets_the_memory_and_calls_our_tool() {
    let _serial = SERIAL.lock().await;
    let Some(claude) = which("claude") else {
        eprintln!("claude not on PATH: skipped (scripts/install-deps.sh installs it)");
        return;
    };
    let f = fresh();
    connect(&f, "claude");
    let make = |mock: &MockProvider| {
        let mut cmd = command(claude.clone());
        cmd.current_dir(&f.project)
            .env("HOME", &f.home)
            .env("ANTHROPIC_BASE_URL", format!("http://{}", mock.addr))
            .env("ANTHROPIC_API_KEY", "mock-key")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            // Claude Code connects MCP servers in the background and, in `-p`, may send its
            // first request before ours answers (anthropics/claude-code#65094); this asks it
            // to wait for them, as `required` does for Codex.
            .env("MCP_CONNECTION_NONBLOCKING", "false")
            .env("DISABLE_AUTOUPDATER", "1")
            .args(["-p", "--model", "claude-sonnet-4-5"])
            .arg("--allowedTools=mcp__codex_free__get_environment")
            .arg("Read the environment with the codex_free get_environment tool.");
        cmd
    };
    let (reqs, out) = with_mcp_retry(make, "claude -p").await;
    assert_memory_and_tool(&f, &reqs, true, &out);
}

#[tokio::test]
async fn pi_gets_the_memory_from_its_agents_md() {
    let _serial = SERIAL.lock().await;
    let Some(pi) = which("pi") else {
        eprintln!("pi not on PATH: skipped (scripts/install-deps.sh installs it)");
        return;
    };
    let f = fresh();
    connect(&f, "pi");
    let mock = MockProvider::start().await;
    script(&mock);
    // pi reaches a local model only through a provider entry in models.json (no flag): the
    // one file besides connect's. The memory block is in AGENTS.md, written by connect.
    let agent = f.home.join(".pi/agent");
    write_pi_provider(&agent, &format!("http://{}/v1", mock.addr));
    let mut cmd = command(pi);
    cmd.current_dir(&f.project)
        .env("HOME", &f.home)
        .env("PI_OFFLINE", "1")
        .args(["--offline", "--no-session", "-p"])
        .args(["--provider", "mock", "--model", "mock-model"])
        .arg("Say ok.");
    let out = run(cmd, "pi -p").await;
    assert_memory_and_tool(&f, &mock.requests(), false, &out);
    mock.stop();
}

fn write_pi_provider(agent: &Path, base: &str) {
    std::fs::write(
        agent.join("models.json"),
        serde_json::json!({
            "providers": {"mock": {
                "baseUrl": base, "api": "openai-completions", "apiKey": "mock-key",
                "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
                "models": [{"id": "mock-model"}]
            }}
        })
        .to_string(),
    )
    .unwrap();
}

/// In the project's AGENTS.md: Codex loads it itself, so it must reach the model once.
const AGENTS_MARK: &str = "AGENTSMD-ONCE-7723";

/// The first conversation: a plain MCP client (our binary over stdio, the user's HOME)
/// saves a 5-step plan and 6 notes of `note_len` bytes, as an agent would with
/// `update_plan` and `remember`; each write also refreshes connect's managed blocks.
async fn first_conversation(f: &Fresh, note_len: usize) {
    use rmcp::ServiceExt;
    use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
    use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
    let cmd = tokio::process::Command::new(support::bin()).configure(|c| {
        c.args(["serve", "--stdio", "--project"])
            .arg(&f.project)
            .env("HOME", &f.home)
            .env("CODEX_FREE_HOME", &f.state)
            .env("CODEX_FREE_LOG", "warn")
            .env_remove("CODEX_HOME")
            .env_remove("CLAUDE_CONFIG_DIR");
    });
    let (t, _) = TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .unwrap();
    let c = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("first-conversation", "1.0.0"),
    )
    .serve(t)
    .await
    .unwrap();
    let call = |name: &str, args: Value| {
        CallToolRequestParams::new(name.to_string())
            .with_arguments(args.as_object().cloned().unwrap())
    };
    let plan: Vec<Value> = (0..5)
        .map(|i| serde_json::json!({"step": format!("PLANSTEP{i} part {i}"), "status": if i == 0 { "completed" } else { "pending" }}))
        .collect();
    let r = c
        .call_tool(call("update_plan", serde_json::json!({"plan": plan})))
        .await
        .unwrap();
    assert_ne!(r.is_error, Some(true), "{r:?}");
    for i in 0..6 {
        let head = format!("SEEDNOTE{i}: decision {i} ");
        let value = format!("{head}{}", "d".repeat(note_len.saturating_sub(head.len())));
        let r = c
            .call_tool(call(
                "remember",
                serde_json::json!({"key": format!("seed-note-{i}"), "value": value}),
            ))
            .await
            .unwrap();
        assert_ne!(r.is_error, Some(true), "{r:?}");
    }
    c.cancel().await.unwrap();
}

fn fresh_with_agents_md() -> Fresh {
    let f = fresh();
    std::fs::write(
        f.project.join("AGENTS.md"),
        format!("# Rules\n\n{AGENTS_MARK}: run the tests.\n"),
    )
    .unwrap();
    f
}

fn codex_exec(
    codex: &Path,
    f: &Fresh,
    mock: &MockProvider,
    model: &str,
) -> tokio::process::Command {
    let base = format!("http://{}/v1", mock.addr);
    let mut cmd = command(codex.to_path_buf());
    cmd.current_dir(&f.project)
        .env("HOME", &f.home)
        .env("MOCK_API_KEY", "mock-key")
        .args(["exec", "--skip-git-repo-check", "--ephemeral"])
        .args(["-c", "model_provider=\"mock\""])
        .args(["-c", &format!("model=\"{model}\"")])
        .args(["-c", &format!("model_providers.mock={{ name = \"mock\", base_url = \"{base}\", wire_api = \"responses\", env_key = \"MOCK_API_KEY\" }}")])
        .args(["-c", "approval_policy=\"never\""])
        .args(["-c", "mcp_servers.codex_free.required=true"])
        .args(["-c", "mcp_servers.codex_free.startup_timeout_sec=60"])
        .arg("Continue the saved plan.");
    cmd
}

fn assert_saved_state(body: &str, what: &str) {
    for k in 0..5 {
        assert!(
            body.contains(&format!("PLANSTEP{k}")),
            "{what}: plan step {k} missing\n{body}"
        );
    }
    for k in 0..6 {
        assert!(
            body.contains(&format!("SEEDNOTE{k}")),
            "{what}: note {k} missing\n{body}"
        );
    }
}

/// Second conversation in Codex, both kinds of model: with one Codex has no metadata for,
/// our instructions reach the request; with gpt-5.5 (known metadata: MCP tools behind
/// tool_search, no server instructions) the saved state arrives through the block
/// `connect codex` keeps in `~/.codex/AGENTS.md`. Either way every step and note is in the
/// first request, and the project's AGENTS.md is in it once.
#[tokio::test]
async fn codex_second_conversation_sees_the_saved_plan_and_notes() {
    let _serial = SERIAL.lock().await;
    let Some(codex) = which("codex") else {
        eprintln!("codex not on PATH: skipped");
        return;
    };
    let f = fresh_with_agents_md();
    connect(&f, "codex");
    first_conversation(&f, 120).await;
    let block = std::fs::read_to_string(f.home.join(".codex/AGENTS.md")).unwrap();
    assert_saved_state(&block, "~/.codex/AGENTS.md");
    for model in ["mock-model", "gpt-5.5"] {
        let mock = MockProvider::start().await;
        mock.set_reply(|_| MockReply::Text("ok".into()));
        let out = run(codex_exec(&codex, &f, &mock, model), "codex exec").await;
        let reqs = mock.requests();
        mock.stop();
        let first = reqs
            .first()
            .unwrap_or_else(|| {
                panic!(
                    "{model}: no request\n{}",
                    String::from_utf8_lossy(&out.stderr)
                )
            })
            .body
            .to_string();
        assert_saved_state(&first, model);
        assert_eq!(
            first.matches(AGENTS_MARK).count(),
            1,
            "{model}: the project's AGENTS.md once\n{first}"
        );
        if model == "gpt-5.5" {
            assert!(
                !first.contains("This server gives you tools over one project"),
                "{model}: Codex was expected to leave server instructions out; the block is then the only path\n{first}"
            );
        }
    }
}

/// Second conversation in Claude Code: the request holds every plan step, the notes that
/// fit Claude's 2,048 characters of instructions, and the exact line naming `recall`.
#[tokio::test]
async fn claude_second_conversation_sees_the_plan_the_notes_that_fit_and_recall() {
    let _serial = SERIAL.lock().await;
    let Some(claude) = which("claude") else {
        eprintln!("claude not on PATH: skipped");
        return;
    };
    let f = fresh_with_agents_md();
    connect(&f, "claude");
    first_conversation(&f, 400).await;
    let make = |mock: &MockProvider| {
        let mut cmd = command(claude.clone());
        cmd.current_dir(&f.project)
            .env("HOME", &f.home)
            .env("ANTHROPIC_BASE_URL", format!("http://{}", mock.addr))
            .env("ANTHROPIC_API_KEY", "mock-key")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            // Claude Code connects MCP servers in the background and, in `-p`, may send its
            // first request before ours answers (anthropics/claude-code#65094); this asks it
            // to wait for them, as `required` does for Codex.
            .env("MCP_CONNECTION_NONBLOCKING", "false")
            .env("DISABLE_AUTOUPDATER", "1")
            .args(["-p", "--model", "claude-sonnet-4-5"])
            .arg("--allowedTools=mcp__codex_free__get_environment")
            .arg("Continue the saved plan.");
        cmd
    };
    let (reqs, out) = with_mcp_retry(make, "claude -p").await;
    let body = reqs
        .iter()
        .map(|r| r.body.to_string())
        .find(|b| b.contains("PLANSTEP0"))
        .unwrap_or_else(|| {
            panic!(
                "no request with the saved state\n{}\nrequests: {}",
                String::from_utf8_lossy(&out.stderr),
                reqs.iter()
                    .map(|r| {
                        let b = r.body.to_string();
                        let i = b.find("codex_free").unwrap_or(0);
                        format!(
                            "tools:{} instr:{} at {i}: {}",
                            b.contains("mcp__codex_free"),
                            b.contains("MCP Server Instructions"),
                            b.chars()
                                .skip(i.saturating_sub(200))
                                .take(300)
                                .collect::<String>()
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n---\n")
            )
        });
    for k in 0..5 {
        assert!(
            body.contains(&format!("PLANSTEP{k}")),
            "plan step {k} missing\n{body}"
        );
    }
    let shown = (0..6)
        .filter(|k| body.contains(&format!("SEEDNOTE{k}")))
        .count();
    assert!((1..6).contains(&shown), "{shown} notes shown\n{body}");
    assert!(
        body.contains("`recall` returns the saved state"),
        "the exact recall line\n{body}"
    );
}

/// Our tool `tool` in the request's `tools`, as (namespace, name) the way [`our_tool`]
/// finds `get_environment`.
fn tool_ref(body: &Value, tool: &str) -> Option<(Option<String>, String)> {
    for t in body.get("tools")?.as_array()? {
        let name = t.get("name").and_then(Value::as_str).unwrap_or("");
        if name.contains("codex_free") && name.ends_with(tool) {
            return Some((None, name.to_string()));
        }
        if t.get("type").and_then(Value::as_str) == Some("namespace") && name.contains("codex_free")
        {
            for inner in t.get("tools")?.as_array()? {
                if inner.get("name").and_then(Value::as_str) == Some(tool) {
                    return Some((Some(name.to_string()), tool.to_string()));
                }
            }
        }
    }
    None
}

/// With a model Codex has no metadata for, Codex cuts a result to about 10,000 bytes (head
/// and tail). After `connect codex` its config holds the top-level `tool_output_token_limit` and the server
/// knows it: a 25,000-byte file comes back in one page and reaches the model whole.
#[tokio::test]
async fn codex_passes_a_whole_page_after_connect_raises_its_limit() {
    let _serial = SERIAL.lock().await;
    let Some(codex) = which("codex") else {
        eprintln!("codex not on PATH: skipped");
        return;
    };
    let f = fresh();
    let text: String = (1..=1000)
        .map(|i| format!("line {i:04} {}\n", "x".repeat(14)))
        .collect();
    std::fs::write(f.project.join("big.txt"), &text).unwrap();
    connect(&f, "codex");
    let cfg = std::fs::read_to_string(f.home.join(".codex/config.toml")).unwrap();
    assert!(cfg.contains("output_token_limit = 12500"), "{cfg}");
    let make = |mock: &MockProvider| {
        mock.set_reply(|body| {
            if body.to_string().contains("function_call_output") {
                return MockReply::Text("Done.".into());
            }
            match tool_ref(body, "read_file") {
                Some((namespace, name)) => MockReply::Tool {
                    namespace,
                    name,
                    arguments: serde_json::json!({"path": "big.txt"}),
                },
                None => MockReply::Text("ok".into()),
            }
        });
        let mut cmd = codex_exec(&codex, &f, mock, "mock-model");
        cmd.args([
            "-c",
            "mcp_servers.codex_free.default_tools_approval_mode=\"approve\"",
        ]);
        cmd
    };
    let mut got = None;
    for attempt in 1..=3 {
        let mock = MockProvider::start().await;
        let out = run(make(&mock), "codex exec").await;
        let reqs = mock.requests();
        mock.stop();
        if reqs
            .first()
            .is_some_and(|r| tool_ref(&r.body, "read_file").is_some())
        {
            got = Some((reqs, out));
            break;
        }
        eprintln!("codex exec: run {attempt} sent its first request without our MCP tools");
    }
    let (reqs, out) = got.expect("our tools were listed in one of 3 runs");
    let answer = reqs
        .iter()
        .map(|r| r.body.to_string())
        .find(|b| b.contains("function_call_output"))
        .unwrap_or_else(|| {
            panic!(
                "no tool answer reached the model\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let at = answer.find("function_call_output").unwrap_or(0);
    let shown = &answer[at..answer.len().min(at + 60_000)];
    for want in ["line 0001", "line 0500", "line 0765", "line 1000"] {
        assert!(
            answer.contains(want),
            "{want} did not reach the model: {}…{}",
            &shown[..shown.len().min(1500)],
            &shown[shown.len().saturating_sub(3000)..]
        );
    }
    assert!(!answer.contains("tokens truncated"), "Codex cut the page");
    assert!(
        !answer.contains("call again with offset"),
        "one page holds the file"
    );
}
