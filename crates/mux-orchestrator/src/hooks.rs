//! Loop hooks: typed actions at each point of a run.
//!
//! Implement [`Hook`] and override the points you care about; every method has a default that
//! does nothing. A hook that fails becomes a [`LoopEvent::HookFailed`](crate::LoopEvent) and the
//! run goes on, unless its error asks to stop ([`HookError::stop`]). Hooks are read from a
//! snapshot, so a hook may register another hook without deadlocking.

use std::sync::{Arc, PoisonError, RwLock};

use mux_llm::Message;
use mux_tool::{BoxFuture, ToolCall, ToolOutput};
use serde_json::Value;

/// A hook's failure.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct HookError {
    /// What went wrong.
    pub message: String,
    /// Whether the run must stop because of it.
    pub stop_run: bool,
}

impl HookError {
    /// A failure the run survives.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            stop_run: false,
        }
    }

    /// A failure that stops the run.
    pub fn stop(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            stop_run: true,
        }
    }
}

/// What to do with a submitted prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PromptAction {
    /// Send it as is.
    Continue,
    /// Refuse it; the run ends with [`LoopError::PromptBlocked`](crate::LoopError).
    Block {
        /// Why.
        reason: String,
    },
    /// Send this text instead.
    Rewrite(String),
}

/// What to do with a tool call before it runs.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum PreToolAction {
    /// No opinion.
    Continue,
    /// Approve without asking (deny rules still hold).
    Allow,
    /// Refuse; the reason reaches the model.
    Deny {
        /// Why.
        reason: String,
    },
    /// Ask the face even if the rules would allow it (deny rules still hold).
    Ask,
    /// Replace the arguments (validated again).
    Rewrite(Value),
}

/// What to do with a tool result.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum PostToolAction {
    /// Keep it.
    Keep,
    /// Replace it.
    Replace(ToolOutput),
}

/// What to do when the model has finished.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopAction {
    /// Let the run finish.
    Stop,
    /// Send this message and keep going. Honoured once per run, so a hook cannot loop forever.
    Continue(String),
}

/// What to do before compaction.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CompactAction {
    /// Compact.
    Continue,
    /// Skip this compaction.
    Skip,
}

/// A subagent's start or end, reported by mux-agents.
#[derive(Clone, Debug, PartialEq)]
pub struct SubagentEvent {
    /// The subagent's session id.
    pub session_id: String,
    /// The subagent definition's name.
    pub agent: String,
    /// Its final text, at stop.
    pub result: Option<String>,
}

type HookResult<'a, T> = BoxFuture<'a, Result<T, HookError>>;

fn ready<'a, T: Send + 'a>(value: T) -> HookResult<'a, T> {
    Box::pin(std::future::ready(Ok(value)))
}

/// Code that runs at the points of a run. Every method defaults to "no opinion".
pub trait Hook: Send + Sync + 'static {
    /// A name for events and logs.
    fn name(&self) -> &str;

    /// A run starts on a session.
    fn session_start<'a>(&'a self, session_id: &'a str) -> HookResult<'a, ()> {
        let _ = session_id;
        ready(())
    }

    /// A user prompt is about to be sent.
    fn user_prompt_submit<'a>(&'a self, prompt: &'a str) -> HookResult<'a, PromptAction> {
        let _ = prompt;
        ready(PromptAction::Continue)
    }

    /// A tool call is about to be approved and run.
    fn pre_tool_use<'a>(&'a self, call: &'a ToolCall) -> HookResult<'a, PreToolAction> {
        let _ = call;
        ready(PreToolAction::Continue)
    }

    /// A tool call has a result (or an error output).
    fn post_tool_use<'a>(
        &'a self,
        call: &'a ToolCall,
        output: &'a ToolOutput,
    ) -> HookResult<'a, PostToolAction> {
        let _ = (call, output);
        ready(PostToolAction::Keep)
    }

    /// The session is about to be compacted.
    fn pre_compact<'a>(&'a self, messages: &'a [Message]) -> HookResult<'a, CompactAction> {
        let _ = messages;
        ready(CompactAction::Continue)
    }

    /// The model finished without tool calls.
    fn stop<'a>(&'a self, final_text: &'a str) -> HookResult<'a, StopAction> {
        let _ = final_text;
        ready(StopAction::Stop)
    }

    /// A subagent started (fired by mux-agents).
    fn subagent_start<'a>(&'a self, event: &'a SubagentEvent) -> HookResult<'a, ()> {
        let _ = event;
        ready(())
    }

    /// A subagent stopped (fired by mux-agents).
    fn subagent_stop<'a>(&'a self, event: &'a SubagentEvent) -> HookResult<'a, ()> {
        let _ = event;
        ready(())
    }
}

/// The hooks of an orchestrator, shared and changeable while runs are going.
#[derive(Clone, Default)]
pub struct Hooks {
    hooks: Arc<RwLock<Vec<Arc<dyn Hook>>>>,
}

impl Hooks {
    /// No hooks.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a hook; it runs after those added before it.
    pub fn add(&self, hook: impl Hook) {
        self.add_shared(Arc::new(hook));
    }

    /// Adds a shared hook.
    pub fn add_shared(&self, hook: Arc<dyn Hook>) {
        self.hooks
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push(hook);
    }

    /// A snapshot of the hooks, in order. The lock is released before any hook runs.
    pub fn snapshot(&self) -> Vec<Arc<dyn Hook>> {
        self.hooks
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The number of hooks.
    pub fn len(&self) -> usize {
        self.hooks
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self
            .snapshot()
            .iter()
            .map(|h| h.name().to_owned())
            .collect();
        f.debug_tuple("Hooks").field(&names).finish()
    }
}
