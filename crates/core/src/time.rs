//! Timestamps as text, one format for every log line and record.

/// `ts` (Unix seconds, UTC) as RFC 3339 with a `Z` suffix, second precision
/// (`2026-12-02T16:18:29Z`); a timestamp chrono cannot represent becomes the Unix epoch.
pub fn iso(ts: i64) -> String {
    chrono::DateTime::from_timestamp(ts, 0)
        .unwrap_or_default()
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}
