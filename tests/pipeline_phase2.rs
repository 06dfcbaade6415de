//! Phase 2 and the read path through the public surfaces: the MCP server over stdio and
//! HTTP (instructions carry the bounded summary; the `memories_*` tools' limits,
//! continuation lines and jail), and citations raising usage counts.

use std::path::Path;

use codex_free::config::Config;
use codex_free::pipeline::phase2::readpath::{self, SUMMARY_TOKEN_BUDGET};

use crate::support::{Env, call};

/// Write `files` into `<home>/memories/`.
fn seed_folder(home: &Path, files: &[(String, String)]) {
    for (p, c) in files {
        let path = home.join("memories").join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, c).unwrap();
    }
}

fn big_summary() -> String {
    let mut s = String::from(
        "v1\n## User Profile\n- backend developer\n## User preferences\n- always pnpm, never npm\n## General Tips\n",
    );
    for i in 0..1500 {
        s.push_str(&format!(
            "- tip {i}: verify the deploy state live before acting on it\n"
        ));
    }
    s.push_str("## What's in Memory\n- MEMORY.md: tooling rules\n");
    s
}

fn folder_files() -> Vec<(String, String)> {
    let mut files = vec![
        ("memory_summary.md".to_string(), big_summary()),
        (
            "MEMORY.md".to_string(),
            (1..=812)
                .map(|i| format!("- rule {i}: keep secrets out of logs\n"))
                .collect(),
        ),
        (
            "raw_memories.md".to_string(),
            "# Raw memories\n\n## rollout_id: thread-a\n\n- prefers pnpm\n".to_string(),
        ),
    ];
    for i in 0..2050 {
        files.push((
            format!("rollout_summaries/2025-01-01T00-00-00-{i:04}.md"),
            format!(
                "# Rollout summary\n\nrollout_id: thread-{i}\n\nSession {i} used pnpm workspaces.\n"
            ),
        ));
    }
    files
}

#[tokio::test]
async fn instructions_carry_bounded_summary_and_tools_page_over_stdio() {
    let env = Env::new(&[("a.txt", "hello\n")]);
    seed_folder(env.home(), &folder_files());
    env.write_config(serde_json::json!({"memories": {"dedicated_tools": true}}));
    let client = env.stdio(&[]).await;
    let info = client.peer_info().expect("server info");
    let instr = info.instructions.clone().unwrap_or_default();
    let start = instr
        .find("## Memory from earlier sessions")
        .expect("memory block in instructions");
    let block = &instr[start..];
    let n = codex_free::tokens::count(block);
    assert!(n <= SUMMARY_TOKEN_BUDGET, "memory block is {n} tokens");
    assert!(block.contains("- always pnpm, never npm") && block.contains("<oai-mem-citation>"));
    assert!(block.ends_with("(memory summary cut to fit the 2,500-token budget)\n"));

    let tools: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    for t in [
        "memories_list",
        "memories_search",
        "memories_read",
        "memories_add_ad_hoc_note",
    ] {
        assert!(tools.contains(&t.to_string()), "{t} registered: {tools:?}");
    }

    let (out, err) = call(&client, "memories_list", serde_json::json!({})).await;
    assert!(!err, "{out}");
    assert_eq!(
        out.lines().count(),
        2001,
        "2,000 entries and the continuation line"
    );
    assert!(
        out.trim_end().ends_with(
            "(showing entries 1-2000 of 2054 — call again with offset=2000 for the rest)"
        ),
        "{}",
        out.lines().last().unwrap()
    );

    let (out, _) = call(
        &client,
        "memories_read",
        serde_json::json!({"path": "MEMORY.md", "limit": 200}),
    )
    .await;
    assert!(
        out.trim_end()
            .ends_with("(showing lines 1-200 of 812 — call again with offset=200 for the rest)"),
        "{out}"
    );
    let (out, _) = call(
        &client,
        "memories_read",
        serde_json::json!({"path": "MEMORY.md", "offset": 800}),
    )
    .await;
    assert!(
        out.starts_with("- rule 801:") && !out.contains("showing"),
        "{out}"
    );

    let (out, _) = call(
        &client,
        "memories_search",
        serde_json::json!({"query": "pnpm workspaces"}),
    )
    .await;
    assert_eq!(
        out.lines().count(),
        201,
        "200 matches and the continuation line"
    );
    assert!(
        out.lines()
            .last()
            .unwrap()
            .starts_with("(showing matches 1-200 of "),
        "{out}"
    );

    for bad in ["../codex.config.json", "/etc/passwd", ".git/config"] {
        let (out, err) = call(&client, "memories_read", serde_json::json!({"path": bad})).await;
        assert!(
            err && out.starts_with("error[path_outside_root]"),
            "{bad}: {out}"
        );
    }
    let (out, err) = call(
        &client,
        "memories_add_ad_hoc_note",
        serde_json::json!({"note": "use pnpm in this repo"}),
    )
    .await;
    assert!(!err && out.starts_with("Queued note "), "{out}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn memory_tools_are_absent_by_default_and_summary_survives_http() {
    let env = Env::new(&[("a.txt", "hello\n")]);
    seed_folder(
        env.home(),
        &[(
            "memory_summary.md".into(),
            "v1\n## User Profile\n- likes short answers\n".into(),
        )],
    );
    let srv = env.http(&[]).await;
    let client = srv.client().await;
    let instr = client
        .peer_info()
        .unwrap()
        .instructions
        .clone()
        .unwrap_or_default();
    assert!(instr.contains("- likes short answers"), "{instr}");
    let tools = client.list_all_tools().await.unwrap();
    assert!(
        !tools.iter().any(|t| t.name.starts_with("memories_")),
        "dedicated_tools defaults to false"
    );
    client.cancel().await.unwrap();
}

#[test]
fn use_memories_off_hides_summary() {
    let home = tempfile::tempdir().unwrap();
    seed_folder(
        home.path(),
        &[("memory_summary.md".into(), "v1\n- x\n".into())],
    );
    let mut cfg = Config::default();
    assert!(readpath::summary_for_instructions(home.path(), &cfg).is_some());
    cfg.memories.use_memories = false;
    assert!(readpath::summary_for_instructions(home.path(), &cfg).is_none());
    let e = readpath::memories_list(home.path(), &cfg, &Default::default()).unwrap_err();
    assert_eq!(e.code(), "refused");
}
