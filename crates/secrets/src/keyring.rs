//! The OS keyring behind [`SecretStore`], through `keyring-core` stores, chosen per OS by
//! [`plan`]: the macOS Keychain, the Windows Credential Manager, and on Linux the Secret Service
//! (GNOME Keyring, KWallet) over D-Bus, with the kernel keyutils session keyring as
//! a labelled fallback when no Secret Service is reachable (no session bus, no daemon, a
//! locked keyring that cannot prompt). keyutils lives in kernel memory: it survives neither
//! logout nor reboot, which the label says.
//!
//! `CODEX_FREE_KEYRING` selects a backend: `auto` (default: the OS's own, with its fallback),
//! `secret-service`, `keyutils`, `keychain` or `credential-manager`.
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
    /// True when entries survive logout and reboot ([`Backend::persistent`]).
    pub persistent: bool,
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
/// The Secret Service store is compiled only on Linux.
pub fn secret_service() -> Result<OsStore> {
    Err(Error::Secrets(
        "the Secret Service store is built only on Linux".into(),
    ))
}

#[cfg(not(target_os = "linux"))]
/// keyutils exists only on Linux.
pub fn keyutils() -> Result<OsStore> {
    Err(Error::Secrets(
        "kernel keyutils exists only on Linux".into(),
    ))
}

/// Label of the macOS Keychain backend.
pub const LABEL_MAC_KEYCHAIN: &str = "macOS Keychain";
/// Label of the Windows Credential Manager backend.
pub const LABEL_WINDOWS_CREDENTIALS: &str = "Windows Credential Manager";

/// The macOS login keychain (the "legacy keychain" store, the one unsigned apps and
/// command-line tools can use). Errors: [`Error::Secrets`] when it cannot be opened.
#[cfg(target_os = "macos")]
pub fn mac_keychain() -> Result<OsStore> {
    let s = apple_native_keyring_store::keychain::Store::new()
        .map_err(|e| Error::Secrets(format!("cannot open the macOS Keychain ({e})")))?;
    Ok(OsStore::new(s, LABEL_MAC_KEYCHAIN))
}

/// The macOS Keychain store is compiled only on macOS.
#[cfg(not(target_os = "macos"))]
pub fn mac_keychain() -> Result<OsStore> {
    Err(Error::Secrets(
        "the macOS Keychain store is built only on macOS".into(),
    ))
}

/// The Windows Credential Manager (generic credentials of the signed-in user).
/// Errors: [`Error::Secrets`] when it cannot be opened.
#[cfg(target_os = "windows")]
pub fn windows_credentials() -> Result<OsStore> {
    let s = windows_native_keyring_store::Store::new()
        .map_err(|e| Error::Secrets(format!("cannot open the Windows Credential Manager ({e})")))?;
    Ok(OsStore::new(s, LABEL_WINDOWS_CREDENTIALS))
}

/// The Windows Credential Manager store is compiled only on Windows.
#[cfg(not(target_os = "windows"))]
pub fn windows_credentials() -> Result<OsStore> {
    Err(Error::Secrets(
        "the Windows Credential Manager store is built only on Windows".into(),
    ))
}

/// One key store backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// freedesktop Secret Service over D-Bus (GNOME Keyring, KWallet).
    SecretService,
    /// Linux kernel keyutils session keyring (volatile: lost at logout or reboot).
    Keyutils,
    /// macOS login keychain.
    MacKeychain,
    /// Windows Credential Manager.
    WindowsCredentials,
}

impl Backend {
    /// True when entries survive logout and reboot. Only such a store may hold something
    /// a client keeps a copy of (the server tokens), since a lost token breaks the client.
    pub fn persistent(self) -> bool {
        !matches!(self, Backend::Keyutils)
    }

    /// Open this backend (compiled in only on its own OS; elsewhere a clear error).
    pub fn open(self) -> Result<OsStore> {
        match self {
            Backend::SecretService => secret_service(),
            Backend::Keyutils => keyutils(),
            Backend::MacKeychain => mac_keychain(),
            Backend::WindowsCredentials => windows_credentials(),
        }
    }
}

/// The key stores to try, in order, on operating system `os` (a `std::env::consts::OS`
/// value) given the [`BACKEND_ENV`] value `choice` (empty = `auto`). The first that opens
/// is used; every later entry is a labelled fallback.
///
/// Errors: a message (for the dashboard) when `choice` names a store `os` does not have or
/// `os` has no supported store at all; then no key can be saved and nothing is kept
/// elsewhere.
pub fn plan(os: &str, choice: &str) -> std::result::Result<Vec<Backend>, String> {
    let choice = if choice.is_empty() { "auto" } else { choice };
    let named = match choice {
        "auto" => None,
        "secret-service" => Some(Backend::SecretService),
        "keyutils" => Some(Backend::Keyutils),
        "keychain" => Some(Backend::MacKeychain),
        "credential-manager" => Some(Backend::WindowsCredentials),
        other => {
            return Err(format!(
                "{BACKEND_ENV}={other} is not a key store (use auto, secret-service, keyutils, keychain or credential-manager)"
            ));
        }
    };
    let native: &[Backend] = match os {
        "linux" => &[Backend::SecretService, Backend::Keyutils],
        "macos" => &[Backend::MacKeychain],
        "windows" => &[Backend::WindowsCredentials],
        _ => &[],
    };
    match named {
        None if native.is_empty() => Err(format!("no supported key store on {os}")),
        None => Ok(native.to_vec()),
        Some(b) if native.contains(&b) => Ok(vec![b]),
        Some(b) => Err(format!(
            "{BACKEND_ENV}={choice}: {b:?} is not available on {os}"
        )),
    }
}

impl Opened {
    /// An in-memory store (tests and throwaway runs): keys vanish with the process, so it
    /// is not [`persistent`](Opened::persistent).
    pub fn in_memory() -> Self {
        let store = super::MemoryStore::default();
        Opened {
            label: store.label(),
            store: Arc::new(store),
            fallback: false,
            error: None,
            persistent: false,
        }
    }
}

fn opened(s: OsStore, backend: Backend, fallback: bool, error: Option<String>) -> Opened {
    Opened {
        label: s.label(),
        store: Arc::new(s),
        fallback,
        error,
        persistent: backend.persistent(),
    }
}

/// Open the key store [`plan`] chooses for this OS and [`BACKEND_ENV`]. Never fails: when
/// nothing is reachable the result holds an [`Unavailable`] store whose every call
/// explains why.
pub fn open() -> Opened {
    let choice = std::env::var(BACKEND_ENV).unwrap_or_default();
    let fail = |e: String| Opened {
        label: "none".into(),
        store: Arc::new(Unavailable(e.clone())),
        fallback: true,
        error: Some(e),
        persistent: false,
    };
    let backends = match plan(std::env::consts::OS, &choice) {
        Ok(b) => b,
        Err(e) => return fail(e),
    };
    let mut errors: Vec<String> = Vec::new();
    for (i, b) in backends.iter().enumerate() {
        match b.open() {
            Ok(s) => {
                let why = (!errors.is_empty()).then(|| errors.join("; "));
                if let Some(why) = &why {
                    // Debug, not a warning: every command and stdio session opens the store,
                    // and the fallback is shown where a user acts on it (the dashboard's
                    // key-store card, `memories status`'s key line).
                    tracing::debug!(error = %why, "preferred key store unavailable; using {}", s.label());
                }
                return opened(s, *b, i > 0, why);
            }
            Err(e) => errors.push(e.to_string()),
        }
    }
    fail(errors.join("; "))
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
    fn plan_per_operating_system() {
        use Backend::*;
        assert_eq!(plan("linux", "").unwrap(), vec![SecretService, Keyutils]);
        assert_eq!(
            plan("linux", "auto").unwrap(),
            vec![SecretService, Keyutils]
        );
        assert_eq!(plan("linux", "keyutils").unwrap(), vec![Keyutils]);
        assert_eq!(
            plan("linux", "secret-service").unwrap(),
            vec![SecretService]
        );
        assert_eq!(plan("macos", "").unwrap(), vec![MacKeychain]);
        assert_eq!(plan("macos", "keychain").unwrap(), vec![MacKeychain]);
        assert_eq!(plan("windows", "").unwrap(), vec![WindowsCredentials]);
        assert_eq!(
            plan("windows", "credential-manager").unwrap(),
            vec![WindowsCredentials]
        );
        // A store the OS does not have, an unknown OS, a typo: an explanation, no store.
        assert!(
            plan("macos", "keyutils")
                .unwrap_err()
                .contains("not available on macos")
        );
        assert!(plan("windows", "secret-service").is_err());
        assert!(plan("linux", "keychain").is_err());
        assert!(plan("freebsd", "").unwrap_err().contains("freebsd"));
        assert!(plan("linux", "kwallet").unwrap_err().contains("kwallet"));
        // Only the volatile kernel keyring is not persistent.
        assert!(SecretService.persistent() && MacKeychain.persistent());
        assert!(WindowsCredentials.persistent() && !Keyutils.persistent());
        // The other OSes' stores are not compiled in here, and say so.
        #[cfg(target_os = "linux")]
        {
            assert!(
                MacKeychain
                    .open()
                    .err()
                    .unwrap()
                    .to_string()
                    .contains("only on macOS")
            );
            assert!(WindowsCredentials.open().is_err());
        }
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
