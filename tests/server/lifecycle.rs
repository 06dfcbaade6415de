//! Process lifecycle through the real binary: signals shut every server down cleanly
//! (exec children included), and every `serve` hosts the memory pipeline's scheduler,
//! one process per state home.

use std::time::{Duration, Instant};

use crate::support::{Env, call};

fn alive(pid: i32) -> bool {
    // SAFETY: kill with signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

async fn wait_exit(child: &mut tokio::process::Child) -> std::process::ExitStatus {
    tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("server exits within 20 s of the signal")
        .unwrap()
}

async fn exec_sleeper(client: &crate::support::Client, env: &Env) -> i32 {
    let (out, err) = call(
        client,
        "exec_command",
        serde_json::json!({
            "cmd": "sleep 300 & echo $! > bg.pid; echo started; sleep 300",
            "yield_time_ms": 1000,
            "timeout_ms": 120000
        }),
    )
    .await;
    assert!(!err, "{out}");
    assert!(out.contains("started"), "{out}");
    let pid: i32 = std::fs::read_to_string(env.project().join("bg.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(alive(pid));
    pid
}

async fn gone_within(pid: i32, d: Duration) -> bool {
    let end = Instant::now() + d;
    while Instant::now() < end {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    !alive(pid)
}

#[tokio::test]
async fn sigterm_and_sighup_stop_the_http_server_and_its_commands() {
    for sig in [libc::SIGTERM, libc::SIGHUP] {
        let env = Env::new(&[("a.txt", "x\n")]);
        let mut srv = env.http(&[]).await;
        let client = srv.client().await;
        let pid = exec_sleeper(&client, &env).await;
        let server_pid = srv.child.id().unwrap() as i32;
        // SAFETY: sending a signal to our own child.
        assert_eq!(unsafe { libc::kill(server_pid, sig) }, 0);
        let st = wait_exit(&mut srv.child).await;
        assert!(st.success(), "signal {sig}: exit {st:?}");
        assert!(
            gone_within(pid, Duration::from_secs(5)).await,
            "signal {sig}: the exec child {pid} outlived the server"
        );
        // The port is closed.
        let r = reqwest::Client::new()
            .get(format!("{}/health", srv.base()))
            .timeout(Duration::from_secs(2))
            .send()
            .await;
        assert!(r.is_err(), "signal {sig}: still answering after exit");
    }
}

#[tokio::test]
async fn sigterm_stops_a_stdio_server_and_its_commands() {
    let env = Env::new(&[("a.txt", "x\n")]);
    let mut cmd = env.command();
    cmd.arg("serve")
        .arg("--stdio")
        .arg("--project")
        .arg(env.project())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().unwrap();
    // Held open until the end: `wait` would close stdin, which also ends the session.
    let _stdin = child.stdin.take();
    // The scheduler lock names this process once it is up.
    let lock = env.home().join("scheduler.lock");
    let end = Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(&lock).is_ok_and(|t| t.contains("serve --stdio")) {
        assert!(
            Instant::now() < end,
            "serve --stdio never took the scheduler"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let text = std::fs::read_to_string(&lock).unwrap();
    assert!(
        text.contains(&format!("pid {}", child.id().unwrap())),
        "{text}"
    );
    // SAFETY: sending a signal to our own child.
    assert_eq!(
        unsafe { libc::kill(child.id().unwrap() as i32, libc::SIGTERM) },
        0
    );
    let st = wait_exit(&mut child).await;
    assert!(st.success(), "{st:?}");
}

#[tokio::test]
async fn one_scheduler_per_state_home_across_processes() {
    let env = Env::new(&[("a.txt", "x\n")]);
    let first = env.stdio(&[]).await;
    let lock = env.home().join("scheduler.lock");
    let end = Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(&lock).is_ok_and(|t| t.contains("pid ")) {
        assert!(Instant::now() < end, "no scheduler started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let holder = std::fs::read_to_string(&lock).unwrap();
    // A second server on the same home leaves the lock (and its holder line) alone.
    let second = env.stdio(&[]).await;
    let (out, err) = call(&second, "list_directory", serde_json::json!({})).await;
    assert!(!err, "{out}");
    assert_eq!(std::fs::read_to_string(&lock).unwrap(), holder);
    // `memories status` names the holder.
    let st = env
        .command()
        .args(["memories", "status"])
        .output()
        .await
        .unwrap();
    let out = String::from_utf8_lossy(&st.stdout);
    assert!(
        out.contains(holder.trim()),
        "status does not name the scheduler holder:\n{out}"
    );
    first.cancel().await.unwrap();
    second.cancel().await.unwrap();
}
