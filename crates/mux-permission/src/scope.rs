//! Where a rule comes from.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The scope a rule or mode comes from, highest first.
///
/// Rule lists of every scope merge; the mode comes from the highest scope that sets one, and
/// a managed scope can forbid the others from allowing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Set by an administrator; highest.
    Managed,
    /// Shared by every agent in the process and updated live.
    Global,
    /// A project's settings file.
    Project,
    /// Rules for one agent type.
    Agent,
    /// In memory, for one session.
    Session,
}

impl Scope {
    /// Every scope, highest first.
    pub const ALL: [Scope; 5] = [
        Scope::Managed,
        Scope::Global,
        Scope::Project,
        Scope::Agent,
        Scope::Session,
    ];

    /// The lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Managed => "managed",
            Scope::Global => "global",
            Scope::Project => "project",
            Scope::Agent => "agent",
            Scope::Session => "session",
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
