//! Symbolic links on the way to a file `connect` writes: followed only when the file they
//! lead to is inside the user's home (dotfile managers link `~/.codex/config.toml` into
//! `~/dotfiles/`), and then said in the plan; a link leading anywhere else (`/etc`, another
//! user's files, a mounted share) or into Codex Free's own state home is refused with the
//! path, because connect would otherwise write a file the user never named.
//!
//! Invariant: a link is looked for in every component of the path below the home directory
//! (the file itself and the directories that hold it, `~/.claude -> /elsewhere` included);
//! links above the home (`/home -> /usr/home`) are the system's and do not count.

use std::path::{Component, Path, PathBuf};

use codex_free_core::Error;
use codex_free_core::Result;

/// Links followed at most while resolving one path (as the kernel's `ELOOP` limit).
const MAX_HOPS: usize = 40;

/// Where a write to `path` lands when a symbolic link is on the way: `Ok(None)` when no
/// component of `path` below `home` is a link (the file is written where it is named),
/// `Ok(Some(real))` when one is and the file it leads to is inside `home` (and outside
/// `state_home`).
///
/// Errors: [`Error::Refused`] naming the path, the link and where it leads, when that is
/// outside `home` (or there is no home to compare with), inside `state_home`, or cannot be
/// resolved (a loop); nothing is written then.
pub fn guard(path: &Path, home: Option<&Path>, state_home: &Path) -> Result<Option<PathBuf>> {
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let Some(link) = first_link(&path, home) else {
        return Ok(None);
    };
    let real = resolve(&path).ok_or_else(|| {
        Error::Refused(format!(
            "{} leads through the symbolic link {} in a loop or to a path that cannot be resolved; connect wrote nothing",
            path.display(),
            link.display()
        ))
    })?;
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let refuse = |why: String| {
        Err(Error::Refused(format!(
            "{} is reached through the symbolic link {} and leads to {}, {why}; connect follows a link only when it stays inside your home directory, and wrote nothing. Replace the link with the file itself, or point the client's directory variable (CODEX_HOME, CLAUDE_CONFIG_DIR, PI_CODING_AGENT_DIR) at where the file should be",
            path.display(),
            link.display(),
            real.display()
        )))
    };
    let Some(home) = home.map(canonical) else {
        return refuse("and there is no home directory to hold it to".into());
    };
    if !real.starts_with(&home) {
        return refuse(format!("outside your home directory {}", home.display()));
    }
    let state = canonical(state_home);
    if real.starts_with(&state) {
        return refuse(format!(
            "inside Codex Free's state home {}",
            state.display()
        ));
    }
    Ok(Some(real))
}

/// The first component of `path` (the file itself first, then its directories) that is a
/// symbolic link, not counting `home` and the directories above it.
fn first_link(path: &Path, home: Option<&Path>) -> Option<PathBuf> {
    path.ancestors()
        .take_while(|a| !a.as_os_str().is_empty() && !home.is_some_and(|h| h.starts_with(a)))
        .find(|a| std::fs::symlink_metadata(a).is_ok_and(|m| m.file_type().is_symlink()))
        .map(Path::to_path_buf)
}

/// The file a write to `path` reaches: its own links followed hop by hop (a link may lead
/// to a file that does not exist yet), then every directory link resolved by
/// canonicalising the longest existing ancestor. `None` on a loop or a `..` that cannot be
/// resolved against an existing directory.
fn resolve(path: &Path) -> Option<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_HOPS {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::read_link(&p).ok()?;
                p = match p.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            _ => return canonical_prefix(&p),
        }
    }
    None
}

/// `p` with its longest existing ancestor canonicalised and the rest appended; `None` when
/// the rest holds a `..` (it could not be resolved without the directories existing).
fn canonical_prefix(p: &Path) -> Option<PathBuf> {
    let mut rest = Vec::new();
    let mut cur = p;
    loop {
        if let Ok(c) = std::fs::canonicalize(cur) {
            let mut out = c;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return Some(out);
        }
        let name = cur.file_name()?;
        if Path::new(name)
            .components()
            .any(|c| c == Component::ParentDir)
        {
            return None;
        }
        rest.push(name.to_os_string());
        cur = cur.parent()?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn links_are_followed_only_inside_home() {
        let d = tempfile::tempdir().unwrap();
        let home = d.path().join("home");
        let out = d.path().join("outside");
        let state = home.join(".codex-free");
        for dir in [&home.join(".codex"), &home.join("dotfiles"), &out, &state] {
            std::fs::create_dir_all(dir).unwrap();
        }
        let h = Some(home.as_path());
        // No link: written where named, even outside home (an explicit CODEX_HOME).
        assert_eq!(guard(&out.join("config.toml"), h, &state).unwrap(), None);
        assert_eq!(
            guard(&home.join(".codex/AGENTS.md"), h, &state).unwrap(),
            None
        );
        // A link into ~/dotfiles, relative, to a file not there yet.
        symlink("../dotfiles/config.toml", home.join(".codex/config.toml")).unwrap();
        let real = std::fs::canonicalize(home.join("dotfiles"))
            .unwrap()
            .join("config.toml");
        assert_eq!(
            guard(&home.join(".codex/config.toml"), h, &state).unwrap(),
            Some(real)
        );
        // Out of home, through the file or through its directory.
        symlink(out.join("AGENTS.md"), home.join(".codex/AGENTS.md")).unwrap();
        symlink(&out, home.join(".claude")).unwrap();
        for p in [
            home.join(".codex/AGENTS.md"),
            home.join(".claude/CLAUDE.md"),
        ] {
            let e = guard(&p, h, &state).unwrap_err().to_string();
            assert!(
                e.contains(&p.display().to_string()) && e.contains("outside"),
                "{e}"
            );
        }
        // Into the state home.
        symlink(state.join("server-token"), home.join(".claude.json")).unwrap();
        let e = guard(&home.join(".claude.json"), h, &state).unwrap_err();
        assert!(e.to_string().contains("state home"), "{e}");
        // A loop.
        symlink(home.join("loop-b"), home.join("loop-a")).unwrap();
        symlink(home.join("loop-a"), home.join("loop-b")).unwrap();
        assert!(guard(&home.join("loop-a"), h, &state).is_err());
        // No home to compare with: a link is refused.
        assert!(guard(&home.join(".codex/config.toml"), None, &state).is_err());
    }
}
