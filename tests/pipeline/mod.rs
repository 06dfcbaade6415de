//! The memory pipeline (`codex-free-pipeline`): transcript sources, phase 1, phase 2
//! (consolidation), hygiene (lint, tidy, review), sync across machines, and agent usage.

mod agent_usage;
mod approval;
mod hygiene;
mod phase1;
mod phase1_fixtures;
mod phase2;
mod sources;
mod sync;
mod v2;
