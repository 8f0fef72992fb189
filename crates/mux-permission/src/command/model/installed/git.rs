//! git's option arities, from git itself. For each option a git model lists, git is run in a
//! scratch copy of a small repository three ways:
//!
//! - `git SUB OPT --output=CANARY`: the canary file appears (or git names `--output=` as an
//!   option it does not know) when git did not take the next word as OPT's value;
//! - `git SUB OPT=1` (`-X%` for a short option): git says the option takes no value, or that
//!   the word is not an option, when OPT takes no attached value;
//! - `git SUB OPT` as the last word: git says OPT requires a value, or does not know it.
//!
//! parse-options and the hand-written revision parser answer alike, so one method covers
//! both. Abbreviations are checked the same way (`--unif` is not `--unified` to `git diff`),
//! and for commands that do abbreviate, every option `--git-completion-helper-all` lists is
//! checked not to be read by the model as an abbreviation of another.

use std::path::{Path, PathBuf};

use super::super::Model;
use super::super::git::{GLOBAL, SCANNED, STASH, SUBS, Sub};
use super::super::opt::Opt;
use super::{Arity, Disagreement, Outcome, arity, installed, parallel, run, verdict};

/// The words that reach a subcommand's options (`git stash show`, `git remote get-url`).
fn contexts(table: &str, sub: &Sub) -> Vec<Vec<&'static str>> {
    let name = sub.name;
    match (table, name) {
        ("stash", _) => vec![vec!["stash", name]],
        (_, "remote") => vec![
            vec!["remote"],
            vec!["remote", "show"],
            vec!["remote", "get-url"],
        ],
        (_, "worktree") => vec![vec!["worktree", "list"]],
        (_, "config") => vec![vec!["config"], vec!["config", "get"]],
        (_, "diff") => vec![vec!["diff"], vec!["diff", "HEAD"]],
        (_, "rev-list") => vec![vec!["rev-list", "--all"]],
        // Operands first, so git complains of the option, not of what is missing.
        (_, "blame" | "annotate") => vec![vec![name, "f.txt"]],
        (_, "archive") => vec![vec!["archive", "HEAD"]],
        (_, "submodule") => vec![vec!["submodule", "add"], vec!["submodule", "update"]],
        _ => vec![vec![name]],
    }
}

/// One option spelling to probe under one subcommand (or none: git's global options).
#[derive(Clone, Debug)]
struct Probe {
    /// `git log`, `git stash show`, or `git` for global options.
    program: String,
    /// The words before the option, in each place it may be given: the first where git
    /// knows it decides.
    contexts: Vec<Vec<&'static str>>,
    /// `--format`, `-U`.
    spelling: String,
    /// What the model says, by effect.
    model: Arity,
    /// Whether this is a global option (probed before `version`).
    global: bool,
}

/// A scratch repository per worker: a template, copied afresh for every probe, since some
/// probes commit, reset or switch.
struct Scratch {
    template: PathBuf,
    home: PathBuf,
    /// A copy for the subcommands that only read (no probe of theirs changes it).
    reader: PathBuf,
    _dir: tempfile::TempDir,
    count: usize,
}

fn env(home: &Path) -> Vec<(&'static str, String)> {
    let mut env = vec![
        ("HOME", home.display().to_string()),
        ("XDG_CONFIG_HOME", home.display().to_string()),
        ("GIT_CONFIG_NOSYSTEM", "1".to_owned()),
        ("GIT_CONFIG_GLOBAL", "/dev/null".to_owned()),
        ("GIT_PAGER", "cat".to_owned()),
        ("PAGER", "cat".to_owned()),
        ("GIT_EDITOR", "true".to_owned()),
        ("EDITOR", "true".to_owned()),
        ("VISUAL", "true".to_owned()),
        ("GIT_SEQUENCE_EDITOR", "true".to_owned()),
        ("GIT_TERMINAL_PROMPT", "0".to_owned()),
        ("GIT_ASKPASS", "false".to_owned()),
        ("SSH_ASKPASS", "false".to_owned()),
        ("GIT_SSH_COMMAND", "false".to_owned()),
        ("GIT_ALLOW_PROTOCOL", "file".to_owned()),
        ("GIT_OPTIONAL_LOCKS", "0".to_owned()),
        ("GIT_MERGE_AUTOEDIT", "no".to_owned()),
        ("LC_ALL", "C".to_owned()),
        ("LANGUAGE", "C".to_owned()),
    ];
    for (k, v) in [
        ("GIT_AUTHOR_NAME", "t"),
        ("GIT_AUTHOR_EMAIL", "t@t"),
        ("GIT_COMMITTER_NAME", "t"),
        ("GIT_COMMITTER_EMAIL", "t@t"),
    ] {
        env.push((k, v.to_owned()));
    }
    env
}

fn git_ok(dir: &Path, home: &Path, args: &[&str]) {
    let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    let out = run("git", &args, dir, &env(home));
    assert!(
        !out.stderr.contains("fatal") && !out.stderr.contains("error"),
        "git {args:?}: {}",
        out.stderr
    );
}

impl Scratch {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let template = dir.path().join("template");
        let home = dir.path().join("home");
        for d in [&template, &home] {
            std::fs::create_dir_all(d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        }
        git_ok(
            &template,
            &home,
            &["init", "-q", "--template=", "-b", "main"],
        );
        write(&template.join("f.txt"), "one\n");
        git_ok(&template, &home, &["add", "f.txt"]);
        git_ok(&template, &home, &["commit", "-qm", "one"]);
        write(&template.join("f.txt"), "one\ntwo\n");
        git_ok(&template, &home, &["commit", "-qam", "two"]);
        // A stash, for `git stash show` and `git stash list`.
        write(&template.join("f.txt"), "one\ntwo\nthree\n");
        git_ok(&template, &home, &["stash", "-q"]);
        let reader = dir.path().join("reader");
        copy_dir(&template, &reader);
        Self {
            template,
            home,
            reader,
            _dir: dir,
            count: 0,
        }
    }

    /// A fresh copy of the template.
    fn fresh(&mut self) -> PathBuf {
        self.count += 1;
        let Some(parent) = self.template.parent() else {
            panic!("the template has a parent");
        };
        let to = parent.join(format!("probe-{}", self.count));
        copy_dir(&self.template, &to);
        to
    }

    fn git(&mut self, args: Vec<String>, canary: bool) -> (Outcome, bool) {
        let writes = args
            .first()
            .is_none_or(|sub| WRITERS.contains(&sub.as_str()));
        let dir = if writes {
            self.fresh()
        } else {
            self.reader.clone()
        };
        let out = run("git", &args, &dir, &env(&self.home));
        let canary_file = dir.join("canary-out");
        let made = canary && canary_file.exists();
        if writes {
            let _ = std::fs::remove_dir_all(&dir);
        } else {
            let _ = std::fs::remove_file(canary_file);
        }
        (out, made)
    }
}

/// Subcommands a probe may change the repository with: each probe of theirs runs in a fresh
/// copy. (Global options are probed before `version`, and bare: a fresh copy too.)
const WRITERS: &[&str] = &[
    "add",
    "commit",
    "checkout",
    "switch",
    "restore",
    "fetch",
    "pull",
    "clone",
    "rebase",
    "reset",
    "init",
    "push",
    "send-pack",
    "submodule",
    "stash",
    "branch",
    "tag",
    "config",
    "worktree",
    "remote",
    "archive",
    "difftool",
    "format-patch",
];

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("{}: {e}", to.display()));
    let entries = std::fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
    for entry in entries.flatten() {
        let target = to.join(entry.file_name());
        match entry.file_type() {
            Ok(t) if t.is_dir() => copy_dir(&entry.path(), &target),
            Ok(_) => {
                let _ = std::fs::copy(entry.path(), &target);
            }
            Err(e) => panic!("{}: {e}", entry.path().display()),
        }
    }
}

/// Whether git said it does not know `spelling` (with or without an attached value).
fn unknown(out: &Outcome, spelling: &str) -> bool {
    let e = &out.stderr;
    let line = |prefix: &str| {
        e.lines().any(|l| {
            l.trim_start_matches("fatal: ")
                .trim_start_matches("error: ")
                == prefix
        })
    };
    if let Some(long) = spelling.strip_prefix("--") {
        e.contains(&format!("unknown option `{long}'"))
            || e.contains(&format!("unknown option `{spelling}'"))
            || line(&format!("unrecognized argument: {spelling}"))
            || line(&format!("unknown option: {spelling}"))
            || line(&format!("invalid option: {spelling}"))
            || e.contains(&format!("ambiguous option: {long}"))
    } else {
        let letter = spelling.chars().nth(1).unwrap_or('-');
        let rest = &spelling[1..];
        e.contains(&format!("unknown switch `{letter}'"))
            || e.contains(&format!("unknown option `-{rest}'"))
            || line(&format!("unrecognized argument: {spelling}"))
            || line(&format!("invalid option: {spelling}"))
            || line(&format!("unknown option: {spelling}"))
    }
}

/// Probe A: whether git read the word after the option as an option of its own.
fn next_word_is_option(out: &Outcome, made: bool) -> bool {
    made || out.stderr.contains("unknown option `output=")
        || out.stderr.contains("unrecognized argument: --output=")
        || out.stderr.contains("unknown option: --output=")
        || out.stderr.contains("invalid option: --output=")
}

/// Probe B: whether git refused a value attached to the option.
fn attached_refused(out: &Outcome, spelled: &str) -> bool {
    let e = &out.stderr;
    // A complaint about the value itself means the option took it.
    let value_read = [
        "invalid argument to",
        "not an integer",
        " expects ",
        "invalid value",
    ]
    .iter()
    .any(|m| e.contains(m));
    !value_read
        && (e.contains("takes no value")
        || e.contains("doesn't take a value")
        || e.contains("does not take a value")
        || e.contains("unknown switch `%'")
        || e.contains("unknown option `-%'")
        || e.contains("invalid option: -%")
        // parse-options keeping unknown options prints only its usage.
        || e.starts_with("usage:")
        || unknown(out, spelled))
}

/// Probe C: whether git refused the option as the last word.
fn bare_refused(out: &Outcome, spelling: &str) -> bool {
    let e = &out.stderr;
    e.contains("requires a value")
        || e.contains("requires an argument")
        || e.contains("no directory given")
        || e.contains("no namespace given")
        || e.contains(" expects ")
        || e.contains(" given for ")
        || e.starts_with("usage:")
        || unknown(out, spelling)
}

fn truth(scratch: &mut Scratch, probe: &Probe) -> Arity {
    for context in &probe.contexts {
        let found = truth_in(scratch, probe, context);
        if found != Arity::Unknown {
            return found;
        }
    }
    Arity::Unknown
}

fn truth_in(scratch: &mut Scratch, probe: &Probe, context: &[&str]) -> Arity {
    let words = |tail: &[String]| -> Vec<String> {
        let mut args: Vec<String> = context.iter().map(|s| (*s).to_owned()).collect();
        args.extend_from_slice(tail);
        if probe.global {
            args.push("version".to_owned());
        }
        args
    };
    let spelling = probe.spelling.clone();
    // A: the canary is relative to the probe's directory, where git resolves `--output`.
    let (a, made) = scratch.git(
        words(&[spelling.clone(), "--output=canary-out".to_owned()]),
        true,
    );
    let attached = if spelling.starts_with("--") {
        format!("{spelling}=1")
    } else {
        format!("{spelling}%")
    };
    let attached_ok = |scratch: &mut Scratch| -> bool {
        let (b, _) = scratch.git(words(std::slice::from_ref(&attached)), false);
        !attached_refused(&b, &attached)
    };
    if unknown(&a, &spelling) {
        // `git log --format`: the bare option is unknown, `--format=...` is not.
        return if spelling.starts_with("--") && attached_ok(scratch) {
            Arity::RequiredAttached
        } else {
            Arity::Unknown
        };
    }
    // `git --html-path` prints and exits before it reads another word.
    let exited = probe.global && a.stderr.trim().is_empty() && !a.stdout.contains("git version");
    let consumed = !exited && !next_word_is_option(&a, made);
    let bare = |scratch: &mut Scratch, usage_refuses: bool| {
        let mut args: Vec<String> = context.iter().map(|s| (*s).to_owned()).collect();
        args.push(spelling.clone());
        let (c, _) = scratch.git(args, false);
        !(bare_refused(&c, &spelling) || (usage_refuses && c.stderr.contains("usage:")))
    };
    if consumed {
        return if bare(scratch, true) {
            Arity::RequiredUnlessLast
        } else {
            Arity::Required
        };
    }
    if !attached_ok(scratch) {
        return Arity::Flag;
    }
    if bare(scratch, false) {
        Arity::Optional
    } else {
        Arity::RequiredAttached
    }
}

/// Whether the model reads an option as git does, or more narrowly: a model that takes a
/// value only attached where git also takes the next word, or refuses a last word git would
/// read with its default, asks where git would run, and never reads a word differently.
///
/// A long option the model lets take an attached value that git refuses (`--ancestry-path=x`
/// under shortlog) reads no word differently either: git stops at it. (A short one would: the
/// model would take the rest of a cluster as the value, git more options.)
fn agrees(model: Arity, real: Arity, long: bool) -> bool {
    model == real
        || matches!(
            (model, real),
            (Arity::RequiredAttached, Arity::Required)
                | (Arity::Required, Arity::RequiredUnlessLast)
        )
        || (long && model == Arity::Optional && real == Arity::Flag)
}

fn spellings(opt: &Opt) -> Vec<String> {
    let mut out = Vec::new();
    if !opt.long.is_empty() {
        out.push(format!("--{}", opt.long));
    }
    if let Some(c) = opt.short {
        out.push(format!("-{c}"));
    }
    out
}

/// `--help` runs man and `-h` prints usage: neither is probed. Nor are the digits of git's
/// `-NUM` (`-1` is `-n 1`), which the model reads as numbers.
fn skipped(opt: &Opt) -> bool {
    opt.long == "help"
        || (opt.long.is_empty() && opt.short.is_some_and(|c| c == 'h' || c.is_ascii_digit()))
}

/// Subcommand models not checked, and why.
const NOT_CHECKED: &[(&str, &str)] = &[
    (
        "format-patch",
        "a deny-scan model of what it writes; its revision and diff tables are shared with log",
    ),
    (
        "rev-parse",
        "hand-parsed: it prints back or drops the words it does not know instead of failing, \
         so a canary cannot tell a value from an operand (its model takes no abbreviations)",
    ),
];

/// Every (subcommand model, context) pair to check.
///
/// Subcommands that share the very same option tables and parser style are checked once, under
/// the first of them (`git log` stands for whatchanged, show, stash list and diff-tree): one
/// table cannot hold two arities for one option anyway.
fn models() -> Vec<(String, Vec<Vec<&'static str>>, Model)> {
    let mut out = Vec::new();
    let mut seen: Vec<(Vec<(*const Opt, usize)>, super::super::Style)> = Vec::new();
    for (table, subs) in [("sub", SUBS), ("stash", STASH), ("scanned", SCANNED)] {
        for sub in subs {
            if let Some((_, why)) = NOT_CHECKED.iter().find(|(n, _)| *n == sub.name) {
                println!("not checked: git {}: {why}", sub.name);
                continue;
            }
            let tables = sub.options.iter().map(|t| (t.as_ptr(), t.len())).collect();
            let key = (tables, sub.style);
            if seen.contains(&key) {
                continue;
            }
            seen.push(key);
            let contexts = contexts(table, sub);
            let program = format!("git {}", contexts[0].join(" "));
            out.push((program, contexts, sub.model()));
        }
    }
    out
}

fn probes() -> Vec<Probe> {
    let mut out = Vec::new();
    for opt in GLOBAL.iter().filter(|o| !skipped(o)) {
        for spelling in spellings(opt) {
            out.push(Probe {
                program: "git".to_owned(),
                contexts: vec![Vec::new()],
                spelling,
                model: arity(opt.effect),
                global: true,
            });
        }
    }
    for (program, contexts, model) in models() {
        let mut seen = std::collections::HashSet::new();
        for opt in model.all_options().filter(|o| !skipped(o)) {
            for spelling in spellings(opt) {
                if seen.insert(spelling.clone()) {
                    out.push(Probe {
                        program: program.clone(),
                        contexts: contexts.clone(),
                        spelling,
                        model: arity(opt.effect),
                        global: false,
                    });
                }
            }
        }
    }
    out
}

/// An abbreviation probe: `git SUB --PREFIX`, which the model reads as `--LONG`.
struct Abbreviation {
    program: String,
    context: Vec<&'static str>,
    prefix: String,
    long: &'static str,
}

/// For a model that abbreviates: the shortest prefix of a long option the model reads as that
/// option and no option git lists for the subcommand starts with. Whether parse-options takes
/// abbreviations is one switch per parser (`PARSE_OPT_KEEP_UNKNOWN_OPT` turns it off), so three
/// options a subcommand (its first, middle and last eligible) stand for the rest.
fn abbreviations(listed: &[(String, Vec<String>)]) -> Vec<Abbreviation> {
    let mut out = Vec::new();
    for (program, contexts, model) in models() {
        let context = contexts[0].clone();
        if !model.reads_abbreviations() {
            continue;
        }
        let real = listed
            .iter()
            .find(|(p, _)| *p == program)
            .map(|(_, l)| l.as_slice())
            .unwrap_or_default();
        let mut seen = std::collections::HashSet::new();
        let mut eligible = Vec::new();
        for opt in model.all_options() {
            let long = opt.long;
            if long.len() < 4 || long == "help" || !seen.insert(long) {
                continue;
            }
            let prefix = (2..long.len()).map(|n| &long[..n]).find(|p| {
                let mine = model.read_candidates(p);
                mine.len() == 1
                    && mine[0].long == long
                    && real.iter().all(|r| r == long || !r.starts_with(p))
            });
            if let Some(prefix) = prefix {
                eligible.push(Abbreviation {
                    program: program.clone(),
                    context: context.clone(),
                    prefix: format!("--{prefix}"),
                    long,
                });
            }
        }
        let count = eligible.len();
        for (i, abbreviation) in eligible.into_iter().enumerate() {
            if i == 0 || i == count / 2 || i + 1 == count {
                out.push(abbreviation);
            }
        }
    }
    out
}

/// The long options `git SUB --git-completion-helper-all` lists (parse-options commands
/// only; empty for the others).
fn completion_lists() -> Vec<(String, Vec<String>)> {
    let scratch = Scratch::new();
    let items = models();
    parallel(
        &items,
        || (),
        |(), (program, contexts, _)| {
            let mut args: Vec<String> = contexts[0].iter().map(|s| (*s).to_owned()).collect();
            args.push("--git-completion-helper-all".to_owned());
            let out = run("git", &args, &scratch.template, &env(&scratch.home));
            let listed: Vec<String> = if out.stderr.trim().is_empty() {
                out.stdout
                    .split_whitespace()
                    .filter_map(|w| w.strip_prefix("--"))
                    .filter(|w| !w.is_empty())
                    .map(|w| w.trim_end_matches('=').to_owned())
                    .collect()
            } else {
                Vec::new()
            };
            (program.clone(), listed)
        },
    )
}

#[test]
fn git_option_arities_match_the_installed_git() {
    assert!(installed("git"), "git must be installed");
    let probes = probes();
    let found = parallel(&probes, Scratch::new, |scratch, probe| {
        let real = truth(scratch, probe);
        (!agrees(probe.model, real, probe.spelling.starts_with("--"))).then(|| Disagreement {
            program: probe.program.clone(),
            option: probe.spelling.clone(),
            model: probe.model.to_string(),
            real: real.to_string(),
        })
    });
    let mut disagreements: Vec<Disagreement> = found.into_iter().flatten().collect();

    let listed = completion_lists();
    let abbreviations = abbreviations(&listed);
    let refused = parallel(&abbreviations, Scratch::new, |scratch, abbreviation| {
        let mut args: Vec<String> = abbreviation
            .context
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        args.extend([
            abbreviation.prefix.clone(),
            "--output=canary-out".to_owned(),
        ]);
        let (out, _) = scratch.git(args, true);
        unknown(&out, &abbreviation.prefix).then(|| Disagreement {
            program: abbreviation.program.clone(),
            option: abbreviation.prefix.clone(),
            model: format!("an abbreviation of --{}", abbreviation.long),
            real: "no abbreviation (an unknown option)".to_owned(),
        })
    });
    disagreements.extend(refused.into_iter().flatten());

    // An option git has that the model reads as an abbreviation of another.
    for (program, _, model) in models() {
        if !model.reads_abbreviations() {
            continue;
        }
        let Some((_, real)) = listed.iter().find(|(p, _)| *p == program) else {
            continue;
        };
        for name in real {
            let mine = model.read_candidates(name);
            if let Some(other) = mine.iter().find(|o| o.long != name.as_str()) {
                disagreements.push(Disagreement {
                    program: program.clone(),
                    option: format!("--{name}"),
                    model: format!("an abbreviation of --{}", other.long),
                    real: "an option of its own".to_owned(),
                });
            }
        }
    }
    verdict("git", &disagreements, probes.len() + abbreviations.len());
}
