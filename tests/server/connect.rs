//! `codex-free connect` on fixture homes (real-looking configs) through the real binary, and
//! `serve --stdio` without `--project`: the client's MCP roots, else the working directory.

// MCP roots are deprecated by SEP-2577 but are what Codex CLI and Claude Code send today.
#![allow(deprecated)]

use std::path::{Path, PathBuf};
use std::process::Stdio;

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ListRootsResult, Root};
use rmcp::service::{RequestContext, RoleClient};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, ServiceExt};

use crate::support::{self, Env, which};

/// A client that offers one root.
#[derive(Clone)]
struct RootsClient(String);

impl ClientHandler for RootsClient {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_roots().build(),
            Implementation::new("roots-test", "1"),
        )
    }

    #[allow(deprecated)]
    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, rmcp::ErrorData> {
        Ok(ListRootsResult::new(vec![Root::new(self.0.clone())]))
    }
}

async fn rcall(
    client: &rmcp::service::RunningService<RoleClient, RootsClient>,
    name: &str,
    args: serde_json::Value,
) -> (String, bool) {
    let p = rmcp::model::CallToolRequestParams::new(name.to_string())
        .with_arguments(args.as_object().cloned().unwrap_or_default());
    let r = client.call_tool(p).await.unwrap();
    (support::text(&r), r.is_error.unwrap_or(false))
}

fn env_line(text: &str, key: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}: ")))
        .unwrap_or_else(|| panic!("no {key} in {text}"))
        .to_string()
}

#[tokio::test]
async fn stdio_without_project_works_on_the_clients_root() {
    let env = Env::new(&[("src/lib.rs", "pub fn from_the_root() {}\n")]);
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(elsewhere.path().join("only-in-cwd.txt"), "cwd\n").unwrap();
    let uri = url_of(env.project());
    let cmd = env.command().configure(|c| {
        c.arg("serve").arg("--stdio").current_dir(elsewhere.path());
    });
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let client = RootsClient(uri).serve(transport).await.unwrap();
    let r = client
        .call_tool(rmcp::model::CallToolRequestParams::new("get_environment"))
        .await
        .unwrap();
    let text = support::text(&r);
    assert_eq!(
        PathBuf::from(env_line(&text, "project root")),
        std::fs::canonicalize(env.project()).unwrap()
    );
    assert!(
        env_line(&text, "project root from").contains("roots/list"),
        "{text}"
    );
    let (out, err) = rcall(
        &client,
        "read_file",
        serde_json::json!({"path": "src/lib.rs"}),
    )
    .await;
    assert!(!err && out.contains("from_the_root"), "{out}");
    let (out, err) = rcall(
        &client,
        "read_file",
        serde_json::json!({"path": "only-in-cwd.txt"}),
    )
    .await;
    assert!(err, "the working directory is not the project: {out}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn stdio_without_project_and_without_roots_works_on_the_working_directory() {
    let env = Env::new(&[("here.txt", "in the working directory\n")]);
    let project = env.project().to_path_buf();
    let cmd = env.command().configure(|c| {
        c.arg("serve").arg("--stdio").current_dir(&project);
    });
    let client = support::stdio_client(cmd).await;
    let (text, _) = support::call(&client, "get_environment", serde_json::json!({})).await;
    assert_eq!(
        PathBuf::from(env_line(&text, "project root")),
        std::fs::canonicalize(&project).unwrap()
    );
    assert!(
        env_line(&text, "project root from").contains("working directory"),
        "{text}"
    );
    let (out, err) = support::call(
        &client,
        "read_file",
        serde_json::json!({"path": "here.txt"}),
    )
    .await;
    assert!(!err && out.contains("in the working directory"), "{out}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_root_inside_the_state_home_is_refused_and_the_working_directory_stays() {
    let env = Env::new(&[("a.txt", "project file\n")]);
    let project = env.project().to_path_buf();
    let cmd = env.command().configure(|c| {
        c.arg("serve").arg("--stdio").current_dir(&project);
    });
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let client = RootsClient(url_of(env.home()))
        .serve(transport)
        .await
        .unwrap();
    let (text, _) = rcall(&client, "get_environment", serde_json::json!({})).await;
    assert_eq!(
        PathBuf::from(env_line(&text, "project root")),
        std::fs::canonicalize(&project).unwrap(),
        "{text}"
    );
    client.cancel().await.unwrap();
}

fn url_of(p: &Path) -> String {
    format!("file://{}", std::fs::canonicalize(p).unwrap().display())
}

/// A fresh user home with real-looking Codex, Claude and pi files.
struct Homes {
    dir: tempfile::TempDir,
    state: PathBuf,
}

const CODEX_TOML: &str = "# my codex config\nmodel = \"gpt-5.5\"\n\n[profiles.deep]\nmodel_reasoning_effort = \"high\"\n\n[mcp_servers.github]\ncommand = \"npx\"\nargs = [\"-y\", \"@modelcontextprotocol/server-github\"]\n";
const CLAUDE_JSON: &str = "{\n  \"numStartups\": 3,\n  \"mcpServers\": {\n    \"other\": {\n      \"type\": \"stdio\",\n      \"command\": \"other-mcp\",\n      \"args\": [],\n      \"env\": {}\n    }\n  },\n  \"projects\": {}\n}";

impl Homes {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let h = dir.path();
        std::fs::create_dir_all(h.join(".codex")).unwrap();
        std::fs::create_dir_all(h.join(".claude")).unwrap();
        std::fs::write(h.join(".codex/config.toml"), CODEX_TOML).unwrap();
        std::fs::write(
            h.join(".codex/AGENTS.md"),
            "# Global\nAlways run the tests.\n",
        )
        .unwrap();
        std::fs::write(h.join(".claude.json"), CLAUDE_JSON).unwrap();
        std::fs::write(h.join(".claude/CLAUDE.md"), "Be brief.\n").unwrap();
        let state = h.join("state");
        std::fs::create_dir_all(state.join("memories")).unwrap();
        std::fs::write(
            state.join("memories/memory_summary.md"),
            // In the shape the memory checks require, so the pipeline a started server runs
            // keeps it (a summary that fails them is moved to a rescue ref at its first pass).
            "v1\n## User Profile\n- The release checklist lives in docs/RELEASE.md (codeword: periwinkle).\n## User preferences\n\n## General Tips\n\n## What's in Memory\n",
        )
        .unwrap();
        Self { dir, state }
    }

    fn home(&self) -> &Path {
        self.dir.path()
    }

    fn cli(&self, args: &[&str]) -> std::process::Output {
        std::process::Command::new(support::bin())
            .args(args)
            .env("HOME", self.home())
            .env("CODEX_FREE_HOME", &self.state)
            .env("CODEX_FREE_LOG", "warn")
            .env_remove("CODEX_HOME")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("PI_CODING_AGENT_DIR")
            .output()
            .unwrap()
    }

    fn files(&self) -> Vec<(PathBuf, Option<Vec<u8>>)> {
        [
            ".codex/config.toml",
            ".codex/AGENTS.md",
            ".claude.json",
            ".claude/CLAUDE.md",
            ".pi/agent/AGENTS.md",
        ]
        .iter()
        .map(|p| {
            let p = self.home().join(p);
            let b = std::fs::read(&p).ok();
            (p, b)
        })
        .collect()
    }
}

fn ok(o: &std::process::Output) -> String {
    assert!(
        o.status.success(),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn connect_dry_run_apply_repeat_and_undo_through_the_cli() {
    let h = Homes::new();
    let original = h.files();
    let out = ok(&h.cli(&["connect", "codex", "--dry-run"]));
    assert!(
        out.contains("+[mcp_servers.codex_free]") && out.contains("periwinkle"),
        "{out}"
    );
    assert_eq!(h.files(), original, "dry run wrote nothing");
    for c in ["codex", "claude", "pi"] {
        ok(&h.cli(&["connect", c]));
    }
    let connected = h.files();
    let toml = String::from_utf8(connected[0].1.clone().unwrap()).unwrap();
    // Codex's own cut of tool results, raised after the user's top-level keys (marked so
    // undo takes it back); the user's text otherwise as it was.
    let limit = toml
        .lines()
        .find(|l| l.starts_with("tool_output_token_limit = 12500 # raised by codex-free connect"))
        .unwrap_or_else(|| panic!("{toml}"));
    let rest = toml.replacen(&format!("{limit}\n"), "", 1);
    assert!(rest.starts_with(CODEX_TOML), "{toml}");
    assert!(
        toml.contains(&format!(
            "command = \"{}\"",
            std::fs::canonicalize(support::bin()).unwrap().display()
        )),
        "{toml}"
    );
    for (p, b) in [&connected[1], &connected[3], &connected[4]] {
        let t = String::from_utf8(b.clone().unwrap()).unwrap();
        assert!(t.contains("periwinkle"), "{}: {t}", p.display());
    }
    for c in ["codex", "claude", "pi"] {
        let out = ok(&h.cli(&["connect", c]));
        assert!(out.contains("nothing to change"), "{out}");
    }
    assert_eq!(h.files(), connected, "a second run changes no byte");
    let status = ok(&h.cli(&["connect"]));
    assert!(
        status
            .lines()
            .any(|l| l.starts_with("codex") && l.contains("yes       yes")),
        "{status}"
    );
    let mstatus = ok(&h.cli(&["memories", "status"]));
    assert!(mstatus.contains("connected clients"), "{mstatus}");
    for c in ["codex", "claude", "pi"] {
        ok(&h.cli(&["connect", c, "--undo"]));
    }
    assert_eq!(
        h.files(),
        original,
        "undo is byte-exact; pi's new file is gone"
    );
    assert!(
        !h.home().join(".pi").exists(),
        "directories connect made are gone too"
    );
}

#[test]
fn a_malformed_config_is_refused_with_file_and_line_and_nothing_is_written() {
    let h = Homes::new();
    std::fs::write(
        h.home().join(".codex/config.toml"),
        "model = \"gpt-5.5\"\n[mcp_servers.github\ncommand = \"npx\"\n",
    )
    .unwrap();
    let before = h.files();
    let o = h.cli(&["connect", "codex"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    let file = h.home().join(".codex/config.toml");
    assert!(err.contains(&format!("{}:2:", file.display())), "{err}");
    assert!(err.contains("nothing was written"), "{err}");
    assert_eq!(h.files(), before);
    assert!(!h.state.join("connect/codex.json").exists());
}

/// The entry we write is the one `claude mcp add --scope user` writes (checked against the
/// installed Claude Code), and Claude itself starts our server from it.
#[test]
fn claude_reads_the_entry_connect_writes_as_its_own() {
    let Some(claude) = which("claude") else {
        eprintln!("claude not on PATH: skipped (scripts/install-deps.sh installs it)");
        return;
    };
    let h = Homes::new();
    ok(&h.cli(&["connect", "claude"]));
    let ours: serde_json::Value =
        serde_json::from_slice(&std::fs::read(h.home().join(".claude.json")).unwrap()).unwrap();
    let ours = &ours["mcpServers"]["codex_free"];
    // What the CLI writes for the same command line, in a scratch home.
    let scratch = tempfile::tempdir().unwrap();
    let mut add = vec!["mcp", "add", "--scope", "user", "codex_free"];
    let env_arg = format!("CODEX_FREE_HOME={}", h.state.display());
    add.extend(["-e", &env_arg, "--"]);
    let command = ours["command"].as_str().unwrap().to_string();
    add.push(&command);
    add.extend(["serve", "--stdio"]);
    let o = std::process::Command::new(&claude)
        .args(&add)
        .env("HOME", scratch.path())
        .env_remove("CLAUDE_CONFIG_DIR")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let theirs: serde_json::Value =
        serde_json::from_slice(&std::fs::read(scratch.path().join(".claude.json")).unwrap())
            .unwrap();
    assert_eq!(ours, &theirs["mcpServers"]["codex_free"]);
    // Claude lists it and its health check (which starts the server) succeeds.
    let project = tempfile::tempdir().unwrap();
    let o = std::process::Command::new(&claude)
        .args(["mcp", "list"])
        .current_dir(project.path())
        .env("HOME", h.home())
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let line = out
        .lines()
        .find(|l| l.starts_with("codex_free"))
        .unwrap_or_else(|| panic!("{out}\n{}", String::from_utf8_lossy(&o.stderr)));
    assert!(line.contains("Connected"), "{line}");
}

/// The command line connect writes into Codex's config starts a working server (here from a
/// project directory, as Codex does).
#[tokio::test]
async fn the_codex_registration_starts_a_working_server() {
    let h = Homes::new();
    ok(&h.cli(&["connect", "codex"]));
    let text = std::fs::read_to_string(h.home().join(".codex/config.toml")).unwrap();
    let (command, args, envs) = codex_entry(&text);
    let env = Env::new(&[("README.md", "hello from the project\n")]);
    let project = env.project().to_path_buf();
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(&args)
        .current_dir(&project)
        .env("CODEX_FREE_LOG", "warn");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let client = support::stdio_client(cmd).await;
    let (out, err) = support::call(
        &client,
        "read_file",
        serde_json::json!({"path": "README.md"}),
    )
    .await;
    assert!(!err && out.contains("hello from the project"), "{out}");
    let info = client.peer_info().unwrap();
    assert!(
        info.instructions
            .as_deref()
            .unwrap_or("")
            .contains("periwinkle"),
        "the server uses the same state home: {:?}",
        info.instructions
    );
    client.cancel().await.unwrap();
}

fn codex_entry(text: &str) -> (String, Vec<String>, Vec<(String, String)>) {
    // A tiny reader for the three keys we write (the unit tests parse with toml_edit).
    let mut command = String::new();
    let mut args = Vec::new();
    let mut envs = Vec::new();
    let mut inside = false;
    for l in text.lines() {
        if l.starts_with('[') {
            inside = l == "[mcp_servers.codex_free]";
            continue;
        }
        if !inside {
            continue;
        }
        if let Some(v) = l.strip_prefix("command = ") {
            command = serde_json::from_str(v).unwrap();
        } else if let Some(v) = l.strip_prefix("args = ") {
            args = serde_json::from_str(v).unwrap();
        } else if let Some(v) = l.strip_prefix("env = ") {
            let inner = v.trim().trim_start_matches('{').trim_end_matches('}');
            for kv in inner.split(',') {
                let (k, v) = kv.split_once('=').unwrap();
                envs.push((
                    k.trim().to_string(),
                    serde_json::from_str(v.trim()).unwrap(),
                ));
            }
        }
    }
    assert!(!command.is_empty(), "{text}");
    (command, args, envs)
}

/// `connect chatgpt` prints the secret-path URL and checks that the running server answers
/// MCP `initialize` on it; with no server it says so and still prints the steps.
#[tokio::test]
async fn connect_chatgpt_prints_the_steps_and_checks_the_server() {
    let env = Env::new(&[("a.txt", "x\n")]);
    let cli = |port: &str| {
        let o = std::process::Command::new(support::bin())
            .args(["connect", "chatgpt", "--port", port])
            .env("CODEX_FREE_HOME", env.home())
            .env("CODEX_FREE_LOG", "warn")
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    // A port nothing listens on (bound, then released).
    let free = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = cli(&free.to_string());
    assert!(
        out.contains("server.allowedHosts") && out.contains("not reachable"),
        "{out}"
    );
    let server = env.http(&["--no-pipeline"]).await;
    let port = server.base().rsplit(':').next().unwrap().to_string();
    let out = cli(&port);
    assert!(out.contains(&format!("/mcp/{}", server.token)), "{out}");
    assert!(out.contains("check: ok"), "{out}");
}

/// The linked copy follows the memory folder: a rollback rewrites it, `memories use off`
/// removes it, `use on` brings it back, and undo still leaves no trace.
#[test]
fn the_linked_copy_follows_rollback_and_the_use_switch() {
    use codex_free_memory::folder::MemoryFolder;
    let h = Homes::new();
    std::fs::remove_dir_all(h.state.join("memories")).unwrap();
    let (f, _) = MemoryFolder::open_or_init(&h.state).unwrap();
    // Valid summaries: rollback refuses a target that would not pass today's checks.
    let summary = |word: &str| {
        format!(
            "v1\n## User Profile\n- {word}\n## User preferences\n- pnpm\n## General Tips\n- verify live\n## What's in Memory\n- MEMORY.md\n"
        )
    };
    std::fs::write(
        f.root().join("memory_summary.md"),
        summary("old codeword: amber-11"),
    )
    .unwrap();
    let first = f
        .commit_all(
            &codex_free_memory::gate::approve_as_is(&f).unwrap(),
            "first",
        )
        .unwrap()
        .unwrap();
    std::fs::write(
        f.root().join("memory_summary.md"),
        summary("new codeword: cobalt-22"),
    )
    .unwrap();
    f.commit_all(
        &codex_free_memory::gate::approve_as_is(&f).unwrap(),
        "second",
    )
    .unwrap()
    .unwrap();
    let agents = h.home().join(".pi/agent/AGENTS.md");

    ok(&h.cli(&["connect", "pi"]));
    assert!(
        std::fs::read_to_string(&agents)
            .unwrap()
            .contains("cobalt-22")
    );
    ok(&h.cli(&["memories", "rollback", &first.to_string()]));
    let text = std::fs::read_to_string(&agents).unwrap();
    assert!(
        text.contains("amber-11") && !text.contains("cobalt-22"),
        "{text}"
    );
    ok(&h.cli(&["memories", "use", "off"]));
    assert_eq!(
        std::fs::read_to_string(&agents).unwrap(),
        "",
        "block removed"
    );
    ok(&h.cli(&["memories", "use", "on"]));
    assert!(
        std::fs::read_to_string(&agents)
            .unwrap()
            .contains("amber-11")
    );
    let status = ok(&h.cli(&["connect"]));
    let pi = status.lines().find(|l| l.starts_with("pi ")).unwrap();
    assert!(
        pi.contains("yes") && pi.contains('T'),
        "linked, with a refresh time: {pi}"
    );
    ok(&h.cli(&["connect", "pi", "--undo"]));
    assert!(!agents.exists());
}

/// Issue 27, finding 8: `connect` wrote through a symlinked `~/.codex/config.toml`,
/// `AGENTS.md`, `~/.claude.json` or `~/.claude/CLAUDE.md` to a file outside HOME without
/// saying so. Now a link is followed only when it leads inside HOME, and the plan and the
/// report say "writes through symlink X -> Y"; any other link is refused with the path and
/// nothing is written (the file outside, the link, no backup, no record).
#[test]
fn symlinked_targets_are_followed_only_inside_home_and_said() {
    let outside = tempfile::tempdir().unwrap();
    let outside = std::fs::canonicalize(outside.path()).unwrap();
    let h = Homes::new();
    let home = std::fs::canonicalize(h.home()).unwrap();
    // (client, the file the client reads, a file the link may point at outside HOME)
    let cases = [
        ("codex", ".codex/config.toml", CODEX_TOML),
        ("codex", ".codex/AGENTS.md", "# Global\n"),
        ("claude", ".claude.json", CLAUDE_JSON),
        ("claude", ".claude/CLAUDE.md", "Be brief.\n"),
        ("pi", ".pi/agent/AGENTS.md", "# pi rules\n"),
    ];
    for (client, file, text) in cases {
        let link = h.home().join(file);
        let victim = outside.join(file.replace('/', "_"));
        std::fs::write(&victim, text).unwrap();
        let saved = std::fs::read(&link).ok();
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::fs::remove_file(&link).ok();
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        for args in [
            vec!["connect", client, "--dry-run"],
            vec!["connect", client],
        ] {
            let o = h.cli(&args);
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(!o.status.success(), "{args:?} through {file}: {err}");
            assert!(
                err.contains(&link.display().to_string())
                    && err.contains(&victim.display().to_string())
                    && err.contains("outside your home"),
                "{file}: the refusal names the link and its target: {err}"
            );
        }
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), text, "{file}");
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert!(
            !h.state
                .join("connect")
                .join(format!("{client}.json"))
                .exists()
        );
        let mut backup = link.as_os_str().to_owned();
        backup.push(".codex-free-backup");
        assert!(!Path::new(&backup).exists(), "{file}: a backup was made");
        // Put the fixture back for the next case.
        std::fs::remove_file(&link).unwrap();
        if let Some(b) = saved {
            std::fs::write(&link, b).unwrap();
        }
    }

    // A linked directory (`~/.claude -> elsewhere`) counts the same.
    let claude_dir = outside.join("claude-dir");
    std::fs::create_dir_all(&claude_dir).unwrap();
    std::fs::write(claude_dir.join("CLAUDE.md"), "Be brief.\n").unwrap();
    let dot_claude = h.home().join(".claude");
    std::fs::rename(&dot_claude, h.home().join(".claude-real")).unwrap();
    std::os::unix::fs::symlink(&claude_dir, &dot_claude).unwrap();
    let o = h.cli(&["connect", "claude"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("outside your home"));
    assert_eq!(
        std::fs::read_to_string(claude_dir.join("CLAUDE.md")).unwrap(),
        "Be brief.\n"
    );
    std::fs::remove_file(&dot_claude).unwrap();
    std::fs::rename(h.home().join(".claude-real"), &dot_claude).unwrap();

    // Inside HOME (a dotfiles folder): followed, and said in the dry run and the report.
    let dotfiles = home.join("dotfiles");
    std::fs::create_dir_all(&dotfiles).unwrap();
    let link = h.home().join(".codex/config.toml");
    std::fs::rename(&link, dotfiles.join("codex-config.toml")).unwrap();
    std::os::unix::fs::symlink("../dotfiles/codex-config.toml", &link).unwrap();
    let says = format!(
        "writes through symlink {} -> {}",
        link.display(),
        dotfiles.join("codex-config.toml").display()
    );
    let dry = ok(&h.cli(&["connect", "codex", "--dry-run"]));
    assert!(dry.contains(&says), "{dry}");
    let out = ok(&h.cli(&["connect", "codex"]));
    assert!(out.contains(&says), "{out}");
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let written = std::fs::read_to_string(dotfiles.join("codex-config.toml")).unwrap();
    assert!(written.contains("[mcp_servers.codex_free]"), "{written}");
    ok(&h.cli(&["connect", "codex", "--undo"]));
    assert_eq!(
        std::fs::read_to_string(dotfiles.join("codex-config.toml")).unwrap(),
        CODEX_TOML
    );

    // A link into Codex Free's own state home is refused too.
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(h.state.join("codex.config.json"), &link).unwrap();
    let o = h.cli(&["connect", "codex"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("state home"));
    assert!(!h.state.join("codex.config.json").exists());
}

/// A client that introduces itself as Codex CLI does.
#[derive(Clone)]
struct CodexLike;

impl ClientHandler for CodexLike {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("codex-mcp-client", "0.130.0"),
        )
    }
}

#[tokio::test]
async fn a_codex_user_without_the_agents_block_is_told_how_memory_reaches_codex() {
    let h = Homes::new();
    let project = tempfile::tempdir().unwrap();
    let status = ok(&h.cli(&["memories", "status"]));
    assert!(!status.contains("codex-free connect codex"), "{status}");
    // Registered by hand: a Codex session reaches the server.
    let mut cmd = tokio::process::Command::new(support::bin());
    cmd.args(["serve", "--stdio", "--project"])
        .arg(project.path())
        .env("HOME", h.home())
        .env("CODEX_FREE_HOME", &h.state)
        .env("CODEX_FREE_LOG", "warn")
        .env_remove("CODEX_HOME");
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let client = CodexLike.serve(transport).await.unwrap();
    client.list_tools(None).await.unwrap();
    client.cancel().await.unwrap();
    let status = ok(&h.cli(&["memories", "status"]));
    let warning = status
        .lines()
        .find(|l| l.starts_with("warning: a Codex session reached this server"))
        .unwrap_or_else(|| panic!("{status}"));
    assert!(
        warning.contains(".codex/AGENTS.md") && warning.ends_with("Fix: codex-free connect codex"),
        "{warning}"
    );
    // The one command fixes it.
    ok(&h.cli(&["connect", "codex"]));
    let status = ok(&h.cli(&["memories", "status"]));
    assert!(!status.contains("warning: a Codex session"), "{status}");
}
