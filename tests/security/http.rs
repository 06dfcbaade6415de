//! Separate credentials over real HTTP (the attack: the MCP token a ChatGPT connector holds
//! as its secret URL also opened `/api`, so `PUT /api/config {"exec":{"mode":
//! "unrestricted"}}` reconfigured the machine), the one-time login link, Origin checks on
//! state changes, independent rotation, and the audit trail of tool calls.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::{Env, HttpServer, call, call_meta};

const TUNNEL: &str = "abc.tunnel.example";

async fn ui_server(env: &Env) -> HttpServer {
    env.write_config(json!({
        "server": {"allowedHosts": [TUNNEL], "allowedOrigins": ["https://chatgpt.com"]}
    }));
    env.http(&["--ui", "--no-pipeline"]).await
}

fn no_redirect() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Every `/api` route of the router (path parameters filled in), plus UI pages, a missing
/// API path and `/login`-adjacent paths: everything the admin check guards.
fn guarded() -> Vec<(Method, String)> {
    let mut v: Vec<(Method, String)> = codex_free_server::api::http::api_routes()
        .iter()
        .map(|r| {
            (
                r.method.parse().unwrap(),
                // an unknown provider: passes auth, then fails validation before any
                // keyring access (the tests never touch the user's real keyring)
                r.path.replace("{provider}", "nobody"),
            )
        })
        .collect();
    assert!(v.len() >= 17, "the route list is the router's: {v:?}");
    for p in [
        "/",
        "/index.html",
        "/assets/app.js",
        "/api/nope",
        "/settings",
    ] {
        v.push((Method::GET, p.into()));
    }
    v
}

fn body_for(path: &str) -> Value {
    if path.starts_with("/api/keys/") {
        json!({"key": "sk-test-0000000000001234"})
    } else if path.starts_with("/api/config") {
        json!({"exec": {"mode": "unrestricted"}})
    } else {
        json!({})
    }
}

fn config_bytes(env: &Env) -> Vec<u8> {
    std::fs::read(env.home().join("codex.config.json")).unwrap()
}

#[tokio::test]
async fn every_api_route_refuses_the_mcp_token_on_loopback_and_through_a_tunnel() {
    let env = Env::new(&[("a.txt", "hello\n")]);
    let srv = ui_server(&env).await;
    let before = config_bytes(&env);
    let c = no_redirect();
    let port = srv.base().rsplit(':').next().unwrap().to_string();
    let cookie_names = [
        format!("codex_free_admin_{port}"),
        "codex_free_token".to_string(),
    ];
    for (m, path) in guarded() {
        let send = |url: String, host: Option<&str>| {
            let mut r = c.request(m.clone(), url).json(&body_for(&path));
            if let Some(h) = host {
                r = r.header("host", h);
            }
            r
        };
        for host in [None, Some(TUNNEL)] {
            let want = if host.is_some() { 403 } else { 401 };
            // bearer header
            let r = send(format!("{}{path}", srv.base()), host)
                .bearer_auth(&srv.token)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status().as_u16(), want, "{m} {path} host {host:?} bearer");
            // as a cookie, under the session cookie's name and the old UI cookie's name
            for name in &cookie_names {
                let r = send(format!("{}{path}", srv.base()), host)
                    .header("cookie", format!("{name}={}", srv.token))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status().as_u16(), want, "{m} {path} cookie {name}");
            }
            // as the old `?token=` UI login
            let sep = if path.contains('?') { '&' } else { '?' };
            let r = send(
                format!("{}{path}{sep}token={}", srv.base(), srv.token),
                host,
            )
            .send()
            .await
            .unwrap();
            assert_eq!(r.status().as_u16(), want, "{m} {path} ?token=");
            // under the secret path: /mcp/<token>/api/... is an MCP path without a token
            let r = send(format!("{}/{}{path}", srv.url, srv.token), host)
                .send()
                .await
                .unwrap();
            assert!(
                matches!(r.status().as_u16(), 401 | 403 | 404),
                "{m} /mcp/<token>{path}: {}",
                r.status()
            );
        }
        assert_eq!(
            config_bytes(&env),
            before,
            "{m} {path} with the MCP token changed the config file"
        );
        // the admin token: refused through the tunnel name or a proxy, accepted on loopback
        let r = send(format!("{}{path}", srv.base()), Some(TUNNEL))
            .bearer_auth(&srv.admin)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403, "{m} {path} admin via tunnel Host");
        let r = send(format!("{}{path}", srv.base()), None)
            .bearer_auth(&srv.admin)
            .header("x-forwarded-for", "203.0.113.7")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403, "{m} {path} admin via a proxy");
        assert_eq!(
            config_bytes(&env),
            before,
            "{m} {path} refused but changed the config"
        );
        for loopback in [None, Some(format!("localhost:{port}"))] {
            let r = send(format!("{}{path}", srv.base()), loopback.as_deref())
                .bearer_auth(&srv.admin)
                .send()
                .await
                .unwrap();
            assert!(
                !matches!(r.status().as_u16(), 401 | 403),
                "{m} {path} admin on loopback {loopback:?}: {}",
                r.status()
            );
            // admin changes (config, pipeline pause) are allowed: put the file back so the
            // next MCP-token attempt is checked against the original
            std::fs::write(env.home().join("codex.config.json"), &before).unwrap();
        }
    }
    let cfg = String::from_utf8(config_bytes(&env)).unwrap();
    assert!(!cfg.contains("unrestricted"), "{cfg}");
}

#[tokio::test]
async fn the_mcp_endpoint_refuses_the_admin_credential() {
    let env = Env::new(&[("a.txt", "hello\n")]);
    let srv = ui_server(&env).await;
    let c = no_redirect();
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let post = |url: String| {
        c.post(url)
            .header("accept", "application/json, text/event-stream")
            .json(&init)
    };
    let r = post(srv.url.clone())
        .bearer_auth(&srv.admin)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = post(format!("{}/{}", srv.url, srv.admin))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    // a browser session opens /api but not /mcp
    let cookie = login(&c, &srv.login_link().unwrap()).await;
    let r = c
        .get(format!("{}/api/status", srv.base()))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = post(srv.url.clone())
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    // the MCP token still works through the tunnel name (that is what it is for)
    let r = post(srv.url.clone())
        .bearer_auth(&srv.token)
        .header("host", TUNNEL)
        .header("origin", "https://chatgpt.com")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

/// Follow a login link once; returns the `name=value` of the session cookie.
async fn login(c: &reqwest::Client, link: &str) -> String {
    let r = c.get(link).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER, "{link}");
    assert_eq!(r.headers()["location"], "/");
    let set = r.headers()["set-cookie"].to_str().unwrap().to_string();
    for attr in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(set.contains(attr), "{set}");
    }
    set.split(';').next().unwrap().to_string()
}

#[tokio::test]
async fn login_link_is_single_use_and_cookie_changes_need_the_own_origin() {
    let env = Env::new(&[("a.txt", "hello\n")]);
    let srv = ui_server(&env).await;
    let c = no_redirect();
    let link = srv.login_link().expect("the banner prints a login link");
    assert!(
        link.starts_with(&format!("{}/login?code=", srv.base())),
        "{link}"
    );
    assert!(
        !srv.banner.join("\n").contains(&srv.admin),
        "the banner never prints the admin token"
    );
    let cookie = login(&c, &link).await;
    assert!(!cookie.contains(&srv.admin) && !cookie.contains(&srv.token));
    let again = c.get(&link).send().await.unwrap();
    assert_eq!(again.status(), 401, "a login link works once");
    let page = c
        .get(format!("{}/", srv.base()))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert!(
        matches!(page.status().as_u16(), 200 | 503),
        "the UI page with the cookie: {}",
        page.status()
    );
    let no_cookie = c.get(format!("{}/", srv.base())).send().await.unwrap();
    assert_eq!(no_cookie.status(), 401);
    assert!(
        no_cookie.text().await.unwrap().contains("token login"),
        "the refusal says how to log in"
    );

    // state changes with the cookie: only with the server's own Origin
    let before = config_bytes(&env);
    let change = |origin: Option<&str>| {
        let mut r = c
            .put(format!("{}/api/config", srv.base()))
            .header("cookie", &cookie)
            .json(&json!({"exec": {"mode": "unrestricted"}}));
        if let Some(o) = origin {
            r = r.header("origin", o);
        }
        r
    };
    let port = srv.base().rsplit(':').next().unwrap().to_string();
    for foreign in [
        None,
        Some("http://evil.example".to_string()),
        Some("https://chatgpt.com".to_string()),
        Some(format!("http://localhost:{port}")),
        Some("http://127.0.0.1:1".to_string()),
        Some("null".to_string()),
    ] {
        let r = change(foreign.as_deref()).send().await.unwrap();
        assert_eq!(r.status(), 403, "Origin {foreign:?}");
        assert_eq!(
            config_bytes(&env),
            before,
            "Origin {foreign:?} changed the config"
        );
    }
    for (m, p) in [
        (Method::POST, "/api/pipeline/pause"),
        (Method::DELETE, "/api/keys/nobody"),
    ] {
        let r = c
            .request(m.clone(), format!("{}{p}", srv.base()))
            .header("cookie", &cookie)
            .header("origin", "http://evil.example")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403, "{m} {p}");
    }
    let r = change(Some(&srv.base())).send().await.unwrap();
    assert_eq!(r.status(), 200, "the UI's own origin may save");
    assert!(
        String::from_utf8(config_bytes(&env))
            .unwrap()
            .contains("unrestricted")
    );
    // a GET with a foreign Origin is refused too (no cross-origin reads)
    let r = c
        .get(format!("{}/api/status", srv.base()))
        .header("cookie", &cookie)
        .header("origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    // a bearer admin request without Origin may change state (CLI clients)
    let r = c
        .post(format!("{}/api/pipeline/pause", srv.base()))
        .bearer_auth(&srv.admin)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);

    // `token login` prints a fresh link; it is refused through the tunnel name without
    // being used up, then works on loopback
    let out = env
        .command()
        .args(["token", "login", "--port", &port])
        .output()
        .await
        .unwrap();
    assert!(out.status.success());
    let link2 = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert!(
        link2.starts_with(&format!("{}/login?code=", srv.base())),
        "{link2}"
    );
    let r = c.get(&link2).header("host", TUNNEL).send().await.unwrap();
    assert_eq!(r.status(), 403);
    login(&c, &link2).await;
    let r = c
        .get(format!("{}/login?code=made-up-code", srv.base()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
}

async fn cli(env: &Env, args: &[&str]) -> String {
    let out = env.command().args(args).output().await.unwrap();
    assert!(out.status.success(), "{args:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[tokio::test]
async fn rotating_one_token_never_changes_the_other() {
    let env = Env::new(&[("a.txt", "hello\n")]);
    let srv = ui_server(&env).await;
    let c = no_redirect();
    assert_eq!(cli(&env, &["token", "show"]).await, srv.token);
    assert_eq!(cli(&env, &["token", "show", "--admin"]).await, srv.admin);
    let cookie = login(&c, &srv.login_link().unwrap()).await;
    let api = |auth: Option<&str>, cookie: Option<&str>| {
        let mut r = c.get(format!("{}/api/status", srv.base()));
        if let Some(t) = auth {
            r = r.bearer_auth(t);
        }
        if let Some(k) = cookie {
            r = r.header("cookie", k);
        }
        async move { r.send().await.unwrap().status().as_u16() }
    };
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let mcp = |t: &str| {
        c.post(srv.url.clone())
            .header("accept", "application/json, text/event-stream")
            .bearer_auth(t)
            .json(&init)
            .send()
    };

    let new_mcp = cli(&env, &["token", "rotate"]).await;
    assert_ne!(new_mcp, srv.token);
    assert_eq!(cli(&env, &["token", "show", "--admin"]).await, srv.admin);
    // the running server picks the rotation up
    assert_eq!(mcp(&srv.token).await.unwrap().status(), 401);
    assert_eq!(mcp(&new_mcp).await.unwrap().status(), 200);
    assert_eq!(api(Some(&srv.admin), None).await, 200);
    assert_eq!(
        api(None, Some(&cookie)).await,
        200,
        "sessions survive an MCP rotation"
    );

    let new_admin = cli(&env, &["token", "rotate", "--admin"]).await;
    assert_ne!(new_admin, srv.admin);
    assert_eq!(cli(&env, &["token", "show"]).await, new_mcp);
    assert_eq!(api(Some(&srv.admin), None).await, 401);
    assert_eq!(
        api(None, Some(&cookie)).await,
        401,
        "an admin rotation ends sessions"
    );
    assert_eq!(api(Some(&new_admin), None).await, 200);
    assert_eq!(mcp(&new_mcp).await.unwrap().status(), 200);
}

fn audit_lines(env: &Env) -> Vec<Value> {
    let text = std::fs::read_to_string(env.home().join("audit/audit.jsonl")).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Every file of the trail, concatenated.
fn audit_text(env: &Env) -> String {
    let mut out = String::new();
    for e in std::fs::read_dir(env.home().join("audit")).unwrap() {
        let p = e.unwrap().path();
        if p.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("audit.jsonl")
            && !p.to_string_lossy().ends_with(".lock")
        {
            out.push_str(&std::fs::read_to_string(p).unwrap());
        }
    }
    out
}

#[tokio::test]
async fn audit_trail_has_one_line_per_call_and_no_contents() {
    let env = Env::new(&[("a.txt", "hello\n")]);
    let srv = ui_server(&env).await;
    let client = srv.client().await;
    let marker = format!("MARKER-{}", std::process::id());
    let content = format!("{marker} secret body\n").repeat(20);
    let session = format!("raw-session-{marker}");
    let (_, err) = call_meta(
        &client,
        "write_file",
        json!({"path": format!("notes-{marker}.txt"), "content": content}),
        Some(&session),
    )
    .await;
    assert!(!err);
    let (t, err) = call(
        &client,
        "read_file",
        json!({"path": format!("notes-{marker}.txt")}),
    )
    .await;
    assert!(!err && t.contains(&marker));
    let (_, err) = call(&client, "grep", json!({"pattern": marker})).await;
    assert!(!err);
    let (t, err) = call(&client, "read_file", json!({"path": "../../etc/passwd"})).await;
    assert!(err, "{t}");

    let lines = audit_lines(&env);
    assert_eq!(lines.len(), 4, "{lines:#?}");
    let text = audit_text(&env);
    for secret in [
        marker.as_str(),
        &srv.token,
        &srv.admin,
        &session,
        "secret body",
        "passwd",
    ] {
        assert!(
            !text.contains(secret),
            "{secret} in the audit trail: {text}"
        );
    }
    let w = &lines[0];
    assert_eq!(w["tool"], "write_file");
    assert_eq!(w["args"]["content"]["type"], "string");
    assert_eq!(w["args"]["content"]["bytes"], content.len());
    assert_eq!(w["args"]["path"]["type"], "string");
    assert!(w["error"].is_null() && w["sandbox"].is_null(), "{w}");
    assert!(w["result_bytes"].as_u64().unwrap() > 0);
    assert!(w["duration_ms"].is_u64() && w["time_ms"].is_i64() && w["time"].is_string());
    let conv = w["conversation"].as_str().unwrap();
    assert!(conv.starts_with("conv-") && conv.len() == 21, "{conv}");
    assert!(
        lines[1]["result_bytes"].as_u64().unwrap() >= content.len() as u64,
        "the read result's size is counted"
    );
    assert_eq!(lines[3]["tool"], "read_file");
    assert_eq!(lines[3]["error"], "path_outside_root");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let m = std::fs::metadata(env.home().join("audit/audit.jsonl"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(m & 0o777, 0o600);
    }

    // the dashboard's last refusals
    let v: Value = reqwest::Client::new()
        .get(format!("{}/api/audit/refusals", srv.base()))
        .bearer_auth(&srv.admin)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["enabled"], true);
    let r = v["refusals"].as_array().unwrap();
    assert_eq!(r.len(), 1, "{v}");
    assert_eq!(r[0]["tool"], "read_file");
    assert_eq!(r[0]["code"], "path_outside_root");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn audit_trail_rotates_by_size_and_can_be_turned_off() {
    let env = Env::new(&[("a.txt", "hello\n")]);
    env.write_config(json!({"audit": {"maxFileBytes": 65536, "keepFiles": 2}}));
    let srv = env.http(&["--no-pipeline"]).await;
    let client = srv.client().await;
    // 32 long argument names make each line about 3.5 KB: about 18 lines per 64 KiB file
    let mut args = serde_json::Map::new();
    args.insert("path".into(), json!("a.txt"));
    for i in 0..31 {
        args.insert(format!("k{i:02}{}", "x".repeat(60)), json!(i));
    }
    for _ in 0..80 {
        call(&client, "read_file", Value::Object(args.clone())).await;
    }
    let dir = env.home().join("audit");
    let cur = dir.join("audit.jsonl");
    for f in [&cur, &dir.join("audit.jsonl.1"), &dir.join("audit.jsonl.2")] {
        let len = std::fs::metadata(f).unwrap().len();
        assert!(len > 0 && len <= 65536, "{} is {len} bytes", f.display());
    }
    assert!(!dir.join("audit.jsonl.3").exists(), "keepFiles = 2");
    let text = audit_text(&env);
    let kept = text.lines().count();
    assert!((36..80).contains(&kept), "{kept} lines kept");
    for l in text.lines() {
        let v: Value = serde_json::from_str(l).unwrap();
        assert_eq!(v["args"].as_object().unwrap().len(), 32, "{v}");
    }
    // audit.enabled = false (hot-reloaded): no new line
    let n = audit_lines(&env).len();
    env.write_config(json!({"audit": {"enabled": false, "maxFileBytes": 65536, "keepFiles": 2}}));
    tokio::time::sleep(Duration::from_millis(20)).await;
    call(&client, "read_file", json!({"path": "a.txt"})).await;
    assert_eq!(audit_lines(&env).len(), n);
    client.cancel().await.unwrap();
}

/// `/login` is rate-limited for the whole process (the attack: unlimited code guesses):
/// after the burst every attempt, wrong code or right, gets 429 with Retry-After.
#[tokio::test]
async fn login_attempts_are_rate_limited() {
    let env = Env::new(&[("a.txt", "hello\n")]);
    env.write_config(json!({"server": {"loginAttemptsPerMinute": 30}}));
    let srv = env.http(&["--ui", "--no-pipeline"]).await;
    let c = no_redirect();
    let guess = |i: usize| c.get(format!("{}/login?code=guess-{i}", srv.base())).send();
    for i in 0..30 {
        assert_eq!(guess(i).await.unwrap().status(), 401, "attempt {i}");
    }
    let r = guess(30).await.unwrap();
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    let wait: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=2).contains(&wait), "{wait}");
    assert!(r.text().await.unwrap().contains("Too many login attempts"));
    // The real link is counted too (it is not told apart before the limit).
    let r = c.get(srv.login_link().unwrap()).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    // One attempt back after 60/30 = 2 s.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    login(&c, &srv.login_link().unwrap()).await;
}
