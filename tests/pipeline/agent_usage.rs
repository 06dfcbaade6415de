//! `codex-free usage` through the real binary, on copies of real Codex CLI, Claude Code and
//! pi transcripts plus the traps (tests/data/usage/build.py): duplicated `token_count`
//! rows, a resumed Codex session, a Claude side-chain and a resumed Claude session. The
//! expected daily totals are computed here by a different, simpler method than the
//! import's: Codex by the largest cumulative total per session, Claude by the last line
//! per message, pi by distinct entries; column by column (uncached input, cache read,
//! cache write, output, reasoning), each taken from the agent's own field names.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::support::bin;

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/usage")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
}

fn jsonl(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn n(v: &Value, k: &str) -> i64 {
    v.get(k).and_then(Value::as_i64).unwrap_or(0)
}

fn day(ts: &str) -> String {
    ts[..10].to_string()
}

/// (day, agent) -> [uncached input, cache read, cache write, output, reasoning].
type Expect = BTreeMap<(String, String), [i64; 5]>;

fn expected(root: &Path) -> Expect {
    let mut e: Expect = BTreeMap::new();
    // Codex: the largest cumulative total of each session is what it used.
    let mut fs = Vec::new();
    files(&root.join("codex"), &mut fs);
    let mut best: HashMap<String, (i64, String, [i64; 5])> = HashMap::new();
    for f in &fs {
        let lines = jsonl(f);
        let sid = lines[0]["payload"]["id"].as_str().unwrap().to_string();
        for l in &lines {
            let info = &l["payload"]["info"];
            if l["payload"]["type"] == "token_count" && info.is_object() {
                let t = &info["total_token_usage"];
                let total = n(t, "total_tokens");
                let d = day(l["timestamp"].as_str().unwrap());
                let slot = best.entry(sid.clone()).or_insert((-1, d.clone(), [0; 5]));
                assert!(
                    slot.0 < 0 || slot.1 == d,
                    "fixture sessions stay on one day"
                );
                if total > slot.0 {
                    *slot = (
                        total,
                        d,
                        // Codex's input counts its cached part.
                        [
                            n(t, "input_tokens")
                                - n(t, "cached_input_tokens")
                                - n(t, "cache_write_input_tokens"),
                            n(t, "cached_input_tokens"),
                            n(t, "cache_write_input_tokens"),
                            n(t, "output_tokens"),
                            n(t, "reasoning_output_tokens"),
                        ],
                    );
                }
            }
        }
    }
    for (_, (_, d, v)) in best {
        let s = e.entry((d, "codex".into())).or_default();
        for i in 0..5 {
            s[i] += v[i];
        }
    }
    // Claude: one request per message id (+ request id); its last line is complete.
    let mut fs = Vec::new();
    files(&root.join("claude"), &mut fs);
    let mut msgs: HashMap<String, (String, [i64; 5])> = HashMap::new();
    for f in &fs {
        for l in jsonl(f) {
            let u = &l["message"]["usage"];
            if l["type"] != "assistant" || !u.is_object() {
                continue;
            }
            let key = format!("{}:{}", l["message"]["id"], l["requestId"]);
            // Claude's input_tokens is already the uncached part.
            msgs.insert(
                key,
                (
                    day(l["timestamp"].as_str().unwrap()),
                    [
                        n(u, "input_tokens"),
                        n(u, "cache_read_input_tokens"),
                        n(u, "cache_creation_input_tokens"),
                        n(u, "output_tokens"),
                        0,
                    ],
                ),
            );
        }
    }
    for (_, (d, v)) in msgs {
        let s = e.entry((d, "claude".into())).or_default();
        for i in 0..5 {
            s[i] += v[i];
        }
    }
    // pi: every assistant entry with usage, once.
    let mut fs = Vec::new();
    files(&root.join("pi"), &mut fs);
    for f in &fs {
        for l in jsonl(f) {
            let u = &l["message"]["usage"];
            if l["type"] != "message" || l["message"]["role"] != "assistant" || !u.is_object() {
                continue;
            }
            let s = e
                .entry((day(l["timestamp"].as_str().unwrap()), "pi".into()))
                .or_default();
            s[0] += n(u, "input");
            s[1] += n(u, "cacheRead");
            s[2] += n(u, "cacheWrite");
            s[3] += n(u, "output");
        }
    }
    e
}

struct Env {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl Env {
    fn new() -> Env {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("agents");
        copy_dir(&data(), &root);
        std::fs::create_dir_all(tmp.path().join("state")).unwrap();
        std::fs::create_dir_all(tmp.path().join("home")).unwrap();
        Env { root, _tmp: tmp }
    }
    fn state(&self) -> PathBuf {
        self.root.parent().unwrap().join("state")
    }
    fn run(&self, args: &[&str]) -> Output {
        let o = Command::new(bin())
            .env("CODEX_FREE_HOME", self.state())
            .env("HOME", self.root.parent().unwrap().join("home"))
            .env("CODEX_HOME", self.root.join("codex"))
            .env("CLAUDE_CONFIG_DIR", self.root.join("claude"))
            .env("PI_CODING_AGENT_DIR", self.root.join("pi"))
            .env("CODEX_FREE_LOG", "warn")
            // The fixture days are UTC days; reports default to the local zone.
            .env("TZ", "UTC")
            .args(args)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        o
    }
    fn json(&self, args: &[&str]) -> Value {
        let o = self.run(args);
        serde_json::from_slice(&o.stdout).unwrap()
    }
}

fn reported(v: &Value) -> Expect {
    let mut got: Expect = BTreeMap::new();
    for b in v["buckets"].as_array().unwrap() {
        for (agent, t) in b["by_agent"].as_object().unwrap() {
            got.insert(
                (b["period"].as_str().unwrap().to_string(), agent.clone()),
                [
                    n(t, "input_tokens"),
                    n(t, "cache_read_tokens"),
                    n(t, "cache_write_tokens"),
                    n(t, "output_tokens"),
                    n(t, "reasoning_tokens"),
                ],
            );
            assert_eq!(
                n(t, "total_tokens"),
                [
                    "input_tokens",
                    "cache_read_tokens",
                    "cache_write_tokens",
                    "output_tokens"
                ]
                .iter()
                .map(|k| n(t, k))
                .sum::<i64>()
            );
        }
    }
    got
}

#[test]
fn daily_totals_match_the_agents_records_and_duplicates_count_once() {
    let env = Env::new();
    let want = expected(&env.root);
    assert!(
        want.len() >= 4,
        "codex, claude, pi and the second day: {want:?}"
    );
    let v = env.json(&["usage", "daily", "--json", "--timezone", "UTC"]);
    assert_eq!(reported(&v), want);
    // Every column carries something somewhere (the comparison is not all zeros).
    for i in 0..5 {
        assert!(want.values().any(|c| c[i] > 0), "column {i}: {want:?}");
    }
    // Every transcript was read; the duplicates were recognised as such.
    assert_eq!(v["import"]["files_failed"], 0);
    assert!(v["import"]["duplicates"].as_i64().unwrap() > 0);
    // The mock model has no price: listed loudly with its tokens, never $0.
    let unknown = v["unknown_prices"].as_array().unwrap();
    let mock = unknown
        .iter()
        .find(|u| u["model"] == "mock/mock-model")
        .expect("mock model listed as price unknown");
    assert!(mock["totals"]["input_tokens"].as_i64().unwrap() > 0);
    assert_eq!(mock["totals"]["cost_usd"], Value::Null);
    assert!(
        mock["how_to_price"]
            .as_str()
            .unwrap()
            .contains("memories.prices")
    );
    // The resumed session's new gpt-5 turn is priced from the bundled table.
    let prices: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/models/src/model_prices.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let g = &prices["models"]["gpt-5"];
    let f = |k: &str| g[k].as_f64().unwrap();
    let gpt5 = 4000.0 * f("input_cost_per_token")
        + 8000.0 * f("cache_read_input_token_cost")
        + 300.0 * f("output_cost_per_token");
    let day29 = v["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["period"] == "2026-11-29")
        .unwrap();
    let codex = &day29["by_agent"]["codex"];
    assert!(
        (codex["cost_usd"].as_f64().unwrap() - gpt5).abs() < 1e-9,
        "{codex}"
    );
    assert!(codex["unpriced_requests"].as_i64().unwrap() > 0);

    // A second run reads nothing new and reports the same.
    let again = env.json(&["usage", "daily", "--json", "--timezone", "UTC"]);
    assert_eq!(again["import"]["files_read"], 0);
    assert_eq!(reported(&again), want);

    // Adding a price prices the stored rows: no unknown left for that model.
    std::fs::write(
        env.state().join("codex.config.json"),
        r#"{"memories":{"prices":{"mock/mock-model":{"input_per_mtok":1.0,"output_per_mtok":2.0}}}}"#,
    )
    .unwrap();
    let priced = env.json(&["usage", "daily", "--json", "--agent", "pi"]);
    assert!(
        priced["unknown_prices"].as_array().unwrap().is_empty(),
        "{priced}"
    );
    let pi = &priced["total"];
    // Without a cache rate, cache reads and writes cost the input rate.
    let all_input =
        n(pi, "input_tokens") + n(pi, "cache_read_tokens") + n(pi, "cache_write_tokens");
    let expect = all_input as f64 * 1e-6 + n(pi, "output_tokens") as f64 * 2e-6;
    assert!((pi["cost_usd"].as_f64().unwrap() - expect).abs() < 1e-9);
}

#[test]
fn sessions_blocks_and_filters_answer() {
    let env = Env::new();
    let s = env.json(&["usage", "sessions", "--json", "--agent", "claude"]);
    let sessions = s["sessions"].as_array().unwrap();
    assert!(sessions.iter().all(|x| x["agent"] == "claude"));
    // The resumed Claude session replays old messages only: it adds no request.
    assert!(
        !sessions
            .iter()
            .any(|x| x["session_id"] == "aaaa781e-79ed-44a6-af39-d7f79b9d1541"),
        "{s}"
    );
    let b = env.json(&["usage", "blocks", "--json", "--no-import"]);
    let blocks = b["blocks"].as_array().unwrap();
    assert_eq!(blocks.len(), 2, "one block per fixture day: {b}");
    assert!(blocks.iter().all(|x| x["active"] == false));
    let since = env.json(&["usage", "daily", "--json", "--since", "2026-11-30"]);
    let periods: Vec<&str> = since["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["period"].as_str().unwrap())
        .collect();
    assert_eq!(periods, ["2026-11-30"]);
    let text = String::from_utf8(env.run(&["usage", "daily"]).stdout).unwrap();
    assert!(
        text.contains("PRICE UNKNOWN") && text.contains("mock/mock-model"),
        "{text}"
    );
    let bad = Command::new(bin())
        .env("CODEX_FREE_HOME", env.state())
        .args(["usage", "daily", "--since", "yesterday"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("YYYY-MM-DD"));
}

/// A real Claude Code assistant line (tests/data/usage) re-timed to `ts`, with message id
/// `id` and text `text` (bytes, so a test can plant invalid UTF-8).
fn claude_line(ts: &str, id: &str, text: &[u8]) -> Vec<u8> {
    let real = data().join(
        "claude/projects/-home-dev-work-claude-hello/7917781e-79ed-44a6-af39-d7f79b9d1541.jsonl",
    );
    let line = std::fs::read_to_string(real)
        .unwrap()
        .lines()
        .find(|l| l.contains(r#""type":"assistant""#))
        .unwrap()
        .to_string();
    let mut v: Value = serde_json::from_str(&line).unwrap();
    v["timestamp"] = ts.into();
    v["message"]["id"] = id.into();
    v["requestId"] = format!("req_{id}").into();
    v["message"]["content"][0]["text"] = "TEXT".into();
    let s = serde_json::to_string(&v).unwrap();
    let (before, after) = s.split_once("TEXT").unwrap();
    let mut out = before.as_bytes().to_vec();
    out.extend_from_slice(text);
    out.extend_from_slice(after.as_bytes());
    out.push(b'\n');
    out
}

/// A state home and agent homes holding one Claude transcript made of `lines`.
struct Own {
    tmp: tempfile::TempDir,
}

impl Own {
    fn new(lines: &[Vec<u8>]) -> Own {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("claude/projects/-home-dev-work-tz");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("5e55e55e-0000-4000-8000-000000000001.jsonl"),
            lines.concat(),
        )
        .unwrap();
        for d in ["state", "home", "codex", "pi"] {
            std::fs::create_dir_all(tmp.path().join(d)).unwrap();
        }
        Own { tmp }
    }
    fn cmd(&self, tz: &str, args: &[&str]) -> Command {
        let p = self.tmp.path();
        let mut c = Command::new(bin());
        c.env("CODEX_FREE_HOME", p.join("state"))
            .env("HOME", p.join("home"))
            .env("CODEX_HOME", p.join("codex"))
            .env("CLAUDE_CONFIG_DIR", p.join("claude"))
            .env("PI_CODING_AGENT_DIR", p.join("pi"))
            .env("CODEX_FREE_LOG", "error")
            .env("TZ", tz)
            .args(args);
        c
    }
    fn ok(&self, tz: &str, args: &[&str]) -> String {
        let o = self.cmd(tz, args).output().unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).unwrap()
    }
    fn json(&self, tz: &str, args: &[&str]) -> Value {
        serde_json::from_str(&self.ok(tz, args)).unwrap()
    }
}

/// (period, requests) of a period report.
fn buckets(v: &Value) -> Vec<(String, i64)> {
    v["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["period"].as_str().unwrap().to_string(),
                b["totals"]["requests"].as_i64().unwrap(),
            )
        })
        .collect()
}

fn pairs(v: &[(&str, i64)]) -> Vec<(String, i64)> {
    v.iter().map(|(p, n)| (p.to_string(), *n)).collect()
}

#[test]
fn days_are_the_local_zones_by_default_and_timezone_picks_another() {
    // Three requests around midnight in Los Angeles (08:00Z, UTC-8) and Tokyo (15:00Z).
    let own = Own::new(&[
        claude_line("2026-11-29T07:30:00.000Z", "msg_a", b"LA 23:30 on the 28th"),
        claude_line("2026-11-29T08:30:00.000Z", "msg_b", b"LA 00:30 on the 29th"),
        claude_line(
            "2026-11-29T15:30:00.000Z",
            "msg_c",
            b"Tokyo 00:30 on the 30th",
        ),
    ]);
    let la = "America/Los_Angeles";
    // The default is the local zone (TZ).
    let v = own.json(la, &["usage", "daily", "--json"]);
    assert_eq!(v["timezone"], la);
    assert_eq!(buckets(&v), pairs(&[("2026-11-28", 1), ("2026-11-29", 2)]));
    // --timezone wins over TZ, in every report.
    let v = own.json(
        la,
        &[
            "usage",
            "daily",
            "--json",
            "--no-import",
            "--timezone",
            "Asia/Tokyo",
        ],
    );
    assert_eq!(v["timezone"], "Asia/Tokyo");
    assert_eq!(buckets(&v), pairs(&[("2026-11-29", 2), ("2026-11-30", 1)]));
    let v = own.json(
        la,
        &[
            "usage",
            "daily",
            "--json",
            "--no-import",
            "--timezone",
            "UTC",
        ],
    );
    assert_eq!(buckets(&v), pairs(&[("2026-11-29", 3)]));
    // Monday the 30th in Tokyo is ISO week 49; in Los Angeles all is week 48.
    let v = own.json("Asia/Tokyo", &["usage", "weekly", "--json", "--no-import"]);
    assert_eq!(buckets(&v), pairs(&[("2026-W48", 2), ("2026-W49", 1)]));
    let v = own.json(la, &["usage", "weekly", "--json", "--no-import"]);
    assert_eq!(buckets(&v), pairs(&[("2026-W48", 3)]));
    // --since is local midnight of the zone: the 28th's request in LA is left out.
    let v = own.json(
        la,
        &[
            "usage",
            "daily",
            "--json",
            "--no-import",
            "--since",
            "2026-11-29",
        ],
    );
    assert_eq!(buckets(&v), pairs(&[("2026-11-29", 2)]));
    let v = own.json(
        la,
        &[
            "usage",
            "daily",
            "--json",
            "--no-import",
            "--until",
            "2026-11-28",
        ],
    );
    assert_eq!(buckets(&v), pairs(&[("2026-11-28", 1)]));
    // The text heading names the zone; blocks print local times.
    let text = own.ok(la, &["usage", "daily", "--no-import"]);
    assert!(text.lines().next().unwrap().contains(la), "{text}");
    assert!(text.contains("2026-11-28 "), "{text}");
    let blocks = own.ok(la, &["usage", "blocks", "--no-import"]);
    assert!(blocks.lines().next().unwrap().contains(la), "{blocks}");
    assert!(
        blocks.contains("2026-11-28 23:00"),
        "the 07:00Z block, local: {blocks}"
    );
    let v = own.json(
        "Asia/Tokyo",
        &["usage", "sessions", "--json", "--no-import"],
    );
    assert_eq!(v["timezone"], "Asia/Tokyo");
    // The session's last request, 15:30Z, in local time.
    let sessions = own.ok(la, &["usage", "sessions", "--no-import"]);
    assert!(sessions.contains("2026-11-29 07:30"), "{sessions}");
    // An unknown zone is an error naming it.
    let bad = own
        .cmd(la, &["usage", "monthly", "--timezone", "Mars/Olympus_Mons"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("\"Mars/Olympus_Mons\"") && err.contains("IANA"),
        "{err}"
    );
}

#[test]
fn an_empty_report_totals_zero_dollars() {
    let own = Own::new(&[]);
    for what in ["daily", "weekly", "monthly"] {
        let text = own.ok("UTC", &["usage", what]);
        let total = text.lines().find(|l| l.starts_with("total")).unwrap();
        assert!(total.trim_end().ends_with("$0.00"), "{what}: {text}");
        assert!(!text.contains("price unknown"), "{what}: {text}");
    }
}

#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let own = Own::new(&[claude_line("2026-11-29T07:30:00.000Z", "msg_a", b"hi")]);
    // The reader is gone before the command starts: its first write meets a closed pipe,
    // as `codex-free usage daily | head -1` does once head has its line.
    for args in [
        &["usage", "daily"][..],
        &["usage", "blocks", "--json"],
        &["config", "show"],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let o = own
            .cmd("UTC", args)
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            o.status.success() || o.status.signal() == Some(libc::SIGPIPE),
            "{args:?}: {:?} {err}",
            o.status
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn a_usage_line_with_invalid_utf8_is_repaired_and_counted() {
    // The second request's text ends in the first byte of a two-byte character.
    let own = Own::new(&[
        claude_line("2026-11-29T07:30:00.000Z", "msg_a", b"fine"),
        claude_line("2026-11-29T07:31:00.000Z", "msg_b", b"caf\xc3"),
        b"{\"type\":\"assistant\",\"message\":{\"usage\":{\"input_tok\n".to_vec(),
    ]);
    let v = own.json("UTC", &["usage", "daily", "--json"]);
    assert_eq!(v["total"]["requests"], 2, "{v}");
    assert_eq!(v["import"]["lines_repaired"], 1);
    assert_eq!(v["import"]["lines_skipped"], 1);
    assert_eq!(v["import"]["lines_by_agent"]["claude"]["repaired"], 1);
    // Read again from the start (a new state home): the text report says so per agent.
    let again = Own::new(&[claude_line("2026-11-29T07:31:00.000Z", "msg_b", b"caf\xc3")]);
    let text = again.ok("UTC", &["usage", "daily"]);
    assert!(
        text.contains(
            "1 line repaired (invalid UTF-8 decoded lossily), 0 lines skipped (not JSON))"
        ),
        "{text}"
    );
}

/// The text tables: the same column heads in daily and sessions, thousands separators,
/// `--breakdown` per model, sessions with models, first/last request and cache columns,
/// one summary line per source; `usage --help` names the price table and its date.
#[test]
fn tables_share_columns_and_group_thousands() {
    let env = Env::new();
    let daily = String::from_utf8(
        env.run(&["usage", "daily", "--breakdown", "--timezone", "UTC"])
            .stdout,
    )
    .unwrap();
    let head = |t: &str, first: &str| {
        t.lines()
            .find(|l| l.starts_with(first))
            .unwrap_or_else(|| panic!("{first}: {t}"))
            .to_string()
    };
    let cols = [
        "input",
        "cache read",
        "cache write",
        "output",
        "reasoning",
        "total",
        "cost",
    ];
    let dh = head(&daily, "period");
    for c in cols {
        assert!(dh.contains(c), "{dh}");
    }
    let v = env.json(&[
        "usage",
        "daily",
        "--json",
        "--no-import",
        "--timezone",
        "UTC",
    ]);
    let total_input = v["total"]["input_tokens"].as_i64().unwrap();
    assert!(total_input >= 1000, "{v}");
    let total_line = head(&daily, "total");
    let grouped = |n: i64| {
        let s = n.to_string();
        let mut out = String::new();
        for (i, c) in s.chars().enumerate() {
            if i > 0 && (s.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        out
    };
    assert!(total_line.contains(&grouped(total_input)), "{total_line}");
    // --breakdown: a line per model under each day.
    assert!(daily.contains("└ mock/mock-model"), "{daily}");
    assert!(daily.contains("└ openai/gpt-5"), "{daily}");
    // One summary line per source.
    for agent in ["codex", "claude", "pi"] {
        assert!(
            daily
                .lines()
                .any(|l| l.starts_with(&format!("({agent}: ")) && l.contains("skipped")),
            "{agent}: {daily}"
        );
    }
    let sessions = String::from_utf8(
        env.run(&[
            "usage",
            "sessions",
            "--no-import",
            "--breakdown",
            "--timezone",
            "UTC",
        ])
        .stdout,
    )
    .unwrap();
    let sh = head(&sessions, "agent");
    for c in cols
        .iter()
        .chain(&["first request", "last request", "models"])
    {
        assert!(sh.contains(c), "{sh}");
    }
    assert!(sessions.contains("2026-11-29 12:5"), "{sessions}");
    assert!(sessions.contains("  └ openai/gpt-5"), "{sessions}");
    let s = env.json(&["usage", "sessions", "--json", "--no-import"]);
    let first = &s["sessions"][0];
    assert!(
        first["by_model"].is_object() && first["totals"]["cache_read_tokens"].is_i64(),
        "{first}"
    );
    let help = String::from_utf8(env.run(&["usage", "--help"]).stdout).unwrap();
    assert!(
        help.contains("litellm 1.110.2") && help.contains("taken 20"),
        "{help}"
    );
    assert!(help.contains("input = uncached input"), "{help}");
}

/// Claude Code's 1-hour cache writes are billed at the table's 1-hour rate, not the
/// 5-minute one.
#[test]
fn a_one_hour_cache_write_is_billed_at_its_own_rate() {
    let mut line: Value =
        serde_json::from_slice(&claude_line("2026-11-29T07:30:00.000Z", "msg_1h", b"hi")).unwrap();
    line["message"]["model"] = "claude-sonnet-4-5".into();
    line["message"]["usage"] = serde_json::json!({
        "input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 0,
        "cache_creation_input_tokens": 100000,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 100000}
    });
    let mut bytes = serde_json::to_vec(&line).unwrap();
    bytes.push(b'\n');
    let own = Own::new(&[bytes]);
    let v = own.json("UTC", &["usage", "daily", "--json"]);
    // claude-sonnet-4-5: $6 per 1M 1-hour writes (5-minute: $3.75).
    let cost = v["total"]["cost_usd"].as_f64().unwrap();
    assert!((cost - 0.6).abs() < 1e-9, "{v}");
    assert_eq!(v["total"]["cache_write_1h_tokens"], 100000);
}
