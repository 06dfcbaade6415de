//! Seatbelt through `/usr/bin/sandbox-exec` (see the parent module). Not compiled or
//! tested on the Linux machine this was written on; kept deliberately simple.

use std::path::{Path, PathBuf};

use super::Spec;
use codex_free_core::Result;

const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

pub(super) fn available() -> std::result::Result<(&'static str, String), String> {
    if Path::new(SANDBOX_EXEC).exists() {
        Ok(("seatbelt", "Seatbelt (sandbox-exec)".into()))
    } else {
        Err(format!("{SANDBOX_EXEC} is missing"))
    }
}

#[derive(Debug)]
pub(super) struct Inner {
    writable: Vec<PathBuf>,
    protected: Vec<PathBuf>,
    network: bool,
    unix_sockets: Vec<PathBuf>,
    read_only: Vec<PathBuf>,
}

impl Inner {
    pub(super) fn new(spec: &Spec, tmp: &Path) -> Result<Self> {
        let mut writable = vec![spec.root.clone(), tmp.to_path_buf()];
        writable.extend(spec.writable.iter().cloned());
        Ok(Self {
            writable,
            protected: spec.protected.clone(),
            network: spec.network,
            unix_sockets: spec.unix_sockets.clone(),
            read_only: spec.read_only.clone(),
        })
    }

    /// The profile: allow by default, deny every write but the writable roots and a
    /// few devices, then deny reads and writes of the protected paths (later rules win),
    /// without network deny IP traffic, and deny connecting to any Unix socket but the
    /// listed ones (and, with network, mDNSResponder's, which name lookups go through).
    /// Paths are `-D` parameters.
    fn profile(&self) -> String {
        let mut p = String::from("(version 1)\n(allow default)\n(deny file-write*)\n");
        p.push_str("(allow file-write* (literal \"/dev/null\") (literal \"/dev/zero\") (literal \"/dev/tty\") (regex #\"^/dev/ttys[0-9]+$\")");
        for i in 0..self.writable.len() {
            p.push_str(&format!(" (subpath (param \"W{i}\"))"));
        }
        p.push_str(")\n");
        if !self.read_only.is_empty() {
            p.push_str("(deny file-write*");
            for i in 0..self.read_only.len() {
                p.push_str(&format!(" (subpath (param \"R{i}\"))"));
            }
            p.push_str(")\n");
        }
        if !self.protected.is_empty() {
            p.push_str("(deny file-read* file-write*");
            for i in 0..self.protected.len() {
                p.push_str(&format!(" (subpath (param \"P{i}\"))"));
            }
            p.push_str(")\n");
        }
        if !self.network {
            p.push_str("(deny network-outbound (remote ip))\n(deny network-bind (local ip))\n");
        }
        p.push_str("(deny network-outbound (remote unix-socket))\n");
        if self.network || !self.unix_sockets.is_empty() {
            p.push_str("(allow network-outbound");
            if self.network {
                p.push_str(
                    " (remote unix-socket (path-literal \"/private/var/run/mDNSResponder\"))",
                );
            }
            for i in 0..self.unix_sockets.len() {
                p.push_str(&format!(
                    " (remote unix-socket (path-literal (param \"U{i}\")))"
                ));
            }
            p.push_str(")\n");
        }
        p
    }

    pub(super) fn command(
        &self,
        program: &str,
        args: &[&str],
        _tmp: &Path,
    ) -> std::process::Command {
        let mut cmd = std::process::Command::new(SANDBOX_EXEC);
        cmd.arg("-p").arg(self.profile());
        for (i, w) in self.writable.iter().enumerate() {
            cmd.arg("-D").arg(format!("W{i}={}", w.display()));
        }
        for (i, p) in self.protected.iter().enumerate() {
            cmd.arg("-D").arg(format!("P{i}={}", p.display()));
        }
        for (i, u) in self.unix_sockets.iter().enumerate() {
            cmd.arg("-D").arg(format!("U{i}={}", u.display()));
        }
        for (i, r) in self.read_only.iter().enumerate() {
            cmd.arg("-D").arg(format!("R{i}={}", r.display()));
        }
        cmd.arg(program).args(args);
        {
            use std::os::unix::process::CommandExt;
            cmd.process_group(0);
        }
        cmd
    }
}
