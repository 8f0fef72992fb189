//! A thread's stored conversation as AG-UI messages, for `MESSAGES_SNAPSHOT`.
//!
//! mux messages carry no ids, so ids are derived from the thread and the position: the same
//! history always gets the same ids, and a reloaded page reconciles by them.

use mux_llm::{ContentBlock, Message as MuxMessage, Role};

use crate::types::{FunctionCall, Message, ToolCall, UserContent};

/// Converts `messages` of thread `thread`. Tool results become tool messages; thinking
/// becomes reasoning messages; images are left out (the page shows text).
pub(crate) fn snapshot(thread: &str, messages: &[MuxMessage]) -> Vec<Message> {
    let mut out = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        let id = |part: &str| format!("{thread}-h{index}{part}");
        match message.role {
            Role::User => {
                let mut text = Vec::new();
                for (at, block) in message.content.iter().enumerate() {
                    match block {
                        ContentBlock::Text { text: t } => text.push(t.clone()),
                        ContentBlock::ToolResult {
                            tool_use_id,
                            content,
                            is_error,
                        } => {
                            let body = content
                                .iter()
                                .filter_map(ContentBlock::as_text)
                                .collect::<Vec<_>>()
                                .join("\n");
                            out.push(Message::Tool {
                                id: id(&format!("t{at}")),
                                content: UserContent::Text(body.clone()),
                                tool_call_id: tool_use_id.clone(),
                                error: is_error.then_some(body),
                            });
                        }
                        _ => {}
                    }
                }
                if !text.is_empty() {
                    out.push(Message::User {
                        id: id(""),
                        content: UserContent::Text(text.join("\n")),
                    });
                }
            }
            Role::Assistant => {
                let mut text = Vec::new();
                let mut calls = Vec::new();
                for block in &message.content {
                    match block {
                        ContentBlock::Text { text: t } => text.push(t.clone()),
                        ContentBlock::Thinking { thinking, .. } => out.push(Message::Reasoning {
                            id: id(&format!("r{}", out.len())),
                            content: thinking.clone(),
                        }),
                        ContentBlock::ToolUse {
                            id: call,
                            name,
                            input,
                        } => calls.push(ToolCall {
                            id: call.clone(),
                            kind: "function".into(),
                            function: FunctionCall {
                                name: name.clone(),
                                arguments: input.to_string(),
                            },
                        }),
                        _ => {}
                    }
                }
                out.push(Message::Assistant {
                    id: id(""),
                    content: (!text.is_empty()).then(|| text.concat()),
                    tool_calls: calls,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_calls_and_results_keep_their_ids() {
        let history = vec![
            MuxMessage::user("list"),
            MuxMessage::new(
                Role::Assistant,
                vec![
                    ContentBlock::text("Looking."),
                    ContentBlock::tool_use("c1", "list_dir", json!({"path": "."})),
                ],
            ),
            MuxMessage::new(
                Role::User,
                vec![ContentBlock::tool_result("c1", "a\nb", false)],
            ),
            MuxMessage::assistant("Two files."),
        ];
        let messages = snapshot("t", &history);
        let json = serde_json::to_value(&messages).unwrap_or_default();
        assert_eq!(
            json[0],
            json!({"role": "user", "id": "t-h0", "content": "list"})
        );
        assert_eq!(json[1]["toolCalls"][0]["id"], "c1");
        assert_eq!(json[1]["content"], "Looking.");
        assert_eq!(json[2]["role"], "tool");
        assert_eq!(json[2]["toolCallId"], "c1");
        assert_eq!(json[3]["content"], "Two files.");
        assert_eq!(snapshot("t", &history), messages, "ids are stable");
    }
}
