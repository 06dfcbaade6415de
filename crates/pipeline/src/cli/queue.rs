//! `memories outgoing | approve | deny`: the approval queue.

use super::{ControlEnv, MemoriesCmd};

use codex_free_core::Error;
use codex_free_core::Result;

/// `memories outgoing | approve | deny`: the approval queue ([`crate::approval`]).
#[expect(
    clippy::expect_used,
    reason = "serialising a plain data struct with string keys to JSON cannot fail"
)]
pub(super) fn queue_command(cmd: MemoriesCmd, env: &ControlEnv) -> Result<String> {
    match cmd {
        MemoriesCmd::Outgoing { text, json } => {
            let cfg = env.config()?;
            let q = crate::approval::list(
                &env.queue_stores(&cfg)?,
                cfg.memories.approval_mode(),
                text || json,
            )?;
            Ok(if json {
                serde_json::to_string_pretty(&q).expect("queue serialises") + "\n"
            } else {
                crate::approval::render(&q)
            })
        }
        MemoriesCmd::Approve { id, all, always } => {
            let cfg = env.config()?;
            let id = if all { None } else { id };
            let done = crate::approval::approve(&env.queue_stores(&cfg)?, id.as_deref(), always)?;
            let mut out = String::new();
            for q in &done {
                out.push_str(&format!(
                    "approved {} (session {}, {} bytes, sha256 {}): the next run sends it{}\n",
                    q.id,
                    q.thread_id,
                    q.bytes,
                    q.sha256,
                    if always {
                        format!(
                            "; {} is always allowed",
                            if q.project.is_empty() {
                                "(no project)"
                            } else {
                                &q.project
                            }
                        )
                    } else {
                        String::new()
                    }
                ));
            }
            if done.is_empty() {
                out.push_str("no request was waiting\n");
            }
            Ok(out)
        }
        MemoriesCmd::Deny { id } => {
            let cfg = env.config()?;
            let q = crate::approval::deny(&env.queue_stores(&cfg)?, &id)?;
            Ok(format!(
                "denied {}: never sent; memory for session {} off (memories thread on {} brings it back)\n",
                q.id, q.thread_id, q.thread_id
            ))
        }
        _ => Err(Error::InvalidArgument(
            "not an approval queue command".into(),
        )),
    }
}
