//! Bounded coding tools over one project root. Nothing here knows MCP: a tool takes typed
//! arguments (serde + schemars, doc comments become the JSON schema) and a [`ToolCtx`], and
//! returns text. Any text that could be unbounded is cut at a budget and its **last line**
//! names the argument that continues, so the caller knows the text was cut; without that
//! line, the text is complete.
//!
//! Invariant: every path goes through the call's [`codex_free_core::jail::Jail`]
//! ([`ToolCtx::jail`]), protected directories included; no tool output exceeds
//! `output.maxToolOutputTokens` (tokens estimated as bytes / 4, see [`codex_free_core::tokens`]).

pub mod changes;
pub mod doc;
pub mod fs;
pub mod grep;
pub mod image;
pub mod patch;
pub mod tmpfiles;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use codex_free_core::config::Config;
use codex_free_core::jail::{Jail, Protected};

/// What every tool call gets: the project's jail (canonical root and the protected
/// directories computed at server start), a config snapshot taken at call time (so edits to
/// `codex.config.json` apply to the next call), and the state home.
#[derive(Debug, Clone)]
pub struct ToolCtx {
    jail: Jail,
    /// Config snapshot for this call.
    pub config: Config,
    /// State home (spool files for exec output live under `<home>/spool/`).
    pub home: PathBuf,
}

impl ToolCtx {
    /// Build a context over `jail`.
    pub fn new(jail: Jail, config: Config, home: impl Into<PathBuf>) -> Self {
        Self {
            jail,
            config,
            home: home.into(),
        }
    }

    /// Build a context over `root` (canonicalised) with `protected`.
    ///
    /// Errors: as [`Jail::new`] (missing root, not a directory, a protected root).
    pub fn open(
        root: &Path,
        protected: Arc<Protected>,
        config: Config,
        home: impl Into<PathBuf>,
    ) -> codex_free_core::Result<Self> {
        Ok(Self::new(Jail::new(root, protected)?, config, home))
    }

    /// The jail every path of this call goes through.
    pub fn jail(&self) -> &Jail {
        &self.jail
    }

    /// The canonical project root.
    pub fn root(&self) -> &Path {
        self.jail.root()
    }

    /// Hard ceiling of one tool result in bytes (`maxToolOutputTokens` x 4).
    pub fn max_output_bytes(&self) -> usize {
        codex_free_core::tokens::bytes_for(self.config.output.max_tool_output_tokens)
    }
}

pub mod exec;
pub mod git;
pub mod policy;
