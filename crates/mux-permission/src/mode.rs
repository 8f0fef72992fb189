//! Permission modes: what happens to calls no rule decides.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How calls that no rule decides are treated.
///
/// Names follow Claude Code's settings (`acceptEdits`, `bypassPermissions`, `dontAsk`); the
/// kebab-case spellings (`accept-edits`, `bypass`, `dont-ask`) are accepted too.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Mode {
    /// Unmatched calls ask.
    #[default]
    Default,
    /// File edits inside the project root are allowed; other unmatched calls ask.
    #[serde(alias = "accept-edits")]
    AcceptEdits,
    /// Only tools annotated read-only may run; everything else is denied.
    Plan,
    /// Everything is allowed, except that deny rules still hold.
    #[serde(rename = "bypassPermissions", alias = "bypass")]
    Bypass,
    /// For non-interactive runs: every ask becomes a deny.
    #[serde(alias = "dont-ask")]
    DontAsk,
}

impl Mode {
    /// Every mode.
    pub const ALL: [Mode; 5] = [
        Mode::Default,
        Mode::AcceptEdits,
        Mode::Plan,
        Mode::Bypass,
        Mode::DontAsk,
    ];

    /// The settings-file name of the mode.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Default => "default",
            Mode::AcceptEdits => "acceptEdits",
            Mode::Plan => "plan",
            Mode::Bypass => "bypassPermissions",
            Mode::DontAsk => "dontAsk",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A mode name that is not one of [`Mode::ALL`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown permission mode `{0}` (expected default, acceptEdits, plan, bypassPermissions or dontAsk)"
)]
pub struct UnknownMode(pub String);

impl FromStr for Mode {
    type Err = UnknownMode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "default" => Ok(Mode::Default),
            "acceptEdits" | "accept-edits" => Ok(Mode::AcceptEdits),
            "plan" => Ok(Mode::Plan),
            "bypassPermissions" | "bypass" => Ok(Mode::Bypass),
            "dontAsk" | "dont-ask" => Ok(Mode::DontAsk),
            other => Err(UnknownMode(other.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for mode in Mode::ALL {
            assert_eq!(mode.as_str().parse::<Mode>(), Ok(mode));
            let json = serde_json::to_string(&mode).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", mode.as_str()));
        }
        assert_eq!("dont-ask".parse::<Mode>(), Ok(Mode::DontAsk));
        assert!("yolo".parse::<Mode>().is_err());
    }
}
