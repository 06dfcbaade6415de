//! The hint added to the reply of a command the sandbox denied something.

use super::paths::{expand_home, resolve};
use std::path::{Component, Path, PathBuf};

/// A hint for the reply of a sandboxed command that failed with a permission error, or
/// `None` when `output` shows none. Names up to three paths the output blames (absolute,
/// resolved against `cwd`) and the rules; at most about 800 bytes.
pub(crate) fn denial_hint(output: &str, cwd: &Path, network: bool, unix: bool) -> Option<String> {
    const MARKERS: &[&str] = &[
        "Permission denied",
        "Read-only file system",
        "Operation not permitted",
    ];
    let mut paths: Vec<String> = Vec::new();
    let mut found = false;
    for line in output.lines() {
        let Some(m) = MARKERS.iter().find(|m| line.contains(**m)) else {
            continue;
        };
        found = true;
        if let Some(p) = blamed_path(line, m)
            && !paths.contains(&p)
            && paths.len() < 3
        {
            paths.push(p);
        }
    }
    if !found {
        return None;
    }
    let resolved: Vec<PathBuf> = paths.iter().map(|p| resolve(&cwd.join(p))).collect();
    let shown: Vec<String> = resolved
        .iter()
        .map(|abs| {
            let s = abs.display().to_string();
            let chars = s.chars().count();
            if chars > 120 {
                format!("…{}", s.chars().skip(chars - 119).collect::<String>())
            } else {
                s
            }
        })
        .collect();
    let blamed = if shown.is_empty() {
        String::new()
    } else {
        format!(" Denied: {}.", shown.join(", "))
    };
    let net = match (network, unix) {
        (true, true) => "",
        (true, false) => " It has no Unix sockets (exec.allowUnixSockets).",
        (false, true) => " It has no network (exec.network).",
        (false, false) => {
            " It has no network (exec.network) and no Unix sockets (exec.allowUnixSockets)."
        }
    };
    // The advice fits the path: .git and credentials are closed on purpose.
    let in_git = resolved.iter().any(|p| {
        p.components().any(|c| {
            matches!(c, Component::Normal(n) if codex_free_core::jail::is_git_dir_name(&n.to_string_lossy()))
        })
    });
    let credential = resolved.iter().any(|p| {
        codex_free_core::config::DEFAULT_DENY_READ
            .iter()
            .filter_map(|d| expand_home(d))
            .any(|d| p.starts_with(d))
    });
    let advice = if in_git {
        " The repository's .git is read-only to commands on purpose (hooks and settings written there would run at the next git command, outside the sandbox): commit with the git_commit tool; git settings are the user's to change."
    } else if credential {
        " That is a credential file (exec.denyRead), unreadable to commands on purpose; only the user can let commands read it (exec.allowRead)."
    } else {
        " If the access is legitimate, add the directory to exec.writableRoots and restart the server."
    };
    Some(format!(
        "Note: this command ran in the OS sandbox: it may write only in the project root (not its .git), its TMPDIR and exec.writableRoots, and cannot read the state home, agent configs or credentials.{net}{blamed}{advice}"
    ))
}

/// The path a permission-error line names, in the usual shapes: `prog: PATH: Permission
/// denied`, `... Permission denied: 'PATH'`, `cannot open 'PATH'`, `couldn't open file PATH: ...`.
fn blamed_path(line: &str, marker: &str) -> Option<String> {
    let idx = line.find(marker)?;
    let after = line[idx + marker.len()..].trim_start_matches([':', ' ']);
    let unquote = |s: &str| -> Option<String> {
        let s = s.trim();
        let q = s.chars().next()?;
        if q == '\'' || q == '"' || q == '`' || q == '‘' {
            let body = &s[q.len_utf8()..];
            let end = body.find(['\'', '"', '`', '’'])?;
            return Some(body[..end].to_string());
        }
        None
    };
    if let Some(p) = unquote(after).filter(|p| !p.is_empty()) {
        return Some(p);
    }
    let before = line[..idx].trim_end_matches([':', ' ', '(']);
    let last = before.rsplit(": ").next().unwrap_or(before).trim();
    let last = last
        .trim_start_matches("couldn't open file ")
        .trim_start_matches("cannot open ")
        .trim_start_matches("cannot create ")
        .trim_start_matches("can't create ")
        .trim_start_matches("open ");
    let candidate = unquote(last).unwrap_or_else(|| {
        last.rsplit(' ')
            .next()
            .unwrap_or(last)
            .trim_matches(['\'', '"', '`', '‘', '’'])
            .to_string()
    });
    (candidate.contains('/') || candidate.contains('.')).then_some(candidate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_name_the_denied_path() {
        let cwd = Path::new("/proj/sub");
        for (line, want) in [
            ("sed: couldn't open file ../x: Permission denied", "/proj/x"),
            (
                "PermissionError: [Errno 13] Permission denied: '../x'",
                "/proj/x",
            ),
            ("bash: line 1: /etc/x: Permission denied", "/etc/x"),
            ("touch: cannot touch '/opt/y': Permission denied", "/opt/y"),
            ("find: ‘../x’: Permission denied", "/proj/x"),
        ] {
            let h = denial_hint(line, cwd, false, false).unwrap();
            assert!(h.contains(want), "{line} -> {h}");
            assert!(h.contains("exec.writableRoots") && h.len() < 700, "{h}");
        }
        assert!(denial_hint("all good\n", cwd, false, false).is_none());
        let h = denial_hint(
            "bash: .git/config: Read-only file system",
            cwd,
            false,
            false,
        )
        .unwrap();
        assert!(
            h.contains("git_commit") && !h.contains("add the directory"),
            "{h}"
        );
        let h = denial_hint("connect: Permission denied", cwd, false, false).unwrap();
        assert!(
            h.contains("exec.network") && h.contains("exec.allowUnixSockets"),
            "{h}"
        );
        let h = denial_hint("connect: Permission denied", cwd, true, false).unwrap();
        assert!(
            !h.contains("exec.network") && h.contains("exec.allowUnixSockets"),
            "{h}"
        );
    }
}
