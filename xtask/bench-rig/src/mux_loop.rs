//! The workload on mux's orchestrator loop: an instant streaming model and the `noop` tool.

use std::sync::Arc;

use mux_llm::{
    BlockStart, BoxFuture, ContentBlock, EventStream, LlmClient, LlmError, Request, StopReason,
    StreamEvent, Usage,
};
use mux_orchestrator::{Agent, Orchestrator};
use mux_tool::{ToolAnnotations, ToolContext, ToolError, ToolOutput, TypedTool};

/// Answers a prompt with a call of `noop {"n":1}` and a tool result with the text "ok",
/// as a stream of events that is ready at once.
struct InstantModel;

impl InstantModel {
    fn events(request: &Request) -> Vec<Result<StreamEvent, LlmError>> {
        let after_tool = request.messages.last().is_some_and(|m| {
            m.content
                .iter()
                .any(|b| matches!(b, ContentBlock::ToolResult { .. }))
        });
        let (block, delta, stop) = if after_tool {
            (
                BlockStart::Text,
                StreamEvent::TextDelta {
                    index: 0,
                    text: "ok".into(),
                },
                StopReason::EndTurn,
            )
        } else {
            (
                BlockStart::ToolUse {
                    id: "call_1".into(),
                    name: "noop".into(),
                },
                StreamEvent::ToolInputDelta {
                    index: 0,
                    partial_json: r#"{"n":1}"#.into(),
                },
                StopReason::ToolUse,
            )
        };
        vec![
            Ok(StreamEvent::MessageStart {
                id: None,
                model: None,
                usage: Usage::default(),
            }),
            Ok(StreamEvent::BlockStart { index: 0, block }),
            Ok(delta),
            Ok(StreamEvent::BlockStop { index: 0 }),
            Ok(StreamEvent::MessageDelta {
                stop_reason: Some(stop),
                stop_sequence: None,
                usage: None,
            }),
            Ok(StreamEvent::MessageStop),
        ]
    }
}

impl LlmClient for InstantModel {
    fn provider(&self) -> &str {
        "instant"
    }

    fn stream(&self, request: Request) -> BoxFuture<'_, Result<EventStream, LlmError>> {
        let events = Self::events(&request);
        Box::pin(async move {
            let stream: EventStream = Box::pin(futures::stream::iter(events));
            Ok(stream)
        })
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoopArgs {
    #[allow(dead_code)]
    n: u32,
}

/// The tool: takes `{"n": <int>}`, returns "ok".
struct Noop;

impl TypedTool for Noop {
    type Args = NoopArgs;
    const NAME: &'static str = "noop";

    fn description(&self) -> String {
        "Does nothing".into()
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only()
    }

    async fn call(&self, _: NoopArgs, _: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("ok"))
    }
}

/// An orchestrator over the instant model with `noop` registered.
pub(crate) struct MuxLoop {
    prototype: Orchestrator,
}

impl MuxLoop {
    pub(crate) fn new() -> Result<Self, String> {
        let client: Arc<dyn LlmClient> = Arc::new(InstantModel);
        let agent = Agent::builder_shared(client, "instant")
            .ask_user(false)
            .tool(Noop)
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Self {
            prototype: agent.orchestrator().clone(),
        })
    }

    /// One two-turn run on a fresh conversation: the tool call, then the answer.
    pub(crate) async fn run(&self) -> Result<(), String> {
        let agent = self.prototype.new_session();
        let summary = agent
            .run_to_completion("go")
            .await
            .map_err(|e| format!("mux run failed: {e}"))?;
        if summary.iterations != 2 || summary.tool_calls.len() != 1 || summary.text != "ok" {
            return Err(format!(
                "mux run made {} model calls and {} tool calls and answered {:?}; expected 2, 1, \"ok\"",
                summary.iterations,
                summary.tool_calls.len(),
                summary.text
            ));
        }
        Ok(())
    }
}
