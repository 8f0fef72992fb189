//! The same workload on rig's new agent loop (crate `rig-agent` 0.46 over `rig-core` 0.46,
//! where the loop has lived since 0.41): an instant model and the same `noop` tool, driven by
//! `agent.prompt(..).max_turns(2)` awaited (the unary loop) and by `.stream()` consumed to its
//! `FinalResponse` (the streaming loop).
//!
//! rig 0.46 models are a wire over a transport (`rig_core::Model<W, T>`). The instant model is
//! rig's own scripted wire (`MockScript`, the one its tests use) over a transport of ours that
//! answers every request at once from the request itself, like `rig_loop::InstantModel`: a
//! call of `noop {"n":1}`, or "ok" after a tool result.

use futures::StreamExt;
use rig_agent::agent::MultiTurnStreamItem;
use rig_agent::{Agent, AgentBuilder};
use rig_core_46::completion::{AssistantContent, CompletionRequest, CompletionResponse, Usage};
use rig_core_46::driver::{Exchange, Model, Opened, Opening, Transport};
use rig_core_46::message::{Message, Origin, ToolCall, ToolFunction, ToolName, UserContent};
use rig_core_46::test_utils::{MOCK_API, MockFrame, MockScript, MockStreamEvent};
use rig_core_46::tool::{Tool, ToolContext};
use rig_core_46::wire::Mode;
use serde_json::json;

/// Whether the request's last message carries a tool result.
fn after_tool(request: &CompletionRequest) -> bool {
    match request.chat_history.last().map(|m| &**m) {
        Some(Message::User { content }) => content
            .iter()
            .any(|c| matches!(c, UserContent::ToolResult(_))),
        _ => false,
    }
}

/// Answers at once: a unary reply as one whole response, a streamed one as its events and
/// the provider's end.
#[derive(Clone)]
pub(crate) struct InstantTransport;

impl Transport<MockScript> for InstantTransport {
    fn send(&self, request: CompletionRequest, exchange: Exchange) -> Opening<MockFrame> {
        let done = after_tool(&request);
        let frames = match exchange.mode {
            Mode::Unary => {
                let choice = if done {
                    AssistantContent::text("ok")
                } else {
                    match ToolName::new("noop") {
                        Ok(name) => AssistantContent::ToolCall(ToolCall::from_wire(
                            "call_1",
                            ToolFunction::new(name, json!({"n": 1})),
                        )),
                        Err(err) => {
                            return Opening::failed(rig_core_46::ProviderError::Provider(
                                err.to_string(),
                            ));
                        }
                    }
                };
                let origin = Origin::new(MOCK_API, "mock", "mock-model");
                let response =
                    CompletionResponse::new(vec![choice], Usage::default(), origin, json!({}));
                vec![Ok(MockFrame::Response(Box::new(response)))]
            }
            Mode::Streaming => {
                let event = if done {
                    MockStreamEvent::text("ok")
                } else {
                    MockStreamEvent::tool_call("call_1", "noop", json!({"n": 1}))
                };
                vec![
                    Ok(MockFrame::Event(event)),
                    Ok(MockFrame::Event(MockStreamEvent::final_response(
                        Usage::default(),
                    ))),
                ]
            }
        };
        Opening::ready(Opened::new(futures::stream::iter(frames)))
    }
}

#[derive(serde::Deserialize)]
pub(crate) struct NoopArgs {
    #[allow(dead_code)]
    n: u32,
}

/// The tool: takes `{"n": <int>}`, returns "ok".
pub(crate) struct Noop;

impl Tool for Noop {
    const NAME: &'static str = "noop";
    type Args = NoopArgs;
    type Output = String;
    type Error = std::convert::Infallible;

    fn description(&self) -> String {
        "Does nothing".into()
    }

    fn parameters(&self) -> serde_json::Value {
        json!({
            "type": "object",
            "properties": {"n": {"type": "integer", "minimum": 0}},
            "required": ["n"],
        })
    }

    async fn call(&self, _: &mut ToolContext, _: NoopArgs) -> Result<String, Self::Error> {
        Ok("ok".into())
    }
}

/// A rig 0.46 agent over the instant model with `noop` registered.
pub(crate) struct RigAgentLoop {
    agent: Agent,
}

impl RigAgentLoop {
    pub(crate) fn new() -> Self {
        let model = Model::new(MockScript::default(), InstantTransport);
        Self {
            agent: AgentBuilder::new(model).tool(Noop).build(),
        }
    }

    /// One two-turn run, the runner awaited: the tool call, then the answer.
    pub(crate) async fn run(&self) -> Result<(), String> {
        let response = self
            .agent
            .prompt("go")
            .max_turns(2)
            .await
            .map_err(|e| format!("rig-agent run failed: {e}"))?;
        if response.output() != "ok" {
            return Err(format!(
                "rig-agent run answered {:?}, expected \"ok\"",
                response.output()
            ));
        }
        Ok(())
    }

    /// One two-turn run through `.stream()`, consuming every item.
    pub(crate) async fn run_streaming(&self) -> Result<(), String> {
        let mut stream = self.agent.prompt("go").max_turns(2).stream();
        let mut answer = None;
        while let Some(item) = stream.next().await {
            match item.map_err(|e| format!("rig-agent streaming run failed: {e}"))? {
                MultiTurnStreamItem::FinalResponse(response) => {
                    answer = Some(response.output().to_owned());
                }
                _ => continue,
            }
        }
        match answer.as_deref() {
            Some("ok") => Ok(()),
            other => Err(format!(
                "rig-agent streaming run answered {other:?}, expected \"ok\""
            )),
        }
    }
}
