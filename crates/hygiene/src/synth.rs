//! A reproducible bloated memory, shaped like a real one that grew for months: a block of
//! stable rules, then forty task groups of progress logs, incident notes, release
//! read-backs, stale facts, command output and restated rules — about 1,900 lines and
//! 200 KB, in English and Chinese. The same seed always gives the same bytes (a test
//! checks the copy in `tests/data/hygiene/bloated/` against it).
//!
//! Used by the tidy tests and by `memories bench-hygiene`.

use std::fmt::Write as _;

/// The generated folder content.
#[derive(Debug, Clone)]
pub struct Bloated {
    /// `MEMORY.md`.
    pub memory: String,
    /// `memory_summary.md` (also bloated: restates rules and stale facts).
    pub summary: String,
    /// The preference / boundary / principle lines that must stay in `MEMORY.md`.
    pub rules: Vec<String>,
}

/// The stable rules (each must survive a tidy in `MEMORY.md`).
pub const RULES: &[&str] = &[
    "- Never commit secrets, tokens or .env files; keep credentials in the OS keyring.",
    "- Never force-push to main or to a release branch.",
    "- Always run `cargo fmt` and `cargo clippy -- -D warnings` before committing.",
    "- Prefer pnpm over npm for every JavaScript package in this workspace.",
    "- Ask before running database migrations against a shared environment.",
    "- Do not copy code from vendor/ (GPL-3.0) into the MIT-licensed crates.",
    "- Release notes must be confirmed against the tag and the changelog before publishing.",
    "- Prefer small pull requests that a reviewer can read in one sitting.",
    "- Never run `terraform apply` without a reviewed plan file.",
    "- Always reproduce a bug with a failing test before fixing it.",
    "- Do not add a dependency without checking its licence and maintenance status.",
    "- Prefer the standard library over a crate for one small function.",
    "- When AGENTS.md and this memory disagree, AGENTS.md wins.",
    "- Never print a provider key in a log line, an error message or a test snapshot.",
    "- Always write commit messages in the imperative mood, under 72 characters.",
    "- Avoid `unwrap()` in library code; tests may unwrap.",
    "- Must keep the public HTTP API backward compatible with version 1 clients.",
    "- Never deploy on a Friday afternoon or before a public holiday.",
    "- Prefer answers that give the command first and the explanation after.",
    "- Do not rewrite published git history; add a revert commit instead.",
    "- Always bind development servers to 127.0.0.1, never to 0.0.0.0.",
    "- Never disable the command sandbox to make a test pass.",
    "- Prefer integration tests that drive the real binary over mocks, except for model providers.",
    "- Ask the user before deleting any file outside the project folder.",
    "- Never store personal data (phone numbers, addresses) in logs or fixtures.",
    "- Always keep MEMORY.md under 150 lines; progress belongs in the daily log.",
    "- Do not trust a remembered version or commit; read it from the repository.",
    "- Prefer `rg` over `grep -r` for searching large trees.",
    "- Never merge with failing checks, even when the failure looks unrelated.",
    "- Always back up a memory folder before cleaning it and verify with a read-back.",
    "- Avoid long-running watchers in CI; every job must finish on its own.",
    "- Must sign release tags with the project key.",
    "- Never send repository contents to a model provider the user has not configured.",
    "- Prefer UTC timestamps in logs and file names.",
    "- Do not change the config file format without a migration and a test.",
    "- Always keep the Chinese and English READMEs in step.",
    "- Avoid network calls in unit tests; use the mock provider.",
    "- Never answer with a success message for work that did not finish.",
    "- Prefer one clear error message naming the file over a generic failure.",
    "- Must keep every write to shared state atomic (temp file, fsync, rename).",
    "- 禁止把凭据、令牌写进仓库、日志或记忆。",
    "- 发布前必须准确确认版本号、标签和变更清单。",
    "- 优先使用 pnpm，不要用 npm。",
    "- 这个工作区有明确的许可证边界：vendor 目录下的代码不得复制到主仓库。",
    "- 摘要与 AGENTS.md 冲突时，一律以 AGENTS.md 为准。",
    "- 修复之前必须先写出能复现问题的测试。",
    "- 不要在周五下午或节假日前发布。",
    "- 数据库迁移必须先在预发环境验证，再上生产。",
    "- 提交信息始终使用祈使句，第一行不超过 72 个字符。",
    "- 清理记忆之前必须先备份，并用 git status 回读确认。",
    "- 不要把一次性的排障过程写进主记忆，放到归档里。",
    "- 禁止在测试里访问真实的模型服务。",
    "- 用户偏好先给命令，再给解释，回答尽量简短。",
    "- 大版本升级前必须阅读变更日志并在分支上验证。",
    "- 永远不要为了让测试通过而关闭沙箱。",
    "- Never widen a path jail to make a tool call succeed; fix the caller.",
    "- Always name the config key, the value and the allowed range in a validation error.",
    "- Prefer deleting dead code over commenting it out.",
    "- Do not log request bodies of the model providers.",
    "- Always check that a rollback restores the exact previous bytes.",
];

const TOPICS: &[&str] = &[
    "font loader",
    "billing refactor",
    "login flow",
    "search index",
    "release pipeline",
    "memory budgets",
    "HTTP transport",
    "sandbox profile",
    "config migration",
    "tray menu",
    "grep tool",
    "patch tool",
    "usage log",
    "price table",
    "scheduler lock",
    "transcript parser",
    "keyring fallback",
    "UI settings page",
    "OAuth login",
    "FTS index",
];
const PEOPLE: &[&str] = &["Alice", "Bob", "Carol", "Dave", "小王", "小李"];
const ENVS: &[&str] = &["staging", "prod", "preprod", "the dev box"];

/// A small deterministic generator (64-bit LCG); no dependency, same numbers everywhere.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
    fn hash(&mut self) -> String {
        format!(
            "{:07x}{:05x}",
            self.next() & 0xfff_ffff,
            self.next() & 0xfffff
        )
    }
    fn version(&mut self) -> String {
        format!(
            "{}.{}.{}",
            1 + self.below(4),
            self.below(20),
            self.below(30)
        )
    }
}

fn date(group: usize, day: usize) -> String {
    let month = 1 + (group / 4) % 12;
    let d = 1 + (group * 7 + day) % 28;
    format!("2025-{month:02}-{d:02}")
}

/// The bloated memory for `seed` (the shipped copy uses seed 2).
///
/// Long on purpose: a fixture written top to bottom, one section after another; its order is the
/// document's order.
#[expect(
    clippy::too_many_lines,
    reason = "a fixture written top to bottom, one section after another; its order is the document's order"
)]
pub fn bloated(seed: u64) -> Bloated {
    let mut r = Lcg(seed);
    let mut m = String::new();
    m.push_str("# Memory\n\nLong-term memory of this workspace. Read it before every task.\n\n## Stable preferences and boundaries\n\n");
    for rule in RULES {
        m.push_str(rule);
        m.push('\n');
    }
    for g in 0..40 {
        let topic = TOPICS[g % TOPICS.len()];
        let d0 = date(g, 0);
        let _ = writeln!(m, "\n## Task group {:02}: {topic} ({d0})\n", g + 1);
        for k in 0..14 {
            let d = date(g, k);
            let h = r.hash();
            let n = 10 + r.below(400);
            let line = match r.below(6) {
                0 => format!(
                    "- {d}: finished the {topic} change in {} files; ran the unit tests ({n} passed) and pushed branch feature/{}-{k}.",
                    3 + r.below(20),
                    topic.replace(' ', "-")
                ),
                1 => format!(
                    "- {d}: started on {topic}; investigated why the second run re-reads every file, wrote notes in the PR description."
                ),
                2 => format!(
                    "- {d}: 完成了{topic}的第 {k} 步，补了 {n} 行测试，明天继续处理边界情况和错误信息。"
                ),
                3 => format!(
                    "- {d}: merged the {topic} PR after review by {}; follow-up ticket filed for the docs.",
                    r.pick(PEOPLE)
                ),
                4 => format!(
                    "- {d}: refactored the {topic} module, moved helpers into their own file, and re-ran clippy (clean)."
                ),
                _ => format!(
                    "- [x] {topic}: step {k} of the plan, including the migration notes and the rollback instructions ({d})."
                ),
            };
            let _ = writeln!(
                m,
                "{line} Notes for next time: {topic} edge cases, error texts and docs still to review."
            );
            if k % 3 == 0 {
                let _ = writeln!(
                    m,
                    "- Commit {h} carries the {topic} work of {d}; the follow-up is on the same branch."
                );
            }
        }
        let _ = writeln!(
            m,
            "- Incident on {d0}: the {topic} job hung for {} minutes; root cause was a lock held across an await; timeline and logs are in the rollout summary.",
            5 + r.below(50)
        );
        let _ = writeln!(
            m,
            "- Root cause analysis of the {topic} incident: the retry loop did not back off, so the provider returned 429 for {} requests in a row; we measured p95 latency at {} ms.",
            20 + r.below(200),
            100 + r.below(900)
        );
        let _ = writeln!(
            m,
            "- 事故复盘：{topic} 在 {d0} 超时，排障过程见归档，报错信息为 connection reset by peer，影响约 {} 个请求。",
            10 + r.below(500)
        );
        for _ in 0..3 {
            let v = r.version();
            let h = r.hash();
            let _ = writeln!(
                m,
                "- Release read-back: v{v} tagged at {h}, {} tests passed, {} skipped, artifacts uploaded, checksums verified by the release script on {d0}.",
                500 + r.below(900),
                r.below(12)
            );
        }
        let _ = writeln!(
            m,
            "- Current version of the {topic} service on {} is {}.",
            r.pick(ENVS),
            r.version()
        );
        let _ = writeln!(
            m,
            "- {} is on vacation this week; ask {} about the {topic} review.",
            r.pick(PEOPLE),
            r.pick(PEOPLE)
        );
        let _ = writeln!(m, "- CI on main is green as of {d0} after the {topic} fix.");
        let _ = writeln!(
            m,
            "- 当前线上版本是 v{}，提交号 {}。",
            r.version(),
            r.hash()
        );
        let _ = writeln!(
            m,
            "- {} is currently down for the {topic} migration; use the mock until it is back.",
            r.pick(ENVS)
        );
        let _ = writeln!(
            m,
            "- 本周重点：把 {topic} 的剩余问题收尾，临时方案是先关闭缓存。"
        );
        let _ = writeln!(
            m,
            "- The {topic} code lives in crates/{}/src and has {} modules; the tests are next to the code.",
            topic.split(' ').next().unwrap_or("x"),
            3 + r.below(9)
        );
        let _ = writeln!(
            m,
            "- Benchmark for {topic}: {} ms cold, {} ms warm on the laptop, measured with hyperfine over 20 runs.",
            200 + r.below(800),
            20 + r.below(200)
        );
        let _ = writeln!(
            m,
            "- Snapshot of the {topic} config before the change: timeout 30 s, retries 3, cache on, batch size {}.",
            8 + r.below(56)
        );
        // Restated rules: the agent kept writing them again.
        for _ in 0..2 {
            let _ = writeln!(m, "{}", RULES[r.below(RULES.len())]);
        }
        let _ = writeln!(
            m,
            "\n```text\n$ cargo test -p {}\nrunning {} tests\ntest result: ok. {} passed; 0 failed\n```",
            topic.replace(' ', "-"),
            40 + r.below(200),
            40 + r.below(200)
        );
    }
    let mut s = String::from(
        "v1\n## User Profile\n- A developer who works with several AI coding agents on one Rust workspace.\n## User preferences\n",
    );
    for rule in RULES.iter().take(12) {
        s.push_str(rule);
        s.push('\n');
    }
    s.push_str("## General Tips\n");
    for g in 0..30 {
        let topic = TOPICS[g % TOPICS.len()];
        let _ = writeln!(
            s,
            "- The {topic} work was finished on {} and released as v{}.",
            date(g, 3),
            r.version()
        );
    }
    s.push_str("## What's in Memory\n- MEMORY.md: rules, then forty task groups.\n");
    Bloated {
        memory: m,
        summary: s,
        rules: RULES.iter().map(|x| x.to_string()).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_and_reproducibility() {
        let b = bloated(2);
        let lines = b.memory.lines().count();
        assert!(lines >= 1800, "{lines} lines");
        assert!(b.memory.len() >= 200_000, "{} bytes", b.memory.len());
        assert_eq!(b.memory, bloated(2).memory);
        let shipped = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/data/hygiene/bloated/MEMORY.md"
        ));
        assert!(
            shipped == b.memory,
            "tests/data/hygiene/bloated/MEMORY.md is out of date: regenerate it with `codex-free memories bench-hygiene --write-fixture tests/data/hygiene/bloated`"
        );
    }
}
