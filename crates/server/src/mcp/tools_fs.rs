//! MCP wiring of the file, search, patch, project-doc and environment tools
//! ([`codex_free_tools::fs`], [`codex_free_tools::grep`], [`codex_free_tools::patch`], [`codex_free_tools::doc`]).
//! Annotations are honest: read tools are `readOnlyHint`, writes are `destructiveHint`.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, Extensions};
use rmcp::{tool, tool_router};

use crate::mcp::server::{CodexFree, conversation, reply};
use codex_free_tools::{doc, fs, grep, image, patch};

impl CodexFree {
    /// Run a synchronous tool on the blocking pool (file and directory walks must not stall
    /// the async runtime that serves every session) — or, when `page_read` and the stdio
    /// transport set `inline_reads`, on the calling worker: over stdio one client is
    /// answered on one worker, and the pool's round trip (two thread wake-ups) was the
    /// largest remaining CPU cost of a one-page read.
    async fn blocking(
        &self,
        ext: &Extensions,
        page_read: bool,
        f: impl FnOnce(codex_free_tools::ToolCtx) -> codex_free_core::Result<String> + Send + 'static,
    ) -> CallToolResult {
        let ctx = match self.ctx(&conversation(ext)) {
            Ok(c) => c,
            Err(e) => return reply(Err(e)),
        };
        if page_read
            && self
                .shared
                .inline_reads
                .load(std::sync::atomic::Ordering::Relaxed)
        {
            return reply(f(ctx));
        }
        reply(
            tokio::task::spawn_blocking(move || f(ctx))
                .await
                .unwrap_or_else(|e| {
                    Err(codex_free_core::Error::Cancelled(format!(
                        "tool task failed: {e}"
                    )))
                }),
        )
    }
}

#[tool_router(router = fs_router, vis = "pub(crate)")]
impl CodexFree {
    /// Read a text file of the project. Returns at most `output.maxFileLines` lines and
    /// `output.maxFileBytes` bytes; when cut, the last line names the offset that continues.
    #[tool(annotations(title = "Read file", read_only_hint = true, open_world_hint = false))]
    async fn read_file(
        &self,
        Parameters(a): Parameters<fs::ReadFileArgs>,
        ext: Extensions,
    ) -> CallToolResult {
        // A page read: regular files only, at most one page past its offset.
        self.blocking(&ext, true, move |c| fs::read_file(&c, &a))
            .await
    }

    /// Show a PNG, JPEG, GIF or WebP image of the project (type from its content; up to
    /// 3.75 MiB).
    #[tool(annotations(title = "View image", read_only_hint = true, open_world_hint = false))]
    async fn view_image(
        &self,
        Parameters(a): Parameters<image::ViewImageArgs>,
        ext: Extensions,
    ) -> CallToolResult {
        use base64::Engine as _;
        let ctx = match self.ctx(&conversation(&ext)) {
            Ok(c) => c,
            Err(e) => return reply(Err(e)),
        };
        let r = tokio::task::spawn_blocking(move || image::view_image(&ctx, &a))
            .await
            .unwrap_or_else(|e| {
                Err(codex_free_core::Error::Cancelled(format!(
                    "view_image task failed: {e}"
                )))
            });
        match r {
            Ok(img) => CallToolResult::success(vec![
                rmcp::model::ContentBlock::image(
                    base64::engine::general_purpose::STANDARD.encode(&img.bytes),
                    img.mime,
                ),
                rmcp::model::ContentBlock::text(format!(
                    "{} ({}, {} bytes)",
                    img.shown,
                    img.mime,
                    img.bytes.len()
                )),
            ]),
            Err(e) => reply(Err(e)),
        }
    }

    /// Create or overwrite a file inside the project (atomic write; parents created).
    #[tool(annotations(
        title = "Write file",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn write_file(
        &self,
        Parameters(a): Parameters<fs::WriteFileArgs>,
        ext: Extensions,
    ) -> CallToolResult {
        self.blocking(&ext, false, move |c| fs::write_file(&c, &a))
            .await
    }

    /// List one directory of the project (sorted; directories end with `/`), paged by `offset`.
    #[tool(annotations(
        title = "List directory",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn list_directory(
        &self,
        Parameters(a): Parameters<fs::ListDirectoryArgs>,
        ext: Extensions,
    ) -> CallToolResult {
        self.blocking(&ext, false, move |c| fs::list_directory(&c, &a))
            .await
    }

    /// Show the project's file tree (respects .gitignore), bounded by `output.maxTreeNodes`, paged by `offset`.
    #[tool(annotations(title = "Tree", read_only_hint = true, open_world_hint = false))]
    async fn tree(
        &self,
        Parameters(a): Parameters<fs::TreeArgs>,
        ext: Extensions,
    ) -> CallToolResult {
        self.blocking(&ext, false, move |c| fs::tree(&c, &a)).await
    }

    /// Find files by glob pattern (e.g. `src/**/*.rs`), paged by `offset`.
    #[tool(annotations(title = "Glob", read_only_hint = true, open_world_hint = false))]
    async fn glob(
        &self,
        Parameters(a): Parameters<fs::GlobArgs>,
        ext: Extensions,
    ) -> CallToolResult {
        self.blocking(&ext, false, move |c| fs::glob(&c, &a)).await
    }

    /// Search file contents with a regular expression (ripgrep's engine; respects .gitignore).
    /// Results are `path:line:text`, paged by `offset`.
    #[tool(annotations(title = "Grep", read_only_hint = true, open_world_hint = false))]
    async fn grep(
        &self,
        Parameters(a): Parameters<grep::GrepArgs>,
        ext: Extensions,
    ) -> CallToolResult {
        let ctx = match self.ctx(&conversation(&ext)) {
            Ok(c) => c,
            Err(e) => return reply(Err(e)),
        };
        reply(
            tokio::task::spawn_blocking(move || grep::grep(&ctx, &a))
                .await
                .unwrap_or_else(|e| {
                    Err(codex_free_core::Error::Cancelled(format!(
                        "grep task failed: {e}"
                    )))
                }),
        )
    }

    /// Apply a patch in Codex's apply_patch format (`*** Begin Patch` ... `*** End Patch`):
    /// add, delete, update and move files. All-or-nothing.
    #[tool(annotations(
        title = "Apply patch",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn apply_patch(
        &self,
        Parameters(a): Parameters<patch::ApplyPatchArgs>,
        ext: Extensions,
    ) -> CallToolResult {
        self.blocking(&ext, false, move |c| patch::apply_patch(&c, &a))
            .await
    }

    /// The project's AGENTS.md, bounded by `projectDoc.maxBytes`, paged by `offset`.
    #[tool(annotations(
        title = "Project doc (AGENTS.md)",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn get_project_doc(
        &self,
        Parameters(a): Parameters<doc::GetProjectDocArgs>,
        ext: Extensions,
    ) -> CallToolResult {
        self.blocking(&ext, false, move |c| doc::get_project_doc(&c, &a))
            .await
    }

    /// Facts about the environment: project root, OS, shell, git branch, date, output caps
    /// (the page budget in force for this client).
    #[tool(annotations(title = "Environment", read_only_hint = true, open_world_hint = false))]
    async fn get_environment(&self, ext: Extensions) -> CallToolResult {
        let client = self.client_lines();
        let source = match self.shared.mode {
            crate::mcp::server::Mode::Single { .. } => Some(self.shared.root_source()),
            crate::mcp::server::Mode::Multi { .. } => None,
        };
        reply(self.ctx(&conversation(&ext)).map(|c| {
            let env = doc::get_environment(&c);
            let mut t = match source {
                // Right after the `project root:` line.
                Some(s) => match env.split_once('\n') {
                    Some((first, rest)) => {
                        format!("{first}\nproject root from: {}\n{rest}", s.describe())
                    }
                    None => format!("{env}\nproject root from: {}", s.describe()),
                },
                None => env,
            };
            t.push('\n');
            t.push_str(&client);
            t
        }))
    }
}
