//! Independent and rmcp clients driving the real binary: the official Python MCP SDK
//! (`pip install mcp`, installed by scripts/install-deps.sh) over stdio and HTTP, and
//! rmcp's client over stdio, reading a file page by page through the continuation lines.

use std::process::Command;

use crate::support::{Env, call};

fn numbered(n: usize) -> String {
    (1..=n)
        .map(|i| format!("line {i} of the big file\n"))
        .collect()
}

fn python_client(args: &[&str]) -> serde_json::Value {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/clients/python_sdk_client.py"
    );
    let out = Command::new("python3")
        .arg(script)
        .args(args)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "Python MCP SDK client failed (is `mcp` installed? run scripts/install-deps.sh)\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The SDK ends an HTTP session with DELETE and logs any answer but 200/204 as a failure.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("Session termination failed"),
        "the server's answer to DELETE /mcp: {stderr}"
    );
    serde_json::from_slice(&out.stdout).expect("client prints JSON")
}

/// The Python SDK sends no `_meta`: in multi-project mode its process is the conversation.
#[test]
fn python_sdk_without_meta_uses_multi_project_mode() {
    let env = Env::new(&[
        ("alpha/.git/HEAD", "ref: x\n"),
        ("alpha/notes.txt", "ALPHA\n"),
        ("beta/.git/HEAD", "ref: x\n"),
    ]);
    let home = env.home().to_str().unwrap().to_string();
    let wrapper = env.home().join("server.sh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nCODEX_FREE_HOME={home} CODEX_FREE_LOG=warn exec {} \"$@\"\n",
            crate::support::bin().display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let root = env.project().to_str().unwrap();
    let v = python_client(&[
        "multi",
        wrapper.to_str().unwrap(),
        root,
        "alpha",
        "notes.txt",
    ]);
    assert_eq!(v["list_projects"]["error"], false, "{v}");
    assert!(
        v["list_projects"]["text"]
            .as_str()
            .unwrap()
            .contains("- beta  ("),
        "{v}"
    );
    assert_eq!(v["unbound_read"]["error"], true, "{v}");
    assert!(
        v["unbound_read"]["text"]
            .as_str()
            .unwrap()
            .contains("set_project_root")
    );
    assert_eq!(v["bind"]["error"], false, "{v}");
    assert_eq!(v["read"]["text"], "ALPHA\n", "{v}");
    assert!(
        v["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|u| u == "codex-free://saved-state"),
        "{v}"
    );
    assert_eq!(
        v["prompts"],
        serde_json::json!(["remember-this", "resume", "review-memory"])
    );
}

#[test]
fn python_sdk_over_stdio_pages_through_a_file() {
    let body = numbered(2500);
    let env = Env::new(&[("big.txt", &body), ("AGENTS.md", "Use pnpm.\n")]);
    env.write_config(serde_json::json!({"output": {"maxFileLines": 1000}}));
    let bin = crate::support::bin();
    let project = env.project().to_str().unwrap().to_string();
    let home = env.home().to_str().unwrap().to_string();
    // The Python SDK hands the server only a default environment (HOME, PATH, ...), so a
    // wrapper script sets this test's state home.
    let wrapper = env.home().join("server.sh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nCODEX_FREE_HOME={home} CODEX_FREE_LOG=warn exec {} \"$@\"\n",
            bin.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let v = python_client(&["stdio", wrapper.to_str().unwrap(), &project, "big.txt"]);
    assert_eq!(v["server"], "codex-free");
    let tools: Vec<String> = serde_json::from_value(v["tools"].clone()).unwrap();
    for t in [
        "read_file",
        "grep",
        "apply_patch",
        "list_directory",
        "tree",
        "glob",
        "write_file",
    ] {
        assert!(tools.contains(&t.to_string()), "{t} missing from {tools:?}");
    }
    assert!(v["instructions"].as_str().unwrap().contains("Use pnpm."));
    assert_eq!(v["pages"], 3);
    assert_eq!(v["content"].as_str().unwrap(), body);
}

#[tokio::test]
async fn python_sdk_over_http_pages_through_a_file() {
    let body = numbered(1500);
    let env = Env::new(&[("big.txt", &body)]);
    env.write_config(serde_json::json!({"output": {"maxFileLines": 1000}}));
    let srv = env.http(&[]).await;
    let url = srv.url.clone();
    let token = srv.token.clone();
    let v = tokio::task::spawn_blocking(move || python_client(&["http", &url, &token, "big.txt"]))
        .await
        .unwrap();
    assert_eq!(v["pages"], 2);
    assert_eq!(v["content"].as_str().unwrap(), body);
}

#[tokio::test]
async fn rmcp_stdio_read_file_footer_is_exact() {
    let body = numbered(4820);
    let env = Env::new(&[("big.txt", &body)]);
    let client = env.stdio(&[]).await;
    let (text, err) = call(&client, "read_file", serde_json::json!({"path": "big.txt"})).await;
    assert!(!err, "{text}");
    assert_eq!(
        text.lines().last().unwrap(),
        "(showing lines 1-1000 of 4820 — call again with offset=1000 for the rest)"
    );
    let (text, err) = call(
        &client,
        "read_file",
        serde_json::json!({"path": "../etc/passwd"}),
    )
    .await;
    assert!(err);
    assert!(text.starts_with("error[path_outside_root]"), "{text}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn config_edits_apply_to_the_running_server() {
    let env = Env::new(&[("big.txt", &numbered(100))]);
    let client = env.stdio(&[]).await;
    let (text, _) = call(&client, "read_file", serde_json::json!({"path": "big.txt"})).await;
    assert!(
        !text.contains("showing lines"),
        "whole file fits the default cap"
    );
    // mtime granularity: make sure the edit is seen as a change
    std::thread::sleep(std::time::Duration::from_millis(20));
    env.write_config(serde_json::json!({"output": {"maxFileLines": 10}}));
    let (text, _) = call(&client, "read_file", serde_json::json!({"path": "big.txt"})).await;
    assert_eq!(
        text.lines().last().unwrap(),
        "(showing lines 1-10 of 100 — call again with offset=10 for the rest)"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn exec_over_mcp_pages_the_full_output_and_hides_provider_keys() {
    let env = Env::new(&[]);
    // the server process has a provider key; its commands must not see it
    let project = env.project().to_path_buf();
    let cmd = env.command();
    let mut cmd = cmd;
    cmd.env("OPENAI_API_KEY", "sk-test-should-not-leak-0000");
    use rmcp::ServiceExt;
    use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
    let cmd = cmd.configure(|c| {
        c.arg("serve").arg("--stdio").arg("--project").arg(&project);
    });
    let client = ().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
    let (text, err) = call(&client, "exec_command", serde_json::json!({"cmd": "env"})).await;
    assert!(!err, "{text}");
    assert!(
        !text.contains("sk-test-should-not-leak"),
        "provider key leaked to the child: {text}"
    );
    // 200k lines (~1.3 MB) is far over the 40 KB reply budget
    let (text, err) = call(
        &client,
        "exec_command",
        serde_json::json!({"cmd": "seq 1 200000"}),
    )
    .await;
    assert!(!err, "{text}");
    let last = text.lines().last().unwrap().to_string();
    assert!(last.contains("read_command_output"), "{last}");
    assert!(text.len() <= 40_000, "reply is {} bytes", text.len());
    // page through the spool from 0: every byte exactly once
    let id = codex_free_testkit::pages::parse_footer(&last)
        .and_then(|c| c.arg("output_id").map(str::to_string))
        .unwrap();
    let (mut offset, mut all, mut pages) = (0u64, String::new(), 0);
    loop {
        let (page, err) = call(
            &client,
            "read_command_output",
            serde_json::json!({"output_id": id, "offset": offset}),
        )
        .await;
        assert!(!err, "{page}");
        pages += 1;
        match codex_free_testkit::pages::split_page(&page) {
            (body, Some(next)) => {
                all.push_str(body);
                offset = next.offset().unwrap();
            }
            (_, None) => {
                all.push_str(&page);
                break;
            }
        }
    }
    let expected: String = (1..=200_000).map(|i| format!("{i}\n")).collect();
    assert_eq!(all.len(), expected.len());
    assert!(all == expected, "paged output differs from seq's");
    assert!(pages > 30, "{pages}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn tool_calls_are_recorded_as_redacted_mcp_transcripts() {
    let env = Env::new(&[(
        "notes.txt",
        "token: sk-proj-abcdefghijklmnopqrstuvwxyz0123456789\n",
    )]);
    let client = env.stdio(&[]).await;
    let (text, err) = call(
        &client,
        "read_file",
        serde_json::json!({"path": "notes.txt"}),
    )
    .await;
    assert!(
        !err && text.contains("sk-proj-"),
        "the tool itself returns the file as is"
    );
    client.cancel().await.unwrap();
    let files: Vec<_> = crate::support::jsonl_under(&env.home().join("transcripts"));
    assert_eq!(files.len(), 1, "{files:?}");
    let body = std::fs::read_to_string(&files[0]).unwrap();
    assert!(body.contains("\"tool\":\"read_file\""), "{body}");
    assert!(
        !body.contains("sk-proj-abcdefghijklmnop"),
        "secret reached the transcript: {body}"
    );
    assert!(body.contains("[REDACTED_SECRET]"), "{body}");
    // the pipeline reads it back as an `mcp` rollout
    let rollout = codex_free_transcripts::sources::parse_file(
        &files[0],
        codex_free_transcripts::rollout::Source::Mcp,
    )
    .unwrap();
    assert!(!rollout.items.is_empty());
}
