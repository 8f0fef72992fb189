//! Code that runs before and after every tool call.

use std::fmt;

use serde_json::Value;

use crate::{BoxFuture, CallResult, ToolCall, ToolOutput, ToolSpec};

/// What a pre-hook decides about a call.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum PreHookAction {
    /// No opinion; go on.
    Continue,
    /// Approve the call in advance. The approval gate still sees the call, marked
    /// pre-approved, so deny rules keep holding; with no gate, the call runs.
    Allow,
    /// Refuse the call; the reason reaches the model.
    Deny {
        /// Why.
        reason: String,
    },
    /// Replace the arguments. The new arguments are validated against the schema again.
    Rewrite(Value),
    /// Ask someone before the call runs, whatever the policy says (deny rules still hold):
    /// the approval gate sees the call marked so. With no gate, no one can be asked, and the
    /// call is refused as needing approval. Wins over another hook's `Allow`. With `input`,
    /// the arguments are replaced first (validated again, as with `Rewrite`).
    Ask {
        /// New arguments, if the hook also rewrote them.
        input: Option<Value>,
    },
}

impl PreHookAction {
    /// A denial with a reason.
    pub fn deny(reason: impl Into<String>) -> Self {
        Self::Deny {
            reason: reason.into(),
        }
    }
}

/// What a post-hook does with a result.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum PostHookAction {
    /// Leave the result as it is.
    Keep,
    /// Replace the result with this output.
    Replace(ToolOutput),
}

/// A hook that failed. The executor reports it and carries on (a failing pre-hook blocks its
/// call, because an unchecked call must not run).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HookError(pub String);

impl HookError {
    /// An error with a message.
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

/// Runs before a call, after its arguments are validated.
pub trait PreHook: Send + Sync + 'static {
    /// A name for reports.
    fn name(&self) -> &str;

    /// Decides about `call` (whose arguments are valid for `spec`).
    fn before<'a>(
        &'a self,
        call: &'a ToolCall,
        spec: &'a ToolSpec,
    ) -> BoxFuture<'a, Result<PreHookAction, HookError>>;
}

/// Runs after a call, successful or not, and may replace its result.
pub trait PostHook: Send + Sync + 'static {
    /// A name for reports.
    fn name(&self) -> &str;

    /// Observes or transforms the result of `call`.
    fn after<'a>(
        &'a self,
        call: &'a ToolCall,
        result: &'a CallResult,
    ) -> BoxFuture<'a, Result<PostHookAction, HookError>>;
}

/// A pre-hook from a synchronous closure.
///
/// ```
/// use mux_tool::{hooks::pre_hook_fn, PreHookAction};
///
/// let no_rm = pre_hook_fn("no-rm", |call, _spec| {
///     if call.input["command"].as_str().is_some_and(|c| c.starts_with("rm ")) {
///         PreHookAction::deny("rm is not allowed here")
///     } else {
///         PreHookAction::Continue
///     }
/// });
/// # let _ = no_rm;
/// ```
pub fn pre_hook_fn<F>(name: impl Into<String>, f: F) -> FnPreHook<F>
where
    F: Fn(&ToolCall, &ToolSpec) -> PreHookAction + Send + Sync + 'static,
{
    FnPreHook {
        name: name.into(),
        f,
    }
}

/// A post-hook from a synchronous closure.
pub fn post_hook_fn<F>(name: impl Into<String>, f: F) -> FnPostHook<F>
where
    F: Fn(&ToolCall, &CallResult) -> PostHookAction + Send + Sync + 'static,
{
    FnPostHook {
        name: name.into(),
        f,
    }
}

/// See [`pre_hook_fn`].
pub struct FnPreHook<F> {
    name: String,
    f: F,
}

impl<F> PreHook for FnPreHook<F>
where
    F: Fn(&ToolCall, &ToolSpec) -> PreHookAction + Send + Sync + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn before<'a>(
        &'a self,
        call: &'a ToolCall,
        spec: &'a ToolSpec,
    ) -> BoxFuture<'a, Result<PreHookAction, HookError>> {
        let action = (self.f)(call, spec);
        Box::pin(std::future::ready(Ok(action)))
    }
}

/// See [`post_hook_fn`].
pub struct FnPostHook<F> {
    name: String,
    f: F,
}

impl<F> PostHook for FnPostHook<F>
where
    F: Fn(&ToolCall, &CallResult) -> PostHookAction + Send + Sync + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn after<'a>(
        &'a self,
        call: &'a ToolCall,
        result: &'a CallResult,
    ) -> BoxFuture<'a, Result<PostHookAction, HookError>> {
        let action = (self.f)(call, result);
        Box::pin(std::future::ready(Ok(action)))
    }
}

impl<F> fmt::Debug for FnPreHook<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnPreHook")
            .field("name", &self.name)
            .finish()
    }
}

impl<F> fmt::Debug for FnPostHook<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnPostHook")
            .field("name", &self.name)
            .finish()
    }
}
