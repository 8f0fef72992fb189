//! The model the examples run on: a provider chosen from the environment, or an offline
//! scripted model that explores the directory as a real one would.

use std::sync::Arc;

use mux::llm::anthropic::AnthropicClient;
use mux::llm::openai::OpenAiClient;
use mux::llm::testing::ScriptedClient;
use mux::llm::{ContentBlock, LlmClient, Request, Response, StopReason, Usage};
use serde_json::json;

/// The provider from the environment, or the offline scripted model.
///
/// `ANTHROPIC_API_KEY` picks Anthropic (honouring `ANTHROPIC_BASE_URL`); `OPENAI_API_KEY` or
/// `OPENAI_BASE_URL` OpenAI or a compatible server; `MUX_MODEL` the model. With none, it says
/// so and returns [`offline_model`]. Returns the client and the model name.
pub fn choose_model() -> Result<(Arc<dyn LlmClient>, String), String> {
    let model = std::env::var("MUX_MODEL").ok();
    if std::env::var_os("ANTHROPIC_API_KEY").is_some() {
        let client = AnthropicClient::from_env().map_err(|e| e.to_string())?;
        let model = model.unwrap_or_else(|| "claude-sonnet-4-5".into());
        println!("Using Anthropic ({model}).");
        return Ok((Arc::new(client), model));
    }
    if std::env::var_os("OPENAI_API_KEY").is_some() || std::env::var_os("OPENAI_BASE_URL").is_some()
    {
        let client = OpenAiClient::from_env().map_err(|e| e.to_string())?;
        let model = model.unwrap_or_else(|| "gpt-4o-mini".into());
        println!("Using an OpenAI-compatible server ({model}).");
        return Ok((Arc::new(client), model));
    }
    println!(
        "No ANTHROPIC_API_KEY, OPENAI_API_KEY or OPENAI_BASE_URL is set: running offline on a scripted model.\n\
         (It still calls the real tools on this directory.)"
    );
    Ok((Arc::new(offline_model()), "scripted".into()))
}

/// Lists the directory, reads the README if there is one, asks to run `git log` (a call that
/// needs approval), then describes what it saw.
pub fn offline_model() -> ScriptedClient {
    ScriptedClient::new().respond_with(|request: &Request| {
        let calls: Vec<&str> = request
            .messages
            .iter()
            .flat_map(|m| &m.content)
            .filter_map(|block| match block {
                ContentBlock::ToolUse { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect();
        let results: Vec<String> = request
            .messages
            .iter()
            .flat_map(|m| &m.content)
            .filter_map(|block| match block {
                ContentBlock::ToolResult { content, .. } => {
                    Some(content.iter().filter_map(ContentBlock::as_text).collect())
                }
                _ => None,
            })
            .collect();
        let listing = results.first().cloned().unwrap_or_default();
        Ok(match calls.as_slice() {
            [] => tool_call("call_1", "list_dir", json!({"path": "."})),
            ["list_dir"] => match readme_in(&listing) {
                Some(readme) => {
                    tool_call("call_2", "read_file", json!({"path": readme, "limit": 40}))
                }
                None => tool_call("call_3", "bash", json!({"command": "git log --oneline -3"})),
            },
            ["list_dir", "read_file"] => {
                tool_call("call_3", "bash", json!({"command": "git log --oneline -3"}))
            }
            _ => answer(
                &listing,
                results.get(1).filter(|_| calls.contains(&"read_file")),
                results.last(),
            ),
        })
    })
}

fn readme_in(listing: &str) -> Option<String> {
    listing
        .lines()
        .map(|line| line.trim().trim_end_matches('/'))
        .find(|name| name.to_ascii_lowercase().starts_with("readme"))
        .map(str::to_owned)
}

fn tool_call(id: &str, name: &str, input: serde_json::Value) -> Response {
    Response {
        id: None,
        model: None,
        content: vec![ContentBlock::tool_use(id, name, input)],
        stop_reason: StopReason::ToolUse,
        stop_sequence: None,
        usage: Usage::default(),
    }
}

fn answer(listing: &str, readme: Option<&String>, git_log: Option<&String>) -> Response {
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
        Some(log) if log.contains("denied") => {
            text.push_str(" I was not allowed to look at the git history.")
        }
        Some(log) => {
            let first = log.lines().next().unwrap_or_default();
            text.push_str(&format!(" The latest commit: \"{first}\"."));
        }
        None => {}
    }
    text.push_str(" Set ANTHROPIC_API_KEY or OPENAI_API_KEY to ask a real model.");
    Response {
        id: None,
        model: None,
        content: vec![ContentBlock::text(text)],
        stop_reason: StopReason::EndTurn,
        stop_sequence: None,
        usage: Usage::default(),
    }
}
