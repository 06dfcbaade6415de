//! The carve: grants for a root with protected paths cut out, entry by entry (Landlock
//! cannot deny beneath a grant; see the parent module).

use std::path::{Path, PathBuf};

#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
/// Upper bound on the entries granted one by one while carving around protected paths
/// (a protected path inside a huge directory): past it the rest is left out (fail closed).
const MAX_CARVED_ENTRIES: usize = 20_000;

/// One grant of the carve: `path` (a directory when `dir`) gets the rights of its caller.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Grant {
    pub path: PathBuf,
    pub dir: bool,
}

/// The grants for `root` with every path in `protected` carved out (see the module doc).
/// `root` must be resolved; missing roots yield nothing.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) fn carve(root: &Path, protected: &[PathBuf]) -> Vec<Grant> {
    carve_listing(root, protected, &mut Vec::new())
}

/// [`carve`], also pushing onto `listed` every directory it had to list (the ones whose
/// entries were granted one by one) with its [`dir_stamp`] taken *before* the listing, so a
/// cached carve can tell when it went stale (a change during the listing shows too).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) fn carve_listing(root: &Path, protected: &[PathBuf], listed: &mut Listed) -> Vec<Grant> {
    let mut out = Vec::new();
    let mut budget = MAX_CARVED_ENTRIES;
    let Ok(meta) = std::fs::metadata(root) else {
        return out;
    };
    carve_into(
        root,
        meta.is_dir(),
        protected,
        &mut out,
        &mut budget,
        listed,
    );
    out
}

/// Directories a carve listed, each with its [`dir_stamp`] from before the listing.
pub(crate) type Listed = Vec<(PathBuf, Option<(u64, u64, i128)>)>;

/// The identity of a listed directory's entry set: device, inode and modification time
/// (ns). Adding, removing or renaming an entry changes the mtime; replacing the directory
/// changes the inode.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
#[cfg(unix)]
pub(crate) fn dir_stamp(path: &Path) -> Option<(u64, u64, i128)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(path).ok()?;
    Some((
        m.dev(),
        m.ino(),
        m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
    ))
}

/// No device/inode here: `None` (unknown), so a listing is never taken as unchanged.
#[cfg(not(unix))]
pub(crate) fn dir_stamp(_path: &Path) -> Option<(u64, u64, i128)> {
    None
}

fn carve_into(
    path: &Path,
    dir: bool,
    protected: &[PathBuf],
    out: &mut Vec<Grant>,
    budget: &mut usize,
    listed: &mut Listed,
) {
    if protected.iter().any(|p| path.starts_with(p)) {
        return;
    }
    if !dir || !protected.iter().any(|p| p.starts_with(path)) {
        out.push(Grant {
            path: path.to_path_buf(),
            dir,
        });
        return;
    }
    let stamp = dir_stamp(path);
    let Ok(entries) = std::fs::read_dir(path) else {
        return;
    };
    listed.push((path.to_path_buf(), stamp));
    for e in entries.flatten() {
        if *budget == 0 {
            tracing::warn!(
                "sandbox: more than {MAX_CARVED_ENTRIES} entries beside protected paths under {}; the rest is not accessible to commands",
                path.display()
            );
            return;
        }
        *budget -= 1;
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_symlink() {
            continue;
        }
        carve_into(
            &path.join(e.file_name()),
            ft.is_dir(),
            protected,
            out,
            budget,
            listed,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carve_grants_siblings_around_a_protected_path() {
        let t = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(t.path()).unwrap();
        for d in ["a/b/secret", "a/b/other", "a/c", "d"] {
            std::fs::create_dir_all(base.join(d)).unwrap();
        }
        std::fs::write(base.join("a/file"), "x").unwrap();
        std::os::unix::fs::symlink(base.join("a/b/secret"), base.join("a/link")).unwrap();
        let mut got: Vec<_> = carve(&base, &[base.join("a/b/secret")])
            .into_iter()
            .map(|g| {
                (
                    g.path.strip_prefix(&base).unwrap().display().to_string(),
                    g.dir,
                )
            })
            .collect();
        got.sort();
        assert_eq!(
            got,
            [
                ("a/b/other".to_string(), true),
                ("a/c".to_string(), true),
                ("a/file".to_string(), false),
                ("d".to_string(), true),
            ],
            "the root and the dirs on the way are not granted; the link is skipped"
        );
        // A root inside a protected path gets nothing; one beside it is granted whole.
        assert!(carve(&base.join("a/b/secret"), &[base.join("a/b/secret")]).is_empty());
        assert_eq!(carve(&base.join("d"), &[base.join("a/b/secret")]).len(), 1);
        // A protected path that does not exist yet still blocks creating it.
        let got = carve(&base.join("d"), &[base.join("d/not-yet/x")]);
        assert!(got.is_empty(), "{got:?}");
    }
}
