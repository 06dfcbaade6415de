//! `codex-free usage bench-import`: how long the usage import takes on many Codex
//! rollouts. Generates `files` synthetic rollouts shaped like Codex CLI's (a
//! `session_meta` line with long base instructions, then turns of `turn_context`,
//! messages, tool calls with outputs and `token_count` events) in a temp dir, imports
//! them into a fresh temp database, imports again with nothing changed, and reports both
//! wall times beside their targets (10 s and 1 s for 2,000 files of ~80 KiB).

use std::fmt::Write as _;
use std::io::Write as _;
use std::time::Instant;

use serde::Serialize;

use super::{AGENTS, ImportReport, Pricer, import};
use codex_free_core::error::IoContext;
use codex_free_core::{Error, Result};
use codex_free_models::prices::PriceTable;
use codex_free_store::{ManualClock, Store};
use codex_free_transcripts::discover::SourceRoots;

/// Target for the first import of 2,000 rollouts (~160 MB), ms.
pub const TARGET_FIRST_MS: u64 = 10_000;
/// Target for the second, unchanged import, ms.
pub const TARGET_AGAIN_MS: u64 = 1_000;

/// What the benchmark measured.
#[derive(Debug, Clone, Serialize)]
pub struct BenchImportReport {
    /// Rollouts generated.
    pub files: usize,
    /// Their total size, bytes.
    pub bytes: u64,
    /// Requests (token_count deltas) written into them.
    pub requests: usize,
    /// First import.
    pub first: ImportReport,
    /// Second import, nothing changed.
    pub again: ImportReport,
    /// [`TARGET_FIRST_MS`].
    pub target_first_ms: u64,
    /// [`TARGET_AGAIN_MS`].
    pub target_again_ms: u64,
}

/// Write one synthetic rollout of about `kib` KiB; returns (bytes, requests).
fn write_rollout(path: &std::path::Path, n: usize, kib: usize) -> Result<(u64, usize)> {
    let id = format!("01a20000-0000-7000-8000-{n:012}");
    let filler = "lorem ipsum dolor sit amet, consectetur adipiscing elit; ".repeat(40);
    let mut out = String::with_capacity(kib * 1024 + 4096);
    let _ = writeln!(
        out,
        r#"{{"timestamp":"2026-11-01T10:00:00.000Z","type":"session_meta","payload":{{"id":"{id}","cwd":"/home/dev/work/p{}","originator":"codex_cli_rs","cli_version":"0.171.0","model_provider":"openai","base_instructions":{{"text":"{}"}}}}}}"#,
        n % 50,
        filler.repeat(3)
    );
    let (mut ti, mut tc, mut to) = (0i64, 0i64, 0i64);
    let mut k = 0usize;
    while out.len() < kib * 1024 {
        let secs = n * 7 + k * 11;
        let ts = format!(
            "2026-11-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            1 + (n % 28),
            (secs / 3600) % 24,
            (secs / 60) % 60,
            secs % 60,
            k % 1000
        );
        let _ = writeln!(
            out,
            r#"{{"timestamp":"{ts}","type":"turn_context","payload":{{"cwd":"/home/dev/work/p","model":"gpt-5-codex","approval_policy":"never"}}}}"#
        );
        let _ = writeln!(
            out,
            r#"{{"timestamp":"{ts}","type":"response_item","payload":{{"type":"message","role":"user","content":[{{"type":"input_text","text":"step {k}: {}"}}]}}}}"#,
            &filler[..400]
        );
        let _ = writeln!(
            out,
            r#"{{"timestamp":"{ts}","type":"response_item","payload":{{"type":"function_call_output","call_id":"c{k}","output":"{filler}"}}}}"#
        );
        let (i, c, o) = (
            10_000 + (k as i64) * 300,
            5_000 + (k as i64) * 150,
            80 + (k as i64 % 7) * 10,
        );
        ti += i;
        tc += c;
        to += o;
        let _ = writeln!(
            out,
            r#"{{"timestamp":"{ts}","type":"event_msg","payload":{{"type":"token_count","info":{{"total_token_usage":{{"input_tokens":{ti},"cached_input_tokens":{tc},"output_tokens":{to},"reasoning_output_tokens":0,"total_tokens":{}}},"last_token_usage":{{"input_tokens":{i},"cached_input_tokens":{c},"output_tokens":{o},"reasoning_output_tokens":0,"total_tokens":{}}}}}}}}}"#,
            ti + to,
            i + o
        );
        k += 1;
    }
    let mut f = std::fs::File::create(path).ctx(|| format!("creating {}", path.display()))?;
    f.write_all(out.as_bytes())
        .ctx(|| format!("writing {}", path.display()))?;
    Ok((out.len() as u64, k))
}

/// What `usage bench-import` generates and how it prints (the CLI's flags are
/// `crate::cli::BenchImportArgs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BenchImportOptions {
    /// Number of rollouts.
    pub files: usize,
    /// Approximate size of each rollout in KiB.
    pub kib: usize,
    /// Print JSON.
    pub json: bool,
}

/// Generate, import twice, report.
///
/// Errors: [`Error::Io`] when the temp files cannot be written, [`Error::Store`] from the
/// import.
pub fn measure(args: &BenchImportOptions) -> Result<BenchImportReport> {
    if args.files == 0 || args.kib == 0 {
        return Err(Error::InvalidArgument(
            "--files and --kib must be at least 1".into(),
        ));
    }
    let tmp = tempfile::tempdir().ctx(|| "creating a temp dir".to_string())?;
    let codex = tmp.path().join("codex");
    let (mut bytes, mut requests) = (0u64, 0usize);
    for n in 0..args.files {
        let dir = codex.join(format!("sessions/2026/11/{:02}", 1 + (n % 28)));
        std::fs::create_dir_all(&dir).ctx(|| format!("creating {}", dir.display()))?;
        let (b, r) = write_rollout(
            &dir.join(format!("rollout-2026-11-01T10-00-00-{n:06}.jsonl")),
            n,
            args.kib,
        )?;
        bytes += b;
        requests += r;
    }
    let store = Store::open(
        &tmp.path().join("state.sqlite"),
        std::sync::Arc::new(ManualClock::new(chrono::Utc::now().timestamp())),
    )?;
    let roots = SourceRoots {
        codex_home: Some(codex),
        ..Default::default()
    };
    let none = Default::default();
    let t = Instant::now();
    let mut first = import(
        &store,
        &roots,
        &AGENTS,
        &mut Pricer::new(PriceTable::bundled(), &none),
    )?;
    first.duration_ms = t.elapsed().as_millis() as u64;
    let t = Instant::now();
    let mut again = import(
        &store,
        &roots,
        &AGENTS,
        &mut Pricer::new(PriceTable::bundled(), &none),
    )?;
    again.duration_ms = t.elapsed().as_millis() as u64;
    Ok(BenchImportReport {
        files: args.files,
        bytes,
        requests,
        first,
        again,
        target_first_ms: TARGET_FIRST_MS,
        target_again_ms: TARGET_AGAIN_MS,
    })
}

/// [`measure`], rendered as text or JSON.
///
/// Errors: as [`measure`].
pub fn run(args: &BenchImportOptions) -> Result<String> {
    let r = measure(args)?;
    if args.json {
        return serde_json::to_string_pretty(&r)
            .map_err(|e| Error::InvalidArgument(format!("cannot encode the report: {e}")));
    }
    let verdict = |ms: u64, target: u64| if ms < target { "ok" } else { "OVER TARGET" };
    Ok(format!(
        "generated {} Codex rollouts, {:.1} MB, {} requests\n\
         first import:   {:>7} ms  (target < {} ms: {})  {} rows written, {} files read\n\
         second import:  {:>7} ms  (target < {} ms: {})  {} files read (unchanged)\n",
        r.files,
        r.bytes as f64 / 1e6,
        r.requests,
        r.first.duration_ms,
        r.target_first_ms,
        verdict(r.first.duration_ms, r.target_first_ms),
        r.first.rows_written,
        r.first.files_read,
        r.again.duration_ms,
        r.target_again_ms,
        verdict(r.again.duration_ms, r.target_again_ms),
        r.again.files_read
    ))
}
