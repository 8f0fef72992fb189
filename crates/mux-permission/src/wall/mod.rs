//! The OS sandbox of the `bash` tool in the policy's verdicts: whether it is up, and what it
//! changes for one call (auto-allow, excluded commands, requests to leave it).

use mux_tool::builtin::{Bash, SandboxPolicy};
use mux_tool::{ToolSpec, TypedTool};
use serde_json::Value;

use crate::prepared::Prepared;
mod outside;
mod walls;

pub use outside::Outside;
pub(crate) use outside::excluded;
pub use walls::{WallOrigin, WallPath, Walls};

use crate::sandbox::{DANGEROUSLY_DISABLE_SANDBOX, SandboxSettings};
use crate::{GateVerdict, Mode, PathContext, Verdict};

/// The `bash` tool's OS sandbox, fixed when the policy is built, so the tool built from it
/// and the verdicts cannot disagree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct BashWall {
    policy: SandboxPolicy,
    up: bool,
}

impl BashWall {
    /// The wall from the application's declared policy and the merged `sandbox.enabled`.
    pub(crate) fn new(declared: Option<SandboxPolicy>, enabled: Option<bool>) -> Self {
        let policy = match (declared, enabled) {
            (Some(SandboxPolicy::FullAccess) | None, Some(true)) => SandboxPolicy::WorkspaceWrite,
            (Some(policy), _) => policy,
            (None, _) => SandboxPolicy::default(),
        };
        let declared_up = declared.is_some() || enabled == Some(true);
        Self {
            policy,
            up: declared_up && policy != SandboxPolicy::FullAccess && enabled != Some(false),
        }
    }

    pub(crate) fn policy(self) -> SandboxPolicy {
        self.policy
    }

    pub(crate) fn is_up(self) -> bool {
        self.up
    }
}

/// Whether `spec` is the tool the wall bounds: mux's `bash`.
pub(crate) fn is_walled_tool(spec: &ToolSpec) -> bool {
    spec.name.as_str() == Bash::NAME
}

/// Whether a call's input asks to leave the OS sandbox: `dangerouslyDisableSandbox` set to
/// anything but `false` or `null`.
pub(crate) fn requests_unsandboxed(spec: &ToolSpec, input: &Value) -> bool {
    is_walled_tool(spec)
        && input
            .get(DANGEROUSLY_DISABLE_SANDBOX)
            .is_some_and(|flag| !matches!(flag, Value::Bool(false) | Value::Null))
}

/// What the wall means for one call to the walled `bash`.
#[derive(Clone, Debug)]
pub(crate) struct WallCheck {
    auto_allow: bool,
    allows_unsandboxed: bool,
    /// Why the command runs outside the wall, if it does.
    pub(crate) outside: Option<Outside>,
}

impl WallCheck {
    pub(crate) fn new(
        settings: &SandboxSettings,
        prepared: &Prepared,
        requested: bool,
        context: &PathContext,
    ) -> Self {
        let outside = if requested {
            Some(Outside::Requested)
        } else {
            excluded(&settings.excluded_commands, prepared, context).map(Outside::Excluded)
        };
        Self {
            auto_allow: settings.auto_allows_bash(),
            allows_unsandboxed: settings.allows_unsandboxed(),
            outside,
        }
    }

    /// The refusal of a command that would leave the wall where the settings forbid it.
    pub(crate) fn refusal(&self) -> Option<GateVerdict> {
        let outside = self.outside.as_ref()?;
        (!self.allows_unsandboxed).then(|| {
            GateVerdict::new(
                Verdict::Deny,
                format!(
                    "refused: {outside}, and sandbox.allowUnsandboxedCommands is false; \
                     commands run only inside the OS sandbox"
                ),
            )
        })
    }

    /// `decision` (an ask, or dontAsk's refusal of what no rule allows) turned into an allow
    /// when the command runs inside the wall and `autoAllowBashIfSandboxed` is on.
    pub(crate) fn auto_allow(&self, decision: GateVerdict) -> GateVerdict {
        if !self.auto_allow || self.outside.is_some() || decision.verdict == Verdict::Allow {
            return decision;
        }
        GateVerdict::new(
            Verdict::Allow,
            format!(
                "allowed: the OS sandbox bounds it (autoAllowBashIfSandboxed); without the \
                 wall: {}",
                decision.reason
            ),
        )
    }

    /// The verdict as the wall leaves it: marked when the command runs outside, and then
    /// asking in every mode, even where a rule or bypass mode would allow it (refused where
    /// no one can be asked), so no settings file can let a command leave the wall unseen.
    pub(crate) fn finish(&self, mut verdict: GateVerdict, mode: Mode) -> GateVerdict {
        let Some(outside) = &self.outside else {
            return verdict;
        };
        verdict.unsandboxed = true;
        if verdict.verdict == Verdict::Allow {
            verdict.verdict = Verdict::Ask;
            verdict.reason = format!(
                "{outside}: leaving the wall asks in every mode (it would be {})",
                verdict.reason
            );
            if mode == Mode::DontAsk {
                verdict.verdict = Verdict::Deny;
                verdict.reason = format!("{mode} mode cannot ask: {}", verdict.reason);
            }
        } else if verdict.verdict == Verdict::Ask {
            verdict.reason = format!(
                "{} (it runs outside the OS sandbox: {outside})",
                verdict.reason
            );
        }
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use SandboxPolicy::*;

    #[test]
    fn the_wall_from_the_declared_policy_and_enabled() {
        let wall = |declared, enabled| {
            let w = BashWall::new(declared, enabled);
            (w.policy(), w.is_up())
        };
        assert_eq!(wall(None, None), (WorkspaceWrite, false));
        assert_eq!(wall(None, Some(true)), (WorkspaceWrite, true));
        assert_eq!(wall(None, Some(false)), (WorkspaceWrite, false));
        assert_eq!(wall(Some(ReadOnly), None), (ReadOnly, true));
        assert_eq!(wall(Some(ReadOnly), Some(true)), (ReadOnly, true));
        assert_eq!(wall(Some(ReadOnly), Some(false)), (ReadOnly, false));
        assert_eq!(wall(Some(FullAccess), None), (FullAccess, false));
        assert_eq!(wall(Some(FullAccess), Some(true)), (WorkspaceWrite, true));
        assert_eq!(wall(Some(FullAccess), Some(false)), (FullAccess, false));
    }
}
