//! The memory folder (`<home>/memories`, a git repository): its [`layout`], the
//! [`folder`] repository (commits, history, rollback), size [`budget`]s, the one write
//! [`gate`] every commit passes, the [`jail`] the consolidation agent's file tools run in,
//! the [`readpath`] that serves the memory summary and the `memories_*` tools, the
//! [`citations`] parser, held commits under [`review`], cross-machine [`sync`], and the [`select`]ion
//! of extracted memories a consolidation works on.
//!
//! Invariant: nothing is committed into the folder without passing [`gate`]; nothing is
//! served from it without the same checks; a killed run's leftovers are rescued to a ref,
//! never adopted. The only git2 importer.

pub mod approval;
pub mod budget;
pub mod citations;
pub mod cli;
pub mod folder;
pub mod gate;
pub mod jail;
pub mod layout;
pub mod policy;
pub mod readpath;
pub mod review;
pub mod select;
pub mod sync;
pub mod v2;
