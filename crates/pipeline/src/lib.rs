//! The background memory pipeline: transcripts of the agents ([`sources`]) become one
//! [`rollout::Rollout`] model, are found and watched by [`discover`], sanitised by
//! [`redact`] and [`compact`], rendered for phase 1 by [`render`]; [`mod@bench`] measures the
//! compaction offline. [`input`] hands them to [`phase1`] (claims, extraction, usage);
//! [`phase2`] consolidates the extracted memories into the memory folder (a jailed agent,
//! size budgets, one git commit per success) and serves the read path. [`scheduler`] runs
//! phase 1 then phase 2 in the background, [`control`] drives them from the CLI, and
//! [`usage`] writes `memories.log`, [`alerts`] raises spend, failure and key alerts. [`hygiene`] lints and tidies memory folders
//! (layers, stale facts, duplicates, conflicts) without a model. [`providers`] reaches the models.
//! [`agent_usage`] imports the coding agents' own token usage and reports what they cost.
//!
//! Invariant: nothing here modifies an agent's transcript, and no transcript text leaves
//! [`render`] unredacted.

pub mod agent_usage;
pub mod alerts;
pub mod bench;
pub mod compact;
pub mod connect;
pub mod control;
pub mod discover;
pub mod hygiene;
pub mod input;
pub mod phase1;
pub mod phase2;
pub mod providers;
pub mod redact;
pub mod render;
pub mod rollout;
pub mod scheduler;
pub mod sources;
pub mod usage;
