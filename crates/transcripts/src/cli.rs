//! The transcripts crate's command-line arguments (clap): `memories bench-compaction`.

use std::path::{Path, PathBuf};

use crate::bench::BenchOptions;
use crate::compact::DEFAULT_TOOL_RESULT_TOKEN_BUDGET;
use crate::discover::SourceRoots;
use crate::rollout::Source;
use codex_free_core::Result;

/// Command-line arguments of `memories bench-compaction`.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchArgs {
    /// Tokens kept per tool result (0 = compaction off).
    #[arg(long, default_value_t = DEFAULT_TOOL_RESULT_TOKEN_BUDGET)]
    pub budget: usize,
    /// Sources to read, comma-separated: codex,claude,pi,mcp (default: all).
    #[arg(long, value_delimiter = ',')]
    pub sources: Vec<String>,
    /// Newest sessions to measure.
    #[arg(long, default_value_t = 40)]
    pub max_sessions: usize,
    /// Context window of the phase-1 model in tokens (cap = 70%; default cap 150,000).
    #[arg(long)]
    pub context_window: Option<usize>,
    /// Codex home to read instead of $CODEX_HOME / ~/.codex.
    #[arg(long)]
    pub codex_home: Option<PathBuf>,
    /// Claude Code config dir instead of $CLAUDE_CONFIG_DIR / ~/.claude.
    #[arg(long)]
    pub claude_dir: Option<PathBuf>,
    /// pi agent dir instead of $PI_CODING_AGENT_DIR / ~/.pi/agent.
    #[arg(long)]
    pub pi_dir: Option<PathBuf>,
}

impl BenchArgs {
    /// Resolve against the environment and the state home (for MCP transcripts).
    ///
    /// Errors: [`codex_free_core::Error::InvalidArgument`] for an unknown source name.
    pub fn to_options(&self, state_home: &Path) -> Result<BenchOptions> {
        let mut roots = SourceRoots::from_env(state_home);
        if let Some(p) = &self.codex_home {
            roots.codex_home = Some(p.clone());
        }
        if let Some(p) = &self.claude_dir {
            roots.claude_dir = Some(p.clone());
        }
        if let Some(p) = &self.pi_dir {
            roots.pi_dir = Some(p.clone());
        }
        let sources = if self.sources.is_empty() {
            Source::ALL.to_vec()
        } else {
            Source::parse_list(&self.sources)?
        };
        Ok(BenchOptions {
            budget: self.budget,
            sources,
            max_sessions: self.max_sessions,
            context_window: self.context_window,
            roots,
        })
    }
}
