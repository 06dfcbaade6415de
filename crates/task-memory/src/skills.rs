//! Skills: folders holding a `SKILL.md` whose YAML front matter gives `name` and
//! `description` (the Agent Skills format that Codex and Claude Code read).
//!
//! Folders searched, in precedence order (the first skill of a name wins):
//! 1. project: `<root>/.agents/skills` (Codex's repository scope), `<root>/.codex/skills`
//!    (Codex's older repository scope), `<root>/.claude/skills` (Claude Code's project
//!    skills);
//! 2. user: `$CODEX_HOME/skills` (default `~/.codex/skills`, Codex's user scope),
//!    `~/.agents/skills` (Codex's current user scope), `~/.claude/skills` (Claude Code's
//!    personal skills);
//! 3. Codex Free: `<state home>/skills` and `<state home>/memories/skills` (skills the
//!    memory pipeline writes).
//!
//! Folder names checked against Codex's skills documentation (developers.openai.com
//! /codex/skills) and Claude Code's (`.claude/skills`, `~/.claude/skills`). Codex's admin
//! scope (`/etc/codex/skills`) and its bundled system skills (`$CODEX_HOME/skills/.system`,
//! like every hidden folder) are deliberately not searched.
//!
//! Protected directories: the user and Codex Free folders lie inside protected directories
//! (`~/.codex`, `~/.claude`, the state home), which no other tool may read. Skills may read
//! exactly their own folder there and nothing else protected: every file (each `SKILL.md`
//! found, and any file read) must resolve, symlinks followed, inside the skills folder it
//! was found in, and in no protected directory other than the ones holding that folder.
//! Project folders go through the project's jail like any project path, so a project
//! skill that links into the state home or another agent's home is skipped.
//!
//! Invariant: scanning is bounded ([`MAX_DEPTH`] levels, [`MAX_SKILLS`] skills, front
//! matter read from the first [`FRONT_MATTER_BYTES`] of a file); reading a skill never
//! leaves the skill's folder; every listing and read ends with a continuation line when cut.

use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::config::OutputConfig;
use codex_free_core::jail::{Jail, Protected};

/// Folder levels below a skills folder searched for `SKILL.md` (`<dir>/a/b/c/SKILL.md`).
pub const MAX_DEPTH: usize = 3;
/// Most skills collected over all folders.
pub const MAX_SKILLS: usize = 1000;
/// Bytes of a `SKILL.md` read to find its front matter.
pub const FRONT_MATTER_BYTES: usize = 64 * 1024;
/// Characters of a description shown in listings (Claude Code allows up to 1024 in front
/// matter; listings shorten longer ones).
pub const DESCRIPTION_CHARS: usize = 300;
/// Bytes of the `## Skills` instructions section: Codex's cap on its initial skills list
/// when the model's context window is unknown (8,000 characters, Codex skills docs).
pub const INSTRUCTIONS_SKILLS_BYTES: usize = 8000;

/// Where a skills folder comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkillScope {
    /// Inside the project.
    Project,
    /// The user's Codex or Claude Code folders.
    User,
    /// The Codex Free state home.
    CodexFree,
}

/// One folder searched for skills.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillDir {
    /// Project, user or Codex Free.
    pub scope: SkillScope,
    /// The folder (may not exist).
    pub path: PathBuf,
    /// Short label for listings, e.g. `project .agents/skills` or `~/.claude/skills`.
    pub label: String,
}

/// One skill found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// `name` from the front matter (or the folder name when absent).
    pub name: String,
    /// `description` from the front matter, whitespace collapsed (empty when absent).
    pub description: String,
    /// The `SKILL.md` file.
    pub path: PathBuf,
    /// Label of the folder it was found in.
    pub origin: String,
    /// A problem with the front matter, shown beside the skill (still listed).
    pub problem: Option<String>,
}

impl Skill {
    /// The skill's folder.
    pub fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("/"))
    }
}

/// The set of folders to search, and the rules reading them (see the module doc).
#[derive(Debug, Clone, Default)]
pub struct SkillSearch {
    /// Folders in precedence order.
    pub dirs: Vec<SkillDir>,
    project: Option<Jail>,
    protected: Arc<Protected>,
}

impl SkillSearch {
    /// The standard folders (see module doc) for the project of `project` (none in
    /// multi-project mode before a project is bound), the user's home `user_home`, Codex's
    /// home `codex_home` (`$CODEX_HOME`, default `<user_home>/.codex`) and the Codex Free
    /// state home; `protected` is the server's protected set (the project's jail has it too).
    pub fn standard(
        project: Option<&Jail>,
        protected: &Arc<Protected>,
        user_home: Option<&Path>,
        codex_home: Option<&Path>,
        state_home: &Path,
    ) -> Self {
        let mut dirs = Vec::new();
        let mut add =
            |scope, path: PathBuf, label: String| dirs.push(SkillDir { scope, path, label });
        if let Some(j) = project {
            for rel in [".agents/skills", ".codex/skills", ".claude/skills"] {
                add(
                    SkillScope::Project,
                    j.root().join(rel),
                    format!("project {rel}"),
                );
            }
        }
        let codex_home = codex_home
            .map(Path::to_path_buf)
            .or_else(|| user_home.map(|h| h.join(".codex")));
        if let Some(c) = codex_home {
            add(
                SkillScope::User,
                c.join("skills"),
                "Codex user skills".into(),
            );
        }
        if let Some(h) = user_home {
            add(
                SkillScope::User,
                h.join(".agents/skills"),
                "~/.agents/skills".into(),
            );
            add(
                SkillScope::User,
                h.join(".claude/skills"),
                "~/.claude/skills".into(),
            );
        }
        add(
            SkillScope::CodexFree,
            state_home.join("skills"),
            "Codex Free skills".into(),
        );
        add(
            SkillScope::CodexFree,
            state_home.join("memories/skills"),
            "Codex Free memories".into(),
        );
        Self {
            dirs,
            project: project.cloned(),
            protected: protected.clone(),
        }
    }

    /// [`Self::standard`] for `project` with `HOME` and `CODEX_HOME` from the process
    /// environment.
    pub fn from_env(project: &Jail, state_home: &Path) -> Self {
        let user_home = std::env::home_dir();
        let codex_home = codex_free_core::home::AgentHomes::from_env().codex;
        Self::standard(
            Some(project),
            project.protected(),
            user_home.as_deref(),
            codex_home.as_deref(),
            state_home,
        )
    }

    /// The canonical folder `d` stands for, or `None` when it is missing or may not be
    /// read (a project folder outside the project's jail; a user folder that resolves into
    /// a protected directory other than the one holding it).
    fn base(&self, d: &SkillDir) -> Option<PathBuf> {
        match d.scope {
            SkillScope::Project => self.project.as_ref()?.check_path(&d.label, &d.path).ok(),
            SkillScope::User | SkillScope::CodexFree => {
                let c = d.path.canonicalize().ok()?;
                self.protected
                    .covering_except(&c, &d.path)
                    .is_none()
                    .then_some(c)
            }
        }
    }

    /// `file` (found under `d`, whose canonical folder is `base`) resolved, if it may be
    /// read: inside `base` once symlinks are followed, and not protected (see module doc).
    ///
    /// Errors: [`Error::NotFound`]; [`Error::PathOutsideRoot`] outside the folder;
    /// [`Error::PathProtected`] in a protected directory.
    fn check_file(&self, d: &SkillDir, base: &Path, file: &Path) -> Result<PathBuf> {
        let shown = file.display().to_string();
        let canon = file
            .canonicalize()
            .map_err(|_| Error::NotFound(file.to_path_buf()))?;
        if let Some(p) = self.protected.covering_except(&canon, &d.path) {
            return Err(Error::PathProtected(format!(
                "{shown} is protected: it resolves into {} {}, which no tool may read",
                p.what(),
                p.path().display()
            )));
        }
        if !canon.starts_with(base) {
            return Err(Error::PathOutsideRoot(format!(
                "{shown} resolves to {}, outside its skills folder {}",
                canon.display(),
                base.display()
            )));
        }
        if let (SkillScope::Project, Some(j)) = (d.scope, &self.project) {
            j.check_path(&shown, &canon)?;
        }
        Ok(canon)
    }

    /// Every readable skill with the index of its folder in [`Self::dirs`] and that
    /// folder's canonical path.
    fn discover_with_dirs(&self) -> Vec<(Skill, usize, PathBuf)> {
        let mut out: Vec<(Skill, usize, PathBuf)> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (i, d) in self.dirs.iter().enumerate() {
            let Some(base) = self.base(d) else {
                continue;
            };
            let mut found = Vec::new();
            scan(&d.path, 0, &mut found);
            found.sort();
            for p in found {
                if out.len() >= MAX_SKILLS {
                    return out;
                }
                if let Err(e) = self.check_file(d, &base, &p) {
                    tracing::debug!(error = %e, "skills: skipping a SKILL.md that may not be read");
                    continue;
                }
                let s = parse_skill(&p, &d.label);
                if seen.insert(s.name.clone()) {
                    out.push((s, i, base.clone()));
                }
            }
        }
        out
    }

    /// Every skill found, in precedence order then by path; a name already taken by an
    /// earlier folder is skipped. Missing folders are fine; a `SKILL.md` that resolves out
    /// of its folder or into a protected directory is left out.
    pub fn discover(&self) -> Vec<Skill> {
        self.discover_with_dirs()
            .into_iter()
            .map(|(s, _, _)| s)
            .collect()
    }

    /// `skills_list` text: `- name: description` then the `SKILL.md` path and origin, up
    /// to `output.maxEntries` skills and the tool-output byte cap from `offset`, ending
    /// with a continuation line when cut.
    pub fn list_text(&self, offset: usize, out_cfg: &OutputConfig) -> String {
        let skills = self.discover();
        let cap = codex_free_core::tokens::bytes_for(out_cfg.max_tool_output_tokens);
        render_list(&skills, offset, out_cfg.max_entries, cap, true)
    }

    /// The `## Skills` section of the instructions, at most [`INSTRUCTIONS_SKILLS_BYTES`].
    pub fn instructions_section(&self) -> String {
        let skills = self.discover();
        let mut out = String::from("## Skills\n\n");
        if skills.is_empty() {
            out.push_str("No skills found (folders with a SKILL.md in the project's .agents/skills, .codex/skills or .claude/skills, or the user's).\n");
            return out;
        }
        out.push_str(
            "Load one with `skills_read(name)` when the task matches its description.\n\n",
        );
        out.push_str(&render_list(
            &skills,
            0,
            usize::MAX,
            INSTRUCTIONS_SKILLS_BYTES.saturating_sub(out.len()),
            false,
        ));
        out
    }

    /// `skills_read(name, offset, file)`: lines of the skill's `SKILL.md` (or of `file`
    /// inside its folder) from line `offset` (0-based count of lines skipped), at most
    /// `output.maxFileLines` lines and `min(output.maxFileBytes, tool-output cap)` bytes,
    /// ending with `(showing lines A-B of N — call again with offset=B for the rest)` when
    /// cut. A single line longer than the byte cap is cut inside the line and says so.
    ///
    /// Errors: [`Error::NotFound`]-like [`Error::InvalidArgument`] naming the known skills
    /// when `name` is unknown; [`Error::PathOutsideRoot`] when `file` leaves the skill
    /// folder; [`Error::InvalidArgument`] when `offset` is past the end; [`Error::Io`].
    pub fn read_text(
        &self,
        name: &str,
        offset: usize,
        file: Option<&str>,
        out_cfg: &OutputConfig,
    ) -> Result<String> {
        let found = self.discover_with_dirs();
        let Some((skill, dir, base)) = found.iter().find(|(s, _, _)| s.name == name.trim()) else {
            let mut names: Vec<&str> = found
                .iter()
                .map(|(s, _, _)| s.name.as_str())
                .take(50)
                .collect();
            names.sort();
            return Err(Error::InvalidArgument(format!(
                "no skill named \"{}\"; known skills: {}",
                name.trim(),
                if names.is_empty() {
                    "(none)".to_string()
                } else {
                    names.join(", ")
                }
            )));
        };
        let path = match file.map(str::trim).filter(|f| !f.is_empty()) {
            None => skill.path.clone(),
            Some(f) => resolve_in(skill.dir(), f)?,
        };
        // Checked again at read time: the file may have changed since it was listed.
        let real = self.check_file(&self.dirs[*dir], base, &path)?;
        let text = std::fs::read(&real)
            .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
        let text = String::from_utf8_lossy(&text);
        let max_bytes = out_cfg
            .max_file_bytes
            .min(codex_free_core::tokens::bytes_for(
                out_cfg.max_tool_output_tokens,
            ))
            .max(256);
        let header = format!("{}\n\n", path.display());
        let body = super::page_text(
            &text,
            offset,
            out_cfg.max_file_lines,
            max_bytes.saturating_sub(header.len()),
            codex_free_core::paging::Call::Again,
        )
        .map_err(|e| Error::InvalidArgument(format!("{e} ({})", path.display())))?;
        Ok(header + &body)
    }
}

fn resolve_in(dir: &Path, rel: &str) -> Result<PathBuf> {
    let r = Path::new(rel);
    if r.is_absolute() || r.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(Error::PathOutsideRoot(format!(
            "file = \"{rel}\" must be a relative path inside the skill folder {} (no .. or absolute paths)",
            dir.display()
        )));
    }
    let p = dir.join(r);
    let canon = std::fs::canonicalize(&p).map_err(|_| Error::NotFound(p.clone()))?;
    let base = std::fs::canonicalize(dir).map_err(|_| Error::NotFound(dir.to_path_buf()))?;
    if !canon.starts_with(&base) {
        return Err(Error::PathOutsideRoot(format!(
            "file = \"{rel}\" resolves outside the skill folder {}",
            base.display()
        )));
    }
    if !canon.is_file() {
        return Err(Error::InvalidArgument(format!(
            "file = \"{rel}\" is not a file"
        )));
    }
    Ok(canon)
}

fn render_list(
    skills: &[Skill],
    offset: usize,
    max_items: usize,
    max_bytes: usize,
    with_header: bool,
) -> String {
    let total = skills.len();
    let start = offset.min(total);
    let mut out = String::new();
    if with_header {
        out.push_str(&format!(
            "{total} skill{} found; read one with skills_read(name).\n",
            if total == 1 { "" } else { "s" }
        ));
    }
    let reserve = 120;
    let mut shown = 0;
    for s in skills.iter().skip(start) {
        if shown >= max_items {
            break;
        }
        let desc = shorten(&s.description, DESCRIPTION_CHARS);
        let mut entry = if desc.is_empty() {
            format!("- {}\n", s.name)
        } else {
            format!("- {}: {desc}\n", s.name)
        };
        entry.push_str(&format!("  {} ({})\n", s.path.display(), s.origin));
        if let Some(p) = &s.problem {
            entry.push_str(&format!("  note: {p}\n"));
        }
        if out.len() + entry.len() + reserve > max_bytes && shown > 0 {
            break;
        }
        out.push_str(&entry);
        shown += 1;
    }
    if start + shown < total {
        out.push_str(&super::continuation("skills", start, shown, total));
        if !with_header {
            out.push_str(" — use skills_list");
        }
        out.push('\n');
    }
    out
}

fn shorten(s: &str, max_chars: usize) -> String {
    if s.chars().count() <= max_chars {
        return s.to_string();
    }
    let mut t: String = s.chars().take(max_chars.saturating_sub(1)).collect();
    t.push('…');
    t
}

fn scan(dir: &Path, depth: usize, found: &mut Vec<PathBuf>) {
    if depth > MAX_DEPTH || found.len() >= MAX_SKILLS {
        return;
    }
    let skill = dir.join("SKILL.md");
    if depth > 0 && skill.is_file() {
        found.push(skill);
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut children: Vec<PathBuf> = rd
        .flatten()
        .filter(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            // Hidden folders are skipped, Codex's `.system` folder of its bundled skills
            // too: the client lists those itself, and they are not the user's.
            !n.starts_with('.')
        })
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    children.sort();
    for c in children {
        scan(&c, depth + 1, found);
    }
}

/// Parse one `SKILL.md`: front matter between a first line `---` and the next `---` (or
/// `...`) line, as YAML; `name` and `description` must be strings. Problems are recorded
/// on the skill rather than hiding it.
pub fn parse_skill(path: &Path, origin: &str) -> Skill {
    let folder = path
        .parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "skill".into());
    let mut skill = Skill {
        name: folder,
        description: String::new(),
        path: path.to_path_buf(),
        origin: origin.to_string(),
        problem: None,
    };
    let mut head = Vec::new();
    if let Err(e) = std::fs::File::open(path)
        .and_then(|f| f.take(FRONT_MATTER_BYTES as u64).read_to_end(&mut head))
    {
        skill.problem = Some(format!("unreadable: {e}"));
        return skill;
    }
    let head = String::from_utf8_lossy(&head);
    match front_matter(&head) {
        None => {
            skill.problem =
                Some("no YAML front matter (--- name/description ---) at the top".into())
        }
        Some(yaml) => match serde_yaml_ng::from_str::<serde_yaml_ng::Value>(yaml) {
            Err(e) => match lenient_fields(yaml) {
                // Descriptions like `description: Cut a release: bump, tag` are invalid YAML
                // but common in the wild; read such flat `key: value` lines literally.
                (Some(n), Some(d)) => {
                    skill.name = n;
                    skill.description = d;
                }
                _ => skill.problem = Some(format!("front matter is not valid YAML: {e}")),
            },
            Ok(v) => {
                let get = |k: &str| {
                    v.get(k)
                        .and_then(serde_yaml_ng::Value::as_str)
                        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
                };
                match get("name").filter(|n| !n.is_empty()) {
                    Some(n) => skill.name = n,
                    None => {
                        skill.problem =
                            Some("front matter has no name; the folder name is used".into())
                    }
                }
                match get("description") {
                    Some(d) => skill.description = d,
                    None => skill.problem = Some("front matter has no description".into()),
                }
            }
        },
    }
    skill
}

/// `name` and `description` read from flat `key: value` lines (no YAML), quotes stripped.
fn lenient_fields(yaml: &str) -> (Option<String>, Option<String>) {
    let field = |key: &str| {
        yaml.lines().find_map(|l| {
            let rest = l.strip_prefix(key)?.strip_prefix(':')?.trim();
            let rest = rest
                .strip_prefix('"')
                .and_then(|r| r.strip_suffix('"'))
                .unwrap_or(rest);
            let rest = rest
                .strip_prefix('\'')
                .and_then(|r| r.strip_suffix('\''))
                .unwrap_or(rest);
            (!rest.is_empty()).then(|| rest.to_string())
        })
    };
    (field("name"), field("description"))
}

fn front_matter(text: &str) -> Option<&str> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next()?;
    if first.trim_end() != "---" {
        return None;
    }
    let start = first.len();
    let mut pos = start;
    for l in lines {
        let t = l.trim_end();
        if t == "---" || t == "..." {
            return Some(&text[start..pos]);
        }
        pos += l.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_skill(dir: &Path, folder: &str, body: &str) {
        let d = dir.join(folder);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("SKILL.md"), body).unwrap();
    }

    struct Env {
        project: tempfile::TempDir,
        user: tempfile::TempDir,
        state: tempfile::TempDir,
    }

    impl Env {
        /// The protected set a server would compute: the state home and the user's
        /// `.codex` and `.claude`.
        fn protected(&self) -> Arc<Protected> {
            let mut p = Protected::none();
            p.add(self.state.path(), "the state home");
            p.add(&self.user.path().join(".codex"), "Codex's home");
            p.add(&self.user.path().join(".claude"), "Claude Code's home");
            Arc::new(p)
        }

        fn search(&self) -> SkillSearch {
            let protected = self.protected();
            let jail = Jail::new(self.project.path(), protected.clone()).unwrap();
            SkillSearch::standard(
                Some(&jail),
                &protected,
                Some(self.user.path()),
                None,
                self.state.path(),
            )
        }
    }

    #[test]
    fn skills_never_lead_into_protected_directories() {
        let e = env();
        let token = e.state.path().join("server-token");
        std::fs::write(&token, "SECRET-TOKEN").unwrap();
        std::fs::write(e.user.path().join(".claude/.credentials.json"), "CREDS").unwrap();
        // A project skill whose SKILL.md is a link to the token.
        let evil = e.project.path().join(".agents/skills/evil");
        std::fs::create_dir_all(&evil).unwrap();
        std::os::unix::fs::symlink(&token, evil.join("SKILL.md")).unwrap();
        // A project skills folder that is a link into the state home's skills.
        std::fs::remove_dir_all(e.project.path().join(".claude/skills")).unwrap();
        std::os::unix::fs::symlink(
            e.state.path().join("skills"),
            e.project.path().join(".claude/skills"),
        )
        .unwrap();
        // A user skill (in ~/.claude, which is protected but granted) linking to the token,
        // and a file inside a granted skill linking to Claude's credentials.
        let u = e.user.path().join(".claude/skills/leak");
        std::fs::create_dir_all(&u).unwrap();
        std::os::unix::fs::symlink(&token, u.join("SKILL.md")).unwrap();
        let builtin = e.user.path().join(".codex/skills/builtin");
        std::os::unix::fs::symlink(
            e.user.path().join(".claude/.credentials.json"),
            builtin.join("creds"),
        )
        .unwrap();
        let s = e.search();
        let found = s.discover();
        let names: Vec<&str> = found.iter().map(|s| s.name.as_str()).collect();
        // review (project .claude/skills) is gone with its folder; bare still comes from
        // the state home's own skills folder, under its own label.
        assert_eq!(names, ["deploy", "builtin", "bare"], "{found:?}");
        assert_eq!(found[2].origin, "Codex Free skills");
        let cfg = OutputConfig::default();
        for (name, file) in [("evil", None), ("leak", None), ("builtin", Some("creds"))] {
            let r = s.read_text(name, 0, file, &cfg);
            let text = format!("{r:?}");
            assert!(r.is_err(), "{name}: {text}");
            assert!(
                !text.contains("SECRET-TOKEN") && !text.contains("CREDS"),
                "{text}"
            );
        }
        // The granted folders themselves still read.
        assert!(
            s.read_text("builtin", 0, None, &cfg)
                .unwrap()
                .contains("bundled")
        );
        let listing = s.list_text(0, &cfg);
        assert!(
            !listing.contains("SECRET-TOKEN") && !listing.contains("evil"),
            "{listing}"
        );
    }

    fn env() -> Env {
        let e = Env {
            project: tempfile::tempdir().unwrap(),
            user: tempfile::tempdir().unwrap(),
            state: tempfile::tempdir().unwrap(),
        };
        write_skill(
            &e.project.path().join(".agents/skills"),
            "deploy",
            "---\nname: deploy\ndescription: Ship the app.\n  Use for releases.\n---\n# Deploy\nstep\n",
        );
        write_skill(
            &e.project.path().join(".claude/skills"),
            "review",
            "---\nname: review\ndescription: >-\n  Review a diff\n  carefully.\n---\nbody\n",
        );
        write_skill(
            &e.user.path().join(".claude/skills"),
            "deploy-user",
            "---\nname: deploy\ndescription: shadowed by the project one\n---\n",
        );
        write_skill(
            &e.user.path().join(".codex/skills"),
            "builtin",
            "---\nname: builtin\ndescription: bundled\n---\n",
        );
        // Codex's own bundled skills: never listed (they are Codex's, not the user's).
        write_skill(
            &e.user.path().join(".codex/skills/.system"),
            "imagegen",
            "---\nname: imagegen\ndescription: Codex system skill\n---\n",
        );
        write_skill(
            &e.state.path().join("skills"),
            "bare",
            "no front matter here\n",
        );
        std::fs::create_dir_all(e.user.path().join(".codex/skills/.git/x")).unwrap();
        e
    }

    #[test]
    fn discovers_in_precedence_order_with_shadowing() {
        let e = env();
        let s = e.search().discover();
        let names: Vec<&str> = s.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["deploy", "review", "builtin", "bare"]);
        assert_eq!(s[0].description, "Ship the app. Use for releases.");
        assert_eq!(s[0].origin, "project .agents/skills");
        assert_eq!(s[1].description, "Review a diff carefully.");
        assert!(
            s[3].problem
                .as_deref()
                .unwrap()
                .contains("no YAML front matter")
        );
    }

    #[test]
    fn colon_in_plain_description_is_read_leniently() {
        let d = tempfile::tempdir().unwrap();
        write_skill(
            d.path(),
            "rel",
            "---\nname: release\ndescription: Cut a release: bump, tag.\n---\n",
        );
        let s = parse_skill(&d.path().join("rel/SKILL.md"), "x");
        assert_eq!(
            (s.name.as_str(), s.description.as_str(), s.problem),
            ("release", "Cut a release: bump, tag.", None)
        );
        write_skill(d.path(), "bad", "---\nname: [unclosed\n---\n");
        assert!(
            parse_skill(&d.path().join("bad/SKILL.md"), "x")
                .problem
                .unwrap()
                .contains("not valid YAML")
        );
    }

    #[test]
    fn list_is_bounded_with_continuation() {
        let e = env();
        let cfg = OutputConfig {
            max_entries: 2,
            ..Default::default()
        };
        let t = e.search().list_text(0, &cfg);
        assert!(t.starts_with("4 skills found"), "{t}");
        assert!(
            t.contains("- deploy: Ship the app. Use for releases.\n"),
            "{t}"
        );
        assert!(
            t.ends_with("(showing skills 1-2 of 4 — call again with offset=2 for the rest)\n"),
            "{t}"
        );
        let t2 = e.search().list_text(2, &cfg);
        assert!(
            t2.contains("- builtin: bundled") && t2.contains("- bare\n"),
            "{t2}"
        );
        assert!(!t2.contains("call again"), "{t2}");
    }

    #[test]
    fn read_pages_with_exact_continuation() {
        let e = env();
        let body: String = (1..=25).map(|i| format!("line {i}\n")).collect();
        write_skill(
            &e.project.path().join(".codex/skills"),
            "long",
            &format!("---\nname: long\ndescription: d\n---\n{body}"),
        );
        let cfg = OutputConfig {
            max_file_lines: 10,
            ..Default::default()
        };
        let s = e.search();
        let mut seen = String::new();
        let mut offset = 0;
        loop {
            let t = s.read_text("long", offset, None, &cfg).unwrap();
            let (_path, rest) = t.split_once("\n\n").unwrap();
            match codex_free_core::paging::parse_footer(rest) {
                Some(c) => {
                    let tail = &rest[c.content_end..];
                    assert!(
                        tail.contains(&format!("{}-{} of 29", offset + 1, offset + 10)),
                        "{tail}"
                    );
                    seen.push_str(&rest[..c.content_end]);
                    offset += 10;
                }
                None => {
                    seen.push_str(rest);
                    break;
                }
            }
        }
        assert_eq!(
            seen,
            format!("---\nname: long\ndescription: d\n---\n{body}")
        );
        assert!(s.read_text("long", 99, None, &cfg).is_err());
    }

    #[test]
    fn read_other_file_stays_in_folder() {
        let e = env();
        let dir = e.project.path().join(".agents/skills/deploy");
        std::fs::create_dir_all(dir.join("references")).unwrap();
        std::fs::write(dir.join("references/api.md"), "api docs\n").unwrap();
        let cfg = OutputConfig::default();
        let s = e.search();
        assert!(
            s.read_text("deploy", 0, Some("references/api.md"), &cfg)
                .unwrap()
                .ends_with("api docs\n")
        );
        assert_eq!(
            s.read_text("deploy", 0, Some("../review/SKILL.md"), &cfg)
                .unwrap_err()
                .code(),
            "path_outside_root"
        );
        assert_eq!(
            s.read_text("deploy", 0, Some("/etc/passwd"), &cfg)
                .unwrap_err()
                .code(),
            "path_outside_root"
        );
        std::os::unix::fs::symlink("/etc/hostname", dir.join("esc")).unwrap();
        assert_eq!(
            s.read_text("deploy", 0, Some("esc"), &cfg)
                .unwrap_err()
                .code(),
            "path_outside_root"
        );
        let err = s.read_text("nope", 0, None, &cfg).unwrap_err().to_string();
        assert!(
            err.contains("known skills: ") && err.contains("deploy"),
            "{err}"
        );
    }

    #[test]
    fn long_single_line_is_cut_inside_the_line() {
        let e = env();
        write_skill(
            &e.state.path().join("skills"),
            "wide",
            &format!(
                "---\nname: wide\ndescription: d\n---\n{}\nafter\n",
                "é".repeat(4000)
            ),
        );
        let cfg = OutputConfig {
            max_file_bytes: 1024,
            ..Default::default()
        };
        let t = e.search().read_text("wide", 4, None, &cfg).unwrap();
        assert!(t.len() <= 1024, "{}", t.len());
        assert!(
            t.contains("(line 5 is 8001 bytes; showing its first"),
            "{t}"
        );
        assert!(
            e.search()
                .read_text("wide", 5, None, &cfg)
                .unwrap()
                .contains("after\n")
        );
    }

    #[test]
    fn instructions_section_is_capped() {
        let e = env();
        for i in 0..200 {
            write_skill(
                &e.state.path().join("skills"),
                &format!("s{i:03}"),
                &format!(
                    "---\nname: s{i:03}\ndescription: {}\n---\n",
                    "word ".repeat(40)
                ),
            );
        }
        let t = e.search().instructions_section();
        assert!(t.len() <= INSTRUCTIONS_SKILLS_BYTES, "{}", t.len());
        assert!(t.starts_with("## Skills\n\n"));
        assert!(
            t.trim_end().ends_with("for the rest) — use skills_list"),
            "{}",
            &t[t.len() - 200..]
        );
    }
}
