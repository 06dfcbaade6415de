//! V2's one consolidated artifact, `memory_summary.md`, and the readiness of the V2
//! pipeline to be served.
//!
//! A valid V2 summary (Codex `memories/write/src/workspace.rs` `is_valid_v2_summary`,
//! pinned 5bf132cd) starts with the line `v1`, is under [`SUMMARY_MAX_BYTES`] bytes, and
//! has each of [`REQUIRED_HEADINGS`] as a line of its own. Readiness (upstream
//! `state/src/runtime/memory_readiness.rs` and pi-codex-memory's `memoryReadiness`) is:
//! at least `minimum` distinct threads went into one successful consolidation, and the
//! summary is valid. It only reports; it never switches the active version.

use std::path::Path;

use serde::Serialize;

use codex_free_core::{Error, Result};

pub use codex_free_memory::v2::{
    REQUIRED_HEADINGS, SUMMARY_MAX_BYTES, artifact_problems, is_valid_summary, summary_problems,
};

/// The default readiness threshold: consolidated threads (pi-codex-memory
/// `memoryReadiness(root, count, minimum = 20)`).
pub const DEFAULT_READY_MINIMUM: u32 = 20;
/// The smallest threshold accepted.
pub const MIN_READY_MINIMUM: u32 = 1;
/// The largest threshold accepted ("minConsolidatedThreads must be between 1 and 4096").
pub const MAX_READY_MINIMUM: u32 = 4096;

/// `memories readiness`'s V2 part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct V2Readiness {
    /// The largest number of distinct threads one successful V2 consolidation took in.
    pub consolidated_threads: u32,
    /// The threshold compared with.
    pub minimum: u32,
    /// `memories_v2/memory_summary.md` exists, is a regular file and is valid.
    pub summary_valid: bool,
    /// What is wrong with the summary, when it is not valid.
    pub summary_problems: Vec<String>,
    /// `consolidated_threads >= minimum` and the summary is valid.
    pub ready: bool,
    /// The version new sessions are served now (readiness never changes it).
    pub active_version: String,
}

/// Check a readiness threshold.
///
/// Errors: [`Error::InvalidArgument`] outside [`MIN_READY_MINIMUM`]..=[`MAX_READY_MINIMUM`].
pub fn check_minimum(minimum: u32) -> Result<u32> {
    if (MIN_READY_MINIMUM..=MAX_READY_MINIMUM).contains(&minimum) {
        Ok(minimum)
    } else {
        Err(Error::InvalidArgument(format!(
            "the readiness minimum must be between {MIN_READY_MINIMUM} and {MAX_READY_MINIMUM} (got {minimum})"
        )))
    }
}

/// V2 readiness of the folder at `root` with `consolidated_threads` (from
/// `Store::max_consolidated_thread_count` of the V2 database) against `minimum`.
/// A missing, linked or non-UTF-8 summary is not ready.
///
/// Errors: [`Error::InvalidArgument`] for a `minimum` out of range ([`check_minimum`]).
pub fn readiness(
    root: &Path,
    consolidated_threads: u32,
    minimum: u32,
    active_version: &str,
) -> Result<V2Readiness> {
    let minimum = check_minimum(minimum)?;
    let path = root.join(codex_free_memory::layout::SUMMARY_MD);
    let problems = match std::fs::symlink_metadata(&path) {
        Err(_) => vec!["memory_summary.md is missing (no v2 consolidation yet)".to_string()],
        Ok(m) if !m.is_file() => vec!["memory_summary.md is not a regular file".to_string()],
        Ok(_) => match std::fs::read(&path).map(String::from_utf8) {
            Ok(Ok(t)) => summary_problems(&t),
            Ok(Err(_)) => vec!["memory_summary.md is not UTF-8 text".to_string()],
            Err(e) => vec![format!("memory_summary.md cannot be read: {e}")],
        },
    };
    let valid = problems.is_empty();
    Ok(V2Readiness {
        consolidated_threads,
        minimum,
        summary_valid: valid,
        summary_problems: problems,
        ready: valid && consolidated_threads >= minimum,
        active_version: active_version.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// pi-codex-memory `test/v2.test.mjs`'s `validSummary`.
    const VALID: &str =
        "v1\n## User Profile\n## User preferences\n## General Tips\n## What's in Memory\n";

    /// pi-codex-memory `test/v2.test.mjs` ("local readiness requires 20 consolidated
    /// sources and a valid summary"): 20 threads without a summary is not ready; with the
    /// summary, 19 threads against 20 is not ready and 20 is; minimums 0 and 4097 are
    /// refused ("between 1 and 4096"); a summary padded to 10,000 bytes is invalid.
    #[test]
    fn readiness_threshold_bounds_and_summary_validity() {
        let d = tempfile::tempdir().unwrap();
        let r = readiness(d.path(), 20, DEFAULT_READY_MINIMUM, "v1").unwrap();
        assert_eq!((r.consolidated_threads, r.ready), (20, false));
        assert!(!r.summary_valid);
        std::fs::write(d.path().join("memory_summary.md"), VALID).unwrap();
        assert!(!readiness(d.path(), 19, 20, "v1").unwrap().ready);
        assert!(readiness(d.path(), 20, 20, "v1").unwrap().ready);
        assert!(readiness(d.path(), 1, 1, "v1").unwrap().ready);
        for bad in [0, 4097] {
            let e = readiness(d.path(), 20, bad, "v1").unwrap_err();
            assert!(e.to_string().contains("between 1 and 4096"), "{e}");
        }
        assert!(readiness(d.path(), 4096, 4096, "v1").unwrap().ready);
        let padded = format!("{VALID}{}", "x".repeat(10_000 - VALID.len()));
        assert_eq!(padded.len(), 10_000);
        std::fs::write(d.path().join("memory_summary.md"), &padded).unwrap();
        let r = readiness(d.path(), 20, 20, "v2").unwrap();
        assert!(!r.ready && !r.summary_valid, "{r:?}");
        assert!(r.summary_problems[0].contains("under 10000"), "{r:?}");
        // One byte less is valid (the bound is strict).
        std::fs::write(d.path().join("memory_summary.md"), &padded[..9_999]).unwrap();
        assert!(readiness(d.path(), 20, 20, "v2").unwrap().ready);
    }
}
