//! A stored conversation as the `session/update` notifications `session/load` replays.

use std::collections::HashMap;
use std::path::Path;

use agent_client_protocol::v1::schema::{
    ContentBlock as AcpBlock, ContentChunk, SessionUpdate, ToolCall, ToolCallStatus,
};
use mux_llm::{ContentBlock, Message, Role};
use mux_tool::Registry;

use crate::tool_view::{self, Described};

/// Every message as updates, oldest first: user text, agent text and thoughts as chunks, each
/// tool call as one `tool_call` with its final status and output. Tool results are not
/// replayed on their own: they belong to their call. Kinds, titles and locations come from
/// `tools`, as in a live turn.
pub(crate) fn replay(messages: &[Message], root: &Path, tools: &Registry) -> Vec<SessionUpdate> {
    let results: HashMap<&str, (String, bool)> = messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|block| match block {
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => {
                let text: String = content.iter().filter_map(ContentBlock::as_text).collect();
                Some((tool_use_id.as_str(), (text, *is_error)))
            }
            _ => None,
        })
        .collect();
    let mut updates = Vec::new();
    for message in messages {
        for block in &message.content {
            let update = match (block, message.role) {
                (ContentBlock::Text { text }, Role::User) => {
                    SessionUpdate::UserMessageChunk(ContentChunk::new(AcpBlock::from(text.clone())))
                }
                (ContentBlock::Text { text }, _) => SessionUpdate::AgentMessageChunk(
                    ContentChunk::new(AcpBlock::from(text.clone())),
                ),
                (ContentBlock::Thinking { thinking, .. }, _) => SessionUpdate::AgentThoughtChunk(
                    ContentChunk::new(AcpBlock::from(thinking.clone())),
                ),
                (ContentBlock::ToolUse { id, name, input }, _) => {
                    let (status, content) = match results.get(id.as_str()) {
                        Some((text, false)) => (ToolCallStatus::Completed, text),
                        Some((text, true)) => (ToolCallStatus::Failed, text),
                        None => (ToolCallStatus::Failed, &String::new()),
                    };
                    let described = Described::of(tools, name, input);
                    let title = tool_view::title_of(name, &described.subject);
                    let mut call = ToolCall::new(id.clone(), title)
                        .kind(described.kind)
                        .status(status)
                        .raw_input(input.clone())
                        .locations(tool_view::subject_locations(&described.subject, root));
                    if !content.is_empty() {
                        call = call.content(vec![tool_view::text_content(content.clone())]);
                    }
                    SessionUpdate::ToolCall(call)
                }
                _ => continue,
            };
            updates.push(update);
        }
    }
    updates
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn a_conversation_replays_in_order_with_tool_results_folded_in() {
        let messages = vec![
            Message::user("list it"),
            Message {
                role: Role::Assistant,
                content: vec![ContentBlock::tool_use(
                    "c1",
                    "list_dir",
                    json!({"path": "."}),
                )],
                cache: None,
            },
            Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult {
                    tool_use_id: "c1".into(),
                    content: vec![ContentBlock::text("README.md")],
                    is_error: false,
                }],
                cache: None,
            },
            Message::assistant("one file"),
        ];
        let tools = Registry::new();
        let sandbox = mux_tool::builtin::Sandbox::new(std::env::temp_dir()).unwrap();
        tools
            .register_typed(mux_tool::builtin::ListDir::new(sandbox))
            .unwrap();
        let wire: Vec<_> = replay(&messages, Path::new("/r"), &tools)
            .into_iter()
            .map(|u| serde_json::to_value(u).unwrap())
            .collect();
        let kinds: Vec<_> = wire
            .iter()
            .map(|u| u["sessionUpdate"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            ["user_message_chunk", "tool_call", "agent_message_chunk"]
        );
        assert_eq!(wire[1]["status"], "completed");
        assert_eq!(wire[1]["kind"], "search");
        assert_eq!(wire[1]["content"][0]["content"]["text"], "README.md");
    }
}
