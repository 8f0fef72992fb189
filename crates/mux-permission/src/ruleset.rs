//! The rules and mode one scope contributes.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::{Mode, Rule, RuleError, RuleKind};

/// The rules and mode of one scope.
///
/// ```
/// use mux_permission::{Mode, RuleSet};
///
/// let rules = RuleSet::new()
///     .with_allow("Bash(git status)")?
///     .with_deny("Bash(rm:*)")?
///     .with_mode(Mode::AcceptEdits);
/// assert_eq!(rules.allow.len(), 1);
/// # Ok::<(), mux_permission::RuleError>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct RuleSet {
    /// Allow rules.
    pub allow: Vec<Rule>,
    /// Ask rules.
    pub ask: Vec<Rule>,
    /// Deny rules.
    pub deny: Vec<Rule>,
    /// The mode this scope sets, if any.
    pub mode: Option<Mode>,
    /// Only for the managed scope: allow rules of every other scope are ignored.
    pub managed_rules_only: bool,
    /// The `sandbox` settings of this scope.
    pub sandbox: crate::sandbox::SandboxSettings,
    /// Settings-file entries with examples, by rule text, kept so that saving preserves them.
    pub(crate) entries: BTreeMap<String, Value>,
}

impl RuleSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// The list of one kind.
    pub fn list(&self, kind: RuleKind) -> &[Rule] {
        match kind {
            RuleKind::Allow => &self.allow,
            RuleKind::Ask => &self.ask,
            RuleKind::Deny => &self.deny,
        }
    }

    /// Adds a rule unless the list already holds it. Returns whether it was added.
    pub fn add(&mut self, kind: RuleKind, rule: Rule) -> bool {
        let list = match kind {
            RuleKind::Allow => &mut self.allow,
            RuleKind::Ask => &mut self.ask,
            RuleKind::Deny => &mut self.deny,
        };
        if list.contains(&rule) {
            return false;
        }
        list.push(rule);
        true
    }

    /// Removes a rule by its text. Returns whether one was removed.
    pub fn remove(&mut self, kind: RuleKind, rule: &str) -> bool {
        let list = match kind {
            RuleKind::Allow => &mut self.allow,
            RuleKind::Ask => &mut self.ask,
            RuleKind::Deny => &mut self.deny,
        };
        let before = list.len();
        list.retain(|r| r.as_str() != rule.trim());
        before != list.len()
    }

    fn with(mut self, kind: RuleKind, rule: &str) -> Result<Self, RuleError> {
        self.add(kind, Rule::parse(rule)?);
        Ok(self)
    }

    /// Adds an allow rule.
    pub fn with_allow(self, rule: &str) -> Result<Self, RuleError> {
        self.with(RuleKind::Allow, rule)
    }

    /// Adds an ask rule.
    pub fn with_ask(self, rule: &str) -> Result<Self, RuleError> {
        self.with(RuleKind::Ask, rule)
    }

    /// Adds a deny rule.
    pub fn with_deny(self, rule: &str) -> Result<Self, RuleError> {
        self.with(RuleKind::Deny, rule)
    }

    /// Sets the mode.
    pub fn with_mode(mut self, mode: Mode) -> Self {
        self.mode = Some(mode);
        self
    }

    /// Sets the `sandbox` settings.
    pub fn with_sandbox(mut self, sandbox: crate::sandbox::SandboxSettings) -> Self {
        self.sandbox = sandbox;
        self
    }

    /// Makes this (managed) set forbid allow rules from every other scope.
    pub fn with_managed_rules_only(mut self) -> Self {
        self.managed_rules_only = true;
        self
    }
}
