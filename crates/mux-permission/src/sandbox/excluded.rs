//! What an `excludedCommands` entry means.

use crate::command::{CommandPattern, CommandPatternError};

/// The command pattern an `excludedCommands` entry stands for, as in a `Bash(…)` rule,
/// except that a program name alone (`docker`, as Claude Code's examples write it) stands
/// for every command of that program (`docker:*`).
pub(crate) fn excluded_pattern(pattern: &str) -> Result<CommandPattern, CommandPatternError> {
    let pattern = pattern.trim();
    let is_program = !pattern.is_empty()
        && !pattern.contains(['*', ' ', '\t', '\'', '"', ':'])
        && !pattern.contains(char::is_whitespace);
    if is_program {
        CommandPattern::parse(&format!("{pattern}:*"))
    } else {
        CommandPattern::parse(pattern)
    }
}
