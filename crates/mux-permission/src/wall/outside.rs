//! Whether a command runs outside the wall: it contains an excluded command, or its call
//! asks for it.

use std::fmt;

use crate::PathContext;
use crate::prepared::Prepared;

/// Why a command runs outside the OS sandbox.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outside {
    /// One of its commands matches this `excludedCommands` pattern.
    Excluded(String),
    /// The call asked for it (`dangerouslyDisableSandbox`).
    Requested,
}

impl fmt::Display for Outside {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outside::Excluded(pattern) => write!(
                f,
                "it matches the excluded command `{pattern}` (sandbox.excludedCommands)"
            ),
            Outside::Requested => write!(
                f,
                "the call asks to run outside the OS sandbox ({})",
                crate::sandbox::DANGEROUSLY_DISABLE_SANDBOX
            ),
        }
    }
}

/// The first excluded pattern one of the script's commands matches as written (or by its
/// program's base name), anywhere in it: after `&&`, in a pipeline, inside `$(…)`, behind a
/// wrapper. Only a command the analysis reads counts: what it cannot read runs inside the
/// wall, the safe side. A pattern that does not compile (settings built in code without
/// [`validate`](crate::sandbox::SandboxSettings::validate)) matches every command.
pub(crate) fn excluded(
    patterns: &[String],
    prepared: &Prepared,
    _context: &PathContext,
) -> Option<String> {
    let Prepared::Command(analysis) = prepared else {
        return None;
    };
    patterns
        .iter()
        .find(|pattern| match crate::sandbox::excluded_pattern(pattern) {
            Ok(compiled) => analysis
                .everywhere
                .iter()
                .any(|words| compiled.matches_any_path(words)),
            Err(_) => true,
        })
        .cloned()
}
