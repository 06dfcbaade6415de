//! `memories lint`, `memories tidy` and `memories bench-hygiene` through the real binary:
//! exit status, JSON shape, errors naming the file, a plan that changes nothing, an apply
//! that leaves a clean, smaller, verified folder.

use std::path::Path;
use std::process::{Command, Output};

use crate::support::{bin, git};

fn run(home: &Path, cwd: &Path, args: &[&str]) -> Output {
    Command::new(bin())
        .env("CODEX_FREE_HOME", home)
        .env("CODEX_FREE_LOG", "warn")
        .env("RUST_BACKTRACE", "0")
        .current_dir(cwd)
        .args(args)
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn lint_reports_findings_with_exit_status_and_json() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    std::fs::write(
        project.path().join("AGENTS.md"),
        "# Rules\n\nUse npm for every install.\n",
    )
    .unwrap();
    let mem = home.path().join("memories");
    std::fs::create_dir_all(&mem).unwrap();
    std::fs::write(
        mem.join("MEMORY.md"),
        "# Memory\n\n- Always use pnpm, never npm.\n- 当前线上版本是 v3.2.1。\n- Verify the deployed version at task start.\n- Details in [notes](notes.md).\n",
    )
    .unwrap();
    let o = run(home.path(), project.path(), &["memories", "lint"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("MEMORY.md:3: conflict (error)") && out.contains("AGENTS.md:3"),
        "{out}"
    );
    assert!(out.contains("MEMORY.md:4: stale_fact"), "{out}");
    assert!(out.contains("MEMORY.md:6: dangling_reference"), "{out}");
    assert!(
        !out.contains("MEMORY.md:5:"),
        "a verify line is not a finding: {out}"
    );

    let o = run(home.path(), project.path(), &["memories", "lint", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let f = &v["findings"][0];
    for k in ["file", "line", "kind", "severity", "message", "suggestion"] {
        assert!(!f[k].is_null(), "{k} missing in {f}");
    }

    // Warnings only (no project conflict, the stale line alone): exit 0.
    let clean = tempfile::tempdir().unwrap();
    std::fs::write(
        clean.path().join("MEMORY.md"),
        "- Prefer pnpm over npm.\n- The deploy is green today.\n",
    )
    .unwrap();
    let o = run(
        home.path(),
        clean.path(),
        &["memories", "lint", clean.path().to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("stale_fact"));

    // Not UTF-8: an error naming the file.
    let bad = clean.path().join("bad.md");
    std::fs::write(&bad, b"\xff\xfe\n").unwrap();
    let o = run(
        home.path(),
        clean.path(),
        &["memories", "lint", bad.to_str().unwrap()],
    );
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.md") && err.contains("not UTF-8"), "{err}");
}

#[test]
fn tidy_plan_changes_nothing_and_apply_verifies_a_git_folder() {
    let home = tempfile::tempdir().unwrap();
    let mem = home.path().join("memories");
    std::fs::create_dir_all(&mem).unwrap();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hygiene/bloated");
    for f in ["MEMORY.md", "memory_summary.md"] {
        std::fs::copy(data.join(f), mem.join(f)).unwrap();
    }
    git(&mem, &["init", "-q"]);
    git(
        &mem,
        &["-c", "user.name=t", "-c", "user.email=t@t", "add", "-A"],
    );
    git(
        &mem,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "bloated",
        ],
    );
    let before = git(&mem, &["rev-parse", "HEAD"]);

    let o = run(home.path(), home.path(), &["memories", "tidy", "--plan"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.lines().count() > 1800, "one line per memory line");
    assert!(
        out.contains("-> archive/")
            && out.contains("-> daily/")
            && out.contains("verify at task start"),
        "{}",
        &out[..2000]
    );
    assert_eq!(
        git(&mem, &["status", "--short"]),
        "",
        "--plan changed files"
    );
    assert_eq!(git(&mem, &["rev-parse", "HEAD"]), before);

    let o = run(home.path(), home.path(), &["memories", "tidy", "--apply"]);
    let out = stdout(&o);
    assert!(
        o.status.success(),
        "{}{}",
        out,
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        out.contains("git status --short: clean") && out.ends_with("Tidy applied and verified.\n"),
        "{out}"
    );
    assert_eq!(git(&mem, &["status", "--short"]), "");
    assert_eq!(git(&mem, &["diff", "--check", before.trim(), "HEAD"]), "");
    let m = std::fs::read_to_string(mem.join("MEMORY.md")).unwrap();
    assert!(m.lines().count() <= 150 && m.len() <= 15 * 1024);
    // The lint of the tidied folder has no error left, and every stale fact it still
    // reports is a line the plan said it kept and why (undecided lines stay loaded).
    let plan = {
        let o = run(home.path(), home.path(), &["memories", "tidy", "--plan"]);
        stdout(&o)
    };
    let o = run(home.path(), home.path(), &["memories", "lint"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let lint = stdout(&o);
    let tidied: Vec<&str> = m.lines().collect();
    let mut still = 0;
    for l in lint
        .lines()
        .filter(|l| l.contains("/MEMORY.md:") && l.contains(": stale_fact:"))
    {
        let n: usize = l.split(':').nth(1).unwrap().parse().unwrap();
        let text = tidied[n - 1];
        still += 1;
        assert!(
            plan.lines().any(|p| p.ends_with(text)
                && (p.contains("[stale heading kept") || p.contains("[partly stale"))),
            "the lint flags line {n} ({text}) but the plan did not say why it stays:\n{plan}"
        );
    }
    let explained = plan
        .lines()
        .filter(|p| p.contains("[stale heading kept") || p.contains("[partly stale"))
        .count();
    assert!(
        still <= explained,
        "{still} flagged, {explained} explained\n{lint}"
    );

    // Mid-merge: refused, nothing changed.
    std::fs::write(
        mem.join(".git/MERGE_HEAD"),
        git(&mem, &["rev-parse", "HEAD"]),
    )
    .unwrap();
    let head = git(&mem, &["rev-parse", "HEAD"]);
    let o = run(home.path(), home.path(), &["memories", "tidy", "--apply"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("middle of an operation"));
    assert_eq!(git(&mem, &["rev-parse", "HEAD"]), head);
    assert!(!stdout(&o).contains("verified"));
}

#[test]
fn bench_hygiene_prints_before_and_after() {
    let home = tempfile::tempdir().unwrap();
    let o = run(home.path(), home.path(), &["memories", "bench-hygiene"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    println!("{out}");
    for w in [
        "default-load tokens",
        "stale facts",
        "duplicates",
        "headroom",
        "(before)",
        "(after)",
        "Codex",
        "Claude",
    ] {
        assert!(out.contains(w), "{w}: {out}");
    }
}

#[test]
fn tidy_refuses_to_write_a_secret_and_restores_the_folder() {
    use codex_free_hygiene::tidy;
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("memories");
    std::fs::create_dir_all(&dir).unwrap();
    let before = "# Memory\n\n- Always use pnpm, never npm.\n- Deploy key: AKIAIOSFODNN7EXAMPLE\n- 2026-11-30: released v1.2.3 today.\n";
    std::fs::write(dir.join("MEMORY.md"), before).unwrap();
    let opts = tidy::TidyOptions::new(
        dir.clone(),
        d.path().join("state"),
        codex_free_memory::budget::ArtifactBudget::default(),
    );
    let e = tidy::apply(&opts).unwrap_err();
    assert!(e.to_string().contains("holds a secret"), "{e}");
    assert_eq!(
        std::fs::read_to_string(dir.join("MEMORY.md")).unwrap(),
        before
    );
}
