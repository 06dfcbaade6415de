//! Per-command cost of the OS sandbox: the median (and 90th percentile) wall time of 200
//! `true` commands through `exec_command` with `exec.sandbox = "os"` against the same with
//! `"off"`, in one run, interleaved so both see the same machine load.
//!
//! `cargo bench -p codex-free-tools --bench sandbox` prints both medians, their difference, and what the
//! sandbox was on this machine. `SANDBOX_BENCH_RUNS` overrides the count (default 200). The
//! state home sits beside the project (the usual layout); with `SANDBOX_BENCH_HOME_IN_TMP=1`
//! it sits in `/tmp` instead, so the rules are carved around a busy shared directory.
//! The project holds a `.git` (the usual case: it is kept read-only by a mount namespace
//! per command); `SANDBOX_BENCH_NO_GIT=1` leaves it out.
//!
//! Invariant: both variants run the same command through the same code path; only
//! `exec.sandbox` differs. Nothing is asserted here. Besides wall time it prints the CPU time
//! per command (this process and the commands it waited for), which a busy machine blurs less.
// A measurement program: it prints its figures and may panic on a broken setup.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::time::{Duration, Instant};

use codex_free_core::config::{Config, SandboxMode};
use codex_free_tools::ToolCtx;
use codex_free_tools::exec::{ExecCommandArgs, ExecSessions, sandbox_status};

fn runs() -> usize {
    std::env::var("SANDBOX_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

fn args() -> ExecCommandArgs {
    ExecCommandArgs {
        cmd: "true".into(),
        workdir: None,
        yield_time_ms: Some(30_000),
        max_output_tokens: None,
        timeout_ms: None,
        tty: None,
        login: None,
    }
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let n = runs();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let root = base.join("proj");
    std::fs::create_dir_all(&root).unwrap();
    if std::env::var("SANDBOX_BENCH_NO_GIT").as_deref() != Ok("1") {
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/config"), "[core]\n").unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    }
    let home_tmp = tempfile::Builder::new()
        .prefix("sandbox-bench-home")
        .tempdir_in("/tmp")
        .unwrap();
    let home = if std::env::var("SANDBOX_BENCH_HOME_IN_TMP").as_deref() == Ok("1") {
        home_tmp.path().to_path_buf()
    } else {
        base.join("home")
    };
    let ctx_for = |mode: SandboxMode| {
        let mut c = Config::default();
        c.exec.sandbox = mode;
        ToolCtx::open(
            &root,
            std::sync::Arc::new(codex_free_core::jail::Protected::none()),
            c,
            home.clone(),
        )
        .unwrap()
    };
    let on = ctx_for(SandboxMode::Os);
    let off = ctx_for(SandboxMode::Off);
    let status = sandbox_status(&on.config.exec);
    let ex = ExecSessions::new();
    let mut t_on = Vec::with_capacity(n);
    let mut t_off = Vec::with_capacity(n);
    let (mut cpu_on, mut cpu_off) = (Duration::ZERO, Duration::ZERO);
    rt.block_on(async {
        for _ in 0..10 {
            ex.exec_command(&on, args()).await.unwrap();
            ex.exec_command(&off, args()).await.unwrap();
        }
        for _ in 0..n {
            for (ctx, out, cpu) in [
                (&on, &mut t_on, &mut cpu_on),
                (&off, &mut t_off, &mut cpu_off),
            ] {
                let c = cpu_time();
                let t = Instant::now();
                let reply = ex.exec_command(ctx, args()).await.unwrap();
                out.push(t.elapsed());
                *cpu += cpu_time().saturating_sub(c);
                assert!(reply.contains("Process exited with code 0"), "{reply}");
            }
        }
    });
    t_on.sort();
    t_off.sort();
    let (m_on, m_off) = (quantile(&t_on, 0.5), quantile(&t_off, 0.5));
    println!("exec_command `true`, {n} runs each, interleaved");
    println!(
        "  sandbox os : median {:.2} ms, p90 {:.2} ms   ({})",
        ms(m_on),
        ms(quantile(&t_on, 0.9)),
        if status.enforced {
            status
                .summary
                .split(':')
                .next()
                .unwrap_or_default()
                .to_string()
        } else {
            format!("NOT ENFORCED: {}", status.summary)
        }
    );
    println!(
        "  sandbox off: median {:.2} ms, p90 {:.2} ms",
        ms(m_off),
        ms(quantile(&t_off, 0.9))
    );
    println!(
        "  overhead   : {:+.2} ms per command at the median ({:+.0}%)",
        ms(m_on) - ms(m_off),
        (ms(m_on) / ms(m_off) - 1.0) * 100.0
    );
    let (c_on, c_off) = (ms(cpu_on) / n as f64, ms(cpu_off) / n as f64);
    println!(
        "  CPU (server + commands, user+sys): os {c_on:.2} ms, off {c_off:.2} ms per command, {:+.2} ms (less sensitive to a busy machine than wall time)",
        c_on - c_off
    );
}

/// User + system CPU time of this process and its waited-for descendants so far.
fn cpu_time() -> Duration {
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    let mut total = Duration::ZERO;
    for who in [libc::RUSAGE_SELF, libc::RUSAGE_CHILDREN] {
        // SAFETY: getrusage writes into the zeroed struct it is given.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(who, &mut ru) };
        total += tv(ru.ru_utime) + tv(ru.ru_stime);
    }
    total
}
