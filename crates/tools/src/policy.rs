//! The exec policy: which command lines `exec_command` may run.
//!
//! `exec.mode = "unrestricted"` runs anything. `exec.mode = "allowlist"` (the default)
//! parses the command line with tree-sitter-bash (the grammar Codex uses for its own
//! command-safety checks) and walks the **whole** syntax tree. Every command position —
//! after `|`, `|&`, `&&`, `||`, `;`, `&`, a newline, inside `( )`, `{ }`, `if`/`while`/
//! `for`/`case` bodies, and the programs run by the wrappers `env`, `timeout`, `nice`,
//! `nohup`, `stdbuf`, `xargs`, `command`, `time` and by `find -exec` — must name a program
//! on the allowlist ([`DEFAULT_ALLOWED`] plus `exec.extraAllowedCommands`).
//!
//! Refused whatever the allowlist says, because the hidden command line they carry cannot
//! be checked before it runs: command substitution (`$(...)` and backticks), process
//! substitution (`<(...)`, `>(...)`), arithmetic (`$((...))`, `((...))`, C-style `for`,
//! numeric comparisons inside `[[ ]]`, `${x:offset}`, array subscripts and `${!x}`
//! indirection — bash evaluates array subscripts inside those, and a subscript can hold a
//! command substitution), function definitions, command names that are not plain words,
//! assignments to variables that change which program runs (`PATH`, `LD_*`, `BASH_ENV`,
//! `*PAGER`, `*EDITOR`, `GIT_SSH_COMMAND`, ...), `sed -i`, output redirections and `cd`
//! to paths outside the project (absolute paths must be inside the root, `/tmp/` or
//! `/dev/null`; relative ones may not contain `..`), and anything the parser could not
//! parse cleanly. Unknown syntax is refused (fail closed).
//!
//! This is a guardrail against a model running the wrong thing by mistake, **not the
//! boundary**: allowed interpreters (`python3 -c`, `node -e`, `awk`, `make`, `cargo run`,
//! `npm run`, `git` hooks and aliases) can start anything. The boundary is the OS sandbox
//! every command runs in ([`crate::exec::sandbox`]); without it (`exec.sandbox = "off"`,
//! or no Landlock), they can do anything the user can.
//!
//! Invariant: in allowlist mode a command line runs only if [`check`] walked every node of
//! its syntax tree and found each program it starts on the allowlist.

use std::path::{Component, Path};

use tree_sitter::{Node, Parser};

use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::config::{ExecConfig, ExecMode};

/// Programs allowed by default in `exec.mode = "allowlist"`: read-only inspection tools,
/// text filters, version control and the usual build/test tool chains. Chosen for this
/// project (Codex's "known safe" list is much narrower because it auto-approves; ours only
/// has to stop accidents). Not included on purpose: shells (`sh`, `bash`), `eval`, `exec`,
/// `source`/`.`, privilege tools (`sudo`), destructive file tools (`rm`, `mv`, `cp`,
/// `chmod`, `dd`), `tee`, pagers and editors.
#[rustfmt::skip]
pub const DEFAULT_ALLOWED: &[&str] = &[
    // inspection
    "ls", "cat", "head", "tail", "wc", "file", "stat", "du", "df", "tree", "pwd", "realpath",
    "readlink", "basename", "dirname", "which", "type", "whoami", "uname", "nproc", "date",
    "env", "printenv",
    // search
    "grep", "egrep", "fgrep", "rg", "find", "fd", "fdfind",
    // text filters
    "sed", "awk", "cut", "tr", "sort", "uniq", "diff", "cmp", "comm", "paste", "column",
    "nl", "fold", "rev", "tac", "jq", "xxd", "od", "hexdump", "strings", "sha256sum",
    "sha1sum", "md5sum", "base64", "iconv",
    // shell utilities and builtins
    "echo", "printf", "seq", "true", "false", "test", ":", "sleep", "read", "cd", "export",
    "unset", "set", "exit", "wait", "break", "continue", "xargs", "timeout", "nice", "nohup",
    "stdbuf", "time", "command", "mkdir", "touch",
    // version control
    "git",
    // build and test tool chains
    "cargo", "rustc", "rustup", "rustfmt", "clippy-driver", "make", "cmake", "ctest",
    "ninja", "gcc", "g++", "cc", "c++", "clang", "clang++", "ld", "go", "gofmt", "npm",
    "npx", "node", "pnpm", "yarn", "tsc", "deno", "bun", "python", "python3", "pip", "pip3",
    "pytest", "uv", "ruff", "mypy", "java", "javac", "mvn", "gradle",
];

/// Wrappers whose operand is itself a program to check (see [`inner_program`]).
const WRAPPERS: &[&str] = &[
    "env", "timeout", "nice", "nohup", "stdbuf", "xargs", "command", "time",
];

/// Check `cmd` against the policy in `exec`. `root` is the canonical project root (used to
/// judge `cd` targets and output redirections).
///
/// Errors: [`Error::Refused`] naming the offending program or construct, the part of the
/// command line it was found in, and how to allow it (`exec.extraAllowedCommands`, or
/// `exec.mode = "unrestricted"`); [`Error::InvalidArgument`] when `cmd` is blank.
pub fn check(cmd: &str, exec: &ExecConfig, root: &Path) -> Result<()> {
    if cmd.trim().is_empty() {
        return Err(Error::InvalidArgument(
            "cmd is empty: pass the command line to run".into(),
        ));
    }
    if exec.mode == ExecMode::Unrestricted {
        return Ok(());
    }
    let tree = parse(cmd)?;
    let walker = Walker {
        src: cmd,
        allowed: Allowed {
            extra: &exec.extra_allowed_commands,
        },
        root,
    };
    walker.node(tree.root_node())
}

/// `cmd`'s bash syntax tree.
///
/// Errors: [`Error::Refused`] when the grammar cannot load or the line cannot be parsed
/// (refused, not run: a line we cannot read is a line we cannot judge).
fn parse(cmd: &str) -> Result<tree_sitter::Tree> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .map_err(|e| Error::Refused(format!("exec policy: cannot load the bash grammar ({e})")))?;
    parser
        .parse(cmd, None)
        .ok_or_else(|| Error::Refused("exec policy: the command line could not be parsed".into()))
}

/// The programs a command line would start, in order, without judging them (for tests and
/// diagnostics). Errors as [`check`] for constructs that hide programs.
pub fn programs(cmd: &str) -> Result<Vec<String>> {
    let tree = parse(cmd)?;
    let mut out = Vec::new();
    collect_programs(tree.root_node(), cmd, &mut out);
    Ok(out)
}

fn collect_programs(n: Node, src: &str, out: &mut Vec<String>) {
    if n.kind() == "command_name" {
        out.push(src[n.byte_range()].to_string());
    }
    let mut c = n.walk();
    for ch in n.children(&mut c) {
        collect_programs(ch, src, out);
    }
}

struct Allowed<'a> {
    extra: &'a [String],
}

impl Allowed<'_> {
    fn contains(&self, name: &str) -> bool {
        self.extra.iter().any(|e| e == name)
            || (!name.contains('/') && DEFAULT_ALLOWED.contains(&name))
    }
}

struct Walker<'a> {
    src: &'a str,
    allowed: Allowed<'a>,
    root: &'a Path,
}

const HOW_TO_ALLOW: &str = "add it to exec.extraAllowedCommands in codex.config.json, or set exec.mode to \"unrestricted\" (the allowlist is a guardrail on top of the OS sandbox; exec.mode takes effect when the server restarts)";
const HOW_TO_BYPASS: &str = "rewrite the command without it, or set exec.mode to \"unrestricted\" in codex.config.json (the allowlist is a guardrail on top of the OS sandbox; exec.mode takes effect when the server restarts)";

/// Named node kinds that are plain structure or plain data; their children are walked.
const STRUCTURE: &[&str] = &[
    "program",
    "list",
    "pipeline",
    "subshell",
    "redirected_statement",
    "negated_command",
    "comment",
    "for_statement",
    "while_statement",
    "if_statement",
    "elif_clause",
    "else_clause",
    "do_group",
    "case_statement",
    "case_item",
    "word",
    "number",
    "string",
    "string_content",
    "raw_string",
    "ansi_c_string",
    "translated_string",
    "concatenation",
    "simple_expansion",
    "variable_name",
    "special_variable_name",
    "heredoc_redirect",
    "heredoc_start",
    "heredoc_body",
    "heredoc_content",
    "heredoc_end",
    "herestring_redirect",
    "file_descriptor",
    "array",
    "brace_expression",
    "test_operator",
    "unary_expression",
    "parenthesized_expression",
    "regex",
    "extglob_pattern",
    "variable_assignments",
];

impl<'a> Walker<'a> {
    fn text(&self, n: Node) -> &'a str {
        &self.src[n.byte_range()]
    }

    /// A short excerpt of the source around `n` for messages.
    fn excerpt(&self, n: Node) -> String {
        let t = self.text(n).trim();
        let mut s: String = t.chars().take(80).collect();
        if s.len() < t.len() {
            s.push('…');
        }
        s.replace('\n', "⏎")
    }

    fn refuse(&self, n: Node, what: String) -> Error {
        Error::Refused(format!(
            "exec_command refused (exec.mode = \"allowlist\"): {what} (in `{}`)",
            self.excerpt(n)
        ))
    }

    fn node(&self, n: Node) -> Result<()> {
        if n.is_error() || n.is_missing() {
            return Err(self.refuse(n, format!("the command line does not parse as plain shell syntax; fix the syntax, or {HOW_TO_BYPASS}")));
        }
        if !n.is_named() {
            return Ok(());
        }
        match n.kind() {
            "command" => return self.command(n),
            "declaration_command" | "unset_command" => {
                let kw = n.child(0).map(|k| self.text(k)).unwrap_or("");
                self.program(n, kw)?;
            }
            "variable_assignment" => self.assignment(n)?,
            "file_redirect" => self.redirect(n)?,
            "expansion" => self.expansion(n)?,
            "test_command" => self.test_command(n)?,
            "binary_expression" => {}
            "compound_statement" => {
                if n.child(0).is_some_and(|c| self.text(c) == "((") {
                    return Err(self.refuse(n, format!("arithmetic `(( ))` can run hidden commands through array subscripts; {HOW_TO_BYPASS}")));
                }
            }
            "command_substitution" => {
                let form = if self.text(n).starts_with('`') {
                    "backtick command substitution"
                } else {
                    "command substitution `$(...)`"
                };
                return Err(self.refuse(n, format!("{form} runs a hidden command line the allowlist cannot check; run the inner command on its own first, or {HOW_TO_BYPASS}")));
            }
            "process_substitution" => {
                return Err(self.refuse(n, format!("process substitution runs a hidden command line the allowlist cannot check; {HOW_TO_BYPASS}")));
            }
            "arithmetic_expansion" | "c_style_for_statement" => {
                return Err(self.refuse(n, format!("arithmetic expansion can run hidden commands through array subscripts; {HOW_TO_BYPASS}")));
            }
            "function_definition" => {
                return Err(self.refuse(
                    n,
                    format!("defining shell functions is not allowed; {HOW_TO_BYPASS}"),
                ));
            }
            "subscript" => {
                return Err(self.refuse(n, format!("array subscripts are evaluated arithmetically and can run hidden commands; {HOW_TO_BYPASS}")));
            }
            k if STRUCTURE.contains(&k) => {}
            other => {
                return Err(self.refuse(n, format!("the shell construct `{other}` is not supported in allowlist mode; {HOW_TO_BYPASS}")));
            }
        }
        self.children(n)
    }

    fn children(&self, n: Node) -> Result<()> {
        let mut c = n.walk();
        for ch in n.children(&mut c) {
            self.node(ch)?;
        }
        Ok(())
    }

    /// One simple command: prefix assignments and redirects, the name, the arguments.
    fn command(&self, n: Node) -> Result<()> {
        // Walk everything first: substitutions anywhere in the command refuse it.
        let mut args: Vec<Node> = Vec::new();
        let mut name: Option<Node> = None;
        let mut c = n.walk();
        for ch in n.children(&mut c) {
            if ch.kind() == "command_name" {
                name = Some(ch);
                let mut cc = ch.walk();
                for inner in ch.children(&mut cc) {
                    self.node(inner)?;
                }
            } else {
                self.node(ch)?;
                if name.is_some()
                    && ch.is_named()
                    && !matches!(
                        ch.kind(),
                        "file_redirect" | "heredoc_redirect" | "herestring_redirect" | "comment"
                    )
                {
                    args.push(ch);
                }
            }
        }
        let Some(name) = name else { return Ok(()) };
        let word = name
            .named_child(0)
            .filter(|w| name.named_child_count() == 1 && w.kind() == "word");
        let prog = word.map(|w| self.text(w)).filter(|t| is_plain_name(t));
        let Some(prog) = prog else {
            return Err(self.refuse(name, format!("the command name `{}` is not a plain word (quotes, variables, globs and escapes in command names cannot be checked); write the program name literally, or {HOW_TO_BYPASS}", self.excerpt(name))));
        };
        self.program(name, prog)?;
        let lits: Vec<Option<String>> = args.iter().map(|a| literal(*a, self.src)).collect();
        self.program_args(n, prog, &lits)
    }

    /// Is `prog` allowed? Names the program and the fix when not.
    fn program(&self, at: Node, prog: &str) -> Result<()> {
        if self.allowed.contains(prog) {
            return Ok(());
        }
        let why = match prog {
            "eval" | "source" | "." => {
                " (it runs its arguments as a new command line the allowlist cannot see)"
            }
            "exec" | "builtin" | "coproc" => {
                " (it runs another program by a path the allowlist cannot follow)"
            }
            "sh" | "bash" | "dash" | "zsh" | "ksh" | "fish" | "csh" | "tcsh" => {
                " (a shell runs any command line it is given)"
            }
            "sudo" | "su" | "doas" | "pkexec" => " (it runs programs as another user)",
            _ if prog.contains('/') => " (a program given by path must be listed verbatim)",
            _ => "",
        };
        Err(self.refuse(
            at,
            format!("`{prog}` is not on the exec allowlist{why}; to allow it, {HOW_TO_ALLOW}"),
        ))
    }

    /// Argument rules for programs that start other programs or edit files in place.
    fn program_args(&self, n: Node, prog: &str, args: &[Option<String>]) -> Result<()> {
        if WRAPPERS.contains(&prog) {
            if prog == "env" {
                for a in args.iter().flatten() {
                    if let Some((k, _)) = a.split_once('=')
                        && is_dangerous_var(k)
                    {
                        return Err(self.refuse(
                            n,
                            format!("setting `{k}` changes which programs run; {HOW_TO_BYPASS}"),
                        ));
                    }
                }
            }
            match inner_program(prog, args) {
                Inner::None => {}
                Inner::Program(i) => {
                    let inner = args[i].as_deref().unwrap_or_default();
                    if !is_plain_name(inner) {
                        return Err(self.refuse(n, format!("`{prog}` would run `{inner}`, which is not a plain program name; {HOW_TO_BYPASS}")));
                    }
                    self.program(n, inner)?;
                    return self.program_args(n, inner, &args[i + 1..]);
                }
                Inner::Unknown(why) => {
                    return Err(self.refuse(n, format!("cannot tell which program `{prog}` runs ({why}); write its arguments literally, or {HOW_TO_BYPASS}")));
                }
            }
            return Ok(());
        }
        match prog {
            "find" => {
                for (i, a) in args.iter().enumerate() {
                    if matches!(a.as_deref(), Some("-exec" | "-execdir" | "-ok" | "-okdir")) {
                        let inner = args.get(i + 1).cloned().flatten().unwrap_or_default();
                        if !is_plain_name(&inner) {
                            return Err(self.refuse(
                                n,
                                format!(
                                    "cannot tell which program `find {}` runs; {HOW_TO_BYPASS}",
                                    a.as_deref().unwrap_or_default()
                                ),
                            ));
                        }
                        self.program(n, &inner)?;
                    }
                }
            }
            "sed" => {
                for a in args.iter().flatten() {
                    if sed_in_place(a) {
                        return Err(self.refuse(n, format!("`sed {a}` edits files in place; use apply_patch or write_file instead, or {HOW_TO_BYPASS}")));
                    }
                }
            }
            "cd" => {
                let [Some(dir)] = args else {
                    return Err(self.refuse(n, format!("`cd` needs exactly one literal directory inside the project (or use exec_command's workdir argument); {HOW_TO_BYPASS}")));
                };
                if let Err(why) = self.path_inside(dir, false) {
                    return Err(self.refuse(n, format!("`cd {dir}` {why}; use exec_command's workdir argument, or {HOW_TO_BYPASS}")));
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn assignment(&self, n: Node) -> Result<()> {
        let name = n
            .child_by_field_name("name")
            .or_else(|| n.named_child(0))
            .map(|v| self.text(v))
            .unwrap_or("");
        if is_dangerous_var(name) {
            return Err(self.refuse(
                n,
                format!("setting `{name}` changes which programs run; {HOW_TO_BYPASS}"),
            ));
        }
        Ok(())
    }

    fn redirect(&self, n: Node) -> Result<()> {
        let mut op = "";
        let mut dest: Option<Node> = None;
        let mut c = n.walk();
        for ch in n.children(&mut c) {
            if !ch.is_named() {
                op = self.text(ch);
            } else if ch.kind() != "file_descriptor" {
                dest = Some(ch);
            }
        }
        let Some(dest) = dest else { return Ok(()) };
        let target = literal(dest, self.src);
        let output = match op {
            "<" | "<<<" => false,
            ">&" | "<&"
                if target
                    .as_deref()
                    .is_some_and(|t| t == "-" || t.bytes().all(|b| b.is_ascii_digit())) =>
            {
                false
            }
            _ => true,
        };
        if !output {
            return Ok(());
        }
        let Some(t) = target else {
            return Err(self.refuse(n, format!("output redirection `{}` needs a literal file name (no variables, globs or `~`); {HOW_TO_BYPASS}", self.excerpt(n))));
        };
        if let Err(why) = self.path_inside(&t, true) {
            return Err(self.refuse(
                n,
                format!("output redirection to `{t}` {why}; {HOW_TO_BYPASS}"),
            ));
        }
        Ok(())
    }

    /// A literal path is acceptable for `cd` (`redirect == false`) or as an output file.
    fn path_inside(&self, p: &str, redirect: bool) -> std::result::Result<(), String> {
        if p.is_empty()
            || p.starts_with('~')
            || p.starts_with('-')
            || p.contains(['*', '?', '[', '{', '$', '`', '\\'])
        {
            return Err("is not a plain literal path".into());
        }
        let path = Path::new(p);
        if path.components().any(|c| c == Component::ParentDir) {
            return Err("contains `..` (paths may not climb out of the project)".into());
        }
        if path.is_absolute() {
            let scratch = redirect
                && (["/dev/null", "/dev/stdout", "/dev/stderr"].contains(&p)
                    || path.starts_with("/tmp"));
            if !(scratch || path.starts_with(self.root)) {
                return Err(format!(
                    "is outside the project root {}",
                    self.root.display()
                ));
            }
        }
        Ok(())
    }

    /// `${...}`: only plain parameter expansion with non-arithmetic operators.
    fn expansion(&self, n: Node) -> Result<()> {
        let t = self.text(n).trim();
        let body = t
            .strip_prefix("${")
            .and_then(|b| b.strip_suffix('}'))
            .unwrap_or("");
        let body = body
            .strip_prefix('#')
            .filter(|b| !b.is_empty())
            .unwrap_or(body);
        let name_len = if body.starts_with(|c: char| "@*#?$!-".contains(c)) {
            1
        } else {
            body.find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
                .unwrap_or(body.len())
        };
        let rest = &body[name_len..];
        let ok = name_len > 0
            && (rest.is_empty()
                || (rest.starts_with(':') && rest[1..].starts_with(['-', '=', '+', '?']))
                || rest.starts_with(['-', '=', '+', '?', '%', '#', '/', '^', ',']));
        if ok {
            Ok(())
        } else {
            Err(self.refuse(n, format!("the parameter expansion `{t}` may evaluate arithmetic or indirection (which can run hidden commands); use plain `${{NAME}}` forms, or {HOW_TO_BYPASS}")))
        }
    }

    /// `[[ ]]` compares numbers by evaluating both sides arithmetically; `[ ]` does not.
    fn test_command(&self, n: Node) -> Result<()> {
        if !self.text(n).starts_with("[[") {
            return Ok(());
        }
        let mut stack = vec![n];
        while let Some(x) = stack.pop() {
            if x.kind() == "test_operator"
                && matches!(self.text(x), "-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge")
            {
                return Err(self.refuse(n, format!("numeric comparison inside `[[ ]]` evaluates its operands arithmetically; use `[ ... ]` instead, or {HOW_TO_BYPASS}")));
            }
            let mut c = x.walk();
            stack.extend(x.children(&mut c));
        }
        Ok(())
    }
}

/// A command name the policy can judge: non-empty, no leading `-`, only
/// `[A-Za-z0-9._+:@%/-]` (no quotes, expansions, globs, escapes, braces or `~`).
fn is_plain_name(t: &str) -> bool {
    !t.is_empty()
        && !t.starts_with('-')
        && t.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._+:@%/-".contains(&b))
}

/// Variables whose value decides which program runs or what a shell executes.
fn is_dangerous_var(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    matches!(
        n.as_str(),
        "PATH"
            | "BASH_ENV"
            | "ENV"
            | "SHELLOPTS"
            | "BASHOPTS"
            | "PS4"
            | "PROMPT_COMMAND"
            | "IFS"
            | "GIT_SSH"
            | "GIT_ASKPASS"
            | "SSH_ASKPASS"
            | "GIT_EXTERNAL_DIFF"
            | "GIT_EXEC_PATH"
            | "GIT_TEMPLATE_DIR"
            | "GIT_CONFIG_GLOBAL"
            | "GIT_CONFIG_SYSTEM"
            | "GIT_CONFIG_PARAMETERS"
            | "GIT_DIR"
            | "BROWSER"
            | "PYTHONSTARTUP"
            | "NODE_OPTIONS"
            | "RUSTC_WRAPPER"
            | "RUSTC"
            | "CARGO_BUILD_RUSTC_WRAPPER"
            | "MAKESHELL"
            | "SHELL"
    ) || n.starts_with("LD_")
        || n.starts_with("DYLD_")
        || n.starts_with("BASH_FUNC_")
        || n.starts_with("GIT_CONFIG_KEY_")
        || n.starts_with("GIT_CONFIG_VALUE_")
        || n.ends_with("PAGER")
        || n.ends_with("EDITOR")
        || n == "VISUAL"
        || n.ends_with("_COMMAND")
}

/// `sed` argument that turns on in-place editing: `-i`, `-i.bak`, `--in-place[=SUF]`, or a
/// short-option cluster containing `i` before a value-taking option (`-ni`, `-Ei`).
fn sed_in_place(a: &str) -> bool {
    if a.starts_with("--in-place") {
        return true;
    }
    let Some(cluster) = a.strip_prefix('-').filter(|c| !c.starts_with('-')) else {
        return false;
    };
    for ch in cluster.chars() {
        match ch {
            'i' => return true,
            'e' | 'f' | 'l' => return false,
            _ => {}
        }
    }
    false
}

/// Which argument (index into the wrapper's arguments) a wrapper would run.
#[derive(Debug, PartialEq)]
enum Inner {
    /// The wrapper runs nothing (e.g. `env` alone prints the environment).
    None,
    /// Index of the program name.
    Program(usize),
    /// The arguments are not literal enough to tell.
    Unknown(&'static str),
}

/// Find the program a wrapper runs: skip its options (and their values), then for
/// `timeout` one positional duration, for `env` any `NAME=VALUE` words.
fn inner_program(wrapper: &str, args: &[Option<String>]) -> Inner {
    // Options taking a separate value, per wrapper (GNU coreutils / findutils spellings).
    let with_value: &[&str] = match wrapper {
        "env" => &["-u", "--unset", "-C", "--chdir"],
        "timeout" => &["-k", "--kill-after", "-s", "--signal"],
        "nice" => &["-n", "--adjustment"],
        "stdbuf" => &["-i", "-o", "-e", "--input", "--output", "--error"],
        "xargs" => &[
            "-a",
            "--arg-file",
            "-d",
            "--delimiter",
            "-E",
            "-I",
            "-L",
            "--max-lines",
            "-n",
            "--max-args",
            "-P",
            "--max-procs",
            "-s",
            "--max-chars",
            "--process-slot-var",
        ],
        _ => &[],
    };
    let mut skip = 0usize;
    let mut positional_to_skip = usize::from(wrapper == "timeout");
    let mut options_done = false;
    for (i, a) in args.iter().enumerate() {
        let Some(a) = a.as_deref() else {
            return Inner::Unknown("an argument is not literal");
        };
        if skip > 0 {
            skip -= 1;
            continue;
        }
        if !options_done && a == "--" {
            options_done = true;
            continue;
        }
        if !options_done && a.starts_with('-') && a.len() > 1 {
            if wrapper == "env"
                && (a.starts_with("--split-string") || (!a.starts_with("--") && a.contains('S')))
            {
                return Inner::Unknown("`env -S` splits a string into a new command line");
            }
            if wrapper == "command" && (a.contains('v') || a.contains('V')) {
                return Inner::None;
            }
            if with_value.contains(&a) {
                skip = 1;
            }
            continue;
        }
        if wrapper == "env" && a.contains('=') {
            continue;
        }
        if positional_to_skip > 0 {
            positional_to_skip -= 1;
            continue;
        }
        return Inner::Program(i);
    }
    Inner::None
}

/// The literal value of a word-like node, if it has no expansions: a `word` without
/// backslashes, a `'raw string'`, a `"string"` of plain content, or a concatenation of those.
fn literal(n: Node, src: &str) -> Option<String> {
    let t = &src[n.byte_range()];
    match n.kind() {
        "word" | "number" if !t.contains('\\') => Some(t.to_string()),
        "raw_string" => t
            .strip_prefix('\'')
            .and_then(|s| s.strip_suffix('\''))
            .map(str::to_string),
        "string" => {
            let mut c = n.walk();
            if n.named_children(&mut c)
                .all(|ch| ch.kind() == "string_content")
                && !t.contains(['\\', '$', '`'])
            {
                t.strip_prefix('"')
                    .and_then(|s| s.strip_suffix('"'))
                    .map(str::to_string)
            } else {
                None
            }
        }
        "concatenation" => {
            let mut c = n.walk();
            let mut out = String::new();
            for ch in n.named_children(&mut c) {
                out.push_str(&literal(ch, src)?);
            }
            Some(out)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> ExecConfig {
        ExecConfig::default()
    }

    fn ok(cmd: &str) {
        if let Err(e) = check(cmd, &cfg(), Path::new("/proj")) {
            panic!("{cmd:?} should pass: {e}");
        }
    }

    fn refused(cmd: &str, needle: &str) {
        match check(cmd, &cfg(), Path::new("/proj")) {
            Ok(()) => panic!("{cmd:?} should be refused"),
            Err(e) => {
                assert_eq!(e.code(), "refused", "{e}");
                assert!(
                    e.to_string().contains(needle),
                    "{cmd:?}: {e} should mention {needle:?}"
                );
            }
        }
    }

    #[test]
    fn plain_and_compound_commands_pass() {
        ok("ls -la");
        ok("cargo test --lib 2>&1 | tail -n 50");
        ok("git status && git diff --stat || echo failed; pwd");
        ok("(cd src && ls) ; { pwd; }");
        ok("for f in *.rs; do wc -l \"$f\"; done");
        ok("if [ -f Cargo.toml ]; then echo yes; else echo no; fi");
        ok("while read -r l; do echo \"$l\"; done < Cargo.toml");
        ok("FOO=1 RUST_LOG=debug cargo build");
        ok("export RUST_BACKTRACE=1; cargo test");
        ok("echo \"${HOME:-/} ${#x} ${x%.rs} $1 $@\"");
        ok("timeout 10 cargo test");
        ok("xargs -n 1 grep foo < list.txt");
        ok("env RUST_LOG=1 cargo run");
        ok("find . -name '*.rs' -exec grep -l foo {} +");
        ok("cat <<'EOF'\nhello $x\nEOF");
        ok("echo hi > out.txt 2>/dev/null; echo more >> /tmp/log.txt");
        ok("sed -n '1,5p' file; sed -e 's/i/j/' f");
        ok("ls &\nwait_not_used=1");
        ok("command -v cargo");
        ok("[[ -f x && $y == z ]]");
    }

    #[test]
    fn everyday_agent_commands_pass() {
        for c in [
            "cargo test 2>&1 | tail -n 20",
            "git log --oneline -5 && git status --short",
            "find . -name \"*.rs\" -not -path \"./target/*\" | xargs wc -l | sort -n | tail",
            "grep -rn \"TODO\" src/ || true",
            "cat > notes.txt <<'EOF'\nhello $USER\nEOF",
            "python3 -c 'print(1)'",
            "npm test -- --watchAll=false",
            "set -euo pipefail; cargo build --release",
            "ls -la ~/ && echo ${PWD}",
            "[ -d target ] && du -sh target",
            "until false; do break; done",
            "awk '{print $1}' f | sort | uniq -c | sort -rn | head",
            "tr -d '\\r' < a.txt > b.txt",
            "head -c 100 /dev/urandom | xxd",
            "RUST_LOG=debug timeout 60 cargo run -- --help",
            "mkdir -p src/x && touch src/x/mod.rs",
            "# a comment\nls",
            "echo 'a; rm -rf / $(x)' # quoted text is data",
        ] {
            ok(c);
        }
    }

    #[test]
    fn every_command_position_is_checked() {
        refused("ls; rm -rf x", "`rm` is not on the exec allowlist");
        refused("ls | sh", "`sh` is not on the exec allowlist");
        refused("ls && rm x", "`rm`");
        refused("ls || rm x", "`rm`");
        refused("ls\nrm x", "`rm`");
        refused("(ls; rm x)", "`rm`");
        refused("{ ls; rm x; }", "`rm`");
        refused("ls & rm x", "`rm`");
        refused("if true; then rm x; fi", "`rm`");
        refused("for f in a; do rm $f; done", "`rm`");
        refused("case x in a) rm x;; esac", "`rm`");
        refused("! rm x", "`rm`");
        refused("ls |& rm x", "`rm`");
    }

    #[test]
    fn hidden_command_lines_are_refused() {
        refused("echo $(rm x)", "command substitution `$(...)`");
        refused("echo `rm x`", "backtick command substitution");
        refused("echo \"a $(ls) b\"", "command substitution");
        refused("diff <(ls) <(ls -a)", "process substitution");
        refused("cat <<EOF\n$(rm x)\nEOF", "command substitution");
        refused("echo $((1+2))", "arithmetic");
        refused("((x=1))", "arithmetic");
        refused("echo ${!x}", "parameter expansion");
        refused("echo ${a[$i]}", "parameter expansion");
        refused("echo ${x:$y}", "parameter expansion");
        refused("[[ $x -eq 1 ]]", "numeric comparison");
        refused("f() { ls; }; f", "functions");
        refused(
            "eval ls",
            "`eval` is not on the exec allowlist (it runs its arguments",
        );
        refused("exec ls", "`exec`");
        refused("source x.sh", "`source`");
        refused(". x.sh", "`.`");
        refused("bash -c ls", "`bash`");
        refused("$CMD x", "not a plain word");
        refused("\"rm\" x", "not a plain word");
        refused("r\\m x", "not a plain word");
        refused("/bin/rm x", "listed verbatim");
        refused("./ls", "listed verbatim");
    }

    #[test]
    fn wrappers_and_argument_rules() {
        refused("xargs rm < list", "`rm`");
        refused("timeout 5 rm x", "`rm`");
        refused("timeout -s KILL 5 rm x", "`rm`");
        refused("env FOO=1 rm x", "`rm`");
        refused("env -S 'rm x'", "env -S");
        refused("nice -n 5 rm x", "`rm`");
        refused("command rm x", "`rm`");
        refused("time rm x", "`rm`");
        refused("find . -exec rm {} ;", "`rm`");
        refused("find . -execdir sh -c x ;", "`sh`");
        refused("xargs $P", "cannot tell which program");
        refused("sed -i s/a/b/ f", "edits files in place");
        refused("sed -ni s/a/b/p f", "in place");
        refused("sed --in-place=.bak s/a/b/ f", "in place");
        refused("PATH=. ls", "`PATH`");
        refused("export PATH=.:$PATH", "`PATH`");
        refused("env LD_PRELOAD=x.so ls", "`LD_PRELOAD`");
        refused("GIT_PAGER=sh git log", "`GIT_PAGER`");
        refused("cd /etc && ls", "outside the project root");
        refused("cd .. && ls", "`..`");
        refused("cd", "exactly one");
        refused("echo x > /etc/passwd", "outside the project root");
        refused("echo x > ~/.bashrc", "not a plain literal path");
        refused("echo x > ../y", "`..`");
        refused("echo x > $F", "literal file name");
    }

    #[test]
    fn parse_errors_fail_closed() {
        refused("ls (", "does not parse");
        refused("echo 'unterminated", "does not parse");
    }

    #[test]
    fn extra_allowed_and_unrestricted() {
        let mut c = cfg();
        c.extra_allowed_commands = vec!["rm".into(), "./gradlew".into()];
        check("ls; rm -rf x", &c, Path::new("/proj")).unwrap();
        check("./gradlew build", &c, Path::new("/proj")).unwrap();
        // Substitutions stay refused whatever the allowlist.
        assert!(check("echo $(rm x)", &c, Path::new("/proj")).is_err());
        c.mode = ExecMode::Unrestricted;
        check("echo $(rm x); sh -c 'anything'", &c, Path::new("/proj")).unwrap();
        assert_eq!(
            check("  ", &c, Path::new("/proj")).unwrap_err().code(),
            "invalid_argument"
        );
    }

    #[test]
    fn cd_and_redirect_inside_root() {
        ok("cd src && cargo test");
        ok("cd /proj/src && ls");
        ok("ls > /proj/out.txt");
    }

    #[test]
    fn programs_lists_every_position() {
        assert_eq!(
            programs("a | b && (c; d) || { e; }").unwrap(),
            vec!["a", "b", "c", "d", "e"]
        );
    }

    #[test]
    fn inner_program_skips_options() {
        let v = |s: &[&str]| s.iter().map(|x| Some(x.to_string())).collect::<Vec<_>>();
        assert_eq!(
            inner_program("timeout", &v(&["-k", "2", "10", "ls"])),
            Inner::Program(3)
        );
        assert_eq!(
            inner_program("env", &v(&["-i", "A=1", "ls"])),
            Inner::Program(2)
        );
        assert_eq!(inner_program("env", &v(&[])), Inner::None);
        assert_eq!(
            inner_program("xargs", &v(&["-0", "-I", "{}", "grep", "x"])),
            Inner::Program(3)
        );
        assert_eq!(inner_program("command", &v(&["-v", "rm"])), Inner::None);
    }
}
