//! The path jail: every user-supplied path is resolved against the canonical project root
//! and refused unless it ends up inside it.
//!
//! Rules (each refusal is an [`Error::PathOutsideRoot`] naming the path and the rule):
//! - relative paths are taken from the root; `..` may be used only while it stays inside;
//! - absolute paths are accepted only when they lie inside the root (lexically, or once
//!   symlinks in them are resolved);
//! - a symlink anywhere in the chain whose target lies outside the root is refused;
//! - containment compares path **components**, never string prefixes, so `/proj-evil` is
//!   not inside `/proj`.
//!
//! Writes resolve with [`Jail::resolve_for_write`]: the deepest existing ancestor is
//! canonicalised and checked, missing components are plain names (no `..` left after lexical
//! normalisation). Writers then create a temp file with `O_EXCL` in the checked directory and
//! `rename` it over the target; `rename` replaces a symlink rather than writing through it,
//! so a symlink planted between the check and the write cannot redirect the bytes outside.
//!
//! Invariant: a `PathBuf` returned by this module is absolute and, at the time of the check,
//! inside the canonical root after following every symlink.

use std::path::{Component, Path, PathBuf};

use crate::Error;
use crate::Result;

/// A canonical project root that user paths are resolved against.
#[derive(Debug, Clone)]
pub struct Jail {
    root: PathBuf,
}

impl Jail {
    /// Canonicalise `root` (follows symlinks) and keep it as the jail.
    ///
    /// Errors: [`Error::NotFound`] when `root` does not exist, [`Error::InvalidArgument`]
    /// when it is not a directory, [`Error::Io`] for other failures.
    pub fn new(root: &Path) -> Result<Jail> {
        let canon = match root.canonicalize() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::NotFound(root.to_path_buf()));
            }
            Err(e) => {
                return Err(Error::io(
                    format!("resolving project root {}", root.display()),
                    e,
                ));
            }
        };
        if !canon.is_dir() {
            return Err(Error::InvalidArgument(format!(
                "project root {} is not a directory",
                root.display()
            )));
        }
        Ok(Jail { root: canon })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolve an **existing** path. `""` and `"."` mean the root. Returns the canonical path
    /// (symlinks followed).
    ///
    /// Errors: [`Error::PathOutsideRoot`] (escape by `..`, absolute path outside, symlink out),
    /// [`Error::NotFound`] when nothing exists there, [`Error::InvalidArgument`] for a NUL byte.
    pub fn resolve(&self, user_path: &str) -> Result<PathBuf> {
        let lexical = self.lexical(user_path)?;
        match lexical.canonicalize() {
            Ok(canon) => {
                self.check_target(user_path, &canon)?;
                Ok(canon)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // Could be a dangling symlink or a missing file; either way make sure the
                // existing part of the chain does not point outside before saying "not found".
                self.resolve_missing(user_path, &lexical)?;
                Err(Error::NotFound(lexical))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
                Err(Error::InvalidArgument(format!(
                    "path \"{user_path}\": a component before the last one is a file, not a directory"
                )))
            }
            Err(e) => Err(Error::io(format!("resolving {user_path}"), e)),
        }
    }

    /// Resolve a path that may not exist yet (a file about to be written). The deepest
    /// existing ancestor is canonicalised and must lie inside; the missing components are
    /// appended as they are. When the path itself exists, the canonical target is returned
    /// (so a symlink inside the root that points inside is written through to its target).
    ///
    /// Errors: as [`Jail::resolve`]; also [`Error::PathOutsideRoot`] for a dangling symlink
    /// (its target cannot be checked) and [`Error::InvalidArgument`] when the path is the root.
    pub fn resolve_for_write(&self, user_path: &str) -> Result<PathBuf> {
        let lexical = self.lexical(user_path)?;
        if lexical == self.root {
            return Err(Error::InvalidArgument(format!(
                "path \"{user_path}\" names the project root itself; give a file path"
            )));
        }
        match lexical.canonicalize() {
            Ok(canon) => {
                self.check_target(user_path, &canon)?;
                if canon == self.root {
                    return Err(Error::InvalidArgument(format!(
                        "path \"{user_path}\" resolves to the project root itself; give a file path"
                    )));
                }
                Ok(canon)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.resolve_missing(user_path, &lexical)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
                Err(Error::InvalidArgument(format!(
                    "path \"{user_path}\": a component before the last one is a file, not a directory"
                )))
            }
            Err(e) => Err(Error::io(format!("resolving {user_path}"), e)),
        }
    }

    /// `path` relative to the root, with `/` separators, for display. Paths outside the root
    /// (which this module never returns) are shown whole.
    pub fn display(&self, path: &Path) -> String {
        display_rel(&self.root, path)
    }

    /// Lexical join + normalisation: refuses NUL bytes, `..` above the root, and absolute
    /// paths that are outside both lexically and after resolving symlinks.
    fn lexical(&self, user_path: &str) -> Result<PathBuf> {
        if user_path.contains('\0') {
            return Err(Error::InvalidArgument(format!(
                "path {user_path:?} contains a NUL byte"
            )));
        }
        let p = Path::new(user_path);
        if p.is_absolute() {
            let norm = normalize(p).ok_or_else(|| {
                self.refuse(user_path, "`..` may not climb above the filesystem root")
            })?;
            if norm.starts_with(&self.root) {
                return Ok(norm);
            }
            // The caller may have used a non-canonical spelling of the root (e.g. through a
            // symlinked /tmp). Accept it only if the existing prefix resolves inside.
            if let Some(resolved) = canonicalize_existing_prefix(&norm)
                && resolved.starts_with(&self.root)
            {
                return Ok(resolved);
            }
            return Err(self.refuse(user_path, "absolute paths must lie inside the project root"));
        }
        let mut out = self.root.clone();
        let depth_floor = out.components().count();
        for c in p.components() {
            match c {
                Component::CurDir => {}
                Component::ParentDir => {
                    if out.components().count() <= depth_floor {
                        return Err(
                            self.refuse(user_path, "`..` may not climb above the project root")
                        );
                    }
                    out.pop();
                }
                Component::Normal(n) => out.push(n),
                Component::RootDir | Component::Prefix(_) => {
                    return Err(
                        self.refuse(user_path, "absolute paths must lie inside the project root")
                    );
                }
            }
        }
        Ok(out)
    }

    /// For a lexical path whose full canonicalisation failed with NotFound: canonicalise the
    /// deepest existing ancestor, check it, and rebuild the path under it.
    fn resolve_missing(&self, user_path: &str, lexical: &Path) -> Result<PathBuf> {
        // A dangling symlink at the last component: its target cannot be checked.
        if let Ok(meta) = std::fs::symlink_metadata(lexical)
            && meta.file_type().is_symlink()
        {
            let target = std::fs::read_link(lexical)
                .map(|t| t.display().to_string())
                .unwrap_or_default();
            return Err(self.refuse(
                user_path,
                &format!("it is a symlink to {target:?}, which does not exist, so its target cannot be checked against the project root"),
            ));
        }
        let mut existing = lexical.to_path_buf();
        let mut tail: Vec<std::ffi::OsString> = Vec::new();
        loop {
            match std::fs::symlink_metadata(&existing) {
                Ok(meta) => {
                    if meta.file_type().is_symlink() && existing.canonicalize().is_err() {
                        let target = std::fs::read_link(&existing)
                            .map(|t| t.display().to_string())
                            .unwrap_or_default();
                        return Err(self.refuse(
                            user_path,
                            &format!(
                                "{} is a symlink to {target:?}, which does not exist",
                                display_rel(&self.root, &existing)
                            ),
                        ));
                    }
                    break;
                }
                Err(_) => {
                    let Some(name) = existing.file_name() else {
                        break;
                    };
                    tail.push(name.to_owned());
                    if !existing.pop() {
                        break;
                    }
                }
            }
        }
        let base = existing
            .canonicalize()
            .map_err(|e| Error::io(format!("resolving {}", existing.display()), e))?;
        if !base.starts_with(&self.root) {
            return Err(self.refuse(
                user_path,
                &format!(
                    "a symlink in it points outside the project root (resolves to {})",
                    base.display()
                ),
            ));
        }
        if !base.is_dir() && !tail.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "path \"{user_path}\": {} is not a directory",
                display_rel(&self.root, &base)
            )));
        }
        let mut out = base;
        for n in tail.into_iter().rev() {
            out.push(n);
        }
        Ok(out)
    }

    fn check_target(&self, user_path: &str, canon: &Path) -> Result<()> {
        if canon.starts_with(&self.root) {
            Ok(())
        } else {
            Err(self.refuse(
                user_path,
                &format!(
                    "a symlink in it points outside the project root (resolves to {})",
                    canon.display()
                ),
            ))
        }
    }

    fn refuse(&self, user_path: &str, rule: &str) -> Error {
        Error::PathOutsideRoot(format!(
            "path \"{user_path}\" is outside the project root {}: {rule}",
            self.root.display()
        ))
    }
}

/// Lexically normalise an absolute path (`.` dropped, `..` pops). `None` if `..` climbs
/// above `/`.
fn normalize(p: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                if !out.pop() || out.as_os_str().is_empty() {
                    return None;
                }
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    Some(out)
}

/// Canonicalise the deepest existing ancestor of `p` and re-append the rest.
fn canonicalize_existing_prefix(p: &Path) -> Option<PathBuf> {
    let mut existing = p.to_path_buf();
    let mut tail = Vec::new();
    loop {
        if let Ok(c) = existing.canonicalize() {
            let mut out = c;
            for n in tail.into_iter().rev() {
                out.push(n);
            }
            return Some(out);
        }
        tail.push(existing.file_name()?.to_owned());
        if !existing.pop() {
            return None;
        }
    }
}

/// `path` relative to `root` with `/` separators; `.` for the root itself.
pub fn display_rel(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".into(),
        Ok(rel) => {
            let s = rel.to_string_lossy();
            if std::path::MAIN_SEPARATOR == '/' {
                s.into_owned()
            } else {
                s.replace(std::path::MAIN_SEPARATOR, "/")
            }
        }
        Err(_) => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, Jail) {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("proj");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.rs"), "x").unwrap();
        let j = Jail::new(&root).unwrap();
        (d, j)
    }

    #[test]
    fn relative_and_dot_paths_resolve() {
        let (_d, j) = setup();
        assert_eq!(j.resolve("").unwrap(), j.root());
        assert_eq!(j.resolve(".").unwrap(), j.root());
        assert_eq!(j.resolve("src/a.rs").unwrap(), j.root().join("src/a.rs"));
        assert_eq!(
            j.resolve("src/../src/./a.rs").unwrap(),
            j.root().join("src/a.rs")
        );
    }

    #[test]
    fn dotdot_escape_is_refused() {
        let (_d, j) = setup();
        for p in ["..", "../proj-evil", "src/../../x", "./../proj/src"] {
            let e = j.resolve(p).unwrap_err();
            assert_eq!(e.code(), "path_outside_root", "{p}: {e}");
            assert!(
                e.to_string().contains(p) && e.to_string().contains("`..`"),
                "{e}"
            );
        }
    }

    #[test]
    fn absolute_inside_ok_outside_refused() {
        let (d, j) = setup();
        let inside = j.root().join("src/a.rs");
        assert_eq!(j.resolve(inside.to_str().unwrap()).unwrap(), inside);
        let e = j.resolve("/etc/passwd").unwrap_err();
        assert_eq!(e.code(), "path_outside_root");
        assert!(e.to_string().contains("absolute"), "{e}");
        // Sibling prefix: /tmp/x/proj-evil must not count as inside /tmp/x/proj.
        let evil = d.path().join("proj-evil");
        std::fs::create_dir_all(&evil).unwrap();
        std::fs::write(evil.join("f"), "x").unwrap();
        let evil_abs = evil.canonicalize().unwrap().join("f");
        let e = j.resolve(evil_abs.to_str().unwrap()).unwrap_err();
        assert_eq!(e.code(), "path_outside_root", "{e}");
        let e = j.resolve_for_write(evil_abs.to_str().unwrap()).unwrap_err();
        assert_eq!(e.code(), "path_outside_root", "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_out_are_refused_in_the_chain() {
        let (d, j) = setup();
        let outside = d.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(&outside, j.root().join("link")).unwrap();
        std::os::unix::fs::symlink(outside.join("secret"), j.root().join("src/file-link")).unwrap();
        for p in ["link", "link/secret", "src/file-link"] {
            let e = j.resolve(p).unwrap_err();
            assert_eq!(e.code(), "path_outside_root", "{p}: {e}");
            assert!(e.to_string().contains("symlink"), "{e}");
        }
        // Writing a new file under a symlinked dir that points outside.
        let e = j.resolve_for_write("link/new.txt").unwrap_err();
        assert_eq!(e.code(), "path_outside_root", "{e}");
        let e = j.resolve_for_write("link/deeper/new.txt").unwrap_err();
        assert_eq!(e.code(), "path_outside_root", "{e}");
        let e = j.resolve_for_write("src/file-link").unwrap_err();
        assert_eq!(e.code(), "path_outside_root", "{e}");
        // A symlink inside pointing inside is fine.
        std::os::unix::fs::symlink(j.root().join("src"), j.root().join("src-link")).unwrap();
        assert_eq!(
            j.resolve("src-link/a.rs").unwrap(),
            j.root().join("src/a.rs")
        );
    }

    #[cfg(unix)]
    #[test]
    fn dangling_symlink_is_refused_for_write() {
        let (d, j) = setup();
        std::os::unix::fs::symlink(d.path().join("nowhere"), j.root().join("dangling")).unwrap();
        let e = j.resolve_for_write("dangling").unwrap_err();
        assert_eq!(e.code(), "path_outside_root", "{e}");
        let e = j.resolve("dangling").unwrap_err();
        assert_eq!(e.code(), "path_outside_root", "{e}");
    }

    #[test]
    fn write_resolution_of_new_paths() {
        let (_d, j) = setup();
        assert_eq!(
            j.resolve_for_write("new/dir/f.txt").unwrap(),
            j.root().join("new/dir/f.txt")
        );
        assert_eq!(
            j.resolve_for_write("src/a.rs").unwrap(),
            j.root().join("src/a.rs")
        );
        assert_eq!(
            j.resolve_for_write(".").unwrap_err().code(),
            "invalid_argument"
        );
        assert_eq!(
            j.resolve_for_write("src/a.rs/x").unwrap_err().code(),
            "invalid_argument"
        );
        assert_eq!(j.resolve("missing.txt").unwrap_err().code(), "not_found");
        assert_eq!(j.resolve("a\0b").unwrap_err().code(), "invalid_argument");
    }

    #[test]
    fn display_is_relative() {
        let (_d, j) = setup();
        assert_eq!(j.display(&j.root().join("src/a.rs")), "src/a.rs");
        assert_eq!(j.display(j.root()), ".");
    }
}
