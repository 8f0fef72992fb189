//! Budgets over the ACP wire: a prompt whose run reaches a `RunLimits` limit ends with the
//! stop reason that fits it: `max_tokens` for a token limit, `max_turn_requests` for the
//! others (model calls, tool calls).

use mux_acp::AcpAgent;
use mux_llm::testing::ScriptedClient;
use mux_orchestrator::{Agent, RunLimits};
use mux_tool::{ToolAnnotations, ToolContext, ToolError, ToolOutput, TypedTool};

use crate::harness::{Peer, for_call};
use crate::models::calling_until;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct LookArgs {
    /// Which look this is.
    n: u64,
}

/// A read-only tool the model keeps calling.
struct Look;

impl TypedTool for Look {
    type Args = LookArgs;
    const NAME: &'static str = "look";
    fn description(&self) -> String {
        "Looks around".into()
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only()
    }
    async fn call(&self, args: LookArgs, _: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!("look {}", args.n)))
    }
}

/// A model that calls `look` until it has 5 results, then answers; every reply is 10 input
/// and 5 output tokens.
fn model() -> ScriptedClient {
    calling_until("look", "l", 5, "Looked.")
}

/// An agent whose sessions run [`model`] with `look` under `limits`.
fn agent_with(limits: RunLimits) -> AcpAgent {
    AcpAgent::new(
        Agent::builder(model(), "scripted")
            .tool(Look)
            .limits(limits)
            .build()
            .unwrap(),
    )
}

/// Prompts once; returns the stop reason and how many `look` calls completed.
async fn prompt_with(limits: RunLimits) -> (serde_json::Value, usize) {
    let dir = tempfile::tempdir().unwrap();
    let mut peer = Peer::start(agent_with(limits));
    peer.initialize().await;
    let session = peer.new_session(dir.path()).await;
    let (done, notes) = peer.prompt(&session, "look around").await;
    let completed = (0..5)
        .filter(|n| {
            for_call(&notes, &format!("l{n}"))
                .iter()
                .any(|u| u["status"] == "completed")
        })
        .count();
    peer.close().await;
    (done["result"]["stopReason"].clone(), completed)
}

#[tokio::test]
async fn an_output_token_limit_stops_the_prompt_with_max_tokens() {
    // 5 output tokens per call: the second call reaches 10 > 8.
    let (stop, looks) = prompt_with(RunLimits::new().output_tokens(8)).await;
    assert_eq!(stop, "max_tokens");
    assert_eq!(looks, 1, "the first look ran; the second was refused");
}

#[tokio::test]
async fn an_input_token_limit_stops_the_prompt_with_max_tokens() {
    let (stop, looks) = prompt_with(RunLimits::new().input_tokens(25)).await;
    assert_eq!(stop, "max_tokens");
    assert_eq!(looks, 2);
}

#[tokio::test]
async fn a_model_call_limit_stops_the_prompt_with_max_turn_requests() {
    let (stop, looks) = prompt_with(RunLimits::new().model_calls(3)).await;
    assert_eq!(stop, "max_turn_requests");
    // The third call's look would need a fourth model call to be read: it is not run.
    assert_eq!(looks, 2);
}

#[tokio::test]
async fn a_tool_call_limit_stops_the_prompt_with_max_turn_requests() {
    let (stop, looks) = prompt_with(RunLimits::new().tool_calls(1)).await;
    assert_eq!(stop, "max_turn_requests");
    assert_eq!(looks, 1);
}

#[tokio::test]
async fn without_limits_the_same_prompt_ends_its_turn() {
    let (stop, looks) = prompt_with(RunLimits::new()).await;
    assert_eq!(stop, "end_turn");
    assert_eq!(looks, 5);
}
