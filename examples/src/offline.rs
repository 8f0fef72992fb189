//! The model the examples use: a real provider when a key is set, otherwise an offline
//! scripted model that still calls the real tools.
//!
//! Offline, each turn of the conversation goes:
//! - a prompt `call TOOL {json}` calls that tool with those arguments, then says what it
//!   returned (handy for driving a face by hand: `call write_file {"path": "a.txt", "content": "hi"}`);
//!   `call A {json} then call B {json}` calls them one after the other, a turn each;
//! - the prompt `recall` repeats the conversation's earlier prompts (what a session keeps);
//! - any other prompt lists the directory, reads the README if there is one, asks to run
//!   `git log` (a call that needs approval), then describes what it saw.

use std::sync::Arc;

use mux::llm::anthropic::AnthropicClient;
use mux::llm::openai::OpenAiClient;
use mux::llm::testing::ScriptedClient;
use mux::llm::{ContentBlock, LlmClient, Message, Request, Response, Role};
use serde_json::{Value, json};

/// The chosen model: a client, the model name, and a sentence saying which it is.
pub struct ChosenModel {
    /// The client.
    pub client: Arc<dyn LlmClient>,
    /// The model name.
    pub model: String,
    /// "Using Anthropic (claude-sonnet-4-5)." or why it runs offline.
    pub description: String,
}

/// The provider from the environment (`ANTHROPIC_API_KEY`, else `OPENAI_API_KEY` or
/// `OPENAI_BASE_URL`; `MUX_MODEL` picks the model), or the offline scripted model.
pub fn choose_model() -> Result<ChosenModel, String> {
    let model = std::env::var("MUX_MODEL").ok();
    if std::env::var_os("ANTHROPIC_API_KEY").is_some() {
        let client = AnthropicClient::from_env().map_err(|e| e.to_string())?;
        let model = model.unwrap_or_else(|| "claude-sonnet-4-5".into());
        return Ok(ChosenModel {
            client: Arc::new(client),
            description: format!("Using Anthropic ({model})."),
            model,
        });
    }
    if std::env::var_os("OPENAI_API_KEY").is_some() || std::env::var_os("OPENAI_BASE_URL").is_some()
    {
        let client = OpenAiClient::from_env().map_err(|e| e.to_string())?;
        let model = model.unwrap_or_else(|| "gpt-4o-mini".into());
        return Ok(ChosenModel {
            client: Arc::new(client),
            description: format!("Using an OpenAI-compatible server ({model})."),
            model,
        });
    }
    Ok(ChosenModel {
        client: Arc::new(offline_model()),
        model: "scripted".into(),
        description: "No ANTHROPIC_API_KEY, OPENAI_API_KEY or OPENAI_BASE_URL is set: running offline on a scripted model.\n\
                      (It still calls the real tools on this directory.)"
            .into(),
    })
}

/// The offline model (see the module docs).
pub fn offline_model() -> ScriptedClient {
    ScriptedClient::new().respond_with(|request: &Request| Ok(next_reply(&request.messages)))
}

/// The reply to a conversation, looking only at its last prompt and the calls since.
fn next_reply(messages: &[Message]) -> Response {
    let start = messages
        .iter()
        .rposition(|m| m.role == Role::User && m.content.iter().any(|b| b.as_text().is_some()))
        .unwrap_or(0);
    let prompt: String = messages
        .get(start)
        .map(|m| m.content.iter().filter_map(ContentBlock::as_text).collect())
        .unwrap_or_default();
    let turn = messages.get(start + 1..).unwrap_or_default();
    let calls: Vec<&str> = turn
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|block| match block {
            ContentBlock::ToolUse { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    let results: Vec<String> = turn
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|block| match block {
            ContentBlock::ToolResult { content, .. } => {
                Some(content.iter().filter_map(ContentBlock::as_text).collect())
            }
            _ => None,
        })
        .collect();
    // Whether the last call failed (a denial is an error result): read from the result's flag,
    // not its text, which a `git log` of any wording may fill.
    let last_failed = turn
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|block| match block {
            ContentBlock::ToolResult { is_error, .. } => Some(*is_error),
            _ => None,
        })
        .next_back()
        .unwrap_or(false);
    // Ids unique in the whole conversation, so a face can tell every call apart.
    let earlier = messages
        .iter()
        .flat_map(|m| &m.content)
        .filter(|b| matches!(b, ContentBlock::ToolUse { .. }))
        .count();
    let id = format!("call_{}", earlier + 1);
    if prompt.trim() == "recall" {
        return text_reply(recall(messages.get(..start).unwrap_or_default()));
    }
    if let Some(requested) = requested_calls(&prompt) {
        return match (requested.get(results.len()), results.last()) {
            (Some((tool, input)), _) => tool_call(&id, tool, input.clone()),
            (None, result) => {
                let tool = requested.last().map(|(tool, _)| tool.as_str());
                let first = result.and_then(|r| r.lines().next()).unwrap_or_default();
                text_reply(format!(
                    "(offline) {} returned: {first}",
                    tool.unwrap_or_default()
                ))
            }
        };
    }
    let listing = results.first().cloned().unwrap_or_default();
    match calls.as_slice() {
        [] => tool_call(&id, "list_dir", json!({"path": "."})),
        ["list_dir"] => match readme_in(&listing) {
            Some(readme) => tool_call(&id, "read_file", json!({"path": readme, "limit": 40})),
            None => tool_call(&id, "bash", json!({"command": "git log --oneline -3"})),
        },
        ["list_dir", "read_file"] => {
            tool_call(&id, "bash", json!({"command": "git log --oneline -3"}))
        }
        _ => text_reply(answer(
            &listing,
            results.get(1).filter(|_| calls.contains(&"read_file")),
            results.last().map(|log| (log, last_failed)),
        )),
    }
}

/// `call A {json} then call B {json}…` as the calls, in order.
fn requested_calls(prompt: &str) -> Option<Vec<(String, Value)>> {
    let mut parts = prompt.trim().split(" then call ");
    let first = requested_call(parts.next()?)?;
    std::iter::once(Some(first))
        .chain(parts.map(|part| requested_call(&format!("call {part}"))))
        .collect()
}

/// `call TOOL {json}` as a tool name and arguments.
fn requested_call(prompt: &str) -> Option<(String, Value)> {
    let rest = prompt.trim().strip_prefix("call ")?;
    let (tool, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, "{}"));
    let input = serde_json::from_str(args.trim()).ok()?;
    Some((tool.to_owned(), input))
}

/// The earlier prompts of the conversation, quoted in order.
fn recall(earlier: &[Message]) -> String {
    let prompts: Vec<String> = earlier
        .iter()
        .filter(|m| m.role == Role::User)
        .map(|m| {
            m.content
                .iter()
                .filter_map(ContentBlock::as_text)
                .collect::<String>()
        })
        .filter(|text| !text.is_empty())
        .map(|text| format!("\"{text}\""))
        .collect();
    if prompts.is_empty() {
        "(offline) You have not said anything before.".to_owned()
    } else {
        format!("(offline) You said before: {}", prompts.join(", "))
    }
}

fn readme_in(listing: &str) -> Option<String> {
    listing
        .lines()
        .map(|line| line.trim().trim_end_matches('/'))
        .find(|name| name.to_ascii_lowercase().starts_with("readme"))
        .map(str::to_owned)
}

fn tool_call(id: &str, name: &str, input: Value) -> Response {
    Response::from_tool_use(id, name, input)
}

fn text_reply(text: String) -> Response {
    Response::from_text(text)
}

fn answer(listing: &str, readme: Option<&String>, git_log: Option<(&String, bool)>) -> String {
    let entries = listing.lines().filter(|l| !l.trim().is_empty()).count();
    let mut text = format!("(offline) This directory has {entries} entries.");
    if let Some(readme) = readme {
        let first = readme
            .lines()
            .map(|l| l.split('\t').next_back().unwrap_or(l).trim())
            .find(|l| !l.is_empty());
        if let Some(first) = first {
            text.push_str(&format!(" Its README begins: \"{first}\"."));
        }
    }
    match git_log {
        Some((_, true)) => text.push_str(" I was not allowed to look at the git history."),
        Some((log, false)) => {
            let first = log.lines().next().unwrap_or_default();
            text.push_str(&format!(" The latest commit: \"{first}\"."));
        }
        None => {}
    }
    text.push_str(" Set ANTHROPIC_API_KEY or OPENAI_API_KEY to ask a real model.");
    text
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_call_prompt_calls_the_tool_then_reports() {
        let mut messages = vec![Message::user(
            "call write_file {\"path\": \"a\", \"content\": \"b\"}",
        )];
        let first = next_reply(&messages);
        let (id, name, input) = first.tool_calls().next().unwrap();
        assert_eq!((id, name), ("call_1", "write_file"));
        assert_eq!(input["path"], "a");
        messages.push(first.to_message());
        messages.push(Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: "call_1".into(),
                content: vec![ContentBlock::text("wrote a")],
                is_error: false,
            }],
            cache: None,
        });
        assert_eq!(
            next_reply(&messages).text(),
            "(offline) write_file returned: wrote a"
        );
    }

    #[test]
    fn calls_joined_by_then_are_made_one_after_the_other() {
        let mut messages = vec![Message::user(
            "call read_file {\"path\": \"a\"} then call pick {}",
        )];
        for (n, tool) in ["read_file", "pick"].into_iter().enumerate() {
            let reply = next_reply(&messages);
            let (id, name, _) = reply.tool_calls().next().unwrap();
            assert_eq!(name, tool);
            messages.push(reply.to_message());
            messages.push(Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult {
                    tool_use_id: id.into(),
                    content: vec![ContentBlock::text(format!("result {n}"))],
                    is_error: false,
                }],
                cache: None,
            });
        }
        assert_eq!(
            next_reply(&messages).text(),
            "(offline) pick returned: result 1"
        );
    }

    #[test]
    fn recall_repeats_the_earlier_prompts() {
        let mut messages = vec![Message::user("recall")];
        assert!(next_reply(&messages).text().contains("not said anything"));
        messages.push(Response::from_text("x").to_message());
        messages.push(Message::user("recall"));
        assert_eq!(
            next_reply(&messages).text(),
            "(offline) You said before: \"recall\""
        );
    }

    #[test]
    fn a_second_prompt_starts_its_own_turn_with_fresh_ids() {
        let mut messages = vec![Message::user("hi")];
        messages.push(next_reply(&messages).to_message());
        messages.push(Message::user("call bash {\"command\": \"true\"}"));
        let reply = next_reply(&messages);
        let (id, name, _) = reply.tool_calls().next().unwrap();
        assert_eq!((id, name), ("call_2", "bash"));
    }
}
