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

/// The where-to-find-more line of the V2 memory (served when `memories.version` is `v2`):
/// V2 keeps no `MEMORY.md`, and the summary itself is never a citation (cite the rollout
/// summaries and thread ids it points to, as upstream's V2 read path says).
pub const V2_DETAIL: &str = "\nThis is the v2 memory: there is no MEMORY.md; the summary below points to rollout_summaries/<file>.md and thread ids. Do not cite `memory_summary.md`: cite the rollout_summaries/ file lines and the thread ids you relied on.\n";

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
