//! `<home>/memories.log`: one human-readable line per pipeline run (and per notable
//! event such as the spend cap stopping a run), appended under the file's lock so lines
//! from several processes never interleave.
//!
//! Line shape (phase 1):
//! `2025-07-01T12:00:00Z phase1: 2 claimed, 1 with output, 1 no output, 0 failed, 0 released, 12345 tokens, $0.0031 [model=openai/gpt-5-mini run=<id>]`
//! where the cost reads `price unknown` when no request of the run was priced and gets
//! `+ N unpriced` when only some were.
//!
//! Invariant: the log is append-only; an existing line is never rewritten.

use std::io::Write;
use std::path::{Path, PathBuf};

use codex_free_core::error::IoContext;
use crate::providers::prices::format_cost;
use codex_free_core::Result;
use codex_free_core::home;

/// File name of the log inside the state home.
pub const LOG_FILE: &str = "memories.log";

/// `<home>/memories.log`.
pub fn log_path(home: &Path) -> PathBuf {
    home.join(LOG_FILE)
}

/// Append `line` (a newline is added) under the log's lock.
///
/// Errors: [`codex_free_core::Error::Io`] when the file cannot be opened or written.
pub fn append_line(home: &Path, line: &str) -> Result<()> {
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
}

/// ISO-8601 UTC (`2025-07-01T12:00:00Z`) of unix seconds.
pub fn iso(ts: i64) -> String {
    chrono::DateTime::from_timestamp(ts, 0)
        .unwrap_or_default()
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

impl Phase1Line {
    /// Render the line (no trailing newline).
    pub fn render(&self) -> String {
        let cost = match (self.cost_usd, self.unpriced) {
            (Some(c), 0) => format_cost(Some(c)),
            (Some(c), n) => format!("{} + {n} unpriced", format_cost(Some(c))),
            (None, _) => format_cost(None),
        };
        let mut s = format!(
            "{} phase1: {} claimed, {} with output, {} no output, {} failed, {} released, {} tokens, {} [model={} run={}]",
            iso(self.at),
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
            s.push_str(&format!(" stopped: {}", why.replace('\n', " ")));
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
}
