//! What a check decides, and why.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::Scope;

/// The three outcomes.
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

/// A check's result: the verdict, a reason a person (or model) can read, and the rule and
/// scope that decided, when a rule did.
///
/// Serialises as `{"decision":"allow|ask|deny","reason":…,"rule":…,"scope":…}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    /// Allow, ask or deny.
    #[serde(rename = "decision")]
    pub verdict: Verdict,
    /// Why.
    pub reason: String,
    /// The deciding rule, as written.
    pub rule: Option<String>,
    /// The scope of the deciding rule (or of the mode, when the mode decided).
    pub scope: Option<Scope>,
}

impl Decision {
    pub(crate) fn new(verdict: Verdict, reason: impl Into<String>) -> Self {
        Self {
            verdict,
            reason: reason.into(),
            rule: None,
            scope: None,
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
