//! No sandbox on this OS: commands run unconfined and the status says so.

use std::path::Path;

use super::Spec;
use codex_free_core::Result;

pub(super) fn available() -> std::result::Result<(&'static str, String), String> {
    Err(format!(
        "no OS sandbox is implemented for {}",
        std::env::consts::OS
    ))
}

#[derive(Debug)]
pub(super) struct Inner;

impl Inner {
    pub(super) fn new(_spec: &Spec, _tmp: &Path) -> Result<Self> {
        Ok(Self)
    }

    pub(super) fn command(
        &self,
        program: &str,
        args: &[&str],
        _tmp: &Path,
    ) -> std::process::Command {
        let mut cmd = std::process::Command::new(program);
        cmd.args(args);
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        cmd
    }
}
