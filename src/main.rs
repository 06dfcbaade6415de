//! The `codex-free` command line: `serve`, `config`, `memories`. See README.md.
//! Nothing but `serve --http`'s connection banner and subcommand results goes to stdout;
//! logs go to stderr (stdout is the MCP transport under `serve --stdio`).

fn main() -> anyhow::Result<()> {
    Ok(())
}
