//! Applying a plan: checks, backup (a git commit or a copy), atomic writes (destinations first),
//! commit, and the read-back that restores the backup on any failure.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::plan::{introduced_shape_problems, is_state_home_folder, plan};
use super::{Dest, LoadSize, Plan, TidyOptions};
use crate::text;
use crate::{ARCHIVE_DIR, DAILY_DIR, check_inside, read_memory_file};
use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::error::IoContext;
use codex_free_memory::budget::{self, ArtifactBudget};
use codex_free_memory::folder::{MEMORY_MD, MemoryFolder, SUMMARY_MD};

/// The permission bits of `p` (`& 0o7777`), `None` when unreadable or not on Unix.
pub(crate) fn mode_of(p: &Path) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p)
            .ok()
            .map(|m| m.permissions().mode() & 0o7777)
    }
    #[cfg(not(unix))]
    {
        let _ = p;
        None
    }
}

/// Set `p`'s permission bits to `mode`; elsewhere than Unix the file keeps what its folder
/// gives it (there are no mode bits to copy).
pub(crate) fn set_mode(p: &Path, mode: u32) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode))
    }
    #[cfg(not(unix))]
    {
        let _ = (p, mode);
        Ok(())
    }
}

/// Build the plan for `opts.dir`. Reads only.
///
/// Errors (each naming the file): no `MEMORY.md`; a memory file that is not UTF-8, too big,
/// Lines of `originals` (exact, whitespace included; blank lines aside) missing from every
/// Markdown file under `dir` — the "nothing lost" read-back. Empty = nothing lost.
pub fn missing_lines(dir: &Path, originals: &BTreeMap<String, String>) -> Result<Vec<String>> {
    let mut have: HashSet<String> = HashSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)
            .ctx(|| format!("listing {}", d.display()))?
            .flatten()
        {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let md = std::fs::symlink_metadata(e.path())
                .ctx(|| format!("reading {}", e.path().display()))?;
            if md.is_dir() {
                stack.push(e.path());
            } else if md.is_file() && name.ends_with(".md") {
                let t = read_memory_file(Some(dir), &e.path())?;
                have.extend(t.lines().map(str::to_string));
            }
        }
    }
    let mut missing: Vec<String> = originals
        .values()
        .flat_map(|t| t.lines())
        .filter(|l| !l.is_empty() && !have.contains(*l))
        .map(str::to_string)
        .collect();
    missing.sort();
    missing.dedup();
    Ok(missing)
}

/// What a finished apply did.
#[derive(Debug, Clone, Serialize)]
pub struct Applied {
    /// Files written: (relative path, "created" | "rewritten", lines before, lines after).
    pub files: Vec<(String, String, usize, usize)>,
    /// How the backup can be restored (a commit id, or a backup folder).
    pub backup: String,
    /// The tidy commit, when the folder is a git work tree.
    pub commit: Option<String>,
    /// The read-back, one line per check, as printed.
    pub read_back: Vec<String>,
    /// Default-load size before and after.
    pub before: LoadSize,
    /// Default-load size after.
    pub after: LoadSize,
}

enum Backup {
    Git {
        folder: MemoryFolder,
        head: codex_free_memory::folder::Oid,
        /// What the gate already found at the undo point: not the tidy's to refuse.
        problems_before: Vec<String>,
    },
    Copy {
        root: PathBuf,
        saved: Vec<String>,
        created: Vec<String>,
        created_dirs: Vec<PathBuf>,
    },
}

/// The repository whose work tree is exactly `dir`, if any (see
/// [`MemoryFolder::own_repo_at`]).
pub(super) fn own_repo(dir: &Path) -> Option<MemoryFolder> {
    MemoryFolder::own_repo_at(dir)
}

fn preflight(dir: &Path) -> Result<()> {
    let probe = tempfile::Builder::new()
        .prefix(".codex-free-tidy-probe")
        .tempfile_in(dir)
        .map_err(|e| {
            Error::Refused(format!(
                "the memory folder {} is not writable ({e}); nothing was changed",
                dir.display()
            ))
        })?;
    drop(probe);
    for d in [DAILY_DIR, ARCHIVE_DIR] {
        let p = dir.join(d);
        if p.is_dir() {
            let probe = tempfile::Builder::new()
                .prefix(".codex-free-tidy-probe")
                .tempfile_in(&p)
                .map_err(|e| {
                    Error::Refused(format!(
                        "{} is not writable ({e}); nothing was changed",
                        p.display()
                    ))
                })?;
            drop(probe);
        }
    }
    if let Some(repo) = own_repo(dir)
        && let Some(st) = repo.operation_in_progress()?
    {
        return Err(Error::Refused(format!(
            "{} is a git repository in the middle of an operation ({st}); finish or abort it first; nothing was changed",
            dir.display()
        )));
    }
    Ok(())
}

/// The state home's own folder is also written by phase 2: refuse while a consolidation
/// holds a live lease (as `memories rollback` does). Other folders are not ours to lock.
fn refuse_while_consolidating(dir: &Path, home: &Path) -> Result<()> {
    let own = std::fs::canonicalize(crate::default_folder(home)).ok();
    if own.as_deref() != Some(dir) || !home.join(codex_free_store::DB_FILE).is_file() {
        return Ok(());
    }
    if codex_free_store::Store::open_in_home(home)?.phase2_running()? {
        return Err(Error::Busy(
            "a phase-2 consolidation is running on this memory folder; retry when it has finished; nothing was changed".into(),
        ));
    }
    Ok(())
}

/// Whether `dir` is the state home's own memory folder (served to sessions, gated fully).
fn is_home_folder(dir: &Path, home: &Path) -> bool {
    std::fs::canonicalize(crate::default_folder(home))
        .ok()
        .as_deref()
        == std::fs::canonicalize(dir).ok().as_deref()
}

fn make_backup(plan: &Plan, home: &Path, stamp: &str, budget: &ArtifactBudget) -> Result<Backup> {
    let dir = &plan.dir;
    if own_repo(dir).is_some() {
        let folder = MemoryFolder::at(dir);
        let approved = codex_free_memory::gate::approve_as_is(&folder)?;
        folder.commit_all(&approved, "Backup before memories tidy\n\nUncommitted changes saved so the tidy can be undone exactly.")?;
        let head = folder
            .head()?
            .ok_or_else(|| Error::Store(format!("{}: no commit to back up to", dir.display())))?;
        let problems_before = if is_home_folder(dir, home) {
            codex_free_memory::gate::problems(
                &folder,
                budget,
                codex_free_memory::gate::Scope::Present,
            )
        } else {
            Vec::new()
        };
        return Ok(Backup::Git {
            folder,
            head,
            problems_before,
        });
    }
    let root = home.join("backups").join(format!("tidy-{stamp}"));
    std::fs::create_dir_all(&root)
        .ctx(|| format!("creating the backup folder {}", root.display()))?;
    let mut saved = Vec::new();
    let mut manifest = format!("codex-free memories tidy backup of {}\n", dir.display());
    for rel in &plan.existing {
        let text = read_memory_file(Some(dir), &dir.join(rel))?;
        codex_free_core::home::write_atomic_unlocked(&root.join(rel), text.as_bytes())?;
        // Read back the copy before trusting it.
        if read_memory_file(None, &root.join(rel))? != text {
            return Err(Error::Store(format!(
                "backup copy of {rel} does not match the original"
            )));
        }
        saved.push(rel.clone());
        let _ = writeln!(manifest, "saved: {rel}");
    }
    let created: Vec<String> = plan
        .outputs
        .keys()
        .filter(|k| !plan.existing.contains(*k))
        .cloned()
        .collect();
    for c in &created {
        let _ = writeln!(manifest, "created by the tidy: {c}");
    }
    codex_free_core::home::write_atomic_unlocked(&root.join("MANIFEST.txt"), manifest.as_bytes())?;
    Ok(Backup::Copy {
        root,
        saved,
        created,
        created_dirs: Vec::new(),
    })
}

fn restore(b: &Backup, dir: &Path) -> Result<()> {
    match b {
        Backup::Git { folder, head, .. } => folder.undo_commit(Some(*head)),
        Backup::Copy {
            root,
            saved,
            created,
            created_dirs,
        } => {
            for rel in saved {
                let text = read_memory_file(None, &root.join(rel))?;
                codex_free_core::home::write_atomic_unlocked(&dir.join(rel), text.as_bytes())?;
            }
            for rel in created {
                let p = dir.join(rel);
                if std::fs::symlink_metadata(&p).is_ok() {
                    std::fs::remove_file(&p).ctx(|| format!("removing {}", p.display()))?;
                }
            }
            for d in created_dirs.iter().rev() {
                let _ = std::fs::remove_dir(d);
            }
            Ok(())
        }
    }
}

/// Apply a fresh plan of `opts.dir` (see the module doc for the order of steps).
///
/// Errors: every check of [`plan`]; [`Error::Budget`] when the result would still be over a
/// budget (nothing changed); [`Error::Refused`] for a folder that is not writable or a
/// repository mid-merge (nothing changed); any failure after the backup, reported after
/// the backup was restored (the message says so, or says that the restore failed too).
pub fn apply(opts: &TidyOptions) -> Result<Applied> {
    let plan = plan(opts)?;
    if !plan.over_budget.is_empty() {
        return Err(Error::Budget(format!(
            "tidy would leave the memory over budget ({}); review the plan (`--plan`) and move or merge rules by hand; nothing was changed",
            plan.over_budget.join("; ")
        )));
    }
    // A committed conflict marker means a merge was never finished: moving the markers
    // would hide it.
    if let Some(b) = plan.blockers.iter().find(|b| b.contains("conflict marker")) {
        return Err(Error::Refused(format!("{b}; nothing was changed")));
    }
    // The plan must place every line before anything is written.
    let lost = planned_losses(&plan);
    if !lost.is_empty() {
        return Err(Error::Store(format!(
            "internal error: the plan would lose {} line(s) (first: {:?}); nothing was changed",
            lost.len(),
            lost[0]
        )));
    }
    preflight(&plan.dir)?;
    refuse_while_consolidating(&plan.dir, &opts.home)?;
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ").to_string();
    let mut backup = make_backup(&plan, &opts.home, &stamp, &opts.budget)?;
    let backup_text = match &backup {
        Backup::Git { head, .. } => format!(
            "commit {head} (undo with `git -C {} reset --hard {head}`)",
            plan.dir.display()
        ),
        Backup::Copy { root, .. } => format!(
            "{} (copies of the files the tidy rewrote; MANIFEST.txt lists them)",
            root.display()
        ),
    };
    match write_and_verify(&plan, opts, &mut backup) {
        Ok((commit, read_back)) => {
            // The state home's own folder changed: whatever follows a memory commit runs.
            if is_home_folder(&plan.dir, &opts.home) {
                codex_free_core::events::emit(
                    &opts.home,
                    codex_free_core::events::MemoryEvent::Committed,
                );
            }
            let files = plan
                .outputs
                .iter()
                .filter(|(k, v)| plan.originals.get(*k) != Some(*v) || !plan.existing.contains(*k))
                .map(|(k, v)| {
                    let before = if plan.existing.contains(k) {
                        read_before_lines(&plan, k)
                    } else {
                        0
                    };
                    (
                        k.clone(),
                        if plan.existing.contains(k) {
                            "rewritten"
                        } else {
                            "created"
                        }
                        .to_string(),
                        before,
                        v.lines().count(),
                    )
                })
                .collect();
            Ok(Applied {
                files,
                backup: backup_text,
                commit,
                read_back,
                before: plan.before,
                after: plan.after,
            })
        }
        Err(e) => match restore(&backup, &plan.dir) {
            Ok(()) => Err(Error::Store(format!(
                "tidy failed and was undone: {e}. The folder is as it was before (backup: {backup_text})."
            ))),
            Err(re) => Err(Error::Store(format!(
                "tidy failed: {e}; restoring the backup ALSO failed: {re}. Restore by hand from {backup_text}."
            ))),
        },
    }
}

fn read_before_lines(plan: &Plan, rel: &str) -> usize {
    plan.originals
        .get(rel)
        .map(|t| t.lines().count())
        .or_else(|| {
            std::fs::read_to_string(plan.dir.join(rel))
                .ok()
                .map(|t| t.lines().count())
        })
        .unwrap_or(0)
}

fn planned_losses(plan: &Plan) -> Vec<String> {
    let mut have: HashSet<&str> = HashSet::new();
    for t in plan.outputs.values() {
        have.extend(t.lines());
    }
    let mut lost: Vec<String> = plan
        .originals
        .iter()
        .filter(|(k, _)| plan.outputs.contains_key(*k))
        .flat_map(|(_, t)| t.lines())
        .filter(|l| !l.is_empty() && !have.contains(l))
        .map(str::to_string)
        .collect();
    lost.dedup();
    lost
}

/// Long on purpose: one crash-safe sequence (back up, write destinations before sources, read back,
/// check no line was lost) whose steps share the backup state.
#[expect(
    clippy::too_many_lines,
    reason = "one crash-safe sequence (back up, write destinations before sources, read back, check no line was lost) whose steps share the backup state"
)]
fn write_and_verify(
    plan: &Plan,
    opts: &TidyOptions,
    backup: &mut Backup,
) -> Result<(Option<String>, Vec<String>)> {
    let dir = &plan.dir;
    // Destinations first, the loaded files last: a crash midway leaves lines in two places,
    // never in none.
    let mut order: Vec<&String> = plan
        .outputs
        .keys()
        .filter(|k| *k != MEMORY_MD && *k != SUMMARY_MD)
        .collect();
    order.extend(plan.outputs.keys().filter(|k| *k == SUMMARY_MD));
    order.extend(plan.outputs.keys().filter(|k| *k == MEMORY_MD));
    // Files keep their mode; new ones get MEMORY.md's (a tidy must not make a shared
    // memory private, or a private one readable).
    let default_mode = mode_of(&dir.join(MEMORY_MD)).unwrap_or(0o644);
    let modes: BTreeMap<&String, u32> = plan
        .outputs
        .keys()
        .map(|k| (k, mode_of(&dir.join(k)).unwrap_or(default_mode)))
        .collect();
    for (i, rel) in order.iter().enumerate() {
        if opts.fail_after_writes == Some(i) {
            return Err(Error::Store(format!(
                "simulated failure before writing {rel}"
            )));
        }
        let path = dir.join(rel);
        if let Some(parent) = path.parent()
            && !parent.exists()
        {
            std::fs::create_dir_all(parent).ctx(|| format!("creating {}", parent.display()))?;
            if let Backup::Copy { created_dirs, .. } = backup {
                created_dirs.push(parent.to_path_buf());
            }
        }
        check_inside(Some(dir), &path)?;
        codex_free_core::home::write_atomic_unlocked(&path, plan.outputs[*rel].as_bytes())
            .map_err(|e| Error::Store(format!("writing {}: {e}", path.display())))?;
        set_mode(&path, modes[*rel]).ctx(|| format!("setting the mode of {}", path.display()))?;
    }
    let mut read_back = Vec::new();
    // Every file reads back as planned.
    for (rel, want) in &plan.outputs {
        let got = read_memory_file(Some(dir), &dir.join(rel))?;
        if &got != want {
            return Err(Error::Store(format!(
                "read-back of {rel} differs from what was written"
            )));
        }
    }
    let missing = missing_lines(dir, &plan.originals)?;
    if !missing.is_empty() {
        return Err(Error::Store(format!(
            "{} line(s) are in no file after the move (first: {:?})",
            missing.len(),
            missing[0]
        )));
    }
    read_back.push(format!(
        "every distinct line before is in some file after ({} files checked)",
        plan.outputs.len()
    ));
    let mem = read_memory_file(Some(dir), &dir.join(MEMORY_MD))?;
    let mut budget_problems: Vec<String> = budget::size_problems(
        &mem,
        opts.budget.memory_max_lines,
        opts.budget.memory_max_bytes,
    )
    .into_iter()
    .map(|p| format!("{MEMORY_MD}: {}", p.message))
    .collect();
    let sum = plan.outputs.get(SUMMARY_MD);
    if let Some(s) = sum {
        budget_problems.extend(
            budget::size_problems(
                s,
                opts.budget.summary_max_lines,
                opts.budget.summary_max_bytes,
            )
            .into_iter()
            .map(|p| format!("{SUMMARY_MD}: {}", p.message)),
        );
    }
    if is_state_home_folder(&opts.home, dir) {
        let served = match sum {
            Some(s) => Some(s.clone()),
            None => std::fs::symlink_metadata(dir.join(SUMMARY_MD))
                .ok()
                .map(|_| read_memory_file(Some(dir), &dir.join(SUMMARY_MD)))
                .transpose()?,
        };
        if let Some(s) = served {
            budget_problems.extend(introduced_shape_problems(
                plan.originals.get(SUMMARY_MD).map(String::as_str),
                &s,
            ));
        }
    }
    // The memory folder's write gate: nothing a tidy writes may carry a credential.
    for (name, text) in &plan.outputs {
        budget_problems.extend(codex_free_memory::gate::secret_lines(name, text));
    }
    if !budget_problems.is_empty() {
        return Err(Error::Budget(format!(
            "budget check failed: {}",
            budget_problems.join("; ")
        )));
    }
    read_back.push(format!(
        "budget: {MEMORY_MD} {}/{} lines, {}/{} bytes{}",
        mem.lines().count(),
        opts.budget.memory_max_lines,
        mem.len(),
        opts.budget.memory_max_bytes,
        sum.map(|s| format!(
            "; {SUMMARY_MD} {}/{} lines, {}/{} bytes",
            s.lines().count(),
            opts.budget.summary_max_lines,
            s.len(),
            opts.budget.summary_max_bytes
        ))
        .unwrap_or_default()
    ));
    let commit = match backup {
        Backup::Git {
            folder,
            head,
            problems_before,
        } => {
            let moved = plan.moves.iter().filter(|m| m.dest != Dest::Stay).count();
            let msg = format!(
                "Tidy memory: {moved} lines moved out of the default-load layer\n\nBy codex-free memories tidy; every distinct line is kept in daily/ or archive/.\n"
            );
            // The state home's folder is served: every present file passes the full gate;
            // another folder's budget is its owner's, so only secrets are refused there.
            let approved = if is_home_folder(&plan.dir, &opts.home) {
                codex_free_memory::gate::approve_no_new(
                    folder,
                    &opts.budget,
                    codex_free_memory::gate::Scope::Present,
                    problems_before,
                )
                .map_err(|p| {
                    Error::Budget(format!(
                        "the memory checks refused the tidy: {}",
                        p.join("; ")
                    ))
                })?
            } else {
                codex_free_memory::gate::approve_as_is(folder)?
            };
            // No `verify_committed` here: its whitespace check would refuse the trailing
            // spaces of lines moved byte for byte; `git_diff_check` below allows exactly those.
            let c = folder.commit_all(&approved, &msg)?;
            let short = folder.status_short()?;
            if !short.is_empty() {
                return Err(Error::Store(format!(
                    "git status --short is not clean: {}",
                    short.join(", ")
                )));
            }
            read_back.push("git status --short: clean".into());
            let (files, ins, del) = folder.diff_stat_to_head(*head)?;
            read_back.push(format!(
                "git diff --stat {}..HEAD: {files} files changed, {ins} insertions(+), {del} deletions(-)",
                &head.to_string()[..10],
            ));
            let to = c.map(|c| c.to_string()).unwrap_or_else(|| head.to_string());
            read_back.push(git_diff_check(dir, &head.to_string(), &to, plan)?);
            c.map(|c| c.to_string())
        }
        Backup::Copy { .. } => {
            read_back.push("not a git work tree: verified by reading every file back".into());
            let bad = own_diff_check(plan);
            if !bad.is_empty() {
                return Err(Error::Store(format!(
                    "whitespace check of the written files: {}",
                    bad.join("; ")
                )));
            }
            read_back.push(
                "whitespace: no conflict marker and no trailing whitespace the tidy introduced (lines kept byte for byte from the original may end in spaces)".into(),
            );
            None
        }
    };
    Ok((commit, read_back))
}

/// Lines of `plan`'s written files that the tidy made wrong: conflict markers, and trailing
/// whitespace on a line that is not a line of the original (a moved original keeps its
/// bytes: in Markdown, two trailing spaces are a hard break).
fn own_diff_check(plan: &Plan) -> Vec<String> {
    let originals: HashSet<&str> = plan.originals.values().flat_map(|t| t.lines()).collect();
    let mut out = Vec::new();
    for (k, v) in &plan.outputs {
        for (i, l) in v.lines().enumerate() {
            if text::is_conflict_marker(l) {
                out.push(format!("{k}:{}: leftover conflict marker", i + 1));
            } else if l.ends_with([' ', '\t']) && !originals.contains(l) {
                out.push(format!(
                    "{k}:{}: trailing whitespace the tidy introduced",
                    i + 1
                ));
            }
        }
    }
    out
}

/// The real `git diff --check from..to` in `dir`: fails on a conflict marker or on a
/// whitespace error in a line that is not byte for byte a line of the original; reports the
/// rest (original lines kept as they were). Falls back to [`own_diff_check`] when no `git`
/// program can be run.
///
/// Errors: [`Error::Store`] listing the problems.
fn git_diff_check(dir: &Path, from: &str, to: &str, plan: &Plan) -> Result<String> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "core.quotepath=off",
            "diff",
            "--check",
            from,
            to,
            "--",
        ])
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output();
    let Ok(out) = out else {
        let bad = own_diff_check(plan);
        if !bad.is_empty() {
            return Err(Error::Store(format!(
                "whitespace check: {}",
                bad.join("; ")
            )));
        }
        return Ok(
            "git diff --check: no git program; the written files were checked instead: clean"
                .into(),
        );
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    if out.status.success() {
        return Ok(format!(
            "git diff --check {}..{}: clean",
            &from[..10.min(from.len())],
            &to[..10.min(to.len())]
        ));
    }
    let originals: HashSet<&str> = plan.originals.values().flat_map(|t| t.lines()).collect();
    let lines: Vec<&str> = stdout.lines().collect();
    let (mut kept, mut bad) = (0usize, Vec::new());
    let mut i = 0;
    while i < lines.len() {
        let head = lines[i];
        let body = lines.get(i + 1).and_then(|l| l.strip_prefix('+'));
        i += if body.is_some() { 2 } else { 1 };
        let eof_ok = || {
            // "new blank line at EOF": fine when the file ends with an original line that
            // is only whitespace (kept as it was), never for an empty line the tidy added.
            let file = head.split(':').next().unwrap_or("");
            plan.outputs.get(file).is_some_and(|t| {
                t.lines()
                    .last()
                    .is_some_and(|l| !l.is_empty() && originals.contains(l))
            })
        };
        if head.contains("conflict marker") {
            bad.push(head.to_string());
        } else if head.contains("blank line at EOF") {
            if eof_ok() {
                kept += 1;
            } else {
                bad.push(head.to_string());
            }
        } else if body.is_some_and(|b| originals.contains(b)) {
            kept += 1;
        } else {
            bad.push(head.to_string());
        }
    }
    if lines.is_empty() {
        bad.push(format!(
            "git diff --check exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    if !bad.is_empty() {
        return Err(Error::Store(format!(
            "git diff --check: {}",
            bad.join("; ")
        )));
    }
    Ok(format!(
        "git diff --check {}..{}: {kept} whitespace finding(s), all on lines kept byte for byte from the original",
        &from[..10.min(from.len())],
        &to[..10.min(to.len())]
    ))
}
