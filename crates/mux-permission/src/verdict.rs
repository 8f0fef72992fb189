//! What a check concludes, and why.

use serde::{Deserialize, Serialize};

use crate::{Scope, Verdict};

/// A check's result: the verdict, a reason a person (or model) can read, and the rule and
/// scope that decided, when a rule did.
///
/// The policy's [`Verdict`] with its grounds; "verdict" is the one word for what a policy
/// concludes (a person's reply is an [`Answer`](crate::Answer)).
///
/// Serialises as `{"verdict":"allow|ask|deny","reason":…,"rule":…,"scope":…}`; the key
/// `"decision"` of earlier releases is still read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyVerdict {
    /// Allow, ask or deny.
    #[serde(alias = "decision")]
    pub verdict: Verdict,
    /// Why.
    pub reason: String,
    /// The deciding rule, as written.
    pub rule: Option<String>,
    /// The scope of the deciding rule (or of the mode, when the mode decided).
    pub scope: Option<Scope>,
    /// The command runs outside the OS sandbox of the `bash` tool, which is up: it matches
    /// `sandbox.excludedCommands` or its call asked to (`dangerouslyDisableSandbox`). The
    /// tool must then run it without the wall; a face can show it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unsandboxed: bool,
}

impl PolicyVerdict {
    pub(crate) fn new(verdict: Verdict, reason: impl Into<String>) -> Self {
        Self {
            verdict,
            reason: reason.into(),
            rule: None,
            scope: None,
            unsandboxed: false,
        }
    }

    pub(crate) fn by(mut self, rule: &str, scope: Scope) -> Self {
        self.rule = Some(rule.to_owned());
        self.scope = Some(scope);
        self
    }

    pub(crate) fn in_scope(mut self, scope: Option<Scope>) -> Self {
        self.scope = scope;
        self
    }

    /// Whether the verdict is allow.
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
