//! Conversation → project bindings for multi-project mode (`serve --access-root DIR`):
//! one small file per conversation, so a reconnecting client gets its project back.
//!
//! A conversation is identified by the `openai/session` value in a tool call's `_meta`;
//! for a client that sends none, the MCP layer passes a key of the connection instead
//! (`mcp-connection/<id>`: one MCP session over HTTP, the process over stdio), so such a
//! binding lasts as long as the connection.
//! Only a SHA-256-derived key of it is used, as a file name:
//! `<state home>/conversation-projects/<sha256(canonical access root)>/<key>.json`, holding
//! `{"version":1,"accessRoot":..,"projectRoot":..,"boundAt":..}`. Deleting
//! `conversation-projects/` forgets every binding.
//!
//! Invariant: the raw session value is never written or logged; a binding whose project is
//! missing, moved, or outside the access root fails closed with [`Error::Binding`] and is
//! never replaced except by an explicit [`Bindings::bind`]; bindings do not depend on
//! `memory.enabled`; writes are locked, re-read and atomic like every shared file.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::home;
use codex_free_core::jail::Jail;

/// The `_meta` key whose value identifies a conversation (sent by ChatGPT on tool calls).
pub const SESSION_META_KEY: &str = "openai/session";
/// Folder under the state home holding every binding.
pub const BINDINGS_DIR: &str = "conversation-projects";
/// Candidates shown by [`Bindings::list_projects_text`] per page when the caller gives no
/// smaller limit.
pub const DEFAULT_PROJECTS_PAGE: usize = 100;

/// One stored binding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Binding {
    /// Record schema version (1).
    #[serde(default = "one")]
    pub version: u32,
    /// Canonical access root the server was started with.
    pub access_root: PathBuf,
    /// Canonical project root the conversation selected.
    pub project_root: PathBuf,
    /// When it was bound (RFC 3339, UTC).
    pub bound_at: String,
}

fn one() -> u32 {
    1
}

/// What [`Bindings::bind`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindOutcome {
    /// The binding now stored.
    pub binding: Binding,
    /// The project the conversation was bound to before, when it differed.
    pub previous: Option<PathBuf>,
}

/// The SHA-256-derived file stem for a raw `openai/session` value: lower-case hex of
/// SHA-256 over a fixed domain prefix and the value, so the stem cannot be matched against
/// a plain hash of the value used elsewhere.
pub fn conversation_key(raw_session: &str) -> String {
    let mut buf = b"codex-free/conversation/v1\0".to_vec();
    buf.extend_from_slice(raw_session.as_bytes());
    home::sha256_hex(&buf)
}

/// Extract the conversation id from a tool call's `_meta` object.
///
/// Errors: [`Error::Binding`] saying exactly what the client must send when the key is
/// missing, not a string, or empty.
pub fn session_from_meta(meta: &serde_json::Map<String, serde_json::Value>) -> Result<String> {
    match meta.get(SESSION_META_KEY) {
        Some(serde_json::Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
        Some(_) => Err(Error::Binding(missing_session_message(
            "it is present but not a non-empty string",
        ))),
        None => Err(Error::Binding(missing_session_message("it is missing"))),
    }
}

/// The error text for a tool call without a usable `openai/session`.
pub fn missing_session_message(why: &str) -> String {
    format!(
        "this server runs in multi-project mode and needs to know which conversation is calling, but the tool call's \
         _meta[\"{SESSION_META_KEY}\"] {why}. The MCP client must send a stable, non-empty string per conversation in \
         params._meta[\"{SESSION_META_KEY}\"] of every tools/call request (ChatGPT does this). Without it, start the server \
         for one project instead (codex-free serve --project DIR)"
    )
}

/// The bindings of one access root.
#[derive(Debug, Clone)]
pub struct Bindings {
    access: Jail,
    dir: PathBuf,
}

impl Bindings {
    /// Bindings under `<home>/conversation-projects/<sha256(canonical access root)>/`, for
    /// the access root's jail `access` (built once at server start, with the protected
    /// directories). Nothing is created until the first bind.
    pub fn new(home: &Path, access: &Jail) -> Self {
        let dir = home.join(BINDINGS_DIR).join(home::sha256_hex(
            access.root().as_os_str().as_encoded_bytes(),
        ));
        Self {
            access: access.clone(),
            dir,
        }
    }

    /// The canonical access root.
    pub fn access_root(&self) -> &Path {
        self.access.root()
    }

    /// The jail of the project at `root` (canonical, inside the access root): same
    /// protected directories as the access root.
    ///
    /// Errors: as [`Jail::new`].
    pub fn project_jail(&self, root: &Path) -> Result<Jail> {
        Jail::new(root, self.access.protected().clone())
    }

    /// Folder holding this access root's binding files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Path of the binding file for a raw session value.
    pub fn path_for(&self, raw_session: &str) -> PathBuf {
        self.dir
            .join(format!("{}.json", conversation_key(raw_session)))
    }

    /// Resolve `path` (absolute, or relative to the access root) through the access root's
    /// jail to a canonical directory strictly inside it: `..`, absolute paths and symlinks
    /// may not lead out, the access root itself is not a project, and a folder that is or
    /// lies in a protected directory (the state home, another agent's home) is refused.
    /// A folder that *contains* one is fine; the jail keeps the protected part out.
    ///
    /// Errors: [`Error::Binding`] when it does not exist, is not a directory, is the access
    /// root, or lies outside it; [`Error::PathProtected`] for a protected folder; the message
    /// says what to do.
    pub fn resolve_project(&self, path: &str) -> Result<PathBuf> {
        let p = path.trim();
        if p.is_empty() {
            return Err(Error::InvalidArgument(
                "path is empty; give a project directory (list_projects shows candidates)".into(),
            ));
        }
        let access_root = self.access.root();
        let canon = match self.access.resolve(p) {
            Ok(c) => c,
            Err(Error::NotFound(missing)) => {
                return Err(Error::Binding(format!(
                    "project {} does not exist; call list_projects for the projects under {}",
                    missing.display(),
                    access_root.display()
                )));
            }
            Err(Error::PathOutsideRoot(why)) => {
                return Err(Error::Binding(format!(
                    "{p} is outside the access root {} ({why}); choose a project inside it (list_projects shows candidates)",
                    access_root.display()
                )));
            }
            Err(e) => return Err(e),
        };
        if canon == access_root {
            return Err(Error::Binding(format!(
                "{p} resolves to the access root {} itself, which is not a project: the access root holds the projects (and usually the state home); choose a folder inside it (list_projects shows candidates)",
                access_root.display()
            )));
        }
        if !canon.is_dir() {
            return Err(Error::Binding(format!(
                "{} is not a directory; give the project's folder",
                canon.display()
            )));
        }
        self.project_jail(&canon)?;
        Ok(canon)
    }

    /// `set_project_root`: bind the conversation `raw_session` to `path`. An
    /// explicit call may move a conversation to another project; the outcome names the
    /// previous one so the change is visible. Works whatever `memory.enabled` says.
    ///
    /// Errors: [`Self::resolve_project`]'s; [`Error::Corrupt`] if the existing record is
    /// unreadable (moved aside); [`Error::Io`].
    #[expect(
        clippy::expect_used,
        reason = "serialising a plain data struct with string keys to JSON cannot fail"
    )]
    pub fn bind(&self, raw_session: &str, path: &str) -> Result<BindOutcome> {
        let project = self.resolve_project(path)?;
        let file = self.path_for(raw_session);
        home::with_lock(&file, || {
            let previous = match read_binding(&file) {
                Ok(Some(b)) if b.project_root != project => Some(b.project_root),
                Ok(_) => None,
                // An unreadable record is replaced by an explicit bind, but kept as a backup.
                Err(_) => {
                    let _ = home::move_aside(&file);
                    None
                }
            };
            let binding = Binding {
                version: 1,
                access_root: self.access.root().to_path_buf(),
                project_root: project.clone(),
                bound_at: super::store::now(),
            };
            let mut text = serde_json::to_string_pretty(&binding).expect("binding serialises");
            text.push('\n');
            home::write_atomic_unlocked(&file, text.as_bytes())?;
            Ok(BindOutcome { binding, previous })
        })
    }

    /// Restore the conversation's binding: `Ok(None)` when it never bound a
    /// project; `Ok(Some(b))` when its project still exists at the same canonical place
    /// inside the access root.
    ///
    /// Errors (fail closed, the record is left in place): [`Error::Binding`] when the bound
    /// project is missing, moved (its path now resolves elsewhere), or outside the access
    /// root, or the record names another access root; [`Error::Corrupt`] when the record
    /// does not parse (moved aside, so the next call reports "no binding").
    pub fn restore(&self, raw_session: &str) -> Result<Option<Binding>> {
        let file = self.path_for(raw_session);
        let b = match read_binding(&file) {
            Ok(None) => return Ok(None),
            Ok(Some(b)) => b,
            Err(why) => {
                return home::with_lock(&file, || match read_binding(&file) {
                    Ok(b) => Ok(b),
                    Err(_) => {
                        let backup = home::move_aside(&file)?;
                        Err(Error::Corrupt {
                            message: format!(
                                "this conversation's project binding could not be read ({why}); call set_project_root to choose the project again"
                            ),
                            backup,
                        })
                    }
                });
            }
        };
        self.check(&b)?;
        Ok(Some(b))
    }

    fn check(&self, b: &Binding) -> Result<()> {
        let again = "; nothing was rebound. Call set_project_root with the project's current path (list_projects shows candidates)";
        let access_root = self.access.root();
        if b.access_root != access_root {
            return Err(Error::Binding(format!(
                "this conversation was bound under access root {}, not {}{again}",
                b.access_root.display(),
                access_root.display()
            )));
        }
        match std::fs::canonicalize(&b.project_root) {
            Err(_) => Err(Error::Binding(format!(
                "this conversation was bound to project {}, which no longer exists (moved or deleted){again}",
                b.project_root.display()
            ))),
            Ok(c) if c != b.project_root => Err(Error::Binding(format!(
                "this conversation was bound to project {}, which now resolves to {} (moved or replaced by a link){again}",
                b.project_root.display(),
                c.display()
            ))),
            Ok(c) if !c.starts_with(access_root) => Err(Error::Binding(format!(
                "this conversation's project {} is outside the access root {}{again}",
                c.display(),
                access_root.display()
            ))),
            Ok(c) if c == access_root => Err(Error::Binding(format!(
                "this conversation was bound to the access root {} itself, which is not a project{again}",
                c.display()
            ))),
            Ok(c) if self.access.is_protected(&c) => Err(Error::PathProtected(format!(
                "this conversation was bound to {}, which is protected (it lies in a directory no tool may touch, such as the state home){again}",
                c.display()
            ))),
            Ok(c) if !c.is_dir() => Err(Error::Binding(format!(
                "this conversation's project {} is no longer a directory{again}",
                c.display()
            ))),
            Ok(_) => Ok(()),
        }
    }

    /// The project root for a tool call in multi-project mode: the restored binding.
    ///
    /// Errors: [`Error::Binding`] saying `set_project_root` is required when there is no
    /// binding; otherwise [`Self::restore`]'s.
    pub fn project_for(&self, raw_session: &str) -> Result<PathBuf> {
        match self.restore(raw_session)? {
            Some(b) => Ok(b.project_root),
            None => Err(Error::Binding(
                "no project is selected for this conversation yet; call get_agent_brief (or list_projects), then set_project_root with the project to work on".into(),
            )),
        }
    }

    /// Candidate projects: the access root's direct child directories that contain `.git`
    /// or `AGENTS.md`, sorted by name; hidden folders, protected ones and children that
    /// resolve outside the access root are skipped (so is the access root itself, which is
    /// not a project). Paths are canonical.
    pub fn candidates(&self) -> Vec<PathBuf> {
        let is_project = |p: &Path| p.join(".git").exists() || p.join("AGENTS.md").is_file();
        let access_root = self.access.root();
        let mut out = Vec::new();
        if let Ok(rd) = std::fs::read_dir(access_root) {
            for e in rd.flatten() {
                if e.file_name().to_string_lossy().starts_with('.') {
                    continue;
                }
                let Ok(c) = std::fs::canonicalize(e.path()) else {
                    continue;
                };
                if c.is_dir()
                    && c.starts_with(access_root)
                    && c != access_root
                    && !self.access.is_protected(&c)
                    && !self.access.is_protected(&e.path())
                    && is_project(&c)
                {
                    out.push(c);
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// `list_projects` text: one candidate per line (relative to the access root, with the
    /// absolute path), at most `page` lines from `offset`, ending with a continuation line
    /// when cut.
    pub fn list_projects_text(&self, offset: usize, page: usize) -> String {
        let all = self.candidates();
        let mut out = format!(
            "Projects under the access root {} (folders with .git or AGENTS.md):\n",
            self.access.root().display()
        );
        if all.is_empty() {
            out.push_str("(none found; set_project_root also accepts any directory inside the access root)\n");
            return out;
        }
        let page = page.max(1);
        let start = offset.min(all.len());
        let shown: Vec<&PathBuf> = all.iter().skip(start).take(page).collect();
        for p in &shown {
            let rel = p
                .strip_prefix(self.access.root())
                .ok()
                .filter(|r| !r.as_os_str().is_empty());
            match rel {
                Some(r) => out.push_str(&format!("- {}  ({})\n", r.display(), p.display())),
                None => out.push_str(&format!("- .  ({})\n", p.display())),
            }
        }
        if start + shown.len() < all.len() {
            out.push_str(&super::continuation(
                "projects",
                start,
                shown.len(),
                all.len(),
            ));
            out.push('\n');
        }
        out
    }
}

fn read_binding(file: &Path) -> std::result::Result<Option<Binding>, String> {
    match std::fs::read(file) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| format!("not a binding record: {e}")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Env {
        home: tempfile::TempDir,
        access: tempfile::TempDir,
    }

    fn env() -> Env {
        let access = tempfile::tempdir().unwrap();
        for name in ["alpha", "beta"] {
            std::fs::create_dir_all(access.path().join(name).join(".git")).unwrap();
        }
        std::fs::create_dir_all(access.path().join("docs-only")).unwrap();
        std::fs::write(access.path().join("docs-only/AGENTS.md"), "x").unwrap();
        std::fs::create_dir_all(access.path().join("plain")).unwrap();
        Env {
            home: tempfile::tempdir().unwrap(),
            access,
        }
    }

    impl Env {
        /// Bindings over the access root, with the state home `<access>/.state` and
        /// `<access>/agent` (another agent's home, a git repo) protected.
        fn bindings(&self) -> Bindings {
            let mut p = codex_free_core::jail::Protected::none();
            p.add(&self.access.path().join(".state"), "the state home");
            p.add(&self.access.path().join("agent"), "another agent's home");
            let jail = Jail::new(self.access.path(), std::sync::Arc::new(p)).unwrap();
            Bindings::new(self.home.path(), &jail)
        }
    }

    #[test]
    fn access_root_and_protected_folders_are_not_projects() {
        let e = env();
        let b = e.bindings();
        std::fs::create_dir_all(e.access.path().join(".state/conversation-projects")).unwrap();
        std::fs::create_dir_all(e.access.path().join("agent/.git")).unwrap();
        std::fs::write(e.access.path().join(".git"), "").unwrap();
        let abs = e.access.path().join(".state");
        for p in [".", "", "alpha/..", e.access.path().to_str().unwrap()] {
            let err = b.bind("s", p).unwrap_err();
            if p.is_empty() {
                assert_eq!(err.code(), "invalid_argument");
                continue;
            }
            assert_eq!(err.code(), "binding", "{p}: {err}");
            assert!(err.to_string().contains("not a project"), "{err}");
        }
        std::os::unix::fs::symlink(&abs, e.access.path().join("alpha/st")).unwrap();
        for p in [
            ".state",
            ".state/conversation-projects",
            "alpha/../.state",
            abs.to_str().unwrap(),
            "alpha/st",
            "agent",
        ] {
            let err = b.bind("s", p).unwrap_err();
            assert_eq!(err.code(), "path_protected", "{p}: {err}");
        }
        assert!(!b.dir().exists(), "nothing written for refused binds");
        // A protected git repo is not offered as a candidate either; nor is the root.
        assert_eq!(candidate_names(&b), ["alpha", "beta", "docs-only"]);
    }

    #[test]
    fn a_stored_binding_to_a_protected_folder_or_the_root_fails_closed() {
        let e = env();
        let b = e.bindings();
        b.bind("s", "alpha").unwrap();
        std::fs::create_dir_all(e.access.path().join("agent")).unwrap();
        // Records written by an older version, before these rules.
        for (target, code) in [
            (e.access.path().join("agent"), "path_protected"),
            (e.access.path().to_path_buf(), "binding"),
        ] {
            let file = b.path_for("s");
            let mut v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
            v["projectRoot"] = serde_json::json!(std::fs::canonicalize(&target).unwrap());
            std::fs::write(&file, v.to_string()).unwrap();
            assert_eq!(b.project_for("s").unwrap_err().code(), code);
        }
    }

    #[test]
    fn bind_restore_and_file_shape() {
        let e = env();
        let b = e.bindings();
        assert_eq!(b.restore("conv-secret-123").unwrap(), None);
        let out = b.bind("conv-secret-123", "alpha").unwrap();
        assert_eq!(out.previous, None);
        let alpha = std::fs::canonicalize(e.access.path().join("alpha")).unwrap();
        assert_eq!(
            b.restore("conv-secret-123").unwrap().unwrap().project_root,
            alpha
        );
        assert_eq!(b.restore("another").unwrap(), None);
        let file = b.path_for("conv-secret-123");
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(!text.contains("conv-secret-123"));
        assert!(!file.to_string_lossy().contains("conv-secret-123"));
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["projectRoot"], alpha.to_str().unwrap());
        assert!(v["accessRoot"].is_string() && v["boundAt"].is_string());
        let out = b
            .bind(
                "conv-secret-123",
                e.access.path().join("beta").to_str().unwrap(),
            )
            .unwrap();
        assert_eq!(out.previous, Some(alpha));
    }

    #[test]
    fn outside_access_root_is_refused() {
        let e = env();
        let b = e.bindings();
        let outside = tempfile::tempdir().unwrap();
        assert_eq!(
            b.bind("s", outside.path().to_str().unwrap())
                .unwrap_err()
                .code(),
            "binding"
        );
        assert_eq!(b.bind("s", "../").unwrap_err().code(), "binding");
        std::os::unix::fs::symlink(outside.path(), e.access.path().join("escape")).unwrap();
        assert!(
            b.bind("s", "escape")
                .unwrap_err()
                .to_string()
                .contains("outside the access root")
        );
        assert!(
            b.bind("s", "missing")
                .unwrap_err()
                .to_string()
                .contains("does not exist")
        );
        assert!(!b.dir().exists(), "nothing written for refused binds");
    }

    #[test]
    fn stale_project_fails_closed() {
        let e = env();
        let b = e.bindings();
        b.bind("s", "alpha").unwrap();
        std::fs::rename(
            e.access.path().join("alpha"),
            e.access.path().join("alpha2"),
        )
        .unwrap();
        let err = b.restore("s").unwrap_err();
        assert_eq!(err.code(), "binding");
        assert!(
            err.to_string().contains("no longer exists")
                && err.to_string().contains("set_project_root"),
            "{err}"
        );
        assert!(
            b.path_for("s").exists(),
            "record kept, not silently rebound"
        );
        assert!(b.project_for("s").is_err());
        // Replacing the folder by a link elsewhere is caught too.
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), e.access.path().join("alpha")).unwrap();
        assert!(
            b.restore("s")
                .unwrap_err()
                .to_string()
                .contains("now resolves to")
        );
    }

    fn candidate_names(b: &Bindings) -> Vec<String> {
        b.candidates()
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn candidates_and_listing() {
        let e = env();
        let b = e.bindings();
        assert_eq!(candidate_names(&b), ["alpha", "beta", "docs-only"]);
        let t = b.list_projects_text(0, 2);
        assert!(t.contains("- alpha  (") && t.contains("- beta  ("), "{t}");
        assert!(
            t.ends_with("(showing projects 1-2 of 3 — call again with offset=2 for the rest)\n"),
            "{t}"
        );
        assert!(b.list_projects_text(2, 2).contains("- docs-only"));
    }

    #[test]
    fn session_meta_errors_say_what_to_send() {
        let mut m = serde_json::Map::new();
        let e = session_from_meta(&m).unwrap_err().to_string();
        assert!(
            e.contains("_meta[\"openai/session\"]") && e.contains("missing"),
            "{e}"
        );
        m.insert("openai/session".into(), serde_json::json!(5));
        assert!(session_from_meta(&m).is_err());
        m.insert("openai/session".into(), serde_json::json!("abc"));
        assert_eq!(session_from_meta(&m).unwrap(), "abc");
    }

    #[test]
    fn corrupt_record_fails_closed_and_is_kept() {
        let e = env();
        let b = e.bindings();
        b.bind("s", "alpha").unwrap();
        std::fs::write(b.path_for("s"), "nope").unwrap();
        assert_eq!(b.restore("s").unwrap_err().code(), "corrupt_state");
        assert_eq!(b.restore("s").unwrap(), None);
        let backups = std::fs::read_dir(b.dir())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .contains(".corrupt-")
            })
            .count();
        assert_eq!(backups, 1);
    }
}
