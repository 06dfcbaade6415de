//! MCP wiring of command execution ([`codex_free_tools::exec`]: Codex's unified exec with
//! spooled output) and the git tools ([`codex_free_tools::git`]).

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, Extensions};
use rmcp::{tool, tool_router};

use crate::mcp::server::{CodexFree, conversation, reply};
use codex_free_tools::{changes, exec, git};

#[tool_router(router = exec_router, vis = "pub(crate)")]
impl CodexFree {
    /// Run a shell command in the project (or a workdir inside it). Returns the exit code
    /// and output when it finishes within `yield_time_ms`; otherwise the output so far and
    /// a `session_id` for `write_stdin`. Long output is cut keeping head and tail; the last
    /// line names `read_command_output` to page through the full output.
    #[tool(annotations(
        title = "Run command",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = false,
        open_world_hint = true
    ))]
    async fn exec_command(
        &self,
        Parameters(a): Parameters<exec::ExecCommandArgs>,
        ext: Extensions,
    ) -> CallToolResult {
        match self.ctx(&conversation(&ext)) {
            Ok(c) => reply(self.shared.exec.exec_command(&c, a).await),
            Err(e) => reply(Err(e)),
        }
    }

    /// Send characters to a running command's stdin (empty `chars` just polls) and return
    /// its new output, or its exit code when it has finished.
    #[tool(annotations(
        title = "Write to stdin",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = false,
        open_world_hint = true
    ))]
    async fn write_stdin(
        &self,
        Parameters(a): Parameters<exec::WriteStdinArgs>,
        ext: Extensions,
    ) -> CallToolResult {
        match self.ctx(&conversation(&ext)) {
            Ok(c) => reply(self.shared.exec.write_stdin(&c, a).await),
            Err(e) => reply(Err(e)),
        }
    }

    /// Page through the full, spooled output of a command by byte `offset`.
    #[tool(annotations(
        title = "Read command output",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn read_command_output(
        &self,
        Parameters(a): Parameters<exec::ReadOutputArgs>,
        ext: Extensions,
    ) -> CallToolResult {
        match self.ctx(&conversation(&ext)) {
            Ok(c) => reply(self.shared.exec.read_command_output(&c, a).await),
            Err(e) => reply(Err(e)),
        }
    }

    /// `git status` of the project (porcelain, bounded).
    #[tool(annotations(title = "Git status", read_only_hint = true, open_world_hint = false))]
    async fn git_status(
        &self,
        Parameters(a): Parameters<git::GitStatusArgs>,
        ext: Extensions,
    ) -> CallToolResult {
        reply(
            self.ctx(&conversation(&ext))
                .and_then(|c| git::git_status(&c, &a)),
        )
    }

    /// `git log` of the project, paged by `offset`.
    #[tool(annotations(title = "Git log", read_only_hint = true, open_world_hint = false))]
    async fn git_log(
        &self,
        Parameters(a): Parameters<git::GitLogArgs>,
        ext: Extensions,
    ) -> CallToolResult {
        reply(
            self.ctx(&conversation(&ext))
                .and_then(|c| git::git_log(&c, &a)),
        )
    }

    /// `git diff` (working tree or staged), paged by `offset`.
    #[tool(annotations(title = "Git diff", read_only_hint = true, open_world_hint = false))]
    async fn git_diff(
        &self,
        Parameters(a): Parameters<git::GitDiffArgs>,
        ext: Extensions,
    ) -> CallToolResult {
        reply(
            self.ctx(&conversation(&ext))
                .and_then(|c| git::git_diff(&c, &a)),
        )
    }

    /// The project's diff since the last show_changes (or, with from_start, since this
    /// conversation's first call), untracked files included; paged by `offset`.
    #[tool(annotations(title = "Show changes", read_only_hint = true, open_world_hint = false))]
    async fn show_changes(
        &self,
        Parameters(a): Parameters<changes::ShowChangesArgs>,
        ext: Extensions,
    ) -> CallToolResult {
        let conv = conversation(&ext);
        let key = self.conversation_key(&conv);
        let ctx = match self.ctx(&conv) {
            Ok(c) => c,
            Err(e) => return reply(Err(e)),
        };
        let shared = self.shared.clone();
        reply(
            tokio::task::spawn_blocking(move || match shared.changes.as_ref() {
                Some(t) => t.show(&ctx, &key, &a),
                None => Err(codex_free_core::Error::Cancelled(
                    "show_changes is unavailable: no temporary folder for its snapshots (see the server log)".into(),
                )),
            })
            .await
            .unwrap_or_else(|e| {
                Err(codex_free_core::Error::Cancelled(format!(
                    "show_changes task failed: {e}"
                )))
            }),
        )
    }

    /// Commit staged changes (or the given paths) with a message.
    #[tool(annotations(
        title = "Git commit",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn git_commit(
        &self,
        Parameters(a): Parameters<git::GitCommitArgs>,
        ext: Extensions,
    ) -> CallToolResult {
        reply(
            self.ctx(&conversation(&ext))
                .and_then(|c| git::git_commit(&c, &a)),
        )
    }
}
