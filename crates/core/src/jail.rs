//! The path jail: every user-supplied path is resolved against the canonical project root
//! and refused unless it ends up inside it and outside every protected directory.
//!
//! Rules (each refusal names the path and the rule):
//! - relative paths are taken from the root; `..` may be used only while it stays inside;
//! - absolute paths are accepted only when they lie inside the root (lexically, or once
//!   symlinks in them are resolved);
//! - a symlink anywhere in the chain whose target lies outside the root is refused;
//! - containment compares path **components**, never string prefixes, so `/proj-evil` is
//!   not inside `/proj`;
//! - a path in a [`Protected`] directory is refused with [`Error::PathProtected`], whether it
//!   is reached by its own name, through `..`, as an absolute path or through a symlink
//!   (the lexical form and the resolved form are both checked). A root that *contains* a
//!   protected directory is fine; the directory inside it stays refused and the walking
//!   tools leave it out ([`Jail::protected_inside`]). A root that lies *in* one is refused
//!   by [`Jail::new`].
//!
//! Writes resolve with [`Jail::resolve_for_write`], which also refuses any path in a `.git`
//! directory (by name or once resolved; [`is_git_dir_name`]): the deepest existing ancestor is
//! canonicalised and checked, missing components are plain names (no `..` left after lexical
//! normalisation). Writers then create a temp file with `O_EXCL` in the checked directory and
//! `rename` it over the target; `rename` replaces a symlink rather than writing through it,
//! so a symlink planted between the check and the write cannot redirect the bytes outside.
//!
//! Invariant: a `PathBuf` returned by this module is absolute and, at the time of the check,
//! inside the canonical root after following every symlink, and in no protected directory.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use crate::Error;
use crate::Result;

/// One directory no tool may read, list, search or change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectedPath {
    what: String,
    lexical: PathBuf,
    resolved: PathBuf,
    /// For a directory missing at start: its shallowest missing ancestor (or itself). While
    /// that still does not exist, nothing can have appeared behind it, so the start-time
    /// resolution stands and a check costs one `lstat`.
    missing_from: Option<PathBuf>,
}

impl ProtectedPath {
    /// What the directory is, for messages, e.g. `the Codex Free state home (CODEX_FREE_HOME)`.
    pub fn what(&self) -> &str {
        &self.what
    }

    /// The directory with symlinks resolved (for a directory missing at start: its deepest
    /// existing ancestor resolved, then the missing names).
    pub fn path(&self) -> &Path {
        &self.resolved
    }

    /// The directory as given (made absolute, `.` and `..` removed).
    pub fn lexical(&self) -> &Path {
        &self.lexical
    }

    /// Every spelling a path is compared with: as given, as resolved at start, and — for a
    /// directory missing at start — as resolved now, so one created later behind a symlink
    /// is still caught.
    fn forms(&self) -> Vec<PathBuf> {
        let mut out = vec![self.lexical.clone()];
        if self.resolved != self.lexical {
            out.push(self.resolved.clone());
        }
        if let Some(probe) = &self.missing_from
            && std::fs::symlink_metadata(probe).is_ok()
            && let Some(now) = canonicalize_existing_prefix(&self.lexical)
            && !out.contains(&now)
        {
            out.push(now);
        }
        out
    }

    /// True when `p` is or lies in this directory under any of [`Self::forms`]. Checked on
    /// every path of every tool call, so it compares in place and allocates only when a
    /// directory missing at start has since appeared.
    fn covers(&self, p: &Path) -> bool {
        if p.starts_with(&self.lexical) || p.starts_with(&self.resolved) {
            return true;
        }
        self.missing_from.as_ref().is_some_and(|probe| {
            std::fs::symlink_metadata(probe).is_ok()
                && canonicalize_existing_prefix(&self.lexical).is_some_and(|now| p.starts_with(now))
        })
    }
}

/// The protected directories of one server process: computed once at start
/// ([`Protected::standard`]) and shared by every [`Jail`] it builds.
///
/// Why each is protected: the state home holds the config (whose `exec` section decides
/// what commands may run), the HTTP token, every conversation's binding and transcript; the
/// config file's directory is the same config by another path; the other agents' homes hold
/// their credentials and transcripts. A tool that could write any of them could turn off
/// its own guardrails; one that could read them could leak a token.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Protected {
    paths: Vec<ProtectedPath>,
}

impl Protected {
    /// No protected directories (tests and callers that serve no state home).
    pub fn none() -> Self {
        Self::default()
    }

    /// The standard set: the state home, the directory of `config_file`, `~/.claude.json`,
    /// and the other agents' homes from [`crate::home::AgentHomes::from_env`]. Relative paths are taken from
    /// the current directory.
    pub fn standard(state_home: &Path, config_file: &Path) -> Self {
        let mut p = Self::none();
        p.add(
            state_home,
            "the Codex Free state home (CODEX_FREE_HOME, default ~/.codex-free)",
        );
        let what = "the directory of the config file in use";
        let config_file = std::path::absolute(config_file).unwrap_or(config_file.to_path_buf());
        if let Some(dir) = config_file.parent() {
            p.add(dir, what);
        }
        if let Ok(real) = config_file.canonicalize()
            && let Some(dir) = real.parent()
        {
            p.add(dir, what);
        }
        for (dir, what) in crate::home::AgentHomes::protected() {
            p.add(&dir, what);
        }
        p
    }

    /// Add `dir` (made absolute and lexically normalised; symlinks resolved as far as it
    /// exists) described by `what`. A directory already present under both spellings is
    /// not added twice.
    pub fn add(&mut self, dir: &Path, what: &str) {
        let abs = std::path::absolute(dir).unwrap_or(dir.to_path_buf());
        let lexical = normalize(&abs).unwrap_or(abs);
        let (resolved, missing_from) = match lexical.canonicalize() {
            Ok(c) => (c, None),
            Err(_) => {
                let probe = lexical
                    .ancestors()
                    .take_while(|a| std::fs::symlink_metadata(a).is_err())
                    .last()
                    .map(Path::to_path_buf);
                (
                    canonicalize_existing_prefix(&lexical).unwrap_or(lexical.clone()),
                    probe.or_else(|| Some(lexical.clone())),
                )
            }
        };
        if self
            .paths
            .iter()
            .any(|p| p.lexical == lexical && p.resolved == resolved)
        {
            return;
        }
        self.paths.push(ProtectedPath {
            what: what.to_string(),
            lexical,
            resolved,
            missing_from,
        });
    }

    /// The protected directories, in the order added.
    pub fn paths(&self) -> &[ProtectedPath] {
        &self.paths
    }

    /// The first protected directory that `p` (absolute) is or lies in.
    pub fn covering(&self, p: &Path) -> Option<&ProtectedPath> {
        self.paths.iter().find(|d| d.covers(p))
    }

    /// As [`Self::covering`], ignoring the directories that contain `granted` — for a policy
    /// that may read one named folder inside a protected directory (a skills folder) but
    /// nothing else protected. It does not check that `p` lies in `granted`: the caller's
    /// containment check does that (alone, this would let the rest of the granting
    /// directory through).
    pub fn covering_except(&self, p: &Path, granted: &Path) -> Option<&ProtectedPath> {
        self.paths
            .iter()
            .find(|d| d.covers(p) && !d.covers(granted))
    }
}

/// A canonical project root that user paths are resolved against, and the protected
/// directories no path may reach. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Jail {
    root: PathBuf,
    protected: Arc<Protected>,
}

impl Jail {
    /// Canonicalise `root` (follows symlinks) and keep it as the jail, with `protected`.
    ///
    /// Errors: [`Error::NotFound`] when `root` does not exist, [`Error::InvalidArgument`]
    /// when it is not a directory, [`Error::PathProtected`] when it is or lies in a protected
    /// directory, [`Error::Io`] for other failures.
    pub fn new(root: &Path, protected: Arc<Protected>) -> Result<Jail> {
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
        let abs = std::path::absolute(root).unwrap_or(root.to_path_buf());
        let lexical = normalize(&abs).unwrap_or(abs);
        if let Some(p) = protected
            .covering(&canon)
            .or_else(|| protected.covering(&lexical))
        {
            return Err(Error::PathProtected(format!(
                "{} cannot be a project root: it is protected, as it lies in {} {}, which no tool may read, list, search or change; choose a folder outside it",
                root.display(),
                p.what,
                p.resolved.display()
            )));
        }
        Ok(Jail {
            root: canon,
            protected,
        })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The protected directories this jail refuses.
    pub fn protected(&self) -> &Arc<Protected> {
        &self.protected
    }

    /// Whether the absolute path `p` is or lies in a protected directory.
    pub fn is_protected(&self, p: &Path) -> bool {
        self.protected.covering(p).is_some()
    }

    /// Protected directories strictly inside `dir` (every spelling), for walks to prune:
    /// a root may contain the state home, whose entries are then left out of listings.
    pub fn protected_inside(&self, dir: &Path) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = Vec::new();
        for p in &self.protected.paths {
            for f in p.forms() {
                if f.starts_with(dir) && f != dir && !out.contains(&f) {
                    out.push(f);
                }
            }
        }
        out
    }

    /// Check an absolute path found by other means (a walk, a skill folder): it must lie
    /// inside the root once symlinks are resolved and in no protected directory. Returns
    /// the canonical path. `shown` names it in the error.
    ///
    /// Errors: as [`Jail::resolve`].
    pub fn check_path(&self, shown: &str, p: &Path) -> Result<PathBuf> {
        self.check_protected(shown, p)?;
        let canon = p.canonicalize().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Error::NotFound(p.to_path_buf()),
            _ => Error::io(format!("resolving {}", p.display()), e),
        })?;
        self.check_target(shown, &canon)?;
        Ok(canon)
    }

    /// Resolve an **existing** path. `""` and `"."` mean the root. Returns the canonical path
    /// (symlinks followed).
    ///
    /// Errors: [`Error::PathOutsideRoot`] (escape by `..`, absolute path outside, symlink out),
    /// [`Error::PathProtected`] (in a protected directory by name or through a symlink),
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
        self.check_not_git(user_path, &lexical)?;
        let out = self.resolve_for_write_inner(user_path, &lexical)?;
        self.check_not_git(user_path, &out)?;
        Ok(out)
    }

    /// Refuse a write into a repository's git directory: a component of `p` below the root
    /// named `.git` (compared ASCII case-insensitively, trailing dots and spaces ignored, as
    /// case-folding and Windows file systems treat them). Reason: hooks, `core.fsmonitor`,
    /// `core.hooksPath`, `include.path` and filter drivers written there run at the user's
    /// next plain `git` command, outside any sandbox.
    fn check_not_git(&self, user_path: &str, p: &Path) -> Result<()> {
        let Ok(rel) = p.strip_prefix(&self.root) else {
            return Ok(());
        };
        if rel.components().any(|c| match c {
            Component::Normal(n) => is_git_dir_name(&n.to_string_lossy()),
            _ => false,
        }) {
            return Err(Error::PathProtected(format!(
                "path \"{user_path}\" is in a .git directory, which the file tools do not change: hooks and settings there would run later, outside the sandbox (the git tools make commits; edit git settings yourself)"
            )));
        }
        Ok(())
    }

    fn resolve_for_write_inner(&self, user_path: &str, lexical: &Path) -> Result<PathBuf> {
        let lexical = lexical.to_path_buf();
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

    /// The root-relative, lexical form of a path that may or may not exist (empty for the
    /// root), for tools that name paths to another program (git pathspecs): every check of
    /// [`Jail::resolve`] applies, but a symlink inside the root keeps its own name instead of
    /// being replaced by its target.
    ///
    /// Errors: as [`Jail::resolve`], except that a missing path is fine.
    pub fn relative(&self, user_path: &str) -> Result<PathBuf> {
        let lexical = self.lexical(user_path)?;
        match self.resolve(user_path) {
            Ok(_) | Err(Error::NotFound(_)) => {}
            Err(e) => return Err(e),
        }
        Ok(lexical
            .strip_prefix(&self.root)
            .map(Path::to_path_buf)
            .unwrap_or_default())
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
            self.check_protected(user_path, &norm)?;
            if norm.starts_with(&self.root) {
                return Ok(norm);
            }
            // The caller may have used a non-canonical spelling of the root (e.g. through a
            // symlinked /tmp). Accept it only if the existing prefix resolves inside.
            if let Some(resolved) = canonicalize_existing_prefix(&norm) {
                self.check_protected(user_path, &resolved)?;
                if resolved.starts_with(&self.root) {
                    return Ok(resolved);
                }
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
        self.check_protected(user_path, &out)?;
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
        self.check_protected(user_path, &base)?;
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
        self.check_protected(user_path, &out)?;
        Ok(out)
    }

    fn check_protected(&self, user_path: &str, p: &Path) -> Result<()> {
        match self.protected.covering(p) {
            None => Ok(()),
            Some(d) => Err(Error::PathProtected(format!(
                "path \"{user_path}\" is protected: it lies in {} {}, which no tool may read, list, search or change",
                d.what,
                d.resolved.display()
            ))),
        }
    }

    fn check_target(&self, user_path: &str, canon: &Path) -> Result<()> {
        self.check_protected(user_path, canon)?;
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

/// Whether a path component names a git directory: `.git`, ASCII case-insensitively, with
/// trailing dots and spaces ignored (`.GIT`, `.git.`, `.git ` are the same directory on
/// case-insensitive or Windows file systems).
pub fn is_git_dir_name(name: &str) -> bool {
    name.trim_end_matches(['.', ' '])
        .eq_ignore_ascii_case(".git")
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

    #[test]
    fn writes_into_a_git_directory_are_refused_however_named() {
        let (dir, jail) = setup();
        std::fs::create_dir_all(dir.path().join("proj/.git/hooks")).unwrap();
        std::fs::create_dir_all(dir.path().join("proj/sub/.git")).unwrap();
        std::os::unix::fs::symlink(
            dir.path().join("proj/.git/hooks"),
            dir.path().join("proj/h"),
        )
        .unwrap();
        for p in [
            ".git/config",
            ".git/hooks/pre-commit",
            ".GIT/config",
            ".git./config",
            "src/../.git/info/attributes",
            "sub/.git/config",
            "h/post-checkout",
        ] {
            assert!(
                matches!(jail.resolve_for_write(p), Err(Error::PathProtected(_))),
                "{p}: {:?}",
                jail.resolve_for_write(p)
            );
        }
        // Reading stays possible, and names that only look alike are ordinary files.
        std::fs::write(dir.path().join("proj/.git/config"), "[core]\n").unwrap();
        assert!(jail.resolve(".git/config").is_ok());
        for p in [
            ".gitignore",
            ".github/workflows/ci.yml",
            "git/config",
            ".gitx/a",
        ] {
            assert!(jail.resolve_for_write(p).is_ok(), "{p}");
        }
    }

    /// Claude Code's MCP server list sits beside its home; writing it would make Claude
    /// start a command of the attacker's choosing, so it is protected like the homes.
    #[test]
    fn claude_settings_file_is_protected() {
        let d = tempfile::tempdir().unwrap();
        let p = Protected::standard(&d.path().join("state"), &d.path().join("state/c.json"));
        if let Some(h) = std::env::home_dir() {
            assert!(p.covering(&h.join(".claude.json")).is_some());
            assert!(p.covering(&h.join(".claude.json.bak")).is_none());
        }
    }

    fn setup() -> (tempfile::TempDir, Jail) {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("proj");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.rs"), "x").unwrap();
        let j = Jail::new(&root, Arc::new(Protected::none())).unwrap();
        (d, j)
    }

    /// A temp "user home" `h` that is also the project root, holding the state home
    /// `h/.codex-free` (with a token and a config) and Claude's home `h/.claude`, plus a
    /// state home elsewhere under the same temp dir.
    struct Home {
        _d: tempfile::TempDir,
        base: PathBuf,
        home: PathBuf,
        jail: Jail,
    }

    fn home_setup() -> Home {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().canonicalize().unwrap();
        let home = base.join("h");
        std::fs::create_dir_all(home.join(".codex-free/conversation-projects")).unwrap();
        std::fs::write(home.join(".codex-free/server-token"), "tok").unwrap();
        std::fs::write(home.join(".codex-free/codex.config.json"), "{}").unwrap();
        std::fs::create_dir_all(home.join("src")).unwrap();
        std::fs::write(home.join("src/a.rs"), "x").unwrap();
        let mut p = Protected::none();
        p.add(&home.join(".codex-free"), "the state home");
        p.add(&home.join(".codex-free"), "the config directory");
        // Missing at start: still protected by its name.
        p.add(&home.join(".claude"), "Claude Code's home");
        let jail = Jail::new(&home, Arc::new(p)).unwrap();
        Home {
            _d: d,
            base,
            home,
            jail,
        }
    }

    fn assert_protected(r: Result<PathBuf>, what: &str) {
        let e = r.unwrap_err();
        assert_eq!(e.code(), "path_protected", "{what}: {e}");
        assert!(
            e.to_string().contains(what) && e.to_string().contains("protected"),
            "{e}"
        );
    }

    #[test]
    fn protected_paths_are_refused_however_reached() {
        let h = home_setup();
        let j = &h.jail;
        let abs = h.home.join(".codex-free/server-token");
        for p in [
            ".codex-free",
            ".codex-free/server-token",
            "./.codex-free/server-token",
            "src/../.codex-free/server-token",
            ".codex-free/../.codex-free/codex.config.json",
            abs.to_str().unwrap(),
            ".claude",
            ".claude/settings.json",
        ] {
            assert_protected(j.resolve(p), p);
            assert_protected(j.resolve_for_write(p), p);
        }
        // New files in it, at any depth.
        assert_protected(j.resolve_for_write(".codex-free/new/deep.json"), "new");
        // Symlinks into it: to the directory, to a file, and a chain of two.
        std::os::unix::fs::symlink(h.home.join(".codex-free"), h.home.join("link")).unwrap();
        std::os::unix::fs::symlink(&abs, h.home.join("src/tok")).unwrap();
        std::os::unix::fs::symlink(h.home.join("src/tok"), h.home.join("tok2")).unwrap();
        for p in ["link", "link/server-token", "src/tok", "tok2"] {
            assert_protected(j.resolve(p), p);
            assert_protected(j.resolve_for_write(p), p);
        }
        assert_protected(j.resolve_for_write("link/new.json"), "link/new");
        assert_protected(j.resolve_for_write("link/x/y.json"), "link/x/y");
        // A symlink to a protected directory that does not exist yet is refused too.
        std::os::unix::fs::symlink(h.home.join(".claude"), h.home.join("cl")).unwrap();
        let e = j.resolve_for_write("cl/new").unwrap_err();
        assert!(
            ["path_protected", "path_outside_root"].contains(&e.code().as_str()),
            "{e}"
        );
        // The rest of the root is unaffected.
        assert_eq!(j.resolve("src/a.rs").unwrap(), h.home.join("src/a.rs"));
        assert_eq!(j.resolve(".").unwrap(), h.home);
        assert_eq!(
            j.resolve_for_write(".codex-freeX/a").unwrap(),
            h.home.join(".codex-freeX/a"),
            "component-wise, not a string prefix"
        );
        // The message names the path and the rule.
        let e = j
            .resolve(".codex-free/server-token")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(".codex-free/server-token") && e.contains("the state home"),
            "{e}"
        );
    }

    #[test]
    fn protected_directory_created_later_behind_a_symlink_is_caught() {
        let h = home_setup();
        // `.claude` did not exist at start; now it is a symlink to a folder in the root.
        std::fs::create_dir_all(h.home.join("real-claude")).unwrap();
        std::fs::write(h.home.join("real-claude/creds"), "c").unwrap();
        std::os::unix::fs::symlink(h.home.join("real-claude"), h.home.join(".claude")).unwrap();
        assert_protected(h.jail.resolve("real-claude/creds"), "real-claude");
        assert_protected(h.jail.resolve(".claude/creds"), ".claude");
        // A protected directory two levels down whose parent appears later as a link.
        let mut p = Protected::none();
        p.add(&h.home.join(".pi/agent"), "the pi agent's home");
        let j = Jail::new(&h.home, Arc::new(p)).unwrap();
        std::fs::create_dir_all(h.home.join("real-pi/agent")).unwrap();
        std::fs::write(h.home.join("real-pi/agent/auth.json"), "a").unwrap();
        assert!(
            j.resolve("real-pi/agent/auth.json").is_ok(),
            "not protected yet"
        );
        std::os::unix::fs::symlink(h.home.join("real-pi"), h.home.join(".pi")).unwrap();
        assert_protected(j.resolve("real-pi/agent/auth.json"), "real-pi");
        assert_protected(j.resolve_for_write("real-pi/agent/new"), "real-pi");
    }

    #[test]
    fn roots_in_protected_directories_are_refused_and_containing_ones_prune() {
        let h = home_setup();
        let p = h.jail.protected().clone();
        for bad in [
            h.home.join(".codex-free"),
            h.home.join(".codex-free/conversation-projects"),
            h.home.join("src/../.codex-free"),
        ] {
            let e = Jail::new(&bad, p.clone()).unwrap_err();
            assert_eq!(e.code(), "path_protected", "{e}");
            assert!(e.to_string().contains("cannot be a project root"), "{e}");
        }
        // A symlink to the state home as the root.
        std::os::unix::fs::symlink(h.home.join(".codex-free"), h.base.join("sneaky")).unwrap();
        assert_eq!(
            Jail::new(&h.base.join("sneaky"), p.clone())
                .unwrap_err()
                .code(),
            "path_protected"
        );
        // The containing root lists what to prune; a sibling root has nothing to prune.
        let inside = h.jail.protected_inside(h.jail.root());
        assert!(inside.contains(&h.home.join(".codex-free")), "{inside:?}");
        assert!(inside.contains(&h.home.join(".claude")), "{inside:?}");
        let src = Jail::new(&h.home.join("src"), p.clone()).unwrap();
        assert!(src.protected_inside(src.root()).is_empty());
        assert!(h.jail.is_protected(&h.home.join(".codex-free/x")));
        assert!(!h.jail.is_protected(&h.home.join("src")));
    }

    #[test]
    fn check_path_and_covering_except() {
        let h = home_setup();
        let tok = h.home.join(".codex-free/server-token");
        assert_eq!(
            h.jail.check_path("tok", &tok).unwrap_err().code(),
            "path_protected"
        );
        assert_eq!(
            h.jail.check_path("a", &h.home.join("src/a.rs")).unwrap(),
            h.home.join("src/a.rs")
        );
        let p = h.jail.protected();
        let skills = h.home.join(".codex-free/skills");
        // Inside the granted folder: allowed; elsewhere in the same protected home: refused.
        assert!(
            p.covering_except(&skills.join("x/SKILL.md"), &skills)
                .is_none()
        );
        assert!(
            p.covering_except(&tok, &skills).is_none(),
            "containment in the skills folder is the caller's check"
        );
        assert!(
            p.covering_except(&h.home.join(".claude/x"), &skills)
                .is_some(),
            "another protected home"
        );
    }

    #[test]
    fn standard_set_covers_state_home_config_dir_and_agent_homes() {
        let d = tempfile::tempdir().unwrap();
        let state = d.path().join("state");
        let cfg_dir = d.path().join("cfg");
        std::fs::create_dir_all(&state).unwrap();
        std::fs::create_dir_all(&cfg_dir).unwrap();
        let p = Protected::standard(&state, &cfg_dir.join("codex.config.json"));
        let state = state.canonicalize().unwrap();
        assert!(p.covering(&state.join("server-token")).is_some());
        let hit = p
            .covering(&cfg_dir.canonicalize().unwrap().join("x"))
            .unwrap();
        assert!(hit.what().contains("config file"), "{}", hit.what());
        let agents = crate::home::AgentHomes::from_env();
        for a in [agents.codex, agents.claude, agents.pi]
            .into_iter()
            .flatten()
        {
            assert!(
                p.covering(&a.join("auth.json")).is_some(),
                "{}",
                a.display()
            );
        }
        assert!(
            p.covering(d.path()).is_none(),
            "the parent is not protected"
        );
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
