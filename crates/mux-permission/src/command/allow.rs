//! What an allow rule covers: the rule's words, and every other word explained by the
//! program's model (see [`super::model`]).

use super::model::{self, Explained};
use super::pattern::CommandPattern;

/// Whether an allow rule (`None`: the whole tool) covers one simple command, and if not, why.
///
/// - An exact rule (`Bash(npm run test)`) explains every word itself, as long as none is a glob.
/// - A prefix or wildcard rule (`Bash(git:*)`, `Bash(npm run *)`) and the bare tool rule need
///   the program's model to explain *every* word after the program name: a known subcommand,
///   a known option with its arity, an operand of a known kind. A program without a model
///   keeps the rule's plain word match, but no word of it may be a glob.
pub fn covers(
    pattern: Option<&CommandPattern>,
    words: &[String],
    globs: &[Option<String>],
) -> Result<(), String> {
    if let Some(pattern) = pattern
        && !pattern.matches(words)
    {
        return Err("the rule's words do not match".to_owned());
    }
    let globbed = globs.iter().find_map(Option::as_deref);
    if let Some(CommandPattern::Exact(_)) = pattern {
        return match globbed {
            Some(glob) => Err(format!(
                "the pattern `{glob}` is not one of the rule's words"
            )),
            None => Ok(()),
        };
    }
    match model::explain(words, globs) {
        Explained::Fully => Ok(()),
        Explained::Not(why) => Err(why),
        Explained::NoModel => match globbed {
            Some(glob) => Err(format!(
                "the pattern `{glob}` is an argument of a program without a model"
            )),
            None => Ok(()),
        },
    }
}

/// Variables a command prefix may set without making the command unknown: locale, time zone,
/// colour and terminal width, log levels. None of them names a program, a file to run or a
/// configuration to load.
const INERT_VARIABLES: &[&str] = &[
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_COLLATE",
    "LC_CTYPE",
    "LC_MESSAGES",
    "LC_NUMERIC",
    "LC_TIME",
    "TZ",
    "NO_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "FORCE_COLOR",
    "TERM",
    "COLUMNS",
    "LINES",
    "RUST_BACKTRACE",
    "RUST_LOG",
    "CI",
];

/// Whether `NAME=value` before a command is one of [`INERT_VARIABLES`] with a plain value
/// (letters, digits, `_`, `-`, `.`, `:`, `=`, `,`; no expansion, no path).
fn inert_assignment(node: Node<'_>, src: &str) -> bool {
    let name = node
        .child_by_field_name("name")
        .map(|n| &src[n.byte_range()]);
    let value = node
        .child_by_field_name("value")
        .map_or("", |v| &src[v.byte_range()]);
    name.is_some_and(|n| INERT_VARIABLES.contains(&n))
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':' | '=' | ','))
}

/// How many words before `words[start]` are plain operands, not options or their possible
/// values.
fn leading_plain_words(words: &[String], start: usize) -> usize {
    (1..start)
        .filter(|&i| {
            let word = &words[i];
            !word.starts_with('-') && !word.contains('=') && !words[i - 1].starts_with('-')
        })
        .count()
}
