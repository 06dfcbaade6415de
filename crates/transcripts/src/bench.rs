//! `codex-free memories bench-compaction`: what tool-output compaction saves on the
//! user's real sessions, with no model call. For each discovered transcript it
//! parses, renders without and with compaction, and reports rendered tokens before and
//! after, the tool-output share, the saving, what phase 1 would be sent under the
//! whole-input cap, and the throughput of parse + redact + compact + render.
//!
//! Invariant: this module never prints; [`run`] returns a [`Report`] and [`print()`] writes
//! it to the writer it is given (the CLI passes stdout).

use std::io::{self, Write};
use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;

use super::discover::{SourceRoots, discover};
use super::render::{input_token_limit, render_pair};
use super::rollout::Source;
use super::sources::parse_file;
use codex_free_core::Result;

/// Resolved benchmark options.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Tokens per tool result (0 = off).
    pub budget: usize,
    /// Sources to read.
    pub sources: Vec<Source>,
    /// Newest sessions to measure.
    pub max_sessions: usize,
    /// Phase-1 model context window, tokens.
    pub context_window: Option<usize>,
    /// Where to look.
    pub roots: SourceRoots,
}

/// One session's figures (tokens are o200k tokens).
#[derive(Debug, Clone, Serialize)]
pub struct SessionReport {
    /// Source of the transcript.
    pub source: Source,
    /// Session id.
    pub id: String,
    /// Transcript path.
    pub path: PathBuf,
    /// Transcript size in bytes.
    pub bytes: u64,
    /// Tool results in the session.
    pub tool_results: usize,
    /// Rendered tokens without compaction.
    pub tokens_before: usize,
    /// Rendered tokens with compaction.
    pub tokens_after: usize,
    /// Tool-result tokens without compaction.
    pub tool_tokens_before: usize,
    /// Tool-result tokens with compaction.
    pub tool_tokens_after: usize,
    /// Tokens phase 1 would receive without compaction (after the whole-input cap).
    pub sent_before: usize,
    /// Tokens phase 1 would receive with compaction (after the whole-input cap).
    pub sent_after: usize,
}

impl SessionReport {
    /// Share of tool output in the uncompacted rendering, 0..=1.
    pub fn tool_share(&self) -> f64 {
        ratio(self.tool_tokens_before, self.tokens_before)
    }

    /// Rendered-token saving, 0..=1.
    pub fn saving(&self) -> f64 {
        1.0 - ratio(self.tokens_after, self.tokens_before)
    }
}

/// The benchmark result.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Budget used (tokens per tool result).
    pub budget: usize,
    /// Whole-input cap applied (tokens).
    pub input_limit: usize,
    /// Per-session figures, newest first.
    pub sessions: Vec<SessionReport>,
    /// Transcripts that could not be read: path and error message.
    pub failed: Vec<(PathBuf, String)>,
    /// Sum over sessions (`source`, `id` and `path` of the total are placeholders).
    pub total: SessionReport,
    /// Wall time of parse + render (both variants) for all sessions, seconds.
    pub elapsed_secs: f64,
    /// Worker threads the sessions were measured on (the machine's parallelism).
    pub threads: usize,
}

impl Report {
    /// Transcript bytes processed per second, in MB/s (10^6 bytes).
    pub fn throughput_mb_s(&self) -> f64 {
        if self.elapsed_secs <= 0.0 {
            0.0
        } else {
            self.total.bytes as f64 / 1e6 / self.elapsed_secs
        }
    }
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// Run the benchmark: discover the newest `max_sessions` non-sub-agent transcripts of the
/// chosen sources, and measure each. Never calls a model, never writes.
///
/// Errors: none besides what discovery reports (unreadable files are listed in
/// [`Report::failed`]).
pub fn run(opts: &BenchOptions) -> Result<Report> {
    // Load the tokenizer's tables before the clock starts: a one-time cost per process,
    // not throughput.
    codex_free_core::tokens::count("warm up");
    let start = Instant::now();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut sessions = Vec::new();
    let mut failed = Vec::new();
    let candidates = discover(&opts.roots, &opts.sources);
    let mut next = 0;
    // Rounds of as many candidates as sessions are still wanted, measured in parallel (as
    // phase 1 prepares several sessions at once); results keep discovery's order.
    while sessions.len() < opts.max_sessions && next < candidates.len() {
        let want = opts.max_sessions - sessions.len();
        let round = &candidates[next..(next + want).min(candidates.len())];
        next += round.len();
        let results = measure_parallel(round, opts, threads);
        for (c, r) in round.iter().zip(results) {
            match r {
                Ok(Some(s)) => sessions.push(s),
                Ok(None) => {}
                Err(e) => failed.push((c.path.clone(), e)),
            }
        }
    }
    let elapsed_secs = start.elapsed().as_secs_f64();
    let mut total = SessionReport {
        source: Source::Mcp,
        id: "total".into(),
        path: PathBuf::new(),
        bytes: 0,
        tool_results: 0,
        tokens_before: 0,
        tokens_after: 0,
        tool_tokens_before: 0,
        tool_tokens_after: 0,
        sent_before: 0,
        sent_after: 0,
    };
    for s in &sessions {
        total.bytes += s.bytes;
        total.tool_results += s.tool_results;
        total.tokens_before += s.tokens_before;
        total.tokens_after += s.tokens_after;
        total.tool_tokens_before += s.tool_tokens_before;
        total.tool_tokens_after += s.tool_tokens_after;
        total.sent_before += s.sent_before;
        total.sent_after += s.sent_after;
    }
    Ok(Report {
        budget: opts.budget,
        input_limit: input_token_limit(opts.context_window),
        sessions,
        failed,
        total,
        elapsed_secs,
        threads,
    })
}

/// One candidate's measurement: `Ok(None)` for a sub-agent session, `Err` for an unreadable file.
type Measured = std::result::Result<Option<SessionReport>, String>;

/// Measure `round` on `threads` worker threads; one result per candidate, in order
/// (`Ok(None)` for a sub-agent session, which phase 1 never sends).
fn measure_parallel(
    round: &[crate::discover::Candidate],
    opts: &BenchOptions,
    threads: usize,
) -> Vec<Measured> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let slots: Vec<std::sync::Mutex<Option<Measured>>> =
        round.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..threads.min(round.len()).max(1) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some(c) = round.get(i) else { break };
                    let r = measure_one(c, opts);
                    if let Ok(mut slot) = slots[i].lock() {
                        *slot = Some(r);
                    }
                }
            });
        }
    });
    slots
        .into_iter()
        .map(|m| {
            m.into_inner()
                .ok()
                .flatten()
                .unwrap_or_else(|| Err("not measured (a worker thread failed)".into()))
        })
        .collect()
}

fn measure_one(c: &crate::discover::Candidate, opts: &BenchOptions) -> Measured {
    let rollout = parse_file(&c.path, c.source).map_err(|e| e.to_string())?;
    if rollout.is_subagent {
        return Ok(None);
    }
    let (raw, comp) = render_pair(&rollout, opts.budget, opts.context_window);
    Ok(Some(SessionReport {
        source: c.source,
        id: rollout.id.clone(),
        path: c.path.clone(),
        bytes: c.size,
        tool_results: comp.tool_results,
        tokens_before: raw.tokens_before,
        tokens_after: comp.tokens_compacted,
        tool_tokens_before: raw.tool_tokens_before,
        tool_tokens_after: comp.tool_tokens_after,
        sent_before: raw.tokens_after,
        sent_after: comp.tokens_after,
    }))
}

/// Write `report` as a table: one row per session, then the total and throughput.
///
/// Errors: the writer's.
pub fn print(report: &Report, w: &mut impl Write) -> io::Result<()> {
    writeln!(
        w,
        "bench-compaction: budget {} tokens per tool result, phase-1 cap {} tokens, {} session(s)",
        report.budget,
        report.input_limit,
        report.sessions.len()
    )?;
    writeln!(
        w,
        "{:<7} {:<38} {:>9} {:>6} {:>9} {:>9} {:>7} {:>6} {:>9} {:>9}",
        "source",
        "session",
        "bytes",
        "tools",
        "before",
        "after",
        "saving",
        "tool%",
        "sent",
        "sent+c"
    )?;
    let row = |w: &mut dyn Write, src: &str, id: &str, s: &SessionReport| -> io::Result<()> {
        let id: String = id.chars().take(38).collect();
        writeln!(
            w,
            "{:<7} {:<38} {:>9} {:>6} {:>9} {:>9} {:>6.1}% {:>5.1}% {:>9} {:>9}",
            src,
            id,
            s.bytes,
            s.tool_results,
            s.tokens_before,
            s.tokens_after,
            s.saving() * 100.0,
            s.tool_share() * 100.0,
            s.sent_before,
            s.sent_after
        )
    };
    for s in &report.sessions {
        row(w, s.source.as_str(), &s.id, s)?;
    }
    row(w, "TOTAL", "", &report.total)?;
    writeln!(
        w,
        "tool output: {} -> {} tokens; sent to phase 1: {} -> {} tokens ({:.1}% saved)",
        report.total.tool_tokens_before,
        report.total.tool_tokens_after,
        report.total.sent_before,
        report.total.sent_after,
        (1.0 - ratio(report.total.sent_after, report.total.sent_before)) * 100.0
    )?;
    writeln!(
        w,
        "throughput: {:.2} MB/s ({} bytes in {:.3} s on {} thread(s), parse + redact + render twice + token counts)",
        report.throughput_mb_s(),
        report.total.bytes,
        report.elapsed_secs,
        report.threads
    )?;
    for (p, e) in &report.failed {
        writeln!(w, "unreadable: {}: {e}", p.display())?;
    }
    Ok(())
}
