//! The policy block every served memory summary is preceded by, and the token room it
//! leaves the summary: shared by the read path (which serves it) and the write gate (which
//! keeps `memory_summary.md` within that room).

/// Most tokens of the injected memory block, policy included (Codex's summary budget, so
/// memory never takes much of a new session's context).
pub const SUMMARY_TOKEN_BUDGET: usize = 2500;

/// The block served before the memory summary: how to treat the notes and how to cite them.
pub const POLICY: &str = "## Memory from earlier sessions

The notes below were distilled by Codex Free from this user's earlier agent sessions. Treat them as helpful background, not as ground truth: they may be out of date. Before acting on anything that can change (versions, commits, file contents, deploy state, command output), check it against the live project. If you use a memory in your answer or your actions, end your final reply with a citation block naming the memory lines and the rollout ids you relied on:

<oai-mem-citation>
<citation_entries>
MEMORY.md:10-12|note=[what was used]
</citation_entries>
<rollout_ids>
<rollout id from the memory>
</rollout_ids>
</oai-mem-citation>
";

/// The line after the policy saying where more detail is (its wording depends on whether
/// the dedicated `memories_*` tools are offered).
pub fn detail_line(dedicated_tools: bool) -> &'static str {
    if dedicated_tools {
        "\nFor more detail, use memories_search and memories_read (MEMORY.md, rollout_summaries/, daily/ for progress, archive/ for evidence).\n"
    } else {
        "\nMore detail is in MEMORY.md and rollout_summaries/ of the memory folder.\n"
    }
}

/// The block served before a V2 summary (`memories.version` is `v2`), after upstream's V2
/// read path (`read_path_v2.md`, pinned 5bf132cd): the summary is history with its scope, not
/// proof of current behaviour; its pointers are used without a lookup merely to rediscover
/// them; a rollout summary is read only when it could change the answer; and
/// `memory_summary.md` itself is never cited (V2 has no `MEMORY.md`: the citable files are
/// `rollout_summaries/`), nor is a citation built or checked with extra tool calls.
pub const POLICY_V2: &str = "## Memory from earlier sessions

The summary below was distilled by Codex Free from this user's earlier agent sessions: the user's actual preferences, corrections and decisions, each within the scope of the task it came from. It is history, not proof of how things behave now. Before relying on a claim that can change or that matters (versions, file contents, deploy state, command output), weigh how likely it has drifted against what checking costs, look at the source that owns it when that is warranted, and say so when you remain unsure. Current instructions win over memory.

Use the summary's pointers (rollout summaries, sources, pull requests, documents) directly: do not look one up again only to rediscover it. Read a rollout summary under rollout_summaries/ only when its evidence, wording or chronology could change your answer; do not fetch history speculatively, and batch the lookups you do need.

When a rollout summary you read informs your answer, end the final reply with one citation block, outside code fences, naming only the memory you actually used (never in a pull request). Do not cite `memory_summary.md`: it is not a source. Cite the rollout_summaries/ file and the lines you read:

<oai-mem-citation>
<citation_entries>
rollout_summaries/<file>.md:8-10|note=[what was used]
</citation_entries>
<rollout_ids>
<thread id you already have>
</rollout_ids>
</oai-mem-citation>

One entry per line with a short one-line note; leave rollout_ids empty when no thread id is at hand. Do not reread a file or make any tool call only to build or check a citation.
";

/// The where-to-find-more line of a V2 memory: the dedicated tools when offered, else the
/// folder (`folder`, shown as given). V2 keeps no `MEMORY.md`.
pub fn v2_detail_line(dedicated_tools: bool, folder: Option<&std::path::Path>) -> String {
    match (dedicated_tools, folder) {
        (true, _) => "\nThis is the v2 memory (no MEMORY.md). For more detail, use memories_search and memories_read on rollout_summaries/.\n".to_string(),
        (false, Some(f)) => format!(
            "\nThis is the v2 memory (no MEMORY.md). More detail is in rollout_summaries/ under {}.\n",
            f.display()
        ),
        (false, None) => "\nThis is the v2 memory (no MEMORY.md). More detail is in rollout_summaries/ of the memory folder.\n".to_string(),
    }
}

/// The block placed before a V2 summary: [`POLICY_V2`], then `detail`.
pub fn policy_text_v2(detail: &str) -> String {
    format!("{POLICY_V2}{detail}\n### memory_summary.md\n\n")
}

/// The policy block placed before the summary, with `detail` as its where-to-find-more line.
pub fn policy_text(detail: &str) -> String {
    format!("{POLICY}{detail}\n### memory_summary.md\n\n")
}

/// Tokens a `memory_summary.md` may use so that the injected block (policy + summary)
/// stays within [`SUMMARY_TOKEN_BUDGET`]: the budget minus the longer policy variant.
pub fn summary_token_room() -> usize {
    let policy = codex_free_core::tokens::count(&policy_text(detail_line(true))).max(
        codex_free_core::tokens::count(&policy_text(detail_line(false))),
    );
    SUMMARY_TOKEN_BUDGET.saturating_sub(policy)
}
