//! The same workload on rig's agent loop (rig-core): an instant `CompletionModel` and the
//! same `noop` tool as a rig `Tool`, driven by `agent.prompt(..).max_turns(2)` and by the
//! streaming `agent.stream_prompt(..).max_turns(2)`.

use futures::StreamExt;
use rig_core::OneOrMany;
use rig_core::agent::{Agent, AgentBuilder, MultiTurnStreamItem};
use rig_core::completion::{
    AssistantContent, CompletionError, CompletionModel, CompletionRequest, CompletionResponse,
    Message, Prompt, Usage,
};
use rig_core::message::UserContent;
use rig_core::streaming::{
    RawStreamingChoice, RawStreamingToolCall, StreamingCompletionResponse, StreamingPrompt,
    StreamingResult,
};
use rig_core::tool::Tool;
use serde_json::json;

/// Answers a prompt with a call of `noop {"n":1}` and a tool result with the text "ok",
/// without any network: both `completion` and `stream` are ready at once.
#[derive(Clone)]
pub(crate) struct InstantModel;

/// Whether the request's last message carries a tool result.
fn after_tool(request: &CompletionRequest) -> bool {
    match request.chat_history.last() {
        Message::User { content } => content
            .iter()
            .any(|c| matches!(c, UserContent::ToolResult(_))),
        _ => false,
    }
}

impl CompletionModel for InstantModel {
    type Response = ();
    type StreamingResponse = ();
    type Client = ();

    fn make(_: &Self::Client, _: impl Into<String>) -> Self {
        Self
    }

    async fn completion(
        &self,
        request: CompletionRequest,
    ) -> Result<CompletionResponse<()>, CompletionError> {
        let choice = if after_tool(&request) {
            AssistantContent::text("ok")
        } else {
            AssistantContent::tool_call("call_1", "noop", json!({"n": 1}))
        };
        Ok(CompletionResponse {
            choice: OneOrMany::one(choice),
            usage: Usage::new(),
            raw_response: (),
            message_id: None,
        })
    }

    async fn stream(
        &self,
        request: CompletionRequest,
    ) -> Result<StreamingCompletionResponse<()>, CompletionError> {
        let chunk = if after_tool(&request) {
            RawStreamingChoice::Message("ok".into())
        } else {
            RawStreamingChoice::ToolCall(RawStreamingToolCall::new(
                "call_1".into(),
                "noop".into(),
                json!({"n": 1}),
            ))
        };
        let chunks = vec![Ok(chunk), Ok(RawStreamingChoice::FinalResponse(()))];
        let stream: StreamingResult<()> = Box::pin(futures::stream::iter(chunks));
        Ok(StreamingCompletionResponse::stream(stream))
    }
}

#[derive(serde::Deserialize)]
pub(crate) struct NoopArgs {
    #[allow(dead_code)]
    n: u32,
}

/// The error `noop` never returns; rig's `Tool` needs a type.
#[derive(Debug)]
pub(crate) struct NoopError;

impl std::fmt::Display for NoopError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("noop failed")
    }
}

impl std::error::Error for NoopError {}

/// The tool: takes `{"n": <int>}`, returns "ok".
pub(crate) struct Noop;

impl Tool for Noop {
    const NAME: &'static str = "noop";
    type Error = NoopError;
    type Args = NoopArgs;
    type Output = String;

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

    async fn call(&self, _: NoopArgs) -> Result<String, NoopError> {
        Ok("ok".into())
    }
}

/// A rig agent over the instant model with `noop` registered.
pub(crate) struct RigLoop {
    agent: Agent<InstantModel>,
}

impl RigLoop {
    pub(crate) fn new() -> Self {
        Self {
            agent: AgentBuilder::new(InstantModel).tool(Noop).build(),
        }
    }

    /// One two-turn run through `prompt`: the tool call, then the answer.
    pub(crate) async fn run(&self) -> Result<(), String> {
        let text = self
            .agent
            .prompt("go")
            .max_turns(2)
            .await
            .map_err(|e| format!("rig run failed: {e}"))?;
        if text != "ok" {
            return Err(format!("rig run answered {text:?}, expected \"ok\""));
        }
        Ok(())
    }

    /// One two-turn run through `stream_prompt`, consuming every item of the stream.
    pub(crate) async fn run_streaming(&self) -> Result<(), String> {
        let mut stream = self.agent.stream_prompt("go").max_turns(2).await;
        let mut answer = None;
        while let Some(item) = stream.next().await {
            match item.map_err(|e| format!("rig streaming run failed: {e}"))? {
                MultiTurnStreamItem::FinalResponse(response) => {
                    answer = Some(response.output);
                }
                _ => continue,
            }
        }
        match answer.as_deref() {
            Some("ok") => Ok(()),
            other => Err(format!(
                "rig streaming run answered {other:?}, expected \"ok\""
            )),
        }
    }
}
