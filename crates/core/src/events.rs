//! Memory events: what other parts must react to when the memory or the saved state
//! changes, without the writer knowing who listens. The one listener today keeps the linked
//! copies of the memory summary and saved state in other agents' instruction files current
//! (registered once by each binary's composition root); a library never registers one, so
//! tests and tools that write memory touch no other agent's file.
//!
//! Listeners run synchronously on the writer's thread, after the write is durable; a
//! listener must not fail the write (it logs its own errors).

use std::path::Path;
use std::sync::RwLock;

/// What changed in a state home.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryEvent {
    /// A commit landed in the memory folder (consolidation, review accept, rollback, tidy,
    /// sync), so the served memory summary may have changed.
    Committed,
    /// Task memory's saved state (notes, plan) changed through `remember`/`update_plan`:
    /// nothing was committed, but the saved-state copy in Codex's instructions is stale.
    SavedStateChanged,
    /// `memories.use_memories` / `memories.enabled` changed: linked copies appear or go.
    SettingsChanged,
}

/// A listener: the state home and the event.
pub type Listener = fn(&Path, MemoryEvent);

static LISTENERS: RwLock<Vec<Listener>> = RwLock::new(Vec::new());

/// Register `f` for every later [`emit`] in this process. Registering the same function
/// twice is a no-op (each binary's start may run more than once in tests).
pub fn on_memory_event(f: Listener) {
    let mut l = LISTENERS.write().unwrap_or_else(|e| e.into_inner());
    if !l.iter().any(|g| std::ptr::fn_addr_eq(*g, f)) {
        l.push(f);
    }
}

/// Tell every registered listener that `ev` happened in `home`.
pub fn emit(home: &Path, ev: MemoryEvent) {
    let l: Vec<Listener> = LISTENERS.read().unwrap_or_else(|e| e.into_inner()).clone();
    for f in l {
        f(home, ev);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static SEEN: AtomicUsize = AtomicUsize::new(0);
    fn count(_: &Path, ev: MemoryEvent) {
        if ev == MemoryEvent::Committed {
            SEEN.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_listener_registered_twice_runs_once_per_event() {
        on_memory_event(count);
        on_memory_event(count);
        let before = SEEN.load(Ordering::SeqCst);
        emit(Path::new("/nonexistent"), MemoryEvent::Committed);
        emit(Path::new("/nonexistent"), MemoryEvent::SavedStateChanged);
        assert_eq!(SEEN.load(Ordering::SeqCst) - before, 1);
    }
}
