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

/// The first tool whose name contains `codex_free` and `get_environment`, anywhere in the
/// request's `tools` (Responses, Chat and Anthropic spell tools differently).
fn our_tool(body: &Value) -> Option<String> {
    fn walk(v: &Value, out: &mut Option<String>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(n)) = m.get("name")
                    && n.contains("codex_free")
                    && n.contains("get_environment")
                    && out.is_none()
                {
                    *out = Some(n.clone());
                }
                m.values().for_each(|x| walk(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out = None;
    walk(body.get("tools")?, &mut out);
    out
}

/// Call our tool once (when offered and not yet answered), else say done.
fn script(mock: &MockProvider) {
    mock.set_reply(|body| {
        let text = body.to_string();
        if text.contains(TOOL_MARK) {
            return MockReply::Text("Done: the environment was read.".into());
        }
        match our_tool(body) {
            Some(name) => MockReply::Tool {
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

async fn run(mut cmd: tokio::process::Command, what: &str) -> std::process::Output {
    cmd.stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("CODEX_HOME")
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("PI_CODING_AGENT_DIR");
    match tokio::time::timeout(Duration::from_secs(120), cmd.output()).await {
        Ok(o) => o.unwrap(),
        Err(_) => panic!("{what} did not finish in 120 s"),
    }
}

fn assert_memory_and_tool(reqs: &[Recorded], tool: bool, out: &std::process::Output) {
    let ctx = || {
        format!(
            "stdout: {}\nstderr: {}\nrequests:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            dump(reqs)
        )
    };
    assert!(!reqs.is_empty(), "no request reached the mock\n{}", ctx());
    assert!(
        reqs.iter().any(|r| r.body.to_string().contains(CODEWORD)),
        "the memory summary is in no request\n{}",
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

#[tokio::test]
async fn codex_cli_gets_the_memory_and_calls_our_tool() {
    let Some(codex) = which("codex") else {
        eprintln!("codex not on PATH: skipped (scripts/install-deps.sh installs @openai/codex)");
        return;
    };
    let f = fresh();
    connect(&f, "codex");
    let mock = MockProvider::start().await;
    script(&mock);
    let base = format!("http://{}/v1", mock.addr);
    let mut cmd = tokio::process::Command::new(codex);
    cmd.current_dir(&f.project)
        .env("HOME", &f.home)
        .env("MOCK_API_KEY", "mock-key")
        .args(["exec", "--skip-git-repo-check", "--ephemeral"])
        .args(["-c", "model_provider=\"mock\""])
        .args(["-c", "model=\"mock-model\""])
        .args(["-c", &format!("model_providers.mock={{ name = \"mock\", base_url = \"{base}\", wire_api = \"responses\", env_key = \"MOCK_API_KEY\" }}")])
        .args(["-c", "approval_policy=\"never\""])
        .args(["-c", "mcp_servers.codex_free.default_tools_approval_mode=\"approve\""])
        .arg("Read the environment with the codex_free get_environment tool.");
    let out = run(cmd, "codex exec").await;
    assert_memory_and_tool(&mock.requests(), true, &out);
    mock.stop();
}

#[tokio::test]
async fn claude_code_gets_the_memory_and_calls_our_tool() {
    let Some(claude) = which("claude") else {
        eprintln!("claude not on PATH: skipped (scripts/install-deps.sh installs it)");
        return;
    };
    let f = fresh();
    connect(&f, "claude");
    let mock = MockProvider::start().await;
    script(&mock);
    let mut cmd = tokio::process::Command::new(claude);
    cmd.current_dir(&f.project)
        .env("HOME", &f.home)
        .env("ANTHROPIC_BASE_URL", format!("http://{}", mock.addr))
        .env("ANTHROPIC_API_KEY", "mock-key")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .args(["-p", "--model", "claude-sonnet-4-5"])
        .args(["--allowedTools", "mcp__codex_free__get_environment"])
        .arg("Read the environment with the codex_free get_environment tool.");
    let out = run(cmd, "claude -p").await;
    assert_memory_and_tool(&mock.requests(), true, &out);
    mock.stop();
}

#[tokio::test]
async fn pi_gets_the_memory_from_its_agents_md() {
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
    let mut cmd = tokio::process::Command::new(pi);
    cmd.current_dir(&f.project)
        .env("HOME", &f.home)
        .env("PI_OFFLINE", "1")
        .args(["--offline", "--no-session", "-p"])
        .args(["--provider", "mock", "--model", "mock-model"])
        .arg("Say ok.");
    let out = run(cmd, "pi -p").await;
    assert_memory_and_tool(&mock.requests(), false, &out);
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
