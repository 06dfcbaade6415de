//! Memory hygiene: keeping the default-load layer of a memory folder small, current and
//! consistent, without losing history.
//!
//! A memory folder has layers:
//! - `MEMORY.md` — stable preferences, hard boundaries and decision principles (loaded by
//!   default), ending with a "verify at task start" section ([`VERIFY_HEADING`]) that names
//!   live facts to check instead of storing their values;
//! - `memory_summary.md` — the short digest injected into new sessions;
//! - `daily/YYYY-MM-DD.md` ([`DAILY_DIR`]) — progress and ad-hoc notes, by day;
//! - `archive/` ([`ARCHIVE_DIR`]) — evidence (incidents, release read-backs, old
//!   snapshots): kept and searchable through `memories_search`, never injected.
//!
//! [`lint`] finds what does not belong in the loaded layer (no model call); [`tidy`] moves
//! it to the right layer with a backup and a read-back; [`synth`] builds the reproducible
//! bloated memory the tests and [`bench`] use.
//!
//! Invariant: nothing here follows a symbolic link out of the folder it was given, reads a
//! file that is not UTF-8 or larger than [`MAX_FILE_BYTES`], or deletes a distinct line.

pub mod bench;
pub mod cli;
pub mod lint;
pub mod synth;
pub(crate) mod text;
pub mod tidy;
pub(crate) mod units;
pub mod world;

pub use codex_free_memory::layout::{ARCHIVE_DIR, DAILY_DIR, VERIFY_HEADING};
use std::path::{Path, PathBuf};

use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::error::IoContext;

/// Largest memory file read, bytes (8 MiB): forty times the largest real `MEMORY.md` we
/// know of (about 200 KB); anything bigger is not a memory file and is refused unread.
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// Read one memory file as UTF-8 text.
///
/// When `root` is given, `path` must stay inside it after resolving links (a link to a file
/// outside the folder is refused, a link inside is followed).
///
/// Errors (each naming the file): [`Error::NotFound`]; [`Error::PathOutsideRoot`] for a link
/// leaving `root`; [`Error::Budget`] over [`MAX_FILE_BYTES`]; [`Error::InvalidArgument`] for a
/// directory or non-UTF-8 content.
pub fn read_memory_file(root: Option<&Path>, path: &Path) -> Result<String> {
    check_inside(root, path)?;
    let md = std::fs::metadata(path).map_err(|_| Error::NotFound(path.to_path_buf()))?;
    if !md.is_file() {
        return Err(Error::InvalidArgument(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    if md.len() > MAX_FILE_BYTES {
        return Err(Error::Budget(format!(
            "{} is {} bytes; a memory file may be at most {MAX_FILE_BYTES} bytes (nothing was read or changed)",
            path.display(),
            md.len()
        )));
    }
    let bytes = std::fs::read(path).ctx(|| format!("reading {}", path.display()))?;
    String::from_utf8(bytes).map_err(|e| {
        Error::InvalidArgument(format!(
            "{} is not UTF-8 text (invalid byte at offset {}); nothing was changed",
            path.display(),
            e.utf8_error().valid_up_to()
        ))
    })
}

/// Refuse `path` when it is (or passes through) a link that resolves outside `root`.
///
/// Errors: [`Error::PathOutsideRoot`] naming the file and where it points.
pub fn check_inside(root: Option<&Path>, path: &Path) -> Result<()> {
    let Some(root) = root else { return Ok(()) };
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(());
    }
    let real_root = std::fs::canonicalize(root).ctx(|| format!("resolving {}", root.display()))?;
    let real = std::fs::canonicalize(path).ctx(|| format!("resolving {}", path.display()))?;
    if !real.starts_with(&real_root) {
        return Err(Error::PathOutsideRoot(format!(
            "{} is a link to {}, outside the memory folder {}; refusing to read or change it",
            path.display(),
            real.display(),
            real_root.display()
        )));
    }
    Ok(())
}

/// The state home's memory folder (`<home>/memories`).
pub fn default_folder(home: &Path) -> PathBuf {
    codex_free_memory::folder::folder_path(home)
}
