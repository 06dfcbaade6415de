//! Git sync of the memory folder through the real binary: two state homes share one local
//! bare repository; they consolidate at the same time (mock model), sync, reconcile, and
//! end with the union of their evidence and no commit lost. Then the attacks: a remote
//! that refuses every push, an unreachable remote, a diverged history, option-injection
//! URLs, and a home the running user cannot write. Also review before use (held
//! consolidation, accept, reject).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::Json;
use axum::extract::State;
use codex_free_core::config::{CONFIG_FILE, Config};
use codex_free_pipeline::cli::{ControlEnv, MemoriesCmd, execute};
use codex_free_pipeline::phase1::TextDirInput;
use codex_free_secrets::MemoryStore;
use serde_json::{Value, json};

/// Phase-2 request bodies seen by the mock, in order.
#[derive(Clone, Default)]
struct Mock {
    phase2: Arc<Mutex<Vec<String>>>,
}

fn usage() -> Value {
    json!({"prompt_tokens": 900, "completion_tokens": 100, "total_tokens": 1000})
}

fn summary(ids: &str) -> String {
    let s = codex_free_memory::budget::SUMMARY_SECTIONS;
    format!(
        "v1\n{}\n- Developer who works through AI agents.\n{}\n- Always pnpm, never npm.\n{}\n- Verify CI state live.\n{}\n- MEMORY.md: tooling rules from {ids}.\n",
        s[0], s[1], s[2], s[3]
    )
}

/// Phase 1: one extraction per session. Phase 2 (a request with tools): a stateless agent
/// that writes MEMORY.md and the summary naming every rollout id the request shows, then
/// stops once it has seen its tool results.
async fn chat(State(m): State<Mock>, Json(body): Json<Value>) -> Json<Value> {
    let text = body.to_string();
    let reply = |message: Value, finish: &str| {
        Json(
            json!({"id": "c", "object": "chat.completion", "created": 0, "model": "mock-model",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage()}),
        )
    };
    if body
        .get("tools")
        .is_some_and(|t| t.as_array().is_some_and(|a| !a.is_empty()))
    {
        m.phase2.lock().unwrap().push(text.clone());
        let msgs = body["messages"].as_array().cloned().unwrap_or_default();
        if msgs.last().is_some_and(|l| l["role"] == "tool") {
            return reply(
                json!({"role": "assistant", "content": "Consolidated."}),
                "stop",
            );
        }
        let mut ids: BTreeSet<String> = BTreeSet::new();
        for part in text.split("rollout_id: ").skip(1) {
            let id: String = part
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            if !id.is_empty() {
                ids.insert(id);
            }
        }
        let ids = ids.into_iter().collect::<Vec<_>>().join(", ");
        let memory =
            format!("# Memory\n\n## Tooling\n\n- Always use pnpm, never npm (rollouts: {ids}).\n");
        let calls = json!([
            {"id": "w1", "type": "function", "function": {"name": "write_file", "arguments": json!({"path": "MEMORY.md", "content": memory}).to_string()}},
            {"id": "w2", "type": "function", "function": {"name": "write_file", "arguments": json!({"path": "memory_summary.md", "content": summary(&ids)}).to_string()}},
        ]);
        return reply(
            json!({"role": "assistant", "content": null, "tool_calls": calls}),
            "tool_calls",
        );
    }
    let id = text
        .split("Fix the build of ")
        .nth(1)
        .and_then(|r| r.split('.').next())
        .unwrap_or("?")
        .to_string();
    let answer = json!({
        "rollout_summary": format!("In session {id} the user fixed the build with pnpm."),
        "rollout_slug": format!("pnpm {id}"),
        "raw_memory": format!("- The user always uses pnpm (session {id})."),
    });
    reply(
        json!({"role": "assistant", "content": answer.to_string()}),
        "stop",
    )
}

async fn start(m: Mock) -> String {
    let app = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(chat))
        .with_state(m);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/v1/")
}

/// One machine: a state home under `root/<name>`.
struct Machine {
    root: PathBuf,
    home: PathBuf,
}

impl Machine {
    fn new(root: &Path, name: &str) -> Self {
        let root = root.join(name);
        let home = root.join("state");
        std::fs::create_dir_all(&home).unwrap();
        Self { root, home }
    }

    fn configure(&self, base: &str, extra: Value) {
        let mut v = json!({"memories": {
            "extract_model": "local/mock-model",
            "consolidation_model": "local/mock-model",
            "sources": ["codex"],
            "max_rollouts_per_startup": 8,
            "providers": {"local": {"base_url": base, "api": "openai-chat"}},
        }});
        if let (Some(m), Some(x)) = (v["memories"].as_object_mut(), extra.as_object()) {
            for (k, val) in x {
                m.insert(k.clone(), val.clone());
            }
        }
        std::fs::write(self.home.join(CONFIG_FILE), v.to_string()).unwrap();
    }

    /// Phase 1 in-process over plain-text sessions `ids` (the binary's own phase 1 reads
    /// agent transcripts; the sync is what this file tests).
    async fn extract(&self, ids: &[&str]) {
        let dir = self.root.join("rollouts").join("codex");
        std::fs::create_dir_all(&dir).unwrap();
        for id in ids {
            let p = dir.join(format!("{id}.txt"));
            std::fs::write(
                &p,
                format!("user: always use pnpm. Fix the build of {id}.\nassistant: done\n"),
            )
            .unwrap();
            let f = std::fs::File::options().write(true).open(&p).unwrap();
            f.set_modified(SystemTime::now() - Duration::from_secs(7 * 3600))
                .unwrap();
        }
        let mut env = ControlEnv::new(self.home.clone(), Arc::new(MemoryStore::default()));
        env.input = Arc::new(TextDirInput::new(self.root.join("rollouts")));
        let out = execute(MemoriesCmd::Run { json: false }, &env)
            .await
            .unwrap();
        assert!(out.contains("with output"), "{out}");
    }

    fn cmd(&self, args: &[&str]) -> std::process::Command {
        let mut c = std::process::Command::new(crate::support::bin());
        c.args(args)
            .env("HOME", &self.root)
            .env("CODEX_FREE_HOME", &self.home)
            .env("CODEX_HOME", self.root.join("codex"))
            .env("CLAUDE_CONFIG_DIR", self.root.join("claude"))
            .env("PI_CODING_AGENT_DIR", self.root.join("pi"))
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env_remove("CODEX_FREE_LOG");
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    fn folder(&self) -> PathBuf {
        self.home.join("memories")
    }

    fn machine(&self) -> String {
        std::fs::read_to_string(self.home.join("machine_id"))
            .unwrap()
            .trim()
            .to_string()
    }

    fn head(&self) -> Option<String> {
        let r = git2::Repository::open(self.folder()).ok()?;
        r.head().ok()?.target().map(|o| o.to_string())
    }

    fn status(&self) -> Value {
        let o = self.run(&["memories", "status", "--json"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice(&o.stdout).unwrap()
    }

    /// Every file under the folder (relative, `/`-separated), `.git` left out.
    fn files(&self) -> BTreeSet<String> {
        fn walk(d: &Path, rel: &str, out: &mut BTreeSet<String>) {
            for e in std::fs::read_dir(d).unwrap().flatten() {
                let n = e.file_name().to_string_lossy().into_owned();
                if n.starts_with('.') {
                    continue;
                }
                let r = if rel.is_empty() {
                    n.clone()
                } else {
                    format!("{rel}/{n}")
                };
                if e.path().is_dir() {
                    walk(&e.path(), &r, out);
                } else {
                    out.insert(r);
                }
            }
        }
        let mut out = BTreeSet::new();
        walk(&self.folder(), "", &mut out);
        out
    }
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn git(args: &[&str]) -> String {
    let o = std::process::Command::new("git")
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn bare(path: &Path) -> String {
    git(&["init", "--bare", "-q", path.to_str().unwrap()]);
    path.to_str().unwrap().to_string()
}

/// True when `old` is an ancestor of (or equal to) `new` in the repository at `repo`.
fn ancestor(repo: &Path, old: &str, new: &str) -> bool {
    let r = git2::Repository::open(repo).unwrap();
    let (o, n) = (
        git2::Oid::from_str(old).unwrap(),
        git2::Oid::from_str(new).unwrap(),
    );
    o == n || r.graph_descendant_of(n, o).unwrap_or(false)
}

/// Sync each machine, consolidating where a merge asks for it, until both agree with the
/// remote (at most 4 rounds); records every HEAD seen in `seen`.
fn converge(ms: &[&Machine], seen: &mut Vec<(usize, String)>) {
    for _round in 0..4 {
        for (i, m) in ms.iter().enumerate() {
            ok(&m.run(&["memories", "sync"]));
            if m.status()["sync"]["reconcile_pending"] == true {
                let out = ok(&m.run(&["memories", "consolidate", "--force"]));
                assert!(out.contains("consolidated"), "{out}");
            }
            seen.extend(m.head().map(|h| (i, h)));
        }
        let heads: BTreeSet<Option<String>> = ms.iter().map(|m| m.head()).collect();
        let clean = ms.iter().all(|m| {
            let s = m.status();
            s["sync"]["ahead"] == 0 && s["sync"]["behind"] == 0
        });
        if heads.len() == 1 && clean {
            return;
        }
    }
    panic!("the machines did not converge");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_machines_consolidate_concurrently_and_end_with_the_union() {
    let mock = Mock::default();
    let base = start(mock.clone()).await;
    let d = tempfile::tempdir().unwrap();
    let remote = bare(&d.path().join("remote.git"));
    let a = Machine::new(d.path(), "laptop");
    let b = Machine::new(d.path(), "desktop");
    for m in [&a, &b] {
        m.configure(&base, json!({"sync": {"remote": remote}}));
    }
    a.extract(&["a-001", "a-002"]).await;
    b.extract(&["b-001"]).await;

    // Both consolidate at the same moment: each pulls an empty remote, commits, pushes.
    let (mut ca, mut cb) = (
        a.cmd(&["memories", "consolidate", "--force", "--json"]),
        b.cmd(&["memories", "consolidate", "--force", "--json"]),
    );
    for c in [&mut ca, &mut cb] {
        c.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
    }
    let (pa, pb) = (ca.spawn().unwrap(), cb.spawn().unwrap());
    let (oa, ob) = (
        pa.wait_with_output().unwrap(),
        pb.wait_with_output().unwrap(),
    );
    for o in [&oa, &ob] {
        let v: Value = serde_json::from_str(&ok(o)).unwrap();
        assert_eq!(v["status"], "consolidated", "{v}");
    }
    let mut seen: Vec<(usize, String)> = vec![(0, a.head().unwrap()), (1, b.head().unwrap())];
    converge(&[&a, &b], &mut seen);

    // The union of the evidence is in both folders and on the remote.
    let (ma, mb) = (a.machine(), b.machine());
    assert_ne!(ma, mb);
    for m in [&a, &b] {
        let files = m.files();
        let count = |dir: &str| {
            files
                .iter()
                .filter(|f| f.starts_with(&format!("rollout_summaries/{dir}/")))
                .count()
        };
        assert_eq!(count(&ma), 2, "{files:?}");
        assert_eq!(count(&mb), 1, "{files:?}");
        assert!(
            files.contains(&format!("raw_memories/{ma}.md")),
            "{files:?}"
        );
        assert!(
            files.contains(&format!("raw_memories/{mb}.md")),
            "{files:?}"
        );
        assert!(!files.contains("raw_memories.md"), "{files:?}");
        let raw =
            std::fs::read_to_string(m.folder().join(format!("raw_memories/{ma}.md"))).unwrap();
        assert!(raw.contains("a-002"), "{raw}");
    }
    let listed = git(&["--git-dir", &remote, "ls-tree", "-r", "--name-only", "main"]);
    assert_eq!(
        listed
            .lines()
            .filter(|l| l.starts_with("rollout_summaries/"))
            .count(),
        3,
        "{listed}"
    );
    // History is never rewritten: every HEAD either machine had is an ancestor of the end.
    let end = a.head().unwrap();
    for (i, h) in &seen {
        let m = if *i == 0 { &a } else { &b };
        assert!(ancestor(&m.folder(), h, &end), "{h} was dropped");
    }

    // A diverged history, deterministically: A consolidates new evidence while its remote
    // is unreachable (the commit stays local), B consolidates and pushes meanwhile.
    a.configure(
        &base,
        json!({"sync": {"remote": d.path().join("nowhere.git").to_str().unwrap()}}),
    );
    a.extract(&["a-003"]).await;
    let out = ok(&a.run(&["memories", "consolidate", "--force"]));
    assert!(out.contains("consolidated"), "{out}");
    let a_local = a.head().unwrap();
    let st = a.status();
    let err = st["sync"]["last_error"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(err.contains("memory sync: git"), "{st}");
    let failed = a.run(&["memories", "sync"]);
    assert!(!failed.status.success());
    let msg = String::from_utf8_lossy(&failed.stderr);
    assert!(msg.contains("nothing was lost"), "{msg}");
    assert_eq!(a.head().unwrap(), a_local, "the local commit stays");
    b.extract(&["b-002"]).await;
    ok(&b.run(&["memories", "consolidate", "--force"]));
    a.configure(&base, json!({"sync": {"remote": remote}}));
    let out = ok(&a.run(&["memories", "sync", "--json"]));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["pulled"]["kind"], "merged", "{v}");
    assert_eq!(v["reconcile_pending"], true, "{v}");
    let before = mock.phase2.lock().unwrap().len();
    let out = ok(&a.run(&["memories", "consolidate", "--force"]));
    assert!(out.contains("consolidated"), "{out}");
    let reqs = mock.phase2.lock().unwrap()[before..].to_vec();
    assert!(reqs[0].contains("RECONCILE"), "the reconcile run says so");
    assert!(
        reqs[0].contains("a-003"),
        "the evidence the remote version had not seen is in the task"
    );
    let mut seen2 = vec![(0, a_local.clone()), (1, b.head().unwrap())];
    converge(&[&a, &b], &mut seen2);
    let end = a.head().unwrap();
    assert!(ancestor(&a.folder(), &a_local, &end));
    for m in [&a, &b] {
        let files = m.files();
        assert_eq!(
            files
                .iter()
                .filter(|f| f.starts_with("rollout_summaries/"))
                .count(),
            5,
            "{files:?}"
        );
        assert!(m.status()["sync"]["last_error"].is_null());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusing_remote_and_injected_urls_lose_nothing() {
    let mock = Mock::default();
    let base = start(mock.clone()).await;
    let d = tempfile::tempdir().unwrap();
    let refusing = d.path().join("refusing.git");
    let url = bare(&refusing);
    let hook = refusing.join("hooks").join("pre-receive");
    std::fs::write(
        &hook,
        "#!/bin/sh\necho 'push refused by policy' >&2\nexit 1\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let a = Machine::new(d.path(), "a");
    a.configure(&base, json!({"sync": {"remote": url}}));
    a.extract(&["r-001"]).await;
    let out = ok(&a.run(&["memories", "consolidate", "--force"]));
    assert!(
        out.contains("consolidated"),
        "a refused push does not fail the consolidation: {out}"
    );
    let head = a.head().unwrap();
    let st = a.status();
    assert!(
        st["sync"]["last_error"].as_str().is_some_and(
            |e| e.contains("pre-receive hook declined") || e.contains("push refused by policy")
        ),
        "{st}"
    );
    assert_eq!(st["sync"]["ahead"], 1, "{st}");
    let text = ok(&a.run(&["memories", "status"]));
    assert!(
        text.contains("1 ahead") && text.contains("LAST ERROR"),
        "{text}"
    );
    let o = a.run(&["memories", "sync"]);
    assert!(!o.status.success());
    assert_eq!(a.head().unwrap(), head);
    assert!(
        git(&["--git-dir", &url, "for-each-ref"]).trim().is_empty(),
        "nothing reached the refusing remote"
    );

    // URLs that would make git run a command: refused before git runs, nothing changes.
    let pwned = d.path().join("pwned");
    for evil in [
        format!("--upload-pack=touch {}", pwned.display()),
        format!("ext::sh -c touch% {}", pwned.display()),
    ] {
        std::fs::write(
            a.home.join(CONFIG_FILE),
            json!({"memories": {"sync": {"remote": evil}}}).to_string(),
        )
        .unwrap();
        let o = a.run(&["memories", "sync"]);
        assert!(!o.status.success());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("memories.sync.remote"), "{err}");
        assert!(!pwned.exists(), "{evil} ran a command");
        assert_eq!(a.head().unwrap(), head);
    }
    // The same rule holds when git is reached without the config check.
    let folder = codex_free_memory::folder::MemoryFolder::at(&a.folder());
    let e = codex_free_memory::sync::pull(
        &folder,
        &a.home,
        &format!("--upload-pack=touch {}", pwned.display()),
        &codex_free_memory::budget::ArtifactBudget::default(),
    )
    .await
    .unwrap_err();
    assert!(e.to_string().contains("starts with '-'"), "{e}");
    assert!(!pwned.exists());
    // The config check names the key.
    let e =
        Config::parse(&json!({"memories": {"sync": {"remote": "fd::3"}}}).to_string()).unwrap_err();
    assert!(e.to_string().contains("memories.sync.remote"), "{e}");
}

/// A remote someone else can push to is untrusted input: a planted key, a bloated
/// MEMORY.md, or one over this user's own (lowered) budget is not taken by `memories sync`;
/// the folder, its HEAD and the pending-reconcile state stay as they were.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_planting_secrets_or_bloat_changes_nothing() {
    let mock = Mock::default();
    let base = start(mock.clone()).await;
    let d = tempfile::tempdir().unwrap();
    let url = bare(&d.path().join("shared.git"));
    let a = Machine::new(d.path(), "a");
    a.configure(&base, json!({"sync": {"remote": url}}));
    a.extract(&["r-001"]).await;
    ok(&a.run(&["memories", "consolidate", "--force"]));
    let head = a.head().unwrap();
    let memory = std::fs::read_to_string(a.folder().join("MEMORY.md")).unwrap();
    let evil = d.path().join("evil");
    git(&[
        "clone",
        "-q",
        "--branch",
        "main",
        &url,
        evil.to_str().unwrap(),
    ]);
    let key = format!("sk-proj-{}", "Q7xZ9kLm2PvR4tYw8NbC6dFh3JsG5".repeat(2));
    let cases = [
        (
            "a planted key",
            format!("{memory}- Deploy key: {key}\n"),
            None,
        ),
        (
            "a bloated MEMORY.md",
            format!("{memory}{}", "- Old note about the build.\n".repeat(20_000)),
            None,
        ),
        (
            "over the user's own budget",
            format!(
                "{memory}{}",
                (0..40)
                    .map(|i| format!("- Rule {i}: keep it short.\n"))
                    .collect::<String>()
            ),
            Some(memory.lines().count() + 10),
        ),
    ];
    for (what, text, max_lines) in cases {
        let mut extra = json!({"sync": {"remote": url}});
        if let Some(n) = max_lines {
            extra["memory_md_max_lines"] = json!(n);
        }
        a.configure(&base, extra);
        std::fs::write(evil.join("MEMORY.md"), &text).unwrap();
        git(&[
            "-C",
            evil.to_str().unwrap(),
            "-c",
            "user.name=x",
            "-c",
            "user.email=x@x",
            "commit",
            "-q",
            "-am",
            what,
        ]);
        git(&[
            "-C",
            evil.to_str().unwrap(),
            "push",
            "-q",
            "origin",
            "HEAD:main",
        ]);
        let worktree = || {
            a.files()
                .into_iter()
                .map(|f| (std::fs::read(a.folder().join(&f)).unwrap(), f))
                .collect::<Vec<_>>()
        };
        let before = worktree();
        let o = a.run(&["memories", "sync"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{what}: the sync succeeded");
        assert!(err.contains("write gate"), "{what}: {err}");
        assert_eq!(a.head().unwrap(), head, "{what}: HEAD moved");
        assert!(worktree() == before, "{what}: the folder changed");
        let st = a.status();
        assert_eq!(st["sync"]["reconcile_pending"], false, "{what}: {st}");
        assert!(
            !std::fs::read_to_string(a.folder().join("MEMORY.md"))
                .unwrap()
                .contains(&key)
        );
        // The attacker's commit is undone on the remote side too, for the next case.
        git(&[
            "-C",
            evil.to_str().unwrap(),
            "reset",
            "-q",
            "--hard",
            "HEAD~1",
        ]);
        git(&[
            "-C",
            evil.to_str().unwrap(),
            "push",
            "-q",
            "-f",
            "origin",
            "HEAD",
        ]);
    }
}

/// The uid/gid of an unprivileged user when this test runs as root (root ignores file
/// permissions, so an unwritable home can only be tested as someone else).
fn unprivileged() -> Option<Vec<String>> {
    let uid = std::process::Command::new("id").arg("-u").output().ok()?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return Some(Vec::new());
    }
    let ok = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "true"])
        .status()
        .ok()?
        .success();
    ok.then(|| {
        [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
        ]
        .map(String::from)
        .to_vec()
    })
}

/// Snapshot of every file under `dir`: path → bytes.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    fn walk(d: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
        let mut es: Vec<_> = std::fs::read_dir(d).unwrap().flatten().collect();
        es.sort_by_key(|e| e.path());
        for e in es {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap_or_default()));
            }
        }
    }
    walk(dir, &mut out);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_home_gets_a_clear_error_and_nothing_changes() {
    let Some(prefix) = unprivileged() else {
        eprintln!("SKIPPED: running as root and setpriv cannot drop to uid 65534 here");
        return;
    };
    let mock = Mock::default();
    let base = start(mock.clone()).await;
    let d = tempfile::tempdir().unwrap();
    let url = bare(&d.path().join("remote.git"));
    let a = Machine::new(d.path(), "ro");
    a.configure(&base, json!({"sync": {"remote": url}}));
    a.extract(&["r-001"]).await;
    ok(&a.run(&["memories", "consolidate", "--force"]));
    // Readable by everyone, writable by the owner (root) only.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    // Readable by everyone (so the failure is the write, not the read), writable by root.
    std::process::Command::new("chmod")
        .args(["-R", "a+rX"])
        .arg(&a.home)
        .status()
        .unwrap();
    let before = snapshot(&a.home);
    let run_as = |args: &[&str]| -> Output {
        let mut argv: Vec<String> = prefix.clone();
        argv.push(crate::support::bin().to_string_lossy().into_owned());
        argv.extend(args.iter().map(|s| s.to_string()));
        let mut c = std::process::Command::new(&argv[0]);
        c.args(&argv[1..])
            .env("HOME", &a.root)
            .env("CODEX_FREE_HOME", &a.home)
            .env("CODEX_HOME", a.root.join("codex"))
            .env("CLAUDE_CONFIG_DIR", a.root.join("claude"))
            .env("PI_CODING_AGENT_DIR", a.root.join("pi"))
            .env("GIT_CONFIG_GLOBAL", "/dev/null");
        c.output().unwrap()
    };
    for args in [
        &["memories", "sync"][..],
        &["memories", "consolidate", "--force"][..],
        &["memories", "tidy", "--apply"][..],
    ] {
        let o = run_as(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success(),
            "{args:?} succeeded on a read-only home: {err}"
        );
        // Without RUST_BACKTRACE the message is all there is: `Error: …` (no backtrace
        // frame to lend the word).
        assert!(
            err.to_lowercase().contains("error")
                && (err.contains(&a.home.display().to_string())
                    || err.contains("readonly")
                    || err.contains("ermission")),
            "{args:?}: {err}"
        );
        eprintln!("read-only {args:?}: {}", err.trim());
        assert!(!err.contains("panicked"), "{err}");
        assert_eq!(snapshot(&a.home), before, "{args:?} changed the home");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn review_holds_a_consolidation_until_accepted() {
    let mock = Mock::default();
    let base = start(mock.clone()).await;
    let d = tempfile::tempdir().unwrap();
    let a = Machine::new(d.path(), "rv");
    a.configure(&base, json!({}));
    a.extract(&["r-001"]).await;
    ok(&a.run(&["memories", "consolidate", "--force"]));
    let first = std::fs::read_to_string(a.folder().join("memory_summary.md")).unwrap();
    assert!(first.contains("r-001"));
    // Review on: the next consolidation is held; sessions keep the accepted summary.
    a.configure(&base, json!({"review": true}));
    a.extract(&["r-002"]).await;
    ok(&a.run(&["memories", "consolidate", "--force"]));
    let on_disk = std::fs::read_to_string(a.folder().join("memory_summary.md")).unwrap();
    assert!(on_disk.contains("r-002"), "{on_disk}");
    let cfg = Config::load(&a.home.join(CONFIG_FILE)).unwrap().config;
    let served = codex_free_memory::readpath::summary_for_instructions(&a.home, &cfg).unwrap();
    assert!(
        !served.contains("r-002") && served.contains("r-001"),
        "{served}"
    );
    let st = a.status();
    assert_eq!(st["review_pending"], true, "{st}");
    let show = ok(&a.run(&["memories", "review"]));
    assert!(
        show.contains("waits for review") && show.contains("r-002"),
        "{show}"
    );
    let v: Value = serde_json::from_str(&ok(&a.run(&["memories", "review", "--json"]))).unwrap();
    assert_eq!(v["pending"], true);
    assert!(
        v["changes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["path"] == "memory_summary.md")
    );
    // Accept: the new summary is served.
    let out = ok(&a.run(&["memories", "review", "accept"]));
    assert!(out.contains("accepted"), "{out}");
    let served = codex_free_memory::readpath::summary_for_instructions(&a.home, &cfg).unwrap();
    assert!(served.contains("r-002"), "{served}");
    let o = a.run(&["memories", "review", "accept"]);
    assert!(!o.status.success(), "nothing pending any more");
    // Another held one, rejected: the accepted state comes back as a new commit.
    a.extract(&["r-003"]).await;
    ok(&a.run(&["memories", "consolidate", "--force"]));
    let held = a.head().unwrap();
    let out = ok(&a.run(&["memories", "review", "reject"]));
    assert!(out.contains("rejected"), "{out}");
    let now = std::fs::read_to_string(a.folder().join("memory_summary.md")).unwrap();
    assert!(!now.contains("r-003") && now.contains("r-002"), "{now}");
    assert!(
        ancestor(&a.folder(), &held, &a.head().unwrap()),
        "history kept"
    );
    let v: Value = serde_json::from_str(&ok(&a.run(&["memories", "review", "--json"]))).unwrap();
    assert_eq!(v["pending"], false);
}

/// `memories tidy` on the state home keeps the summary in the shape the read path serves
/// (all four sections, even when one is empty); a problem the summary already had is not
/// the tidy's to refuse.
#[test]
fn tidy_on_the_state_home_keeps_the_summary_servable() {
    let d = tempfile::tempdir().unwrap();
    let a = Machine::new(d.path(), "t");
    let (f, _) = codex_free_memory::folder::MemoryFolder::open_or_init(&a.home).unwrap();
    let memory: String = (1..=160)
        .map(|i| format!("- 2026-11-2{}: finished migration step {i}\n", i % 10))
        .collect();
    std::fs::write(
        f.root().join("MEMORY.md"),
        format!("# Memory\n\n- always pnpm\n{memory}"),
    )
    .unwrap();
    // Empty sections: an older tidy dropped their headings, and no new session could be
    // served the summary afterwards.
    std::fs::write(
        f.root().join("memory_summary.md"),
        "v1\n## User Profile\n\n## User preferences\n- always pnpm\n\n## General Tips\n\n## What's in Memory\n",
    )
    .unwrap();
    f.commit_all(&codex_free_memory::gate::approve_as_is(&f).unwrap(), "seed")
        .unwrap();
    let out = ok(&a.run(&["memories", "tidy", "--apply"]));
    assert!(out.contains("Tidy applied and verified"), "{out}");
    let summary = std::fs::read_to_string(f.root().join("memory_summary.md")).unwrap();
    assert_eq!(
        codex_free_memory::gate::summary_shape_problems(&summary),
        Vec::<String>::new(),
        "{summary}"
    );
    // A summary that was already malformed: the tidy of MEMORY.md still goes ahead.
    std::fs::write(
        f.root().join("memory_summary.md"),
        "v1\n- no sections at all\n",
    )
    .unwrap();
    std::fs::write(
        f.root().join("MEMORY.md"),
        format!("# Memory\n\n- always pnpm\n{memory}"),
    )
    .unwrap();
    f.commit_all(
        &codex_free_memory::gate::approve_as_is(&f).unwrap(),
        "again",
    )
    .unwrap();
    let out = ok(&a.run(&["memories", "tidy", "--apply"]));
    assert!(out.contains("Tidy applied and verified"), "{out}");
}

/// Commit `files` (path, bytes) and `links` (path, target) into a new history of the bare
/// repository `url`'s `main`, as an attacker with push access would.
fn push_hostile(d: &Path, url: &str, files: &[(&str, Vec<u8>)], links: &[(&str, &Path)]) {
    let w = d.join("hostile-work");
    git(&["init", "-q", "-b", "main", w.to_str().unwrap()]);
    for (p, bytes) in files {
        let f = w.join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, bytes).unwrap();
    }
    for (p, target) in links {
        let f = w.join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, f).unwrap();
    }
    let w = w.to_str().unwrap();
    git(&["-C", w, "add", "-A"]);
    git(&[
        "-C",
        w,
        "-c",
        "user.name=x",
        "-c",
        "user.email=x@x",
        "commit",
        "-q",
        "-m",
        "hostile",
    ]);
    git(&["-C", w, "push", "-q", "-f", url, "HEAD:main"]);
}

/// Issue 27, finding 6: a hostile remote met on the *first* pull (no HEAD yet) used to be
/// adopted although the gate said "not taken": HEAD moved to its commit and its files
/// stayed — links to `/etc/passwd` and `~/.ssh/id_rsa`, a 30 MB file. Now a pull whose
/// result fails the gate leaves HEAD, index and working tree exactly as before: links,
/// oversized files and a planted key are each refused, nothing is checked out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_remote_on_the_first_pull_is_not_adopted() {
    let d = tempfile::tempdir().unwrap();
    let a = Machine::new(d.path(), "a");
    let key_file = a.root.join(".ssh").join("id_rsa");
    std::fs::create_dir_all(key_file.parent().unwrap()).unwrap();
    std::fs::write(&key_file, "-----BEGIN OPENSSH PRIVATE KEY-----\nfake\n").unwrap();
    let memory = b"# Memory\n\n- always use pnpm\n".to_vec();
    // A summary in the shape the gate wants, so only what this test plants can fail it.
    let summary = b"v1\n## User Profile\n- uses pnpm\n## User preferences\n\n## General Tips\n\n## What's in Memory\n".to_vec();
    let key = format!("sk-proj-{}", "Q7xZ9kLm2PvR4tYw8NbC6dFh3JsG5".repeat(2));
    // (case, files to commit, symbolic links to plant, what the refusal names)
    type Case<'a> = (
        &'a str,
        Vec<(&'a str, Vec<u8>)>,
        Vec<(&'a str, &'a Path)>,
        &'a str,
    );
    let cases: [Case; 3] = [
        (
            "links out",
            vec![("MEMORY.md", memory.clone())],
            vec![
                ("passwd", Path::new("/etc/passwd")),
                ("skills/id_rsa", key_file.as_path()),
            ],
            "symbolic link",
        ),
        (
            "a 30 MB file",
            vec![
                ("MEMORY.md", memory.clone()),
                ("rollout_summaries/x/big.md", vec![b'a'; 30 << 20]),
            ],
            vec![],
            "big.md",
        ),
        (
            "a planted key, with a link",
            vec![(
                "MEMORY.md",
                format!("# Memory\n\n- Deploy key: {key}\n").into_bytes(),
            )],
            vec![("passwd", Path::new("/etc/passwd"))],
            "MEMORY.md",
        ),
    ];
    for (i, (what, mut files, links, named)) in cases.into_iter().enumerate() {
        files.push(("memory_summary.md", summary.clone()));
        let url = bare(&d.path().join(format!("hostile-{i}.git")));
        std::fs::remove_dir_all(d.path().join("hostile-work")).ok();
        push_hostile(d.path(), &url, &files, &links);
        std::fs::write(
            a.home.join(CONFIG_FILE),
            json!({"memories": {"sync": {"remote": url}}}).to_string(),
        )
        .unwrap();
        let o = a.run(&["memories", "sync"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{what}: the sync succeeded");
        assert!(
            err.contains("write gate") && err.contains(named),
            "{what}: {err}"
        );
        // HEAD: still unborn; no branch was created.
        assert_eq!(a.head(), None, "{what}: HEAD moved");
        let repo = git2::Repository::open(a.folder()).unwrap();
        assert!(repo.find_reference("refs/heads/main").is_err(), "{what}");
        // Index: empty.
        assert_eq!(repo.index().unwrap().len(), 0, "{what}: index");
        // Working tree: nothing but `.git`, no link anywhere.
        let left: Vec<String> = std::fs::read_dir(a.folder())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n != ".git")
            .collect();
        assert!(left.is_empty(), "{what}: left in the folder: {left:?}");
        assert_eq!(a.status()["sync"]["reconcile_pending"], false, "{what}");
    }
}

/// Issue 27, finding 11: the remote check was a denylist (`ext::`, `fd::`), so `evil::x`
/// made git run a `git-remote-evil` helper found on `PATH`. Only https, ssh, `git@host:path`
/// and local paths are taken now; the helper never runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_allowed_remote_forms_reach_git() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let a = Machine::new(d.path(), "a");
    let bin = d.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let pwned = d.path().join("pwned");
    for helper in ["evil", "x"] {
        let h = bin.join(format!("git-remote-{helper}"));
        std::fs::write(
            &h,
            format!("#!/bin/sh\ntouch {}\nexit 1\n", pwned.display()),
        )
        .unwrap();
        std::fs::set_permissions(&h, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for evil in [
        "evil::x",
        "x::/srv/memory.git",
        "http://example.com/memory.git",
        "git://example.com/memory.git",
        "ssh://-oProxyCommand=touch/x",
        "relative/memory.git",
    ] {
        std::fs::write(
            a.home.join(CONFIG_FILE),
            json!({"memories": {"sync": {"remote": evil}}}).to_string(),
        )
        .unwrap();
        let o = a
            .cmd(&["memories", "sync"])
            .env("PATH", &path)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{evil}: {err}");
        assert!(
            err.contains("memories.sync.remote") && err.contains("https://"),
            "{evil}: the error names the key and the allowed forms: {err}"
        );
        assert!(!pwned.exists(), "{evil} ran a remote helper");
    }
    // A local path still syncs.
    let url = bare(&d.path().join("ok.git"));
    std::fs::write(
        a.home.join(CONFIG_FILE),
        json!({"memories": {"sync": {"remote": url}}}).to_string(),
    )
    .unwrap();
    ok(&a
        .cmd(&["memories", "sync"])
        .env("PATH", &path)
        .output()
        .unwrap());
    assert!(!pwned.exists());
}
