//! The OS sandbox and the pinned security settings, attacked through the real binary:
//! commands that try to unlock `exec.mode`, write outside the project, read the server
//! token, open network connections or escape through the children of allowed programs.
//! Run on this machine's kernel (Landlock); they fail loudly where it is missing.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::support::{Client, Env, call};

/// A base directory holding the project (so `../x` stays inside the test's own directory),
/// a fake `curl` that writes a marker outside the project, and the env.
struct Lab {
    env: Env,
    base: PathBuf,
    fakebin: PathBuf,
    marker: PathBuf,
    _base: tempfile::TempDir,
}

/// `home_inside`: the state home is `<project>/.codex-free-*` (and so under /tmp too);
/// otherwise it is a sibling of the project.
fn lab(home_inside: bool) -> Lab {
    let base_dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(base_dir.path()).unwrap();
    let project = tempfile::Builder::new()
        .prefix("proj")
        .tempdir_in(&base)
        .unwrap();
    let home = if home_inside {
        tempfile::Builder::new()
            .prefix(".codex-free")
            .tempdir_in(project.path())
            .unwrap()
    } else {
        tempfile::Builder::new()
            .prefix("home")
            .tempdir_in(&base)
            .unwrap()
    };
    std::fs::write(project.path().join("data.txt"), "one\ntwo\n").unwrap();
    let fakebin = base.join("fakebin");
    std::fs::create_dir(&fakebin).unwrap();
    let marker = base.join("curl-ran");
    let curl = fakebin.join("curl");
    std::fs::write(
        &curl,
        format!(
            "#!/bin/sh\necho \"fake curl $*\"\necho ran >> '{}'\n",
            marker.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&curl, std::fs::Permissions::from_mode(0o755)).unwrap();
    Lab {
        env: Env { home, project },
        base,
        fakebin,
        marker,
        _base: base_dir,
    }
}

impl Lab {
    fn project(&self) -> PathBuf {
        std::fs::canonicalize(self.env.project()).unwrap()
    }

    fn home(&self) -> PathBuf {
        std::fs::canonicalize(self.env.home()).unwrap()
    }

    /// A stdio server with the fake `curl` first on PATH and a provider key in its own
    /// environment (which no command may see).
    async fn client(&self) -> Client {
        let path = format!(
            "{}:{}",
            self.fakebin.display(),
            std::env::var("PATH").unwrap()
        );
        self.env
            .stdio_env(
                &[],
                &[
                    ("PATH", path.as_str()),
                    ("OPENAI_API_KEY", "sk-leak-canary-4242"),
                ],
                &["CARGO_TARGET_DIR"],
            )
            .await
    }
}

async fn exec(c: &Client, cmd: &str) -> (String, bool) {
    call(
        c,
        "exec_command",
        json!({"cmd": cmd, "timeout_ms": 120000, "yield_time_ms": 30000}),
    )
    .await
}

fn exit_code(reply: &str) -> Option<i32> {
    reply
        .lines()
        .find_map(|l| l.strip_prefix("Process exited with code "))
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
}

/// Run `cmd`; it must be refused by the allowlist or exit non-zero.
async fn must_fail(c: &Client, cmd: &str) -> String {
    let (text, err) = exec(c, cmd).await;
    assert!(
        err || exit_code(&text).is_some_and(|c| c != 0),
        "{cmd} should have failed:\n{text}"
    );
    text
}

#[tokio::test]
async fn a_command_cannot_unlock_exec_mode_and_the_file_is_not_reloaded() {
    let lab = lab(true);
    let cfg = lab.home().join("codex.config.json");
    let original = "{\"output\": {\"maxFileLines\": 900}}\n";
    std::fs::write(&cfg, original).unwrap();
    let c = lab.client().await;
    let rel = cfg
        .strip_prefix(lab.project())
        .unwrap()
        .display()
        .to_string();
    for cmd in [
        format!(
            r#"echo '{{"exec":{{"mode":"unrestricted"}}}}' > {}"#,
            cfg.display()
        ),
        format!(r#"echo '{{"exec":{{"mode":"unrestricted"}}}}' > {rel}"#),
        format!(
            r#"python3 -c "open('{}','w').write('{{\"exec\":{{\"mode\":\"unrestricted\"}}}}')""#,
            cfg.display()
        ),
        format!("sed -n 'w {}' data.txt", cfg.display()),
    ] {
        let text = must_fail(&c, &cmd).await;
        assert_eq!(
            std::fs::read_to_string(&cfg).unwrap(),
            original,
            "{cmd}: {text}"
        );
    }
    let (text, err) = exec(&c, "bash -c 'echo escalated'").await;
    assert!(err && text.contains("bash"), "{text}");
    assert!(!text.contains("escalated\n"), "{text}");

    // Even an edit that does land (made here, outside the sandbox) does not widen the
    // running server: exec.* is read at startup only; output caps still reload.
    std::fs::write(
        &cfg,
        r#"{"exec":{"mode":"unrestricted","sandbox":"off"},"output":{"maxFileLines":3}}"#,
    )
    .unwrap();
    let (text, err) = exec(&c, "bash -c 'echo escalated'").await;
    assert!(err && text.contains("bash"), "reloaded exec.mode: {text}");
    let text = must_fail(&c, "python3 -c \"open('../x','w')\"").await;
    assert!(!lab.base.join("x").exists(), "{text}");
    let (env, _) = call(&c, "get_environment", json!({})).await;
    assert!(env.contains("exec mode allowlist"), "{env}");
    assert!(env.contains("sandbox: Landlock"), "{env}");
    let (page, _) = call(&c, "read_file", json!({"path": "data.txt"})).await;
    assert!(page.contains("one"), "{page}");
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn http_server_does_not_reload_exec_mode_either() {
    let lab = lab(true);
    let cfg = lab.home().join("codex.config.json");
    let server = lab.env.http(&[]).await;
    let c = server.client().await;
    let (text, err) = exec(&c, "bash -c 'echo escalated'").await;
    assert!(err, "{text}");
    std::fs::write(&cfg, r#"{"exec":{"mode":"unrestricted"}}"#).unwrap();
    let (text, err) = exec(&c, "bash -c 'echo escalated'").await;
    assert!(err && !text.contains("escalated\n"), "{text}");
    let text = must_fail(
        &c,
        &format!("cat {}", lab.home().join("server-token").display()),
    )
    .await;
    assert!(!text.contains(&server.token), "the token leaked: {text}");
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn allowed_programs_cannot_write_outside_the_project() {
    let lab = lab(true);
    let c = lab.client().await;
    let x = lab.base.join("x");
    let in_tmp = format!("/tmp/codex-free-sandbox-test-{}", std::process::id());
    for cmd in [
        "python3 -c \"open('../x','w')\"".to_string(),
        "sed -n 'w ../x' data.txt".to_string(),
        "awk '{print > \"../x\"}' data.txt".to_string(),
        "find . -maxdepth 0 -fprint ../x".to_string(),
        format!("echo hi > {in_tmp}"),
        format!("touch {}", x.display()),
    ] {
        let text = must_fail(&c, &cmd).await;
        assert!(!x.exists(), "{cmd} wrote {}: {text}", x.display());
        assert!(!Path::new(&in_tmp).exists(), "{cmd} wrote {in_tmp}: {text}");
        if cmd.starts_with("python3") || cmd.starts_with("sed") {
            assert!(
                text.contains("OS sandbox") && text.contains(&x.display().to_string()),
                "the hint names the path: {text}"
            );
        }
    }
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn protected_files_cannot_be_read_however_they_are_reached() {
    let lab = lab(true);
    let token = lab.home().join("server-token");
    std::fs::write(&token, "secret-token-canary-77\n").unwrap();
    let c = lab.client().await;
    let rel = token
        .strip_prefix(lab.project())
        .unwrap()
        .display()
        .to_string();
    let home_rel = lab
        .home()
        .strip_prefix(lab.project())
        .unwrap()
        .display()
        .to_string();
    for cmd in [
        format!("cat {}", token.display()),
        format!("cat {rel}"),
        format!("cat sub/../{rel}"),
        format!("ls {home_rel}"),
        format!(
            "mkdir -p sub && python3 -c \"import os; os.symlink('{}', 'sub/t'); print(open('sub/t').read())\"",
            token.display()
        ),
        format!(
            "python3 -c \"print(open('/proc/self/root{}').read())\"",
            token.display()
        ),
    ] {
        let text = must_fail(&c, &cmd).await;
        assert!(
            !text.contains("secret-token-canary-77"),
            "{cmd} leaked: {text}"
        );
    }
    // No terminal to write to or inject into.
    must_fail(&c, "python3 -c \"open('/dev/tty','w')\"").await;
    // A recursive search from the project root skips (cannot open) the state home.
    let (text, _) = exec(&c, "grep -r secret-token-canary .").await;
    assert!(!text.contains("secret-token-canary-77"), "{text}");
    // The server's own environment (with its provider key) is out of reach.
    let (text, _) = exec(&c, "cat /proc/$PPID/environ; env").await;
    assert!(!text.contains("sk-leak-canary-4242"), "{text}");
    // Other agents' homes too (when this machine has one).
    if let Some(h) = std::env::var_os("HOME").map(PathBuf::from) {
        for d in [".codex", ".claude"] {
            if h.join(d).is_dir() {
                let text = must_fail(&c, &format!("ls {}", h.join(d).display())).await;
                assert!(text.contains("Permission denied"), "{text}");
            }
        }
    }
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn writing_inside_the_project_and_the_private_tmpdir_works() {
    // State home outside the project: the whole project is writable.
    let lab1 = lab(false);
    let c = lab1.client().await;
    let (text, err) = exec(
        &c,
        "echo hi > top.txt && mkdir -p a/b && echo deep > a/b/f && cat top.txt a/b/f && python3 -c \"import tempfile,os; f=tempfile.NamedTemporaryFile(delete=False); f.write(b'x'); f.close(); print('tmp ok', os.path.dirname(f.name))\"",
    )
    .await;
    assert!(!err && exit_code(&text) == Some(0), "{text}");
    assert!(text.contains("hi\ndeep\ntmp ok "), "{text}");
    assert!(
        text.contains("codex-free-exec-"),
        "TMPDIR is the private one: {text}"
    );
    assert_eq!(
        std::fs::read_to_string(lab1.project().join("a/b/f")).unwrap(),
        "deep\n"
    );
    c.cancel().await.unwrap();

    // State home inside the project: the project root is on the way to a protected path,
    // so its existing entries stay writable (whole subtrees for directories) but nothing
    // new can be created directly in it.
    let lab2 = lab(true);
    std::fs::create_dir(lab2.project().join("src")).unwrap();
    let c = lab2.client().await;
    let (text, err) = exec(
        &c,
        "mkdir -p src/a && echo fn > src/a/lib.rs && echo more >> data.txt && cat src/a/lib.rs",
    )
    .await;
    assert!(!err && exit_code(&text) == Some(0), "{text}");
    assert_eq!(
        std::fs::read_to_string(lab2.project().join("data.txt")).unwrap(),
        "one\ntwo\nmore\n"
    );
    let text = must_fail(&c, "touch new-top-level-file").await;
    assert!(text.contains("OS sandbox"), "{text}");
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn cargo_builds_a_crate_inside_the_project_with_a_warm_cache() {
    let lab = lab(false);
    let p = lab.project();
    std::fs::write(
        p.join("Cargo.toml"),
        "[package]\nname = \"hello\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
    )
    .unwrap();
    std::fs::create_dir(p.join("src")).unwrap();
    std::fs::write(
        p.join("src/main.rs"),
        "fn main() { println!(\"hello from the sandbox\"); }\n",
    )
    .unwrap();
    let c = lab.client().await;
    let (text, err) = exec(&c, "cargo run --offline 2>&1").await;
    assert!(!err && exit_code(&text) == Some(0), "{text}");
    assert!(text.contains("hello from the sandbox"), "{text}");
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn network_is_off_in_allowlist_mode_unless_exec_network() {
    use std::net::TcpListener;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!(
        "python3 -c \"import socket; s=socket.create_connection(('127.0.0.1', {port}), 5); print('connected')\""
    );
    let udp = "python3 -c \"import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'x', ('127.0.0.1', 9)); print('sent')\"";

    let lab1 = lab(false);
    let c = lab1.client().await;
    let text = must_fail(&c, &connect).await;
    assert!(!text.contains("connected"), "{text}");
    assert!(text.contains("exec.network"), "the hint says why: {text}");
    let text = must_fail(&c, udp).await;
    assert!(!text.contains("sent"), "{text}");
    assert!(
        listener.accept().is_err(),
        "a connection reached the listener"
    );
    c.cancel().await.unwrap();

    // The control: with exec.network the same command connects, so the test can fail.
    let lab2 = lab(false);
    lab2.env.write_config(json!({"exec": {"network": true}}));
    let c = lab2.client().await;
    let (text, err) = exec(&c, &connect).await;
    assert!(!err && text.contains("connected"), "{text}");
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn children_of_allowed_programs_stay_contained() {
    let lab = lab(true);
    // The control: run outside the sandbox, the fake curl does leave its marker.
    let st = std::process::Command::new(lab.fakebin.join("curl"))
        .arg("probe")
        .output()
        .unwrap();
    assert!(st.status.success() && lab.marker.exists());
    std::fs::remove_file(&lab.marker).unwrap();

    let p = lab.project();
    for args in [
        vec!["init", "-q"],
        vec![
            "-c",
            "user.email=t@e",
            "-c",
            "user.name=t",
            "commit",
            "-qm",
            "i",
            "--allow-empty",
        ],
    ] {
        assert!(
            std::process::Command::new("git")
                .args(&args)
                .current_dir(&p)
                .status()
                .unwrap()
                .success()
        );
    }
    std::fs::write(
        p.join("big.txt"),
        (0..200_000)
            .map(|i| format!("{}\n", 200_000 - i))
            .collect::<String>(),
    )
    .unwrap();
    let c = lab.client().await;
    for cmd in [
        "sed -n '1e curl x' data.txt",
        "rg --pre curl one data.txt",
        "sort -S 64k --compress-program=curl big.txt | tail -1",
        "git -c core.fsmonitor=curl status",
        "git -c alias.zz='!curl x' zz",
        "awk 'BEGIN{system(\"curl x\")}'",
        "python3 -c \"import subprocess; subprocess.run(['curl', 'x'])\"",
        "find . -maxdepth 0 -exec curl x \\;",
    ] {
        let (text, _) = exec(&c, cmd).await;
        assert!(
            !lab.marker.exists(),
            "{cmd} let curl write outside the project:\n{text}"
        );
    }
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn the_sandbox_state_is_never_silent() {
    let env = Env::new(&[("a.txt", "x\n")]);
    env.write_config(json!({"exec": {"mode": "unrestricted"}, "output": {"maxFileLines": 5}}));
    let out = env
        .command()
        .args(["config", "validate"])
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("restart a running server to apply exec.mode (read only at startup)"),
        "{stdout}"
    );
    assert!(stdout.contains("command sandbox: Landlock ABI"), "{stdout}");
    // The startup banner on stderr (stdin at EOF ends the stdio server at once).
    let banner = |env: &Env| {
        let mut c = env.command();
        c.env("CODEX_FREE_LOG", "info")
            .args(["serve", "--stdio", "--project"])
            .arg(env.project())
            .stdin(std::process::Stdio::null());
        async move {
            let out = c.output().await.unwrap();
            String::from_utf8_lossy(&out.stderr).to_string()
        }
    };
    let err = banner(&env).await;
    assert!(err.contains("command sandbox: Landlock ABI"), "{err}");

    env.write_config(json!({"exec": {"sandbox": "off"}}));
    let err = banner(&env).await;
    assert!(
        err.contains("WARNING: commands run WITHOUT the OS sandbox"),
        "{err}"
    );
    let c = env.stdio(&[]).await;
    let instructions = c
        .peer_info()
        .and_then(|i| i.instructions.clone())
        .unwrap_or_default();
    assert!(
        instructions.starts_with("WARNING: commands run WITHOUT the OS sandbox"),
        "{instructions}"
    );
    let (env_text, _) = call(&c, "get_environment", json!({})).await;
    assert!(
        env_text.contains("sandbox: WARNING: commands run WITHOUT"),
        "{env_text}"
    );
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn npm_test_runs_inside_the_project() {
    if std::process::Command::new("npm")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("npm is not installed; skipped");
        return;
    }
    let lab = lab(false);
    std::fs::write(
        lab.project().join("package.json"),
        r#"{"name":"t","version":"1.0.0","scripts":{"test":"node test.js"}}"#,
    )
    .unwrap();
    std::fs::write(
        lab.project().join("test.js"),
        "require('fs').writeFileSync('out.txt', 'written'); console.log('node test ok');\n",
    )
    .unwrap();
    let c = lab.client().await;
    let (text, err) = exec(&c, "npm test 2>&1").await;
    assert!(!err && exit_code(&text) == Some(0), "{text}");
    assert!(text.contains("node test ok"), "{text}");
    assert_eq!(
        std::fs::read_to_string(lab.project().join("out.txt")).unwrap(),
        "written"
    );
    c.cancel().await.unwrap();
}
