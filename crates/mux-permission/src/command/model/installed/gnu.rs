//! GNU tools' option arities, from the tools themselves: each program's `--help` (`--opt=ARG`
//! required, `--opt[=ARG]` optional, `-x ARG` required, `-x[ARG]` optional; a short option
//! beside a long one with a required value takes it too), then getopt's own reading: the
//! option followed by a canary option, which getopt names as unrecognized when the option did
//! not take it as its value. find's primaries are read the same way through find's
//! "unknown predicate" error.

use std::collections::HashMap;
use std::path::Path;

use super::super::opt::Opt;
use super::super::{Model, Style, find, lookup};
use super::{Arity, Disagreement, arity, installed, parallel, run, verdict};

/// The programs whose models are checked here; the core ones must be installed.
const PROGRAMS: &[&str] = &[
    "diff", "grep", "sed", "ls", "cat", "head", "tail", "wc", "sort", "uniq", "cut", "tr", "file",
    "stat", "du", "df", "basename", "dirname", "realpath", "readlink",
];
const CORE: &[&str] = &["diff", "grep", "sed", "find"];

/// Models not checked here, and why (printed, so a reader sees what is not covered).
const NOT_CHECKED: &[(&str, &str)] = &[
    ("egrep", "a wrapper of grep, whose model it shares"),
    ("fgrep", "a wrapper of grep, whose model it shares"),
    ("printf", "bash's builtin, not getopt"),
    ("pwd", "bash's builtin, not getopt"),
    ("which", "a shell script with two flags"),
    (
        "awk",
        "the model is gawk's; mawk's options are read by its own parser",
    ),
    (
        "jq",
        "jq's own parser (exact spellings, checked by its suite)",
    ),
];

/// What `--help` says of one option: its arity by long name and by short letter.
#[derive(Debug, Default)]
struct Help {
    long: HashMap<String, Arity>,
    short: HashMap<char, Arity>,
}

/// One spelling in a help line's option list, and the rest of the line after it.
fn spelling(text: &str) -> Option<(Spelled, &str)> {
    if let Some(rest) = text.strip_prefix("--") {
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .unwrap_or(rest.len());
        let (name, after) = rest.split_at(end);
        if name.is_empty() {
            return None;
        }
        let (arity, after) = if let Some(a) = after.strip_prefix("[=") {
            (Arity::Optional, a.split_once(']').map_or("", |(_, r)| r))
        } else if let Some(a) = after.strip_prefix('=') {
            (Arity::Required, skip_word(a))
        } else if let Some(a) = argument(after) {
            (Arity::Required, a)
        } else {
            (Arity::Flag, after)
        };
        return Some((Spelled::Long(name.to_owned(), arity), after));
    }
    let rest = text.strip_prefix('-')?;
    let letter = rest.chars().next()?;
    let after = &rest[letter.len_utf8()..];
    if !letter.is_ascii_alphanumeric() {
        return None;
    }
    if let Some(a) = after.strip_prefix('[') {
        return Some((
            Spelled::Short(letter, Some(Arity::Optional)),
            a.split_once(']').map_or("", |(_, r)| r),
        ));
    }
    if let Some(a) = argument(after) {
        return Some((Spelled::Short(letter, Some(Arity::Required)), a));
    }
    if after.is_empty() || after.starts_with(',') || after.starts_with(' ') {
        return Some((Spelled::Short(letter, None), after));
    }
    None
}

/// `-C NUM`, `--magic-file LIST`: one space, then an argument word (not an option, not the
/// description, which stands two spaces away).
fn argument(after: &str) -> Option<&str> {
    let word = after.strip_prefix(' ')?;
    let first = word.chars().next()?;
    (first != ' ' && first != '-').then(|| skip_word(word))
}

fn skip_word(text: &str) -> &str {
    let end = text.find([',', ' ']).unwrap_or(text.len());
    &text[end..]
}

enum Spelled {
    Long(String, Arity),
    /// `None`: no argument of its own; it shares its long option's, if that one's is required.
    Short(char, Option<Arity>),
}

/// Reads a `--help` text.
fn parse_help(text: &str) -> Help {
    let mut help = Help::default();
    for line in text.lines() {
        let mut rest = line.trim_start();
        // Option lines are indented; `--terse is equivalent to ...` is prose.
        if !rest.starts_with('-') || !line.starts_with(' ') {
            continue;
        }
        let mut spelled = Vec::new();
        while let Some((one, after)) = spelling(rest) {
            spelled.push(one);
            let trimmed = after.trim_start_matches([',', ' ']);
            if trimmed.starts_with('-') && (after.starts_with(',') || after.starts_with("  ")) {
                rest = trimmed;
            } else {
                break;
            }
        }
        let long_required = spelled
            .iter()
            .any(|s| matches!(s, Spelled::Long(_, Arity::Required)));
        for one in spelled {
            match one {
                Spelled::Long(name, arity) => {
                    // `--time` and `--time=WORD` on two lines: an optional value.
                    let merged = match help.long.get(&name) {
                        Some(&old) if old != arity => Arity::Optional,
                        _ => arity,
                    };
                    help.long.insert(name, merged);
                }
                Spelled::Short(letter, own) => {
                    let arity = own.unwrap_or(if long_required {
                        Arity::Required
                    } else {
                        Arity::Flag
                    });
                    help.short.insert(letter, arity);
                }
            }
        }
    }
    help
}

const CANARY: &str = "--mux-canary-option";

/// What getopt made of `spelling` followed by the canary.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Read {
    /// The canary was read as an option: `spelling` took no next word.
    Option,
    /// The canary was taken as `spelling`'s value.
    Value,
    /// The program stopped at `spelling` (`--help`, `--version`).
    Exited,
    /// The program does not know `spelling`.
    Unknown,
}

fn next_word(program: &str, spelling: &str, dir: &Path) -> Read {
    let out = run(
        program,
        &[spelling.to_owned(), CANARY.to_owned()],
        dir,
        &[("LC_ALL", "C".to_owned())],
    );
    let e = &out.stderr;
    let canary_read = e.contains(&format!("unrecognized option '{CANARY}'"))
        || e.contains(&format!("unknown option -- {}", &CANARY[2..]))
        || e.contains(&format!("invalid option -- '{}'", &CANARY[2..3]));
    let unknown = match spelling.strip_prefix("--") {
        Some(_) => e.contains(&format!("unrecognized option '{spelling}'")),
        None => e.contains(&format!("invalid option -- '{}'", &spelling[1..])),
    };
    if unknown {
        Read::Unknown
    } else if canary_read {
        Read::Option
    } else if e.trim().is_empty() && !out.stdout.trim().is_empty() {
        Read::Exited
    } else {
        Read::Value
    }
}

fn spellings(opt: &Opt) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    if !opt.long.is_empty() {
        out.push((format!("--{}", opt.long), true));
    }
    if let Some(c) = opt.short {
        out.push((format!("-{c}"), false));
    }
    out
}

fn check_program(program: &str, model: &Model, dir: &Path) -> (Vec<Disagreement>, usize) {
    let help = parse_help(
        &run(
            program,
            &["--help".to_owned()],
            dir,
            &[("LC_ALL", "C".to_owned())],
        )
        .stdout,
    );
    let mut found = Vec::new();
    let mut checked = 0;
    for opt in model.all_options() {
        for (spelled, long) in spellings(opt) {
            checked += 1;
            let said = if long {
                help.long.get(&spelled[2..]).copied()
            } else {
                spelled[1..]
                    .chars()
                    .next()
                    .and_then(|c| help.short.get(&c).copied())
            };
            // getopt decides whether the next word is taken; `--help` whether a value
            // that is not taken is optional (`--opt[=ARG]`) or none.
            let real = match (next_word(program, &spelled, dir), said) {
                (Read::Unknown, _) => Arity::Unknown,
                (Read::Value, _) => Arity::Required,
                (Read::Exited, Some(said)) => said,
                (Read::Option, Some(Arity::Optional)) => Arity::Optional,
                (Read::Option | Read::Exited, _) => Arity::Flag,
            };
            if real != arity(opt.effect) {
                found.push(Disagreement {
                    program: program.to_owned(),
                    option: spelled.clone(),
                    model: arity(opt.effect).to_string(),
                    real: if said.is_none() && real != Arity::Unknown {
                        format!("{real} (by getopt; not in --help)")
                    } else {
                        real.to_string()
                    },
                });
            }
        }
    }
    // A long option the program has that the model reads as an abbreviation of another.
    if model.style == Style::Gnu {
        for name in help.long.keys() {
            let mine = model.read_candidates(name);
            if let Some(other) = mine.iter().find(|o| o.long != name.as_str()) {
                found.push(Disagreement {
                    program: program.to_owned(),
                    option: format!("--{name}"),
                    model: format!("an abbreviation of --{}", other.long),
                    real: "an option of its own".to_owned(),
                });
            }
        }
    }
    (found, checked)
}

/// find's primaries: `find DIR -maxdepth 0 PRIMARY -muxcanary`; find names the canary as an
/// unknown predicate when PRIMARY took no argument.
fn check_find(dir: &Path) -> (Vec<Disagreement>, usize) {
    let mut found = Vec::new();
    let mut checked = 0;
    let operators = ["!", "(", ")", ",", "-not", "-a", "-and", "-o", "-or"];
    let help_like = ["-help", "--help", "-version", "--version"];
    let primaries = find::NULLARY
        .iter()
        .map(|p| (*p, Arity::Flag))
        .chain(find::UNARY.iter().map(|p| (*p, Arity::Required)));
    for (primary, model) in primaries {
        if operators.contains(&primary) || help_like.contains(&primary) {
            continue;
        }
        checked += 1;
        let out = run(
            "find",
            &[
                ".".to_owned(),
                "-maxdepth".to_owned(),
                "0".to_owned(),
                primary.to_owned(),
                "-muxcanary".to_owned(),
            ],
            dir,
            &[("LC_ALL", "C".to_owned())],
        );
        let e = &out.stderr;
        let real = if e.contains(&format!("unknown predicate `{primary}'")) {
            Arity::Unknown
        } else if e.contains("unknown predicate `-muxcanary'") {
            Arity::Flag
        } else {
            Arity::Required
        };
        if real != model {
            found.push(Disagreement {
                program: "find".to_owned(),
                option: primary.to_owned(),
                model: model.to_string(),
                real: real.to_string(),
            });
        }
    }
    (found, checked)
}

#[test]
fn gnu_option_arities_match_the_installed_tools() {
    for core in CORE {
        assert!(installed(core), "{core} must be installed");
    }
    for (name, why) in NOT_CHECKED {
        println!("not checked: {name}: {why}");
    }
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let present: Vec<&str> = PROGRAMS
        .iter()
        .copied()
        .filter(|p| {
            let there = installed(p);
            if !there {
                println!("skipped: {p} is not installed");
            }
            there
        })
        .collect();
    let results = parallel(
        &present,
        || (),
        |(), program| match lookup(program) {
            Some(model) => check_program(program, model, dir.path()),
            None => (Vec::new(), 0),
        },
    );
    let mut disagreements = Vec::new();
    let mut checked = 0;
    for (found, count) in results {
        disagreements.extend(found);
        checked += count;
    }
    let (found, count) = check_find(dir.path());
    disagreements.extend(found);
    checked += count;
    verdict("GNU tools", &disagreements, checked);
}

#[test]
fn help_lines_are_read_as_getopt_reads_them() {
    let help = parse_help(concat!(
        "  -c, -C NUM, --context[=NUM]   output NUM lines\n",
        "  -i[SUFFIX], --in-place[=SUFFIX]\n",
        "  -n, --lines=[-]NUM       print\n",
        "  -c  --format=FORMAT   use\n",
        "  -m, --magic-file LIST      use LIST\n",
        "  -F, --classify[=WHEN]      append\n",
        "  -q, --quiet, --silent    never\n",
        "  -NUM                      same as --context=NUM\n",
    ));
    assert_eq!(help.long["context"], Arity::Optional);
    assert_eq!(help.short[&'C'], Arity::Required);
    assert_eq!(
        help.short[&'c'],
        Arity::Required,
        "stat's -c beside --format=FORMAT"
    );
    assert_eq!(help.short[&'i'], Arity::Optional);
    assert_eq!(help.short[&'n'], Arity::Required);
    assert_eq!(help.long["magic-file"], Arity::Required);
    assert_eq!(help.short[&'F'], Arity::Flag);
    assert_eq!(help.long["silent"], Arity::Flag);
    assert!(!help.short.contains_key(&'N'));
}
