//! Phase-2 queries over `state.sqlite` (wired when the store lands).

use std::path::Path;

use crate::Result;

/// Raise usage counts of `ids` in `<home>/state.sqlite`.
pub fn record_usage_in_home(_home: &Path, _ids: &[String]) -> Result<usize> {
    Ok(0)
}
