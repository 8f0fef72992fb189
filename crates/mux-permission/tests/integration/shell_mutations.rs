//! Property: for a command the allow list allows, no spelling of a code-running or
//! file-writing option that the command's parser accepts stays Allow: the exact long option,
//! `--opt=value`, any abbreviation, the short option apart or clustered with its value behind
//! a harmless flag, after the operands, split by a backslash-newline, behind `--` in `sh -c`,
//! or with a glob or a backslash-newline in command position. The strings are only analysed.

use mux_permission::{PathContext, Permissions, RuleSet, Scope, ScopeRules, Verdict, builtin};
use mux_tool::Subject;
use proptest::prelude::*;

/// A base command (allowed as is), where its options go, a harmless short flag, and one
/// option that runs code or writes files: long name, short letter, whether it needs a value.
struct Smuggler {
    head: &'static str,
    tail: &'static str,
    flag: char,
    long: &'static str,
    short: Option<char>,
    value: bool,
}

const fn sm(
    head: &'static str,
    tail: &'static str,
    flag: char,
    long: &'static str,
    short: Option<char>,
    value: bool,
) -> Smuggler {
    Smuggler {
        head,
        tail,
        flag,
        long,
        short,
        value,
    }
}

const SMUGGLERS: &[Smuggler] = &[
    sm("git rebase", "main", 'i', "exec", Some('x'), true),
    sm(
        "git grep",
        "pattern",
        'n',
        "open-files-in-pager",
        Some('O'),
        false,
    ),
    sm("git difftool", "HEAD", 'y', "extcmd", Some('x'), true),
    sm("git fetch", "origin", 'v', "upload-pack", None, true),
    sm("git ls-remote", "origin", 'q', "upload-pack", None, true),
    sm("git log", "-1", 'p', "output", None, true),
    sm("git clone", "repo", 'q', "template", None, true),
    sm("tar -tf a.tar", "", 'v', "to-command", None, true),
    sm(
        "tar -tf a.tar",
        "",
        'v',
        "use-compress-program",
        Some('I'),
        true,
    ),
    sm("tar -tf a.tar", "", 'v', "checkpoint-action", None, true),
    sm("tar -tf a.tar", "", 'v', "info-script", Some('F'), true),
    sm("tar -tf a.tar", "", 'v', "new-volume-script", None, true),
    sm("sort", "file", 'n', "compress-program", None, true),
    sm("sort", "file", 'n', "output", Some('o'), true),
    sm("sed -n", "1p file", 'E', "in-place", Some('i'), false),
];

/// Option names that are also prefixes of a smuggler's name: the parser takes them as
/// themselves, not as abbreviations.
const SHADOWING: &[&str] = &["checkpoint"];

const ALLOW: &[&str] = &[
    "Bash(git:*)",
    "Bash(printf:*)",
    "Bash(test:*)",
    "Bash(sed -n:*)",
    "Bash(tar -tf:*)",
    "Bash(sort:*)",
];

fn permissions() -> Permissions {
    let mut rules = RuleSet::new();
    for rule in ALLOW {
        rules = rules.with_allow(rule).unwrap();
    }
    for rule in ["Bash(rm:*)", "Bash(curl:*)"] {
        rules = rules.with_deny(rule).unwrap();
    }
    Permissions::builder(PathContext::new("/nonexistent/project"))
        .scope(Scope::Project, ScopeRules::new(rules))
        .build()
}

fn join(parts: &[&str]) -> String {
    parts
        .iter()
        .filter(|p| !p.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" ")
}

/// One spelling of the smuggler's option, as the command line that carries it.
fn spelling(s: &Smuggler, form: usize, cut: usize) -> String {
    let value = "./payload";
    let long_with = |name: &str| {
        if s.value {
            format!("--{name}={value}")
        } else {
            format!("--{name}")
        }
    };
    let mut abbreviated = &s.long[..cut.clamp(1, s.long.len())];
    // An exact option name wins over an abbreviation of a longer one (`--checkpoint`).
    if SHADOWING.contains(&abbreviated) {
        abbreviated = s.long;
    }
    let option = match (form, s.short) {
        (0, _) => {
            if s.value {
                format!("--{} {value}", s.long)
            } else {
                format!("--{}", s.long)
            }
        }
        (1, _) => long_with(s.long),
        (2, _) => long_with(abbreviated),
        (3, Some(short)) if s.value => format!("-{short} {value}"),
        (3, Some(short)) => format!("-{short}"),
        (4, Some(short)) if s.value => format!("-{}{short}{value}", s.flag),
        (4, Some(short)) => format!("-{}{short}", s.flag),
        (5, _) => {
            // After the operands: the parsers permute.
            return join(&[s.head, s.tail, &long_with(abbreviated)]);
        }
        (6, _) => {
            // A backslash-newline inside the option word joins it again.
            let word = long_with(s.long);
            let (a, b) = word.split_at(3);
            format!("{a}\\\n{b}")
        }
        (7, _) => {
            // Behind `--`, as the script of `sh -c`.
            return format!("sh -c -- '{}'", join(&[s.head, &long_with(s.long), s.tail]));
        }
        (8, _) => {
            // A glob in command position.
            let head = s.head.replacen(&s.head[..1], "?", 1);
            return join(&[&head, &long_with(s.long), s.tail]);
        }
        (9, _) => {
            // A backslash-newline in command position.
            let head = format!("{}\\\n{}", &s.head[..1], &s.head[1..]);
            return join(&[&head, &long_with(s.long), s.tail]);
        }
        _ => long_with(abbreviated),
    };
    join(&[s.head, &option, s.tail])
}

#[test]
fn every_base_command_is_allowed() {
    let permissions = permissions();
    let bash = builtin::spec("Bash").unwrap();
    for s in SMUGGLERS {
        let base = join(&[s.head, s.tail]);
        let decision = permissions.check(&bash, &Subject::command(&base));
        assert_eq!(
            decision.verdict,
            Verdict::Allow,
            "{base}: {}",
            decision.reason
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn no_spelling_of_a_code_running_option_stays_allowed(
        which in 0..SMUGGLERS.len(),
        form in 0..10usize,
        cut in 1..24usize,
    ) {
        let s = &SMUGGLERS[which];
        let command = spelling(s, form, cut);
        let bash = builtin::spec("Bash").unwrap();
        let decision = permissions().check(&bash, &Subject::command(&command));
        prop_assert_ne!(decision.verdict, Verdict::Allow, "{:?}: {}", command, decision.reason);
    }
}
