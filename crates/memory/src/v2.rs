//! The V2 memory folder's rules: its one consolidated artifact, `memory_summary.md`, is
//! valid when it starts with the line `v1`, is under [`SUMMARY_MAX_BYTES`] bytes and has each
//! of [`REQUIRED_HEADINGS`] on a line of its own (Codex `memories/write/src/workspace.rs`
//! `is_valid_v2_summary`, pinned 5bf132cd); the folder holds no symbolic link and no V1
//! artifact. The gate's [`crate::approval::Scope::V2Served`] applies these checks.

use std::path::Path;

/// A valid summary is strictly shorter than this, bytes.
pub const SUMMARY_MAX_BYTES: usize = 10_000;
/// The headings a V2 summary must have, each on a line of its own.
pub const REQUIRED_HEADINGS: [&str; 4] = [
    "## User Profile",
    "## User preferences",
    "## General Tips",
    "## What's in Memory",
];
/// The V2 summary's problems; empty when it is valid. Names what is wrong, for the
/// consolidation agent's repair turn and for `memories readiness`.
pub fn summary_problems(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    if text.lines().next() != Some("v1") {
        out.push("memory_summary.md must start with the line `v1`".to_string());
    }
    if text.len() >= SUMMARY_MAX_BYTES {
        out.push(format!(
            "memory_summary.md is {} bytes; a v2 summary must be under {SUMMARY_MAX_BYTES}",
            text.len()
        ));
    }
    for h in REQUIRED_HEADINGS {
        if !text.lines().any(|l| l.trim() == h) {
            out.push(format!("memory_summary.md lacks the heading `{h}`"));
        }
    }
    out
}

/// True when `text` is a valid V2 summary (see the module doc).
pub fn is_valid_summary(text: &str) -> bool {
    summary_problems(text).is_empty()
}

/// Every symbolic link under `root` (`.git` excluded), relative paths: a consolidation
/// must not leave one (the served folder is read through them otherwise).
fn symlinks(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(d) = dirs.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            if e.file_name() == ".git" {
                continue;
            }
            let Ok(t) = e.file_type() else { continue };
            if t.is_symlink() {
                let p = e.path();
                out.push(
                    p.strip_prefix(root)
                        .unwrap_or(&p)
                        .to_string_lossy()
                        .into_owned(),
                );
            } else if t.is_dir() {
                dirs.push(e.path());
            }
        }
    }
    out.sort();
    out
}

/// Problems of a V2 folder after a consolidation: no symbolic link, `memory_summary.md`
/// present and valid, and no V1 artifact (`MEMORY.md`, `raw_memories.md`) — V2 is served
/// from its summary alone, and a V1 file there would be a copy nobody keeps up to date.
pub fn artifact_problems(root: &Path) -> Vec<String> {
    let mut out: Vec<String> = symlinks(root)
        .into_iter()
        .map(|l| format!("{l} is a symbolic link (not allowed in the memory folder)"))
        .collect();
    for v1 in [crate::layout::MEMORY_MD, crate::layout::RAW_MEMORIES_MD] {
        if root.join(v1).exists() {
            out.push(format!(
                "{v1} is a v1 file and must not exist in the v2 folder"
            ));
        }
    }
    let summary = root.join(crate::layout::SUMMARY_MD);
    match std::fs::read(&summary) {
        Err(_) => out.push("memory_summary.md is missing".to_string()),
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) => out.extend(summary_problems(&text)),
            Err(_) => out.push("memory_summary.md is not UTF-8 text".to_string()),
        },
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// pi-codex-memory `test/v2.test.mjs`'s `validSummary`.
    const VALID: &str =
        "v1\n## User Profile\n## User preferences\n## General Tips\n## What's in Memory\n";

    /// pi-codex-memory `test/v2.test.mjs`: `v1\nmissing headings` fails validation; upstream
    /// `validate_consolidation_artifacts_for_version(V2)` needs no `MEMORY.md`.
    #[test]
    fn artifacts_need_the_summary_and_no_v1_files() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(
            artifact_problems(d.path()),
            ["memory_summary.md is missing"]
        );
        std::fs::write(d.path().join("memory_summary.md"), VALID).unwrap();
        assert!(artifact_problems(d.path()).is_empty());
        std::fs::write(d.path().join("memory_summary.md"), "v1\nmissing headings").unwrap();
        let p = artifact_problems(d.path());
        assert_eq!(p.len(), 4, "{p:?}");
        std::fs::write(d.path().join("memory_summary.md"), VALID).unwrap();
        std::fs::write(d.path().join("MEMORY.md"), "# Memory\n").unwrap();
        assert!(artifact_problems(d.path())[0].contains("MEMORY.md is a v1 file"));
        std::fs::remove_file(d.path().join("MEMORY.md")).unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("/etc/passwd", d.path().join("skills")).unwrap();
            assert!(artifact_problems(d.path())[0].contains("skills is a symbolic link"));
        }
    }

    #[test]
    fn heading_must_be_its_own_line() {
        let inline =
            "v1\n## User Profile ## User preferences\n## General Tips\n## What's in Memory\n";
        assert!(!is_valid_summary(inline));
        assert!(is_valid_summary(
            &VALID.replace("## General Tips", "  ## General Tips  ")
        ));
        assert!(!is_valid_summary(&VALID.replacen("v1", "v2", 1)));
    }
}
