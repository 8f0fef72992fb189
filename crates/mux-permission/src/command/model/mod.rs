//! Program models, the one source of option knowledge for both sides.
//!
//! For allow rules a simple command is *explained* when every word after the program name is
//! a known subcommand, a known option with its known arity (spelled, clustered and
//! abbreviated the way that program's parser reads it), or an operand of a known kind. A word
//! the model does not explain makes the command "not known safe": no prefix rule allows it.
//!
//! The deny scan ([`super::scan`]) reads the same models for what a command runs or writes
//! through its options ([`reading`]); a few programs (tar, man, pagers, editors, git's
//! writing subcommands) have a model only for that and are never explained. One small module
//! per program family holds the data.

mod coreutils;
mod find;
mod git;
mod globals;
#[cfg(test)]
mod installed;
pub(crate) mod opt;
mod parse;
mod scanned;
mod spec;
mod text;

pub(crate) use find::ACTIONS as FIND_ACTIONS;
pub(crate) use git::{
    RUNNERS as GIT_RUNNERS, RUNNING_ACTIONS as GIT_RUNNING_ACTIONS, SUBCOMMANDS as GIT_SUBCOMMANDS,
    config_reads,
};
pub(crate) use globals::global_option;
pub(crate) use parse::check;
pub(crate) use spec::{Arg, Form, Kind, Lang, Model, NONE, Operands, PATHS, Style, TEXTS, model};

/// What a model makes of a simple command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Explained {
    /// Every word is accounted for.
    Fully,
    /// This word (or form) is not: the command is not known safe.
    Not(String),
    /// The program has no model.
    NoModel,
}

/// Whether the model of `words[0]` explains every other word. `globs[i]` is the shell pattern
/// of `words[i]` when it is an unquoted glob.
pub(crate) fn explain(words: &[String], globs: &[Option<String>]) -> Explained {
    let Some(name) = words.first() else {
        return Explained::NoModel;
    };
    if globs.first().is_some_and(Option::is_some) {
        return Explained::Not(format!("the program name `{name}` is a pattern"));
    }
    let args: Vec<Arg<'_>> = words[1..]
        .iter()
        .enumerate()
        .map(|(i, text)| Arg {
            text,
            glob: globs.get(i + 1).and_then(Option::as_deref),
        })
        .collect();
    let result = match name.as_str() {
        "git" => git::explain(&args),
        "find" => find::explain(&args),
        "echo" => printed(&args),
        "test" | "[" => test(name, &args),
        "jq" => text::jq(&args),
        other => match lookup(other) {
            Some(model) => check(model, &args).map(|_| ()),
            None => return Explained::NoModel,
        },
    };
    match result {
        Ok(()) => Explained::Fully,
        Err(why) => Explained::Not(why),
    }
}

/// `echo` prints every word (bash's `echo` reads only leading `-n`, `-e`, `-E`); a glob is
/// explained when its expansions cannot start with `-`.
fn printed(args: &[Arg<'_>]) -> Result<(), String> {
    match args
        .iter()
        .find_map(|a| a.glob.filter(|p| !parse::safe_glob(p)))
    {
        Some(pattern) => Err(format!(
            "the pattern `{pattern}` could expand to options of `echo`"
        )),
        None => Ok(()),
    }
}

/// `test EXPR` and `[ EXPR ]`: the expression's words are compared, never run; `-v` and `-R`
/// evaluate a variable name's subscript, so they are not explained, and neither is a glob.
fn test(name: &str, args: &[Arg<'_>]) -> Result<(), String> {
    if name == "[" && args.last().map(|a| a.text) != Some("]") {
        return Err("`[` without its closing `]`".to_owned());
    }
    for arg in args {
        if let Some(pattern) = arg.glob {
            return Err(format!("the pattern `{pattern}` expands inside `{name}`"));
        }
        if matches!(arg.text, "-v" | "-R") {
            return Err(format!("`{name} {}` evaluates a variable name", arg.text));
        }
    }
    Ok(())
}

/// Whether `name` has a model.
pub(crate) fn has_model(name: &str) -> bool {
    matches!(name, "git" | "find" | "echo" | "test" | "[" | "jq") || lookup(name).is_some()
}

fn lookup(name: &str) -> Option<&'static Model> {
    coreutils::MODELS
        .iter()
        .chain(text::MODELS)
        .find(|m| m.name == name)
}

/// The model the deny scan reads `name` (or `name subcommand`, for git) through: the model
/// that explains it when there is one, else one that only says what its options run or
/// write. `None` when the program has no option model.
pub(crate) fn reading(name: &str, subcommand: Option<&str>) -> Option<Model> {
    match (name, subcommand) {
        ("git", None) => Some(git::GLOBAL_MODEL),
        ("git", Some(sub)) => git::reading(sub),
        (_, Some(_)) => None,
        (other, None) => lookup(other)
            .or_else(|| scanned::MODELS.iter().find(|m| m.name == other))
            .copied(),
    }
}

/// The programs with a model, for documentation and tests.
pub fn programs() -> Vec<&'static str> {
    let mut names: Vec<&str> = coreutils::MODELS
        .iter()
        .chain(text::MODELS)
        .map(|m| m.name)
        .collect();
    names.extend(["git", "find", "echo", "test", "["]);
    names.sort_unstable();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Splits on spaces; a word starting with `@` is a glob whose pattern is the rest.
    fn explained(line: &str) -> Explained {
        let mut words = Vec::new();
        let mut globs = Vec::new();
        for word in line.split(' ') {
            match word.strip_prefix('@') {
                Some(pattern) => {
                    words.push(pattern.to_owned());
                    globs.push(Some(pattern.to_owned()));
                }
                None => {
                    words.push(word.to_owned());
                    globs.push(None);
                }
            }
        }
        explain(&words, &globs)
    }

    #[test]
    fn options_are_read_as_the_parser_reads_them() {
        for line in [
            "ls -la src",
            "ls --almost-all --col=never",
            "head -5 f",
            "head -n5 f",
            "sort -k2,2 -t, f",
            "grep -rn --include=*.rs foo .",
            "grep -e foo -e bar f",
            "git log --oneline -5",
            "git status --shor",
            "git diff --no-color HEAD",
            "git diff -U5 --unified=2 HEAD",
            "git log --format=%H --min-parents=2 -n5",
            "git branch --merged",
            "git branch --contains main",
            "git blame --reverse HEAD~2..HEAD f",
            "diff --context a b",
            "diff -C 3 a b",
            "git -C . --no-pager status",
            "git config --name-only user.email",
            "sed -n -e 1p -e 2p f",
            "awk -F, {print} f",
            "jq --arg n v .[$n] f",
            "find . -name x -type f -print",
            "[ -f x ]",
        ] {
            assert_eq!(explained(line), Explained::Fully, "{line}");
        }
    }

    #[test]
    fn unknown_or_dangerous_words_are_not_explained() {
        for line in [
            "ls --frobnicate",
            "ls --c",
            "sort -o out f",
            "sort --compress=x f",
            "head -n",
            "git log --output=x",
            "git log --onel",
            "git log --format x",
            "git log -pn 5",
            "git log -pU5",
            "git diff --unif=3",
            "diff -C",
            "git log --outp=x",
            "git stash show -p --output=x",
            "git diff --ext-diff",
            "git -c a=b status",
            "git -ccore.pager=x log",
            "git frobnicate",
            "git config core.fsmonitor x list",
            "git config user.email --name-only",
            "git config alias.x !x get",
            "git config --get a b c",
            "git config set a b",
            "git branch new",
            "git tag -d v1",
            "git stash",
            "git stash drop",
            "git reflog expire",
            "git remote add x y",
            "sed -i s/a/b/ f",
            "sed -n :a\te f",
            "awk -f prog f",
            "awk {print>\"x\"} f",
            "jq -f prog f",
            "jq env",
            "find . -delete",
            "find . -exec x ;",
            "tr a b c",
            "uniq a b",
            "printf -v x y",
            "[ -v x ]",
            "[ -f x",
        ] {
            assert!(matches!(explained(line), Explained::Not(_)), "{line}");
        }
    }

    #[test]
    fn globs_only_in_path_positions_with_a_literal_first_character() {
        assert_eq!(explained("wc -l @src/*.rs"), Explained::Fully);
        assert_eq!(explained("ls @a{b,c}d"), Explained::Fully);
        assert!(matches!(explained("wc -l @*.rs"), Explained::Not(_)));
        assert!(matches!(explained("grep @foo* f"), Explained::Not(_)));
        assert!(matches!(explained("ls @-*"), Explained::Not(_)));
        assert!(matches!(explained("@l? -la"), Explained::Not(_)));
        assert!(matches!(explained("find . -name @*.rs"), Explained::Not(_)));
        assert_eq!(explained("echo @a*"), Explained::Fully);
        assert!(matches!(explained("echo @*"), Explained::Not(_)));
    }

    #[test]
    fn git_config_reads() {
        for line in [
            "git config user.email",
            "git config --get user.email",
            "git config --get-regexp ^user",
            "git config get user.email",
            "git config list",
            "git config --list --show-origin",
            "git config -l",
        ] {
            assert_eq!(explained(line), Explained::Fully, "{line}");
        }
        assert!(config_reads(&["--get".to_owned(), "a.b".to_owned()]));
        assert!(!config_reads(&["a.b".to_owned(), "c".to_owned()]));
    }

    #[test]
    fn programs_without_a_model() {
        assert_eq!(explained("npm run test"), Explained::NoModel);
        assert!(has_model("git") && has_model("[") && !has_model("npm"));
        assert!(programs().contains(&"jq"));
    }
}
