//! `codex-free memories bench-hygiene`: what a tidy changes, measured on copies of a fixed
//! replay set (never on the folder itself): the default-load tokens a new session pays
//! (`MEMORY.md` + `memory_summary.md`, counted with the project's tokenizer), stale-fact
//! and duplicate findings of the lint, and the budget headroom (lines and bytes left under
//! the `MEMORY.md` budget; negative = over).
//!
//! The replay set is the bloated memory of [`super::synth`] in three layouts: this state
//! home's (a git repository), Codex's `~/.codex/memories` (with `raw_memories.md` and
//! `rollout_summaries/`) and a Claude Code auto-memory folder (`MEMORY.md` plus a topic
//! file). `--dir` measures a copy of any folder instead. `--corpus` measures real memory
//! files nobody here wrote ([`super::world`]): each file tidied as its own git folder, scored
//! against its hand labels (durable kept loaded, stale moved out, bytes lost, modes).
//!
//! Invariant: this module never prints and never writes outside its temporary directory
//! (except `--write-fixture`, which writes the shipped copy where it is told).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::cli::BenchHygieneArgs;
use super::lint::{self, Checks, Kind};
use super::tidy::{self, TidyOptions};
use codex_free_core::Result;
use codex_free_core::error::IoContext;
use codex_free_memory::budget::ArtifactBudget;
use codex_free_memory::folder::{MEMORY_MD, MemoryFolder, SUMMARY_MD};

/// Seed of the shipped bloated memory.
pub const SEED: u64 = 2;

/// Figures of one folder state.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Figures {
    /// Tokens of `MEMORY.md` + `memory_summary.md`.
    pub default_load_tokens: usize,
    /// `stale_fact` findings.
    pub stale_facts: usize,
    /// `duplicate` findings.
    pub duplicates: usize,
    /// `MEMORY.md` lines left under the budget (negative = over).
    pub headroom_lines: i64,
    /// `MEMORY.md` bytes left under the budget (negative = over).
    pub headroom_bytes: i64,
}

/// One measured folder.
#[derive(Debug, Clone, Serialize)]
pub struct Case {
    /// Layout name.
    pub name: String,
    /// Before the tidy.
    pub before: Figures,
    /// After the tidy.
    pub after: Figures,
    /// Markdown files in the folder after the tidy (nothing is deleted, so never fewer).
    pub files_after: usize,
    /// For a half of the labelled corpus (`--corpus`): what the tidy did against the labels.
    pub labelled: Option<super::world::TidyScore>,
}

fn measure(dir: &Path, b: &ArtifactBudget) -> Result<Figures> {
    let sources = lint::sources_for(Path::new("/"), &[dir.to_path_buf()])?;
    let rep = lint::lint(&sources, &[], b, Checks { all: true });
    let mem = super::read_memory_file(Some(dir), &dir.join(MEMORY_MD))?;
    let sum = super::read_memory_file(Some(dir), &dir.join(SUMMARY_MD)).unwrap_or_default();
    Ok(Figures {
        default_load_tokens: codex_free_core::tokens::count(&mem)
            + codex_free_core::tokens::count(&sum),
        stale_facts: rep.count(Kind::StaleFact),
        duplicates: rep.count(Kind::Duplicate),
        headroom_lines: b.memory_max_lines as i64 - mem.lines().count() as i64,
        headroom_bytes: b.memory_max_bytes as i64 - mem.len() as i64,
    })
}

fn write(p: &Path, text: &str) -> Result<()> {
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).ctx(|| format!("creating {}", d.display()))?;
    }
    std::fs::write(p, text).ctx(|| format!("writing {}", p.display()))
}

/// Build the three layouts of the replay set under `root`; returns (name, folder).
pub fn replay_set(root: &Path) -> Result<Vec<(String, PathBuf)>> {
    let b = super::synth::bloated(SEED);
    let own = root.join("codex-free-home/memories");
    write(&own.join(MEMORY_MD), &b.memory)?;
    write(&own.join(SUMMARY_MD), &b.summary)?;
    write(
        &own.join("raw_memories.md"),
        "# Raw memories\n\n## rollout_id: r-001\n- user prefers pnpm\n",
    )?;
    write(
        &own.join("rollout_summaries/r-001.md"),
        "rollout_id: r-001\n\nSet up pnpm.\n",
    )?;
    let (f, _) = MemoryFolder::open_or_init(&root.join("codex-free-home"))?;
    f.commit_all(
        &codex_free_memory::gate::approve_as_is(&f)?,
        "Initial memory",
    )?;

    let codex = root.join("codex/memories");
    write(&codex.join(MEMORY_MD), &b.memory)?;
    write(&codex.join(SUMMARY_MD), &b.summary)?;
    write(
        &codex.join("raw_memories.md"),
        "# Raw memories\n\n- thread 1: pnpm setup\n",
    )?;
    for i in 0..5 {
        write(
            &codex.join(format!("rollout_summaries/2025-03-0{}-task-{i}.md", i + 1)),
            &format!("# Task {i}\n\nEvidence of task {i}.\n"),
        )?;
    }

    let claude = root.join("claude/projects/-work-app/memory");
    let mut cm = String::from(
        "# Memory index\n\n- [Debugging notes](debugging.md) — how the team debugs the scheduler\n\n",
    );
    cm.push_str(&b.memory);
    write(&claude.join(MEMORY_MD), &cm)?;
    write(
        &claude.join("debugging.md"),
        "# Debugging\n\nUse CODEX_FREE_LOG=debug.\n",
    )?;
    Ok(vec![
        ("codex-free state home (git)".into(), own),
        ("Codex ~/.codex/memories".into(), codex),
        ("Claude auto-memory".into(), claude),
    ])
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).ctx(|| format!("creating {}", to.display()))?;
    for e in std::fs::read_dir(from)
        .ctx(|| format!("listing {}", from.display()))?
        .flatten()
    {
        let md = std::fs::symlink_metadata(e.path())
            .ctx(|| format!("reading {}", e.path().display()))?;
        let dst = to.join(e.file_name());
        if md.is_dir() {
            copy_dir(&e.path(), &dst)?;
        } else if md.is_file() {
            std::fs::copy(e.path(), &dst).ctx(|| format!("copying {}", e.path().display()))?;
        }
    }
    Ok(())
}

fn count_md(dir: &Path) -> usize {
    let mut n = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if e.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                n += 1;
            }
        }
    }
    n
}

/// Run the benchmark: each case measured, tidied (apply, backups in the temporary home)
/// and measured again.
///
/// Errors: a folder that cannot be copied or read, or a tidy that fails.
pub fn run(args: &BenchHygieneArgs, budget: &ArtifactBudget) -> Result<Vec<Case>> {
    let tmp = tempfile::tempdir().ctx(|| "creating a temporary directory".into())?;
    if let Some(dir) = &args.corpus {
        return run_corpus(dir, tmp.path());
    }
    let cases = match &args.dir {
        Some(d) => {
            let copy = tmp.path().join("copy");
            copy_dir(d, &copy)?;
            vec![(d.display().to_string(), copy)]
        }
        None => replay_set(tmp.path())?,
    };
    let home = tmp.path().join("home");
    let mut out = Vec::new();
    for (name, dir) in cases {
        let before = measure(&dir, budget)?;
        tidy::apply(&TidyOptions::new(dir.clone(), home.clone(), *budget))?;
        let after = measure(&dir, budget)?;
        out.push(Case {
            name,
            before,
            after,
            files_after: count_md(&dir),
            labelled: None,
        });
    }
    Ok(out)
}

/// `--corpus`: both halves of the labelled corpus, each file tidied in its own git folder
/// under `root` with the default budgets.
fn run_corpus(dir: &Path, root: &Path) -> Result<Vec<Case>> {
    use super::world::{Corpus, Half, measure_tidy};
    let corpus = Corpus::load(dir)?;
    let mut out = Vec::new();
    for half in [Half::Tune, Half::Test] {
        let r = root.join(half.name());
        let mut s = measure_tidy(&corpus, half, &r, true)?;
        s.misses.clear();
        let tokens = |n: usize| Figures {
            default_load_tokens: n,
            ..Figures::default()
        };
        out.push(Case {
            name: format!("corpus {} half ({} files)", half.name(), s.files),
            before: tokens(s.tokens_before),
            after: tokens(s.tokens_after),
            files_after: count_md(&r),
            labelled: Some(s),
        });
    }
    Ok(out)
}

/// Write `cases` as a table to `w`.
pub fn print(cases: &[Case], w: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        w,
        "{:<40} {:>22} {:>14} {:>12} {:>24}",
        "folder", "default-load tokens", "stale facts", "duplicates", "headroom lines / bytes"
    )?;
    for c in cases {
        if let Some(s) = &c.labelled {
            writeln!(
                w,
                "{}: MEMORY.md tokens {} -> {}; durable lines kept loaded {:.3} ({}/{}); stale lines moved out {:.3} ({}/{}); bytes lost {} of {}; modes changed {}; refused {}",
                c.name,
                s.tokens_before,
                s.tokens_after,
                s.durable_kept(),
                s.durable_loaded,
                s.durable,
                s.stale_out(),
                s.stale_moved,
                s.stale,
                s.bytes_lost,
                s.bytes_before,
                s.mode_changed.len(),
                s.refused.len()
            )?;
            continue;
        }
        for (label, f) in [("before", c.before), ("after", c.after)] {
            writeln!(
                w,
                "{:<40} {:>22} {:>14} {:>12} {:>24}",
                format!("{} ({label})", short(&c.name)),
                f.default_load_tokens,
                f.stale_facts,
                f.duplicates,
                format!("{} / {}", f.headroom_lines, f.headroom_bytes)
            )?;
        }
        let saved = 100.0
            * (1.0
                - c.after.default_load_tokens as f64 / c.before.default_load_tokens.max(1) as f64);
        writeln!(
            w,
            "{:<40} {:>21.1}% fewer tokens per session; {} Markdown files after (nothing deleted)",
            "", saved, c.files_after
        )?;
    }
    Ok(())
}

fn short(s: &str) -> String {
    if s.chars().count() <= 30 {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(29).collect::<String>())
    }
}

/// `--write-fixture DIR`: write the shipped bloated memory into `dir`.
///
/// Errors: I/O.
pub fn write_fixture(dir: &Path) -> Result<()> {
    let b = super::synth::bloated(SEED);
    write(&dir.join(MEMORY_MD), &b.memory)?;
    write(&dir.join(SUMMARY_MD), &b.summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--corpus` tidies real folders made from the labelled corpus and reports, per half,
    /// what the labels say about the result; nothing is lost and no mode changes.
    #[test]
    fn the_corpus_bench_runs_on_real_folders() {
        let args = BenchHygieneArgs {
            dir: None,
            write_fixture: None,
            json: false,
            corpus: Some(PathBuf::from(super::super::world::DEFAULT_DIR)),
        };
        let cases = run(&args, &ArtifactBudget::default()).unwrap();
        assert_eq!(cases.len(), 2);
        for c in &cases {
            let s = c.labelled.as_ref().unwrap();
            assert!(s.files >= 10 && s.durable > 0 && s.stale > 0, "{}", c.name);
            assert_eq!(s.bytes_lost, 0);
            assert!(s.mode_changed.is_empty() && s.refused.is_empty());
            assert!(s.tokens_after < s.tokens_before);
        }
        let mut out = Vec::new();
        print(&cases, &mut out).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(out.contains("durable lines kept loaded") && out.contains("bytes lost 0 of"));
    }
}
