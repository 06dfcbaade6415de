//! Line-level text rules shared by the lint and the tidy: what a line is (heading,
//! structure, content), whether it states a dynamic fact, a rule, a check to run, progress
//! or evidence, and how alike two lines are. English and Chinese; no model.
//!
//! A dynamic ("stale") fact is one that was true when written and may no longer be: a
//! version or commit value, deploy/CI/environment state, a dated status, relative time
//! ("currently", "this week", 当前, 本周 …), or where a person is. A line that tells the
//! reader to check such a fact live is the cure, not the disease, and is never stale —
//! unless it also carries the remembered value.

use std::sync::LazyLock;

use regex::Regex;

fn re(p: &str) -> Regex {
    Regex::new(p).expect("hygiene regex compiles")
}

/// The line without its list marker (`-`, `*`, `+`, `1.`), checkbox and surrounding space.
pub fn strip_bullet(line: &str) -> &str {
    static B: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?"));
    let t = line.trim();
    match B.find(t) {
        Some(m) => t[m.end()..].trim(),
        None => t,
    }
}

/// A Markdown ATX heading (`#` .. `######`).
pub fn is_heading(line: &str) -> bool {
    let t = line.trim_start();
    let hashes = t.bytes().take_while(|b| *b == b'#').count();
    (1..=6).contains(&hashes) && t[hashes..].starts_with(' ')
}

/// A line with no content of its own: blank, a code fence, a rule, a table separator,
/// the summary's version line, or an HTML comment.
pub fn is_structural(line: &str) -> bool {
    let t = line.trim();
    t.is_empty()
        || t.starts_with("```")
        || t.starts_with("~~~")
        || t == "v1"
        || (t.starts_with("<!--") && t.ends_with("-->"))
        || t.chars()
            .all(|c| matches!(c, '-' | '*' | '_' | '|' | ':' | ' '))
}

/// Text with the evidence citations `(rollouts: …)` and UUIDs removed: rollout ids are
/// references, not commit hashes.
fn without_ids(s: &str) -> String {
    static CITE: LazyLock<Regex> =
        LazyLock::new(|| re(r"(?i)\((?:rollouts?|rollout_ids?|evidence)\s*:[^)]*\)"));
    static UUID: LazyLock<Regex> = LazyLock::new(|| {
        re(r"(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
    });
    UUID.replace_all(&CITE.replace_all(s, ""), "").into_owned()
}

/// Which live fact a stale line is about; it picks the "verify at task start" check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Topic {
    /// A commit, branch head or image digest.
    Commit,
    /// A version or release number.
    Version,
    /// Deploy, environment or service state.
    Deploy,
    /// CI, build or test status.
    Ci,
    /// Where a person is or who is on duty.
    People,
    /// Any other dated or relative-time status.
    Status,
}

impl Topic {
    /// The check that replaces remembered values of this topic (a check, never a value).
    pub fn check(self) -> &'static str {
        match self {
            Topic::Commit => {
                "- Verify the current commit and branch live (`git log -1`, `git status`) before relying on one; never reuse a remembered hash."
            }
            Topic::Version => {
                "- Verify versions live (lockfile, registry, `--version`) before relying on one; never reuse a remembered version."
            }
            Topic::Deploy => {
                "- Verify deploy and environment state live (the deploy tool or the service itself) at task start."
            }
            Topic::Ci => {
                "- Verify CI and build status on the live checks at task start, not from memory."
            }
            Topic::People => {
                "- Verify who is available and who owns what with the team, not from memory."
            }
            Topic::Status => {
                "- Verify any dated status (\"as of\", \"this week\", \"currently\") against the live project at task start."
            }
        }
    }
}

/// Why a line is a stale fact, when it is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stale {
    /// What the fact is about.
    pub topic: Topic,
    /// The words that made it stale, for the message.
    pub evidence: String,
}

// Values that go out of date.
static HASH: LazyLock<Regex> = LazyLock::new(|| re(r"\b(?:[0-9a-f]{7,40}|sha256:[0-9a-f]{8,})\b"));
static VERSION: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)(?:^|[^\w.])v?\d+\.\d+(?:\.\d+)*(?:-[\w.]+)?\b"));
static DATE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}(?:st|nd|rd|th)?\b|\d{4}\s*年|\d{1,2}\s*月\s*\d{1,2}\s*日",
    )
});

// Relative time and live state: enough on their own.
static STRONG_EN: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?ix)\b(?:currently|current(?:\s+(?:version|release|commit|head|branch|state|status|sprint|owner))|right\s+now|at\s+the\s+moment|as\s+of|today|tonight|yesterday|this\s+(?:week|sprint|month|quarter|morning|afternoon|evening|year)|(?:last|next)\s+(?:week|month|night|sprint|quarter|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|since\s+(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|yesterday|last)|just\s+(?:joined|left|moved|merged|released|deployed|shipped|upgraded|landed|switched|bumped)|(?:is|are|was)\s+now|now\s+(?:is|are|on|uses?|hosted|points?|runs?|at|live|in)|still\s+(?:open|broken|failing|red|blocked|pending|waiting|down|flaky|running|in\s+review|on)|until\s+(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|next)|commits?\s+(?:ahead|behind))\b",
    )
});
static STRONG_ZH: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"当前|目前|现在|本周|这周|上周|下周|本月|这个月|上个月|今天|今日|昨天|昨日|刚刚|刚才|截至|截止到|线上状态|正在|值班",
    )
});
static CI_STATE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?ix)\b(?:ci|build|builds|pipeline|nightly|e2e|tests?|suite|checks?|jenkins|actions|runner)\b[^.;]{0,40}?\b(?:green|red|passing|passes|passed|failing|fails|failed|broken|flaky)\b",
    )
});
static ENV_STATE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?ix)\b(?:staging|prod|production|preprod|dev\s+box|cluster|server|site|service|database|db|env|environment)\b(?:\s+\S+){0,3}?\s+(?:is|are|was|has\s+been)\s+(?:down|up|degraded|broken|unavailable|offline|healthy|restored|migrated|deployed|hosted|pointing|on\s+v?\d)",
    )
});
static DEPLOYED_ZH: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"已(?:经)?(?:部署|上线|发布|合并|通过|回滚|升级|迁移|切换)|部署(?:已)?通过|灰度|降级中|不可用",
    )
});
static PEOPLE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?ix)\b(?:on\s+(?:vacation|holiday|leave|parental\s+leave|sick\s+leave)|out\s+of\s+(?:office|the\s+office)|ooo|off\s+sick|travell?ing|away\s+until|back\s+on|is\s+in\s+(?:the\s+)?[A-Z]\w+\s+office|(?:covers|is)\s+on-?call\s+until)\b|休假|请假|出差|不在公司",
    )
});
// Weaker words: stale unless the line is a rule.
static WEAK_EN: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?ix)\b(?:latest|newest|recently|lately|for\s+now|temporary|temporarily|workaround|last\s+year|this\s+year|so\s+far|pending|waiting\s+(?:for|on)|blocked\s+on|in\s+progress|wip)\b|\bPR\s*\#\d+|\bbuild\s+\#?\d{3,}",
    )
});
static WEAK_ZH: LazyLock<Regex> = LazyLock::new(|| {
    re(r"最新|临时|暂时|去年|今年|最近|提交号|版本号?(?:是|为)|回读|进行中|待验收")
});
// Status verbs that make a dated line a dated status.
static STATUS_VERB: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?ix)\b(?:finished|fixed|passed|failed|deployed|released|shipped|merged|resolved|upgraded|restored|completed|done|landed|migrated|rolled\s+(?:out|back)|went\s+live|is|are|was|were|runs?|running)\b|上线|通过|完成|修复|部署|发布|升级|迁移|回滚",
    )
});

// A rule: preference, boundary or principle.
static RULE_EN: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?ix)\b(?:never|always|must|must\s+not|do\s+not|don't|dont|avoid|prefer|prefers|preferred|ask\s+before|not\s+allowed|forbidden|required|requires|only\s+through|instead\s+of\s+(?:this\s+)?memory|wins|takes\s+precedence|decision\s+principle|rule|boundary)\b",
    )
});
static RULE_ZH: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"禁止|必须|不要|不得|一律|始终|优先|永远|切勿|务必|不允许|为准|原则|许可证边界|硬边界|之前先|前先",
    )
});

// A check to run live instead of a remembered value.
static VERIFY_EN: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?ix)(?:^|[;:,.]\s*|\b(?:always|must|should|then|to|please|first)\s+)(?:verify|re-?check|check|confirm|look\s+up|query|read\s+it\s+from)\b|\b(?:at\s+task\s+start|at\s+the\s+start\s+of|live\s+checks?|check(?:ed)?\s+live|verif(?:y|ied)\s+live|from\s+the\s+live|(?:not|never)\s+from\s+(?:memory|notes)|instead\s+of\s+(?:this\s+memory|trusting))\b",
    )
});
static VERIFY_ZH: LazyLock<Regex> =
    LazyLock::new(|| re(r"核验|核对|现场|任务开始|实时查询|重新确认|先确认|请确认|以现场"));

/// True when `s` (bullet stripped) contains a value that goes out of date: a commit hash,
/// a dotted version, or a date.
fn has_value(s: &str) -> bool {
    has_hash(s) || VERSION.is_match(s) || DATE.is_match(s)
}

fn has_hash(s: &str) -> bool {
    HASH.find_iter(s).any(|m| {
        let t = m.as_str();
        t.starts_with("sha256:")
            || (t.bytes().any(|b| b.is_ascii_digit()) && t.bytes().any(|b| b.is_ascii_alphabetic()))
    })
}

/// True when the line is a rule (preference, boundary, principle), in English or Chinese.
pub fn is_rule(line: &str) -> bool {
    let s = strip_bullet(line);
    RULE_EN.is_match(s) || RULE_ZH.is_match(s)
}

/// True when the line tells the reader to check something live (and carries no value).
pub fn is_verify(line: &str) -> bool {
    let s = without_ids(strip_bullet(line));
    (VERIFY_EN.is_match(&s) || VERIFY_ZH.is_match(&s)) && !has_value(&s)
}

/// The stale-fact verdict for one line; `None` for rules, checks, pointers and content
/// without a dynamic fact. Headings and structure lines are never stale.
pub fn stale(line: &str) -> Option<Stale> {
    if is_heading(line) || is_structural(line) {
        return None;
    }
    let s = without_ids(strip_bullet(line));
    if s.is_empty() || is_verify(&s) {
        return None;
    }
    let rule = RULE_EN.is_match(&s) || RULE_ZH.is_match(&s);
    let topic = |s: &str| topic_of(s);
    let hit = |r: &Regex| r.find(&s).map(|m| m.as_str().trim().to_string());
    if has_hash(&s) {
        let ev = HASH
            .find_iter(&s)
            .map(|m| m.as_str().to_string())
            .find(|t| t.bytes().any(|b| b.is_ascii_digit()))
            .unwrap_or_default();
        return Some(Stale {
            topic: Topic::Commit,
            evidence: format!("commit-like value {ev}"),
        });
    }
    for r in [&*PEOPLE] {
        if let Some(ev) = hit(r) {
            return Some(Stale {
                topic: Topic::People,
                evidence: ev,
            });
        }
    }
    for (r, state) in [
        (&*STRONG_EN, false),
        (&*STRONG_ZH, false),
        (&*CI_STATE, true),
        (&*ENV_STATE, true),
        (&*DEPLOYED_ZH, true),
    ] {
        // "the current version", "the latest tag" inside a rule name a concept, not a
        // value: a rule is stale only when it also states a value or a live state.
        if !state && rule && !has_value(&s) {
            continue;
        }
        if let Some(ev) = hit(r) {
            return Some(Stale {
                topic: topic(&s),
                evidence: ev,
            });
        }
    }
    let weak = hit(&WEAK_EN).or_else(|| hit(&WEAK_ZH));
    let version = VERSION.find(&s).map(|m| m.as_str().trim().to_string());
    let dated = DATE.find(&s).map(|m| m.as_str().to_string());
    let dated_status = dated.is_some() && STATUS_VERB.is_match(&s);
    if rule {
        // A rule with a date or a weak word ("never install the latest major") stays a rule.
        return None;
    }
    let ev = weak
        .or(version.map(|v| format!("version {v}")))
        .or(if dated_status {
            dated.map(|d| format!("dated status ({d})"))
        } else {
            None
        })?;
    Some(Stale {
        topic: topic(&s),
        evidence: ev,
    })
}

fn topic_of(s: &str) -> Topic {
    static COMMIT: LazyLock<Regex> =
        LazyLock::new(|| re(r"(?i)\b(?:commit|head|sha|hash|branch|tag)\b|提交"));
    static CI: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"(?i)\b(?:ci|build|pipeline|nightly|e2e|tests?|suite|coverage|jenkins|runner)\b|构建|测试",
        )
    });
    static DEPLOY: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"(?i)\b(?:deploy\w*|prod|production|staging|cluster|server|env|environment|hosted|outage|flag|database|db|service)\b|部署|上线|线上|环境|服务|灰度",
        )
    });
    static VER: LazyLock<Regex> =
        LazyLock::new(|| re(r"(?i)\b(?:version|release|v\d|upgraded?|bump\w*)\b|版本|发布|升级"));
    static PPL: LazyLock<Regex> =
        LazyLock::new(|| re(r"(?i)\b(?:owns|owner|on\s+call|joined|reviews?)\b|值班|负责"));
    if CI.is_match(s) && !DEPLOY.is_match(s) {
        Topic::Ci
    } else if DEPLOY.is_match(s) {
        Topic::Deploy
    } else if VER.is_match(s) || VERSION.is_match(s) {
        Topic::Version
    } else if COMMIT.is_match(s) {
        Topic::Commit
    } else if PPL.is_match(s) {
        Topic::People
    } else {
        Topic::Status
    }
}

/// Dedup key: lower-cased, list marker and punctuation removed, whitespace collapsed.
pub fn normalize(line: &str) -> String {
    let s = strip_bullet(line).to_lowercase();
    let mut out = String::with_capacity(s.len());
    let mut space = false;
    for c in s.chars() {
        if c.is_alphanumeric() {
            out.push(c);
            space = false;
        } else if !space && !out.is_empty() {
            out.push(' ');
            space = true;
        }
    }
    out.trim_end().to_string()
}

/// Words (ASCII, 2+ chars) and CJK character bigrams of a line, hashed, sorted, deduplicated.
pub fn shingles(line: &str) -> Vec<u64> {
    use std::hash::{Hash, Hasher};
    let n = normalize(line);
    let mut out = Vec::new();
    let h = |s: &str| {
        let mut d = std::collections::hash_map::DefaultHasher::new();
        s.hash(&mut d);
        d.finish()
    };
    for w in n.split(' ') {
        let cjk: Vec<char> = w.chars().filter(|c| is_cjk(*c)).collect();
        if cjk.is_empty() {
            if w.chars().count() >= 2 {
                out.push(h(w));
            }
        } else {
            for pair in cjk.windows(2) {
                out.push(h(&pair.iter().collect::<String>()));
            }
            let rest: String = w.chars().filter(|c| !is_cjk(*c)).collect();
            if rest.chars().count() >= 2 {
                out.push(h(&rest));
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// A Chinese/Japanese ideograph.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF)
}

/// Jaccard similarity of two sorted, deduplicated shingle sets (0.0 ..= 1.0).
pub fn jaccard(a: &[u64], b: &[u64]) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let (mut i, mut j, mut both) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                both += 1;
                i += 1;
                j += 1;
            }
        }
    }
    both as f64 / (a.len() + b.len() - both) as f64
}

/// Progress-log lines: a leading date, a checkbox, or words of done/ongoing work.
pub fn is_progress(line: &str) -> bool {
    static P: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"(?ix)^\s*(?:[-*+]\s+)?(?:\[[\ xX]\]|\d{4}-\d{2}-\d{2}|(?:done|todo|wip|progress|next|status|update|today)\s*:)|\b(?:finished|completed|implemented|started|merged|refactored|wrote|added|fixed|ran|re-?ran|bumped|moved|renamed|investigated|paired)\b|完成|进度|已修复|待办|今日|开始做|做完",
        )
    });
    P.is_match(line)
}

/// A log entry: a list item that opens with a date (`2025-03-04:`) or a checkbox.
pub fn is_log_entry(line: &str) -> bool {
    static L: LazyLock<Regex> = LazyLock::new(|| {
        re(r"^\s*(?:[-*+]\s+)?(?:\[[ xX]\]\s|\d{4}-\d{2}-\d{2}\b|\d{4}年\d{1,2}月\d{1,2}日)")
    });
    L.is_match(line)
}

/// Evidence lines: incident, release and debugging detail, command output, snapshots.
pub fn is_evidence(line: &str) -> bool {
    static E: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"(?ix)\b(?:incident|outage|postmortem|post-mortem|root\s+cause|timeline|read-?back|release|rollout|snapshot|stack\s*trace|traceback|panic|error|exit\s+code|output|logs?|repro|benchmark|measured|p\d\d|latency|sign-?off|changelog)\b|^\s*(?:[-*+]\s+)?\$\s|事故|故障|排障|复盘|回读|发布|日志|报错|验收",
        )
    });
    E.is_match(line) || line.chars().count() > 300
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bullets_headings_and_structure() {
        assert_eq!(strip_bullet("  - [x] done"), "done");
        assert_eq!(strip_bullet("12. item"), "item");
        assert!(is_heading("## Tools") && !is_heading("#hashtag"));
        assert!(
            is_structural("| --- | --- |") && is_structural("```rust") && !is_structural("- a")
        );
    }

    #[test]
    fn rollout_ids_are_not_commit_hashes() {
        assert!(
            stale("- Use pnpm, never npm (rollouts: 019a3f2e-8c1d-7e4b-9a2f-0c1d2e3f4a5b)")
                .is_none()
        );
        assert_eq!(stale("- HEAD is 1a2b3c4d").unwrap().topic, Topic::Commit);
    }

    #[test]
    fn similarity() {
        let a = shingles("Always use pnpm for installs in this repo");
        let b = shingles("always use pnpm for installs in this repository");
        assert!(jaccard(&a, &b) > 0.7 && jaccard(&a, &a) == 1.0);
        assert!(jaccard(&shingles("优先使用 pnpm"), &shingles("禁止提交凭据")) < 0.2);
    }
}
