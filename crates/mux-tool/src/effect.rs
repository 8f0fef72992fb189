//! Effect keys: one stable name per tool call, so an effect can happen once.
//!
//! A run that stops mid-call (its process killed, its lease taken over) may run a call again.
//! Every attempt of the call carries the same [`EffectKey`], with its attempt number, so a tool
//! (or the service it calls) can recognise the repeat: an idempotency key for a payment API,
//! the name of a file already written, a row keyed by it.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// The `_meta` key under which an MCP tool call carries its effect key.
pub const META_EFFECT_KEY: &str = "dev.mux/effectKey";
/// The `_meta` key under which an MCP tool call carries its attempt number.
pub const META_ATTEMPT: &str = "dev.mux/attempt";

/// A tool call's stable identity across attempts: the same key on every attempt of one call
/// (after a takeover or a replay too), and an attempt number that counts them from 1.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EffectKey {
    key: String,
    attempt: u32,
}

impl EffectKey {
    /// The key `key` at attempt `attempt` (counted from 1; 0 is read as 1).
    pub fn new(key: impl Into<String>, attempt: u32) -> Self {
        Self {
            key: key.into(),
            attempt: attempt.max(1),
        }
    }

    /// The key: the same on every attempt of the call.
    pub fn as_str(&self) -> &str {
        &self.key
    }

    /// Which attempt this is: 1 for the first; more when the call may have run before.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Whether the call may have run before (its attempt is past the first).
    pub fn is_retry(&self) -> bool {
        self.attempt > 1
    }
}

impl fmt::Display for EffectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.key)
    }
}

/// Where the calls of one batch get their effect keys: a prefix that names the conversation
/// and turn (the call id completes the key), and the attempt of each call run again; or one
/// key given whole, for a batch of one call (a server that received the caller's key).
///
/// Set on a [`CallScope`](crate::CallScope); a call run without one is keyed by its call id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EffectScope(Keys);

#[derive(Clone, Debug, PartialEq, Eq)]
enum Keys {
    Prefixed {
        prefix: String,
        retries: HashMap<String, u32>,
    },
    Exact(EffectKey),
}

impl EffectScope {
    /// Keys `{prefix}:{call id}`.
    pub fn new(prefix: impl Into<String>) -> Self {
        Self(Keys::Prefixed {
            prefix: prefix.into(),
            retries: HashMap::new(),
        })
    }

    /// Keys every call `key` (a scope of one call).
    pub fn exact(key: EffectKey) -> Self {
        Self(Keys::Exact(key))
    }

    /// Call `call_id` is at attempt `attempt` (its earlier ones may have run). No effect on
    /// a scope made by [`EffectScope::exact`], whose key holds its attempt.
    pub fn with_attempt(mut self, call_id: impl Into<String>, attempt: u32) -> Self {
        if let Keys::Prefixed { retries, .. } = &mut self.0 {
            retries.insert(call_id.into(), attempt.max(1));
        }
        self
    }

    /// The key of call `call_id`.
    pub fn key(&self, call_id: &str) -> EffectKey {
        match &self.0 {
            Keys::Prefixed { prefix, retries } => {
                let attempt = retries.get(call_id).copied().unwrap_or(1);
                EffectKey::new(format!("{prefix}:{call_id}"), attempt)
            }
            Keys::Exact(key) => key.clone(),
        }
    }
}

/// How a context finds its key: made on request, so a call that never asks costs nothing.
#[derive(Clone, Debug, Default)]
pub(crate) enum EffectSource {
    /// The call id alone, first attempt.
    #[default]
    CallId,
    /// From the batch's scope.
    Scope(Arc<EffectScope>),
    /// Given whole (a workflow engine's activity, a test).
    Key(EffectKey),
}

impl EffectSource {
    pub(crate) fn key(&self, call_id: &str) -> EffectKey {
        match self {
            Self::CallId => EffectKey::new(call_id, 1),
            Self::Scope(scope) => scope.key(call_id),
            Self::Key(key) => key.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_keys_each_call_by_its_id_and_counts_its_attempts() {
        let scope = EffectScope::new("s1:3").with_attempt("c2", 2);
        assert_eq!(scope.key("c1"), EffectKey::new("s1:3:c1", 1));
        let again = scope.key("c2");
        assert_eq!((again.as_str(), again.attempt()), ("s1:3:c2", 2));
        assert!(again.is_retry());
        assert_eq!(EffectKey::new("k", 0).attempt(), 1);
        let given = EffectKey::new("caller:7", 3);
        assert_eq!(EffectScope::exact(given.clone()).key("any"), given);
    }
}
