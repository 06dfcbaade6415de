//! End-to-end tests of the tidy: plan and apply on real folders (git and not), byte exactness,
//! modes, refusals and the restore path.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use chrono::NaiveDate;

use super::apply::own_repo;
use super::model::{self, ModelReport};
use super::*;
use crate::bench::replay_set;
use crate::synth::RULES;
use crate::text::Topic;
use crate::{ARCHIVE_DIR, DAILY_DIR, VERIFY_HEADING};
use codex_free_memory::budget::ArtifactBudget;
use codex_free_memory::folder::{MEMORY_MD, MemoryFolder, SUMMARY_MD};

fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_name() == ".git" {
                continue;
            }
            let md = std::fs::symlink_metadata(e.path()).unwrap();
            if md.is_dir() {
                stack.push(e.path());
            } else {
                out.insert(e.path(), std::fs::read(e.path()).unwrap_or_default());
            }
        }
    }
    out
}

fn opts(dir: &Path, home: &Path) -> TidyOptions {
    TidyOptions {
        dir: dir.to_path_buf(),
        home: home.to_path_buf(),
        today: NaiveDate::from_ymd_opt(2026, 12, 1).unwrap(),
        budget: ArtifactBudget::default(),
        fail_after_writes: None,
        model_verdicts: Default::default(),
        accept: None,
    }
}

fn git_clean(dir: &Path) -> bool {
    let repo = git2::Repository::open(dir).unwrap();
    let mut so = git2::StatusOptions::new();
    so.include_untracked(true).recurse_untracked_dirs(true);
    repo.statuses(Some(&mut so)).unwrap().is_empty()
}

/// The bloated memory in all three layouts: plan changes no byte; apply leaves
/// MEMORY.md within 150 lines / 15 KiB with every rule, every other line somewhere,
/// a backup, and (for git folders) a clean status.
#[test]
fn bloated_memory_tidies_in_every_layout() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let cases = replay_set(tmp.path()).unwrap();
    // The Claude copy is also put under git, so both backup kinds run on foreign layouts.
    let claude = &cases[2].1;
    let (f, _) = (MemoryFolder::at(claude), ());
    git2::Repository::init(claude).unwrap();
    f.commit_all(
        &codex_free_memory::gate::approve_as_is(&f).unwrap(),
        "claude memory",
    )
    .unwrap();
    for (name, dir) in &cases {
        let before = snapshot(dir);
        let originals: BTreeMap<String, String> = [MEMORY_MD, SUMMARY_MD]
            .iter()
            .filter_map(|f| {
                std::fs::read_to_string(dir.join(f))
                    .ok()
                    .map(|t| (f.to_string(), t))
            })
            .collect();
        let p = plan(&opts(dir, &home)).unwrap();
        assert!(p.over_budget.is_empty(), "{name}: {:?}", p.over_budget);
        assert!(p.render().contains("Plan only: nothing was changed."));
        assert_eq!(snapshot(dir), before, "{name}: --plan changed bytes");
        let is_git = own_repo(&std::fs::canonicalize(dir).unwrap()).is_some();
        let head_before = is_git.then(|| MemoryFolder::at(dir).head().unwrap().unwrap());
        let applied = apply(&opts(dir, &home)).unwrap();
        let mem = std::fs::read_to_string(dir.join(MEMORY_MD)).unwrap();
        assert!(
            mem.lines().count() <= 150 && mem.len() <= 15 * 1024,
            "{name}: {} lines {} bytes",
            mem.lines().count(),
            mem.len()
        );
        let loaded = loaded_lines(dir);
        for r in RULES {
            assert!(
                loaded.contains(*r),
                "{name}: rule left the loaded layer: {r}"
            );
        }
        assert!(
            mem.contains(LAYERS_LINE),
            "{name}: MEMORY.md says where history went"
        );
        let title = originals[MEMORY_MD].lines().next().unwrap();
        assert!(
            mem.starts_with(&format!("{title}\n")),
            "{name}: the title stays on top"
        );
        assert!(
            mem.contains(VERIFY_HEADING)
                && mem.contains(Topic::Commit.check())
                && mem.contains(Topic::Deploy.check()),
            "{name}"
        );
        assert!(
            !mem.contains("当前线上版本") && !mem.contains("is currently down"),
            "{name}: stale values stayed"
        );
        assert_eq!(
            missing_lines(dir, &originals).unwrap(),
            Vec::<String>::new(),
            "{name}"
        );
        assert!(dir.join(ARCHIVE_DIR).is_dir() && dir.join(DAILY_DIR).is_dir());
        assert!(applied.render().ends_with("Tidy applied and verified.\n"));
        if is_git {
            assert!(git_clean(dir), "{name}: git status not clean");
            let repo = git2::Repository::open(dir).unwrap();
            let head = repo.head().unwrap().peel_to_commit().unwrap();
            assert_eq!(
                head.parent_id(0).unwrap(),
                head_before.unwrap(),
                "{name}: the backup is the parent commit"
            );
            assert!(
                applied
                    .read_back
                    .iter()
                    .any(|r| r.contains("git status --short: clean"))
            );
            assert!(
                applied
                    .read_back
                    .iter()
                    .any(|r| r.starts_with("git diff --stat"))
            );
        } else {
            let backups: Vec<_> = std::fs::read_dir(home.join("backups"))
                .unwrap()
                .flatten()
                .collect();
            let b = backups.last().unwrap().path();
            assert_eq!(
                std::fs::read_to_string(b.join(MEMORY_MD)).unwrap(),
                originals[MEMORY_MD],
                "{name}: backup copy"
            );
            assert!(
                std::fs::read_to_string(b.join("MANIFEST.txt"))
                    .unwrap()
                    .contains("created by the tidy: archive/")
            );
        }
        // A second tidy has nothing left to move out and still loses nothing.
        let again = plan(&opts(dir, &home)).unwrap();
        assert!(
            again
                .moves
                .iter()
                .all(|m| m.dest == Dest::Stay || matches!(m.dest, Dest::Duplicate { .. })),
            "{name}: {}",
            again
                .render()
                .lines()
                .filter(|l| !l.contains(": stays"))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

/// Lines of `MEMORY.md` and of the topic files it indexes.
fn loaded_lines(dir: &Path) -> HashSet<String> {
    let mem = std::fs::read_to_string(dir.join(MEMORY_MD)).unwrap();
    let mut out: HashSet<String> = mem.lines().map(str::to_string).collect();
    if let Ok(rd) = std::fs::read_dir(dir.join(TOPICS_DIR)) {
        for e in rd.flatten() {
            let name = format!("{TOPICS_DIR}/{}", e.file_name().to_string_lossy());
            assert!(mem.contains(&format!("]({name})")), "{name} is not indexed");
            out.extend(
                std::fs::read_to_string(e.path())
                    .unwrap()
                    .lines()
                    .map(str::to_string),
            );
        }
    }
    out
}

fn git_folder(text: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("mem");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join(MEMORY_MD), text).unwrap();
    let f = MemoryFolder::init_at(&dir).unwrap();
    f.commit_all(
        &codex_free_memory::gate::approve_as_is(&f).unwrap(),
        "start",
    )
    .unwrap();
    (tmp, dir)
}

/// Finding: durable rules without a rule word were archived, and ten preferences that
/// differ in one value were treated as near duplicates (9 of 10 archived).
#[test]
fn durable_rules_stay_and_rules_that_differ_in_a_value_merge() {
    let durable = [
        "- 本项目是**工作流生成器**,不是MODSDK项目",
        "- Docker-first testing — No local ROS2 fallback",
        "- Adopted Bun over npm",
        "- File Size Limit <500 LOC",
        "- No secrets committed; env vars in .env.* only",
        "- **Git工作流**: commit后自动push",
        "- trash > rm",
    ];
    let mut text = String::from("# Memory\n\n## Rules\n\n");
    for d in durable {
        text.push_str(d);
        text.push('\n');
    }
    for n in 1..=10 {
        text.push_str(&format!("- Always use pnpm, never npm, in repo {n}\n"));
    }
    text.push_str("- 2026-03-04: moved the cache to Redis\n");
    let (tmp, dir) = git_folder(&text);
    apply(&opts(&dir, &tmp.path().join("home"))).unwrap();
    let mem = std::fs::read_to_string(dir.join(MEMORY_MD)).unwrap();
    for d in durable {
        assert!(
            mem.lines().any(|l| l == d),
            "archived a durable rule: {d}\n{mem}"
        );
    }
    assert!(
        mem.contains("- Always use pnpm, never npm, in repo {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}"),
        "{mem}"
    );
    assert!(!mem.contains("in repo 3\n"), "{mem}");
    let archive =
        std::fs::read_to_string(dir.join(ARCHIVE_DIR).join("MEMORY-2026-12-01.md")).unwrap();
    for n in 1..=10 {
        assert!(
            archive.contains(&format!("in repo {n}\n")),
            "original {n} kept: {archive}"
        );
    }
    assert!(!mem.contains("moved the cache"), "{mem}");
    assert!(dir.join(DAILY_DIR).join("2026-03-04.md").is_file());
}

/// Finding: trailing double spaces (Markdown hard breaks) were stripped, an 8-space code
/// line was dropped as a duplicate of a 4-space one, and MEMORY.md went from 644 to 600.
#[test]
fn a_tidy_is_byte_exact_and_keeps_modes() {
    use std::os::unix::fs::PermissionsExt;
    let text = "# Memory\n\n## Conventions\n\nRead the spec first.  \nThen ask.\n\n- Status: ✅ done with the migration  \n- Keep PRs small.  \n\n```rust\nfn main() {\n    call();\n        call();\n}\n```\n";
    for git in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("mem");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join(MEMORY_MD), text).unwrap();
        std::fs::set_permissions(dir.join(MEMORY_MD), std::fs::Permissions::from_mode(0o644))
            .unwrap();
        if git {
            let f = MemoryFolder::init_at(&dir).unwrap();
            f.commit_all(
                &codex_free_memory::gate::approve_as_is(&f).unwrap(),
                "start",
            )
            .unwrap();
        }
        let applied = apply(&opts(&dir, &tmp.path().join("home"))).unwrap();
        let mut all = String::new();
        for f in [MEMORY_MD, "archive/MEMORY-2026-12-01.md"] {
            let p = dir.join(f);
            let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o644, "git={git} {f}: mode {mode:o}");
            all.push_str(&std::fs::read_to_string(p).unwrap());
        }
        let have: HashSet<&str> = all.lines().collect();
        for l in text.lines() {
            assert!(have.contains(l), "git={git}: lost {l:?}\n{all}");
        }
        let mem = std::fs::read_to_string(dir.join(MEMORY_MD)).unwrap();
        assert!(mem.contains("Read the spec first.  \nThen ask.\n"), "{mem}");
        assert!(mem.contains("    call();\n        call();\n"), "{mem}");
        assert!(!mem.contains("migration"), "{mem}");
        if git {
            assert!(
                applied
                    .read_back
                    .iter()
                    .any(|r| r.starts_with("git diff --check")),
                "{:?}",
                applied.read_back
            );
        }
    }
}

/// Finding: with conflict markers committed in MEMORY.md, --apply moved them to archive/
/// and claimed "git diff --check: no whitespace errors"; --plan said nothing of them.
#[test]
fn conflict_markers_are_reported_by_plan_and_refused_by_apply() {
    let text = "# Memory\n\n- Keep PRs small.\n<<<<<<< HEAD\n- Use pnpm.\n=======\n- Use yarn.\n>>>>>>> other\n- 2026-03-04: moved the cache to Redis\n";
    let (tmp, dir) = git_folder(text);
    let home = tmp.path().join("home");
    let p = plan(&opts(&dir, &home)).unwrap();
    assert!(
        p.render().contains(
            "--apply would refuse: MEMORY.md has git conflict markers on line(s) 4, 6, 8"
        ),
        "{}",
        p.render()
    );
    let before = snapshot(&dir);
    let e = apply(&opts(&dir, &home)).unwrap_err().to_string();
    assert!(e.contains("resolve the merge first"), "{e}");
    assert_eq!(snapshot(&dir), before);
    let lint = crate::lint::lint(
        &[crate::lint::Source {
            name: MEMORY_MD.into(),
            path: dir.join(MEMORY_MD),
            text: text.into(),
        }],
        &[],
        &ArtifactBudget::default(),
        crate::lint::Checks { all: true },
    );
    assert_eq!(
        lint.count(crate::lint::Kind::ConflictMarker),
        3,
        "{}",
        lint.render()
    );
    assert!(lint.has_errors());
}

/// Finding: --plan did not mention a git operation in progress.
#[test]
fn plan_names_a_merge_in_progress() {
    let (_tmp, dir) = git_folder("# Memory\n\n- 2026-03-04: moved the cache to Redis\n");
    let repo = git2::Repository::open(&dir).unwrap();
    let head = repo.head().unwrap().target().unwrap();
    std::fs::write(repo.path().join("MERGE_HEAD"), format!("{head}\n")).unwrap();
    let p = plan(&opts(&dir, dir.parent().unwrap())).unwrap();
    assert!(
        p.blockers
            .iter()
            .any(|b| b.contains("middle of an operation")),
        "{:?}",
        p.blockers
    );
    assert!(p.render().contains("--apply would refuse:"));
}

/// Finding: a lead-in line stayed while its list was archived, and an undated TODO was
/// filed under today's date.
#[test]
fn a_lead_in_keeps_its_list_and_an_undated_todo_is_not_filed_under_today() {
    let text = "# Memory\n\n## 发版\n\n修改版本号时**必须**同步更新以下3个位置：\n- `package.json`\n- `src-tauri/tauri.conf.json`\n- `docs/install.md`\n\n## Next steps\n\n- [ ] write the migration guide\n";
    let (tmp, dir) = git_folder(text);
    apply(&opts(&dir, &tmp.path().join("home"))).unwrap();
    let mem = std::fs::read_to_string(dir.join(MEMORY_MD)).unwrap();
    assert!(
            mem.contains("修改版本号时**必须**同步更新以下3个位置：\n- `package.json`\n- `src-tauri/tauri.conf.json`\n- `docs/install.md`\n"),
            "{mem}"
        );
    assert!(!mem.contains("migration guide"), "{mem}");
    assert!(
        !dir.join(DAILY_DIR).join("2026-12-01.md").exists(),
        "filed under today"
    );
    let archive =
        std::fs::read_to_string(dir.join(ARCHIVE_DIR).join("MEMORY-2026-12-01.md")).unwrap();
    assert!(
        archive.contains("## Next steps\n\n- [ ] write the migration guide\n"),
        "{archive}"
    );
}

/// Finding: rules without a modal word (`Adopted Bun over npm`, `trash > rm`, `No secrets
/// committed`) were archived with the section they sat in; stale only by context, they are
/// not sure and stay, while the section's reports move out.
#[test]
fn a_rule_in_a_transient_section_stays_while_its_reports_leave() {
    let text = "# Memory\n\n## Recent changes\n\n- Adopted Bun over npm\n- trash > rm\n- No secrets committed; env vars in .env.* only\n- Refactored the parser into three passes\n- Fixed the login redirect\n";
    let (tmp, dir) = git_folder(text);
    let p = plan(&opts(&dir, &tmp.path().join("home"))).unwrap();
    let unsure: Vec<&str> = p
        .moves
        .iter()
        .filter(|m| m.undecided)
        .map(|m| m.text.as_str())
        .collect();
    // A decision stated as made (`Adopted …`) is not even in doubt: it stays as a rule.
    assert_eq!(
        unsure,
        vec![
            "- trash > rm",
            "- No secrets committed; env vars in .env.* only"
        ]
    );
    assert!(
        p.moves
            .iter()
            .any(|m| m.text == "- Adopted Bun over npm" && m.dest == Dest::Stay && !m.undecided)
    );
    apply(&opts(&dir, &tmp.path().join("home"))).unwrap();
    let mem = std::fs::read_to_string(dir.join(MEMORY_MD)).unwrap();
    for r in [
        "- Adopted Bun over npm",
        "- trash > rm",
        "- No secrets committed; env vars in .env.* only",
    ] {
        assert!(mem.contains(r), "{r} left: {mem}");
    }
    assert!(!mem.contains("Refactored the parser"), "{mem}");
    assert!(!mem.contains("login redirect"), "{mem}");
}

/// Finding: a real bloated memory (its durable part alone over budget) was refused
/// ("move or merge rules by hand"); it is laid out into indexed topic files instead.
#[test]
fn an_over_budget_durable_memory_is_laid_out_into_topic_files() {
    let mut text = String::from(
        "# Memory\n\n## Core rules\n\n- Never force-push to main.\n- Always run the tests before committing.\n",
    );
    for s in 0..8 {
        text.push_str(&format!("\n## Module {s} reference\n\n"));
        for k in 0..40 {
            text.push_str(&format!(
                    "- `src/mod{s}/file{k}.rs` holds the {k}th handler of module {s}, wired through the router table.\n"
                ));
        }
    }
    let (tmp, dir) = git_folder(&text);
    let home = tmp.path().join("home");
    let p = plan(&opts(&dir, &home)).unwrap();
    assert!(p.over_budget.is_empty(), "{:?}", p.over_budget);
    assert!(!p.topics.is_empty());
    apply(&opts(&dir, &home)).unwrap();
    let mem = std::fs::read_to_string(dir.join(MEMORY_MD)).unwrap();
    assert!(
        mem.lines().count() <= 150 && mem.len() <= 15 * 1024,
        "{}",
        mem.len()
    );
    assert!(
        mem.contains("- Never force-push to main.\n"),
        "rules stay in MEMORY.md: {mem}"
    );
    assert!(mem.contains(TOPICS_HEADING), "{mem}");
    let loaded = loaded_lines(&dir);
    for l in text.lines().filter(|l| !l.is_empty()) {
        assert!(loaded.contains(l), "not loaded: {l}");
    }
}

#[test]
fn refuses_while_phase_2_runs_on_the_state_home_folder() {
    let home = tempfile::tempdir().unwrap();
    let dir = crate::default_folder(home.path());
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(MEMORY_MD),
        "- Never do X.\n- 2025-01-01: done the thing\n",
    )
    .unwrap();
    let store = codex_free_store::Store::open_in_home(home.path()).unwrap();
    assert!(matches!(
        store.claim_phase2("w", 3600, true).unwrap(),
        codex_free_store::phase2::Claim::Claimed { .. }
    ));
    let before = snapshot(&dir);
    let e = apply(&opts(&dir, home.path())).unwrap_err().to_string();
    assert!(e.contains("phase-2 consolidation is running"), "{e}");
    assert_eq!(snapshot(&dir), before);
}

#[test]
fn a_failed_write_restores_everything() {
    for git in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("mem");
        std::fs::create_dir(&dir).unwrap();
        let b = crate::synth::bloated(7);
        std::fs::write(dir.join(MEMORY_MD), &b.memory).unwrap();
        std::fs::create_dir(dir.join(ARCHIVE_DIR)).unwrap();
        std::fs::write(dir.join(ARCHIVE_DIR).join("old.md"), "# old evidence\n").unwrap();
        if git {
            git2::Repository::init(&dir).unwrap();
            MemoryFolder::at(&dir)
                .commit_all(
                    &codex_free_memory::gate::approve_as_is(&MemoryFolder::at(&dir)).unwrap(),
                    "start",
                )
                .unwrap();
        }
        let before = snapshot(&dir);
        for after in [0, 3, 50] {
            let mut o = opts(&dir, &tmp.path().join("home"));
            o.fail_after_writes = Some(after);
            let e = apply(&o).unwrap_err().to_string();
            if after < plan(&o).unwrap().outputs.len() {
                assert!(
                    e.contains("tidy failed and was undone") && e.contains("simulated failure"),
                    "{e}"
                );
                assert_eq!(
                    snapshot(&dir),
                    before,
                    "git={git} after={after}: not restored"
                );
                if git {
                    assert!(git_clean(&dir));
                }
            }
        }
    }
}

#[test]
fn bad_input_is_refused_naming_the_file_and_nothing_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let dir = tmp.path().join("mem");
    std::fs::create_dir(&dir).unwrap();
    let check = |dir: &Path, want: &str| {
        let before = snapshot(dir);
        let e = apply(&opts(dir, &home)).unwrap_err().to_string();
        assert!(e.contains(want), "{e}");
        assert_eq!(snapshot(dir), before);
        e
    };
    // Not UTF-8.
    std::fs::write(dir.join(MEMORY_MD), b"- ok\n- \xff\xfe broken\n").unwrap();
    let e = check(&dir, "not UTF-8");
    assert!(e.contains("MEMORY.md"), "{e}");
    // Huge.
    std::fs::write(
        dir.join(MEMORY_MD),
        vec![b'x'; (crate::MAX_FILE_BYTES + 1) as usize],
    )
    .unwrap();
    check(&dir, "a memory file may be at most");
    // A link to a file outside the folder.
    let outside = tmp.path().join("outside.md");
    std::fs::write(&outside, "- Never do X.\n- 2025-01-01: done\n").unwrap();
    std::fs::remove_file(dir.join(MEMORY_MD)).unwrap();
    std::os::unix::fs::symlink(&outside, dir.join(MEMORY_MD)).unwrap();
    let e = check(&dir, "outside the memory folder");
    assert!(e.contains("MEMORY.md"), "{e}");
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        "- Never do X.\n- 2025-01-01: done\n"
    );
    // A destination folder linked outside.
    std::fs::remove_file(dir.join(MEMORY_MD)).unwrap();
    std::fs::write(
        dir.join(MEMORY_MD),
        "- Never do X.\n- 2025-01-01: done with the release\n",
    )
    .unwrap();
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, dir.join(ARCHIVE_DIR)).unwrap();
    check(&dir, "archive");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    std::fs::remove_file(dir.join(ARCHIVE_DIR)).unwrap();
    // A git repository in the middle of a merge.
    let repo = git2::Repository::init(&dir).unwrap();
    MemoryFolder::at(&dir)
        .commit_all(
            &codex_free_memory::gate::approve_as_is(&MemoryFolder::at(&dir)).unwrap(),
            "start",
        )
        .unwrap();
    let head = repo.head().unwrap().target().unwrap();
    std::fs::write(repo.path().join("MERGE_HEAD"), format!("{head}\n")).unwrap();
    check(&dir, "middle of an operation");
    std::fs::remove_file(repo.path().join("MERGE_HEAD")).unwrap();
    // A destination that cannot be written (a file where the folder must go): the
    // writes stop and the backup is restored.
    std::fs::write(dir.join(DAILY_DIR), "not a folder\n").unwrap();
    let f = MemoryFolder::at(&dir);
    f.commit_all(
        &codex_free_memory::gate::approve_as_is(&f).unwrap(),
        "daily is a file",
    )
    .unwrap();
    check(&dir, "undone");
    // A folder this user cannot write (root writes anyway, so only checked as a user).
    std::fs::remove_file(dir.join(DAILY_DIR)).unwrap();
    MemoryFolder::at(&dir)
        .commit_all(
            &codex_free_memory::gate::approve_as_is(&MemoryFolder::at(&dir)).unwrap(),
            "clean",
        )
        .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555)).unwrap();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        check(&dir, "not writable");
    }
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The mock provider as the pipeline's cheap model (`local/judge`, OpenAI chat wire
/// format), priced so the estimate has a cost.
fn mock_model(base_url: &str) -> codex_free_models::ResolvedModel {
    let text = serde_json::json!({"memories": {
        "extract_model": "local/judge",
        "providers": {"local": {"base_url": base_url, "api": "openai-chat"}},
        "prices": {"local/judge": {"input_per_mtok": 1.0, "output_per_mtok": 4.0}},
    }})
    .to_string();
    let (cfg, warnings) = codex_free_core::config::Config::parse(&text).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    codex_free_models::resolve_extract_model(
        &cfg.memories,
        &codex_free_secrets::MemoryStore::default(),
        codex_free_models::PriceTable::bundled(),
        codex_free_models::RetryPolicy {
            max_attempts: 1,
            ..Default::default()
        },
    )
    .unwrap()
}

/// Rules in a transient section (undecided) and reports (stale by their own shape); one
/// rule carries a private span that the outgoing gate must remove.
const UNDECIDED: &str = "# Memory\n\n## Recent changes\n\n- Bun over npm for installs <private>mirror at bun.corp.example</private>\n- trash > rm\n- Refactored the parser into three passes\n";

/// `tidy --model` through the mock provider: the estimate (tokens and cost) comes before the
/// request, the request passed the outgoing gate (the private span is removed on the wire), the
/// verdicts decide the undecided units, the usage is logged as a `tidy` run, and a second
/// plan is answered from the cache with no request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tidy_model_estimates_first_sends_through_the_gate_and_caches() {
    let mock = codex_free_testkit::mock_provider::MockProvider::start().await;
    mock.set_answer(|body| {
        let s = body.to_string();
        // u1 = the Bun rule, u2 = trash > rm (file order).
        assert!(s.contains("trash > rm"), "{s}");
        r#"{"units":[{"id":"u1","verdict":"stale"},{"id":"u2","verdict":"durable"}]}"#.into()
    });
    let model = mock_model(&mock.base_url());
    let (tmp, dir) = git_folder(UNDECIDED);
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let o = opts(&dir, &home);
    let before = snapshot(&dir);
    let requests_at_estimate = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = requests_at_estimate.clone();
    let mock_ref = &mock;
    let mut on_estimate = |r: &ModelReport| {
        seen.lock()
            .unwrap()
            .push((mock_ref.requests().len(), r.clone()));
    };
    let (p, verdicts) = model::plan_with_model(&o, &model, None, true, &mut on_estimate)
        .await
        .unwrap();
    let at = requests_at_estimate.lock().unwrap().clone();
    assert_eq!(at.len(), 1);
    assert_eq!(at[0].0, 0, "the estimate came after a request was sent");
    let est = &at[0].1;
    assert_eq!((est.undecided, est.cached, est.requests), (2, 0, 1));
    assert!(est.est_input_tokens > 50, "{est:?}");
    assert!(est.est_cost_usd.is_some_and(|c| c > 0.0), "{est:?}");
    // One request, on the real wire format, with the private span removed by the gate.
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 1);
    assert!(
        reqs[0].path.ends_with("/chat/completions"),
        "{}",
        reqs[0].path
    );
    let wire = reqs[0].body.to_string();
    assert!(wire.contains("Bun over npm for installs"), "{wire}");
    assert!(!wire.contains("bun.corp.example"), "{wire}");
    // The plan shows the estimate and the spend, and the verdicts decide the units.
    let text = p.render();
    assert!(text.contains(&est.estimate_line()), "{text}");
    assert!(text.contains("1 request(s) sent"), "{text}");
    assert_eq!(verdicts.len(), 2);
    let dest_of = |p: &Plan, t: &str| {
        p.moves
            .iter()
            .find(|m| m.text.contains(t))
            .map(|m| (m.dest.clone(), m.undecided))
            .unwrap()
    };
    assert_eq!(
        dest_of(&p, "Bun over npm"),
        (Dest::Archive { check: None }, false)
    );
    assert_eq!(dest_of(&p, "trash > rm"), (Dest::Stay, false));
    assert_eq!(snapshot(&dir), before, "--plan --model changed bytes");
    // Logged like every other model call: a `tidy` run with priced usage.
    let store = codex_free_store::Store::open_in_home(&home).unwrap();
    let spend = store.spend_this_month().unwrap();
    assert_eq!(spend.requests, 1);
    assert!(spend.usd > 0.0, "{spend:?}");
    // A second plan is answered from the cache: no request.
    let mut quiet = |_: &ModelReport| {};
    let (p2, v2) = model::plan_with_model(&o, &model, None, true, &mut quiet)
        .await
        .unwrap();
    assert_eq!(mock.requests().len(), 1, "the second plan sent a request");
    let r2 = p2.model.clone().unwrap();
    assert_eq!((r2.cached, r2.requests, r2.sent, r2.decided), (2, 0, 0, 2));
    assert_eq!(v2, verdicts);
    // Apply with the verdicts: the stale-by-model rule leaves, the durable one stays.
    let mut o2 = o.clone();
    o2.model_verdicts = v2;
    apply(&o2).unwrap();
    let mem = std::fs::read_to_string(dir.join(MEMORY_MD)).unwrap();
    assert!(mem.contains("- trash > rm"), "{mem}");
    assert!(!mem.contains("Bun over npm"), "{mem}");
    mock.stop();
}

/// A model that answers garbage decides nothing: every undecided unit stays loaded, the
/// plan says why, and nothing is cached (the next run asks again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_garbage_answer_leaves_every_undecided_unit_loaded() {
    let mock = codex_free_testkit::mock_provider::MockProvider::start().await;
    mock.set_answer(|_| "Sure! Both look durable to me.".into());
    let model = mock_model(&mock.base_url());
    let (tmp, dir) = git_folder(UNDECIDED);
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let o = opts(&dir, &home);
    let mut quiet = |_: &ModelReport| {};
    let (p, verdicts) = model::plan_with_model(&o, &model, None, true, &mut quiet)
        .await
        .unwrap();
    assert_eq!(mock.requests().len(), 1);
    assert!(verdicts.is_empty());
    let r = p.model.clone().unwrap();
    assert_eq!(r.decided, 0);
    assert!(
        p.render().contains("not the verdict schema"),
        "{}",
        p.render()
    );
    assert!(p.moves.iter().filter(|m| m.undecided).count() == 2);
    assert!(!home.join(model::CACHE_FILE).exists());
    let mut o2 = o.clone();
    o2.model_verdicts = verdicts;
    apply(&o2).unwrap();
    let mem = std::fs::read_to_string(dir.join(MEMORY_MD)).unwrap();
    assert!(
        mem.contains("Bun over npm for installs") && mem.contains("- trash > rm"),
        "{mem}"
    );
    assert!(!mem.contains("Refactored the parser"), "{mem}");
    mock.stop();
}

/// An apply with `accept` moves only the accepted units; every other unit stays as it was.
#[test]
fn only_accepted_units_move() {
    let text = "# Memory\n\n- Never push to main.\n- 2026-11-20: finished migration step 1\n- 2026-11-21: finished migration step 2\n";
    let (tmp, dir) = git_folder(text);
    let mut o = opts(&dir, &tmp.path().join("home"));
    let p = plan(&o).unwrap();
    let step1 = p
        .moves
        .iter()
        .find(|m| m.text.contains("step 1"))
        .unwrap()
        .key();
    assert_eq!(step1, "MEMORY.md:4");
    o.accept = Some([step1].into_iter().collect());
    let p = plan(&o).unwrap();
    let step2 = p.moves.iter().find(|m| m.text.contains("step 2")).unwrap();
    assert_eq!(
        (step2.dest.clone(), step2.reason.as_str()),
        (Dest::Stay, "not accepted: stays")
    );
    apply(&o).unwrap();
    let mem = std::fs::read_to_string(dir.join(MEMORY_MD)).unwrap();
    assert!(
        !mem.contains("step 1") && mem.contains("- 2026-11-21: finished migration step 2\n"),
        "{mem}"
    );
    assert!(mem.contains("- Never push to main."), "{mem}");
}

/// Rules that differ in one value merge only inside one section: a `**记录时间**: <date>`
/// field under each of several rule headings belongs to its own rule and stays with it.
#[test]
fn value_merges_stay_inside_one_section() {
    let mut text = String::from("# Memory\n\n");
    for (n, rule) in [
        "每次汇报进度",
        "先确认后执行",
        "代码交给 Codex",
        "静默时不发消息",
    ]
    .iter()
    .enumerate()
    {
        text.push_str(&format!(
            "### 规则 {n}\n- **记录时间**: 2026-02-2{n}\n- **规则**: {rule}\n\n"
        ));
    }
    text.push_str("## Repos\n\n");
    for n in 1..=3 {
        text.push_str(&format!("- Always use pnpm, never npm, in repo {n}\n"));
    }
    let (tmp, dir) = git_folder(&text);
    let p = plan(&opts(&dir, &tmp.path().join("home"))).unwrap();
    for m in p.moves.iter().filter(|m| m.text.contains("记录时间")) {
        assert_eq!(m.dest, Dest::Stay, "{m:?}");
    }
    let merged = p
        .moves
        .iter()
        .filter(|m| matches!(m.dest, Dest::Merged { .. }))
        .count();
    assert_eq!(merged, 3, "the three repo rules of one section merge");
}

/// A `key: value` field under a dated heading may be a set-up that outlives the day: the
/// lint does not call it stale, the tidy keeps it loaded and marks it for the model; an
/// event line under the same heading still leaves.
#[test]
fn a_field_under_a_dated_heading_is_not_sure() {
    let text = "# Memory\n\n### 2026-02-21 初始化\n\n- 环境: OpenClaw Cloud (Zeabur), Gateway 端口 8080\n\n- 语言偏好: 简体中文\n\n### 2026-02-22\n\n- 修复了网关超时，重启后恢复\n";
    let (tmp, dir) = git_folder(text);
    let p = plan(&opts(&dir, &tmp.path().join("home"))).unwrap();
    let find = |s: &str| p.moves.iter().find(|m| m.text.contains(s)).unwrap();
    for s in ["环境", "语言偏好"] {
        let m = find(s);
        assert_eq!(m.dest, Dest::Stay, "{m:?}");
        assert!(m.undecided, "{m:?}");
    }
    assert!(
        matches!(find("修复了").dest, Dest::Daily { .. }),
        "{:?}",
        find("修复了")
    );
    let lines = crate::world::flagged_lines(text);
    assert!(!lines.contains(&5) && !lines.contains(&7), "{lines:?}");
    assert!(lines.contains(&11), "{lines:?}");
}

/// A table of dated events leaves as one unit with its header row (the header names the
/// columns; it is not a line of its own to keep).
#[test]
fn a_table_leaves_with_its_header_row() {
    let text = "# Memory\n\n## Rules\n\n- Keep PRs small.\n\n## 重要日期\n\n| 日期 | 事件 |\n|------|------|\n| 2026-02-13 | 三模型协同系统部署 |\n| 2026-02-16 | 网站上线 |\n";
    let (tmp, dir) = git_folder(text);
    apply(&opts(&dir, &tmp.path().join("home"))).unwrap();
    let mem = std::fs::read_to_string(dir.join(MEMORY_MD)).unwrap();
    assert!(mem.contains("Keep PRs small"), "{mem}");
    assert!(
        !mem.contains("| 日期 | 事件 |") && !mem.contains("网站上线"),
        "{mem}"
    );
}

/// A plan in which every unit stays says there is nothing to write, not that it rewrites
/// the file (found on a fresh-user run).
#[test]
fn a_plan_with_nothing_to_move_says_so() {
    let (tmp, dir) =
        git_folder("# Memory\n\n## Rules\n\n- Keep PRs small.\n- Never force-push main.\n");
    let text = plan(&opts(&dir, &tmp.path().join("home")))
        .unwrap()
        .render();
    assert!(text.contains("Would write: nothing to MEMORY.md"), "{text}");
    assert!(!text.contains("rewrites MEMORY.md"), "{text}");
}
