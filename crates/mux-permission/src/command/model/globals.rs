//! Global options that may stand between a command and its subcommand, for the prefix rules
//! of the deny side (`git -C . push` is `git push`). git's come from its model.

use super::git;

/// Global options that may stand between a command and its subcommand, for prefix rules
/// (`git -C . push` is `git push`): the option and whether it takes a value. Options not
/// listed are read conservatively (their next word may be a value or the subcommand).
const GLOBAL_OPTIONS: &[(&str, &[(&str, bool)])] = &[
    (
        "docker",
        &[
            ("--config", true),
            ("-c", true),
            ("--context", true),
            ("-D", false),
            ("--debug", false),
            ("-H", true),
            ("--host", true),
            ("-l", true),
            ("--log-level", true),
            ("--tls", false),
            ("--tlscacert", true),
            ("--tlscert", true),
            ("--tlskey", true),
            ("--tlsverify", false),
        ],
    ),
    (
        "kubectl",
        &[
            ("-n", true),
            ("--namespace", true),
            ("--context", true),
            ("--kubeconfig", true),
            ("--cluster", true),
            ("--user", true),
            ("-s", true),
            ("--server", true),
            ("--token", true),
            ("--as", true),
            ("--as-group", true),
            ("-v", true),
            ("--request-timeout", true),
            ("--insecure-skip-tls-verify", false),
        ],
    ),
    (
        "npm",
        &[
            ("--prefix", true),
            ("-w", true),
            ("--workspace", true),
            ("-g", false),
            ("--global", false),
            ("--loglevel", true),
            ("--registry", true),
            ("-C", true),
            ("--userconfig", true),
            ("-s", false),
            ("--silent", false),
            ("-q", false),
            ("--yes", false),
            ("-y", false),
        ],
    ),
    (
        "cargo",
        &[
            ("+", false),
            ("--locked", false),
            ("--offline", false),
            ("--frozen", false),
            ("-v", false),
            ("-vv", false),
            ("--verbose", false),
            ("-q", false),
            ("--quiet", false),
            ("--color", true),
            ("-Z", true),
            ("-C", true),
            ("--config", true),
        ],
    ),
];

/// Whether `word` is one of `command`'s global options, and whether it takes the next word as
/// its value. `None` when the command has a table and the word is not in it, or when the
/// command has no table. git's come from its model ([`git::global`]).
pub(crate) fn global_option(command: &str, word: &str) -> Option<bool> {
    if command == "git" {
        let (opt, attached) = git::global(word)?;
        return Some(opt.effect.needs_value() && !attached);
    }
    let (_, table) = GLOBAL_OPTIONS.iter().find(|(name, _)| *name == command)?;
    if command == "cargo" && word.starts_with('+') {
        return Some(false);
    }
    let (name, attached) = match word.split_once('=') {
        Some((name, _)) => (name, true),
        None => (word, false),
    };
    table
        .iter()
        .find(|(spelling, _)| *spelling == name)
        .map(|(_, takes)| *takes && !attached)
}
