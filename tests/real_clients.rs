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

use crate::support;

/// In the memory summary: must reach the model's request.
const CODEWORD: &str = "periwinkle-7431";
/// In get_environment's answer: proves our tool ran and its output went back to the model.
const TOOL_MARK: &str = "project root from:";

/// One real CLI at a time: each starts Node, our server and the mock; together on two
/// cores they made MCP start-up slow enough for a CLI to send its first request without
/// our tools.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn which(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

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
        format!("# Memory\n\n- Release checklist codeword: {CODEWORD}.\n"),
    )
    .unwrap();
    // Pipeline off in the spawned servers (no model key here, and no background work).
    std::fs::write(
        state.join("codex.config.json"),
        r#"{"memories": {"generateMemories": false}}"#,
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
