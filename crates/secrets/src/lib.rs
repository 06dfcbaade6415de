//! Provider credentials. One trait, [`SecretStore`], with the OS keyring implementation
//! (Secret Service / Keychain / Credential Manager via `keyring-core`, kernel keyutils as a
//! labelled fallback on Linux) and an in-memory one for tests. [`Secret`] has no
//! `Debug`/`Display`, so a key cannot reach a log by accident.
//!
//! Invariant: `keyring` crates are imported only here; a key is never written to disk in
//! clear, never logged, never put in `codex.config.json`.

pub mod keyring;

use std::collections::HashMap;
use std::sync::Mutex;

use codex_free_core::Result;

/// The keyring service name all entries live under.
pub const SERVICE: &str = "codex-free";

/// A secret value. Deliberately no `Debug`, `Display` or `Serialize`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wrap a value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }
    /// The raw value; call only where it is sent to its provider.
    pub fn expose(&self) -> &str {
        &self.0
    }
    /// The last 4 characters, for display (`…abcd`); shorter secrets show `…`.
    pub fn hint(&self) -> String {
        let chars: Vec<char> = self.0.chars().collect();
        if chars.len() <= 8 {
            "…".into()
        } else {
            format!("…{}", chars[chars.len() - 4..].iter().collect::<String>())
        }
    }
}

/// A place credentials live. `account` is the provider name (`openai`, `anthropic`, ...).
pub trait SecretStore: Send + Sync {
    /// The secret for `account`, `Ok(None)` when absent. Errors: [`codex_free_core::Error::Secrets`] when the store is unreachable.
    fn get(&self, account: &str) -> Result<Option<Secret>>;
    /// Create or update in place (updating keeps OS "always allow" grants).
    fn set(&self, account: &str, secret: &Secret) -> Result<()>;
    /// Delete; deleting an absent entry is Ok.
    fn delete(&self, account: &str) -> Result<()>;
    /// Human label of the backend, e.g. `"Secret Service"`, `"kernel keyutils (lost on reboot)"`, `"in-memory (tests)"`.
    fn label(&self) -> String;
}

/// In-memory store for tests.
#[derive(Default)]
pub struct MemoryStore(Mutex<HashMap<String, Secret>>);

impl SecretStore for MemoryStore {
    fn get(&self, account: &str) -> Result<Option<Secret>> {
        Ok(self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(account)
            .cloned())
    }
    fn set(&self, account: &str, secret: &Secret) -> Result<()> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(account.into(), secret.clone());
        Ok(())
    }
    fn delete(&self, account: &str) -> Result<()> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(account);
        Ok(())
    }
    fn label(&self) -> String {
        "in-memory (tests)".into()
    }
}

/// The environment variable consulted when the store has no entry for `account`
/// (CI and headless fallback), e.g. `openai` → `OPENAI_API_KEY`.
pub fn env_var_for(account: &str) -> String {
    format!(
        "{}_API_KEY",
        account.to_ascii_uppercase().replace(['-', '.', '/'], "_")
    )
}

/// Where a key was found by [`lookup`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyFrom {
    /// The secret store (the OS keyring in production).
    Store,
    /// The environment variable [`env_var_for`] names.
    Env,
}

/// The key in `account`'s environment variable ([`env_var_for`]), if set and non-empty.
pub fn env_key(account: &str) -> Option<Secret> {
    std::env::var(env_var_for(account))
        .ok()
        .filter(|v| !v.is_empty())
        .map(Secret::new)
}

/// The one key lookup: `account` in `store`, then in its environment variable, with where
/// it was found.
///
/// Errors: the store's (e.g. no keyring reachable); the environment is not consulted then.
pub fn lookup(store: &dyn SecretStore, account: &str) -> Result<Option<(Secret, KeyFrom)>> {
    if let Some(s) = store.get(account)? {
        return Ok(Some((s, KeyFrom::Store)));
    }
    Ok(env_key(account).map(|s| (s, KeyFrom::Env)))
}

/// The key of `account` from [`lookup`], without where it came from.
pub fn resolve(store: &dyn SecretStore, account: &str) -> Result<Option<Secret>> {
    Ok(lookup(store, account)?.map(|(s, _)| s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_store_roundtrip_and_hint() {
        let s = MemoryStore::default();
        assert!(s.get("openai").unwrap().is_none());
        s.set("openai", &Secret::new("sk-test-1234567890abcd"))
            .unwrap();
        assert_eq!(s.get("openai").unwrap().unwrap().hint(), "…abcd");
        s.delete("openai").unwrap();
        assert!(s.get("openai").unwrap().is_none());
        assert_eq!(env_var_for("open-router"), "OPEN_ROUTER_API_KEY");
    }

    #[test]
    fn lookup_prefers_the_store_then_the_environment() {
        let account = "codex-free-lookup-test";
        let s = MemoryStore::default();
        assert!(lookup(&s, account).unwrap().is_none());
        // SAFETY: the variable is unique to this test; nothing else reads or writes it.
        unsafe { std::env::set_var(env_var_for(account), "from-env-1234") };
        let (k, from) = lookup(&s, account).unwrap().unwrap();
        assert_eq!((k.expose(), from), ("from-env-1234", KeyFrom::Env));
        s.set(account, &Secret::new("from-store-5678")).unwrap();
        let (k, from) = lookup(&s, account).unwrap().unwrap();
        assert_eq!((k.expose(), from), ("from-store-5678", KeyFrom::Store));
        assert_eq!(
            resolve(&s, account).unwrap().unwrap().expose(),
            "from-store-5678"
        );
        unsafe { std::env::set_var(env_var_for(account), "") };
        assert!(env_key(account).is_none(), "an empty variable is no key");
    }
}
