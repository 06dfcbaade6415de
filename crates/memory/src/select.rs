//! Phase 2 inputs: which raw memories are consolidated, and how they are laid out in the
//! memory folder before the agent runs.
//!
//! Selection follows Codex's phase 2 (`get_phase2_input_selection`): a raw memory is
//! eligible when it is non-empty and was used within `max_unused_days`, or was never used
//! and was itself updated within that window; eligible ones are ranked by usage count,
//! then last use (or update time when never used), then update time, then id, and the top
//! `max_raw_memories_for_consolidation` are kept, in stable id order.
//!
//! Sync writes `raw_memories.md` and one `rollout_summaries/<stem>.md` per selected input,
//! removes every other file there (forgetting is real: a deselected or deleted input
//! leaves the folder), moves queued ad-hoc notes in, and prunes notes older than
//! `max_unused_days`. Only stable fields are written (no usage counters), so an unchanged
//! selection produces no diff and hence no model call.
//!
//! Invariant: sync touches only `raw_memories.md`, `rollout_summaries/` and
//! `ad_hoc_notes/`; file content is a pure function of the selection.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::folder::{AD_HOC_DIR, RAW_MEMORIES_MD, ROLLOUT_SUMMARIES_DIR};
use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::error::IoContext;

pub use crate::layout::NOTES_INBOX_DIR;

pub use codex_free_store::phase2::RawMemory;

/// Pick the phase-2 inputs from `all` (see the module doc for the rule). `now` in unix
/// seconds. Returns at most `max` entries sorted by `thread_id`.
pub fn select(all: &[RawMemory], now: i64, max_unused_days: u32, max: usize) -> Vec<RawMemory> {
    let cutoff = now - i64::from(max_unused_days) * 86_400;
    let mut eligible: Vec<&RawMemory> = all
        .iter()
        .filter(|m| !(m.raw_memory.trim().is_empty() && m.rollout_summary.trim().is_empty()))
        .filter(|m| match m.last_usage {
            Some(t) => t >= cutoff,
            None => m.source_updated_at >= cutoff,
        })
        .collect();
    eligible.sort_by(|a, b| {
        b.usage_count
            .cmp(&a.usage_count)
            .then(
                b.last_usage
                    .unwrap_or(b.source_updated_at)
                    .cmp(&a.last_usage.unwrap_or(a.source_updated_at)),
            )
            .then(b.source_updated_at.cmp(&a.source_updated_at))
            .then(b.thread_id.cmp(&a.thread_id))
    });
    let mut out: Vec<RawMemory> = eligible.into_iter().take(max).cloned().collect();
    out.sort_by(|a, b| a.thread_id.cmp(&b.thread_id));
    out
}

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// The file stem of a rollout summary: `YYYY-MM-DDTHH-MM-SS-<4 base62>[-<slug>]` (UTC time
/// of `updated_at`; the 4 characters derive from SHA-256 of `thread_id`, so the name is
/// stable across runs; the slug is lower-case `[a-z0-9-]`, at most 60 characters).
pub fn rollout_stem(updated_at: i64, thread_id: &str, slug: Option<&str>) -> String {
    let t = chrono::DateTime::from_timestamp(updated_at, 0).unwrap_or_default();
    let h = Sha256::digest(thread_id.as_bytes());
    let mut n = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
    let mut tag = String::new();
    for _ in 0..4 {
        tag.push(BASE62[(n % 62) as usize] as char);
        n /= 62;
    }
    let mut stem = format!("{}-{tag}", t.format("%Y-%m-%dT%H-%M-%S"));
    if let Some(s) = slug.and_then(normalise_slug) {
        stem.push('-');
        stem.push_str(&s);
    }
    stem
}

/// Strip trailing whitespace from every line, drop trailing blank lines, end with one `\n`
/// (keeps the folder clean for `git diff --check`; content is otherwise unchanged).
pub fn normalize(text: &str) -> String {
    let mut out: String = text
        .lines()
        .map(|l| l.trim_end())
        .collect::<Vec<_>>()
        .join("\n");
    while out.ends_with('\n') {
        out.pop();
    }
    let trimmed = out.trim_end().len();
    out.truncate(trimmed);
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

fn iso(t: i64) -> String {
    chrono::DateTime::from_timestamp(t, 0)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default()
}

/// The header key that names a rollout in its summary file (read back by `memories_read`
/// to credit usage).
pub const ROLLOUT_ID_KEY: &str = "rollout_id: ";

/// Content of `rollout_summaries/<stem>.md` for `m`.
pub fn rollout_file(m: &RawMemory) -> String {
    normalize(&format!(
        "# Rollout summary\n\n{ROLLOUT_ID_KEY}{}\nupdated_at: {}\n\n{}\n",
        m.thread_id,
        iso(m.source_updated_at),
        m.rollout_summary
    ))
}

/// Content of `raw_memories.md` for the selection (in the given order).
pub fn raw_memories_file(sel: &[RawMemory]) -> String {
    raw_memories_file_in(sel, ROLLOUT_SUMMARIES_DIR)
}

/// As [`raw_memories_file`], naming the rollout summaries under `summaries_dir` (relative
/// to the folder: `rollout_summaries`, or `rollout_summaries/<machine>` while sync is on).
pub fn raw_memories_file_in(sel: &[RawMemory], summaries_dir: &str) -> String {
    let mut s = String::from("# Raw memories\n\n");
    if sel.is_empty() {
        s.push_str("No raw memories are selected for consolidation.\n");
        return s;
    }
    s.push_str(&format!(
        "{} raw memories selected for consolidation, one section per rollout.\n",
        sel.len()
    ));
    for m in sel {
        let stem = rollout_stem(m.source_updated_at, &m.thread_id, m.rollout_slug.as_deref());
        s.push_str(&format!(
            "\n## {ROLLOUT_ID_KEY}{}\n\nupdated_at: {}\nrollout_summary_file: {summaries_dir}/{stem}.md\n\n{}\n",
            m.thread_id,
            iso(m.source_updated_at),
            if m.raw_memory.trim().is_empty() { "(no raw memory; see the rollout summary)" } else { m.raw_memory.trim() }
        ));
    }
    normalize(&s)
}

/// What [`sync`] changed on disk.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncReport {
    /// Rollout summary files written (new or changed).
    pub written: usize,
    /// Files removed from `rollout_summaries/` (deselected or deleted inputs).
    pub removed: usize,
    /// Inbox notes copied into `ad_hoc_notes/` (delete them from the inbox after commit).
    pub notes_moved_in: Vec<PathBuf>,
    /// Old notes pruned from `ad_hoc_notes/`.
    pub notes_pruned: usize,
}

fn write_if_changed(path: &Path, content: &str) -> Result<bool> {
    if fs::read_to_string(path).ok().as_deref() == Some(content) {
        return Ok(false);
    }
    codex_free_core::home::write_atomic_unlocked(path, content.as_bytes())?;
    Ok(true)
}

fn ensure_plain_dir(p: &Path) -> Result<()> {
    match fs::symlink_metadata(p) {
        Ok(md) if md.file_type().is_symlink() || !md.is_dir() => {
            fs::remove_file(p).ctx(|| format!("removing non-directory {}", p.display()))?;
            fs::create_dir(p).ctx(|| format!("creating {}", p.display()))
        }
        Ok(_) => Ok(()),
        Err(_) => fs::create_dir_all(p).ctx(|| format!("creating {}", p.display())),
    }
}

/// Lay the selection out in the folder at `root` (see the module doc). `home` holds the
/// notes inbox; `now` (unix seconds) and `max_unused_days` decide which notes are pruned.
pub fn sync(
    root: &Path,
    home: &Path,
    sel: &[RawMemory],
    now: i64,
    max_unused_days: u32,
) -> Result<SyncReport> {
    sync_scoped(root, home, sel, now, max_unused_days, None)
}

/// As [`sync`]; with `machine` (the folder is shared through a git remote) this machine's
/// evidence goes to `raw_memories/<machine>.md` and `rollout_summaries/<machine>/`, only
/// those are rewritten or pruned, and every other machine's files are left as they are.
/// The unscoped files of the time before sync (`raw_memories.md`, files directly in
/// `rollout_summaries/`) were this machine's and are removed.
pub fn sync_scoped(
    root: &Path,
    home: &Path,
    sel: &[RawMemory],
    now: i64,
    max_unused_days: u32,
    machine: Option<&str>,
) -> Result<SyncReport> {
    let mut rep = SyncReport::default();
    let top = root.join(ROLLOUT_SUMMARIES_DIR);
    ensure_plain_dir(&top)?;
    let (dir, summaries_rel, raw) = match machine {
        Some(m) => {
            // Unscoped leftovers from before sync (this machine's) leave; other machines'
            // directories stay.
            for e in fs::read_dir(&top)
                .ctx(|| format!("listing {}", top.display()))?
                .flatten()
            {
                let name = e.file_name().to_string_lossy().into_owned();
                let md = fs::symlink_metadata(e.path()).ctx(|| format!("inspecting {name}"))?;
                if !name.starts_with('.') && !md.is_dir() {
                    fs::remove_file(e.path()).ctx(|| format!("removing {name}"))?;
                    rep.removed += 1;
                }
            }
            let legacy = root.join(RAW_MEMORIES_MD);
            if fs::symlink_metadata(&legacy).is_ok_and(|m| m.is_file()) {
                fs::remove_file(&legacy).ctx(|| format!("removing {}", legacy.display()))?;
            }
            let d = top.join(m);
            ensure_plain_dir(&d)?;
            let raw_dir = root.join(super::sync::RAW_MEMORIES_DIR);
            ensure_plain_dir(&raw_dir)?;
            (
                d,
                format!("{ROLLOUT_SUMMARIES_DIR}/{m}"),
                raw_dir.join(format!("{m}.md")),
            )
        }
        None => (
            top.clone(),
            ROLLOUT_SUMMARIES_DIR.to_string(),
            root.join(RAW_MEMORIES_MD),
        ),
    };
    let mut want: BTreeMap<String, String> = BTreeMap::new();
    for m in sel {
        want.insert(
            format!(
                "{}.md",
                rollout_stem(m.source_updated_at, &m.thread_id, m.rollout_slug.as_deref())
            ),
            rollout_file(m),
        );
    }
    for e in fs::read_dir(&dir)
        .ctx(|| format!("listing {}", dir.display()))?
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.')
            || want.contains_key(&name) && e.file_type().map(|t| t.is_file()).unwrap_or(false)
        {
            continue;
        }
        let p = e.path();
        let md = fs::symlink_metadata(&p).ctx(|| format!("inspecting {}", p.display()))?;
        if md.is_dir() {
            fs::remove_dir_all(&p).ctx(|| format!("removing {}", p.display()))?;
        } else {
            fs::remove_file(&p).ctx(|| format!("removing {}", p.display()))?;
        }
        rep.removed += 1;
    }
    for (name, content) in &want {
        if write_if_changed(&dir.join(name), content)? {
            rep.written += 1;
        }
    }
    if fs::symlink_metadata(&raw).is_ok_and(|m| !m.is_file()) {
        return Err(Error::PathOutsideRoot(format!(
            "{} is not a regular file; remove it",
            raw.display()
        )));
    }
    write_if_changed(&raw, &raw_memories_file_in(sel, &summaries_rel))?;

    // Ad-hoc notes: copy queued ones in, prune old ones.
    let notes = root.join(AD_HOC_DIR);
    let inbox = home.join(NOTES_INBOX_DIR);
    if let Ok(rd) = fs::read_dir(&inbox) {
        let mut queued: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        queued.sort();
        for p in queued {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let Ok(md) = fs::symlink_metadata(&p) else {
                continue;
            };
            if name.starts_with('.') || !md.is_file() || !name.ends_with(".md") {
                continue;
            }
            ensure_plain_dir(&notes)?;
            let text = fs::read_to_string(&p).ctx(|| format!("reading note {}", p.display()))?;
            // Redacted again here: a note may reach the inbox by hand, not only by the tool.
            let text = codex_free_redact::redact_string(text);
            write_if_changed(&notes.join(&name), &normalize(&text))?;
            rep.notes_moved_in.push(p);
        }
    }
    if let Ok(rd) = fs::read_dir(&notes) {
        let cutoff = now - i64::from(max_unused_days) * 86_400;
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(t) = note_time(&name)
                && t < cutoff
            {
                fs::remove_file(e.path()).ctx(|| format!("pruning note {name}"))?;
                rep.notes_pruned += 1;
            }
        }
    }
    Ok(rep)
}

/// Keep the best-ranked memories of `sel` (already in rank order) whose raw memories and
/// rollout summaries fit `max_tokens` together, at least one; returns them and how many
/// were left for a later consolidation. The agent has to read them within the model's
/// context window, so an input too large is trimmed by rank instead of sent to fail.
pub fn fit_tokens(sel: Vec<RawMemory>, max_tokens: usize) -> (Vec<RawMemory>, usize) {
    let mut used = 0usize;
    let mut keep = Vec::with_capacity(sel.len());
    let total = sel.len();
    for m in sel {
        let t = codex_free_core::tokens::count(&m.raw_memory)
            + codex_free_core::tokens::count(&m.rollout_summary)
            + 32;
        if !keep.is_empty() && used + t > max_tokens {
            break;
        }
        used += t;
        keep.push(m);
    }
    let dropped = total - keep.len();
    (keep, dropped)
}

/// File name of a new note at `now` (unix seconds, with sub-second `nanos` for uniqueness):
/// `YYYY-MM-DDTHH-MM-SS-<4 base62>.md`.
pub fn note_file_name(now: chrono::DateTime<chrono::Utc>) -> String {
    let nonce = format!(
        "{}-{}",
        now.timestamp_nanos_opt().unwrap_or_default(),
        std::process::id()
    );
    format!("{}.md", rollout_stem(now.timestamp(), &nonce, None))
}

/// The time encoded in a note's (or rollout summary's) file name, unix seconds.
pub fn note_time(name: &str) -> Option<i64> {
    let ts = name.get(..19)?;
    chrono::NaiveDateTime::parse_from_str(ts, "%Y-%m-%dT%H-%M-%S")
        .ok()
        .map(|t| t.and_utc().timestamp())
}

/// `s` as a file-name slug: lowercase ASCII letters and digits, every other run of
/// characters one `-`, at most 60 bytes (a rollout summary's name stays readable and
/// portable); `None` when nothing is left.
pub fn normalise_slug(s: &str) -> Option<String> {
    let mut out = String::new();
    for c in s.trim().chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
        if out.len() >= 60 {
            break;
        }
    }
    let out = out.trim_matches('-').to_string();
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(id: &str, updated: i64, uses: i64, last: Option<i64>) -> RawMemory {
        RawMemory {
            thread_id: id.into(),
            source_updated_at: updated,
            raw_memory: format!("memory of {id}  \n"),
            rollout_summary: format!("summary of {id}"),
            rollout_slug: Some("Fix the CI: pnpm!".into()),
            usage_count: uses,
            last_usage: last,
        }
    }

    #[test]
    fn selection_ranks_by_usage_then_recency_and_drops_stale() {
        let now = 100 * 86_400;
        let day = 86_400;
        let all = vec![
            m("a", now - day, 0, None),
            m("b", now - 2 * day, 5, Some(now - day)),
            m("c", now - 40 * day, 0, None), // never used, too old
            m("d", now - 40 * day, 1, Some(now - day)), // old but used recently
            m("e", now - day, 9, Some(now - 31 * day)), // used, but not within 30 days
            RawMemory {
                raw_memory: " ".into(),
                rollout_summary: "".into(),
                ..m("f", now, 0, None)
            },
        ];
        let s = select(&all, now, 30, 10);
        let ids: Vec<&str> = s.iter().map(|m| m.thread_id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "d"]);
        let top2 = select(&all, now, 30, 2);
        let ids: Vec<&str> = top2.iter().map(|m| m.thread_id.as_str()).collect();
        assert_eq!(ids, ["b", "d"], "usage count ranks first");
    }

    #[test]
    fn stem_format_is_stable() {
        let s = rollout_stem(1_700_000_000, "thread-1", Some("Fix the CI: pnpm!"));
        assert!(s.starts_with("2023-11-14T22-13-20-"), "{s}");
        assert!(s.ends_with("-fix-the-ci-pnpm"), "{s}");
        assert_eq!(
            s,
            rollout_stem(1_700_000_000, "thread-1", Some("Fix the CI: pnpm!"))
        );
        assert_eq!(
            s.len(),
            "2023-11-14T22-13-20-".len() + 4 + "-fix-the-ci-pnpm".len()
        );
        let long = rollout_stem(0, "t", Some(&"x".repeat(100)));
        assert!(long.len() <= 19 + 5 + 61, "{long}");
        assert_eq!(note_time(&s), Some(1_700_000_000));
    }

    #[test]
    fn sync_writes_removes_and_is_idempotent() {
        let home = tempfile::tempdir().unwrap();
        let root = home.path().join("memories");
        fs::create_dir(&root).unwrap();
        let now = 1_700_000_000;
        let sel = vec![m("a", now, 0, None), m("b", now, 0, None)];
        let r = sync(&root, home.path(), &sel, now, 30).unwrap();
        assert_eq!((r.written, r.removed), (2, 0));
        let raw = fs::read_to_string(root.join(RAW_MEMORIES_MD)).unwrap();
        assert!(
            raw.contains("rollout_id: a") && raw.contains("memory of b\n"),
            "{raw}"
        );
        assert!(!raw.contains("  \n"), "trailing spaces normalised");
        let r = sync(&root, home.path(), &sel, now, 30).unwrap();
        assert_eq!((r.written, r.removed), (0, 0));
        let r = sync(&root, home.path(), &sel[..1], now, 30).unwrap();
        assert_eq!(
            (r.written, r.removed),
            (0, 1),
            "deselected input is forgotten"
        );
        assert_eq!(
            fs::read_dir(root.join(ROLLOUT_SUMMARIES_DIR))
                .unwrap()
                .count(),
            1
        );
    }

    #[test]
    fn notes_move_in_and_old_ones_are_pruned() {
        let home = tempfile::tempdir().unwrap();
        let root = home.path().join("memories");
        fs::create_dir(&root).unwrap();
        let inbox = home.path().join(NOTES_INBOX_DIR);
        fs::create_dir(&inbox).unwrap();
        fs::write(inbox.join("2023-11-14T22-13-20-abcd.md"), "note\n").unwrap();
        fs::create_dir(root.join(AD_HOC_DIR)).unwrap();
        fs::write(
            root.join(AD_HOC_DIR).join("2020-01-01T00-00-00-zzzz.md"),
            "old\n",
        )
        .unwrap();
        let r = sync(&root, home.path(), &[], 1_700_000_100, 30).unwrap();
        assert_eq!(r.notes_moved_in.len(), 1);
        assert_eq!(r.notes_pruned, 1);
        assert!(
            root.join(AD_HOC_DIR)
                .join("2023-11-14T22-13-20-abcd.md")
                .exists()
        );
    }
}
