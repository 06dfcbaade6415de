//! `memories.keep_sent_days`: the sealed bytes of each model request kept for inspection in
//! `<home>/sent/<sha256>.json` (mode 0600, the directory 0700), named by the hash its
//! receipt in Runs & costs carries, so `sha256sum` of the file matches it. Files older than
//! the setting are pruned at every phase-1 run; with 0 (the default) nothing is kept and
//! what an earlier setting kept is removed.
//!
//! Invariant: only bytes the outgoing gate sealed are written (redacted, private spans
//! removed); a write failure is logged and never stops the request.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use codex_free_core::Result;

/// The folder under the state home.
pub const SENT_DIR: &str = "sent";

/// Where the sealed bytes of the request with receipt hash `sha256` are kept.
pub fn path_of(home: &Path, sha256: &str) -> PathBuf {
    home.join(SENT_DIR).join(format!("{sha256}.json"))
}

/// Keep `bytes` (hash `sha256`) when `keep_days` > 0. Errors are logged, not returned: the
/// request has left already and its receipt is recorded either way.
pub fn keep(home: &Path, keep_days: u32, sha256: &str, bytes: &[u8]) {
    if keep_days == 0 {
        return;
    }
    let r = codex_free_core::home::create_private_dir(&home.join(SENT_DIR)).and_then(|_| {
        codex_free_core::home::write_atomic_private_unlocked(&path_of(home, sha256), bytes)
    });
    if let Err(e) = r {
        tracing::warn!(error = %e, "could not keep the sent request (memories.keep_sent_days)");
    }
}

/// The kept sealed bytes of the request whose receipt hash is `sha256`, as text.
///
/// Errors: [`codex_free_core::Error::InvalidArgument`] when `sha256` is not 64 lowercase
/// hex digits; [`codex_free_core::Error::NotFound`] when nothing is kept under it (never
/// kept, or pruned); [`codex_free_core::Error::Refused`] when the file's content no longer
/// has that hash (changed on disk).
pub fn read_kept(home: &Path, sha256: &str) -> Result<String> {
    use sha2::Digest;
    if sha256.len() != 64
        || !sha256
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return Err(codex_free_core::Error::InvalidArgument(format!(
            "{sha256:?} is not a request hash (64 lowercase hex digits)"
        )));
    }
    let p = path_of(home, sha256);
    let bytes = match std::fs::read(&p) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(codex_free_core::Error::NotFound(p));
        }
        Err(e) => {
            return Err(codex_free_core::Error::io(
                format!("reading {}", p.display()),
                e,
            ));
        }
    };
    if hex::encode(sha2::Sha256::digest(&bytes)) != sha256 {
        return Err(codex_free_core::Error::Refused(format!(
            "{} was changed after it was sent: its content no longer has the receipt's hash",
            p.display()
        )));
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Remove kept requests older than `keep_days` days (all of them when 0). Returns how many
/// were removed; a missing folder is 0.
///
/// Errors: the folder exists but cannot be listed.
pub fn prune(home: &Path, keep_days: u32) -> Result<usize> {
    let dir = home.join(SENT_DIR);
    let rd = match std::fs::read_dir(&dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => {
            return Err(codex_free_core::Error::io(
                format!("listing {}", dir.display()),
                e,
            ));
        }
    };
    let cutoff = SystemTime::now() - Duration::from_secs(u64::from(keep_days) * 86_400);
    let mut n = 0;
    for e in rd.flatten() {
        let p = e.path();
        if p.extension().and_then(|x| x.to_str()) != Some("json") {
            continue;
        }
        let old = keep_days == 0
            || e.metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t < cutoff);
        if old && std::fs::remove_file(&p).is_ok() {
            n += 1;
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_files_are_private_and_pruned_by_age() {
        let d = tempfile::tempdir().unwrap();
        keep(d.path(), 0, "aa", b"x");
        assert!(!path_of(d.path(), "aa").exists(), "0 keeps nothing");
        keep(d.path(), 2, "bb", b"{}\n");
        keep(d.path(), 2, "cc", b"{}\n");
        let p = path_of(d.path(), "bb");
        assert_eq!(std::fs::read(&p).unwrap(), b"{}\n");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&p), 0o600);
            assert_eq!(mode(&d.path().join(SENT_DIR)), 0o700);
        }
        // Both ages set from this process's clock, not the file system's: under a faked
        // clock (the clock tests) a file written just now may look weeks old.
        let age = |p: &Path, secs: u64| {
            std::fs::File::options()
                .write(true)
                .open(p)
                .unwrap()
                .set_modified(SystemTime::now() - Duration::from_secs(secs))
                .unwrap();
        };
        age(&p, 3 * 86_400);
        age(&path_of(d.path(), "cc"), 0);
        assert_eq!(prune(d.path(), 2).unwrap(), 1);
        assert!(!p.exists() && path_of(d.path(), "cc").exists());
        assert_eq!(prune(d.path(), 0).unwrap(), 1, "0 removes what was kept");
        assert_eq!(prune(&d.path().join("none"), 3).unwrap(), 0);
        // Reading back checks the name and the hash.
        use sha2::Digest;
        let h = hex::encode(sha2::Sha256::digest(b"{\"a\":1}\n"));
        keep(d.path(), 1, &h, b"{\"a\":1}\n");
        assert_eq!(read_kept(d.path(), &h).unwrap(), "{\"a\":1}\n");
        assert_eq!(
            read_kept(d.path(), "../x").unwrap_err().code(),
            "invalid_argument"
        );
        std::fs::write(path_of(d.path(), &h), "tampered").unwrap();
        assert_eq!(read_kept(d.path(), &h).unwrap_err().code(), "refused");
        assert!(read_kept(d.path(), &"0".repeat(64)).is_err());
    }
}
