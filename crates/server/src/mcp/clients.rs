//! What this server knows about each MCP client, keyed by the `clientInfo.name` it sends at
//! `initialize`: one table ([`PROFILES`]), each number with where it comes from. Clients
//! not in the table get the full default layout and the configured page budget.
//!
//! The numbers decide two things: how the `instructions` are laid out and cut
//! (`mcp::instructions`), and the page budget of every tool result for that connection
//! (`CodexFree::ctx`).

/// Facts about one client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientProfile {
    /// Short id used in logs and text, e.g. `claude-code`.
    pub id: &'static str,
    /// Human name, e.g. `Claude Code`.
    pub label: &'static str,
    /// `clientInfo.name` values that select this profile (compared exactly, ASCII case
    /// ignored).
    pub names: &'static [&'static str],
    /// The client keeps only this many UTF-16 code units of `instructions` (a JavaScript
    /// string's `length`); `None` when it keeps them whole.
    pub instructions_max_units: Option<usize>,
    /// The client puts the project's `AGENTS.md` into the model's context itself, so the
    /// instructions only point to it.
    pub loads_agents_md: bool,
    /// Largest tool result, in bytes, the client is known to pass to the model whole; pages
    /// for this client are sized below it. `None`: the configured ceiling applies.
    pub result_max_bytes: Option<usize>,
    /// Where the numbers come from.
    pub source: &'static str,
}

/// The known clients.
pub const PROFILES: &[ClientProfile] = &[
    ClientProfile {
        id: "claude-code",
        label: "Claude Code",
        names: &["claude-code"],
        // Measured: Claude Code 2.1.197 keeps the first 2,048 characters of a server's
        // instructions and appends "… [truncated]".
        instructions_max_units: Some(2048),
        // Claude Code loads CLAUDE.md, not AGENTS.md.
        loads_agents_md: false,
        // Its MCP output limit (MAX_MCP_OUTPUT_TOKENS, default 25,000 tokens) is above the
        // default ceiling of 10,000 tokens.
        result_max_bytes: None,
        source: "Claude Code 2.1.197 driven offline: instructions cut at 2,048 characters; reads CLAUDE.md only",
    },
    ClientProfile {
        id: "codex",
        label: "Codex CLI",
        names: &["codex-mcp-client", "codex"],
        instructions_max_units: None,
        // Codex reads AGENTS.md into its prompt itself (project_doc_max_bytes, 32 KiB).
        loads_agents_md: true,
        // With a model it has no metadata for (custom providers, local models) Codex keeps
        // 10,000 bytes of a tool result (head and tail, the middle dropped); 8,000 leaves
        // room for its own framing, so a page is never cut in the middle.
        result_max_bytes: Some(8_000),
        source: "Codex CLI 0.171.0 driven offline: a 25 KB result with unknown model metadata reached the model as head + tail of about 10,000 bytes; AGENTS.md injected by Codex",
    },
];

/// The profile for a `clientInfo.name`, if the client is known.
pub fn profile_for(client_name: &str) -> Option<&'static ClientProfile> {
    let n = client_name.trim();
    PROFILES
        .iter()
        .find(|p| p.names.iter().any(|k| k.eq_ignore_ascii_case(n)))
}

/// Length of `s` as a JavaScript string (UTF-16 code units): what a client written in
/// JavaScript compares with its limit.
pub fn js_len(s: &str) -> usize {
    s.encode_utf16().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_names_map_to_profiles() {
        assert_eq!(profile_for("claude-code").unwrap().id, "claude-code");
        assert_eq!(profile_for("codex-mcp-client").unwrap().id, "codex");
        assert_eq!(profile_for(" Codex-MCP-Client ").unwrap().id, "codex");
        assert!(profile_for("mcp-inspector").is_none());
        assert!(
            profile_for("claude-code-evil").is_none(),
            "exact names only"
        );
        assert_eq!(js_len("é😀"), 3);
    }
}
