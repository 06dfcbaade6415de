//! The environment a command gets: the server's own environment minus credentials.
//!
//! Rule (applied to the upper-cased variable name), a variable is **dropped** when it
//! - ends with `API_KEY`, `APIKEY`, `_TOKEN`, `_ACCESS_KEY`, `_PRIVATE_KEY` or `_KEY_ID`;
//! - contains `SECRET`, `PASSWORD`, `PASSWD` or `CREDENTIAL`;
//! - starts with `AWS_` and names a credential (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
//!   `AWS_SESSION_TOKEN`, `AWS_SECURITY_TOKEN`, ...: covered by the rules above);
//! - starts with `CODEX_FREE_` (the server's own settings and tokens), except `CODEX_FREE_HOME`;
//! - starts with `BASH_FUNC_` (exported shell functions could shadow allowed programs).
//!
//! A variable is also dropped, whatever its name, when its **value** is secret-shaped
//! ([`is_secret_value`]): a URL carrying a password (`postgres://u:pw@host/db`) or anything
//! the redaction rules recognise (a provider key, a GitHub or Slack token, a private key
//! block, a JWT …). Names alone miss `MYAPP_DB_URL` and `SENTRY_DSN`.
//!
//! Then, as Codex's unified exec does, output-friendly settings are forced: `NO_COLOR=1`,
//! `TERM=dumb`, `PAGER=cat`, `GIT_PAGER=cat`, `GH_PAGER=cat`, `GIT_TERMINAL_PROMPT=0`.
//!
//! A sandboxed command also loses the variables that point at a Unix socket of the user's
//! session ([`is_socket_var`]: the agent, bus, container, display and terminal sockets), which
//! it could not reach anyway, unless the socket is listed in `exec.allowUnixSockets`
//! ([`without_socket_vars`]).
//!
//! Invariant: no variable for which [`is_secret_name`] or [`is_secret_value`] is true
//! reaches a child process.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// Variables naming a local IPC endpoint outside the sandbox, or the directory holding them:
/// ssh and gpg agents, D-Bus buses, container engines, display servers and sound, terminal
/// multiplexers and editors (whose sockets run commands), systemd's notify socket.
pub const SOCKET_VARS: &[&str] = &[
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "GPG_AGENT_INFO",
    "GNOME_KEYRING_CONTROL",
    "GNOME_KEYRING_PID",
    "DBUS_SESSION_BUS_ADDRESS",
    "DBUS_SYSTEM_BUS_ADDRESS",
    "DBUS_STARTER_ADDRESS",
    "DOCKER_HOST",
    "CONTAINER_HOST",
    "XDG_RUNTIME_DIR",
    "WAYLAND_DISPLAY",
    "WAYLAND_SOCKET",
    "DISPLAY",
    "XAUTHORITY",
    "PULSE_SERVER",
    "PIPEWIRE_REMOTE",
    "TMUX",
    "TMUX_PANE",
    "STY",
    "SWAYSOCK",
    "I3SOCK",
    "NIRI_SOCKET",
    "HYPRLAND_INSTANCE_SIGNATURE",
    "KITTY_LISTEN_ON",
    "NVIM",
    "NVIM_LISTEN_ADDRESS",
    "WEZTERM_UNIX_SOCKET",
    "VSCODE_IPC_HOOK",
    "VSCODE_IPC_HOOK_CLI",
    "VSCODE_GIT_IPC_HANDLE",
    "NOTIFY_SOCKET",
];

/// True when `name=value` points a command at a Unix socket: a name of [`SOCKET_VARS`], a
/// name ending in `_SOCK`, `_SOCKET`, `_IPC_HOOK` or `_IPC_HANDLE`, or a value that is a
/// `unix:` address (D-Bus, Docker) or the path of an existing socket.
pub fn is_socket_var(name: &str, value: &OsStr) -> bool {
    let n = name.to_ascii_uppercase();
    const SUFFIXES: &[&str] = &["_SOCK", "_SOCKET", "_IPC_HOOK", "_IPC_HANDLE"];
    if SOCKET_VARS.contains(&n.as_str()) || SUFFIXES.iter().any(|s| n.ends_with(s)) {
        return true;
    }
    let v = value.as_encoded_bytes();
    if v.starts_with(b"unix:") {
        return true;
    }
    v.first() == Some(&b'/') && is_socket(Path::new(value))
}

#[cfg(unix)]
fn is_socket(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_socket())
}

/// No Unix sockets here (commands are refused on this OS anyway).
#[cfg(not(unix))]
fn is_socket(_path: &Path) -> bool {
    false
}

/// The pathname socket a socket variable names: `unix:path=P[,...]`, `unix://P`, or `P`
/// itself when absolute; `None` for abstract or non-`unix` addresses and for names.
pub fn socket_path(value: &OsStr) -> Option<PathBuf> {
    let v = value.to_str()?;
    let p = if let Some(rest) = v.strip_prefix("unix:path=") {
        rest.split(',').next().unwrap_or(rest)
    } else if let Some(rest) = v.strip_prefix("unix://") {
        rest
    } else {
        v
    };
    p.starts_with('/').then(|| PathBuf::from(p))
}

/// `env` without its socket variables ([`is_socket_var`]), except those whose socket
/// ([`socket_path`], symbolic links resolved) is one of `allowed` (resolved paths).
pub fn without_socket_vars(
    env: Vec<(OsString, OsString)>,
    allowed: &[PathBuf],
) -> Vec<(OsString, OsString)> {
    let permitted = |v: &OsStr| {
        socket_path(v).is_some_and(|p| {
            let p = std::fs::canonicalize(&p).unwrap_or(p);
            allowed.contains(&p)
        })
    };
    env.into_iter()
        .filter(|(k, v)| !is_socket_var(&k.to_string_lossy(), v) || permitted(v))
        .collect()
}

/// Variables set for every child, overriding the inherited values (after Codex's unified exec).
pub const FORCED: &[(&str, &str)] = &[
    ("NO_COLOR", "1"),
    ("TERM", "dumb"),
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("GH_PAGER", "cat"),
    ("GIT_TERMINAL_PROMPT", "0"),
];

/// True when a variable named `name` must not be passed to a child (see the module rule).
pub fn is_secret_name(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    const SUFFIXES: &[&str] = &[
        "API_KEY",
        "APIKEY",
        "_TOKEN",
        "_ACCESS_KEY",
        "_PRIVATE_KEY",
        "_KEY_ID",
    ];
    const PARTS: &[&str] = &["SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"];
    SUFFIXES.iter().any(|s| n.ends_with(s))
        || n == "TOKEN"
        || PARTS.iter().any(|p| n.contains(p))
        || (n.starts_with("CODEX_FREE_") && n != "CODEX_FREE_HOME")
        || n.starts_with("BASH_FUNC_")
}

/// True when a variable's value must not be passed to a child whatever its name: a URL with
/// a password in its authority (`scheme://user:password@host`), a value in which
/// [`codex_free_redact::find_secret`] finds a credential, or a generated secret
/// ([`generated_secret`]). Values that are not UTF-8 are checked lossily. Reason:
/// connection strings, DSNs and storage keys carry credentials under ordinary names.
///
/// Measured on 2,598 real values of public `.env` examples, compose and CI files
/// (`tests/data/sandbox-world/env-values/`): on the test half no ordinary value is dropped
/// (0 of 1,263) and every credential is (6 of 6); the tune half showed the one gap closed
/// by [`generated_secret`], a base64 storage account key.
pub fn is_secret_value(value: &OsStr) -> bool {
    let v = value.to_string_lossy();
    url_with_password(&v) || codex_free_redact::find_secret(&v).is_some() || generated_secret(&v)
}

/// Whether the whole value is one random base64 (or base64url) token of 32 characters or
/// more, like a storage account key or a `SECRET_KEY_BASE`: upper case, lower case and digits
/// all present, and the character class (upper / lower / digit) changes between at least
/// 45% of neighbouring characters (random base64 changes at about 62%; words, paths and
/// camel-case identifiers rarely pass 20%). Hex digests are left alone on purpose: they have
/// one letter case, and public checksums in CI files are hex.
fn generated_secret(v: &str) -> bool {
    let t = v.trim().trim_end_matches('=');
    if t.len() < 32
        || !t
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_'))
    {
        return false;
    }
    let class = |b: u8| match b {
        b'A'..=b'Z' => 1u8,
        b'a'..=b'z' => 2,
        b'0'..=b'9' => 3,
        _ => 0,
    };
    let bytes = t.as_bytes();
    let has = |c: u8| bytes.iter().any(|&b| class(b) == c);
    let changes = bytes
        .windows(2)
        .filter(|w| class(w[0]) != class(w[1]))
        .count();
    has(1) && has(2) && has(3) && changes * 100 >= (bytes.len() - 1) * 45
}

/// Whether `text` holds `scheme://user:password@` (a non-empty password before the `@` of
/// an authority), anywhere (lists such as `a,postgres://u:p@h` included).
fn url_with_password(text: &str) -> bool {
    text.match_indices("://").any(|(i, _)| {
        let scheme_ok = text[..i]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric());
        let rest = &text[i + 3..];
        let authority = rest
            .split(|c: char| c == '/' || c == '?' || c == '#' || c.is_whitespace())
            .next()
            .unwrap_or("");
        scheme_ok
            && authority.rfind('@').is_some_and(|at| {
                authority[..at]
                    .split_once(':')
                    .is_some_and(|(_, pw)| !pw.is_empty())
            })
    })
}

/// Dynamic-loader variables never passed to a child: a library preloaded into this server
/// (a profiler, a time faker) is not meant for the commands a model runs, and one that
/// needs resources outside the sandbox (libfaketime's shared memory) would break each of
/// them; `LD_AUDIT` runs code in every program the same way.
pub const LOADER_INJECTION: &[&str] = &["LD_PRELOAD", "LD_AUDIT"];

/// The environment for a child: the current process environment filtered by
/// [`is_secret_name`], [`is_secret_value`] and [`LOADER_INJECTION`], plus [`FORCED`]. Names that are not UTF-8 are kept only if they
/// cannot match the rule (they are compared lossily, so a match drops them too).
pub fn child_env() -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, _)| !is_secret_name(&k.to_string_lossy()))
        .filter(|(_, v)| !is_secret_value(v))
        .filter(|(k, _)| !LOADER_INJECTION.iter().any(|l| k == l))
        .filter(|(k, _)| !FORCED.iter().any(|(f, _)| k == f))
        .collect();
    env.extend(
        FORCED
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v))),
    );
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_keys_and_tokens_are_secret() {
        for n in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "openrouter_api_key",
            "GEMINI_APIKEY",
            "GITHUB_TOKEN",
            "GH_TOKEN",
            "HF_TOKEN",
            "NPM_TOKEN",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "MY_CLIENT_SECRET",
            "DB_PASSWORD",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "CODEX_FREE_TOKEN",
            "CODEX_FREE_HTTP_SECRET",
            "BASH_FUNC_ls%%",
        ] {
            assert!(is_secret_name(n), "{n}");
        }
    }

    #[test]
    fn ordinary_variables_are_kept() {
        for n in [
            "PATH",
            "HOME",
            "LANG",
            "CARGO_HOME",
            "RUSTUP_TOOLCHAIN",
            "AWS_REGION",
            "CODEX_FREE_HOME",
            "TOKENIZERS_PARALLELISM",
            "KEYMAP",
        ] {
            assert!(!is_secret_name(n), "{n}");
        }
    }

    #[test]
    fn socket_variables_are_told_apart() {
        let t = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(t.path()).unwrap();
        let sock = base.join("s.sock");
        let _l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let s = sock.display().to_string();
        for (k, v) in [
            ("SSH_AUTH_SOCK", "/nonexistent/agent"),
            ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/1000/bus"),
            ("docker_host", "tcp://127.0.0.1:2375"),
            ("XDG_RUNTIME_DIR", "/run/user/1000"),
            ("SOME_IPC", "unix:abstract=/tmp/x"),
            ("ANYTHING", s.as_str()),
            ("TOOL_SOCKET", "x"),
        ] {
            assert!(is_socket_var(k, OsStr::new(v)), "{k}={v}");
        }
        for (k, v) in [
            ("PATH", "/usr/bin:/bin"),
            ("HOME", base.to_str().unwrap()),
            ("LANG", "C.UTF-8"),
            ("SOCKS_PROXY", "socks5://x"),
        ] {
            assert!(!is_socket_var(k, OsStr::new(v)), "{k}={v}");
        }
        assert_eq!(
            socket_path(OsStr::new("unix:path=/run/bus,guid=1")),
            Some(PathBuf::from("/run/bus"))
        );
        assert_eq!(
            socket_path(OsStr::new("unix:///var/run/docker.sock")),
            Some(PathBuf::from("/var/run/docker.sock"))
        );
        assert_eq!(socket_path(OsStr::new("unix:abstract=/tmp/x")), None);
        let env = |pairs: &[(&str, &str)]| -> Vec<(OsString, OsString)> {
            pairs
                .iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v)))
                .collect()
        };
        let bus = format!("unix:path={s}");
        let all = env(&[
            ("SSH_AUTH_SOCK", &s),
            ("DBUS_SESSION_BUS_ADDRESS", &bus),
            ("XDG_RUNTIME_DIR", base.to_str().unwrap()),
            ("PATH", "/bin"),
        ]);
        let names = |e: Vec<(OsString, OsString)>| -> Vec<String> {
            e.into_iter()
                .map(|(k, _)| k.to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(names(without_socket_vars(all.clone(), &[])), ["PATH"]);
        assert_eq!(
            names(without_socket_vars(all, std::slice::from_ref(&sock))),
            ["SSH_AUTH_SOCK", "DBUS_SESSION_BUS_ADDRESS", "PATH"]
        );
    }

    #[test]
    fn secret_shaped_values_are_dropped_whatever_the_name() {
        for v in [
            "postgres://u:pw@db.internal:5432/app",
            "redis://:hunter2@cache:6379/0",
            "https://alice:s3cr3t@example.com/x",
            "mysql://app:pa%40ss@10.0.0.1/db?ssl=true",
            "a,amqp://guest:guest@rabbit/",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH",
            // A storage account key and a Phoenix SECRET_KEY_BASE, by shape alone.
            "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
            "UpNVntn3cDxHJpq99YMc1T1AQgQpc8kfYTuRgBiYa15BLrx8etQoXz3gZv1/u2oq",
        ] {
            assert!(is_secret_value(OsStr::new(v)), "{v}");
        }
        for v in [
            "postgres://db.internal:5432/app",
            "https://alice@example.com/x",
            "https://example.com/a:b@c",
            "/usr/local/bin:/usr/bin:/bin",
            "en_US.UTF-8",
            "xterm-256color",
            "user@host",
            "C:\\Users\\me",
            "4d9a9d3351161073a67e49366d701b6fa4b0343781982dc5eef08a02a750d403",
            "27EDEAF22F3ABCEB50DB9A125CC908FDB71E12C2",
            "your-super-secret-jwt-token-with-at-least-32-characters-long",
            "/home/User/Projects/MyApp2024/target/debug/build",
            "ghcr.io/getsentry/sentry:nightly",
        ] {
            assert!(!is_secret_value(OsStr::new(v)), "{v}");
        }
    }

    #[test]
    fn forced_values_win() {
        let env = child_env();
        let term: Vec<_> = env.iter().filter(|(k, _)| k == "TERM").collect();
        assert_eq!(term.len(), 1);
        assert_eq!(term[0].1, "dumb");
    }
}
