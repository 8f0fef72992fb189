//! Helpers shared by the integration tests.
#![allow(dead_code, unreachable_pub)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mux_llm::{BoxFuture, EventStream, LlmClient, LlmError, Request, Response};
use mux_tool::{ToolAnnotations, ToolContext, ToolError, ToolOutput, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// A response that calls one tool.
pub fn tool_call(id: &str, name: &str, input: Value) -> Response {
    Response::from_tool_use(id, name, input)
}

/// The shared test models ([`Stalls`] among them).
#[path = "../../../../mux-llm/tests/support/models.rs"]
mod models;
pub use models::*;

#[derive(Deserialize, JsonSchema)]
pub struct ShellArgs {
    /// A command.
    pub command: String,
}

/// Pretends to run a command; not read-only, so it needs approval. Counts its calls.
#[derive(Clone, Default)]
pub struct Shell {
    pub calls: Arc<AtomicUsize>,
}

impl TypedTool for Shell {
    type Args = ShellArgs;
    const NAME: &'static str = "shell";
    fn description(&self) -> String {
        "Runs a command".into()
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::default()
    }
    async fn call(&self, args: ShellArgs, _: ToolContext) -> Result<ToolOutput, ToolError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(ToolOutput::text(format!("ran {}", args.command)))
    }
}

/// Stalls for model `slow`; otherwise answers with the text `answers` gives for the model.
pub struct ByModel {
    pub answers: fn(&str) -> String,
}

impl LlmClient for ByModel {
    fn provider(&self) -> &str {
        "by-model"
    }
    fn stream(&self, request: Request) -> BoxFuture<'_, Result<EventStream, LlmError>> {
        if request.model == "slow" {
            return Stalls.stream(request);
        }
        let text = (self.answers)(&request.model);
        Box::pin(async move {
            let client = mux_llm::testing::ScriptedClient::new().reply_text(text);
            client.stream(request).await
        })
    }
}
