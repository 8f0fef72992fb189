//! Whether a command runs outside the wall: it contains an excluded command, or its call
//! asks for it.

use std::fmt;

use crate::prepared::Prepared;
use crate::{PathContext, Rule, RuleError};

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
                super::DANGEROUSLY_DISABLE_SANDBOX
            ),
        }
    }
}

/// The rule an `excludedCommands` pattern stands for.
pub(super) fn compile(pattern: &str) -> Result<Rule, RuleError> {
    super::parse::bash_rule(pattern)
}

/// The first excluded pattern one of `command`'s commands matches, anywhere in it
/// (after `&&`, in a pipeline, inside `$(…)`), as a deny rule would find it. A pattern that
/// does not compile (settings built in code without [`validate`](super::SandboxSettings::validate))
/// counts as matching: the command then runs outside the wall and is not allowed by it.
pub(crate) fn excluded(
    patterns: &[String],
    prepared: &Prepared,
    context: &PathContext,
) -> Option<String> {
    if !matches!(prepared, Prepared::Command(_)) {
        return None;
    }
    patterns
        .iter()
        .find(|pattern| match compile(pattern) {
            Ok(rule) => prepared.caught_by(&rule, context),
            Err(_) => true,
        })
        .cloned()
}
