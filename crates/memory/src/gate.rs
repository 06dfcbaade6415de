//! The one gate for every write into the memory folder: consolidation output, rollback,
//! ad-hoc notes, hand edits found before a consolidation, tidy and its undo point all pass
//! [`approve`] (or [`approve_rollback`]) before they can become `HEAD` — a commit takes the
//! [`Approved`] value only these build, naming the exact tree checked; [`check_tree`]
//! checks what a sync pull would make `HEAD` before any of it is checked out — and the read
//! path serves only what [`serve_summary`] lets through.
//!
//! The checks: the artifact budgets of [`budget`] (lines and bytes), the summary's token
//! count by the same counter the read path uses ([`codex_free_core::tokens::count`]), the
//! summary structure, no secret the redactor recognises, and (for pending changes)
//! `git diff --check`. A failing write is refused with every reason; the caller keeps the
//! previous commit as `HEAD`.
//!
//! Leftovers of a consolidation that was killed are recognised by the in-flight marker
//! [`INFLIGHT_FILE`] (written before the run touches the folder, removed when it ends
//! either way) and are never adopted: [`MemoryFolder::rescue`] keeps them under a
//! `refs/codex-free/rescued/` ref and the run starts from `HEAD`.

use std::path::{Path, PathBuf};

use codex_free_core::tokens;

use super::budget::{self, ArtifactBudget};
use super::folder::{AD_HOC_DIR, MEMORY_MD, MemoryFolder, SKILLS_DIR, SUMMARY_MD};
use super::jail::{FolderJail, WritePolicy};
use super::policy;
pub use crate::approval::{Approved, Scope};

/// Marker in the state home while a consolidation may have uncommitted files in the memory
/// folder; its presence at the start of a run means the previous run died mid-write.
pub const INFLIGHT_FILE: &str = "phase2.inflight";

/// Problems of `text` as the artifact `file` (`MEMORY.md` or `memory_summary.md`) under
/// `b`: lines, bytes, tokens (summary only: it must leave the read path's policy room
/// within [`policy::SUMMARY_TOKEN_BUDGET`]), structure (summary only) and secrets.
/// Empty = acceptable.
pub fn check_text(file: &str, text: &str, b: &ArtifactBudget) -> Vec<String> {
    let (max_lines, max_bytes) = if file == SUMMARY_MD {
        (b.summary_max_lines, b.summary_max_bytes)
    } else {
        (b.memory_max_lines, b.memory_max_bytes)
    };
    let mut out = Vec::new();
    if text.trim().is_empty() {
        out.push(format!("{file}: empty"));
        return out;
    }
    let lines = text.lines().count();
    if lines > max_lines {
        out.push(format!(
            "{file}: {lines} lines, over the budget of {max_lines} lines"
        ));
    }
    if text.len() > max_bytes {
        out.push(format!(
            "{file}: {} bytes, over the budget of {max_bytes} bytes",
            text.len()
        ));
    }
    if file == SUMMARY_MD {
        out.extend(summary_shape_problems(text));
    }
    out.extend(secret_lines(file, text));
    out
}

/// The summary's own checks beyond lines and bytes: its tokens must leave the read path's
/// policy room within [`policy::SUMMARY_TOKEN_BUDGET`], and it must have the structure of
/// [`budget::summary_structure`] (the `v1` line and the four sections in order). Used by
/// [`check_text`] and by `memories tidy` on the state home's folder, so a tidy never
/// reports success for a summary the next session could not be served.
pub fn summary_shape_problems(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let room = policy::summary_token_room();
    let t = tokens::count(text);
    if t > room {
        out.push(format!(
            "{SUMMARY_MD}: {t} tokens, over the {room} tokens the injected summary may use"
        ));
    }
    out.extend(
        budget::summary_structure(text)
            .into_iter()
            .map(|p| format!("{SUMMARY_MD}: {p}")),
    );
    out
}

/// One problem per line of `text` holding something the redactor would replace.
pub fn secret_lines(file: &str, text: &str) -> Vec<String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| codex_free_redact::redact(l) != *l)
        .map(|(i, _)| {
            format!(
                "{file}:{}: holds a secret (key, token or password); remove it, memories must never carry credentials",
                i + 1
            )
        })
        .collect()
}

/// Problems of both artifacts given as texts (`None` = the file is missing).
pub fn check_texts(memory: Option<&str>, summary: Option<&str>, b: &ArtifactBudget) -> Vec<String> {
    let mut out = Vec::new();
    for (file, text) in [(MEMORY_MD, memory), (SUMMARY_MD, summary)] {
        match text {
            Some(t) => out.extend(check_text(file, t, b)),
            None => out.push(format!("{file}: missing; it must be written")),
        }
    }
    out
}

/// Every problem of the folder's working tree: both artifacts ([`check_texts`]), secrets in
/// `skills/`, `ad_hoc_notes/`, `daily/` and `archive/`, and whitespace errors of the uncommitted changes.
/// Reads through a read-only jail (no link followed); an unreadable artifact is a problem.
pub fn check_folder(folder: &MemoryFolder, b: &ArtifactBudget) -> Vec<String> {
    let root = folder.root();
    let mut out = Vec::new();
    let jail = match FolderJail::new(root, WritePolicy::ReadOnly) {
        Ok(j) => j,
        Err(e) => return vec![e.to_string()],
    };
    let mut read = |f: &str| match jail.read_to_string(f) {
        Ok(t) => Some(t),
        Err(codex_free_core::Error::NotFound(_)) => None,
        Err(e) => {
            out.push(format!("{f}: {e}"));
            Some(String::new())
        }
    };
    let memory = read(MEMORY_MD);
    let summary = read(SUMMARY_MD);
    out.extend(check_texts(memory.as_deref(), summary.as_deref(), b));
    // Every folder the agent or a tidy may write, not only the two artifacts.
    for dir in [
        SKILLS_DIR,
        AD_HOC_DIR,
        crate::layout::DAILY_DIR,
        crate::layout::ARCHIVE_DIR,
    ] {
        for (rel, text) in text_files(root, dir) {
            out.extend(secret_lines(&rel, &text));
        }
    }
    match folder.pending_whitespace_errors() {
        Ok(ws) => out.extend(ws),
        Err(e) => out.push(format!("could not check whitespace: {e}")),
    }
    out
}

/// Check the folder's working tree for `scope` and, when it passes, approve exactly that
/// tree for [`MemoryFolder::commit_all`].
///
/// [`Scope::Served`] runs [`check_folder`]; [`Scope::Present`] the same, except that an
/// artifact missing both at `HEAD` and in the working tree is not a problem; [`Scope::AsIs`]
/// looks for secrets only, in every text file of the folder.
///
/// Errors: `Err(problems)`, one sentence per problem (never empty); a folder git cannot
/// read is one problem.
pub fn approve(
    folder: &MemoryFolder,
    b: &ArtifactBudget,
    scope: Scope,
) -> std::result::Result<Approved, Vec<String>> {
    approve_no_new(folder, b, scope, &[])
}

/// [`approve`], except that a problem already in `before` (what [`problems`] found before
/// the change being committed) is not held against it: a tidy of `MEMORY.md` is not refused
/// for a summary that was already malformed, but may not make anything worse.
///
/// Errors: `Err(new problems)`.
pub fn approve_no_new(
    folder: &MemoryFolder,
    b: &ArtifactBudget,
    scope: Scope,
    before: &[String],
) -> std::result::Result<Approved, Vec<String>> {
    let problems: Vec<String> = problems(folder, b, scope)
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect();
    if !problems.is_empty() {
        return Err(problems);
    }
    match folder.worktree_tree() {
        Ok(tree) => Ok(Approved::new(folder.root(), tree, scope)),
        Err(e) => Err(vec![e.to_string()]),
    }
}

/// Every problem the checks of `scope` find in the folder's working tree (see [`approve`]);
/// empty = it would be approved.
pub fn problems(folder: &MemoryFolder, b: &ArtifactBudget, scope: Scope) -> Vec<String> {
    match scope {
        Scope::Served => check_folder(folder, b),
        Scope::Present => {
            let at_head = match folder.head() {
                Ok(Some(h)) => folder.artifacts_at(&h.to_string()).unwrap_or((None, None)),
                _ => (None, None),
            };
            let root = folder.root();
            check_folder(folder, b)
                .into_iter()
                .filter(|p| {
                    let absent = |f: &str, head: &Option<String>| {
                        p.starts_with(&format!("{f}: missing"))
                            && head.is_none()
                            && !root.join(f).exists()
                    };
                    !absent(MEMORY_MD, &at_head.0) && !absent(SUMMARY_MD, &at_head.1)
                })
                .collect()
        }
        Scope::AsIs => text_files(folder.root(), "")
            .iter()
            .filter(|(rel, _)| !rel.starts_with(".git/"))
            .flat_map(|(rel, text)| secret_lines(rel, text))
            .collect(),
        Scope::V2Served => {
            let mut out = crate::v2::artifact_problems(folder.root());
            out.extend(problems(folder, b, Scope::AsIs));
            match folder.pending_whitespace_errors() {
                Ok(ws) => out.extend(ws),
                Err(e) => out.push(format!("could not check whitespace: {e}")),
            }
            out
        }
    }
}

/// [`approve`] with [`Scope::AsIs`] as a crate error: the approval for an undo point, a
/// folder that is not the state home's, or a test's fixture commit.
///
/// Errors: [`codex_free_core::Error::Refused`] listing the secrets found.
pub fn approve_as_is(folder: &MemoryFolder) -> codex_free_core::Result<Approved> {
    approve(folder, &ArtifactBudget::default(), Scope::AsIs)
        .map_err(|p| codex_free_core::Error::Refused(format!("not committed: {}", p.join("; "))))
}

/// Approve a rollback to `rev`: its `MEMORY.md` and `memory_summary.md`, where present,
/// must pass today's checks (an artifact absent at `rev` is not served at all, so a
/// rollback to before the first summary stays possible).
///
/// Errors: `Err(problems)`; an unknown `rev` is one problem.
pub fn approve_rollback(
    folder: &MemoryFolder,
    rev: &str,
    b: &ArtifactBudget,
) -> std::result::Result<Approved, Vec<String>> {
    let (memory, summary) = folder.artifacts_at(rev).map_err(|e| vec![e.to_string()])?;
    let mut problems = Vec::new();
    for (file, text) in [(MEMORY_MD, &memory), (SUMMARY_MD, &summary)] {
        if let Some(t) = text {
            problems.extend(check_text(file, t, b));
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let tree = folder.tree_at(rev).map_err(|e| vec![e.to_string()])?;
    Ok(Approved::new(folder.root(), tree, Scope::Present))
}

/// The same gate as [`check_folder`] over a tree that is not checked out: what a sync pull
/// would make `HEAD` (the remote's commit or the merge), read from the object database so
/// nothing of it reaches the working tree before it passes. Checks both artifacts
/// ([`check_texts`]), secrets in `skills/`, `ad_hoc_notes/`, `daily/` and `archive/`, and
/// whitespace errors of what `tree` changes against `base` (the current `HEAD`'s tree, `None`
/// before the first commit). An artifact that is not UTF-8 text is a problem.
pub fn check_tree(
    repo: &git2::Repository,
    tree: &git2::Tree<'_>,
    base: Option<&git2::Tree<'_>>,
    b: &ArtifactBudget,
) -> Vec<String> {
    let mut out = Vec::new();
    let mut read = |f: &str| {
        let blob = tree
            .get_path(Path::new(f))
            .ok()
            .and_then(|e| e.to_object(repo).ok())
            .and_then(|o| o.into_blob().ok())?;
        match std::str::from_utf8(blob.content()) {
            Ok(t) => Some(t.to_string()),
            Err(_) => {
                out.push(format!("{f}: not UTF-8 text"));
                Some(String::new())
            }
        }
    };
    let memory = read(MEMORY_MD);
    let summary = read(SUMMARY_MD);
    out.extend(check_texts(memory.as_deref(), summary.as_deref(), b));
    for dir in [
        SKILLS_DIR,
        AD_HOC_DIR,
        crate::layout::DAILY_DIR,
        crate::layout::ARCHIVE_DIR,
    ] {
        let Ok(sub) = tree
            .get_path(Path::new(dir))
            .and_then(|e| e.to_object(repo))
            .and_then(|o| o.peel_to_tree())
        else {
            continue;
        };
        let _ = sub.walk(git2::TreeWalkMode::PreOrder, |parent, e| {
            if e.kind() == Some(git2::ObjectType::Blob)
                && e.filemode() != 0o120000
                && let Ok(blob) = repo.find_blob(e.id())
                && let Ok(text) = std::str::from_utf8(blob.content())
            {
                let rel = format!("{dir}/{parent}{}", e.name().unwrap_or(""));
                out.extend(secret_lines(&rel, text));
            }
            git2::TreeWalkResult::Ok
        });
    }
    match repo
        .diff_tree_to_tree(base, Some(tree), None)
        .map_err(crate::folder::git_err("diff"))
        .and_then(|d| crate::folder::whitespace_errors(&d))
    {
        Ok(ws) => out.extend(ws),
        Err(e) => out.push(format!("could not check whitespace: {e}")),
    }
    out
}

/// Regular UTF-8 files under `root/dir` (links skipped), as (`dir/…` relative path, text).
fn text_files(root: &Path, dir: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = vec![root.join(dir)];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let Ok(md) = std::fs::symlink_metadata(e.path()) else {
                continue;
            };
            if md.is_dir() {
                // The repository's own files are not memory.
                if d == root && e.file_name() == ".git" {
                    continue;
                }
                stack.push(e.path());
            } else if md.is_file()
                && let Ok(t) = std::fs::read_to_string(e.path())
            {
                let rel = e
                    .path()
                    .strip_prefix(root)
                    .map(|p| p.to_string_lossy().replace('\\', "/"))
                    .unwrap_or_default();
                out.push((rel, t));
            }
        }
    }
    out.sort();
    out
}

/// The summary as the read path may serve it: secrets redacted, then cut at line
/// boundaries to the summary's line and byte budgets (a hand-edited or legacy summary can
/// exceed them, and tokens alone let a run of `=` through at 80 KB). Returns the text and
/// whether it was cut.
pub fn serve_summary(summary: &str, b: &ArtifactBudget) -> (String, bool) {
    let clean = codex_free_redact::redact(summary);
    let mut out = String::new();
    for (n, l) in clean.lines().enumerate() {
        if n >= b.summary_max_lines || out.len() + l.len() + 1 > b.summary_max_bytes {
            return (out, true);
        }
        out.push_str(l);
        out.push('\n');
    }
    (out, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary() -> String {
        format!(
            "v1\n{}\n- a\n{}\n- b\n{}\n- c\n{}\n- d\n",
            budget::SUMMARY_SECTIONS[0],
            budget::SUMMARY_SECTIONS[1],
            budget::SUMMARY_SECTIONS[2],
            budget::SUMMARY_SECTIONS[3]
        )
    }

    #[test]
    fn valid_passes_and_each_failure_is_named() {
        let b = ArtifactBudget::default();
        assert!(check_texts(Some("# Memory\n- x\n"), Some(&summary()), &b).is_empty());
        let long: String = (0..401).map(|i| format!("- line {i}\n")).collect();
        let p = check_texts(Some(&long), Some(&summary()), &b);
        assert!(p.iter().any(|p| p.contains("401 lines")), "{p:?}");
        let secret = "- deploy key AKIAIOSFODNN7EXAMPLE is in the vault\n";
        let p = check_texts(Some(secret), Some(&summary()), &b);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].starts_with("MEMORY.md:1: holds a secret"), "{p:?}");
        let p = check_texts(None, Some(&summary()), &b);
        assert!(p[0].contains("missing"), "{p:?}");
    }

    #[test]
    fn equals_runs_fail_by_bytes_and_are_served_cut() {
        let b = ArtifactBudget::default();
        let s = format!("{}{}\n", summary(), "=".repeat(81 * 1024));
        let p = check_texts(Some("- x\n"), Some(&s), &b);
        assert!(
            p.iter().any(|p| p.contains("bytes, over the budget")),
            "{p:?}"
        );
        let (served, cut) = serve_summary(&s, &b);
        assert!(cut);
        assert!(served.len() <= b.summary_max_bytes, "{}", served.len());
        assert!(served.starts_with("v1\n"));
    }

    #[test]
    fn served_summary_is_redacted() {
        let s = summary().replace("- a", "- token ghp_abcdefghijklmnopqrstuvwxyz0123456789AB");
        let (served, cut) = serve_summary(&s, &ArtifactBudget::default());
        assert!(!cut);
        assert!(!served.contains("ghp_abcdefghij"), "{served}");
    }
}
