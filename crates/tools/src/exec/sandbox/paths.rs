//! Which paths the sandbox protects, opens for writing or keeps read-only, from the `exec`
//! config and the project, resolved the way Landlock sees them.

use std::path::{Component, Path, PathBuf};

use codex_free_core::config::ExecConfig;

/// The paths no command may read or write, absolute and with symbolic links resolved as far
/// as they exist: the state home `home`, each of `extra` (the config file's directory), and
/// the other agents' homes — `$CODEX_HOME` and `~/.codex`, `$CLAUDE_CONFIG_DIR`, `~/.claude`
/// and `~/.claude.json`, `$PI_CODING_AGENT_DIR` and `~/.pi/agent` (both the variable's value
/// and the default, since either may hold live settings). Those hold credentials and settings
/// that start programs (hooks, MCP servers) outside any sandbox.
pub fn protected_paths(home: &Path, extra: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = vec![home.to_path_buf()];
    out.extend(extra.iter().cloned());
    out.extend(
        codex_free_core::home::AgentHomes::protected()
            .into_iter()
            .map(|(p, _)| p),
    );
    let mut out: Vec<PathBuf> = out
        .iter()
        .filter(|p| p.is_absolute())
        .map(|p| resolve(p))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// `exec.writableRoots` as absolute paths (`~` and `~/x` expanded against `$HOME`; entries
/// needing `$HOME` are dropped when it is unset), symbolic links resolved.
/// With the network allowed, `exec.cacheRoots` too (downloads need them); offline they stay
/// read-only so nothing planted there runs in a later, unsandboxed build.
pub fn writable_roots(exec: &ExecConfig) -> Vec<PathBuf> {
    let caches: &[String] = if exec.network_allowed() {
        &exec.cache_roots
    } else {
        &[]
    };
    exec.writable_roots
        .iter()
        .chain(caches)
        .filter_map(|r| expand_home(r))
        .filter(|p| p.is_absolute())
        .map(|p| resolve(&p))
        .collect()
}

/// `exec.denyRead` minus `exec.allowRead` (both `~`-expanded and resolved, compared
/// whole), absolute, and only the entries that exist when the command starts: added to the
/// protected paths of every command, so neither readable nor writable. A missing entry is
/// left out because there is nothing to read, while carving around it would cost rules on
/// every directory on its way (a command that creates one reads nothing of the user's).
pub fn deny_read(exec: &ExecConfig) -> Vec<PathBuf> {
    let expand = |list: &[String]| -> Vec<PathBuf> {
        list.iter()
            .filter_map(|r| expand_home(r))
            .filter(|p| p.is_absolute())
            .map(|p| resolve(&p))
            .collect()
    };
    // Only what exists, asked before resolving: most defaults do not exist on a given
    // machine, and resolving a missing path costs a failed canonicalize per component.
    let present: Vec<String> = exec
        .deny_read
        .iter()
        .filter(|r| expand_home(r).is_some_and(|p| std::fs::symlink_metadata(p).is_ok()))
        .cloned()
        .collect();
    if present.is_empty() {
        return Vec::new();
    }
    let allowed = expand(&exec.allow_read);
    expand(&present)
        .into_iter()
        .filter(|p| !allowed.contains(p) && std::fs::symlink_metadata(p).is_ok())
        .collect()
}

/// `exec.allowUnixSockets` as absolute paths (`~` expanded as for [`writable_roots`]),
/// symbolic links resolved: what the variables naming a socket are compared with.
pub fn unix_sockets(exec: &ExecConfig) -> Vec<PathBuf> {
    exec.allow_unix_sockets
        .iter()
        .filter_map(|r| expand_home(r))
        .filter(|p| p.is_absolute())
        .map(|p| resolve(&p))
        .collect()
}

pub(super) fn user_home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

pub(super) fn expand_home(s: &str) -> Option<PathBuf> {
    if s == "~" {
        return user_home();
    }
    match s.strip_prefix("~/") {
        Some(rest) => user_home().map(|h| h.join(rest)),
        None => Some(PathBuf::from(s)),
    }
}

/// `p` (absolute) with `.`/`..` removed lexically and its longest existing prefix
/// canonicalised (the rest appended), so a path that does not exist yet still compares
/// correctly with canonical paths.
pub(super) fn resolve(p: &Path) -> PathBuf {
    let mut lexical = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                lexical.pop();
            }
            Component::CurDir => {}
            other => lexical.push(other),
        }
    }
    let mut existing = lexical.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(c) = std::fs::canonicalize(existing) {
            let mut out = c;
            for r in rest.iter().rev() {
                out.push(r);
            }
            return out;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return lexical,
        }
    }
}

/// What git reads as code or settings for the repository at `root`, to keep read-only for
/// commands: `root/.git` (a directory, or the `.git` file of a linked worktree or submodule)
/// and, for such a file, the git directory it names and that directory's `commondir` target
/// (hooks and config live there). Only paths that exist; symbolic links resolved. Reason:
/// hooks, `core.fsmonitor`, `core.hooksPath` and filter drivers written there would run at
/// the user's next plain `git status`, outside any sandbox.
pub fn git_dirs(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let dot_git = root.join(".git");
    let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
        return out;
    };
    out.push(resolve(&dot_git));
    if meta.is_file()
        && let Ok(text) = std::fs::read_to_string(&dot_git)
        && let Some(dir) = text.lines().find_map(|l| l.strip_prefix("gitdir:"))
    {
        let dir = root.join(dir.trim());
        if dir.is_dir() {
            let dir = resolve(&dir);
            if let Ok(common) = std::fs::read_to_string(dir.join("commondir")) {
                let common = resolve(&dir.join(common.trim()));
                if common.is_dir() {
                    out.push(common);
                }
            }
            out.push(dir);
        }
    }
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_handles_missing_tails_and_dotdot() {
        let t = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir(base.join("real")).unwrap();
        std::os::unix::fs::symlink(base.join("real"), base.join("link")).unwrap();
        assert_eq!(
            resolve(&base.join("link/missing/x")),
            base.join("real/missing/x")
        );
        assert_eq!(resolve(&base.join("real/../link")), base.join("real"));
    }

    #[test]
    fn protected_paths_cover_home_and_agent_dirs() {
        let p = protected_paths(
            Path::new("/nonexistent/state"),
            &[PathBuf::from("/nonexistent/cfg")],
        );
        assert!(p.contains(&PathBuf::from("/nonexistent/state")));
        assert!(p.contains(&PathBuf::from("/nonexistent/cfg")));
        if let Some(h) = user_home() {
            let h = resolve(&h);
            assert!(
                p.contains(&h.join(".codex")) && p.contains(&h.join(".claude")),
                "{p:?}"
            );
        }
    }
}
