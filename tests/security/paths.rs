//! Attacks on the protected directories over the real binary (`serve --stdio` and
//! `serve --http`), replayed as an agent would try them: the state home inside the project
//! (`--project $HOME`), inside the access root (`--access-root` above `$HOME`), and under
//! `/tmp` beside the project; by relative path, absolute path, `..`, symlink, the access
//! root itself, and through every tool that takes a path. Each must be refused with the
//! rule named, listings and searches must leave the protected directories out, the token
//! and the other agent's credentials must never appear in a tool result or the
//! instructions, and every protected file must be byte-identical afterwards.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::{self, Client, HttpServer, git};

/// The bearer token planted in the state home (>= 32 chars, so the HTTP server keeps it).
const TOKEN: &str = "SECRETTOKEN0123456789abcdefghijklmnopqrstuvwxyz";
/// A regex that matches [`TOKEN`] without containing it (grep echoes its pattern).
const TOKEN_RE: &str = "SECRET[T]OKEN[0-9]+";
/// Claude Code's planted credentials.
const CREDS: &str = "CLAUDE-CREDENTIALS-7f3a";
/// The escalation every write attempt tries.
const UNRESTRICTED: &str = r#"{"exec":{"mode":"unrestricted"}}"#;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Transport {
    Stdio,
    Http,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    /// `$HOME/.codex-free`.
    StateInHome,
    /// `<tmp>/state`, a sibling of the user's home and the projects.
    StateUnderTmp,
}

/// A fake machine in a temp dir: `t/u` is `$HOME` (with `.claude`, `.codex`, `.pi/agent`
/// and, in [`Layout::StateInHome`], the state home `.codex-free`), `t/proj` a project.
struct Machine {
    _tmp: tempfile::TempDir,
    t: PathBuf,
    user: PathBuf,
    state: PathBuf,
    /// Every protected file planted, with its bytes.
    planted: Vec<(PathBuf, Vec<u8>)>,
}

fn write(p: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, bytes).unwrap();
}

impl Machine {
    fn new(layout: Layout) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let t = tmp.path().canonicalize().unwrap();
        let user = t.join("u");
        let state = match layout {
            Layout::StateInHome => user.join(".codex-free"),
            Layout::StateUnderTmp => t.join("state"),
        };
        let mut m = Machine {
            _tmp: tmp,
            t: t.clone(),
            user: user.clone(),
            state: state.clone(),
            planted: Vec::new(),
        };
        m.plant(&state.join("server-token"), format!("{TOKEN}\n").as_bytes());
        m.plant(
            &state.join("codex.config.json"),
            br#"{"exec":{"mode":"allowlist"}}"#,
        );
        m.plant(
            &state.join("conversation-projects/0123/abcd.json"),
            br#"{"version":1,"accessRoot":"/x","projectRoot":"/x/y","boundAt":"2025-01-01T00:00:00Z"}"#,
        );
        m.plant(&user.join(".claude/.credentials.json"), CREDS.as_bytes());
        m.plant(&user.join(".codex/auth.json"), CREDS.as_bytes());
        m.plant(&user.join(".pi/agent/auth.json"), CREDS.as_bytes());
        // Ordinary files, so the searches have something to find.
        write(
            &user.join("notes.txt"),
            b"a SECRET note that is not the token\n",
        );
        write(&t.join("proj/src/main.rs"), b"fn main() {} // SECRET\n");
        std::fs::create_dir_all(t.join("proj/.git")).unwrap();
        m
    }

    fn plant(&mut self, p: &Path, bytes: &[u8]) {
        write(p, bytes);
        self.planted.push((p.to_path_buf(), bytes.to_vec()));
    }

    /// `serve` with this machine's environment: `HOME`, the state home, no agent-home
    /// variables (so their defaults under `HOME` apply).
    fn command(&self, transport: Transport, args: &[&str]) -> tokio::process::Command {
        let mut c = tokio::process::Command::new(support::bin());
        c.env("CODEX_FREE_HOME", &self.state)
            .env("HOME", &self.user)
            .env("CODEX_FREE_LOG", "warn")
            .env_remove("CODEX_HOME")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("PI_CODING_AGENT_DIR")
            .current_dir(&self.t)
            .arg("serve");
        match transport {
            Transport::Stdio => c.arg("--stdio"),
            Transport::Http => c.args(["--http", "--port", "0"]),
        };
        c.args(args);
        c
    }

    async fn connect(&self, transport: Transport, args: &[&str]) -> Probe {
        let cmd = self.command(transport, args);
        let (client, http) = match transport {
            Transport::Stdio => (support::stdio_client(cmd).await, None),
            Transport::Http => {
                let srv = support::http_server(cmd, &self.state).await;
                (srv.client().await, Some(srv))
            }
        };
        let p = Probe {
            client,
            _http: http,
            session: None,
            label: format!("{transport:?} {args:?}"),
        };
        let instructions = p
            .client
            .peer_info()
            .and_then(|i| i.instructions.clone())
            .unwrap_or_default();
        no_leak(&instructions, "instructions");
        p
    }

    /// Every planted protected file still holds exactly its bytes.
    fn assert_untouched(&self) {
        for (p, bytes) in &self.planted {
            assert_eq!(
                &std::fs::read(p).unwrap(),
                bytes,
                "{} was changed",
                p.display()
            );
        }
    }
}

fn no_leak(text: &str, what: &str) {
    assert!(
        !text.contains(TOKEN) && !text.contains(CREDS),
        "{what} leaked a secret: {text}"
    );
}

/// A connected client (and its HTTP server, kept alive), optionally with a conversation.
struct Probe {
    client: Client,
    _http: Option<HttpServer>,
    session: Option<String>,
    label: String,
}

impl Probe {
    /// Call `tool`; assert that no secret is in the result.
    async fn call(&self, tool: &str, args: Value) -> (String, bool) {
        let (t, err) =
            support::call_meta(&self.client, tool, args.clone(), self.session.as_deref()).await;
        no_leak(&t, &format!("{} {tool} {args}", self.label));
        (t, err)
    }

    /// Call `tool` and expect `error[code]` whose message names `path`.
    async fn refused(&self, code: &str, tool: &str, args: Value, path: &str) {
        let (t, err) = self.call(tool, args.clone()).await;
        assert!(
            err && t.starts_with(&format!("error[{code}]")),
            "{}: {tool} {args} should be refused with {code}: {t}",
            self.label
        );
        assert!(
            t.contains(path),
            "{tool} {args}: the error names {path}: {t}"
        );
        if code == "path_protected" {
            assert!(t.contains("protected"), "the error names the rule: {t}");
        }
    }

    async fn ok(&self, tool: &str, args: Value) -> String {
        let (t, err) = self.call(tool, args.clone()).await;
        assert!(!err, "{}: {tool} {args} failed: {t}", self.label);
        t
    }

    async fn close(self) {
        self.client.cancel().await.unwrap();
    }
}

/// Names that must not show up in a listing or search of a root that contains them.
const HIDDEN: [&str; 6] = [
    ".codex-free",
    "server-token",
    "conversation-projects",
    ".credentials.json",
    ".claude",
    "auth.json",
];

fn assert_hidden(text: &str, what: &str) {
    for h in HIDDEN {
        assert!(!text.contains(h), "{what} shows {h}: {text}");
    }
}

/// Every read, write, list and search of the protected directories inside a project whose
/// root is the user's home (which holds the state home and the agent homes). `rel` is the
/// state home relative to the project root.
async fn attack_project_containing_state(p: &Probe, m: &Machine, rel: &str) {
    let token = format!("{rel}/server-token");
    let config = format!("{rel}/codex.config.json");
    let abs_token = m.state.join("server-token");
    let abs_config = m.state.join("codex.config.json");
    for path in [
        token.as_str(),
        &format!("./{token}"),
        &format!("notes.txt/../{token}"),
        &format!("{rel}/../{token}"),
        abs_token.to_str().unwrap(),
        &config,
        &format!("{rel}/conversation-projects/0123/abcd.json"),
        "link/server-token",
        "tok",
        ".claude/.credentials.json",
        ".codex/auth.json",
        ".pi/agent/auth.json",
    ] {
        p.refused("path_protected", "read_file", json!({ "path": path }), path)
            .await;
    }
    for path in [
        config.as_str(),
        abs_config.to_str().unwrap(),
        "link/codex.config.json",
        &format!("{rel}/new/codex.config.json"),
        ".claude/settings.json",
    ] {
        p.refused(
            "path_protected",
            "write_file",
            json!({ "path": path, "content": UNRESTRICTED }),
            path,
        )
        .await;
    }
    let patch = format!(
        "*** Begin Patch\n*** Update File: {config}\n@@\n-{{\"exec\":{{\"mode\":\"allowlist\"}}}}\n+{UNRESTRICTED}\n*** End Patch\n"
    );
    p.refused(
        "path_protected",
        "apply_patch",
        json!({ "input": patch }),
        &config,
    )
    .await;
    let patch =
        format!("*** Begin Patch\n*** Add File: link/evil.json\n+{UNRESTRICTED}\n*** End Patch\n");
    p.refused(
        "path_protected",
        "apply_patch",
        json!({ "input": patch }),
        "link/evil.json",
    )
    .await;
    // A patch that moves an ordinary file into the state home.
    let patch = format!(
        "*** Begin Patch\n*** Update File: notes.txt\n*** Move to: {config}\n@@\n-a SECRET note that is not the token\n+{UNRESTRICTED}\n*** End Patch\n"
    );
    p.refused(
        "path_protected",
        "apply_patch",
        json!({ "input": patch }),
        &config,
    )
    .await;
    assert!(
        m.user.join("notes.txt").exists(),
        "the refused patch kept notes.txt"
    );
    for (tool, args) in [
        ("list_directory", json!({ "path": rel })),
        ("list_directory", json!({ "path": "link" })),
        ("tree", json!({ "path": rel })),
        ("glob", json!({ "pattern": "*", "path": rel })),
        ("grep", json!({ "pattern": TOKEN_RE, "path": rel })),
        ("grep", json!({ "pattern": TOKEN_RE, "path": "tok" })),
        ("exec_command", json!({ "cmd": "ls", "workdir": rel })),
        ("exec_command", json!({ "cmd": "ls", "workdir": "link" })),
    ] {
        let shown = args["path"]
            .as_str()
            .or(args["workdir"].as_str())
            .unwrap()
            .to_string();
        p.refused("path_protected", tool, args, &shown).await;
    }
    // Listings and searches of the whole project leave the protected directories out.
    let ls = p.ok("list_directory", json!({})).await;
    assert!(ls.contains("notes.txt"), "{ls}");
    assert_hidden(&ls, "list_directory");
    let tree = p.ok("tree", json!({ "depth": 5 })).await;
    assert!(tree.contains("notes.txt"), "{tree}");
    assert_hidden(&tree, "tree");
    let glob = p.ok("glob", json!({ "pattern": "**/*" })).await;
    assert!(glob.contains("notes.txt"), "{glob}");
    assert_hidden(&glob, "glob");
    let grep = p.ok("grep", json!({ "pattern": TOKEN_RE })).await;
    assert!(grep.starts_with("(no matches"), "{grep}");
    let grep = p
        .ok("grep", json!({ "pattern": "SECRET|CLAUDE|exec" }))
        .await;
    assert!(grep.contains("notes.txt:1:"), "{grep}");
    assert_hidden(&grep, "grep");
    // A skill and the project doc that link to the token.
    p.refused("path_protected", "get_project_doc", json!({}), "AGENTS.md")
        .await;
    let skills = p.ok("skills_list", json!({})).await;
    assert!(!skills.contains("evil"), "{skills}");
    let (t, err) = p.call("skills_read", json!({ "name": "evil" })).await;
    assert!(err, "{t}");
    // Git: nothing protected is shown, diffed or committed.
    p.refused("path_protected", "git_diff", json!({ "path": rel }), rel)
        .await;
    p.refused(
        "path_protected",
        "git_log",
        json!({ "path": ".claude" }),
        ".claude",
    )
    .await;
    let (status, err) = p.call("git_status", json!({})).await;
    // Inside the OS sandbox git cannot list a project that contains a protected directory
    // (the sandbox cannot grant listing the folders around it): then every git tool refuses
    // plainly instead of reporting a partial tree as clean.
    let sandbox_blind = err && status.contains("inside the command sandbox");
    if sandbox_blind {
        assert!(status.starts_with("error[refused]"), "{status}");
        let (c, cerr) = p
            .call(
                "git_commit",
                json!({ "message": "everything", "all": true }),
            )
            .await;
        assert!(cerr, "{c}");
    } else {
        assert!(!err, "{status}");
        assert!(status.contains("?? tok"), "{status}");
        p.ok(
            "git_commit",
            json!({ "message": "everything", "all": true }),
        )
        .await;
        p.ok(
            "write_file",
            json!({ "path": "more.txt", "content": "x\n" }),
        )
        .await;
        p.ok("git_commit", json!({ "message": "dot", "paths": ["."] }))
            .await;
    }
    assert_hidden(&status, "git_status");
    let files = git(&m.user, &["ls-files"]);
    if !sandbox_blind {
        assert!(
            files.contains("notes.txt") && files.contains("more.txt"),
            "{files}"
        );
    }
    assert_hidden(&files, "the commits");
    // After all of it the guardrail is still on.
    let (t, err) = p
        .call("exec_command", json!({ "cmd": "bash -c 'echo escalated'" }))
        .await;
    assert!(err && t.starts_with("error[refused]"), "{t}");
}

/// Links an agent could have made with a command: to the state home, to the token, and a
/// skill and an AGENTS.md that are links to the token.
fn plant_links(m: &Machine, root: &Path) {
    std::os::unix::fs::symlink(&m.state, root.join("link")).unwrap();
    std::os::unix::fs::symlink(m.state.join("server-token"), root.join("tok")).unwrap();
    std::fs::create_dir_all(root.join(".agents/skills/evil")).unwrap();
    std::os::unix::fs::symlink(
        m.state.join("server-token"),
        root.join(".agents/skills/evil/SKILL.md"),
    )
    .unwrap();
    std::os::unix::fs::symlink(m.state.join("server-token"), root.join("AGENTS.md")).unwrap();
}

fn git_repo(dir: &Path) {
    git(dir, &["init", "-q"]);
    git(dir, &["config", "user.email", "t@e"]);
    git(dir, &["config", "user.name", "t"]);
    git(dir, &["add", "notes.txt"]);
    git(dir, &["commit", "-qm", "init"]);
}

#[tokio::test]
async fn project_that_is_the_home_keeps_the_state_home_out() {
    for transport in [Transport::Stdio, Transport::Http] {
        let m = Machine::new(Layout::StateInHome);
        plant_links(&m, &m.user);
        git_repo(&m.user);
        let project = m.user.to_str().unwrap().to_string();
        let p = m.connect(transport, &["--project", &project]).await;
        attack_project_containing_state(&p, &m, ".codex-free").await;
        // Single-project mode has no set_project_root to escape with: not even listed.
        let tools = p.client.list_all_tools().await.unwrap();
        assert!(!tools.iter().any(|t| t.name == "set_project_root"));
        p.close().await;
        m.assert_untouched();
    }
}

#[tokio::test]
async fn serving_a_protected_directory_is_refused_at_start() {
    let m = Machine::new(Layout::StateInHome);
    for (flag, dir) in [
        ("--project", m.state.clone()),
        ("--project", m.state.join("conversation-projects")),
        ("--access-root", m.state.clone()),
        ("--project", m.user.join(".claude")),
    ] {
        let out = m
            .command(Transport::Stdio, &[flag, dir.to_str().unwrap()])
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flag} {}: {err}", dir.display());
        assert!(
            err.contains("cannot be a project root") && err.contains("protected"),
            "{err}"
        );
    }
    m.assert_untouched();
}

#[tokio::test]
async fn access_root_above_the_home_never_binds_a_protected_project() {
    for transport in [Transport::Stdio, Transport::Http] {
        let m = Machine::new(Layout::StateInHome);
        plant_links(&m, &m.user);
        git_repo(&m.user);
        std::os::unix::fs::symlink(&m.state, m.t.join("statelink")).unwrap();
        let access = m.t.to_str().unwrap().to_string();
        let mut p = m.connect(transport, &["--access-root", &access]).await;
        p.session = Some("conversation-1".into());
        let state_abs = m.state.to_str().unwrap().to_string();
        for path in [
            "u/.codex-free",
            "u/.codex-free/conversation-projects",
            "proj/../u/.codex-free",
            "./u/./.codex-free",
            &state_abs,
            "statelink",
            "u/link",
            "u/.claude",
            "u/.pi/agent",
        ] {
            p.refused(
                "path_protected",
                "set_project_root",
                json!({ "path": path }),
                path,
            )
            .await;
        }
        for path in [".", "proj/..", &access, "u/.."] {
            p.refused("binding", "set_project_root", json!({ "path": path }), path)
                .await;
        }
        p.refused("binding", "set_project_root", json!({ "path": ".." }), "..")
            .await;
        let listed = p.ok("list_projects", json!({})).await;
        assert!(listed.contains("proj"), "{listed}");
        assert_hidden(&listed, "list_projects");
        // Unbound: every tool fails closed.
        let (t, err) = p.call("read_file", json!({ "path": "u/notes.txt" })).await;
        assert!(err && t.starts_with("error[binding]"), "{t}");
        // The home contains the state home: allowed as a project, with it kept out.
        let t = p.ok("set_project_root", json!({ "path": "u" })).await;
        assert!(t.contains("now works on"), "{t}");
        attack_project_containing_state(&p, &m, ".codex-free").await;
        // Another project beside it: `..` and absolute paths do not reach the state home.
        p.ok("set_project_root", json!({ "path": "proj" })).await;
        p.refused(
            "path_outside_root",
            "read_file",
            json!({ "path": "../u/.codex-free/server-token" }),
            "../u/.codex-free/server-token",
        )
        .await;
        let abs = m.state.join("server-token");
        p.refused(
            "path_protected",
            "read_file",
            json!({ "path": abs.to_str().unwrap() }),
            abs.to_str().unwrap(),
        )
        .await;
        p.refused(
            "path_outside_root",
            "write_file",
            json!({ "path": "../u/.codex-free/codex.config.json", "content": UNRESTRICTED }),
            "../u/.codex-free/codex.config.json",
        )
        .await;
        let glob = p.ok("glob", json!({ "pattern": "**/*" })).await;
        assert!(glob.contains("src/main.rs"), "{glob}");
        // A second conversation has no project.
        p.session = Some("conversation-2".into());
        let (t, err) = p.call("glob", json!({ "pattern": "**/*" })).await;
        assert!(err && t.starts_with("error[binding]"), "{t}");
        p.close().await;
        m.assert_untouched();
    }
}

#[tokio::test]
async fn state_home_under_tmp_beside_the_project() {
    for transport in [Transport::Stdio, Transport::Http] {
        let m = Machine::new(Layout::StateUnderTmp);
        let proj = m.t.join("proj");
        plant_links(&m, &proj);
        let project = proj.to_str().unwrap().to_string();
        let p = m.connect(transport, &["--project", &project]).await;
        let abs_token = m.state.join("server-token");
        let abs_config = m.state.join("codex.config.json");
        for path in [abs_token.to_str().unwrap(), "tok", "link/server-token"] {
            p.refused("path_protected", "read_file", json!({ "path": path }), path)
                .await;
        }
        for path in [abs_config.to_str().unwrap(), "link/codex.config.json"] {
            p.refused(
                "path_protected",
                "write_file",
                json!({ "path": path, "content": UNRESTRICTED }),
                path,
            )
            .await;
        }
        for path in ["../state/server-token", "src/../../state/server-token"] {
            p.refused(
                "path_outside_root",
                "read_file",
                json!({ "path": path }),
                path,
            )
            .await;
        }
        p.refused(
            "path_outside_root",
            "write_file",
            json!({ "path": "../state/codex.config.json", "content": UNRESTRICTED }),
            "../state/codex.config.json",
        )
        .await;
        p.refused(
            "path_protected",
            "list_directory",
            json!({ "path": "link" }),
            "link",
        )
        .await;
        p.refused(
            "path_protected",
            "git_diff",
            json!({ "path": "link/x" }),
            "link/x",
        )
        .await;
        let glob = p.ok("glob", json!({ "pattern": "**/*" })).await;
        assert!(glob.contains("src/main.rs"), "{glob}");
        assert_hidden(&glob, "glob");
        let grep = p.ok("grep", json!({ "pattern": TOKEN_RE })).await;
        assert!(grep.starts_with("(no matches"), "{grep}");
        let (t, err) = p.call("skills_read", json!({ "name": "evil" })).await;
        assert!(err, "{t}");
        p.close().await;

        // Multi-project mode over an access root beside the state home.
        let access = m.t.join("access");
        std::fs::create_dir_all(access.join("p1/.git")).unwrap();
        std::os::unix::fs::symlink(&m.state, access.join("st")).unwrap();
        let access_s = access.to_str().unwrap().to_string();
        let mut p = m.connect(transport, &["--access-root", &access_s]).await;
        p.session = Some("c".into());
        let state_abs = m.state.to_str().unwrap().to_string();
        for (code, path) in [
            ("path_protected", state_abs.as_str()),
            ("path_protected", "st"),
            ("path_protected", "p1/../st"),
            ("binding", "../state"),
            ("binding", "."),
            ("binding", access_s.as_str()),
        ] {
            p.refused(code, "set_project_root", json!({ "path": path }), path)
                .await;
        }
        p.ok("set_project_root", json!({ "path": "p1" })).await;
        p.refused(
            "path_outside_root",
            "read_file",
            json!({ "path": "../st/server-token" }),
            "../st/server-token",
        )
        .await;
        p.close().await;
        m.assert_untouched();
    }
}

#[tokio::test]
async fn new_files_honour_the_umask_and_replaced_files_keep_their_mode() {
    use std::os::unix::fs::PermissionsExt;
    let m = Machine::new(Layout::StateUnderTmp);
    let proj = m.t.join("proj");
    std::fs::write(proj.join("script.sh"), "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(
        proj.join("script.sh"),
        std::fs::Permissions::from_mode(0o750),
    )
    .unwrap();
    let project = proj.to_str().unwrap().to_string();
    // The server inherits the test's umask; set a known one for the spawned process.
    let mut cmd = m.command(Transport::Stdio, &["--project", &project]);
    // SAFETY: umask in the child between fork and exec only changes that child's mask.
    unsafe {
        cmd.pre_exec(|| {
            libc::umask(0o022);
            Ok(())
        });
    }
    let c = support::stdio_client(cmd).await;
    let mode = |p: &str| {
        std::fs::metadata(proj.join(p))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    let (t, err) = support::call(
        &c,
        "write_file",
        json!({ "path": "new/a.txt", "content": "a\n" }),
    )
    .await;
    assert!(!err, "{t}");
    assert_eq!(mode("new/a.txt"), 0o644);
    let patch = "*** Begin Patch\n*** Add File: b.txt\n+b\n*** Update File: script.sh\n@@\n-#!/bin/sh\n+#!/bin/bash\n*** End Patch\n";
    let (t, err) = support::call(&c, "apply_patch", json!({ "input": patch })).await;
    assert!(!err, "{t}");
    assert_eq!(mode("b.txt"), 0o644);
    assert_eq!(mode("script.sh"), 0o750, "replaced files keep their mode");
    let (t, err) = support::call(
        &c,
        "write_file",
        json!({ "path": "script.sh", "content": "#!/bin/sh\necho\n" }),
    )
    .await;
    assert!(!err, "{t}");
    assert_eq!(mode("script.sh"), 0o750);
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn a_project_that_is_the_home_does_not_hand_credentials_to_the_file_tools() {
    let m = Machine::new(Layout::StateInHome);
    std::fs::create_dir_all(m.user.join(".ssh")).unwrap();
    std::fs::write(m.user.join(".ssh/id_ed25519"), "CRED-CANARY-SSH\n").unwrap();
    std::fs::write(
        m.user.join(".netrc"),
        "machine x password CRED-CANARY-NETRC\n",
    )
    .unwrap();
    let project = m.user.to_str().unwrap().to_string();
    let p = m.connect(Transport::Stdio, &["--project", &project]).await;
    for (tool, args) in [
        ("read_file", json!({"path": ".ssh/id_ed25519"})),
        ("read_file", json!({"path": ".netrc"})),
        ("list_directory", json!({"path": ".ssh"})),
    ] {
        let (text, err) = p.call(tool, args.clone()).await;
        assert!(
            err && text.contains("path_protected"),
            "{tool} {args}: {text}"
        );
    }
    for (tool, args) in [
        ("grep", json!({"pattern": "CRED-CANARY"})),
        ("list_directory", json!({"path": "."})),
    ] {
        let (text, _) = p.call(tool, args.clone()).await;
        assert!(
            !text.contains("CANARY-SSH")
                && !text.contains("CANARY-NETRC")
                && !text.contains(".ssh/"),
            "{tool}: {text}"
        );
    }
    p.close().await;
}
