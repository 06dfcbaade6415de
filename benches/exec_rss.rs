//! Peak memory of `exec_command` on a command printing 1 GB (issue 2's target: the server
//! stays under 64 MB whatever the output size).
//!
//! `cargo bench --bench exec_rss` runs each case in a fresh child process of this bench (so
//! the peak RSS, `VmHWM` from `/proc/self/status`, belongs to the process that ran the tool
//! and nothing else) and prints it beside the 64 MB target and beside `cat` consuming the
//! same stream into /dev/null (`/usr/bin/time -f %M`, or `getrusage(RUSAGE_CHILDREN)` when
//! GNU time is missing). `EXEC_RSS_BYTES` overrides the output size (default 1e9 bytes).
//!
//! Invariant: measurements come from separate processes; nothing is asserted here.
// A measurement program: it prints its figures and may panic on a broken setup.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::process::Command;
use std::time::Instant;

use codex_free_core::config::Config;
use codex_free_tools::ToolCtx;
use codex_free_tools::exec::{ExecCommandArgs, ExecSessions, WriteStdinArgs};

const CHILD_ENV: &str = "EXEC_RSS_CHILD_SPOOL_BYTES";
const TARGET_MB: f64 = 64.0;

fn bytes() -> u64 {
    std::env::var("EXEC_RSS_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000_000)
}

fn generator(n: u64) -> String {
    format!("head -c {n} /dev/zero | tr '\\0' a")
}

fn status_kb(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Child mode: run exec_command to completion, print `key=value` measurements.
fn child(spool_cap: u64) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    std::fs::create_dir_all(base.join("proj")).unwrap();
    let mut config = Config::default();
    config.exec.max_spool_bytes = spool_cap;
    config.command.default_timeout = 600_000;
    config.command.max_timeout = 600_000;
    let ctx = ToolCtx::open(
        &base.join("proj"),
        std::sync::Arc::new(codex_free_core::jail::Protected::none()),
        config,
        base.join("home"),
    )
    .unwrap();
    let baseline = status_kb("VmRSS:");
    let n = bytes();
    let t = Instant::now();
    let reply = rt.block_on(async {
        let ex = ExecSessions::new();
        let mut reply = ex
            .exec_command(
                &ctx,
                ExecCommandArgs {
                    cmd: generator(n),
                    workdir: None,
                    yield_time_ms: Some(30_000),
                    max_output_tokens: None,
                    timeout_ms: None,
                    tty: None,
                    login: None,
                },
            )
            .await
            .unwrap();
        while let Some(id) = reply
            .lines()
            .find_map(|l| l.strip_prefix("Process running with session ID "))
        {
            let session_id = id.trim().parse().unwrap();
            reply = ex
                .write_stdin(
                    &ctx,
                    WriteStdinArgs {
                        session_id,
                        chars: String::new(),
                        yield_time_ms: Some(30_000),
                        max_output_tokens: None,
                    },
                )
                .await
                .unwrap();
        }
        reply
    });
    let wall = t.elapsed().as_secs_f64();
    let ok = reply.contains("Process exited with code 0") && reply.contains(&format!(" of {n}"));
    println!(
        "baseline_kb={baseline} hwm_kb={} wall_s={wall:.2} reply_bytes={} ok={ok}",
        status_kb("VmHWM:"),
        reply.len()
    );
}

fn parse(out: &str, key: &str) -> Option<String> {
    out.split_whitespace()
        .find_map(|kv| kv.strip_prefix(&format!("{key}=")))
        .map(str::to_string)
}

fn mb(kb: u64) -> f64 {
    kb as f64 / 1024.0
}

/// `cat` reading the same stream into /dev/null: peak RSS in kB.
fn reference_cat(n: u64) -> (u64, &'static str) {
    if std::path::Path::new("/usr/bin/time").exists() {
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!(
                "{} | /usr/bin/time -f 'maxrss_kb=%M' cat > /dev/null",
                generator(n)
            ))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        if let Some(kb) = parse(&err, "maxrss_kb").and_then(|v| v.parse().ok()) {
            return (kb, "/usr/bin/time -f %M cat > /dev/null");
        }
    }
    Command::new("sh")
        .arg("-c")
        .arg(format!("{} | cat > /dev/null", generator(n)))
        .status()
        .unwrap();
    // SAFETY: getrusage fills a plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    (
        ru.ru_maxrss as u64,
        "getrusage(RUSAGE_CHILDREN) of head|tr|cat",
    )
}

fn main() {
    if let Ok(cap) = std::env::var(CHILD_ENV) {
        child(cap.parse().unwrap());
        return;
    }
    if std::env::args().any(|a| a == "--list") {
        println!("exec_rss: bench");
        return;
    }
    let n = bytes();
    let (cat_kb, how) = reference_cat(n);
    println!(
        "exec_rss: peak RSS while exec_command runs `{}` ({n} bytes of output)",
        generator(n)
    );
    println!(
        "{:<46} {:>12} {:>10} {:>10}  verdict",
        "case", "peak RSS", "baseline", "wall"
    );
    let me = std::env::current_exe().unwrap();
    for (label, cap) in [
        ("exec_command, exec.maxSpoolBytes = 64 MiB", 64u64 << 20),
        ("exec_command, exec.maxSpoolBytes = 4 GiB (all)", 4u64 << 30),
    ] {
        let out = Command::new(&me)
            .env(CHILD_ENV, cap.to_string())
            .output()
            .unwrap();
        let s = String::from_utf8_lossy(&out.stdout);
        let hwm: u64 = parse(&s, "hwm_kb")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let base: u64 = parse(&s, "baseline_kb")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let wall = parse(&s, "wall_s").unwrap_or_else(|| "?".into());
        let ok = parse(&s, "ok").as_deref() == Some("true");
        let verdict = match (ok, mb(hwm) < TARGET_MB) {
            (false, _) => format!(
                "RUN FAILED: {}",
                String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .last()
                    .unwrap_or("")
            ),
            (true, true) => format!("under the {TARGET_MB} MB target"),
            (true, false) => format!("OVER the {TARGET_MB} MB target"),
        };
        println!(
            "{label:<46} {:>9.1} MB {:>7.1} MB {:>8} s  {verdict}",
            mb(hwm),
            mb(base),
            wall
        );
    }
    println!(
        "{:<46} {:>9.1} MB {:>10} {:>10}  reference ({how})",
        "cat > /dev/null, same stream",
        mb(cat_kb),
        "",
        ""
    );
    println!("{:<46} {:>9.1} MB", "target (issue 2)", TARGET_MB);
}
