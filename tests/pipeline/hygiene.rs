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

    // `--dir`, as `memories tidy` takes it, names the same folder.
    let mem_dir = mem.to_str().unwrap();
    let o = run(
        home.path(),
        project.path(),
        &["memories", "lint", "--dir", mem_dir],
    );
    assert_eq!(stdout(&o), out, "lint --dir reads the same folder");

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

/// `codex.config.json` with the mock as the cheap model (`local/judge`, priced so the
/// estimate has a cost) and `extra` merged into `memories`.
fn judge_config(home: &Path, base_url: &str, extra: serde_json::Value) {
    let mut memories = serde_json::json!({
        "extract_model": "local/judge",
        "providers": {"local": {"base_url": base_url, "api": "openai-chat"}},
        "prices": {"local/judge": {"input_per_mtok": 1.0, "output_per_mtok": 4.0}},
    });
    for (k, v) in extra.as_object().unwrap() {
        memories[k] = v.clone();
    }
    let text = serde_json::json!({ "memories": memories }).to_string();
    let (cfg, warnings) = codex_free_core::config::Config::parse(&text).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    cfg.save(&home.join(codex_free_core::config::CONFIG_FILE))
        .unwrap();
}

/// Two rules in a transient section (undecided: the rules cannot tell) and one report that
/// is stale by its own shape; one rule carries a private span and a key, which the outgoing
/// gate must keep off the wire.
const UNDECIDED: &str = "# Memory\n\n## Recent changes\n\n- Bun over npm for installs <private>mirror at bun.corp.example</private> sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789\n- trash > rm\n- Refactored the parser into three passes\n";

/// `memories tidy --model` through the real binary and the mock provider: the estimate
/// (tokens, cost) is printed before the request, the request leaves through the outgoing
/// gate, a second plan is answered from the cache (no request), `memories.tidy_ask_model`
/// makes the model the default and `--no-model` turns it off, `--apply --model` moves what
/// the model called stale, and a model answering garbage leaves every undecided unit loaded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tidy_model_through_the_binary_estimates_gates_caches_and_survives_garbage() {
    let mock = codex_free_testkit::mock_provider::MockProvider::start().await;
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("mem");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("MEMORY.md"), UNDECIDED).unwrap();
    judge_config(home.path(), &mock.base_url(), serde_json::json!({}));
    let d = dir.to_str().unwrap().to_string();
    let tidy = |extra: &[&str]| {
        let mut a = vec!["memories", "tidy", "--dir", &d];
        a.extend_from_slice(extra);
        let o = run(home.path(), home.path(), &a);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        stdout(&o)
    };

    // Rules only: no request, the undecided units stay, no "Model:" line.
    let rules = tidy(&["--plan"]);
    assert_eq!(mock.requests().len(), 0);
    assert!(!rules.contains("Model:"), "{rules}");

    // With --model: the estimate line (with a cost) first, then one request through the gate.
    let out = tidy(&["--plan", "--model"]);
    let est = out
        .lines()
        .position(|l| l.starts_with("Model: 2 undecided unit(s), 0 answered from the cache; 1 request(s) to local/judge"))
        .unwrap_or_else(|| panic!("no estimate line:\n{out}"));
    assert!(out.lines().nth(est).unwrap().contains("est. $"), "{out}");
    let sent = out
        .lines()
        .position(|l| l.starts_with("Model: 1 request(s) sent"))
        .unwrap_or_else(|| panic!("no sent line:\n{out}"));
    assert!(est < sent, "the estimate comes before the sending:\n{out}");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 1);
    let wire = reqs[0].body.to_string();
    assert!(
        wire.contains("trash > rm") && wire.contains("Bun over npm for installs"),
        "{wire}"
    );
    assert!(
        !wire.contains("bun.corp.example"),
        "the private span left: {wire}"
    );
    assert!(
        !wire.contains("AbCdEfGhIjKlMnOpQrStUvWxYz"),
        "the key left: {wire}"
    );
    assert!(
        !wire.contains("Refactored the parser"),
        "a decided unit was asked about"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("MEMORY.md")).unwrap(),
        UNDECIDED,
        "--plan writes nothing"
    );

    // A second plan: answered from the cache, nothing sent.
    let again = tidy(&["--plan", "--model"]);
    assert_eq!(
        mock.requests().len(),
        1,
        "the second plan sent a request:\n{again}"
    );
    assert!(
        again.contains("2 answered from the cache") && again.contains("decided from the cache"),
        "{again}"
    );

    // The setting makes the model the default; --no-model is rules only.
    judge_config(
        home.path(),
        &mock.base_url(),
        serde_json::json!({"tidy_ask_model": true}),
    );
    assert!(tidy(&["--plan"]).contains("decided from the cache"));
    assert!(!tidy(&["--plan", "--no-model"]).contains("Model:"));
    assert_eq!(mock.requests().len(), 1);

    // Apply (the key removed first: a tidy refuses to write a credential into archive/): the
    // changed Bun line is asked about, the cached one is not; the mock calls every unit
    // stale, so both rules leave MEMORY.md and are kept in archive/.
    let clean = UNDECIDED.replace(" sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "");
    std::fs::write(dir.join("MEMORY.md"), &clean).unwrap();
    tidy(&["--apply", "--model"]);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2, "one request for the one uncached unit");
    let wire = reqs[1].body.to_string();
    assert!(
        wire.contains("Bun over npm for installs") && !wire.contains("trash > rm"),
        "{wire}"
    );
    let after = std::fs::read_to_string(dir.join("MEMORY.md")).unwrap();
    assert!(!after.contains("trash > rm"), "{after}");
    let archived: String = std::fs::read_dir(dir.join("archive"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    assert!(archived.contains("- trash > rm\n"), "{archived}");

    // Garbage from the model: nothing decided, every undecided unit stays loaded.
    let home2 = tempfile::tempdir().unwrap();
    let dir2 = home2.path().join("mem");
    std::fs::create_dir_all(&dir2).unwrap();
    std::fs::write(dir2.join("MEMORY.md"), &clean).unwrap();
    judge_config(home2.path(), &mock.base_url(), serde_json::json!({}));
    mock.set_answer(|_| "Sure! Both look durable to me.".into());
    let d2 = dir2.to_str().unwrap();
    let o = run(
        home2.path(),
        home2.path(),
        &["memories", "tidy", "--dir", d2, "--apply", "--model"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        stdout(&o).contains("not the verdict schema"),
        "{}",
        stdout(&o)
    );
    let kept = std::fs::read_to_string(dir2.join("MEMORY.md")).unwrap();
    assert!(
        kept.contains("- trash > rm\n") && kept.contains("Bun over npm for installs"),
        "{kept}"
    );
    assert!(
        !kept.contains("Refactored the parser"),
        "the rules' own verdict still applies"
    );
    assert_eq!(mock.requests().len(), 3);
    mock.stop();

    // No model to ask (a provider without a key): the rules' plan still runs and says so.
    let home3 = tempfile::tempdir().unwrap();
    let dir3 = home3.path().join("mem");
    std::fs::create_dir_all(&dir3).unwrap();
    std::fs::write(dir3.join("MEMORY.md"), &clean).unwrap();
    let o = Command::new(bin())
        .env("CODEX_FREE_HOME", home3.path())
        .env_remove("OPENAI_API_KEY")
        .env("CODEX_FREE_KEYRING", "keyutils")
        .current_dir(home3.path())
        .args([
            "memories",
            "tidy",
            "--dir",
            dir3.to_str().unwrap(),
            "--plan",
            "--model",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = stdout(&o);
    assert!(
        out.starts_with("Model: not configured") && out.contains("undecided units stay loaded"),
        "{out}"
    );
    assert!(
        out.contains("- trash > rm") && out.contains("Plan only: nothing was changed"),
        "{out}"
    );
}
