//! The cached read grants of the carve of `/` (Linux).

use std::path::Path;

/// The read grants of the carve of `/` around the protected paths, shared by every
/// command whose protected set is the same. Reason: carving lists `/`, the home
/// directory and every directory on the way to a protected path, which was most of a
/// command's sandbox cost; reusing it is sound while no listed directory changed (an
/// entry added, removed or renamed changes its mtime, a replaced directory its inode),
/// which [`ReadGrants::get`] checks with one `lstat` per listed directory. Paths, not
/// open descriptors, are kept: a carve beside a busy directory grants thousands of
/// entries, and holding them open would count against the server's open-file limit.
#[derive(Debug)]
pub(super) struct ReadGrants {
    /// The protected paths it was carved around (`/dev` included).
    pub(super) key: Vec<std::path::PathBuf>,
    /// What the carve listed, with the stamps from before each listing.
    pub(super) listed: super::Listed,
    /// The granted paths.
    pub(super) paths: Vec<std::path::PathBuf>,
    /// Whether each of `paths` is a directory (files get file rights only).
    pub(super) dirs: Vec<bool>,
}

/// One cached [`ReadGrants`] (the last protected set asked for).
pub(super) type Slot = std::sync::Mutex<Option<std::sync::Arc<ReadGrants>>>;

impl ReadGrants {
    /// The current grants for `no_read`: the cached ones when their key matches and
    /// every listed directory's stamp is unchanged, else a new carve (then cached).
    pub(super) fn get(no_read: Vec<std::path::PathBuf>) -> std::sync::Arc<ReadGrants> {
        static CACHE: Slot = Slot::new(None);
        Self::get_in(&CACHE, no_read)
    }

    /// [`ReadGrants::get`] with the cache in `slot`.
    pub(super) fn get_in(
        slot: &Slot,
        no_read: Vec<std::path::PathBuf>,
    ) -> std::sync::Arc<ReadGrants> {
        use std::sync::Arc;
        let mut cache = slot.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = cache.as_ref()
            && c.key == no_read
            && c.listed
                .iter()
                .all(|(p, st)| st.is_some() && super::dir_stamp(p) == *st)
        {
            return Arc::clone(c);
        }
        let mut listed = Vec::new();
        let (paths, dirs) = super::carve_listing(Path::new("/"), &no_read, &mut listed)
            .into_iter()
            .map(|g| (g.path, g.dir))
            .unzip();
        let fresh = Arc::new(ReadGrants {
            key: no_read,
            listed,
            paths,
            dirs,
        });
        *cache = Some(Arc::clone(&fresh));
        fresh
    }
}

#[cfg(test)]
mod tests {
    use super::super::resolve;
    use super::*;
    use std::path::PathBuf;

    #[cfg(target_os = "linux")]
    #[test]
    fn cached_read_grants_follow_changes_of_what_they_listed() {
        let d = tempfile::tempdir().unwrap();
        let base = resolve(d.path());
        std::fs::create_dir_all(base.join("a/secret")).unwrap();
        std::fs::create_dir_all(base.join("a/other")).unwrap();
        let key = vec![base.join("a/secret"), PathBuf::from("/dev")];
        let slot = Slot::new(None);
        let first = ReadGrants::get_in(&slot, key.clone());
        assert!(first.paths.contains(&base.join("a/other")));
        assert!(
            !first
                .paths
                .iter()
                .any(|p| p.starts_with(base.join("a/secret")))
        );
        // Nothing changed: the same carve is reused.
        let again = ReadGrants::get_in(&slot, key.clone());
        assert!(std::sync::Arc::ptr_eq(&first, &again));
        // A new entry beside the protected path: carved again, and readable.
        std::fs::create_dir(base.join("a/new")).unwrap();
        let after_add = ReadGrants::get_in(&slot, key.clone());
        assert!(!std::sync::Arc::ptr_eq(&first, &after_add));
        assert!(after_add.paths.contains(&base.join("a/new")));
        // Another protected set: carved for it.
        let other_key = vec![base.join("a/other"), PathBuf::from("/dev")];
        let other = ReadGrants::get_in(&slot, other_key);
        assert!(other.paths.contains(&base.join("a/secret")));
        assert!(
            !other
                .paths
                .iter()
                .any(|p| p.starts_with(base.join("a/other")))
        );
        // A listed directory replaced by another (new inode): carved again.
        let before = ReadGrants::get_in(&slot, key.clone());
        std::fs::rename(base.join("a"), base.join("a-old")).unwrap();
        std::fs::create_dir_all(base.join("a/secret")).unwrap();
        std::fs::create_dir_all(base.join("a/fresh")).unwrap();
        let replaced = ReadGrants::get_in(&slot, key);
        assert!(!std::sync::Arc::ptr_eq(&before, &replaced));
        assert!(replaced.paths.contains(&base.join("a/fresh")));
        assert!(!replaced.paths.contains(&base.join("a/other")));
    }
}
