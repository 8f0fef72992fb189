//! Test models that the integration tests of several crates above mux-llm share (the
//! orchestrator's, the agents', the editor face's, the web face's), included by path.

use futures::StreamExt;
use mux_llm::testing::ScriptedClient;
use mux_llm::{
    BlockStart, BoxFuture, ContentBlock, EventStream, LlmClient, LlmError, Message, Request,
    Response, Role, StopReason, StreamEvent, Usage,
};
use serde_json::json;

/// The start of a streamed response whose first block is text.
pub fn text_block_start() -> Vec<Result<StreamEvent, LlmError>> {
    vec![
        Ok(StreamEvent::MessageStart {
            id: None,
            model: None,
            usage: Usage::default(),
        }),
        Ok(StreamEvent::BlockStart {
            index: 0,
            block: BlockStart::Text,
        }),
    ]
}

/// A model that streams the text "working", then never finishes.
pub struct Stalls;

impl LlmClient for Stalls {
    fn provider(&self) -> &str {
        "stalls"
    }
    fn stream(&self, _request: Request) -> BoxFuture<'_, Result<EventStream, LlmError>> {
        Box::pin(async {
            let mut events = text_block_start();
            events.push(Ok(StreamEvent::TextDelta {
                index: 0,
                text: "working".into(),
            }));
            let start = futures::stream::iter(events);
            let stream: EventStream = Box::pin(start.chain(futures::stream::pending()));
            Ok(stream)
        })
    }
}

/// A model that calls `tool` with `{"n": k}` (call id `{id_prefix}{k}`, k counting the tool
/// results so far) until the conversation holds `times` results, then answers `answer`; every
/// reply costs 10 input and 5 output tokens. The budget tests run it under `RunLimits`.
pub fn calling_until(
    tool: &'static str,
    id_prefix: &'static str,
    times: usize,
    answer: &'static str,
) -> ScriptedClient {
    ScriptedClient::new().respond_with(move |request: &Request| {
        let results = tool_result_count(&request.messages);
        let response = if results < times {
            Response::new(
                vec![ContentBlock::tool_use(
                    format!("{id_prefix}{results}"),
                    tool,
                    json!({"n": results}),
                )],
                StopReason::ToolUse,
            )
        } else {
            Response::from_text(answer)
        };
        Ok(response.with_usage(Usage {
            input_tokens: 10,
            output_tokens: 5,
            ..Usage::default()
        }))
    })
}

/// The latest prompt of a conversation: the text of the last user message that holds text
/// (empty when there is none), and the messages from that one on (all of them when none).
/// A scripted model picks its scenario by the prompt and counts the tool results since it.
pub fn latest_prompt(messages: &[Message]) -> (String, &[Message]) {
    let at = messages
        .iter()
        .rposition(|m| m.role == Role::User && m.content.iter().any(|b| b.as_text().is_some()))
        .unwrap_or(0);
    let prompt = messages.get(at).map(Message::text).unwrap_or_default();
    (prompt, messages.get(at..).unwrap_or_default())
}

/// How many tool results `messages` hold.
pub fn tool_result_count(messages: &[Message]) -> usize {
    messages
        .iter()
        .flat_map(|m| m.content.iter())
        .filter(|b| matches!(b, ContentBlock::ToolResult { .. }))
        .count()
}

/// The text of every tool result in `messages`, in order.
pub fn tool_result_texts(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|b| match b {
            ContentBlock::ToolResult { content, .. } => Some(
                content
                    .iter()
                    .filter_map(ContentBlock::as_text)
                    .collect::<String>(),
            ),
            _ => None,
        })
        .collect()
}
