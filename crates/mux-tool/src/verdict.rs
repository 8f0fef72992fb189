//! What a policy or gate concludes about a call, and on what grounds.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The policy's three outcomes for a call: run it, ask someone first, or refuse it.
///
/// The one word for what a policy or gate concludes; a person's reply is mux-permission's
/// `Answer`. Serialises as `"allow"`, `"ask"` or `"deny"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Run the call.
    Allow,
    /// Ask someone first.
    Ask,
    /// Refuse the call.
    Deny,
}

impl Verdict {
    /// The lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::Ask => "ask",
            Verdict::Deny => "deny",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The scope a permission rule or mode comes from, highest first.
///
/// Rule lists of every scope merge; the mode comes from the highest scope that sets one, and
/// a managed scope can forbid the others from allowing. Named here so that a
/// [`GateVerdict`] can say which scope decided; mux-permission gives the scopes their rules.
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

/// The one verdict type: a [`Verdict`], the reason for it, and the rule and [`Scope`] that
/// decided, when a rule (or a scope's mode) did.
///
/// What mux-permission's `Permissions::check` concludes and what an
/// [`ApprovalGate`](crate::ApprovalGate) returns to the executor. Only [`Verdict::Allow`]
/// runs the call. [`Verdict::Deny`] refuses it, and so does [`Verdict::Ask`] from a gate: a
/// gate that returns ask found no one to answer. Either way the reason reaches the model.
///
/// Serialises as `{"verdict":"allow|ask|deny","reason":…,"rule":…,"scope":…}`, leaving out
/// a rule or scope that is not set (plus `"unsandboxed":true` when set); `reason`, `rule`
/// and `scope` may be left out or null when read, and the key `"decision"` of earlier
/// releases is still read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateVerdict {
    /// Allow, ask or deny.
    #[serde(alias = "decision")]
    pub verdict: Verdict,
    /// Why; empty for a plain allow.
    #[serde(default)]
    pub reason: String,
    /// The deciding rule, as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The scope of the deciding rule (or of the mode, when the mode decided).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
    /// The command runs outside the OS sandbox of the `bash` tool, which is up: it matches
    /// `sandbox.excludedCommands` or its call asked to (`dangerouslyDisableSandbox`). The
    /// tool must then run it without the wall; a face can show it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unsandboxed: bool,
}

impl GateVerdict {
    /// A verdict with its reason, decided by no rule.
    pub fn new(verdict: Verdict, reason: impl Into<String>) -> Self {
        Self {
            verdict,
            reason: reason.into(),
            rule: None,
            scope: None,
            unsandboxed: false,
        }
    }

    /// Run the call.
    pub fn allow() -> Self {
        Self::new(Verdict::Allow, String::new())
    }

    /// Refuse the call, with a reason the model reads.
    pub fn deny(reason: impl Into<String>) -> Self {
        Self::new(Verdict::Deny, reason)
    }

    /// The call still needs an answer: from a gate, no one gave one, and it does not run.
    pub fn ask(reason: impl Into<String>) -> Self {
        Self::new(Verdict::Ask, reason)
    }

    /// The same verdict, decided by `rule` of `scope`.
    pub fn by(mut self, rule: impl Into<String>, scope: Scope) -> Self {
        self.rule = Some(rule.into());
        self.scope = Some(scope);
        self
    }

    /// The same verdict, with `scope` as the deciding scope.
    pub fn in_scope(mut self, scope: Option<Scope>) -> Self {
        self.scope = scope;
        self
    }

    /// Whether the verdict is allow: the call runs.
    pub fn is_allow(&self) -> bool {
        self.verdict == Verdict::Allow
    }

    /// Whether the verdict is ask.
    pub fn is_ask(&self) -> bool {
        self.verdict == Verdict::Ask
    }

    /// Whether the verdict is deny.
    pub fn is_deny(&self) -> bool {
        self.verdict == Verdict::Deny
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_wire_shapes_of_both_former_types_are_read() {
        // What a policy's verdict was written as, rule and scope included.
        let policy: GateVerdict = serde_json::from_str(
            r#"{"verdict":"deny","reason":"denied by the rule `Bash(rm:*)`","rule":"Bash(rm:*)","scope":"project"}"#,
        )
        .unwrap();
        assert_eq!(
            policy,
            GateVerdict::deny("denied by the rule `Bash(rm:*)`").by("Bash(rm:*)", Scope::Project)
        );
        // What a gate's verdict was written as, and the key of earlier releases.
        let gate: GateVerdict = serde_json::from_str(r#"{"verdict":"allow"}"#).unwrap();
        assert_eq!(gate, GateVerdict::allow());
        let old: GateVerdict =
            serde_json::from_str(r#"{"decision":"ask","reason":"why"}"#).unwrap();
        assert_eq!(old, GateVerdict::ask("why"));
        let nulls: GateVerdict =
            serde_json::from_str(r#"{"verdict":"ask","reason":"r","rule":null,"scope":null}"#)
                .unwrap();
        assert_eq!(nulls, GateVerdict::ask("r"));
        // Written with the keys that are set; a false `unsandboxed` is left out.
        let written = serde_json::to_value(GateVerdict::ask("r").by("x", Scope::Session)).unwrap();
        assert_eq!(
            written,
            serde_json::json!({"verdict":"ask","reason":"r","rule":"x","scope":"session"})
        );
        let plain = serde_json::to_value(GateVerdict::deny("no")).unwrap();
        assert_eq!(plain, serde_json::json!({"verdict":"deny","reason":"no"}));
        let bad = serde_json::from_str::<GateVerdict>(r#"{"verdict":"maybe"}"#).unwrap_err();
        assert!(bad.to_string().contains("maybe"), "{bad}");
    }
}
