//! What one simple command reveals beyond itself: the commands it runs (runners, shells,
//! `eval`, `find -exec`, code-running options), the builtins that evaluate their arguments,
//! and what cannot be read at all. The knowledge lives in tables: [`super::runners`],
//! [`super::builtins`], [`super::options`].

use super::builtins;
use super::git;
use super::options::{self, Effect, FIND_PRIMARIES};
use super::runners::{self, Runs, ShellScript};
use super::scan::scan;
use super::scripts;

/// What a simple command's words reveal beyond themselves.
#[derive(Debug, Default)]
pub(crate) struct Inspection {
    /// Why the command is at most ask.
    pub(crate) hazards: Vec<String>,
    /// Script strings the command runs (`sh -c STRING`, `eval ARGS`, option values that are
    /// command lines), parsed in turn for deny rules.
    pub(crate) inner_scripts: Vec<String>,
    /// The command runs some suffix of its arguments as a command (`sudo`, `xargs`, `find
    /// -exec`); each suffix is checked against deny rules.
    pub(crate) runs_arguments: bool,
    /// Why part of what the command runs cannot be read at all (a shell fed by standard input,
    /// a script held in a substitution): any deny rule on commands could match it.
    pub(crate) unreadable: Option<String>,
}

impl Inspection {
    /// Takes the hazards of an option scan, and reads the values that run code as scripts.
    pub(crate) fn absorb(&mut self, hazards: Vec<String>, runs: &[&str]) {
        self.hazards.extend(hazards);
        for value in runs {
            self.value_scripts(value);
        }
    }

    /// A value that runs code, as scripts: itself, what follows its first `=` (`core.pager=…`,
    /// `exec=…`), without a leading `!` (git aliases).
    fn value_scripts(&mut self, value: &str) {
        let mut add = |text: &str| {
            let text = text.strip_prefix('!').unwrap_or(text);
            if !text.is_empty() && !self.inner_scripts.iter().any(|s| s == text) {
                self.inner_scripts.push(text.to_owned());
            }
        };
        add(value);
        if let Some((_, after)) = value.split_once('=') {
            add(after);
            if let Some((_, again)) = after.split_once('=') {
                add(again);
            }
        }
    }

    fn unreadable(&mut self, why: String) {
        self.hazards.push(why.clone());
        self.unreadable.get_or_insert(why);
    }
}

/// The command name a path like `/usr/bin/sudo` stands for.
pub(crate) fn base_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Whether a word could hold more than one command: it has whitespace or shell syntax.
pub(crate) fn looks_like_script(word: &str) -> bool {
    word.contains(|c: char| c.is_whitespace() || ";&|<>()$`'\"\\".contains(c))
}

/// Inspects one simple command; `known[i]` tells whether `words[i]` is known before running.
pub(crate) fn inspect(words: &[String], known: &[bool]) -> Inspection {
    let mut found = Inspection::default();
    let Some(first) = words.first() else {
        return found;
    };
    let name = base_name(first);
    let args = &words[1..];
    let unknown = |text: &str| {
        args.iter()
            .zip(known.get(1..).unwrap_or_default())
            .any(|(arg, known)| !known && arg == text)
    };
    if let Some(runs) = runners::runner(name) {
        runner(name, runs, args, &unknown, &mut found);
        return found;
    }
    if builtins::evaluates(name, args) {
        found.hazards.push(format!(
            "`{name}` evaluates its arguments (array subscripts, arithmetic) or assigns a variable"
        ));
        for arg in args {
            found.value_scripts(arg);
        }
        if args.iter().any(|a| builtins::expands(a) || unknown(a)) {
            found.unreadable(format!(
                "`{name}` evaluates an argument that expands when it runs"
            ));
        }
        return found;
    }
    match name {
        "alias" => found.hazards.push("`alias` redefines commands".to_owned()),
        "find" => find(args, &mut found),
        "git" => git::inspect(args, &mut found),
        "sed" | "gsed" => sed(args, &mut found),
        "awk" | "gawk" | "mawk" | "nawk" => {
            for arg in args {
                program(scripts::awk(arg), &mut found);
            }
        }
        other => {
            if let Some(model) = options::find(other) {
                let read = scan(model, args);
                found.absorb(read.hazards, &read.runs);
                if matches!(
                    other,
                    "less" | "more" | "vi" | "vim" | "nvim" | "view" | "ex"
                ) {
                    plus_commands(other, args, &mut found);
                }
            }
        }
    }
    found
}

fn runner(
    name: &str,
    runs: Runs,
    args: &[String],
    unknown: &dyn Fn(&str) -> bool,
    found: &mut Inspection,
) {
    match runs {
        Runs::Arguments | Runs::Line => {
            found
                .hazards
                .push(format!("the runner `{name}` runs another command"));
            found.runs_arguments = true;
            if runners::starts_stdin_shell(name, args) {
                found.unreadable(format!(
                    "`{name}` starts a shell that reads its script from standard input"
                ));
            }
        }
        Runs::Shell => {
            found
                .hazards
                .push(format!("the shell `{name}` runs a script"));
            match runners::shell_script(args) {
                ShellScript::String(script) => {
                    found.inner_scripts.push(script.to_owned());
                    if unknown(script) {
                        found.unreadable(format!("the script of `{name} -c` is not known"));
                    }
                }
                ShellScript::MissingString => found.unreadable(format!(
                    "`{name} -c` takes its script from arguments another command appends"
                )),
                ShellScript::File(file) => {
                    if unknown(file) {
                        found.unreadable(format!("the script file of `{name}` is not known"));
                    }
                }
                ShellScript::Stdin => found.unreadable(format!(
                    "the shell `{name}` reads its script from standard input"
                )),
            }
        }
        Runs::Joined => {
            found.hazards.push(format!("`{name}` runs a string"));
            let rest = match args.first() {
                Some(dashes) if dashes == "--" => &args[1..],
                _ => args,
            };
            found.inner_scripts.push(rest.join(" "));
            if rest.iter().any(|a| unknown(a)) {
                found.unreadable(format!("the string `{name}` runs is not known"));
            }
        }
        Runs::First => {
            found.hazards.push(format!("`{name}` runs a string"));
            let script = args
                .iter()
                .find(|a| !a.starts_with('-') || a.as_str() == "-");
            if let Some(script) = script {
                found.inner_scripts.push(script.clone());
                if unknown(script) {
                    found.unreadable(format!("the string `{name}` runs is not known"));
                }
            }
        }
        Runs::File => {
            found
                .hazards
                .push(format!("`{name}` runs the commands of a file"));
            let file = args.iter().find(|a| a.as_str() != "--");
            match file {
                Some(file) if runners::is_stdin_path(file) || unknown(file) => found.unreadable(
                    format!("`{name}` runs commands from standard input or a substitution"),
                ),
                Some(_) => {}
                None => found.unreadable(format!("`{name}` has no file to read")),
            }
        }
    }
    // Whatever its kind, any argument of a runner that could be a command line is read as a
    // script too (`watch 'cmd'`, `env -S'cmd'`, `parallel ::: 'cmd'`, `sg grp 'cmd'`).
    for arg in args {
        let text = if arg.starts_with('-') {
            runners::attached_value(arg)
        } else {
            Some(arg.as_str())
        };
        if let Some(text) = text.filter(|t| looks_like_script(t)) {
            found.value_scripts(text);
        }
    }
}

/// `+CMD` arguments of pagers and editors run CMD at start, a shell command with `!`.
fn plus_commands(name: &str, args: &[String], found: &mut Inspection) {
    for arg in args {
        if let Some(command) = arg.strip_prefix('+').filter(|c| !c.is_empty()) {
            found
                .hazards
                .push(format!("`{name} {arg}` runs a command at start"));
            found.value_scripts(command.trim_start_matches(':'));
        }
    }
}

fn find(args: &[String], found: &mut Inspection) {
    for arg in args {
        if let Some((primary, effect)) = FIND_PRIMARIES.iter().find(|(p, _)| p == arg) {
            if *effect == Effect::Runs {
                found
                    .hazards
                    .push(format!("`find {primary}` runs another command"));
                found.runs_arguments = true;
            } else {
                found
                    .hazards
                    .push(format!("`find {primary}` deletes or writes files"));
            }
        }
    }
}

fn sed(args: &[String], found: &mut Inspection) {
    let Some(model) = options::find("sed") else {
        return;
    };
    let read = scan(model, args);
    let mut programs: Vec<&str> = read.scripts.clone();
    if programs.is_empty() && model.script_operand {
        programs.extend(read.operands.first().copied());
    }
    found.absorb(read.hazards, &read.runs);
    // GNU sed joins its `-e` pieces with newlines before reading them.
    let joined = programs.join("\n");
    program(scripts::sed(&joined), found);
}

fn program(program: scripts::Program, found: &mut Inspection) {
    found.hazards.extend(program.hazards);
    found.inner_scripts.extend(program.runs);
    if program.unreadable {
        found.unreadable("the program runs commands the checker cannot read".to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_owned).collect()
    }

    fn inspect_all(s: &str) -> Inspection {
        let w = words(s);
        inspect(&w, &vec![true; w.len()])
    }

    #[test]
    fn wrappers_run_their_arguments() {
        assert!(inspect_all("/usr/bin/sudo rm -rf /").runs_arguments);
        assert!(inspect_all("timeout 5 ls").runs_arguments);
        assert!(!inspect_all("ls -la").runs_arguments);
    }

    #[test]
    fn shells_expose_their_script() {
        let w: Vec<String> = vec!["bash".into(), "-lc".into(), "rm -rf /".into()];
        let found = inspect(&w, &[true, true, true]);
        assert_eq!(found.inner_scripts, ["rm -rf /"]);
        assert!(found.unreadable.is_none());
        assert!(inspect_all("sh").unreadable.is_some());
        assert!(inspect_all("bash -s").unreadable.is_some());
        assert!(inspect_all("source /dev/stdin").unreadable.is_some());
    }

    #[test]
    fn git_config_smuggling_is_a_hazard() {
        assert!(!inspect_all("git -c core.pager=sh log").hazards.is_empty());
        assert!(!inspect_all("git -ccore.pager=sh log").hazards.is_empty());
        assert!(
            !inspect_all("git fetch --upload-pack=evil")
                .hazards
                .is_empty()
        );
        assert!(inspect_all("git -C repo status").hazards.is_empty());
        assert!(inspect_all("git log --color").hazards.is_empty());
    }

    #[test]
    fn find_exec_is_a_hazard() {
        assert!(inspect_all("find . -exec rm {} ;").runs_arguments);
        assert!(inspect_all("find . -name x").hazards.is_empty());
    }

    #[test]
    fn evaluating_builtins_are_hazards() {
        assert!(inspect_all("printf -v a[$(id)] x").unreadable.is_some());
        assert!(!inspect_all("printf -v HOME x").hazards.is_empty());
        assert!(inspect_all("printf %s x").hazards.is_empty());
    }
}
