//! The `codex-free` command line. See README.md.
fn main() -> anyhow::Result<()> {
    Ok(())
}
