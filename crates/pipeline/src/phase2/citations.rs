//! Usage counts from citations: the `<oai-mem-citation>` blocks of later sessions raise the
//! cited memories' usage (what consolidation keeps and prunes by).

use super::*;

/// Raise usage counts from the citations in a later session's transcript (see
/// [`cited_rollout_ids_in`]); returns the rows changed.
pub fn record_rollout_citations(
    store: &dyn Phase2Store,
    rollout: &codex_free_transcripts::rollout::Rollout,
) -> Result<usize> {
    let ids = cited_rollout_ids_in(rollout);
    if ids.is_empty() {
        return Ok(0);
    }
    store.record_usage(&ids)
}

/// Raise usage counts from `<oai-mem-citation>` blocks found in `text` (a later session's
/// assistant messages); returns the rows changed. See [`codex_free_memory::citations::parse_citations`].
pub fn record_citations(store: &dyn Phase2Store, text: &str) -> Result<usize> {
    let ids = codex_free_memory::citations::cited_rollout_ids(text);
    if ids.is_empty() {
        return Ok(0);
    }
    store.record_usage(&ids)
}

/// The distinct rollout ids cited by the assistant in `rollout` (a later session's
/// transcript, as parsed by `pipeline::sources`), excluding the rollout's own id. Call it
/// once per rollout version (phase 1 does: one claim per `updated_at`) so a citation is
/// counted once.
pub fn cited_rollout_ids_in(rollout: &codex_free_transcripts::rollout::Rollout) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for item in &rollout.items {
        if let codex_free_transcripts::rollout::Item::Assistant { text, .. } = item {
            for id in codex_free_memory::citations::cited_rollout_ids(text) {
                if id != rollout.id && !ids.contains(&id) {
                    ids.push(id);
                }
            }
        }
    }
    ids
}
