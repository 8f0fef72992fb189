//! Shared by the eval tests: two tools (one read-only, one that asks) and a scripted model
//! that follows the plan written in the prompt.
//!
//! A prompt is steps joined by ` then `: `call NAME {json}` calls a tool, `say TEXT` answers;
//! after the last step the model answers `done: <last tool output>`. The prompt `loop` calls
//! `lookup` forever.

use std::sync::Arc;
use std::time::Duration;

use mux_llm::testing::ScriptedClient;
use mux_llm::{Message, Request, Response, Role, Usage};
use mux_orchestrator::Agent;
use mux_tool::{ToolAnnotations, ToolContext, ToolError, ToolOutput, TypedTool};
use serde_json::{Value, json};

/// Test models the integration tests of several crates share.
#[path = "../../../mux-llm/tests/support/models.rs"]
#[allow(dead_code, unreachable_pub)]
mod models;

/// Reads a key; read-only, so it runs unasked.
pub struct Lookup;

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct LookupArgs {
    /// The key.
    key: String,
}

impl TypedTool for Lookup {
    type Args = LookupArgs;
    const NAME: &'static str = "lookup";
    fn description(&self) -> String {
        "Looks a key up".into()
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only()
    }
    async fn call(&self, args: LookupArgs, _cx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!("value of {}", args.key)))
    }
}

/// Deletes a key; it changes state, so it asks for approval.
pub struct Delete;

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct DeleteArgs {
    /// The key.
    key: String,
}

impl TypedTool for Delete {
    type Args = DeleteArgs;
    const NAME: &'static str = "delete";
    fn description(&self) -> String {
        "Deletes a key".into()
    }
    async fn call(&self, args: DeleteArgs, _cx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!("deleted {}", args.key)))
    }
}

/// Waits a minute (until cancelled); read-only.
pub struct Wait;

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct WaitArgs {}

impl TypedTool for Wait {
    type Args = WaitArgs;
    const NAME: &'static str = "wait";
    fn description(&self) -> String {
        "Waits".into()
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only()
    }
    async fn call(&self, _args: WaitArgs, cx: ToolContext) -> Result<ToolOutput, ToolError> {
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(60)) => {}
            () = cx.cancellation().cancelled() => {}
        }
        Ok(ToolOutput::text("waited"))
    }
}

/// The reply to `request` under the plan in its last prompt; every reply costs 10 input and
/// 5 output tokens.
pub fn plan_reply(request: &Request) -> Response {
    let usage = Usage {
        input_tokens: 10,
        output_tokens: 5,
        ..Usage::default()
    };
    reply(&request.messages).with_usage(usage)
}

fn reply(messages: &[Message]) -> Response {
    let (prompt, since) = models::latest_prompt(messages);
    let done = since
        .get(1..)
        .unwrap_or_default()
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .count();
    if prompt == "loop" {
        return Response::from_tool_use(format!("c{done}"), "lookup", json!({"key": "again"}));
    }
    let steps: Vec<&str> = prompt.split(" then ").collect();
    match steps.get(done) {
        Some(step) => {
            if let Some(call) = step.strip_prefix("call ") {
                let (name, args) = call.split_once(' ').unwrap_or((call, "{}"));
                let args: Value = serde_json::from_str(args).unwrap_or_else(|_| json!({}));
                Response::from_tool_use(format!("c{done}"), name, args)
            } else {
                Response::from_text(step.strip_prefix("say ").unwrap_or(step))
            }
        }
        None => {
            let last = models::tool_result_texts(messages.last().map_or(&[], std::slice::from_ref))
                .concat();
            Response::from_text(format!("done: {last}"))
        }
    }
}

/// The planned model.
pub fn planner() -> ScriptedClient {
    ScriptedClient::new().respond_with(|request| Ok(plan_reply(request)))
}

/// An agent with the three tools on the planned model.
pub fn agent() -> Agent {
    agent_on(Arc::new(planner()))
}

/// An agent with the three tools on `client`.
pub fn agent_on(client: Arc<dyn mux_llm::LlmClient>) -> Agent {
    match Agent::builder_shared(client, "planned")
        .tool(Lookup)
        .tool(Delete)
        .tool(Wait)
        .build()
    {
        Ok(agent) => agent,
        Err(err) => unreachable!("the test agent builds: {err}"),
    }
}
