//! `memories.exclude_paths`: projects whose sessions never leave this machine.
//!
//! Each pattern is a glob (`*` and `?` stay inside one path component, `**` crosses
//! components, `{a,b}` and `[ab]` as usual) over a session's working directory. A
//! session is excluded when its working directory *or any folder above it* matches, so
//! `~/clients/acme` also covers `~/clients/acme/api`. A pattern is absolute, starts with
//! `~/` (the user's home) or with `**/` (any folder of that name anywhere): a relative
//! pattern would depend on where the server was started. A session without a known
//! working directory matches no pattern.

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};

/// Most patterns `memories.exclude_paths` may hold (a list this long is a mistake).
pub const MAX_PATTERNS: usize = 256;

/// Why `pattern` cannot be an `memories.exclude_paths` entry, or `Ok`.
///
/// Errors: a phrase completing "`memories.exclude_paths` contains PATTERN: ...".
pub fn check_pattern(pattern: &str) -> std::result::Result<(), String> {
    if !(pattern.starts_with('/')
        || pattern == "~"
        || pattern.starts_with("~/")
        || pattern.starts_with("**/"))
    {
        return Err("each entry must be an absolute path or glob, or start with ~/ or **/".into());
    }
    if pattern.contains('\0') {
        return Err("an entry may not contain a NUL byte".into());
    }
    glob(pattern).map(|_| ())
}

fn glob(pattern: &str) -> std::result::Result<Glob, String> {
    let expanded = match pattern.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => {
            let home = std::env::home_dir().ok_or("the home folder is unknown here")?;
            format!("{}{rest}", home.display())
        }
        _ => pattern.to_string(),
    };
    let trimmed = match expanded.trim_end_matches('/') {
        "" => "/",
        t => t,
    };
    GlobBuilder::new(trimmed)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| format!("not a valid glob ({})", e.kind()))
}

/// The compiled `memories.exclude_paths` ([`ExcludePaths::new`]); the default excludes
/// nothing.
#[derive(Debug, Clone, Default)]
pub struct ExcludePaths {
    patterns: Vec<String>,
    set: GlobSet,
}

impl ExcludePaths {
    /// Compile `patterns` (as written in the config, `~/` expanded here).
    ///
    /// Errors: the first invalid entry, with [`check_pattern`]'s reason.
    pub fn new(patterns: &[String]) -> std::result::Result<Self, String> {
        let mut b = GlobSetBuilder::new();
        for p in patterns {
            check_pattern(p)
                .map_err(|why| format!("memories.exclude_paths contains {p:?}: {why}"))?;
            b.add(glob(p)?);
        }
        let set = b
            .build()
            .map_err(|e| format!("memories.exclude_paths: {e}"))?;
        Ok(Self {
            patterns: patterns.to_vec(),
            set,
        })
    }

    /// True when no pattern is set.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// The pattern (as configured) that excludes a session run in `cwd`, checking `cwd`
    /// and every folder above it; `None` when it is not excluded.
    pub fn matched(&self, cwd: &str) -> Option<&str> {
        if self.patterns.is_empty() {
            return None;
        }
        std::path::Path::new(cwd).ancestors().find_map(|dir| {
            self.set
                .matches(dir)
                .first()
                .map(|&i| self.patterns[i].as_str())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_and_everything_below_it_is_excluded() {
        let home = std::env::home_dir().unwrap();
        let x = ExcludePaths::new(&[
            "~/clients/acme".into(),
            "/srv/*/secret".into(),
            "**/private-*".into(),
        ])
        .unwrap();
        let h = |p: &str| format!("{}/{p}", home.display());
        assert_eq!(x.matched(&h("clients/acme")), Some("~/clients/acme"));
        assert_eq!(
            x.matched(&h("clients/acme/api/src")),
            Some("~/clients/acme")
        );
        assert_eq!(
            x.matched(&h("clients/acme-two")),
            None,
            "a sibling with a longer name"
        );
        assert_eq!(x.matched("/srv/a/secret/x"), Some("/srv/*/secret"));
        assert_eq!(x.matched("/srv/a/b/secret"), None, "* stays in one folder");
        assert_eq!(x.matched("/work/private-notes/sub"), Some("**/private-*"));
        assert_eq!(x.matched("/work/public"), None);
        assert!(ExcludePaths::default().matched("/anything").is_none());
    }

    #[test]
    fn relative_and_broken_patterns_are_refused_with_the_reason() {
        for (p, why) in [("clients/acme", "absolute"), ("/a/[b", "not a valid glob")] {
            let e = ExcludePaths::new(&[p.to_string()]).unwrap_err();
            assert!(e.contains(why) && e.contains(p), "{p}: {e}");
        }
    }
}
