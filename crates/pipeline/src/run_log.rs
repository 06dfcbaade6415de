//! `<home>/memories.log`: one human-readable line per pipeline run (and per notable
//! event such as the spend cap stopping a run), appended under the file's lock so lines
//! from several processes never interleave.
//!
//! Line shapes, all built by [`LogLine::render`]:
//! - phase 1: `2025-07-01T12:00:00Z phase1: 2 claimed, 1 with output, 1 no output, 0 failed, 0 released, 12345 tokens, $0.0031 [model=openai/gpt-5-mini run=<id>]`
//!   where the cost reads `price unknown` when no request of the run was priced and gets
//!   `+ N unpriced` when only some were;
//! - phase 2: `2025-07-01T12:00:00Z phase2: ok, usage requests=3 input=9000 cacheRead=0 output=700, $0.0100 [model=openai/gpt-5 run=<id>]`
//!   with ` error: <why>` after a failure;
//! - a V2 pipeline's lines read `phase1 v2:` / `phase2 v2:` (dual-write logs both);
//! - a run that could not start: `2025-07-01T12:00:00Z phase1: not run: <why>`.
//!
//! Invariant: the log is append-only; an existing line is never rewritten, and [`append`]
//! is the only writer.

use std::io::Write;
use std::path::{Path, PathBuf};

use codex_free_core::Result;
use codex_free_core::error::IoContext;
use codex_free_core::home;
use codex_free_models::prices::format_cost;

/// File name of the log inside the state home.
pub const LOG_FILE: &str = "memories.log";

/// `<home>/memories.log`.
pub fn log_path(home: &Path) -> PathBuf {
    home.join(LOG_FILE)
}

/// Render `line`, append it under the log's lock and return the text written (without
/// its newline), for the caller's own log.
///
/// Errors: [`codex_free_core::Error::Io`] when the file cannot be opened or written.
pub fn append(home: &Path, line: &LogLine) -> Result<String> {
    let text = line.render();
    append_line(home, &text)?;
    Ok(text)
}

/// Append `line` (a newline is added) under the log's lock.
fn append_line(home: &Path, line: &str) -> Result<()> {
    let path = log_path(home);
    home::with_lock(&path, || {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .ctx(|| format!("opening {}", path.display()))?;
        let mut text = line.trim_end_matches('\n').to_string();
        text.push('\n');
        f.write_all(text.as_bytes())
            .ctx(|| format!("appending to {}", path.display()))
    })
}

/// One line of `memories.log`.
#[derive(Debug, Clone, PartialEq)]
pub enum LogLine {
    /// A finished (or stopped) phase-1 run.
    Phase1(Phase1Line),
    /// A finished phase-2 run.
    Phase2(Phase2Line),
    /// A run of `phase` (`phase1`/`phase2`) that could not start at `at` (unix seconds).
    NotRun {
        /// Unix seconds of the line.
        at: i64,
        /// `phase1` or `phase2`.
        phase: &'static str,
        /// Why (one line; newlines become spaces).
        why: String,
    },
    /// An alert raised at `at` (unix seconds): spend threshold, failing runs, rejected key.
    Alert {
        /// Unix seconds of the line.
        at: i64,
        /// Title and body (one line; newlines become spaces).
        text: String,
    },
}

impl LogLine {
    /// The line's text (no trailing newline).
    pub fn render(&self) -> String {
        match self {
            LogLine::Phase1(l) => l.render(),
            LogLine::Phase2(l) => l.render(),
            LogLine::NotRun { at, phase, why } => {
                format!("{} {phase}: not run: {}", iso(*at), one_line(why))
            }
            LogLine::Alert { at, text } => format!("{} alert: {}", iso(*at), one_line(text)),
        }
    }
}

fn one_line(s: &str) -> String {
    s.replace('\n', " ")
}

/// The usage a phase-2 log line reports (from the run's row).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Phase2Line {
    /// Unix seconds of the line.
    pub at: i64,
    /// `ok`, `failed`, `no_change`, ... as the run recorded it.
    pub outcome: String,
    /// Requests made.
    pub requests: i64,
    /// Input tokens (cached included).
    pub input_tokens: i64,
    /// Cached input tokens.
    pub cached_input_tokens: i64,
    /// Output tokens.
    pub output_tokens: i64,
    /// Cost of priced requests, `None` when none was priced.
    pub cost_usd: Option<f64>,
    /// `provider/model-id` (empty when unknown).
    pub model: String,
    /// Run id.
    pub run_id: String,
    /// Why the run failed, if it did.
    pub error: Option<String>,
    /// A run of the V2 pipeline (the line reads `phase2 v2:`); V1's lines are unchanged.
    pub v2: bool,
}

impl Phase2Line {
    /// Render the line (no trailing newline).
    pub fn render(&self) -> String {
        format!(
            "{} phase2{}: {}, usage requests={} input={} cacheRead={} output={}, {} [model={} run={}]{}",
            iso(self.at),
            if self.v2 { " v2" } else { "" },
            self.outcome,
            self.requests,
            self.input_tokens,
            self.cached_input_tokens,
            self.output_tokens,
            format_cost(self.cost_usd),
            self.model,
            self.run_id,
            self.error
                .as_deref()
                .map(|e| format!(" error: {}", one_line(e)))
                .unwrap_or_default()
        )
    }
}

/// The counts a phase-1 log line reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Phase1Line {
    /// Unix seconds of the line.
    pub at: i64,
    /// Jobs claimed.
    pub claimed: i64,
    /// Stored with output.
    pub with_output: i64,
    /// Nothing worth keeping.
    pub no_output: i64,
    /// Failed.
    pub failed: i64,
    /// Given back unfinished.
    pub released: i64,
    /// Input + output tokens.
    pub tokens: u64,
    /// Cost of priced requests, `None` when none was priced.
    pub cost_usd: Option<f64>,
    /// Requests without a price.
    pub unpriced: i64,
    /// `provider/model-id`.
    pub model: String,
    /// Run id.
    pub run_id: String,
    /// Why the run stopped early, if it did.
    pub stopped: Option<String>,
    /// A run of the V2 pipeline (the line reads `phase1 v2:`); V1's lines are unchanged.
    pub v2: bool,
}

pub use codex_free_core::time::iso;

impl Phase1Line {
    /// Render the line (no trailing newline).
    pub fn render(&self) -> String {
        let cost = match (self.cost_usd, self.unpriced) {
            (Some(c), 0) => format_cost(Some(c)),
            (Some(c), n) => format!("{} + {n} unpriced", format_cost(Some(c))),
            (None, _) => format_cost(None),
        };
        let mut s = format!(
            "{} phase1{}: {} claimed, {} with output, {} no output, {} failed, {} released, {} tokens, {} [model={} run={}]",
            iso(self.at),
            if self.v2 { " v2" } else { "" },
            self.claimed,
            self.with_output,
            self.no_output,
            self.failed,
            self.released,
            self.tokens,
            cost,
            self.model,
            self.run_id
        );
        if let Some(why) = &self.stopped {
            s.push_str(&format!(" stopped: {}", one_line(why)));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_shape_and_append() {
        let l = Phase1Line {
            at: 1_751_328_000,
            claimed: 2,
            with_output: 1,
            no_output: 1,
            tokens: 1234,
            cost_usd: Some(0.0031),
            model: "openai/gpt-5-mini".into(),
            run_id: "r1".into(),
            ..Default::default()
        };
        assert_eq!(
            l.render(),
            "2025-07-01T00:00:00Z phase1: 2 claimed, 1 with output, 1 no output, 0 failed, 0 released, 1234 tokens, $0.0031 [model=openai/gpt-5-mini run=r1]"
        );
        let unknown = Phase1Line {
            cost_usd: None,
            unpriced: 2,
            ..l.clone()
        };
        assert!(unknown.render().contains("1234 tokens, price unknown ["));
        let d = tempfile::tempdir().unwrap();
        append_line(d.path(), &l.render()).unwrap();
        append_line(d.path(), "second\n").unwrap();
        let text = std::fs::read_to_string(log_path(d.path())).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert!(text.ends_with("second\n"));
    }

    #[test]
    fn phase2_and_not_run_shapes() {
        let l = LogLine::Phase2(Phase2Line {
            at: 1_751_328_000,
            outcome: "failed".into(),
            requests: 3,
            input_tokens: 9000,
            cached_input_tokens: 100,
            output_tokens: 700,
            cost_usd: Some(0.01),
            model: "openai/gpt-5".into(),
            run_id: "r2".into(),
            error: Some("bad\nthing".into()),
            v2: false,
        });
        assert_eq!(
            l.render(),
            "2025-07-01T00:00:00Z phase2: failed, usage requests=3 input=9000 cacheRead=100 output=700, $0.0100 [model=openai/gpt-5 run=r2] error: bad thing"
        );
        let d = tempfile::tempdir().unwrap();
        let n = LogLine::NotRun {
            at: 1_751_328_000,
            phase: "phase1",
            why: "no key".into(),
        };
        assert_eq!(
            append(d.path(), &n).unwrap(),
            "2025-07-01T00:00:00Z phase1: not run: no key"
        );
        assert_eq!(
            std::fs::read_to_string(log_path(d.path())).unwrap(),
            "2025-07-01T00:00:00Z phase1: not run: no key\n"
        );
    }
}
