//! The Connect page: [`ApiService::connect_view`], [`ApiService::connect_preview`] and
//! [`ApiService::connect_apply`] over `codex_free_connect` (the same plans as the
//! `codex-free connect` command). A user action of the UI behind the admin credential; it
//! is never an MCP tool.

use codex_free_connect::{self as connect, Client};
use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::home::sha256_hex;

use super::ApiService;
use super::dto::{ConnectClient, ConnectPlanView, ConnectRequest, ConnectView};

fn parse_client(name: &str) -> Result<Client> {
    Client::ALL
        .into_iter()
        .find(|c| c.name() == name)
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "unknown client {name:?}: one of codex, claude, pi, chatgpt"
            ))
        })
}

impl ApiService {
    fn connect_target(&self) -> Result<connect::Target> {
        connect::Target::from_env(&self.home, &self.config_path())
    }

    /// Every client: installed, connected, linked, last refresh.
    ///
    /// Errors: none beyond reading the records; a missing `codex-free` CLI shows in
    /// `server_command`.
    pub fn connect_view(&self) -> Result<ConnectView> {
        let (t, server_command) = match self.connect_target() {
            Ok(t) => {
                let mut cmd = vec![t.exe.display().to_string()];
                cmd.extend(t.global_args.iter().cloned());
                cmd.push("serve --stdio".into());
                (Some(t), cmd.join(" "))
            }
            Err(e) => (None, format!("no codex-free CLI found: {e}")),
        };
        let statuses = t.as_ref().map(connect::status).unwrap_or_default();
        let codex_memory = t
            .as_ref()
            .and_then(|t| connect::codex_memory_gap(t, &self.home, &statuses));
        let clients = match &t {
            Some(_) => statuses
                .into_iter()
                .map(|s| ConnectClient {
                    client: s.client.name().into(),
                    installed: s.installed,
                    has_mcp: matches!(s.client, Client::Codex | Client::Claude),
                    connected: s.connected,
                    linked: s.linked,
                    recorded: s.recorded,
                    last_refresh: s.last_refresh,
                    files: s.files.iter().map(|f| f.display().to_string()).collect(),
                    problem: s.problem,
                })
                .collect(),
            None => Vec::new(),
        };
        Ok(ConnectView {
            clients,
            codex_memory,
            server_command,
        })
    }

    fn connect_plan(&self, client: Client, undo: bool) -> Result<(connect::Target, connect::Plan)> {
        let t = self.connect_target()?;
        let plan = if undo {
            connect::plan_undo(&t, client)?
        } else {
            let (cfg, _) = self.current_config();
            connect::plan_connect(&t, client, &connect::Options::default(), &cfg)?
        };
        Ok((t, plan))
    }

    /// The exact change connect (or undo) of `client` would make; writes nothing.
    ///
    /// Errors: [`Error::InvalidArgument`] for an unknown client or a file that does not
    /// parse (file, line, reason).
    pub fn connect_preview(&self, client: &str, undo: bool) -> Result<ConnectPlanView> {
        let client = parse_client(client)?;
        if client == Client::Chatgpt {
            let (cfg, _) = self.current_config();
            let steps =
                connect::chatgpt_steps(cfg.server.port, "<token: codex-free token show>", &cfg);
            return Ok(ConnectPlanView {
                client: client.name().into(),
                undo,
                digest: sha256_hex(steps.as_bytes()),
                diff: steps,
                files: Vec::new(),
                applied: false,
                message: "ChatGPT is connected by hand: nothing is written".into(),
            });
        }
        let (_, plan) = self.connect_plan(client, undo)?;
        Ok(view(&plan, false))
    }

    /// Connect (or undo) `client`. With `req.digest`, refuses when the plan is no longer
    /// the one previewed.
    ///
    /// Errors: as [`Self::connect_preview`]; [`Error::Busy`] when the files changed since
    /// the preview; [`Error::Refused`] for ChatGPT; write failures.
    pub fn connect_apply(&self, client: &str, req: &ConnectRequest) -> Result<ConnectPlanView> {
        let client = parse_client(client)?;
        if client == Client::Chatgpt {
            return Err(Error::Refused(
                "ChatGPT is connected by hand (see the steps); nothing to apply".into(),
            ));
        }
        let (t, plan) = self.connect_plan(client, req.undo)?;
        let v = view(&plan, false);
        if let Some(d) = &req.digest
            && *d != v.digest
        {
            return Err(Error::Busy(
                "the files changed since the preview: review the new diff, then apply".into(),
            ));
        }
        connect::apply(&t, &plan)?;
        Ok(view(&plan, true))
    }
}

fn view(plan: &connect::Plan, applied: bool) -> ConnectPlanView {
    let diff = plan.diff();
    let name = plan.client.name();
    let message = match (plan.is_empty(), plan.undo, applied) {
        (true, false, _) => format!("{name} is already connected: nothing to change"),
        (true, true, _) => format!("{name} was not connected by codex-free: nothing to undo"),
        (false, false, false) => format!("connect {name}: {} file(s) change", plan.changes.len()),
        (false, true, false) => format!("undo {name}: {} file(s) change", plan.changes.len()),
        (false, false, true) => format!("{name} connected"),
        (false, true, true) => format!("{name} disconnected"),
    };
    ConnectPlanView {
        client: name.into(),
        undo: plan.undo,
        digest: sha256_hex(diff.as_bytes()),
        diff,
        files: plan
            .changes
            .iter()
            .map(|c| c.path.display().to_string())
            .collect(),
        applied,
        message,
    }
}
