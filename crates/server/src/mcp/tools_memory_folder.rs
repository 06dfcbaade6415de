//! MCP wiring of the memory read-path tools ([`codex_free_memory::readpath`]):
//! `memories_list`, `memories_search`, `memories_read`, `memories_add_ad_hoc_note`.
//! Registered only when `memories.enabled`, `memories.use_memories` and
//! `memories.dedicated_tools` are all true (the tools are optional: the summary in the
//! instructions works without them); each call re-checks the live config, so turning
//! memories off takes effect at once.
//!
//! Invariant: this layer only maps arguments and results; the tools' limits, jail and
//! usage counting live in `readpath`.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{tool, tool_router};

use crate::mcp::server::{CodexFree, reply};
use codex_free_memory::readpath::{
    self, MemoriesAddAdHocNoteArgs, MemoriesListArgs, MemoriesReadArgs, MemoriesSearchArgs,
};

impl CodexFree {
    async fn memories_call<A, F>(&self, a: A, f: F) -> CallToolResult
    where
        A: Send + 'static,
        F: FnOnce(
                &std::path::Path,
                &codex_free_core::config::Config,
                &A,
            ) -> codex_free_core::Result<String>
            + Send
            + 'static,
    {
        let home = self.shared.home.clone();
        let cfg = self.shared.config.get();
        reply(
            tokio::task::spawn_blocking(move || f(&home, &cfg, &a))
                .await
                .unwrap_or_else(|e| {
                    Err(codex_free_core::Error::Cancelled(format!(
                        "memory tool failed: {e}"
                    )))
                }),
        )
    }
}

#[tool_router(router = memories_router, vis = "pub(crate)")]
impl CodexFree {
    /// List the files of the memory folder (memories distilled from earlier sessions):
    /// MEMORY.md, memory_summary.md, raw_memories.md, rollout_summaries/, skills/. Paged:
    /// at most 2000 entries, the last line names the offset that continues.
    #[tool(annotations(
        title = "List memories",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn memories_list(&self, Parameters(a): Parameters<MemoriesListArgs>) -> CallToolResult {
        self.memories_call(a, readpath::memories_list).await
    }

    /// Search the memory folder for words (full-text index; best matches first). Returns
    /// `path:line: text`, at most 200 matches per page; the last line names the offset that
    /// continues.
    #[tool(annotations(
        title = "Search memories",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn memories_search(
        &self,
        Parameters(a): Parameters<MemoriesSearchArgs>,
    ) -> CallToolResult {
        self.memories_call(a, readpath::memories_search).await
    }

    /// Read a file of the memory folder by line offset and limit (at most 20000 tokens per
    /// call; the last line names the offset that continues). Memories may be stale: verify
    /// live facts, and cite what you use.
    #[tool(annotations(title = "Read memory", read_only_hint = true, open_world_hint = false))]
    async fn memories_read(&self, Parameters(a): Parameters<MemoriesReadArgs>) -> CallToolResult {
        self.memories_call(a, readpath::memories_read).await
    }

    /// Ask to remember something explicitly: queues a timestamped note that the next memory
    /// consolidation considers. Use only when the user asks to remember something.
    #[tool(annotations(
        title = "Add memory note",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn memories_add_ad_hoc_note(
        &self,
        Parameters(a): Parameters<MemoriesAddAdHocNoteArgs>,
    ) -> CallToolResult {
        self.memories_call(a, readpath::memories_add_ad_hoc_note)
            .await
    }
}
