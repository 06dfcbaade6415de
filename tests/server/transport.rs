//! The server over real transports: stdio (spawned binary) and streamable HTTP, with the
//! HTTP access rules (token, secret path, Host, Origin, /health).

use crate::support::Env;

#[tokio::test]
async fn stdio_initialize_carries_instructions_and_tools() {
    let env = Env::new(&[("a.txt", "hello\n")]);
    let client = env.stdio(&[]).await;
    let info = client.peer_info().expect("server info");
    assert_eq!(
        info.server_info.as_ref().map(|i| i.name.as_str()),
        Some("codex-free")
    );
    let instr = info.instructions.clone().unwrap_or_default();
    let root = std::fs::canonicalize(env.project()).unwrap();
    assert!(instr.contains(&root.display().to_string()), "{instr}");
    client.cancel().await.unwrap();
}

/// Stdin and stdout that are not pipes (a file in, a socket out: a shell redirect, a
/// supervisor) take the blocking-pool transport and answer the same.
#[test]
fn stdio_from_a_file_to_a_socket_answers_too() {
    let env = Env::new(&[("a.txt", "hello from a file\n")]);
    let input = env.home().join("requests.jsonl");
    let init = serde_json::json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let call = serde_json::json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a.txt"}}});
    std::fs::write(
        &input,
        format!(
            "{init}\n{}\n{call}\n",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
        ),
    )
    .unwrap();
    let (mut ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let mut child = std::process::Command::new(crate::support::bin())
        .args(["serve", "--stdio", "--no-pipeline", "--project"])
        .arg(env.project())
        .env("CODEX_FREE_HOME", env.home())
        .env("CODEX_FREE_LOG", "warn")
        .stdin(std::fs::File::open(&input).unwrap())
        .stdout(std::process::Stdio::from(std::os::fd::OwnedFd::from(
            theirs,
        )))
        .spawn()
        .unwrap();
    ours.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let mut out = String::new();
    let _ = std::io::Read::read_to_string(&mut ours, &mut out);
    let _ = child.wait();
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let reply = |id: i64| {
        lines
            .iter()
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("no reply {id}: {out}"))
    };
    assert_eq!(reply(1)["result"]["serverInfo"]["name"], "codex-free");
    let text = reply(2)["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("hello from a file"), "{text}");
}

#[tokio::test]
async fn http_requires_token_and_checks_host_and_origin() {
    let env = Env::new(&[("a.txt", "hello\n")]);
    let srv = env.http(&[]).await;
    let http = reqwest::Client::new();
    let init = serde_json::json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let post = |url: String| {
        http.post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .json(&init)
    };
    // /health needs nothing
    let r = http
        .get(format!("{}/health", srv.base()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    // no token
    let r = post(srv.url.clone()).send().await.unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(r.headers()["www-authenticate"], "Bearer");
    // wrong token
    let r = post(srv.url.clone())
        .bearer_auth("wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    // right token
    let r = post(srv.url.clone())
        .bearer_auth(&srv.token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    // foreign Host (DNS rebinding)
    let r = post(srv.url.clone())
        .bearer_auth(&srv.token)
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    // foreign Origin
    let r = post(srv.url.clone())
        .bearer_auth(&srv.token)
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    // loopback Origin is fine
    let r = post(srv.url.clone())
        .bearer_auth(&srv.token)
        .header("origin", "http://localhost:5173")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    // secret path without a header
    let r = post(format!("{}/{}", srv.url, srv.token))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = post(format!("{}/not-the-token", srv.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    // the token never appears in the server's stderr is checked by the log test in tools; here: the token file is 0600
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(env.home().join("server-token"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[tokio::test]
async fn http_client_lists_tools_with_rmcp() {
    let env = Env::new(&[("a.txt", "hello\n")]);
    let srv = env.http(&[]).await;
    let client = srv.client().await;
    let info = client.peer_info().expect("server info");
    assert!(
        info.instructions
            .as_deref()
            .unwrap_or("")
            .contains("Codex Free")
    );
    let tools: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    for t in [
        "read_file",
        "write_file",
        "list_directory",
        "grep",
        "apply_patch",
        "exec_command",
        "read_command_output",
        "git_status",
        "remember",
        "recall",
        "update_plan",
    ] {
        assert!(
            tools.iter().any(|n| n == t),
            "{t} missing over HTTP: {tools:?}"
        );
    }
    let mut unique = tools.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        tools.len(),
        "a tool is listed twice: {tools:?}"
    );
    // The whole catalogue, so a tool that silently drops off HTTP fails here (single
    // project: no list_projects / set_project_root; show_changes and view_image included).
    assert_eq!(unique.len(), 24, "{unique:?}");
    assert!(unique.iter().any(|n| n == "show_changes") && unique.iter().any(|n| n == "view_image"));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn dashboard_counts_connected_clients() {
    let env = Env::new(&[("a.txt", "hello\n")]);
    let srv = env.http(&["--ui", "--no-pipeline"]).await;
    let status = || async {
        let v: serde_json::Value = reqwest::Client::new()
            .get(format!("{}/api/status", srv.base()))
            .bearer_auth(&srv.admin)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        v["server"]["clients"].as_u64().unwrap()
    };
    assert_eq!(status().await, 0, "no client has called yet");
    let a = srv.client().await;
    let b = srv.client().await;
    crate::support::call(&a, "read_file", serde_json::json!({"path": "a.txt"})).await;
    crate::support::call(&b, "read_file", serde_json::json!({"path": "a.txt"})).await;
    let n = status().await;
    assert_eq!(n, 2, "active clients after two sessions called");
    a.cancel().await.unwrap();
    b.cancel().await.unwrap();
}
