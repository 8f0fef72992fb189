//! What one simple command reveals beyond itself: the commands it runs (runners, shells,
//! `eval`, `find -exec`, code-running options), the builtins that evaluate their arguments,
//! and what cannot be read at all. The knowledge lives in tables: [`super::runners`],
//! [`super::builtins`], and the program models of [`super::model`].

use super::builtins;
use super::git;
use super::inspection::Inspection;
use super::model::opt::Effect;
use super::model::{self, FIND_ACTIONS};
use super::runners::{self, Runs, ShellScript};
use super::scan::scan;
use super::scripts;

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
    if runners::reads_program_from_stdin(name, args) {
        found.unreadable(format!(
            "`{name}` reads the commands or program it runs from standard input or files the checker cannot see"
        ));
    }
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
        "alias" => {
            found.hazards.push("`alias` redefines commands".to_owned());
            // With `expand_aliases`, the value runs wherever the alias is used.
            for arg in args {
                if let Some((_, value)) = arg.split_once('=') {
                    found.value_scripts(value);
                    found.inner_scripts.push(value.to_owned());
                }
            }
        }
        "find" => find(args, &mut found),
        "git" => git::inspect(args, &mut found),
        "sed" | "gsed" => sed(args, &mut found),
        "awk" | "gawk" | "mawk" | "nawk" | "busybox-awk" => awk(args, &mut found),
        other => {
            found.runner_like = !model::has_model(other) && !NOT_RUNNING.contains(&other);
            if let Some(model) = model::reading(other, None) {
                let read = scan(&model, args);
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

/// Programs and builtins without a model that never run their arguments: their suffixes are
/// not guessed at.
const NOT_RUNNING: &[&str] = &[
    "cd", "exit", "true", "false", ":", "shift", "return", "break", "continue", "umask", "pushd",
    "popd", "dirs", "jobs", "kill", "sleep", "mkdir", "rmdir", "touch", "cp", "mv", "ln", "chmod",
    "chown", "chgrp", "rm", "unlink", "shred", "truncate", "wait", "type",
];

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
            if name == "xargs" {
                found.placeholders.extend(xargs_replace(args));
            }
            if runners::reads_stdin_by_default(name, args) {
                found.unreadable(format!(
                    "`{name}` without a command runs a shell or commands from standard input"
                ));
            }
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
        // `env PAGER=rm git log`: the value may be run by the command.
        if let Some((_, value)) = arg.split_once('=')
            && !value.is_empty()
        {
            found.guessed_scripts.push(value.to_owned());
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
        if let Some((primary, effect)) = FIND_ACTIONS.iter().find(|(p, _)| p == arg) {
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

/// The replacement strings of `xargs -I R`, `-iR`, `--replace[=R]`.
fn xargs_replace(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if arg == "-I" {
            out.extend(iter.next().cloned());
        } else if let Some(value) = arg.strip_prefix("-I").or_else(|| arg.strip_prefix("-i")) {
            out.push(if value.is_empty() {
                "{}".to_owned()
            } else {
                value.to_owned()
            });
        } else if let Some(value) = arg.strip_prefix("--replace") {
            out.push(value.strip_prefix('=').unwrap_or("{}").to_owned());
        } else if !arg.starts_with('-') {
            break;
        }
    }
    out
}

/// awk: every argument is read as a program (a file name that looks like code only refuses).
/// A program file (`-f`, `-E`, `-i`, `--file`, `--exec`, `--include`) cannot be vouched for,
/// and one read from standard input (`-f -`, `-f /dev/stdin`) is unreadable.
fn awk(args: &[String], found: &mut Inspection) {
    for (i, arg) in args.iter().enumerate() {
        if let Some(attached) = awk_program_file(arg) {
            let file = match attached {
                "" => args.get(i + 1).map_or("-", String::as_str),
                value => value,
            };
            program_file("awk", file, found);
        }
    }
    // The program (the first operand, or `-e`/`--source` texts) is read in full; every other
    // argument too, for what it could run, since a misread option could make it the program,
    // but a file name that is no awk (`data.csv`) adds no hazard.
    let programs: Vec<&str> = model::reading("awk", None)
        .map(|model| {
            let read = scan(&model, args);
            let mut programs = read.scripts.clone();
            if programs.is_empty() {
                programs.extend(read.operands.first().copied());
            }
            programs
        })
        .unwrap_or_default();
    for arg in args {
        let read = scripts::awk(arg);
        if programs.contains(&arg.as_str()) {
            program(read, found);
        } else {
            program(
                scripts::Program {
                    hazards: Vec::new(),
                    ..read
                },
                found,
            );
        }
    }
}

/// A program read from `file`: a hazard, and unreadable when the file is standard input.
fn program_file(name: &str, file: &str, found: &mut Inspection) {
    if runners::is_stdin_path(file) {
        found.unreadable(format!("`{name}` reads its program from standard input"));
    } else {
        found
            .hazards
            .push(format!("`{name}` runs the program file `{file}`"));
    }
}

/// Whether an awk argument names a program file: `--file`, `--exec`, `--include` (or an
/// abbreviation), or a short cluster reaching `-f`, `-E` or `-i` through flags only. The
/// attached file name (empty when it is the next word).
fn awk_program_file(arg: &str) -> Option<&str> {
    if let Some(long) = arg.strip_prefix("--") {
        let (name, value) = long.split_once('=').unwrap_or((long, ""));
        let names = !name.is_empty()
            && ["file", "exec", "include"]
                .iter()
                .any(|l| l.starts_with(name));
        return names.then_some(value);
    }
    let cluster = arg.strip_prefix('-')?;
    for (at, letter) in cluster.char_indices() {
        match letter {
            'f' | 'E' | 'i' => return Some(&cluster[at + 1..]),
            'b' | 'c' | 'C' | 'g' | 'h' | 'M' | 'N' | 'n' | 'O' | 'P' | 'r' | 's' | 'S' | 't'
            | 'V' => {}
            _ => return None,
        }
    }
    None
}

fn sed(args: &[String], found: &mut Inspection) {
    let Some(model) = model::reading("sed", None) else {
        return;
    };
    let read = scan(&model, args);
    for file in &read.script_files {
        program_file("sed", file, found);
    }
    let mut programs: Vec<&str> = read.scripts.clone();
    if programs.is_empty() && model.program_operand() {
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
