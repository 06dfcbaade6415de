//! The memory tools as plain functions over (state home, config snapshot, scope): what the
//! MCP layer (`mcp/tools_task_memory.rs`) and the UI's API call. Each returns the text of one
//! tool result, never more than `output.maxToolOutputTokens` (x 4 bytes), paged with a
//! continuation line when longer.
//!
//! Invariant: in multi-project mode every project-scoped call resolves the project through
//! the conversation's binding ([`Bindings::project_for`]) and fails closed without one; no
//! function here writes anything but `memory.json` and binding records.

use std::path::Path;

use super::bindings::{self, Bindings, DEFAULT_PROJECTS_PAGE};
use super::brief::{self, ProjectTexts};
use super::skills::SkillSearch;
use super::store::TaskMemory;
use super::{
    GetAgentBriefArgs, ListProjectsArgs, RecallArgs, RememberArgs, SetProjectRootArgs,
    SkillsListArgs, SkillsReadArgs, UpdatePlanArgs,
};
use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::config::Config;
use codex_free_core::jail::Jail;
use codex_free_core::paging::Call;

/// Which project(s) a call may touch.
#[derive(Debug, Clone, Copy)]
pub enum Scope<'a> {
    /// One project for every call.
    Single {
        /// The project's jail (canonical root, protected directories).
        project: &'a Jail,
    },
    /// Multi-project mode: the call's conversation picks a project under the access root.
    Multi {
        /// The access root's jail; a bound project gets a jail with the same protection.
        access: &'a Jail,
        /// The call's raw `_meta["openai/session"]` value, if sent.
        session: Option<&'a str>,
    },
}

/// Environment text and AGENTS.md text of a project (owned), produced by the caller
/// (the MCP layer has the tools that compute them).
#[derive(Debug, Clone, Default)]
pub struct OwnedTexts {
    /// Environment description.
    pub environment: String,
    /// AGENTS.md content, if any.
    pub agents_md: Option<String>,
}

/// The memory tools for one call.
pub struct Service<'a> {
    /// State home.
    pub home: &'a Path,
    /// Config snapshot of this call.
    pub config: &'a Config,
    /// Single or multi-project scope.
    pub scope: Scope<'a>,
    /// Computes environment and AGENTS.md for a project.
    pub texts: &'a dyn Fn(&Jail) -> OwnedTexts,
}

impl Service<'_> {
    fn multi(&self) -> bool {
        matches!(self.scope, Scope::Multi { .. })
    }

    fn cap(&self) -> usize {
        codex_free_core::tokens::bytes_for(self.config.output.max_tool_output_tokens)
    }

    fn page(&self, text: &str, offset: Option<usize>, call: Call<'_>) -> Result<String> {
        super::page_text(text, offset.unwrap_or(0), usize::MAX, self.cap(), call)
    }

    fn bindings(&self) -> Result<(Bindings, String)> {
        match self.scope {
            Scope::Single { project } => Err(Error::InvalidArgument(format!(
                "this server serves one project ({}); list_projects and set_project_root exist only in multi-project mode (serve --access-root DIR)",
                project.root().display()
            ))),
            Scope::Multi { access, session } => {
                let session = session.ok_or_else(|| {
                    Error::Binding(bindings::missing_session_message("it is missing"))
                })?;
                if session.trim().is_empty() {
                    return Err(Error::Binding(bindings::missing_session_message(
                        "it is empty",
                    )));
                }
                Ok((Bindings::new(self.home, access), session.to_string()))
            }
        }
    }

    /// The project of this call: the single project, or the conversation's bound project.
    ///
    /// Errors (multi-project mode): [`Error::Binding`] without a session value, without a
    /// binding, or with a stale binding; [`Error::PathProtected`] for a bound project that
    /// lies in a protected directory.
    pub fn project(&self) -> Result<Jail> {
        match self.scope {
            Scope::Single { project } => Ok(project.clone()),
            Scope::Multi { .. } => {
                let (b, s) = self.bindings()?;
                b.project_jail(&b.project_for(&s)?)
            }
        }
    }

    fn memory(&self) -> Result<TaskMemory> {
        TaskMemory::open(
            self.home,
            &self.config.memory,
            self.project()?.root(),
            self.multi(),
        )
    }

    /// `remember`: set, replace or delete one note.
    pub fn remember(&self, a: &RememberArgs) -> Result<String> {
        self.memory()?.remember(a)
    }

    /// `update_plan`: replace the saved plan.
    pub fn update_plan(&self, a: &UpdatePlanArgs) -> Result<String> {
        self.memory()?.update_plan(a)
    }

    /// `recall`: the `## Saved state` section, paged by lines.
    pub fn recall(&self, a: &RecallArgs) -> Result<String> {
        let text = self.memory()?.recall()?;
        self.page(&text, a.offset, Call::Again)
    }

    /// `skills_list`.
    pub fn skills_list(&self, a: &SkillsListArgs) -> Result<String> {
        let project = self.project()?;
        Ok(SkillSearch::from_env(&project, self.home)
            .list_text(a.offset.unwrap_or(0), &self.config.output))
    }

    /// `skills_read`.
    pub fn skills_read(&self, a: &SkillsReadArgs) -> Result<String> {
        let project = self.project()?;
        SkillSearch::from_env(&project, self.home).read_text(
            &a.name,
            a.offset.unwrap_or(0),
            a.file.as_deref(),
            &self.config.output,
        )
    }

    /// MCP `instructions` at initialize: full project text (single) or project-neutral
    /// brief (multi). Never fails.
    pub fn instructions(&self) -> String {
        match self.scope {
            Scope::Single { project } => {
                let t = (self.texts)(project);
                brief::single_project_instructions(
                    self.home,
                    self.config,
                    project,
                    ProjectTexts {
                        environment: &t.environment,
                        agents_md: t.agents_md.as_deref(),
                    },
                )
            }
            Scope::Multi { .. } => brief::multi_project_instructions(),
        }
    }

    fn bound_text(&self, project: &Jail, restored: bool) -> String {
        let t = (self.texts)(project);
        brief::bound_brief(
            self.home,
            self.config,
            project,
            restored,
            ProjectTexts {
                environment: &t.environment,
                agents_md: t.agents_md.as_deref(),
            },
        )
    }

    /// `get_agent_brief`: single mode, the same text as the instructions; multi
    /// mode, the bound project's text (restored), or the brief with "set_project_root is
    /// required" and candidates. Paged by lines.
    ///
    /// Errors (multi-project mode): [`Error::Binding`] without a session value or with a
    /// stale binding (fail closed); [`Error::Corrupt`] for an unreadable record.
    pub fn get_agent_brief(&self, a: &GetAgentBriefArgs) -> Result<String> {
        let text = match self.scope {
            Scope::Single { .. } => self.instructions(),
            Scope::Multi { .. } => {
                let (b, s) = self.bindings()?;
                match b.restore(&s)? {
                    Some(binding) => self.bound_text(&b.project_jail(&binding.project_root)?, true),
                    None => brief::unbound_brief(&b, self.projects_page()),
                }
            }
        };
        self.page(&text, a.offset, Call::Again)
    }

    fn projects_page(&self) -> usize {
        self.config.output.max_entries.min(DEFAULT_PROJECTS_PAGE)
    }

    /// `list_projects` (multi-project mode). Needs no conversation: the candidates are the
    /// same for every one.
    pub fn list_projects(&self, a: &ListProjectsArgs) -> Result<String> {
        let b = match self.scope {
            Scope::Multi { access, .. } => Bindings::new(self.home, access),
            Scope::Single { .. } => self.bindings()?.0,
        };
        let text = b.list_projects_text(a.offset.unwrap_or(0), self.projects_page());
        // The page size already bounds it; the byte cap is a backstop for long paths.
        self.page(&text, None, Call::Tool("list_projects"))
    }

    /// `set_project_root`: bind the conversation, then return the project's text
    /// (environment, saved state, skills, AGENTS.md), paged; the continuation names
    /// `get_agent_brief`.
    pub fn set_project_root(&self, a: &SetProjectRootArgs) -> Result<String> {
        let (b, s) = self.bindings()?;
        let out = b.bind(&s, &a.path)?;
        let head = match &out.previous {
            Some(prev) => format!(
                "This conversation now works on {} (it was on {}).\n\n",
                out.binding.project_root.display(),
                prev.display()
            ),
            None => format!(
                "This conversation now works on {}.\n\n",
                out.binding.project_root.display()
            ),
        };
        let project = b.project_jail(&out.binding.project_root)?;
        let text = head + &self.bound_text(&project, false);
        self.page(&text, None, Call::Tool("get_agent_brief"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use codex_free_core::jail::Protected;
    use std::sync::Arc;

    fn texts(_: &Jail) -> OwnedTexts {
        OwnedTexts {
            environment: "os: test".into(),
            agents_md: Some("# Rules\nbe nice\n".into()),
        }
    }

    #[test]
    fn single_mode_brief_matches_instructions_and_orders_sections() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let jail = Jail::new(project.path(), Arc::new(Protected::none())).unwrap();
        let config = Config::default();
        let svc = Service {
            home: home.path(),
            config: &config,
            scope: Scope::Single { project: &jail },
            texts: &texts,
        };
        svc.remember(&RememberArgs {
            key: "k".into(),
            value: "v".into(),
        })
        .unwrap();
        let i = svc.instructions();
        let pos = |s: &str| i.find(s).unwrap_or_else(|| panic!("{s} missing in {i}"));
        assert!(pos("# Codex Free") < pos("## Environment"));
        assert!(pos("## Environment") < pos("## Saved state"));
        assert!(pos("## Saved state") < pos("## Skills"));
        assert!(pos("## Skills") < pos("## Project instructions (AGENTS.md)"));
        assert!(i.contains("- `k`: v"));
        assert_eq!(
            svc.get_agent_brief(&GetAgentBriefArgs::default()).unwrap(),
            i
        );
        assert!(svc.list_projects(&ListProjectsArgs::default()).is_err());
    }

    #[test]
    fn multi_mode_requires_session_and_binding() {
        let home = tempfile::tempdir().unwrap();
        let access = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(access.path().join("p1/.git")).unwrap();
        let ar = Jail::new(access.path(), Arc::new(Protected::none())).unwrap();
        let config = Config::default();
        let svc = |session| Service {
            home: home.path(),
            config: &config,
            scope: Scope::Multi {
                access: &ar,
                session,
            },
            texts: &texts,
        };
        let e = svc(None)
            .remember(&RememberArgs {
                key: "k".into(),
                value: "v".into(),
            })
            .unwrap_err();
        assert!(e.to_string().contains("openai/session"), "{e}");
        let e = svc(Some("s1"))
            .remember(&RememberArgs {
                key: "k".into(),
                value: "v".into(),
            })
            .unwrap_err();
        assert!(e.to_string().contains("set_project_root"), "{e}");
        let b = svc(Some("s1"))
            .get_agent_brief(&GetAgentBriefArgs::default())
            .unwrap();
        assert!(
            b.contains("set_project_root(path)` before") && b.contains("- p1  ("),
            "{b}"
        );
        let t = svc(Some("s1"))
            .set_project_root(&SetProjectRootArgs { path: "p1".into() })
            .unwrap();
        assert!(
            t.contains("now works on") && t.contains("## Saved state"),
            "{t}"
        );
        svc(Some("s1"))
            .remember(&RememberArgs {
                key: "k".into(),
                value: "v".into(),
            })
            .unwrap();
        assert!(
            svc(Some("s1"))
                .get_agent_brief(&GetAgentBriefArgs::default())
                .unwrap()
                .contains("- `k`: v")
        );
        // Another conversation is not bound.
        assert!(svc(Some("s2")).recall(&RecallArgs::default()).is_err());
    }

    #[test]
    fn tool_output_respects_the_token_cap() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let jail = Jail::new(project.path(), Arc::new(Protected::none())).unwrap();
        let mut config = Config::default();
        config.output.max_tool_output_tokens = 500; // 2000 bytes
        let svc = Service {
            home: home.path(),
            config: &config,
            scope: Scope::Single { project: &jail },
            texts: &texts,
        };
        for i in 0..30 {
            svc.remember(&RememberArgs {
                key: format!("note-{i:02}"),
                value: "some text that is long enough ".repeat(3),
            })
            .unwrap();
        }
        let full = svc.memory().unwrap().recall().unwrap();
        assert!(full.len() > 2000);
        let (got, _) = codex_free_testkit::pages::follow_content(20, |c| {
            let page = svc
                .recall(&RecallArgs {
                    offset: c.map(|c| c.offset().unwrap() as usize),
                })
                .unwrap();
            assert!(page.len() <= 2000, "{}", page.len());
            page
        });
        assert_eq!(got, full);
    }
}
