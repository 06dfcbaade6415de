//! Bounded coding tools over one project root. Nothing here knows MCP: a tool takes typed
//! arguments (serde + schemars, doc comments become the JSON schema) and a [`ToolCtx`], and
//! returns text. Any text that could be unbounded is cut at a budget and its **last line**
//! names the argument that continues (SRV-3); without that line, the text is complete.
//!
//! Invariant: every path goes through [`codex_free_core::jail::Jail`]; no tool output exceeds
//! `output.maxToolOutputTokens` (tokens estimated as bytes / 4, see [`codex_free_core::tokens`]).

pub mod doc;
pub mod fs;
pub mod grep;
pub mod patch;

use std::path::{Path, PathBuf};

use codex_free_core::config::Config;

/// What every tool call gets: the canonical project root, a config snapshot taken at call
/// time (so edits to `codex.config.json` apply to the next call), and the state home.
#[derive(Debug, Clone)]
pub struct ToolCtx {
    /// Canonical absolute project root.
    pub root: PathBuf,
    /// Config snapshot for this call.
    pub config: Config,
    /// State home (spool files for exec output live under `<home>/spool/`).
    pub home: PathBuf,
}

impl ToolCtx {
    /// Build a context; `root` must already be canonical.
    pub fn new(root: impl Into<PathBuf>, config: Config, home: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            config,
            home: home.into(),
        }
    }

    /// The project root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Hard ceiling of one tool result in bytes (`maxToolOutputTokens` x 4).
    pub fn max_output_bytes(&self) -> usize {
        codex_free_core::tokens::bytes_for(self.config.output.max_tool_output_tokens)
    }
}

pub mod exec;
pub mod git;
pub mod policy;
pub mod task_memory;
