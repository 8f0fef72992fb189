//! Frontend tools: tools the client offers in `RunAgentInput.tools`, run by the application.
//!
//! A call waits (in the loop, which the run registry holds) until a later run's tool message
//! carries its result, the interrupt time limit passes, or the run is cancelled.

use std::sync::{Arc, Weak};
use std::time::Duration;

use mux_tool::{BoxFuture, Tool, ToolAnnotations, ToolContext, ToolError, ToolOutput, ToolSpec};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::thread::Thread;
use crate::types;

/// A tool whose calls the client answers.
pub(crate) struct FrontendTool {
    spec: ToolSpec,
    thread: Weak<Thread>,
    timeout: Duration,
}

impl FrontendTool {
    /// The tool `tool` of thread `thread`. Frontend tools are annotated read-only: they run
    /// in the person's own client, which is the approval.
    pub(crate) fn new(
        tool: &types::Tool,
        thread: &Arc<Thread>,
        timeout: Duration,
    ) -> Result<Self, String> {
        let parameters = match &tool.parameters {
            Some(Value::Object(schema)) if !schema.is_empty() => Value::Object(schema.clone()),
            _ => json!({"type": "object", "properties": {}}),
        };
        let spec = ToolSpec::new(&tool.name, &tool.description, parameters)
            .map_err(|err| format!("frontend tool `{}`: {err}", tool.name))?
            .with_annotations(ToolAnnotations::read_only());
        Ok(Self {
            spec,
            thread: Arc::downgrade(thread),
            timeout,
        })
    }
}

impl Tool for FrontendTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, _input: Value, cx: ToolContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let Some(thread) = self.thread.upgrade() else {
                return Err(ToolError::failed(
                    "the thread of this frontend tool is gone",
                ));
            };
            let (tx, rx) = oneshot::channel();
            let call_id = cx.call_id().to_owned();
            thread.await_frontend(&call_id, tx);
            drop(thread);
            let outcome = tokio::select! {
                result = rx => result.map_err(|_| ToolError::failed(format!(
                    "the result of frontend tool `{}` was never delivered", self.spec.name.as_str()))),
                () = cx.cancellation().cancelled() => Err(ToolError::failed("cancelled")),
                () = tokio::time::sleep(self.timeout) => Ok(ToolOutput::error(format!(
                    "the application did not return a result for `{}` within {} s",
                    self.spec.name.as_str(), self.timeout.as_secs()))),
            };
            if let Some(thread) = self.thread.upgrade() {
                thread.forget_frontend(&call_id);
            }
            outcome
        })
    }
}
