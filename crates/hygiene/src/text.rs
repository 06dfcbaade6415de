//! Text rules shared by the lint and the tidy: what a line is (heading, structure, content),
//! whether it states a fact that expires ("stale"), a rule, or a check to run, and how alike
//! two lines are. English and Chinese; no model.
//!
//! Stale is decided by the *shape* of a line, never by a list of phrases: a date that marks
//! when something happened, a status field (a key whose value is a state), a status mark
//! (✅ ⬜ 🔄 …) or a checkbox, a number measured at a time (`~75%`, `34/34 passing`,
//! `9497亿元`), a "last updated" stamp, a changelog or first-person narrative opening, a commit
//! hash, a git conflict marker, and — for [`stale_lines`], which sees the whole file — every
//! line of a section whose heading names a transient state (current …, next steps, known
//! issues, 当前…, 下一步, 已完成 …). A rule (a modal such as must / never / 必须 / 禁止, or a
//! key such as `Rule:` / `原则`) outweighs the weaker shapes: a rule that cites the day it was
//! adopted is still a rule. Stack requirements (`Vue 3.5+`, `Node 22+`), thresholds
//! (`coverage ≥ 80%`), IP addresses and file sizes are not values that expire.

use std::sync::LazyLock;

use regex::Regex;

#[expect(
    clippy::expect_used,
    reason = "a fixed pattern written in this file; every test that runs the matcher compiles it"
)]
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
    heading_level(line).is_some()
}

/// The level (1..=6) of an ATX heading.
pub fn heading_level(line: &str) -> Option<usize> {
    let t = line.trim_start();
    let hashes = t.bytes().take_while(|b| *b == b'#').count();
    ((1..=6).contains(&hashes) && (t.len() == hashes || t[hashes..].starts_with(' ')))
        .then_some(hashes)
}

/// A line with no content of its own: blank, a code fence, a rule, a table separator,
/// the summary's version line, an HTML comment, or a lone list marker.
pub fn is_structural(line: &str) -> bool {
    let t = line.trim();
    t.is_empty()
        || t.starts_with("```")
        || t.starts_with("~~~")
        || t == "v1"
        || (t.starts_with("<!--") && t.ends_with("-->"))
        || t.chars()
            .all(|c| matches!(c, '-' | '*' | '_' | '|' | ':' | ' ' | '+'))
}

/// A git conflict marker line (`<<<<<<< x`, `=======`, `>>>>>>> x`, `||||||| x`).
pub fn is_conflict_marker(line: &str) -> bool {
    let t = line.trim_end();
    t == "======="
        || ["<<<<<<< ", ">>>>>>> ", "||||||| "]
            .iter()
            .any(|p| t.starts_with(p))
        || t == "<<<<<<<"
        || t == ">>>>>>>"
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

/// Text without code spans, links' targets, URLs and file names: what is inside them is a
/// name, not a statement (`memory/2026-02-13.md` is a file, `09/21/2025` in backticks an
/// example, `192.168.1.10` a host).
fn prose(s: &str) -> String {
    static CODE: LazyLock<Regex> = LazyLock::new(|| re(r"`[^`]*`"));
    static URL: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)\b(?:https?|ftp)://\S+|\]\([^)]*\)"));
    static FILE: LazyLock<Regex> = LazyLock::new(|| {
        // A path: rooted (`/x`, `~/x`, `./x`), ending in a slash (`src/`), with two slashes or
        // more, or a file name with an extension. `Plan/Build` is two words, not a path.
        re(
            r"(?:~|\.{1,2})?/[\w.-]+(?:/[\w.-]*)*|[\w.-]+/(?:[\w.-]+/)*[\w.-]*\.\w{1,5}\b|[\w.-]+/(?:[\w.-]+/)+|[\w.-]+(?:/[\w.-]+){2,}|[\w.-]+\.(?:md|mdx|txt|json|jsonl|ya?ml|toml|ts|tsx|js|py|rs|go|log|csv|sh|html|css|lock|db|png|jpe?g|pdf|docx?|pptx?|zip)\b|[A-Za-z]:\\\S*",
        )
    });
    static IP: LazyLock<Regex> =
        LazyLock::new(|| re(r"\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}(?::\d+)?\b"));
    let s = CODE.replace_all(s, " ");
    let s = URL.replace_all(&s, " ");
    let s = FILE.replace_all(&s, " ");
    IP.replace_all(&s, " ").into_owned()
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

/// The shape that made a line stale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Shape {
    /// A date marking when something happened.
    Dated,
    /// A "last updated" / "最后更新" stamp.
    Stamp,
    /// A key whose value is a state (`Status: …`, `**状态**: 已完成`).
    StatusField,
    /// A status mark (✅ ⬜ 🔄 ⏳ …) or a parenthesised state.
    StatusMark,
    /// A checkbox item (`- [ ]`, `- [x]`).
    Checkbox,
    /// A measured or counted value (`~75%`, `34/34 passing`, `9497亿元`).
    Snapshot,
    /// Relative time (currently, this week, 目前, 本周 …).
    RelativeTime,
    /// A changelog or first-person narrative line (`Added …`, `I tried …`, `优化了 …`).
    Narrative,
    /// A commit hash or image digest.
    Commit,
    /// A version stated as what is installed or current.
    Version,
    /// A heading or line of a section that names a transient state.
    Section,
    /// A git conflict marker.
    ConflictMarker,
}

/// Why a line is a stale fact, when it is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stale {
    /// What the fact is about.
    pub topic: Topic,
    /// The shape that decided it.
    pub shape: Shape,
    /// The words that made it stale, for the message.
    pub evidence: String,
    /// True when the line has no stale shape of its own and takes the verdict from its
    /// section or lead-in (context, not evidence: a rule under "Next steps" may still last).
    pub inherited: bool,
    /// True when the verdict is one the rules cannot be sure of: it is inherited, and the
    /// line has a rule's form, or is a `key: value` field under a dated heading (a dated
    /// section also records set-ups that outlive the day). The lint leaves such a line alone
    /// and the tidy keeps it loaded unless a model decides it.
    pub unsure: bool,
}

// ---- Shapes -------------------------------------------------------------------------

/// A calendar date: ISO (`2025-07-05`, `2025/7/5`, `2025.07.05`), Chinese (`2025年7月5日`,
/// `7月5日`, `2026年6月`), English (`18 December 2025`, `Dec 18, 2025`) or US (`09/21/2025`).
static DATE: LazyLock<Regex> = LazyLock::new(|| {
    // No `\b` next to a digit: in Chinese text a date touches ideographs, which are word
    // characters too (`（2026-02-10安装）`).
    re(r"(?ix)(?:^|[^\d.])(?P<d>
          (?:19|20)\d{2}[-/.](?:0?[1-9]|1[0-2])[-/.](?:0?[1-9]|[12]\d|3[01])(?:[T\s]+\d{1,2}:\d{2}(?::\d{2})?)?
        | (?:19|20)\d{2}\s*年\s*\d{1,2}\s*月(?:\s*\d{1,2}\s*[日号])?
        | \d{1,2}\s*月\s*\d{1,2}\s*[日号]
        | \d{1,2}(?:st|nd|rd|th)?\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?,?\s+(?:19|20)\d{2}
        | (?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}(?:st|nd|rd|th)?,?\s+(?:19|20)\d{2}
        | (?:0?[1-9]|1[0-2])/(?:0?[1-9]|[12]\d|3[01])/(?:19|20)\d{2}
        )(?:[^\d]|$)")
});

/// The date in `s`, if any (outside names: call on [`prose`] text).
fn date_in(s: &str) -> Option<String> {
    DATE.captures(s).map(|c| c["d"].trim().to_string())
}

/// A stamp: "last updated", "updated", "saved", "session date", "最后更新", "更新于" followed by
/// a date (the date is checked separately).
static STAMP: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?ix)
        \b(?:last[\s_-]*(?:updated|modified|reviewed|edited|checked|run)|updated(?:\s+(?:on|at))?|saved|session\s+date|generated|as\s+of|snapshot\s+(?:date|time))\b\s*\**\s*[:：]?
      | (?:最后|最近)?(?:更新|修改|编辑)(?:于|时间|日期)?\s*\**\s*[:：]
      | (?:更新|修改)于")
});

/// A line (after its marker) that opens with a date or a time of day: a log entry.
static OPENS_WITH_DATE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^[\s>*_\[(（【]*(?:(?:19|20)\d{2}[-/.]\d{1,2}[-/.]\d{1,2}|(?:19|20)\d{2}\s*年\s*\d{1,2}\s*月|\d{1,2}\s*月\s*\d{1,2}\s*日|\d{1,2}:\d{2}(?::\d{2})?\s*[-–—:：|]|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}(?:st|nd|rd|th)?\s*[-–—:：|])",
    )
});

/// Status marks that report done / open / in progress / broken.
const MARKS: &[char] = &[
    '✅', '✔', '✓', '☑', '❌', '✗', '✘', '⬜', '☐', '🔲', '🔄', '⏳', '⌛', '🚧', '🟡', '🟢', '🔴',
    '🟠', '⚪', '🎉', '⚠',
];

/// A checkbox list item.
static CHECKBOX: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*(?:[-*+]|\d+[.)])\s+\[[ xX✓✔~/-]\]"));

/// Words that are a state when they are a field's value or a parenthesised note.
static STATE: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?ix)^(?:
          done|complete|completed|finished|fixed|resolved|merged|released|deployed|shipped|live
        | in[\s-]progress|ongoing|wip|todo|to\s+do|not\s+(?:yet\s+)?(?:started|implemented|done|enabled|connected)
        | started|pending|planned|planning|blocked|deferred|on\s+hold|paused|stopped|running|ready
        | active|inactive|enabled|disabled|passing|failing|failed|broken|green|red|healthy|down|up
        | production[\s-]ready|stable|beta|alpha|deprecated|superseded|obsolete|preliminary|tentative|provisional
        | 已完成|已经完成|完成|已实现|已上线|已发布|已部署|已修复|已解决|已安装|已合并|进行中|开发中|规划中
        | 计划中|未开始|未实现|待定|待办|待处理|待确认|待排查|暂停|已暂停|运行中|正常|异常|失败|通过|已通过
        | 阻塞|已废弃|废弃|可用|不可用)\b")
});

/// True when a field's value is a state (`done`, `in progress`, `已完成`, `运行中，端口 8000`).
/// A Chinese state word counts only as the whole value or before punctuation: in
/// `通过 find-skills 搜索` the word is the preposition "via", not "passed".
///
/// An English state word counts as the whole value, before punctuation, or before a
/// preposition, conjunction or adverb (`Deployed to staging`, `Done and verified`); before
/// any other word it is an imperative or an attribute (`Complete current phase first`,
/// `Production-ready Rails engine for …`), which describes rather than reports.
fn is_state_value(v: &str) -> bool {
    /// Function words that can follow a state: prepositions, conjunctions, adverbs.
    static AFTER_STATE: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"(?i)^(?:in|on|to|for|by|with|at|since|as|and|but|or|after|before|until|from|via|of|into|locally|successfully|now|yet|already|again|today|yesterday|except|pending|not)\b|^[—–-]",
        )
    });
    let Some(m) = STATE.find(v) else {
        return false;
    };
    let rest = v[m.end()..].trim_start();
    if rest.is_empty() || rest.starts_with(|c: char| !c.is_alphanumeric() && !is_cjk(c)) {
        return true;
    }
    !m.as_str().chars().next().is_some_and(is_cjk) && AFTER_STATE.is_match(rest)
}

/// Keys whose value is a state whatever it says.
static STATUS_KEY: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?ix)^(?:
          (?:project|current|overall|implementation|build|deploy(?:ment)?|ci|test(?:ing)?|system|task|server)?\s*(?:status|state)
        | active\s+(?:work|task|branch|phase|sprint)|phase|current\s+phase|progress|focus
        | last\s+action|next\s+(?:step|action|task)s?|blockers?|session|branch|running\s+version
        | \p{Han}{0,4}状态|进度|下一步|最新进展|进展)$")
});

/// A key that says "now" (`Current focus`, `当前任务`, `Latest release`) names a value that
/// changes only beside a state, progress or event noun; `Current architecture` and `当前架构`
/// describe the design as it stands (the same rule as for section titles).
fn now_key(key: &str) -> bool {
    static NOW_KEY: LazyLock<Regex> =
        LazyLock::new(|| re(r"(?i)^(?:current|active|latest|recent|当前|目前|最新|最近)"));
    NOW_KEY.is_match(key) && (PROGRESS_NOUN.is_match(key) || EVENT_NOUN.is_match(key))
}

/// A key-value line: an optional marker, a (bold) key of a few words, a colon, a value.
static KEY_VALUE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^\s*(?:[-*+]\s+|\d+[.)]\s+)?(?:\*\*|__)?([^:：*`|]{1,40}?)(?:\*\*|__)?\s*[:：]\s*(?:\*\*|__)?\s*(.*)$",
    )
});

/// A `key: value` line (a list item or a paragraph) with a value after the colon:
/// `- 环境: OpenClaw Cloud`, `**规则**：…`.
pub fn is_field(line: &str) -> bool {
    KEY_VALUE
        .captures(strip_bullet(dequote(line)))
        .is_some_and(|c| !c[2].trim().is_empty())
}

/// A measured or counted value: an approximation (`~75%`, `约6秒`), a pass count (`34/34
/// passing`, `104 passed`), a percentage of a progress or rate key, a Chinese amount
/// (`274.8亿元`, `552.64万元`).
static SNAPSHOT: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?ix)
        [~≈]\s*\d[\d,]*(?:\.\d+)?\s*(?:%|ms|s\b|秒|分钟|min|h\b|小时|天|days?\b|x\b|倍|k\b|mb|gb|lines?\b|files?\b|modules?\b|tests?\b|行|个)
      | \b\d+\s*/\s*\d+\s*(?:tests?|checks?|passing|passed|done|complete|files|tasks)\b
      | \b\d+\s+(?:tests?\s+)?(?:passed|passing|failed|failing|skipped)\b
      | (?:coverage|progress|pass\s+rate|通过率|覆盖率|完成度|完成率|进度|成功率)\s*\**\s*[:：]?\s*\**\s*[~≈约]?\s*\d+(?:\.\d+)?\s*%
      | \d+(?:\.\d+)?\s*(?:亿|万)\s*(?:元|美元|港元)?
      | \d+\s*个\s*\S{0,6}?(?:文件|测试|用例|BUG|bug|问题|任务|提交)")
});

/// A comparator or a word that makes a number a requirement, a limit or a target.
static REQUIREMENT: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?ix)[≥≤<>]|\d\s*\+|\b(?:at\s+least|at\s+most|or\s+(?:higher|later|newer|above)|up\s+to|max(?:imum)?|min(?:imum)?|target|threshold|limit|budget|no\s+more\s+than|under|below|above|within)\b|不超过|不低于|以上|以内|以下|至少|最多|目标|阈值|上限|下限",
    )
});

/// A first-person account of what was done (`I tried`, `we switched`).
static NARRATIVE_FIRST_PERSON: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:I|we)\s+(?:\w+ly\s+)?(?:\w+ed|tried|made|wrote|did|ran|built|found|had|was|were|got|saw|took|began|went|chose|learnt)\b",
    )
});

/// First-person narrative or a changelog opening (a past-tense verb of change).
static NARRATIVE: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?x)
        (?i:\b(?:I|we)\s+(?:\w+ly\s+)?(?:\w+ed|tried|made|wrote|did|ran|built|found|had|was|were|got|saw|took|began|went|chose|learnt))\b
      | ^(?:\*\*[^*]{1,40}\*\*\s*[:：-]?\s*)?(?i:successfully\s+)?(?:Added|Fixed|Implemented|Refactored|Re-architected|Rearchitected|Updated|Created|Removed|Renamed|Migrated|Moved|Switched|Upgraded|Bumped|Released|Deployed|Merged|Shipped|Completed|Finished|Resolved|Replaced|Rewrote|Introduced|Enhanced|Improved|Refined|Standardized|Evolved|Matured|Converted|Installed|Successfully)\b
      | ^(?:\*\*[^*]{1,20}\*\*\s*[:：]?\s*)?\p{Han}{1,4}了
      | 已(?:经)?(?:全部)?(?:完成|修复|实现|部署|上线|安装|创建|写入|制定|分析|更新|迁移|合并|发布|解决|确认)
      | 全部完成|已全部|首次")
});

/// A `了` that is not the perfective particle: in 为了 ("in order to"), 除了 ("besides") and
/// 了解 ("understand") it opens a purpose or an instruction, not a report of what was done.
fn purpose_le(p: &str, m: &regex::Match<'_>) -> bool {
    let s = m.as_str();
    let Some(head) = s.strip_suffix('了') else {
        return false;
    };
    head.ends_with(['为', '除']) || p[m.end()..].starts_with('解')
}

/// Text ending in a subordinating word and a few words (`… as milestones`, `once the build`):
/// a state that follows is the condition of a rule (`commit as milestones are completed`),
/// not a report.
fn in_condition(before: &str) -> bool {
    static C: LazyLock<Regex> = LazyLock::new(|| {
        re(r"(?i)\b(?:as|when|once|after|until|if|before|unless|whenever)\s+(?:[\w'-]+\s+){0,3}$")
    });
    C.is_match(before)
}

/// After a participle, a preposition makes it a description, not a change
/// (`Implemented as a state machine`, `Located in supabase/functions/`).
fn describes(rest: &str) -> bool {
    static P: LazyLock<Regex> =
        LazyLock::new(|| re(r"(?i)^\s+(?:as|in|by|with|using|via|through|on|for|at|into)\b"));
    P.is_match(rest)
}

/// Work that waits: pending, not yet, TBD, "can later", 待确认, 尚未, 后续可 (to do later) …
static PENDING: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:pending|not\s+(?:yet\s+)?(?:started|implemented|connected|done|enabled|configured)|(?:not|n't)\s+\w+\s+yet|tbd|to\s+be\s+(?:confirmed|decided|done))\b|\b(?:can|could|will|may)\s+later\b|\blater\s+(?:we\s+)?(?:can|could|will|may)\b|待确认|待排查|待定|待处理|待用户|待配置|尚未|还未|暂未|未实现|未完成|后续(?:可|需|将|再|会|要)",
    )
});

/// A thing said to *be* in a state or at a version now: a copula (or "bumped/moved to")
/// before a state or a bare version (`is degraded`, `is still waiting for review`,
/// `has been red since Monday`, `is version 15.4`, `bumped to 7.2.4`, `版本为 1.79.0`,
/// `状态：… 降级中`), or a person's availability (`on vacation until …`). A version with a
/// `+` or a comparator is a requirement and never matches.
static STATE_PREDICATE: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?ix)
        \b(?:is|are|was|were|has\s+been|have\s+been|remains?|stays?|is\s+now|are\s+now)\s+(?:still\s+|now\s+|currently\s+)?(?:in\s+progress|waiting|pending|blocked|degraded|down|broken|failing|red|green|disabled|offline|unavailable|open|paused|stuck|flaky|complete|completed|done|finished|implemented|resolved|fixed|up[\s-]to[\s-]date)\b
      | \bstill\s+(?:waiting|open|pending|blocked|failing|broken|red|running|in\s+review)\b
      | \b(?:waiting\s+(?:for|on)|blocked\s+on)\b
      | \b(?:is|are|at|now|to|in\s+\w+\s+is)\s+(?:version\s+|v)?\d+\.\d+(?:\.\d+)*(?:-[\w.]+)?\s*[.;,]?\s*$
      | \b(?:bumped|upgraded|downgraded|pinned|moved|switched)\s+(?:\w+\s+){0,3}to\s+v?\d+\.\d+
      | (?:版本|版本号)\s*(?:为|是)\s*v?\d+\.\d+
      | 降级中|不可用|维护中|压测中|排查中|进行中
      | \b(?:on\s+(?:vacation|holiday|leave|parental\s+leave|sick\s+leave)|out\s+of\s+(?:the\s+)?office|ooo|off\s+sick|on-?call\s+until)\b|休假|请假|出差
      | \b\d+\s+commits?\s+(?:ahead|behind)\b
      | \b(?:since|until)\s+(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|yesterday|tomorrow|last\s+\w+|jan\w*|feb\w*|mar\w*|apr\w*|may|jun\w*|jul\w*|aug\w*|sep\w*|oct\w*|nov\w*|dec\w*)\b")
});

/// Relative time that dates a statement on its own.
static NOW_STRONG: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?ix)\b(?:currently|right\s+now|at\s+the\s+moment|for\s+now|today|tonight|yesterday|tomorrow|last\s+year|temporary|temporarily|this\s+(?:week|sprint|month|quarter|morning|afternoon|evening)|(?:last|next)\s+(?:week|month|night|sprint|quarter|session)|so\s+far|as\s+of|recently|just\s+(?:added|finished|fixed|merged|released|deployed|shipped|landed))\b|目前|现在|本周|这周|上周|下周|本月|今天|今日|昨天|昨日|明天|去年|今年|上个月|刚刚|刚才|截至|截止到|暂时|临时|迄今",
    )
});

/// Relative time that dates a statement only next to a state or progress noun.
static NOW_WEAK: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)\b(?:current|latest|recent|active|ongoing)\b|当前|最近|近期|最新"));
static PROGRESS_NOUN: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:focus|status|state|progress|phase|stage|work|working|development|mode|sprint|priorit(?:y|ies)|task|tasks|issues?|challenges?|problems?|concerns?|blockers?|branch(?:es)?|version|release|build|deploy\w*)\b|进度|状态|阶段|任务|重点|关注|主题|进展|工作(?:[^区流目空台室]|$)|版本|问题|挑战|困难|分支",
    )
});

// ---- Rules --------------------------------------------------------------------------

/// Strong modals: a line with one is a rule whatever else it carries.
static MODAL_STRONG: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?ix)\b(?:must|mustn't|never|always|do\s+not|don't|don’t|shall|mandatory|forbidden|not\s+allowed|required\s+to)\b|必须|务必|禁止|严禁|不要|不得|不能|不可|不许|切勿|一律|始终|永远|永不|绝对不",
    )
});

/// Weak rule shapes: a preference, a default, a convention; or a line that opens with a rule
/// key (`Rule:`, `Lesson:`, `原则：`).
static MODAL_WEAK: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?ix)\b(?:should|prefer|prefers|preferred|avoid|ensure|make\s+sure|recommended|instead\s+of|rather\s+than|please|every\s+time|each\s+time|whenever|(?:every|each)\s+(?:new\s+)?session|first\W{0,2}\s+then|before\s+(?:\w+ing|any|each|every)\b)\b|请(?:[^求假])|每次|每当|每个会话|先[^，,。；;]{1,20}[，,]?\s*(?:再|然后)|优先|默认|统一|应当|应该|遵循|遵守|推荐|建议|尽量|避免|只能|仅|^[^\p{L}\p{N}]*\*\*[^*]{0,30}(?:规则|原则|规范|约定|教训|principles?|rules?|conventions?|guidelines?|lessons?)[^*]{0,10}\*\*|^[^\p{L}\p{N}]*[^:：]{0,30}(?:规则|原则|规范|约定|教训)[^:：]{0,20}[:：]|^[^\p{L}\p{N}]*(?:when|whenever|before|after)\s[^:：]{1,60}[:：]|^[^\p{L}\p{N}]*(?:rules?|lessons?|principles?|preferences?|decisions?|rationale|conventions?|polic(?:y|ies)|guidelines?|important|note|correction|commitments?|usage|default|规则|原则|规范|偏好|决策|教训|约定|承诺|注意|重要|经验)\W*[:：]",
    )
});

/// A lead-in that opens a list of rules (`**承诺**:`, `Rules:`): its items are rules.
static RULE_LEAD_IN: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?ix)^[^\p{L}\p{N}]*(?:[\w\s]{0,20}\s)?(?:rules?|lessons?(?:\s+learned)?|principles?|preferences?|conventions?|polic(?:y|ies)|guidelines?|commitments?|constraints?|boundaries|规则|原则|规范|偏好|约定|承诺|教训|注意事项|约束|边界)\W*(?:[(（][^)）]{0,20}[)）])?\s*[:：]\W*$",
    )
});

/// Nouns that name rules (rule, principle, convention, lesson, policy, best practice; 规则,
/// 原则, 规范, 约定, 教训, 纪律, 铁律, 准则 …): a title made with one heads rules, whatever date
/// or mark it carries.
static RULE_NOUN: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?ix)\b(?:rules?|principles?|conventions?|guidelines?|lessons?|decisions?|considerations?|polic(?:y|ies)|best\s+practices?|do'?s\s+and\s+don'?ts|standards?|disciplines?|preferences?|takeaways?|insights?)\b|规则|原则|规范|约定|教训|纪律|铁律|准则|守则|须知|注意事项|禁忌|做法|惯例|偏好|洞察|启示|决策",
    )
});

/// True when a title (a heading's text, a bold lead line) names rules: a modal or a rule
/// noun. `## 脚本优先原则（2026-05-19）` and `## 🔴 加课铁律` head rules; the date cites the day
/// a rule was adopted and the mark is emphasis, not a state.
pub fn is_rule_title(title: &str) -> bool {
    let p = prose(&without_ids(title));
    strong_rule(&p) || RULE_NOUN.is_match(&p) || MODAL_WEAK.is_match(&p)
}

/// A date cited in parentheses next to a verb of adoption (`(2026-02-10确立)`,
/// `（2026.8.15 定稿）`, `(adopted 2026-02-10)`): the day a rule took effect, which the rule
/// outlives.
fn adoption_cited(p: &str) -> bool {
    static PAREN: LazyLock<Regex> = LazyLock::new(|| re(r"[(（]([^()（）]{1,40})[)）]"));
    static ADOPT: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"(?i)\b(?:adopted|agreed|decided|established|effective|introduced|added|since)\b|确立|定稿|生效|采用|启用|制定|新增|起|确定",
        )
    });
    PAREN
        .captures_iter(p)
        .any(|c| date_in(&c[1]).is_some() && ADOPT.is_match(&c[1]))
}

// A check to run live instead of a remembered value.
static VERIFY_EN: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?ix)(?:^|[;:,.]\s*|\b(?:always|must|should|then|to|please|first)\s+)(?:verify|re-?check|check|confirm|look\s+up|query|read\s+it\s+from)\b|\b(?:at\s+task\s+start|at\s+the\s+start\s+of|live\s+checks?|check(?:ed)?\s+live|verif(?:y|ied)\s+live|from\s+the\s+live|(?:not|never)\s+from\s+(?:memory|notes)|instead\s+of\s+(?:this\s+memory|trusting))\b",
    )
});
static VERIFY_ZH: LazyLock<Regex> =
    LazyLock::new(|| re(r"核验|核对|任务开始时|实时查询|以现场为准|现场确认"));

static HASH: LazyLock<Regex> = LazyLock::new(|| re(r"\b(?:[0-9a-f]{7,40}|sha256:[0-9a-f]{8,})\b"));

fn has_hash(s: &str) -> Option<String> {
    HASH.find_iter(s)
        .map(|m| m.as_str())
        .find(|t| {
            t.starts_with("sha256:")
                || (t.bytes().any(|b| b.is_ascii_digit())
                    && t.bytes().any(|b| b.is_ascii_alphabetic()))
        })
        .map(str::to_string)
}

/// A version reported as what is installed or current: a version key (`Version: 0.12.11`,
/// `版本号：v1.2`), or an inventory item `- **name** (1.0.2) …`.
fn reported_version(s: &str) -> Option<String> {
    // The version opens the value; what follows may name it (`v0.1.0 Alpha`, `v0.1.1 (fork
    // of 2.1.2)`) but not make it a requirement (`18+`, `3.12 or later`, `以上`).
    static KEYED: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"(?i)(?:\bversion(?:\s+(?:installed|deployed|released|in\s+use|running))?|\binstalled\s+version|\bcurrent\s+version|当前版本|线上版本|版本号?)\s*\**\s*(?:[:：]|是|为)\s*\**\s*`?(v?\d+(?:\.\d+){1,3}(?:-[\w.]+)?)`?(?:\s*$|\s*[(（]|\s+[^\s(（])",
        )
    });
    static TABLE_KEY: LazyLock<Regex> = LazyLock::new(|| {
        re(r"(?i)^(?:current\s+|installed\s+|latest\s+)?version$|^(?:当前|线上|最新)?版本号?$")
    });
    static BARE: LazyLock<Regex> = LazyLock::new(|| re(r"^`?v?\d+(?:\.\d+){1,3}(?:-[\w.]+)?`?$"));
    if let Some(cols) = cells(s)
        && cols.len() >= 2
        && TABLE_KEY.is_match(cols[0].trim_matches(['*', '_', ' ']))
        && BARE.is_match(cols[1])
    {
        return Some(cols[1].trim_matches('`').to_string());
    }
    if let Some(c) = KEYED.captures(s) {
        let rest = &s[c.get(1).map_or(s.len(), |m| m.end())..];
        if !REQUIREMENT.is_match(rest.split(['(', '（']).next().unwrap_or_default()) {
            return Some(c[1].to_string());
        }
    }
    static INVENTORY: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"^\s*[-*+]\s+\*\*[^*]+\*\*\s*[(（][^)）\d]{0,6}?(v?\d+\.\d+(?:\.\d+)?)\s*[)）]\s*[-–—:：]",
        )
    });
    INVENTORY.captures(s).map(|c| c[1].to_string())
}

/// An exact release (`Flask 2.3.2`, `AutoGen (v0.7.5)`) named in a list item or a field's
/// value: what is installed or released now. A requirement writes a range or a floor
/// (`Node 22+`, `>= 20`, `^10.1.0`, `3.12 or later`) or a major version only.
fn pinned_version(line: &str, p: &str) -> Option<String> {
    static V: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"(?:^|[\s(（:：])(?P<pre>[\^~>=<≥≤]*)\s*(?P<v>v?\d+\.\d+\.\d+(?:-[\w.]+)?)(?P<post>\+?)",
        )
    });
    if !(is_list_item(line) || KEY_VALUE.is_match(line)) || REQUIREMENT.is_match(p) {
        return None;
    }
    V.captures_iter(p)
        .find(|c| c["pre"].is_empty() && c["post"].is_empty())
        .map(|c| c["v"].to_string())
}

/// True when the line states a rule: a modal (must, never, prefer, 必须, 优先 …) or a rule
/// key (`Rule:`, `原则：`).
pub fn is_rule_line(line: &str) -> bool {
    let p = prose(strip_bullet(line));
    MODAL_STRONG.is_match(&p) || MODAL_WEAK.is_match(&p)
}

/// True when the line has a rule's form without a modal word (a choice `A > B` / `A over B`,
/// a prohibition `No X`, an "X-first" convention, a limit with a number) and nothing on it
/// reports a state (a status mark, pending work, a first-person account, a question).
pub fn is_rule_form(line: &str) -> bool {
    let p = prose(strip_bullet(line));
    rule_form(&p)
        && status_mark(line.trim()).is_none()
        && !PENDING.is_match(&p)
        && !NARRATIVE_FIRST_PERSON.is_match(&p)
        && !p.trim_end().ends_with(['?', '？'])
}

fn strong_rule(s: &str) -> bool {
    MODAL_STRONG.is_match(s)
}

/// Rule shapes that carry no modal word: a choice of one thing over another (`trash > rm`,
/// `Adopted Bun over npm`, `用 A 而不是 B`), a line or clause that opens with a prohibition
/// (`No secrets committed`, `未经确认，不执行 …`), an "X-first" convention (`Docker-first
/// testing`), a limit with a number (`File Size Limit <500 LOC`, `不超过 3 次`).
fn rule_form(s: &str) -> bool {
    static FORM: LazyLock<Regex> = LazyLock::new(|| {
        re(r"(?x)
            (?i:[\w.+\#/-]*[A-Za-z\p{Han}][\w.+\#/-]*\s+(?:>|≫|over)\s+[A-Za-z\p{Han}][\w.+\#-]*)
          | 而不是|而非|优于|取代|代替
          | (?i:^[^\p{L}\p{N}]*(?:no|never|without|zero)\s+\p{L})
          | (?:^|[，,；;])\s*不\p{Han}{2}
          | (?i:\b[A-Za-z]+-first\b)
          | (?i:\b(?:limit|max(?:imum)?|min(?:imum)?|at\s+most|at\s+least|no\s+more\s+than|cap)\b[^.\n]{0,30}\d)
          | [<≤]\s*\d|不超过\s*\d|不少于|上限|最多\s*\d|至少\s*\d")
    });
    FORM.is_match(s)
}

/// True when the line tells the reader to check something live (and carries no value).
pub fn is_verify(line: &str) -> bool {
    let s = without_ids(strip_bullet(line));
    (VERIFY_EN.is_match(&s) || VERIFY_ZH.is_match(&s))
        && date_in(&prose(&s)).is_none()
        && has_hash(&s).is_none()
}

fn verdict(shape: Shape, s: &str, evidence: impl Into<String>) -> Option<Stale> {
    let topic = match shape {
        Shape::Commit => Topic::Commit,
        Shape::Version => Topic::Version,
        _ => topic_of(s),
    };
    Some(Stale {
        topic,
        shape,
        evidence: evidence.into(),
        inherited: false,
        unsure: false,
    })
}

/// The state of a status mark, if the line opens or closes with one (or has one in a table
/// cell of its own).
fn status_mark(t: &str) -> Option<char> {
    let s = t
        .trim_start_matches(|c: char| {
            c == '-' || c == '*' || c == '+' || c == '>' || c.is_whitespace()
        })
        .trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == ')')
        .trim_start();
    let first = s.chars().next()?;
    if MARKS.contains(&first) && first != '⚠' {
        return Some(first);
    }
    let last = t.trim_end().trim_end_matches(['|', ' ']).chars().last()?;
    if MARKS.contains(&last) && last != '⚠' && last != '🎉' {
        return Some(last);
    }
    // A mark with its state label closing the line: `… - ✅ **COMPLETED**`, `… 🔄 NEXT`.
    static LABELLED: LazyLock<Regex> = LazyLock::new(|| {
        re(r"(\p{So})\u{FE0F}?\s*(?:\*\*|__)?\s*([^*_|]{1,24}?)\s*(?:\*\*|__)?\s*\|?\s*$")
    });
    let c = LABELLED.captures(t)?;
    let mark = c[1].chars().next()?;
    let label = c[2].trim();
    (MARKS.contains(&mark)
        && mark != '⚠'
        && mark != '🎉'
        && (STATE.is_match(label)
            || (label.chars().any(char::is_alphabetic)
                && !label.chars().any(char::is_lowercase)
                && !label.chars().any(is_cjk))))
    .then_some(mark)
}

/// A parenthesised state at the end of the line: `(not started)`, `（规划中）`, `(done)`.
fn paren_state(s: &str) -> Option<String> {
    static P: LazyLock<Regex> =
        LazyLock::new(|| re(r"[(（\[]\s*([^()（）\[\]]{1,24})\s*[)）\]]\s*[:：]?\s*$"));
    let c = P.captures(s)?;
    let inner = c[1].trim();
    STATE.is_match(inner).then(|| inner.to_string())
}

/// True when `s` (prose: ids and names already out) is a date and at most two characters
/// more, bold or italic marks aside (`2026-02-23`, `**2026-02-23**`, `2026-02-23。`).
fn only_a_date(s: &str) -> bool {
    let bare = s.trim().trim_matches(['*', '_']).trim();
    date_in(bare).is_some_and(|d| d.len() + 2 >= bare.len())
}

/// `line` with the text of every table cell that is only a date removed; of any other line,
/// every parenthesised date (`（2026-07-21）`, `(2026-07-28, ADR 0014)` keeps `ADR 0014`).
/// Under a heading of rules or decisions, such a date is the day one was adopted.
fn without_date_cells(line: &str) -> String {
    static PAREN: LazyLock<Regex> = LazyLock::new(|| re(r"[(（]([^()（）]{1,40})[)）]"));
    let Some(cols) = cells(line) else {
        return PAREN
            .replace_all(line, |c: &regex::Captures<'_>| {
                let inner = &c[1];
                match date_in(inner) {
                    Some(_) if only_a_date(inner) => String::new(),
                    Some(d) => {
                        let rest = inner
                            .replacen(d.as_str(), "", 1)
                            .trim_matches(|x: char| x.is_whitespace() || ",，;；".contains(x))
                            .to_string();
                        if date_in(&rest).is_some() {
                            c[0].to_string()
                        } else {
                            format!("({rest})")
                        }
                    }
                    None => c[0].to_string(),
                }
            })
            .into_owned();
    };
    let kept: Vec<&str> = cols
        .iter()
        .map(|c| if only_a_date(&prose(c)) { "" } else { c })
        .collect();
    format!("| {} |", kept.join(" | "))
}

/// Table row cells (`| a | b |`), when the line is one.
fn cells(t: &str) -> Option<Vec<&str>> {
    let t = t.trim();
    (t.starts_with('|') && t.ends_with('|') && t.len() > 1)
        .then(|| t[1..t.len() - 1].split('|').map(str::trim).collect())
}

/// The stale-fact verdict for one line on its own (no section context); `None` for rules,
/// checks, structure and content without a shape that expires. Headings are judged by
/// [`stale_heading`]. Traditional Chinese is read as Simplified. The crate judges whole files
/// ([`stale_lines`]); this single-line entry point is what the line tests call.
#[cfg(test)]
pub fn stale(line: &str) -> Option<Stale> {
    let simplified = simplified(line);
    stale_simplified(&simplified)
}

/// `s` in Simplified Chinese characters (Traditional ones converted one for one; other text
/// as it is): the rules are written once, for one script, and read `當前狀態` as `当前状态`.
/// Line and character counts are kept, so verdicts line up with the original's lines.
fn simplified(s: &str) -> std::borrow::Cow<'_, str> {
    if s.chars().any(is_cjk) {
        std::borrow::Cow::Owned(fast2s::convert(s))
    } else {
        std::borrow::Cow::Borrowed(s)
    }
}

/// [`stale`] of a line already in Simplified characters.
///
/// Long on purpose: an ordered list of line-shape rules where the first that matches wins; the
/// order is the rule.
#[expect(
    clippy::too_many_lines,
    reason = "an ordered list of line-shape rules where the first that matches wins; the order is the rule"
)]
fn stale_simplified(line: &str) -> Option<Stale> {
    if is_conflict_marker(line) {
        return verdict(Shape::ConflictMarker, line, "git conflict marker");
    }
    // A quoted line is judged by what it quotes (`> **状态**: 已完成`).
    let line = dequote(line);
    if is_structural(line) {
        return None;
    }
    if is_heading(line) {
        return stale_heading_simplified(line).map(|(s, _)| s);
    }
    if is_index_entry(line) {
        // An entry of an index (`- [title](topics/x.md) — read when …`) names another
        // memory file; what it points at is judged in that file, not by its title's date.
        return None;
    }
    let raw = without_ids(line.trim());
    if CHECKBOX.is_match(&raw) {
        return verdict(Shape::Checkbox, &raw, "checkbox item");
    }
    let body = without_ids(strip_bullet(line));
    if body.is_empty() || is_verify(&body) {
        return None;
    }
    let p = prose(&body);
    let strong = strong_rule(&p);
    // A rule's form without a modal counts only where nothing reports a state: a status mark
    // a first-person account or pending work outweighs it (`✅ … <200 files`, `NO to X: I tried …`).
    let first_person = NARRATIVE_FIRST_PERSON.is_match(&p);
    let weak = strong
        || MODAL_WEAK.is_match(&p)
        || (rule_form(&p)
            && status_mark(line.trim()).is_none()
            && !first_person
            && !PENDING.is_match(&p));
    let date = date_in(&p);
    // A stamp is stale when it is the line ("Last updated: …"), or rides on a line that is
    // not a rule ("Preference: … (saved: …)" is a rule that cites its day).
    if let Some(d) = &date
        && let Some(m) = STAMP.find(&p)
    {
        let lead = p[..m.start()]
            .trim_matches(|c: char| !c.is_alphanumeric())
            .is_empty();
        if lead || !weak {
            return verdict(Shape::Stamp, &p, format!("stamp {d}"));
        }
    }
    if about_the_document(&p) {
        return None;
    }
    if let Some(h) = has_hash(&body) {
        return verdict(Shape::Commit, &body, format!("commit-like value {h}"));
    }
    if let Some(v) = reported_version(&body).or_else(|| reported_version(line)) {
        return verdict(Shape::Version, &body, format!("version {v}"));
    }
    if !weak && let Some(v) = pinned_version(line, &p) {
        return verdict(Shape::Version, &body, format!("pinned version {v}"));
    }
    if let Some(cols) = cells(line) {
        // A table row: stale when a cell of its own is a state, a status mark or a date.
        let c = cols
            .iter()
            .find(|c| STATE.is_match(c) || status_mark(c).is_some() || only_a_date(&prose(c)));
        if let Some(c) = c {
            return verdict(Shape::StatusField, &p, format!("table cell {c:?}"));
        }
        // A cell that is only an amount of money or an approximation (`¥14.36`, `~28天`)
        // is a figure read at one moment: a balance, a count, a rate.
        static AMOUNT: LazyLock<Regex> = LazyLock::new(|| {
            re(r"^(?:[¥$€£]\s*\d[\d,]*(?:\.\d+)?|[~≈约]\s*\d[\d,]*(?:\.\d+)?\s*\S{0,3})$")
        });
        let c = cols.iter().find(|c| {
            let cp = prose(c);
            AMOUNT.is_match(cp.trim().trim_matches(['*', '_']).trim())
        });
        return c.and_then(|c| verdict(Shape::Snapshot, &p, format!("table cell {c:?}")));
    }
    if strong {
        return None;
    }
    if let Some(c) = KEY_VALUE.captures(&body) {
        let key = c[1]
            .trim()
            .trim_matches(|x: char| x == '*' || x == '_' || x.is_whitespace());
        // A date or a time as the key is a log entry, judged below.
        if OPENS_WITH_DATE.is_match(key) || date_in(key).is_some() {
            return stale_log(&p, date.as_deref(), weak);
        }
        let raw_value = c[2].trim();
        // A measurement key with a number is a snapshot of one run (`Benchmark: 488 ms`).
        static MEASURE_KEY: LazyLock<Regex> = LazyLock::new(|| {
            re(
                r"(?i)\b(?:benchmarks?|latency|timings?|throughput|p\d{2}|duration|elapsed|snapshot|measured|measurements?|results?)\b|耗时|延迟|性能测试|快照|测试结果|实测",
            )
        });
        static NUMBER: LazyLock<Regex> = LazyLock::new(|| re(r"\d"));
        if MEASURE_KEY.is_match(key)
            && NUMBER.is_match(raw_value)
            && !weak
            && !REQUIREMENT.is_match(raw_value)
            && !REQUIREMENT.is_match(key)
        {
            return verdict(Shape::Snapshot, &p, format!("measurement ({key})"));
        }
        let value = prose(raw_value);
        // A field whose whole value is a date records when its entry was written or began
        // (`**记录时间**: 2026-02-26`, `Born: 2026-01-29`): that stays true, so the line is
        // judged by its entry (its section or lead-in), not by its date.
        if !STATUS_KEY.is_match(key) && only_a_date(&value) {
            return None;
        }
        // A key mapped to a file, a command or a link names where something is, not a state.
        let names_a_place = raw_value.starts_with(['`', '[', '/', '~', '.']);
        let key_is_status = (STATUS_KEY.is_match(key) || now_key(key)) && !names_a_place;
        let value_is_state =
            is_state_value(value.trim_start_matches(['*', ' '])) || status_mark(&value).is_some();
        // A state in the value of a line shaped as a rule is what the rule sets
        // (`**When completing a phase:** mark it ✅ COMPLETED`), unless the key is a status.
        if !value.trim().is_empty()
            && (key_is_status || (value_is_state && !weak))
            && !MODAL_WEAK.is_match(key)
        {
            return verdict(Shape::StatusField, &p, format!("status field {key}"));
        }
    }
    if let Some(m) = status_mark(line.trim())
        && !weak
    {
        return verdict(Shape::StatusMark, &p, format!("status mark {m}"));
    }
    if let Some(st) = paren_state(&p)
        && !weak
    {
        return verdict(Shape::StatusMark, &p, format!("state ({st})"));
    }
    if let Some(d) = &date
        && !weak
        && !adoption_cited(&p)
    {
        return verdict(Shape::Dated, &p, format!("dated ({d})"));
    }
    if OPENS_WITH_DATE.is_match(&p) && !weak {
        return verdict(Shape::Dated, &p, "log entry");
    }
    if let Some(m) = SNAPSHOT.find(&p)
        && !weak
        && !REQUIREMENT.is_match(&p)
    {
        return verdict(
            Shape::Snapshot,
            &p,
            format!("measured value {}", m.as_str().trim()),
        );
    }
    if let Some(m) = NARRATIVE.find_iter(&p).find(|m| !purpose_le(&p, m))
        && !weak
        && !describes(&p[m.end()..])
    {
        return verdict(
            Shape::Narrative,
            &p,
            format!("narrative ({})", m.as_str().trim()),
        );
    }
    if let Some(m) = STATE_PREDICATE.find(&p)
        && !weak
        && !describes(&p[m.end()..])
        && !in_condition(&p[..m.start()])
    {
        return verdict(
            Shape::StatusField,
            &p,
            format!("state ({})", m.as_str().trim()),
        );
    }
    if let Some(m) = PENDING.find(&p)
        && !weak
    {
        return verdict(
            Shape::StatusMark,
            &p,
            format!("pending ({})", m.as_str().trim()),
        );
    }
    if points_to_a_file(line) {
        return None;
    }
    if let Some(m) = NOW_STRONG.find(&p)
        && !weak
    {
        return verdict(Shape::RelativeTime, &p, m.as_str().trim().to_string());
    }
    if let Some(m) = NOW_WEAK.find(&p)
        && !weak
        && PROGRESS_NOUN.is_match(&p)
    {
        return verdict(Shape::RelativeTime, &p, m.as_str().trim().to_string());
    }
    None
}

/// A line that opens with a date or time: a log entry unless it is a rule.
fn stale_log(p: &str, date: Option<&str>, weak: bool) -> Option<Stale> {
    if weak {
        return None;
    }
    match date {
        Some(d) => verdict(Shape::Dated, p, format!("dated ({d})")),
        None => verdict(Shape::Dated, p, "log entry"),
    }
}

/// Titles of sections whose lines are transient: current / recent / next / to do / in
/// progress / done / known issues / history, in English and Chinese. English words count at
/// the start of a title (`## Next Steps`, not `## 4) Task Types (current)`); phrases and
/// Chinese compounds anywhere (`## Focus Areas for Next Session`, `## GridSeed 当前状态`).
static TRANSIENT_START: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?ix)^[^\p{L}\p{N}]*(?:\d+[.)]?\s*)?[^\p{L}\p{N}]*(?:current(?:ly)?|active|recent(?:ly)?|latest|today'?s?|now|next|upcoming|todo|to-?do|in\s+progress|wip|pending|done|completed?|finished|fixed|what\s+works|what's\s+(?:working|left|next|done)|remaining|roadmap|milestones?|known\s+(?:issues|bugs|limitations|problems)|open\s+(?:questions|issues)|blockers?|blocked|missing|future|changelog|change\s+log|changes|history|achievements?|progress|metrics|benchmarks?|coming\s+soon|backlog|sprint|timeline|status)\b",
    )
});
static TRANSIENT_ANY: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?ix)\b(?:next\s+(?:steps?|session|sprint|milestones?|actions?|tasks?|priorit(?:y|ies)|phase)|in\s+progress|known\s+(?:issues|bugs|limitations)|open\s+questions|coming\s+soon|left\s+to\s+build|recent\s+(?:changes|work|commits|milestones|achievements|updates)|(?:project|implementation|development|system|overall|task|deployment|build|test(?:ing)?|ci|environment)\s+status|(?:current|active)\s+\w+|decisions?\s+(?:needed|pending|to\s+(?:make|take))|(?:open|pending|outstanding|upcoming)\s+decisions?|expected\s+(?:results|outcomes)|roadmap|milestones|changelog|backlog|agenda|queue|timeline|metrics|benchmarks)\b|当前|目前|最近|近期|最新|今日|今天|本周|下一步|后续计划|待(?:办|构建|完成|处理|排查|实现|开发|完善|优化|修复|解决|确认|定)|进行中|已(?:完成|实现|上线|交付|修复)|^\W*完成|完成情况|完成内容|进度|进展|(?:性能|关键|质量)?指标$|路线图|里程碑|已知问题|待决策|(?:更新|变更|改动)$|^\W*新增|预期|未来|交互历史|历史记录|变更记录|更新日志|工作日志|时间线|运行中|已暂停|状态$|(?:项目|任务|部署|实现|开发|系统|运行)状态",
    )
});

/// Words that only say "now" (current, active, latest, 当前, 目前, 最新): they make a title
/// transient only next to a state or progress noun. `## Current Architecture` and
/// `## 当前架构` describe the design as it stands, which lasts until someone changes it;
/// `## Current Focus` and `## 当前任务` name work in flight.
static PRESENT_ONLY: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)^(?:current(?:ly)?|active|latest|now|当前|目前|最新|现在)(?:\s+\w+)?$")
});

/// Nouns of an event (an update, a change): "latest update" is a log entry's title.
static EVENT_NOUN: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:updates?|changes?|news|events?|results?|incidents?|outages?)\b|更新|变更|改动|动态|结果|事件|事故|故障",
    )
});

fn transient_title(p: &str) -> Option<String> {
    // A title ending in "status" (`### Integration Status`, `## 部署状态`) names a state,
    // unless what it names is the project's structure (`## Architecture Status` lists the
    // stack as it stands).
    static STATUS_END: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)\b\w+\s+status\W*$"));
    if let Some(m) = STATUS_END.find(p).filter(|_| !names_structure(p)) {
        return Some(m.as_str().trim().to_string());
    }
    TRANSIENT_START
        .find(p)
        .into_iter()
        .chain(TRANSIENT_ANY.find_iter(p))
        .map(|m| {
            m.as_str()
                .trim_matches(|c: char| !c.is_alphanumeric())
                .to_string()
        })
        .find(|m| {
            !PRESENT_ONLY.is_match(m)
                || PROGRESS_NOUN.is_match(p)
                || EVENT_NOUN.is_match(p)
                || (date_in(p).is_some() && !adoption_cited(p))
        })
}

/// The verdict for a heading, and whether the lines of its section inherit it (a heading
/// that names a transient section, or carries a state, passes it on; one that only carries
/// a date does not: `### Project X (2026-02-10)` is a dated title over durable facts).
pub fn stale_heading(line: &str) -> Option<(Stale, bool)> {
    stale_heading_simplified(&simplified(line))
}

/// [`stale_heading`] of a line already in Simplified characters.
fn stale_heading_simplified(line: &str) -> Option<(Stale, bool)> {
    let level = heading_level(line)?;
    let title = line.trim_start()[level..].trim();
    let p = prose(&without_ids(title));
    // A title with a strong modal names rules even when it also names a stage
    // (`### 1. Milestone Commit Protocol (MANDATORY)`): the rules outlive the milestone.
    if let Some(m) = transient_title(&p).filter(|_| !strong_rule(&p)) {
        let s = verdict(Shape::Section, &p, format!("section \"{m}\""))?;
        return Some((s, true));
    }
    let rule = is_rule_title(title);
    let state = (status_mark(title).is_some() && !rule)
        || paren_state(&p).is_some()
        || KEY_VALUE.captures(&p).is_some_and(|c| {
            let v = c[2].trim();
            !v.is_empty() && (STATE.is_match(v) || status_mark(v).is_some())
        })
        || {
            static TAIL: LazyLock<Regex> = LazyLock::new(|| {
                re(
                    r"(?i)[-–—:：]\s*(?:complete|completed|done|finished|implemented|ready|in\s+progress)\b|完成$",
                )
            });
            TAIL.is_match(&p)
        };
    if state {
        // The heading itself is a status; what it heads is judged line by line.
        let s = verdict(Shape::StatusMark, &p, "heading carries a state")?;
        return Some((s, false));
    }
    if let Some(d) = date_in(&p) {
        // A heading that opens with a date heads that day's log; one that ends with a date
        // dates its title, unless the title names rules or cites the day one was adopted.
        let opens = OPENS_WITH_DATE.is_match(&p);
        if (rule && !EVENT_NOUN.is_match(&p)) || (!opens && adoption_cited(&p)) {
            return None;
        }
        let s = verdict(Shape::Dated, &p, format!("dated heading ({d})"))?;
        return Some((s, opens));
    }
    None
}

/// A deontic modal verb (`should`, `ought to`, `应该`, `应当`): the line says what ought to
/// be done, which can outlive the section it sits in, though less surely than `must` (a
/// question, `Should we use X?`, is an open one).
fn deontic(p: &str) -> bool {
    static D: LazyLock<Regex> =
        LazyLock::new(|| re(r"(?i)\b(?:should|shouldn't|ought\s+to)\b|应该|应当|不应"));
    D.is_match(p)
}

/// A line that does not inherit its section's state: a rule (a strong modal), a check to
/// run live, a reference to a place, a line keyed as a rule or stating a decision, a line
/// about the memory file itself.
fn outlives_its_section(line: &str) -> bool {
    let p = prose(strip_bullet(line));
    strong_rule(&p)
        || is_verify(line)
        || names_a_place(line)
        || rule_keyed(line)
        || about_the_document(&p)
}

/// A line that inherits its section's state only unsure (the tidy keeps it, the lint does
/// not report it): a rule's form without a modal, or a deontic line that is not a question.
fn inherits_unsure(line: &str) -> bool {
    let p = prose(strip_bullet(line));
    is_rule_form(line) || (deontic(&p) && !p.trim_end().ends_with(['?', '？']))
}

/// A title naming the project's lasting structure: its architecture, stack, dependencies,
/// configuration, layout, schema, commands or environment.
fn names_structure(title: &str) -> bool {
    static STRUCTURE: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"(?i)\b(?:architecture|tech(?:nology)?\s+stack|stack|dependencies|configuration|config|setup|structure|layout|schema|commands|environment|tooling)\b|架构|技术栈|依赖|配置|结构|目录|环境|命令",
        )
    });
    STRUCTURE.is_match(&prose(&without_ids(title)))
}

/// A lead-in that opens a transient list: a line ending with a colon whose words name a
/// transient state (`**已完成工作**:`, `The immediate next steps are:`).
fn transient_lead_in(line: &str) -> bool {
    let t = strip_bullet(line).trim_end();
    (t.ends_with(':') || t.ends_with('：'))
        && t.chars().count() <= 80
        && transient_title(&prose(
            t.trim_end_matches([':', '：'])
                .trim_matches(['*', '_', ' ']),
        ))
        .is_some()
        && !strong_rule(t)
}

/// A key mapped to nothing but a command, a path or a link (`- Start script: `./run.sh``,
/// `**Root:** `/srv/app``): a reference that lasts until someone moves it, whatever section
/// it sits in.
fn names_a_place(line: &str) -> bool {
    static PLACE: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"^\s*(?:[-*+]|\d+[.)])?\s*(?:\*\*|__)?[^:：*`|]{1,40}?(?:\*\*|__)?\s*[:：]\s*(?:\*\*|__)?\s*(?:`[^`]+`|\[[^\]]+\]\([^)]+\))\s*$",
        )
    });
    PLACE.is_match(line)
}

/// A lead-in that is itself a modal (`**必须遵循：**`, `Never:`, `You must:`, or up to 160
/// characters with a strong modal: `**ALWAYS REFER TO**: docs/roadmap.md for:`): what
/// follows is what must (not) be done, whatever marks its items carry (`- ✅ 继承 …` under
/// "must follow" is a rule, not a finished task).
fn modal_lead_in(line: &str) -> bool {
    let t = strip_bullet(line).trim_end().trim_end_matches(['*', '_']);
    let n = t.chars().count();
    (t.ends_with(':') || t.ends_with('：'))
        && ((n <= 160 && strong_rule(&prose(t))) || (n <= 24 && MODAL_WEAK.is_match(&prose(t))))
}

/// A line whose key names what kind of line it is, a rule or a lesson (`- **教训**：…`,
/// `Decision: …`, `Rule: …`): it stays a rule in a dated or transient section, where the
/// lines around it report.
fn rule_keyed(line: &str) -> bool {
    if states_a_decision(line) {
        return true;
    }
    static KEY: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"(?ix)^(?:rules?|principles?|lessons?(?:\s+learned)?|takeaways?|insights?|decisions?|conventions?|guidelines?|preferences?|policy|教训|洞察|启示|原则|规则|决策|约定|偏好|规范|经验|准则)$",
        )
    });
    KEY_VALUE.captures(strip_bullet(line)).is_some_and(|c| {
        KEY.is_match(
            c[1].trim()
                .trim_matches(|x: char| x == '*' || x == '_' || x.is_whitespace()),
        ) && !c[2].trim().is_empty()
    })
}

/// A list item that opens with a Markdown link to a relative `.md` file: an entry of an
/// index of memory files (the tidy's topic index, a hand-written table of contents).
fn is_index_entry(line: &str) -> bool {
    static L: LazyLock<Regex> = LazyLock::new(|| {
        re(r"^\s*(?:[-*+]|\d+[.)])\s+\[[^\]]+\]\((?:\./)?[^):/\s][^):\s]*\.md(?:#[^)\s]*)?\)")
    });
    L.is_match(line)
}

/// A line that opens by stating a decision (`Decided to focus on CloudWatch logs`,
/// `Adopted Bun over npm`, `决定采用 SQLite`): what was chosen holds until someone decides
/// otherwise, though the line reads like a report of the day it was made.
fn states_a_decision(line: &str) -> bool {
    static D: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"(?i)^(?:\*\*[^*]{1,40}\*\*\s*[:：-]?\s*)?(?:decided|chose|agreed|selected|adopted|opted|settled\s+on)\b|^(?:\*\*[^*]{1,20}\*\*\s*[:：]?\s*)?(?:决定|选定|选用|采用|确定采用)",
        )
    });
    D.is_match(strip_bullet(line).trim())
}

/// A line about the memory file itself (`This file tracks the project's current status…`,
/// `*This is a living document.*`, `此文档为项目记忆系统的一部分…`): it says what the file is
/// for, which holds as long as the file does, whatever section it sits in. A stamp on it
/// (`This file was last updated 2025-07-05`) is judged before this.
fn about_the_document(p: &str) -> bool {
    static DOC: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"(?i)^[\W_]*(?:this|the\s+present)\s+(?:file|document|doc|page|memory(?:\s+(?:file|bank))?|active\s+context|progress\s+file|is\s+a\s+living\s+document)\b|\bliving\s+document\b|^[\W_]*(?:本|此|该)(?:文档|文件|页面|记忆文件|表)",
        )
    });
    DOC.is_match(p)
}

/// A line that says which file holds something: it opens with a file's path and a short
/// description (`` - `activeContext.md` - Current priorities ``), or maps a key to nothing
/// but a file (`当前项目状态：[CURRENT_STATE.md](docs/progress/CURRENT_STATE.md)`). Where a
/// thing is kept lasts, so "now" words in it do not make it stale; a figure in its
/// description (`~154 MB/day`) and its section (a list of files built, under "Done") still
/// do. A path here is a file with an extension or a folder ending in `/` (a branch name like
/// `feat/x` is neither).
fn points_to_a_file(line: &str) -> bool {
    const PATH: &str = r"(?:`[^`\s]*(?:\.[A-Za-z]{1,5}|/)`|\[[^\]]{1,80}\]\((?:\.{0,2}/)?[^):\s]+(?:\.[A-Za-z]{1,5}|/)(?:#[^)\s]*)?\))";
    static OPENS: LazyLock<Regex> = LazyLock::new(|| {
        re(&format!(
            r"^\s*(?:[-*+]|\d+[.)])?\s*(?:\*\*)?(?i:(?:read|see|open|consult)\s+)?{PATH}(?:\*\*)?\s*(?:[-–—:：]|\*\*[:：]?)\s+[^|]{{1,60}}$"
        ))
    });
    static MAPS: LazyLock<Regex> = LazyLock::new(|| {
        re(&format!(
            r"^\s*(?:[-*+]|\d+[.)])?\s*(?:\*\*|__)?[^:：*`|]{{1,40}}?(?:\*\*|__)?\s*[:：]\s*(?:\*\*|__)?\s*{PATH}\s*$"
        ))
    });
    OPENS.is_match(line) || MAPS.is_match(line)
}

/// `line` without the status mark that opens its text (after `#`, `>`, a list marker):
/// `- ✅ 在 … 维护` → `- 在 … 维护`.
fn without_leading_mark(line: &str) -> String {
    let body = line.trim_start_matches(|c: char| {
        c == '#' || c == '>' || c == '-' || c == '*' || c == '+' || c.is_whitespace()
    });
    let body = body.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == ')');
    let rest = body.trim_start();
    match rest.chars().next() {
        Some(m) if MARKS.contains(&m) => {
            let head = &line[..line.len() - rest.len()];
            let tail = rest[m.len_utf8()..].trim_start_matches('\u{fe0f}');
            format!("{head}{}", tail.trim_start())
        }
        _ => line.to_string(),
    }
}

/// A line that is only a bold title naming rules (`🚨 **数据库初始化规则（2025-12-03 新增）**`,
/// `**Conventions**`): a lead-in to the rules that follow.
fn bold_rule_title(line: &str) -> bool {
    let t = strip_bullet(line)
        .trim()
        .trim_start_matches(|c: char| !c.is_alphanumeric() && c != '*' && c != '_');
    let inner = t
        .strip_prefix("**")
        .and_then(|x| x.strip_suffix("**"))
        .or_else(|| t.strip_prefix("__").and_then(|x| x.strip_suffix("__")));
    inner.is_some_and(|i| !i.contains("**") && i.chars().count() <= 60 && is_rule_title(i))
}

/// The text of a block-quote line without its `>` markers (`> - item` → `- item`).
fn dequote(line: &str) -> &str {
    let mut t = line;
    while let Some(r) = t.trim_start().strip_prefix('>') {
        t = r.strip_prefix(' ').unwrap_or(r);
    }
    t
}

fn is_list_item(line: &str) -> bool {
    static L: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*(?:[-*+]|\d+[.)])\s+"));
    L.is_match(line)
}

/// The stale-fact verdict of every line of a file (index 0 = line 1), with the context a
/// single line lacks: lines inside fenced code are never findings; the file's title (a
/// level-1 heading on its first line) is not judged; other headings are judged by
/// [`stale_heading`]; the lines of a section whose heading names a transient state, and the
/// list after a transient lead-in (`**已完成工作**:`), inherit it unless they are rules (a
/// strong modal) or checks; the list after a rule lead-in (`**承诺**:`, `Rules:`) is rules.
pub fn stale_lines(text: &str) -> Vec<Option<Stale>> {
    let text = &*simplified(text);
    #[derive(Clone)]
    enum LeadIn {
        Transient(Stale),
        Rules,
    }
    let mut out = Vec::new();
    let mut fence = false;
    let mut seen_content = false;
    // (level, verdict) of the enclosing transient heading, if any.
    let mut section: Option<(usize, Stale)> = None;
    // Level of the enclosing heading that names rules (`## 规范`, `### Conventions`): in
    // its section a ✅ / ❌ mark means do / don't, not done / failed.
    let mut rules_section: Option<usize> = None;
    let mut lead_in: Option<LeadIn> = None;
    // A transient section suspended under a heading that names rules: (its level, its
    // verdict, the rules heading's level).
    let mut suspended: Option<(usize, Stale, usize)> = None;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("```") || t.starts_with("~~~") {
            fence = !fence;
            out.push(None);
            continue;
        }
        if fence {
            out.push(None);
            continue;
        }
        let first = !seen_content && !t.is_empty();
        seen_content |= !t.is_empty();
        if let Some(level) = heading_level(line) {
            lead_in = None;
            if let Some((l, s, rl)) = suspended.take() {
                if level <= l {
                    // The suspended section ends here too.
                } else if level <= rl {
                    section = Some((l, s));
                } else {
                    suspended = Some((l, s, rl));
                }
            }
            if section.as_ref().is_some_and(|(l, _)| level <= *l) {
                section = None;
            }
            if rules_section.is_some_and(|l| level <= l) {
                rules_section = None;
            }
            if first && level == 1 {
                out.push(None);
                continue;
            }
            let h = if section.is_none() && rules_section.is_some() {
                // `#### ✅ 正确做法` under `### 规范`: the mark is a do, not a done.
                stale_heading_simplified(&without_leading_mark(line))
            } else {
                stale_heading_simplified(line)
            };
            if h.is_none() && section.is_none() && rules_section.is_none() && is_rule_title(line) {
                rules_section = Some(level);
            }
            // A heading naming rules inside a transient or dated section (`### 方法论（5条铁律）`
            // under `## 2026-03-29`) opens rules: its lines do not inherit the section's state,
            // which resumes at the next heading of the section.
            // So does a heading naming the project's lasting structure (`### 技术栈配置`,
            // `#### Dependencies` under `## 项目进展总结`): the stack as it stands outlives the
            // progress report that lists it, as `## Current Architecture` does.
            if h.is_none()
                && rules_section.is_none()
                && section.as_ref().is_some_and(|(l, _)| level > *l)
                && (is_rule_title(line) || names_structure(line))
            {
                suspended = section.take().map(|(l, s)| (l, s, level));
                if is_rule_title(line) {
                    rules_section = Some(level);
                }
                out.push(None);
                continue;
            }
            match (&h, &section) {
                (Some((s, true)), None) => section = Some((level, s.clone())),
                (None, Some((_, s))) => {
                    out.push(Some(s.clone()));
                    continue;
                }
                _ => {}
            }
            out.push(
                h.map(|(s, _)| s)
                    .or_else(|| section.as_ref().map(|(_, s)| s.clone())),
            );
            continue;
        }
        if is_structural(line) && !is_conflict_marker(line) {
            out.push(None);
            continue;
        }
        // A paragraph line ends a lead-in's list (blank lines and list items continue it;
        // inside a block quote, the quoted text is what counts).
        let unquoted = dequote(line);
        if lead_in.is_some()
            && !unquoted.trim().is_empty()
            && !is_list_item(unquoted)
            && !unquoted.starts_with([' ', '\t'])
        {
            lead_in = None;
        }
        let own = if section.is_none() && rules_section.is_some() {
            // A leading ✅ / ❌ in a section of rules is a do / don't, and a date cell of a
            // table row is the day a rule was learned; the rest of the line is judged as usual
            // (a trailing ✅ still reports a result).
            stale_simplified(&without_date_cells(&without_leading_mark(line)))
        } else {
            stale_simplified(line)
        };
        if matches!(lead_in, Some(LeadIn::Rules)) {
            let hard = own.as_ref().is_some_and(|s| {
                matches!(
                    s.shape,
                    Shape::Checkbox | Shape::Stamp | Shape::ConflictMarker | Shape::Commit
                )
            });
            out.push(if hard { own } else { None });
            continue;
        }
        let context = section.as_ref().map(|(_, s)| s).or(match &lead_in {
            Some(LeadIn::Transient(s)) => Some(s),
            _ => None,
        });
        let inherited = context
            .filter(|_| !outlives_its_section(line))
            .map(|s| Stale {
                evidence: format!("in {}", s.evidence.trim_start_matches("in ")),
                inherited: true,
                unsure: (s.shape == Shape::Dated && is_field(line)) || inherits_unsure(line),
                ..s.clone()
            });
        if RULE_LEAD_IN.is_match(strip_bullet(unquoted))
            || modal_lead_in(unquoted)
            || bold_rule_title(unquoted)
        {
            lead_in = Some(LeadIn::Rules);
            out.push(None);
            continue;
        }
        if transient_lead_in(line) {
            let v = own.clone().or_else(|| {
                verdict(
                    Shape::Section,
                    line,
                    format!("list \"{}\"", strip_bullet(line)),
                )
            });
            lead_in = v.clone().map(LeadIn::Transient);
            out.push(v.or(inherited));
            continue;
        }
        out.push(own.or(inherited));
    }
    out
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
    static PPL: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"(?i)\b(?:owns|owner|on\s+call|on\s+vacation|on\s+leave|joined|reviews?)\b|值班|负责|休假|请假|出差",
        )
    });
    if CI.is_match(s) && !DEPLOY.is_match(s) {
        Topic::Ci
    } else if DEPLOY.is_match(s) {
        Topic::Deploy
    } else if VER.is_match(s) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_entry_is_judged_in_the_file_it_points_at() {
        let entry = "- [Task group 16: parser (2025-04-22)](topics/task-group-16.md) — read when the task touches it (4 lines)";
        assert!(is_index_entry(entry));
        assert!(stale(entry).is_none());
        // The same date on a plain item, or a link to a web page, is still judged.
        assert!(stale("- Task group 16 shipped on 2025-04-22 (4 lines)").is_some());
        assert!(!is_index_entry(
            "- [notes](https://example.com/notes.md) from 2025-04-22"
        ));
    }

    /// A field whose whole value is a date records when its entry was written; a status key
    /// or a date beside an event is still a state.
    #[test]
    fn a_date_only_field_is_judged_by_its_entry() {
        for l in [
            "- **记录时间**: 2026-02-26",
            "- Born: 2026-01-29",
            "**开始日期**: 2026-03-13",
        ] {
            assert!(stale(l).is_none(), "{l}");
        }
        assert!(stale("- **Status**: 2026-02-26").is_some());
        assert!(stale("- **时间**: 2026-02-11 修复了登录").is_some());
        let v = stale_lines("## 2026-02-10 会话记录\n\n- **时间**: 2026-02-11\n");
        assert!(
            v[2].as_ref().is_some_and(|s| s.inherited && s.unsure),
            "{v:?}"
        );
    }

    /// Table rows: a bold date cell is a date, a cell that is only an amount or an
    /// approximation is a figure of one moment, and under a heading that names lessons a
    /// date cell is the day the lesson was learned.
    #[test]
    fn table_rows_by_their_cells() {
        assert!(stale("| **2026-02-23** | **开工日内容发布** |").is_some());
        assert_eq!(
            stale("| Kimi | ¥14.36 | ~28天 |").unwrap().shape,
            Shape::Snapshot
        );
        assert!(stale("| port | 8080 | the API |").is_none());
        let v = stale_lines(
            "## Lessons Learned\n\n| 日期 | 内容 |\n|---|---|\n| 2026-02-17 | AI文章不可全信，必须先验证 |\n| 2026-02-18 | ✅ 已完成 |\n",
        );
        assert!(v[4].is_none(), "{v:?}");
        assert!(v[5].is_some(), "a state cell still reports a state: {v:?}");
    }

    /// A strong modal makes a title a rule title even beside a stage word; a heading naming
    /// rules inside a dated or transient section stops its lines inheriting that state until
    /// the section's next heading.
    #[test]
    fn rule_headings_inside_transient_sections() {
        assert!(stale_heading("### 1. Milestone Commit Protocol (MANDATORY)").is_none());
        assert!(stale_heading("### Milestones").is_some());
        let text = "## 2026-03-29\n\n- 部署了新网关\n\n### 方法论（5条铁律）\n\n- 先验证再发布\n\n### 事故处理\n\n- 修复了超时\n";
        let v = stale_lines(text);
        assert!(v[2].is_some(), "{v:?}");
        assert!(v[4].is_none() && v[6].is_none(), "the rules block: {v:?}");
        assert!(v[10].is_some(), "the dated section resumes: {v:?}");
    }

    /// A line opening with a month and a day is a log entry even without a year; an
    /// approximation with a thousands separator or a count unit is a snapshot.
    #[test]
    fn month_day_entries_and_approximate_counts() {
        assert_eq!(
            stale("- Feb 25: Morning check-in. Nothing to report.")
                .unwrap()
                .shape,
            Shape::Dated
        );
        assert!(stale("- Use May 25 as the cut-off in examples").is_none());
        assert_eq!(
            stale("- 7 modules in `bin/` (~2,016 lines)").unwrap().shape,
            Shape::Snapshot
        );
    }

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

    /// An English state word before a noun or a verb's object is an attribute or an
    /// imperative, not a report; before a preposition, or alone, it is a state.
    #[test]
    fn a_state_word_reports_only_alone_or_before_a_preposition() {
        for v in [
            "Deployed to staging",
            "Done and verified",
            "Blocked by the API key",
            "Done",
        ] {
            assert!(is_state_value(v), "not a state: {v}");
        }
        for v in ["Complete current phase first", "Production-ready parser"] {
            assert!(!is_state_value(v), "a state: {v}");
        }
        not_stale(&[
            "- **Retry Policy**: Complete each step before starting the next",
            "- **importer/**: Production-ready parser for bank CSV exports",
            "- **Cache**: Active invalidation on every write",
        ]);
        for l in [
            "- **Importer**: Deployed to staging",
            "- **Importer**: Done",
            "- **Importer**: Completed, with two known gaps",
        ] {
            assert!(stale(l).is_some(), "not stale: {l}");
        }
    }

    /// A long lead-in with a strong modal still makes its list rules; headings of decisions
    /// and considerations head lasting content even inside a transient section; a date in
    /// parentheses under them is the day a decision was taken.
    #[test]
    fn decisions_and_long_modal_lead_ins() {
        let text = "# Notes\n\n## Roadmap\n\n**ALWAYS CHECK**: `docs/plan.md` is the one source of truth for:\n- Current sprint goals\n- Weekly deliverables\n\n## Current Work\n- wire the retry button\n\n### Key Decisions\n- SQLite over Postgres for the store\n\n### Design Considerations\n- **Latency**: keep each hit under 1 ms\n\n## 关键决策\n- **存储选型**（2026-01-05）：SQLite，不用 Postgres\n\n## Log\n- **Importer**（2026-01-05）：switched the parser\n";
        assert_eq!(flagged(text), vec![3, 9, 10, 22]);
    }

    /// A line that names the file holding something, or that describes the memory file
    /// itself, is not stale for a "now" word; a figure or a stamp on it still is.
    #[test]
    fn pointers_and_lines_about_the_file_itself() {
        not_stale(&[
            "- `plan.md` - Current priorities",
            "- 当前状态：[`STATUS.md`](docs/STATUS.md)",
            "This file records the team's current status, recent changes and open questions.",
            "*此文档为长期记忆，随项目持续更新。*",
        ]);
        assert_eq!(
            stale("- `collector.py` - price feed (~120 MB/day)").map(|s| s.shape),
            Some(Shape::Snapshot)
        );
        assert_eq!(
            stale("This file was last updated: 2025-07-05").map(|s| s.shape),
            Some(Shape::Stamp)
        );
        // A branch is not a file: `feat/x` has neither an extension nor a trailing slash.
        assert!(!points_to_a_file("- Current branch: `feat/retry-button`"));
        assert!(points_to_a_file("- Roadmap: [plan](docs/plan.md)"));
    }

    /// Decisions in force head lasting content even beside a "now" word; decisions still to
    /// make are pending work. A subheading naming the project's structure suspends a
    /// transient section; a "now" title with the day it took effect (`起`, `since`) is a
    /// standing choice.
    #[test]
    fn decisions_in_force_structure_and_standing_choices() {
        assert!(stale_heading("## Active Decisions").is_none());
        assert!(stale_heading("## Current Decisions and Considerations").is_none());
        assert!(stale_heading("## Decisions Needed").is_some());
        assert!(stale_heading("## Open decisions").is_some());
        assert!(stale_heading("### 当前定位（2025-03-01 起）").is_none());
        assert!(stale_heading("### 当前任务（2025-03-01）").is_some());
        let text = "## 项目进展\n- 完成了导入\n\n### 技术栈\n- **SQLite**: 存储\n\n### 本周\n- 修复了重试\n";
        assert_eq!(flagged(text), vec![1, 2, 7, 8]);
        // A line ordering two actions is a procedure; a deontic line inherits only unsure.
        assert!(
            stale("- **Sequence**: Complete the current phase before starting the next").is_none()
        );
        let v = stale_lines(
            "## Roadmap\n\nAgents should pick the highest item first.\n\n- Should we use SQLite?\n",
        );
        assert!(v[2].as_ref().is_some_and(|s| s.unsure), "{v:?}");
        assert!(v[4].as_ref().is_some_and(|s| !s.unsure), "{v:?}");
    }

    /// Problems in flight, work for later, change logs and expected outcomes are transient;
    /// a status title is, unless it names the project's structure.
    #[test]
    fn problems_later_work_change_logs_and_status_titles() {
        for h in [
            "## Current Challenges",
            "## 当前问题",
            "## Current Branch Layout",
            "### 后端依赖更新",
            "## 新增功能说明",
            "### Missing Setup",
            "## 预期成果",
            "### Integration Status",
            "### Key Findings (Preliminary)",
        ] {
            assert!(stale_heading(h).is_some(), "not stale: {h}");
        }
        for h in [
            "## Architecture Status",
            "## Current Architecture",
            "## 依赖管理",
        ] {
            assert!(stale_heading(h).is_none(), "stale: {h}");
        }
        assert!(stale("2. **大文件上传**: 已限制 16MB，后续可实现分片上传").is_some());
        assert!(stale("- Chunked upload: we can later add resumable parts").is_some());
    }

    /// Traditional Chinese is read as Simplified; a decision stated as made outlives its
    /// section; a state in a conditional clause or in a rule's value is what the rule sets;
    /// a mark with its label closing a line is a status; lines about a memory-bank file
    /// describe it.
    #[test]
    fn traditional_script_decisions_conditions_and_labelled_marks() {
        assert!(stale_heading("## 當前狀態").is_some());
        assert!(stale("- **狀態**: 已完成").is_some());
        let text = "## Recent Discussions\n- Talked through the log formats\n- Decided to support CloudWatch logs first\n";
        assert_eq!(flagged(text), vec![1, 2]);
        assert!(stale("- Make small commits as milestones are completed.").is_none());
        assert!(stale("- All core features are implemented and working").is_some());
        assert!(stale("- Auth is implemented as a tower middleware").is_none());
        assert!(stale("**When closing a milestone:** mark it ✅ COMPLETED in PLAN.md").is_none());
        assert_eq!(
            stale("- **Phase 7** (Search) - ✅ **COMPLETED**").map(|s| s.shape),
            Some(Shape::StatusMark)
        );
        assert!(stale("_This document captures the current state of work._").is_none());
        assert!(stale("- Target latency: 200ms").is_none());
        assert!(stale("- Latency: 200ms").is_some());
        assert!(stale_heading("### Future Considerations").is_some());
        assert!(stale_heading("## Handoff Context & Next Tasks").is_some());
    }

    /// Asserts that no line of `lines` is stale on its own, naming the first that is.
    fn not_stale(lines: &[&str]) {
        for l in lines {
            assert!(stale(l).is_none(), "stale: {l} ({:?})", stale(l));
        }
    }

    fn flagged(text: &str) -> Vec<usize> {
        stale_lines(text)
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.as_ref().map(|_| i + 1))
            .collect()
    }

    /// The shapes the outside test found missing, in English and Chinese (the examples of
    /// the issue, not lines of the corpus).
    #[test]
    fn shapes_that_expire_are_stale() {
        for l in [
            "**Status:** ✅ Active Implementation",
            "**状态**: 已完成安装",
            "Current Focus: Phase F.1 COMPLETE",
            "- Coverage: ~63%",
            "- 成交额: 9497亿元",
            "Last updated: 2025-07-05",
            "**最后更新**: 2025-11-11",
            "## GridSeed 当前状态",
            "### 当前信号（2026-04-02）",
            "- [ ] wire the retry button",
            "- [x] 接入支付回调",
            "- 2026-03-04: moved the cache to Redis",
            "- HEAD is 4f9c2ab1",
            "- Installed version: 0.12.11",
            "<<<<<<< HEAD",
            "=======",
            ">>>>>>> feature/x",
            "- 34/34 tests passing",
            "- I tried bundling the assets locally first.",
            "- 优化了缓存命中率",
        ] {
            assert!(stale(l).is_some(), "not stale: {l}");
        }
    }

    /// Durable lines the old rules archived or flagged (the issue's examples).
    #[test]
    fn rules_requirements_and_names_are_not_stale() {
        not_stale(&[
            "- 本项目是**工作流生成器**,不是MODSDK项目",
            "- Docker-first testing — No local ROS2 fallback",
            "- Adopted Bun over npm",
            "- File Size Limit <500 LOC",
            "- No secrets committed; env vars in .env.* only",
            "- **Git工作流**: commit后自动push到GitHub",
            "- trash > rm",
            "- **Framework:** Vue 3.5+ (Composition API)",
            "- Node 22+ / pnpm 10 / Go 1.25",
            "- The dev box is at 192.168.1.20; SSH as deploy.",
            "- Keep uploads under 25.5 MB and the bundle under 300 KiB.",
            "- Coverage thresholds: 70% (lines/branches/functions/statements)",
            "- The server applies the latest migrations on startup.",
            "- ⚠️ 2026-05-12：下载文件后必须先读取实际内容再命名",
            "- See `memory/2026-02-13.md` for the day's notes.",
            "- Preference: merge only on approval. (saved: 2026-03-23)",
            "- **Growth Cycle Phases**: Implemented as a state machine with `current_phase` field",
        ]);
    }

    /// A section heading passes its state to its lines; a dated title does not; a rule in
    /// a transient section stays a rule; the file's title is not judged.
    #[test]
    fn sections_pass_their_state_on() {
        let text = "# Current State\n\n## Next Steps\n- wire the retry button\n- Never skip the review.\n\n## Conventions\n- Tests live next to the code.\n\n### Project X (2026-02-10)\n- Unity TCG, data-driven.\n\n**已完成工作**:\n1. 完整代码分析\n2. 生成报告\n\n下一段。\n";
        assert_eq!(flagged(text), vec![3, 4, 10, 13, 14, 15]);
    }

    /// "Now" alone does not make a section transient: the design as it stands lasts until
    /// someone changes it; work in flight, updates and dated titles do not.
    #[test]
    fn a_present_word_needs_a_state_to_make_a_section_transient() {
        let text = "# Notes\n\n## Current Architecture\n- Axum server over a SQLite store.\n\n## 当前架构\n- 网关 / 调度 / 存储 三层\n\n## Current Focus\n- wire the retry button\n\n**模块最新更新** (2025-11-03 09:10):\n- 接入 重试 分支\n";
        assert_eq!(flagged(text), vec![9, 10, 12, 13]);
    }

    /// A lead-in that is itself a modal opens a list of rules, whatever marks the items carry.
    #[test]
    fn a_modal_lead_in_makes_its_list_rules() {
        let text = "# Notes\n\n**Must follow:**\n- ✅ Extend the shared base entity\n- ✅ 使用 `@Value` 注解\n\n## Done\n- ✅ shipped the importer\n";
        assert_eq!(flagged(text), vec![7, 8]);
    }

    /// A "now" key names a changing value only beside a state, progress or event noun (the
    /// rule titles follow): the architecture as it stands lasts, the focus does not.
    #[test]
    fn a_now_key_needs_a_state_noun() {
        not_stale(&[
            "- Current architecture: Axum server over a SQLite store",
            "- **当前架构**: 网关 / 调度 / 存储 三层",
            "- Current layout: one crate per outside system",
        ]);
        for l in [
            "- Current focus: wiring the retry button",
            "- **当前任务**: 接入重试分支",
            "- Latest release: the importer",
        ] {
            assert!(stale(l).is_some(), "not stale: {l}");
        }
    }

    /// A rule's form without a modal word (a choice, a prohibition, an "X-first"
    /// convention, a limit) outweighs the day it cites; a status mark, pending work or a
    /// first-person account outweighs the form.
    #[test]
    fn a_rule_form_outweighs_its_date_but_not_a_state() {
        for l in [
            "- No local fallback for the ROS2 tests (decided 2025-03-01)",
            "- Bun over npm since 2025-04-02",
            "- 2025-06-01 起用 pnpm 而不是 npm",
            "- Docker-first testing, agreed 2025-05-10",
            "- Bundle size limit 300 KiB (2025-07-01)",
        ] {
            assert!(stale(l).is_none(), "stale: {l} ({:?})", stale(l));
            assert!(is_rule_form(l), "no rule form: {l}");
        }
        for l in [
            "- ✅ No known memory leaks as of 2025-07-01",
            "- 2025-07-01 we switched to Bun over npm",
            "- No test suite yet: pending",
        ] {
            assert!(stale(l).is_some(), "not stale: {l}");
            assert!(!is_rule_form(l), "rule form: {l}");
        }
    }

    /// A title that names rules carries no state by its date or its mark; in its section a
    /// leading ✅ / ❌ is a do / don't (a trailing ✅ still reports), in a block quote too.
    #[test]
    fn rule_titles_keep_their_dates_and_marks_as_rules() {
        let text = "# T\n\n## ⏱️ Release discipline (2026-08-04)\n- Tag after the changelog.\n\n## 🔴 Deploy rules\n\n#### ✅ Do\n- ✅ Roll out behind a flag\n\n#### ❌ Don't\n- ❌ Edit the prod database by hand\n- Step 4 verified on staging ✅\n\n## Status (2026-08-04)\n- ✅ importer shipped\n\n> 🚨 **Database reset policy (added 2025-12-03)**\n>\n> - ❌ Run init scripts on a live database\n";
        assert_eq!(flagged(text), vec![13, 15, 16]);
        assert!(stale("## 脚本优先原则（2026-05-19 系统改造）").is_none());
        assert!(stale("## 飞书录入机制（2026.8.15 定稿）").is_none());
        assert!(stale("## 项目初始化（2026-07-18）").is_some());
    }

    /// A version key reports what is installed even when the version is named or annotated;
    /// a requirement (`18+`, `或更高`) does not. A Chinese state word is a state only as the
    /// whole value (`通过 X 安装` is "via X").
    #[test]
    fn versions_and_states_as_field_values() {
        for l in [
            "**版本**: v0.1.0 Alpha（版本管理在 `src/version.ts`）",
            "- Version: 2.4.1 (the fork of 2.4)",
            "| **当前版本** | v18.0.0 | 解耦 |",
            "> **文档状态**: ✅ 完整技术文档",
            "- **状态**: 通过",
        ] {
            assert!(stale(l).is_some(), "not stale: {l}");
        }
        not_stale(&[
            "- Version: 18+ (LTS)",
            "- **访问**: 通过 find-skills 技能搜索和安装",
            "| Version | what it adds |",
        ]);
    }

    /// A lesson keeps its key's kind in a dated section; a short weak-modal lead-in
    /// (`**Avoid**:`) and a habitual one (`每次新会话开始时，快速确认：`) open rules.
    #[test]
    fn lessons_and_procedures_outlast_their_day() {
        let text = "# T\n\n### 2026-02-28\n- **Pattern**: the router was skipped all day\n- **Lesson**: dispatch every task over 500 tokens\n- **教训**：改配置前先完全理解需求\n\n**Avoid**:\n- ❌ dumping long answers\n\n每次新会话开始时，快速确认：\n1. ✅ 上次学习内容\n";
        assert_eq!(flagged(text), vec![3, 4]);
    }

    /// Exact releases in a list or a field are what is installed now; floors, ranges and
    /// majors are requirements. Chinese section titles of done / pending / metrics work pass
    /// their state on like their English counterparts.
    #[test]
    fn pinned_versions_and_chinese_progress_titles() {
        assert!(stale("- Flask 2.3.2 (Python web framework)").is_some());
        assert!(stale("- **框架**：Microsoft AutoGen (v0.7.5)").is_some());
        not_stale(&[
            "- PyTorch 2.5.0+",
            "- Node.js >= 20.1.0",
            "- Next.js 15",
            "- Python 3.12",
        ]);
        let text = "# T\n\n## 已实现功能\n- 文件上传\n\n## 待实现\n- 知识图谱集成\n\n## 性能指标\n- 首屏 1.2 秒\n\n## 架构\n- 网关 / 存储 两层\n";
        assert_eq!(flagged(text), vec![3, 4, 6, 7, 9, 10]);
    }

    /// A key mapped to a command, a path or a link is a reference in any section.
    #[test]
    fn a_reference_does_not_inherit_its_section() {
        let text = "# T\n\n## Current Status\n- Phase: beta\n- Start script: `./run-dev.sh`\n- **Guide:** [setup](docs/setup.md)\n- Deploy: pending review\n";
        assert_eq!(flagged(text), vec![3, 4, 7]);
    }

    /// 为了 / 除了 / 了解 are not the perfective 了 of a report.
    #[test]
    fn purpose_and_understanding_are_not_narrative() {
        for l in ["- 除了登录页，页面走服务端渲染", "- 先了解模块边界再改代码"]
        {
            assert!(stale(l).is_none(), "stale: {l} ({:?})", stale(l));
        }
        assert!(stale("- 修了登录页的跳转").is_some());
    }

    #[test]
    fn similarity() {
        let a = shingles("Always use pnpm for installs in this repo");
        let b = shingles("always use pnpm for installs in this repository");
        assert!(jaccard(&a, &b) > 0.7 && jaccard(&a, &a) == 1.0);
        assert!(jaccard(&shingles("优先使用 pnpm"), &shingles("禁止提交凭据")) < 0.2);
    }
}
