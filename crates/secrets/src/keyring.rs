//! The OS keyring behind [`SecretStore`], through `keyring-core` stores: the Secret Service
//! (GNOME Keyring, KWallet) over D-Bus on Linux, and the kernel keyutils session keyring as
//! a labelled fallback when no Secret Service is reachable (no session bus, no daemon, a
//! locked keyring that cannot prompt). keyutils lives in kernel memory: it survives neither
//! logout nor reboot, which the label says.
//!
//! `CODEX_FREE_KEYRING` selects a backend: `auto` (default: Secret Service, else keyutils),
//! `secret-service`, or `keyutils`.
//!
//! Invariant: a key is never written to disk, logged, or put in an error message; entries
//! are updated in place (`set_password` on the existing entry), never deleted and
//! re-created.

use std::sync::Arc;
use std::time::Duration;

use keyring_core::{CredentialStore, Entry};

use super::{SERVICE, Secret, SecretStore};
use codex_free_core::Error;
use codex_free_core::Result;

/// Environment variable selecting the backend (`auto`, `secret-service`, `keyutils`).
pub const BACKEND_ENV: &str = "CODEX_FREE_KEYRING";
/// How long opening the Secret Service may take before we fall back (seconds). A locked
/// collection that wants an interactive prompt would otherwise block forever.
pub const PROBE_TIMEOUT_SECS: u64 = 5;
/// Account name of the probe entry read (never written) when opening.
const PROBE_ACCOUNT: &str = "__codex_free_probe__";

/// Label of the Secret Service backend.
pub const LABEL_SECRET_SERVICE: &str = "Secret Service";
/// Label of the keyutils fallback.
pub const LABEL_KEYUTILS: &str = "kernel keyutils (fallback: keys are lost at logout or reboot)";

/// A [`SecretStore`] over one `keyring-core` credential store.
pub struct OsStore {
    store: Arc<CredentialStore>,
    label: String,
}

fn secrets_err(what: &str, account: &str, e: keyring_core::Error) -> Error {
    // keyring-core errors never contain the secret itself.
    Error::Secrets(format!("{what} the key of \"{account}\": {e}"))
}

impl OsStore {
    /// Wrap a `keyring-core` store with a human label.
    pub fn new(store: Arc<CredentialStore>, label: impl Into<String>) -> Self {
        Self {
            store,
            label: label.into(),
        }
    }

    fn entry(&self, account: &str) -> Result<Entry> {
        Entry::new_in_store(&self.store, SERVICE, account)
            .map_err(|e| secrets_err("addressing", account, e))
    }
}

impl SecretStore for OsStore {
    fn get(&self, account: &str) -> Result<Option<Secret>> {
        match self.entry(account)?.get_password() {
            Ok(p) => Ok(Some(Secret::new(p))),
            Err(keyring_core::Error::NoEntry) => Ok(None),
            Err(e) => Err(secrets_err("reading", account, e)),
        }
    }
    fn set(&self, account: &str, secret: &Secret) -> Result<()> {
        self.entry(account)?
            .set_password(secret.expose())
            .map_err(|e| secrets_err("storing", account, e))
    }
    fn delete(&self, account: &str) -> Result<()> {
        match self.entry(account)?.delete_credential() {
            Ok(()) | Err(keyring_core::Error::NoEntry) => Ok(()),
            Err(e) => Err(secrets_err("deleting", account, e)),
        }
    }
    fn label(&self) -> String {
        self.label.clone()
    }
}

/// A store that refuses every call with the reason no keyring is reachable; the UI shows
/// the message and nothing is ever kept elsewhere.
pub struct Unavailable(pub String);

impl SecretStore for Unavailable {
    fn get(&self, _account: &str) -> Result<Option<Secret>> {
        Err(Error::Secrets(self.0.clone()))
    }
    fn set(&self, _account: &str, _secret: &Secret) -> Result<()> {
        Err(Error::Secrets(self.0.clone()))
    }
    fn delete(&self, _account: &str) -> Result<()> {
        Err(Error::Secrets(self.0.clone()))
    }
    fn label(&self) -> String {
        "none (no keyring reachable)".into()
    }
}

/// The opened secret store and how it was chosen.
#[derive(Clone)]
pub struct Opened {
    /// The store to use.
    pub store: Arc<dyn SecretStore>,
    /// Its label (`Secret Service`, keyutils fallback, ...).
    pub label: String,
    /// True when the preferred store failed and a fallback (or [`Unavailable`]) is in use.
    pub fallback: bool,
    /// Why the preferred store is not in use.
    pub error: Option<String>,
}

/// Connect to the Secret Service and check it answers a read within
/// [`PROBE_TIMEOUT_SECS`].
///
/// Errors: [`Error::Secrets`] naming the cause (no session bus, no daemon, timeout).
#[cfg(target_os = "linux")]
pub fn secret_service() -> Result<OsStore> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let r = zbus_secret_service_keyring_store::Store::new()
            .map_err(|e| {
                Error::Secrets(format!("cannot reach the Secret Service over D-Bus ({e})"))
            })
            .and_then(|s| {
                let store = OsStore::new(s, LABEL_SECRET_SERVICE);
                store.get(PROBE_ACCOUNT)?;
                Ok(store)
            });
        let _ = tx.send(r);
    });
    match rx.recv_timeout(Duration::from_secs(PROBE_TIMEOUT_SECS)) {
        Ok(r) => r,
        Err(_) => Err(Error::Secrets(format!(
            "the Secret Service did not answer within {PROBE_TIMEOUT_SECS} s (is the keyring locked?)"
        ))),
    }
}

/// The kernel keyutils store (Linux). Works without D-Bus; entries live in the session
/// keyring until logout or reboot.
#[cfg(target_os = "linux")]
pub fn keyutils() -> Result<OsStore> {
    let s = linux_keyutils_keyring_store::Store::new()
        .map_err(|e| Error::Secrets(format!("cannot open the kernel keyutils store ({e})")))?;
    let store = OsStore::new(s, LABEL_KEYUTILS);
    store.get(PROBE_ACCOUNT)?;
    Ok(store)
}

#[cfg(not(target_os = "linux"))]
/// No OS store is compiled in for this platform yet.
pub fn secret_service() -> Result<OsStore> {
    Err(Error::Secrets(
        "no OS keyring store is built for this platform".into(),
    ))
}

#[cfg(not(target_os = "linux"))]
/// keyutils exists only on Linux.
pub fn keyutils() -> Result<OsStore> {
    Err(Error::Secrets(
        "kernel keyutils exists only on Linux".into(),
    ))
}

fn opened(s: OsStore, fallback: bool, error: Option<String>) -> Opened {
    Opened {
        label: s.label(),
        store: Arc::new(s),
        fallback,
        error,
    }
}

/// Open the secret store chosen by [`BACKEND_ENV`]. Never fails: when nothing is
/// reachable the result holds an [`Unavailable`] store whose every call explains why.
pub fn open() -> Opened {
    let choice = std::env::var(BACKEND_ENV).unwrap_or_default();
    let fail = |e: String| Opened {
        label: "none".into(),
        store: Arc::new(Unavailable(e.clone())),
        fallback: true,
        error: Some(e),
    };
    match choice.as_str() {
        "keyutils" => match keyutils() {
            Ok(s) => opened(s, false, None),
            Err(e) => fail(e.to_string()),
        },
        "secret-service" => match secret_service() {
            Ok(s) => opened(s, false, None),
            Err(e) => fail(e.to_string()),
        },
        _ => match secret_service() {
            Ok(s) => opened(s, false, None),
            Err(ss) => {
                let why = ss.to_string();
                // Debug, not a warning: every command and stdio session opens the store, and
                // the fallback is shown where a user acts on it (the dashboard's key-store
                // card, `memories status`'s key line).
                tracing::debug!(error = %why, "Secret Service unavailable; using the keyutils fallback");
                match keyutils() {
                    Ok(s) => opened(s, true, Some(why)),
                    Err(ku) => fail(format!("{why}; {ku}")),
                }
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Serialises the tests that read or change `DBUS_SESSION_BUS_ADDRESS`.
    static BUS_ENV: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn roundtrip(store: &dyn SecretStore, account: &str) {
        assert!(store.get(account).unwrap().is_none());
        store
            .set(account, &Secret::new("sk-first-000000001111"))
            .unwrap();
        store
            .set(account, &Secret::new("sk-second-00000002222"))
            .unwrap();
        assert_eq!(store.get(account).unwrap().unwrap().hint(), "…2222");
        store.delete(account).unwrap();
        store.delete(account).unwrap();
        assert!(store.get(account).unwrap().is_none());
    }

    #[test]
    fn os_store_over_the_sample_store() {
        let sample = keyring_core::sample::Store::new().unwrap();
        roundtrip(&OsStore::new(sample, "sample"), "openai");
    }

    #[test]
    fn unavailable_explains() {
        let u = Unavailable("no session bus".into());
        assert_eq!(
            u.get("openai").err().map(|e| e.code().as_str()),
            Some("secrets")
        );
        assert!(
            u.set("openai", &Secret::new("x"))
                .unwrap_err()
                .to_string()
                .contains("no session bus")
        );
        assert!(u.delete("openai").is_err());
    }

    /// Runs against the real Secret Service only when `CODEX_FREE_TEST_SECRET_SERVICE=1`
    /// (scripts/ui-e2e.sh sets it inside `dbus-run-session` with an unlocked gnome-keyring).
    #[test]
    fn real_secret_service_when_asked() {
        if std::env::var("CODEX_FREE_TEST_SECRET_SERVICE").as_deref() != Ok("1") {
            return;
        }
        let _g = BUS_ENV.lock().unwrap_or_else(|e| e.into_inner());
        let s = secret_service().expect("Secret Service reachable");
        roundtrip(&s, &format!("test-{}", std::process::id()));
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn no_bus_falls_back_or_explains() {
        // A bus address that cannot exist: the Secret Service must fail fast and clearly.
        let _g = BUS_ENV.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: the tests touching this variable hold BUS_ENV.
        let had = std::env::var_os("DBUS_SESSION_BUS_ADDRESS");
        unsafe {
            std::env::set_var(
                "DBUS_SESSION_BUS_ADDRESS",
                "unix:path=/nonexistent/codex-free-bus",
            )
        };
        let e = secret_service()
            .err()
            .expect("no bus means no Secret Service");
        match had {
            Some(v) => unsafe { std::env::set_var("DBUS_SESSION_BUS_ADDRESS", v) },
            None => unsafe { std::env::remove_var("DBUS_SESSION_BUS_ADDRESS") },
        }
        assert_eq!(e.code(), "secrets");
        assert!(e.to_string().contains("Secret Service"), "{e}");
    }
}
