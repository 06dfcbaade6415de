//! Pipeline input half (issue 4): real transcripts of Codex CLI 0.171, Claude Code 2.1 and
//! pi 0.73 (copied from the shared fixtures with their on-disk layouts) → rollouts →
//! redaction → compaction → rendered phase-1 text; discovery, eligibility, the watcher,
//! this server's MCP transcripts, and the offline compaction benchmark.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use chrono::{TimeZone, Utc};
use codex_free_core::config::MemoriesConfig;
use codex_free_redact::{REDACTED, redact};
use codex_free_transcripts::bench::{self, BenchOptions};
use codex_free_transcripts::compact::{self, Compactor};
use codex_free_transcripts::discover::{
    Candidate, Ineligible, SourceRoots, WatchEvent, Watcher, discover, eligibility,
};
use codex_free_transcripts::render::render;
use codex_free_transcripts::rollout::{Item, Rollout, Source};
use codex_free_transcripts::sources::mcp::{MAX_FIELD_BYTES, TranscriptWriter};
use codex_free_transcripts::sources::{
    ReadOptions, SessionMeta, parse_file, parse_file_with, read_meta,
};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

fn roots() -> SourceRoots {
    let s = data().join("sessions");
    SourceRoots {
        codex_home: Some(s.join("codex")),
        claude_dir: Some(s.join("claude")),
        pi_dir: Some(s.join("pi")),
        state_home: None,
    }
}

/// The fixture of `source` whose path contains `needle`, parsed.
fn fixture(source: Source, needle: &str) -> Rollout {
    let c = discover(&roots(), &[source])
        .into_iter()
        .find(|c| c.path.to_string_lossy().contains(needle))
        .unwrap_or_else(|| panic!("no {source} fixture matching {needle}"));
    parse_file(&c.path, source).unwrap()
}

/// The human's turns (the kept `<environment_context>` message is harness context).
fn users(r: &Rollout) -> Vec<&str> {
    r.items
        .iter()
        .filter_map(|i| {
            if let Item::User { text } = i
                && !text.starts_with("<environment_context>")
            {
                Some(text.as_str())
            } else {
                None
            }
        })
        .collect()
}

fn results(r: &Rollout) -> Vec<(&str, &str, bool)> {
    r.items
        .iter()
        .filter_map(|i| match i {
            Item::ToolResult {
                name,
                text,
                is_error,
                ..
            } => Some((name.as_deref().unwrap_or(""), text.as_str(), *is_error)),
            _ => None,
        })
        .collect()
}

fn counts(r: &Rollout) -> [usize; 4] {
    [
        users(r).len(),
        r.count("assistant"),
        r.count("tool_call"),
        r.count("tool_result"),
    ]
}

fn errors(r: &Rollout) -> usize {
    results(r).iter().filter(|(_, _, e)| *e).count()
}

// ---------------------------------------------------------------- Codex CLI

#[test]
fn codex_fixtures_parse_with_injected_context_filtered() {
    let found = discover(&roots(), &[Source::Codex]);
    assert_eq!(found.len(), 6);
    for c in &found {
        let r = parse_file(&c.path, Source::Codex).unwrap();
        assert_eq!(
            r.stats.malformed + r.stats.skipped_unknown,
            0,
            "{}",
            c.path.display()
        );
        // the developer (skills, permissions) message; the <environment_context> message
        // is kept, as upstream Codex's memories keep it (execution context)
        assert_eq!(r.stats.filtered, 1, "{}", c.path.display());
        assert!(!r.is_subagent && !r.is_ephemeral);
        assert!(r.cwd.as_ref().unwrap().starts_with("/home/dev/work"));
        let text = render(&r, 1000, None).text;
        assert!(
            text.contains("<environment_context>"),
            "{}",
            c.path.display()
        );
        for injected in [
            "<skills_instructions>",
            "## Skills",
            "# AGENTS.md instructions",
        ] {
            assert!(
                !text.contains(injected),
                "{injected} leaked from {}",
                c.path.display()
            );
        }
    }

    let hello = fixture(Source::Codex, "c079-7860");
    assert_eq!(counts(&hello), [1, 1, 0, 0]);
    assert_eq!(users(&hello), ["say hello"]);
    assert_eq!(hello.id, "01a2275c-c079-7860-b94a-92a043599b70");
    assert_eq!(
        hello.started_at,
        Some(
            Utc.with_ymd_and_hms(2026, 11, 29, 12, 51, 59).unwrap()
                + chrono::Duration::milliseconds(740)
        )
    );

    let numbers = fixture(Source::Codex, "e4bd-7653");
    assert_eq!(counts(&numbers), [1, 2, 1, 1]);
    let (name, out, err) = results(&numbers)[0];
    assert_eq!((name, err), ("exec_command", false));
    assert!(out.contains("Total output lines: 5000") && out.trim_end().ends_with("5000"));

    let broken = fixture(Source::Codex, "eb1b-70f2");
    assert_eq!(counts(&broken), [1, 3, 2, 2]);
    assert_eq!(errors(&broken), 2);
    assert!(results(&broken)[1].1.contains("boom: build failed"));

    let webapp = fixture(Source::Codex, "efdc-77a0");
    assert_eq!(counts(&webapp), [2, 4, 2, 2]);
    assert!(users(&webapp)[0].contains("always use pnpm, never npm"));
    assert_eq!(users(&webapp)[1], "Now add lodash as a dependency.");

    let mcp = fixture(Source::Codex, "aefd-7e41");
    assert!(mcp.items.iter().any(|i| matches!(i, Item::ToolCall { name, args, .. } if name == "mcp__demo__get_weather" && args.contains("Lisbon"))));
    assert!(results(&mcp)[0].1.contains("21C, clear sky"));
    assert_eq!(results(&mcp)[0].0, "mcp__demo__get_weather");
}

// ---------------------------------------------------------------- Claude Code

#[test]
fn claude_fixtures_parse_with_splits_errors_and_full_long_output() {
    let found = discover(&roots(), &[Source::Claude]);
    assert_eq!(found.len(), 7);
    for c in &found {
        let r = parse_file(&c.path, Source::Claude).unwrap();
        assert_eq!(r.stats.malformed + r.stats.skipped_unknown, 0);
        assert!(
            r.stats.ignored >= 5,
            "attachments/queue/last-prompt lines are ignored"
        );
        assert!(!r.is_subagent);
        let text = render(&r, 0, None).text;
        assert!(
            !text.contains("skill_listing") && !text.contains("deep-research"),
            "attachments leaked"
        );
    }

    let numbers = fixture(Source::Claude, "claude-numbers");
    assert_eq!(counts(&numbers), [1, 2, 1, 1]);
    let (name, out, err) = results(&numbers)[0];
    assert_eq!((name, err), ("Bash", false));
    // Claude Code keeps the whole `seq 1 5000` output: 23,892 characters.
    assert_eq!(out.chars().count(), 23_892);
    assert!(out.starts_with("1\n2\n3\n") && out.ends_with("4999\n5000"));

    // One API message split over two lines (text + tool_use) stays two items, in order.
    let broken = fixture(Source::Claude, "claude-broken");
    assert_eq!(counts(&broken), [1, 3, 2, 2]);
    assert_eq!(errors(&broken), 2);
    let kinds: Vec<_> = broken.items.iter().map(Item::kind).collect();
    assert_eq!(
        kinds,
        [
            "user",
            "assistant",
            "tool_call",
            "tool_result",
            "assistant",
            "tool_call",
            "tool_result",
            "assistant"
        ]
    );

    let webapp = fixture(Source::Claude, "claude-webapp");
    assert_eq!(counts(&webapp), [2, 4, 2, 2]);
    assert!(users(&webapp)[0].contains("always use pnpm, never npm"));

    let denied = fixture(Source::Claude, "claude-mcphttp");
    let (name, out, err) = results(&denied)[0];
    assert_eq!(name, "mcp__demo__remember");
    assert!(err && out.contains("haven't granted it yet"));

    let mcp = fixture(Source::Claude, "claude-mcp/");
    assert_eq!(results(&mcp)[0].0, "mcp__demo__get_weather");

    let calc = fixture(Source::Claude, "claude-calc");
    assert!(calc.items.iter().any(|i| matches!(i, Item::ToolCall { name, args, .. } if name == "Write" && args.contains("def add(a, b)"))));
}

#[test]
fn claude_repeated_split_lines_sidechains_and_subagent_files() {
    let src = discover(&roots(), &[Source::Claude])
        .into_iter()
        .find(|c| c.path.to_string_lossy().contains("claude-broken"))
        .unwrap();
    let body = std::fs::read_to_string(&src.path).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let proj = dir.path().join("projects/-home-dev-x");
    std::fs::create_dir_all(proj.join("s1/subagents")).unwrap();

    // Every line written twice (as a resumed writer may do): items unchanged.
    let doubled: String = body.lines().flat_map(|l| [l, "\n", l, "\n"]).collect();
    std::fs::write(proj.join("s1.jsonl"), &doubled).unwrap();
    let r = parse_file(&proj.join("s1.jsonl"), Source::Claude).unwrap();
    let assistant_and_calls = r.count("assistant") + r.count("tool_call");
    assert_eq!(
        assistant_and_calls, 5,
        "split message blocks deduplicated by message.id"
    );

    // Sidechain records are dropped; a file of only sidechain records is a sub-agent.
    let side: String = body
        .lines()
        .map(|l| l.replace("\"isSidechain\":false", "\"isSidechain\":true") + "\n")
        .collect();
    std::fs::write(proj.join("s1/subagents/agent-a1.jsonl"), &side).unwrap();
    std::fs::write(proj.join("agent-b2.jsonl"), &side).unwrap();
    std::fs::write(proj.join("s2.jsonl"), &side).unwrap();
    let r = parse_file(&proj.join("s2.jsonl"), Source::Claude).unwrap();
    assert!(r.is_subagent);
    assert!(r.items.is_empty());
    assert!(
        read_meta(&proj.join("s1/subagents/agent-a1.jsonl"), Source::Claude)
            .unwrap()
            .is_subagent
    );

    let roots = SourceRoots {
        claude_dir: Some(dir.path().to_path_buf()),
        ..Default::default()
    };
    let names: Vec<_> = discover(&roots, &[Source::Claude])
        .iter()
        .map(|c| c.path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let mut names = names;
    names.sort();
    assert_eq!(
        names,
        ["s1.jsonl", "s2.jsonl"],
        "subagents/ and agent-*.jsonl are not discovered"
    );
}

// ---------------------------------------------------------------- pi

#[test]
fn pi_fixtures_parse() {
    assert_eq!(discover(&roots(), &[Source::Pi]).len(), 4);
    let numbers = fixture(Source::Pi, "pi_numbers");
    assert_eq!(counts(&numbers), [1, 2, 1, 1]);
    let (name, out, _) = results(&numbers)[0];
    assert_eq!(name, "bash");
    assert!(out.contains("4999\n5000\n") && out.contains("Showing lines 3002-5001"));

    let broken = fixture(Source::Pi, "pi_broken");
    assert_eq!(counts(&broken), [1, 3, 2, 2]);
    assert_eq!(errors(&broken), 2);

    let webapp = fixture(Source::Pi, "pi_webapp");
    assert_eq!(counts(&webapp), [2, 4, 2, 2]);
    assert!(users(&webapp)[0].contains("always use pnpm, never npm"));
    assert_eq!(
        webapp.cwd.as_deref(),
        Some(Path::new("/home/dev/work/pi_webapp"))
    );
    assert_eq!(
        webapp.stats.ignored, 2,
        "model_change + thinking_level_change"
    );
}

#[test]
fn pi_reads_only_the_active_branch() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    let msg = |id: &str, parent: Option<&str>, role: &str, text: &str| {
        serde_json::json!({"type":"message","id":id,"parentId":parent,"timestamp":"2026-11-29T12:00:00.000Z",
            "message":{"role":role,"content":[{"type":"text","text":text},{"type":"thinking","thinking":"hmm"}]}})
        .to_string()
    };
    let lines = [
        r#"{"type":"session","version":3,"id":"sess-1","timestamp":"2026-11-29T12:00:00.000Z","cwd":"/w"}"#.to_string(),
        msg("a", None, "user", "first question"),
        msg("b", Some("a"), "assistant", "first answer"),
        msg("c", Some("b"), "user", "abandoned question"),
        msg("d", Some("c"), "assistant", "abandoned answer"),
        msg("e", Some("b"), "user", "rephrased question"),
        msg("f", Some("e"), "assistant", "final answer"),
    ];
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    let r = parse_file(&p, Source::Pi).unwrap();
    let texts: Vec<_> = r
        .items
        .iter()
        .map(|i| match i {
            Item::User { text } | Item::Assistant { text, .. } => text.as_str(),
            _ => "",
        })
        .collect();
    assert_eq!(
        texts,
        [
            "first question",
            "first answer",
            "rephrased question",
            "final answer"
        ]
    );
    assert_eq!(r.stats.off_branch, 2);
    assert_eq!(r.stats.filtered, 4, "thinking parts dropped");
    assert_eq!(r.id, "sess-1");
}

// ---------------------------------------------------------------- robustness

#[test]
fn malformed_truncated_non_utf8_and_huge_lines_never_abort_a_file() {
    let src = discover(&roots(), &[Source::Codex])
        .into_iter()
        .find(|c| c.path.to_string_lossy().contains("efdc-77a0"))
        .unwrap();
    let body = std::fs::read(&src.path).unwrap();
    let text = String::from_utf8(body.clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<u8> = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        out.extend_from_slice(l.as_bytes());
        out.push(b'\n');
        if i == 3 {
            out.extend_from_slice(b"{\"timestamp\":\"2026-11-29T12:52:11.900Z\",\"type\":\"response_item\",\"payload\":{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"caf\xe9 latin-1 bytes\"}]}}\n");
            out.extend_from_slice(b"this is not json\n");
            out.extend_from_slice(b"{\"type\":\"brand_new_record\",\"payload\":{}}\n");
            out.extend_from_slice(
                b"{\"type\":\"response_item\",\"payload\":{\"type\":\"brand_new_item\"}}\n",
            );
            out.extend_from_slice(b"{\"type\":\"response_item\",\"payload\":{\"type\":\"message\",\"role\":\"user\",\"content\":\"");
            out.extend(std::iter::repeat_n(b'x', 300_000));
            out.extend_from_slice(b"\"}}\n");
        }
    }
    // A truncated final line (a writer died mid-line).
    out.extend_from_slice(br#"{"timestamp":"2026-11-29T12:59:00.000Z","type":"response_item","payload":{"type":"mess"#);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("rollout-x.jsonl");
    std::fs::write(&p, &out).unwrap();

    let r = parse_file_with(
        &p,
        Source::Codex,
        &ReadOptions {
            max_line_bytes: 100_000,
            max_lines: None,
        },
    )
    .unwrap();
    assert_eq!(r.stats.oversized, 1);
    assert_eq!(r.stats.non_utf8, 1);
    assert_eq!(
        r.stats.malformed, 2,
        "the garbage line and the truncated last line"
    );
    assert_eq!(r.stats.skipped_unknown, 2);
    assert_eq!(r.stats.lines, lines.len() + 6);
    assert_eq!(
        counts(&r),
        [3, 4, 2, 2],
        "everything around the bad lines survives"
    );
    assert_eq!(users(&r)[0], "caf\u{fffd} latin-1 bytes");
    assert!(users(&r)[1].contains("always use pnpm"));

    // With the default 64 MiB cap the 300 KB line is read.
    let r = parse_file(&p, Source::Codex).unwrap();
    assert_eq!((r.stats.oversized, users(&r).len()), (0, 4));
}

#[test]
fn parsing_never_modifies_source_files() {
    let before: Vec<(PathBuf, Vec<u8>, SystemTime)> = discover(&roots(), &Source::ALL)
        .into_iter()
        .map(|c| (c.path.clone(), std::fs::read(&c.path).unwrap(), c.mtime))
        .collect();
    assert_eq!(before.len(), 17);
    for (p, _, _) in &before {
        let src = if p.to_string_lossy().contains("/codex/") {
            Source::Codex
        } else if p.to_string_lossy().contains("/claude/") {
            Source::Claude
        } else {
            Source::Pi
        };
        parse_file(p, src).unwrap();
        read_meta(p, src).unwrap();
    }
    for (p, bytes, mtime) in &before {
        assert_eq!(&std::fs::read(p).unwrap(), bytes);
        assert_eq!(std::fs::metadata(p).unwrap().modified().unwrap(), *mtime);
    }
    // A read-only file parses.
    let dir = tempfile::tempdir().unwrap();
    let ro = dir.path().join("ro.jsonl");
    std::fs::write(&ro, &before[0].1).unwrap();
    let mut perm = std::fs::metadata(&ro).unwrap().permissions();
    perm.set_readonly(true);
    std::fs::set_permissions(&ro, perm).unwrap();
    assert!(parse_file(&ro, Source::Codex).is_ok());
    assert_eq!(
        parse_file(&dir.path().join("missing.jsonl"), Source::Codex)
            .unwrap_err()
            .code(),
        "io"
    );
}

// ---------------------------------------------------------------- discovery

#[test]
fn discovery_layouts_and_eligibility() {
    let dir = tempfile::tempdir().unwrap();
    let h = dir.path();
    let touch = |rel: &str| {
        let p = h.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, "{}\n").unwrap();
    };
    touch("codex/sessions/2026/11/29/rollout-a.jsonl");
    touch("codex/sessions/2026/11/29/notes.jsonl");
    touch("codex/archived_sessions/rollout-b.jsonl");
    touch("claude/projects/-w/one.jsonl");
    touch("claude/projects/-w/one/subagents/agent-1.jsonl");
    touch("claude/projects/top.jsonl");
    touch("pi/sessions/--w--/s.jsonl");
    touch("pi/sessions/--w--/s.txt");
    touch("home/transcripts/2026/11/29/m.jsonl");
    let roots = SourceRoots {
        codex_home: Some(h.join("codex")),
        claude_dir: Some(h.join("claude")),
        pi_dir: Some(h.join("pi")),
        state_home: Some(h.join("home")),
    };
    let mut rel: Vec<String> = discover(&roots, &Source::ALL)
        .iter()
        .map(|c| {
            c.path
                .strip_prefix(h)
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    rel.sort();
    assert_eq!(
        rel,
        [
            "claude/projects/-w/one.jsonl",
            "codex/archived_sessions/rollout-b.jsonl",
            "codex/sessions/2026/11/29/rollout-a.jsonl",
            "home/transcripts/2026/11/29/m.jsonl",
            "pi/sessions/--w--/s.jsonl",
        ]
    );
    assert_eq!(discover(&roots, &[Source::Pi]).len(), 1);

    let now = Utc.with_ymd_and_hms(2026, 12, 1, 12, 0, 0).unwrap();
    let cand = |hours_ago: i64, source: Source| Candidate {
        path: "/x.jsonl".into(),
        source,
        size: 1,
        mtime: (now - chrono::Duration::hours(hours_ago)).into(),
    };
    let meta = SessionMeta {
        id: "x".into(),
        cwd: None,
        started_at: None,
        is_subagent: false,
        is_ephemeral: false,
    };
    let cfg = MemoriesConfig::default(); // idle >= 6 h, age <= 10 days
    assert_eq!(
        eligibility(&cand(7, Source::Codex), &meta, &cfg, now),
        Ok(())
    );
    assert_eq!(
        eligibility(&cand(5, Source::Codex), &meta, &cfg, now),
        Err(Ineligible::TooFresh)
    );
    assert_eq!(
        eligibility(&cand(24 * 11, Source::Codex), &meta, &cfg, now),
        Err(Ineligible::TooOld)
    );
    let sub = SessionMeta {
        is_subagent: true,
        ..meta.clone()
    };
    assert_eq!(
        eligibility(&cand(7, Source::Codex), &sub, &cfg, now),
        Err(Ineligible::Subagent)
    );
    let eph = SessionMeta {
        is_ephemeral: true,
        ..meta.clone()
    };
    assert_eq!(
        eligibility(&cand(7, Source::Codex), &eph, &cfg, now),
        Err(Ineligible::Ephemeral)
    );
    let only_claude = MemoriesConfig {
        sources: vec!["claude".into()],
        ..MemoriesConfig::default()
    };
    assert_eq!(
        eligibility(&cand(7, Source::Codex), &meta, &only_claude, now),
        Err(Ineligible::SourceDisabled)
    );
    assert_eq!(
        eligibility(&cand(7, Source::Claude), &meta, &only_claude, now),
        Ok(())
    );

    // Codex sub-agent threads are recognised from session_meta.source.
    let sub = h.join("codex/sessions/2026/11/29/rollout-sub.jsonl");
    std::fs::write(&sub, r#"{"timestamp":"2026-11-29T12:00:00Z","type":"session_meta","payload":{"id":"s","cwd":"/w","source":{"subagent":"review"}}}"#).unwrap();
    assert!(read_meta(&sub, Source::Codex).unwrap().is_subagent);
}

#[tokio::test]
async fn watcher_sends_a_debounced_rescan_and_stops_on_cancel() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("claude/projects/-w")).unwrap();
    let roots = SourceRoots {
        claude_dir: Some(dir.path().join("claude")),
        ..Default::default()
    };
    let (tx, mut rx) = tokio::sync::mpsc::channel(8);
    let cancel = tokio_util::sync::CancellationToken::new();
    let w = Watcher::start_with(
        &roots,
        &Source::ALL,
        Duration::from_millis(150),
        tx,
        cancel.clone(),
    )
    .unwrap();
    assert_eq!(w.watched().len(), 1);
    let file = dir.path().join("claude/projects/-w/s.jsonl");
    std::fs::write(&file, "{}\n").unwrap();
    let ev = tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("event in time")
        .unwrap();
    let WatchEvent::Rescan { source, paths } = ev;
    assert_eq!(source, Source::Claude);
    assert!(paths.iter().any(|p| p.ends_with("s.jsonl")), "{paths:?}");

    while tokio::time::timeout(Duration::from_millis(500), rx.recv())
        .await
        .is_ok()
    {}
    cancel.cancel();
    std::fs::write(dir.path().join("claude/projects/-w/t.jsonl"), "{}\n").unwrap();
    assert!(
        tokio::time::timeout(Duration::from_millis(800), rx.recv())
            .await
            .is_err(),
        "no event after cancel"
    );
    w.stop();
}

// ---------------------------------------------------------------- MCP transcripts

#[test]
fn mcp_transcripts_are_redacted_bounded_and_parse_back() {
    let home = tempfile::tempdir().unwrap();
    let now = Utc.with_ymd_and_hms(2026, 11, 29, 13, 0, 0).unwrap();
    let w =
        TranscriptWriter::open_at(home.path(), "sess-42", Some(Path::new("/w/p")), now).unwrap();
    assert_eq!(
        w.path(),
        home.path().join("transcripts/2026/11/29/sess-42.jsonl")
    );
    w.record_call(
        "exec",
        r#"{"cmd":"curl -H 'Authorization: Bearer abcdef0123456789abcdef'"}"#,
        "ok",
        false,
    )
    .unwrap();
    let huge = "line of output\n".repeat(5000);
    w.record_call("read", r#"{"path":"big.txt"}"#, &huge, false)
        .unwrap();
    w.record_call("exec", r#"{"cmd":"false"}"#, "exit 1", true)
        .unwrap();
    drop(w);
    // Re-opening appends without a second header.
    let w = TranscriptWriter::open_at(home.path(), "sess-42", None, now).unwrap();
    w.record_call("list", "{}", "a\nb", false).unwrap();

    let raw = std::fs::read_to_string(w.path()).unwrap();
    assert_eq!(raw.lines().count(), 5);
    assert!(!raw.contains("abcdef0123456789abcdef"));
    let r = parse_file(w.path(), Source::Mcp).unwrap();
    assert_eq!(r.id, "sess-42");
    assert_eq!(r.cwd.as_deref(), Some(Path::new("/w/p")));
    assert_eq!(counts(&r), [0, 0, 4, 4]);
    let res = results(&r);
    assert!(res[1].1.len() < MAX_FIELD_BYTES + 100);
    assert!(res[1].1.ends_with(&format!(
        "[… {} bytes cut by codex-free transcript limit]",
        huge.len() - MAX_FIELD_BYTES
    )));
    assert!(res[2].2);
    assert!(
        matches!(&r.items[0], Item::ToolCall { args, .. } if args.contains(&format!("Bearer {REDACTED}")))
    );
    let roots = SourceRoots {
        state_home: Some(home.path().to_path_buf()),
        ..Default::default()
    };
    assert_eq!(discover(&roots, &[Source::Mcp]).len(), 1);
}

#[test]
fn concurrent_mcp_writers_never_interleave_lines() {
    let home = tempfile::tempdir().unwrap();
    let now = Utc::now();
    let writers: Vec<_> = (0..4)
        .map(|_| TranscriptWriter::open_at(home.path(), "shared", None, now).unwrap())
        .collect();
    std::thread::scope(|s| {
        for (t, w) in writers.iter().enumerate() {
            s.spawn(move || {
                for i in 0..100 {
                    w.record_call(
                        "exec",
                        &format!("{{\"t\":{t},\"i\":{i}}}"),
                        &"z".repeat(3000 + i),
                        false,
                    )
                    .unwrap();
                }
            });
        }
    });
    let r = parse_file(writers[0].path(), Source::Mcp).unwrap();
    assert_eq!(r.stats.malformed, 0);
    assert_eq!(r.count("tool_call"), 400);
}

// ---------------------------------------------------------------- redaction

/// Corpus format: `secret<TAB><text>` lines whose text holds the planted value between
/// `«` and `»` (stripped before redaction), `plain<TAB><text>` lines that must come out
/// unchanged; `#` lines are comments; `⏎` stands for a newline.
fn corpus() -> (Vec<(String, String)>, Vec<String>) {
    let raw = std::fs::read_to_string(data().join("secrets_corpus.txt")).unwrap();
    let (mut secrets, mut plain) = (Vec::new(), Vec::new());
    for l in raw
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let (kind, text) = l.split_once('\t').expect("tab-separated corpus line");
        let text = text.replace('⏎', "\n");
        match kind {
            "secret" => {
                let s = text.find('«').unwrap();
                let e = text.find('»').unwrap();
                let value = text[s + '«'.len_utf8()..e].to_string();
                secrets.push((text.replace(['«', '»'], ""), value));
            }
            "plain" => plain.push(text),
            k => panic!("unknown corpus kind {k}"),
        }
    }
    (secrets, plain)
}

#[test]
fn redaction_corpus_no_planted_secret_survives_and_plain_text_is_untouched() {
    let (secrets, plain) = corpus();
    assert!(secrets.len() >= 30, "{}", secrets.len());
    assert!(plain.len() >= 20);
    for (text, value) in &secrets {
        let out = redact(text);
        assert!(
            !out.contains(value.as_str()),
            "survived: {value:?} in {out:?}"
        );
        assert!(out.contains(REDACTED), "{out:?}");
    }
    for text in &plain {
        assert_eq!(redact(text), text.as_str(), "ordinary text altered");
    }
}

#[test]
fn rendered_phase1_input_contains_no_planted_secret() {
    let (secrets, _) = corpus();
    let mut items = Vec::new();
    for (i, (text, _)) in secrets.iter().enumerate() {
        let id = format!("c{i}");
        items.push(Item::User { text: text.clone() });
        items.push(Item::Assistant {
            text: format!("noted: {text}"),
            commentary: false,
        });
        items.push(Item::ToolCall {
            call_id: id.clone(),
            name: "exec".into(),
            args: serde_json::json!({"cmd": text}).to_string(),
        });
        // Secrets at both ends of a result that compaction cuts in the middle.
        let big = format!("{text}\n{}{text}\n", "filler line\n".repeat(600));
        items.push(Item::ToolResult {
            call_id: id,
            name: None,
            text: big,
            is_error: i % 2 == 0,
        });
    }
    let mut r = fixture(Source::Claude, "claude-hello");
    r.items = items;
    for budget in [0, 100, 1000] {
        let out = render(&r, budget, Some(20_000));
        for (_, value) in &secrets {
            // JSON-escaping in args turns newlines into \n: check the value's first line.
            let probe = value.lines().find(|l| l.len() > 12).unwrap_or(value);
            assert!(
                !out.text.contains(probe),
                "budget {budget}: {probe:?} reached phase-1 input"
            );
        }
    }
}

// ---------------------------------------------------------------- compaction

#[test]
fn compaction_markers_exact_on_a_constructed_rollout() {
    let mut r = fixture(Source::Claude, "claude-hello");
    let repeated = format!("start\n{}end\n", "warning: deprecated API\n".repeat(7));
    let long = format!("header line\n{}", "0123456789\n".repeat(40));
    r.items = vec![
        Item::User {
            text: "line\nline\nline\nline".into(),
        },
        Item::ToolCall {
            call_id: "a".into(),
            name: "exec".into(),
            args: "{}".into(),
        },
        Item::ToolResult {
            call_id: "a".into(),
            name: None,
            text: repeated,
            is_error: false,
        },
        Item::ToolCall {
            call_id: "b".into(),
            name: "read".into(),
            args: "{}".into(),
        },
        Item::ToolResult {
            call_id: "b".into(),
            name: None,
            text: long.clone(),
            is_error: false,
        },
        Item::ToolCall {
            call_id: "c".into(),
            name: "read".into(),
            args: "{}".into(),
        },
        Item::ToolResult {
            call_id: "c".into(),
            name: None,
            text: long,
            is_error: true,
        },
    ];
    let out = render(&r, 1000, None);
    assert_eq!(
        out.text,
        "[user]\nline\nline\nline\nline\n\n\
         [tool call exec #1]\n{}\n\n\
         [tool exec #1]\nstart\nwarning: deprecated API\n[… same line ×7]\nend\n\n\
         [tool call read #2]\n{}\n\n\
         [tool read #2]\nheader line\n0123456789\n[… same line ×40]\n\n\
         [tool call read #3]\n{}\n\n\
         [tool read #3] (error)\n[identical to tool result #2: header line]\n"
    );
    assert_eq!(out.results_compacted, 3);
    assert!(out.tokens_after < out.tokens_before);
    // Budget 0 disables every rule.
    let off = render(&r, 0, None);
    assert!(off.text.contains(&"warning: deprecated API\n".repeat(7)));
    assert_eq!(off.tokens_before, off.tokens_after);
    assert_eq!(compact::label("read", 2, true), "[tool read #2] (error)");
    assert_eq!(Compactor::new(0).result(1, "x\nx\nx", false), "x\nx\nx");
}

#[test]
fn compaction_on_claude_seq_output_keeps_head_tail_and_exact_marker() {
    let r = fixture(Source::Claude, "claude-numbers");
    let out = render(&r, 500, None);
    let block = out.text.split("[tool Bash #1]\n").nth(1).unwrap();
    let block = &block[..block.find("\n\n[assistant]").unwrap() + 1];
    assert!(block.starts_with("1\n2\n3\n"));
    assert!(block.ends_with("4999\n5000\n"));
    let lines: Vec<&str> = block.lines().collect();
    let at = lines.iter().position(|l| l.starts_with("[… ")).unwrap();
    let marker = lines[at];
    let last_head: usize = lines[at - 1].parse().unwrap();
    let first_tail: usize = lines[at + 1].parse().unwrap();
    assert_eq!(lines.iter().filter(|l| l.starts_with("[… ")).count(), 1);
    let omitted = first_tail - last_head - 1;
    let omitted_bytes: usize = (last_head + 1..first_tail)
        .map(|n| n.to_string().len() + 1)
        .sum();
    assert_eq!(
        marker,
        format!("[… {omitted} lines, {omitted_bytes} bytes omitted …]")
    );
    assert!(
        out.tool_tokens_after <= 500 + 4,
        "{}",
        out.tool_tokens_after
    );
    assert!(out.tool_tokens_before > 13_000);
    // The assistant's final answer is untouched.
    assert!(out.text.contains("Done. The command printed 5000 lines; the last number is 5000. (tool output was 23892 chars)"));
}

// ---------------------------------------------------------------- benchmark

#[test]
fn bench_compaction_reports_savings_on_the_fixtures() {
    let opts = BenchOptions {
        budget: 500,
        sources: Source::ALL.to_vec(),
        max_sessions: 40,
        context_window: None,
        roots: roots(),
    };
    let report = bench::run(&opts).unwrap();
    assert_eq!(report.sessions.len(), 17);
    assert!(report.failed.is_empty());
    assert_eq!(
        report.total.bytes,
        report.sessions.iter().map(|s| s.bytes).sum::<u64>()
    );
    assert!(report.total.tokens_after < report.total.tokens_before);
    assert!(report.total.tool_share() > 0.5);
    for s in &report.sessions {
        assert!(s.tokens_after <= s.tokens_before);
        if s.path.to_string_lossy().contains("numbers") {
            assert!(s.saving() > 0.5, "{}: {}", s.id, s.saving());
        }
        if s.tool_results == 0 {
            assert_eq!(s.tokens_after, s.tokens_before);
        }
    }
    let mut buf = Vec::new();
    bench::print(&report, &mut buf).unwrap();
    let text = String::from_utf8(buf).unwrap();
    assert!(text.starts_with("bench-compaction: budget 500 tokens per tool result, phase-1 cap 150000 tokens, 17 session(s)"));
    assert!(text.contains("TOTAL") && text.contains("throughput: "));
    let only_pi = BenchOptions {
        sources: vec![Source::Pi],
        ..opts
    };
    assert_eq!(bench::run(&only_pi).unwrap().sessions.len(), 4);
}

#[test]
fn render_pair_equals_two_renders_on_every_fixture() {
    for c in discover(&roots(), &Source::ALL) {
        let r = parse_file(&c.path, c.source).unwrap();
        for (budget, window) in [(200, None), (50, Some(2_000)), (0, None)] {
            let (a, b) = codex_free_transcripts::render::render_pair(&r, budget, window);
            let want = (render(&r, 0, window), render(&r, budget, window));
            assert_eq!(
                (
                    serde_json::to_value(&a).unwrap(),
                    serde_json::to_value(&b).unwrap()
                ),
                (
                    serde_json::to_value(&want.0).unwrap(),
                    serde_json::to_value(&want.1).unwrap()
                ),
                "{}",
                c.path.display()
            );
        }
    }
}
