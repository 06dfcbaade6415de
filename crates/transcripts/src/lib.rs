//! The agents' session transcripts as one model: [`sources`] parse Codex CLI rollouts,
//! Claude Code and pi sessions and the server's own MCP transcripts into a
//! [`rollout::Rollout`]; [`discover`] finds and watches them; [`compact`] cuts tool output
//! and [`render`] lays a rollout out for phase 1 (redacted); [`mod@bench`] measures the
//! compaction offline.
//!
//! Invariant: nothing here modifies an agent's transcript (all opened read-only), and no
//! transcript text leaves [`render`] unredacted. The only notify importer.

pub mod bench;
pub mod cli;
pub mod compact;
pub mod discover;
pub mod render;
pub mod rollout;
pub mod sources;
