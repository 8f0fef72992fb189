//! Where a run is: running, paused, or ended, and how.

use serde::{Deserialize, Serialize};

/// Where a run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// An owner executes it under a lease.
    Running,
    /// It waits for an answer (an approval, a question, a frontend tool); no one executes it.
    Paused,
    /// It ended with an answer.
    Finished,
    /// It ended with an error.
    Failed,
    /// It was cancelled.
    Cancelled,
}

impl RunStatus {
    /// The lower-case name, as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Paused => "paused",
            Self::Finished => "finished",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// The status named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        [
            Self::Running,
            Self::Paused,
            Self::Finished,
            Self::Failed,
            Self::Cancelled,
        ]
        .into_iter()
        .find(|status| status.as_str() == name)
    }

    /// Whether the run still holds its session (running or paused).
    pub fn is_active(self) -> bool {
        matches!(self, Self::Running | Self::Paused)
    }
}
