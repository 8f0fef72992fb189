//! The object-safe `Tool` trait and the error a tool returns.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

use crate::{Presentation, Subject, ToolContext, ToolOutput, ToolSpec};

/// A boxed, sendable future, the return type of object-safe async methods.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A tool the model can call.
///
/// Most tools are easier to write as a [`TypedTool`](crate::TypedTool). Implement `Tool`
/// directly when the schema is only known at run time (an MCP proxy, say).
///
/// ```
/// use mux_tool::{BoxFuture, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
/// use serde_json::{json, Value};
///
/// struct Clock { spec: ToolSpec }
///
/// impl Tool for Clock {
///     fn spec(&self) -> &ToolSpec { &self.spec }
///     fn call(&self, _input: Value, _cx: ToolContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
///         Box::pin(async { Ok(ToolOutput::text("12:00")) })
///     }
/// }
///
/// let clock = Clock { spec: ToolSpec::new("clock", "Tells the time", json!({"type": "object"}))? };
/// let out = futures::executor::block_on(clock.call(json!({}), ToolContext::new("c1")))?;
/// assert_eq!(out.to_text(), "12:00");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Tool: Send + Sync + 'static {
    /// The spec the model sees.
    fn spec(&self) -> &ToolSpec;

    /// What a call with `input` touches, for the permission layer. `input` has already been
    /// validated against the input schema. Default: nothing.
    fn subject(&self, input: &Value) -> Subject {
        let _ = input;
        Subject::None
    }

    /// What a call with `input` would do, shown to the person asked to approve it (the diff
    /// of an edit, say) before it runs. Must not change anything. Default: nothing.
    fn preview(&self, input: &Value) -> BoxFuture<'_, Option<Presentation>> {
        let _ = input;
        Box::pin(std::future::ready(None))
    }

    /// Runs the tool. The executor has validated `input` against the input schema.
    ///
    /// The executor polls the future once in the caller's task before giving it a task of
    /// its own, so blocking work (synchronous I/O, heavy CPU) must go through
    /// `tokio::task::spawn_blocking`, where the timeout and cancellation can reach it.
    fn call(&self, input: Value, cx: ToolContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>>;

    /// Starts a call whose future holds the tool itself: what the executor runs (in place,
    /// or in a task of its own if it does not finish at once). `input` stays the caller's.
    ///
    /// Default: [`call`](Tool::call) with a copy of `input`, in a future that owns `self`.
    /// A tool that reads its arguments without keeping them can do better: typed tools
    /// parse them here, so a call costs neither a copy of the arguments nor a second box.
    fn call_shared(
        self: Arc<Self>,
        input: &Value,
        cx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let input = input.clone();
        Box::pin(async move { self.call(input, cx).await })
    }
}

impl<T: Tool + ?Sized> Tool for Arc<T> {
    fn spec(&self) -> &ToolSpec {
        (**self).spec()
    }
    fn subject(&self, input: &Value) -> Subject {
        (**self).subject(input)
    }
    fn preview(&self, input: &Value) -> BoxFuture<'_, Option<Presentation>> {
        (**self).preview(input)
    }
    fn call(&self, input: Value, cx: ToolContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        (**self).call(input, cx)
    }
    fn call_shared(
        self: Arc<Self>,
        input: &Value,
        cx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        T::call_shared(Arc::clone(&*self), input, cx)
    }
}

impl fmt::Debug for dyn Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.spec().name)
            .finish_non_exhaustive()
    }
}

/// Why a tool could not produce an output.
///
/// The executor turns it into an error output the model reads, so the message should tell the
/// model what to do differently.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The arguments are unusable, beyond what the schema could say.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// The tool ran and failed.
    #[error("{0}")]
    Failed(String),
    /// The tool noticed cancellation and stopped.
    #[error("cancelled")]
    Cancelled,
    /// An I/O error.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// Any other error.
    #[error(transparent)]
    Other(Box<dyn std::error::Error + Send + Sync>),
}

impl From<String> for ToolError {
    /// A failure with this message.
    fn from(message: String) -> Self {
        Self::Failed(message)
    }
}

impl From<&str> for ToolError {
    /// A failure with this message.
    fn from(message: &str) -> Self {
        Self::Failed(message.to_owned())
    }
}

impl ToolError {
    /// A failure with a message.
    pub fn failed(message: impl Into<String>) -> Self {
        Self::Failed(message.into())
    }

    /// Wraps any error.
    pub fn other(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Other(Box::new(error))
    }
}
