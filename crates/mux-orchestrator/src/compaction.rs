//! Compaction: summarizing older turns through the model while keeping the last turns whole.

use std::sync::Arc;

use mux_llm::{ContentBlock, LlmClient, Message, Request, Role};

use crate::LoopError;

/// When and how to compact.
#[derive(Clone, Debug, PartialEq)]
pub struct CompactionConfig {
    /// Compact when the conversation is estimated past this many tokens.
    pub token_budget: u64,
    /// Turns (user prompts and everything after each) kept verbatim.
    pub keep_last_turns: usize,
    /// The model that writes the summary; `None` uses the run's model.
    pub model: Option<String>,
    /// Output limit of the summary.
    pub summary_max_tokens: u32,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        Self {
            token_budget: 100_000,
            keep_last_turns: 2,
            model: None,
            summary_max_tokens: 2_048,
        }
    }
}

/// A rough token count: one token per four bytes of the conversation's text and arguments.
pub fn estimate_tokens(messages: &[Message]) -> u64 {
    let bytes: usize = messages
        .iter()
        .flat_map(|m| &m.content)
        .map(|block| match block {
            ContentBlock::Text { text } => text.len(),
            ContentBlock::ToolUse { name, input, .. } => name.len() + input.to_string().len(),
            ContentBlock::ToolResult { content, .. } => content
                .iter()
                .filter_map(ContentBlock::as_text)
                .map(str::len)
                .sum(),
            ContentBlock::Thinking { thinking, .. } => thinking.len(),
            ContentBlock::Image { .. } => 4 * 1_500,
            _ => 0,
        })
        .sum();
    bytes.div_ceil(4) as u64
}

/// Whether a message starts a turn: a user message that answers no tool call.
fn starts_turn(message: &Message) -> bool {
    message.role == Role::User
        && !message
            .content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolResult { .. }))
}

/// Where to cut so that the last `keep_last_turns` turns stay: the index of the first kept
/// message, always the start of a turn, so a tool_use is never separated from its
/// tool_result. `None` when there is nothing older to summarize.
pub fn split_point(messages: &[Message], keep_last_turns: usize) -> Option<usize> {
    let starts: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| starts_turn(m))
        .map(|(i, _)| i)
        .collect();
    if starts.len() <= keep_last_turns.max(1) {
        return None;
    }
    let split = starts[starts.len() - keep_last_turns.max(1)];
    (split > 0).then_some(split)
}

const SUMMARY_PROMPT: &str = "Summarize the conversation above for your own future reference: the user's goals, \
decisions made, facts learned (file names, commands, results), and what remains to do. Be concise and concrete.";

/// Summarizes `messages[..split]` through `client` and returns the new conversation: the
/// summary, prepended to the first kept turn, then the kept messages unchanged.
pub(crate) async fn compact(
    client: &dyn LlmClient,
    model: &str,
    max_tokens: u32,
    messages: &[Message],
    split: usize,
) -> Result<Vec<Message>, LoopError> {
    let mut request = Request::new(model, max_tokens)
        .system("You write faithful, compact summaries of conversations.");
    let mut older = messages[..split].to_vec();
    older.push(Message::user(SUMMARY_PROMPT));
    request.messages = Arc::new(older);
    let summary = client.complete(request).await?.text();
    let mut kept = messages[split..].to_vec();
    if let Some(first) = kept.first_mut() {
        let note = format!("Summary of the earlier conversation:\n{summary}");
        first.content.insert(0, ContentBlock::text(note));
    }
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn turn(i: usize, tools: usize) -> Vec<Message> {
        let mut messages = vec![Message::user(format!("prompt {i}"))];
        if tools > 0 {
            let uses = (0..tools)
                .map(|t| ContentBlock::tool_use(format!("c{i}-{t}"), "t", json!({})))
                .collect();
            messages.push(Message::new(Role::Assistant, uses));
            let results = (0..tools)
                .map(|t| ContentBlock::tool_result(format!("c{i}-{t}"), "ok", false))
                .collect();
            messages.push(Message::new(Role::User, results));
        }
        messages.push(Message::assistant(format!("answer {i}")));
        messages
    }

    fn ids(messages: &[Message], tool_use: bool) -> Vec<String> {
        messages
            .iter()
            .flat_map(|m| &m.content)
            .filter_map(|b| match b {
                ContentBlock::ToolUse { id, .. } if tool_use => Some(id.clone()),
                ContentBlock::ToolResult { tool_use_id, .. } if !tool_use => {
                    Some(tool_use_id.clone())
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn nothing_to_split_in_a_short_conversation() {
        assert_eq!(split_point(&turn(0, 1), 2), None);
    }

    /// One turn as the loop writes it: the prompt, `rounds` tool rounds (each with its parallel
    /// calls, an optional assistant preamble and queued user text after the results), then
    /// the answer.
    #[derive(Clone, Debug)]
    struct Turn {
        /// Per round: the number of parallel calls, whether the assistant wrote text first,
        /// and whether a queued user message joined the results.
        rounds: Vec<(usize, bool, bool)>,
    }

    fn turn_strategy() -> impl Strategy<Value = Turn> {
        proptest::collection::vec((1usize..4, any::<bool>(), any::<bool>()), 0..4)
            .prop_map(|rounds| Turn { rounds })
    }

    fn build(turns: &[Turn]) -> Vec<Message> {
        let mut messages = Vec::new();
        for (i, turn) in turns.iter().enumerate() {
            messages.push(Message::user(format!("prompt {i}")));
            for (r, &(calls, preamble, queued)) in turn.rounds.iter().enumerate() {
                let mut uses = Vec::new();
                if preamble {
                    uses.push(ContentBlock::text("let me look"));
                }
                let id = |c: usize| format!("c{i}-{r}-{c}");
                uses.extend((0..calls).map(|c| ContentBlock::tool_use(id(c), "t", json!({}))));
                messages.push(Message::new(Role::Assistant, uses));
                let mut results: Vec<ContentBlock> = (0..calls)
                    .map(|c| ContentBlock::tool_result(id(c), "ok", false))
                    .collect();
                if queued {
                    results.push(ContentBlock::text("also this"));
                }
                messages.push(Message::new(Role::User, results));
            }
            messages.push(Message::assistant(format!("answer {i}")));
        }
        messages
    }

    /// Every tool_use is answered by a tool_result in the next message, and every tool_result
    /// answers a tool_use of the message before it.
    fn well_paired(messages: &[Message]) -> bool {
        let uses = |m: &Message| ids(std::slice::from_ref(m), true);
        let results = |m: &Message| ids(std::slice::from_ref(m), false);
        messages.iter().enumerate().all(|(i, m)| {
            let after = messages.get(i + 1).map(results).unwrap_or_default();
            let before = i
                .checked_sub(1)
                .map(|p| uses(&messages[p]))
                .unwrap_or_default();
            uses(m).iter().all(|id| after.contains(id))
                && results(m).iter().all(|id| before.contains(id))
        })
    }

    proptest! {
        #[test]
        fn compaction_keeps_every_pair_and_the_last_turns(
            turns in proptest::collection::vec(turn_strategy(), 1..8),
            keep in 1usize..4,
        ) {
            let messages = build(&turns);
            prop_assert!(well_paired(&messages));
            let Some(split) = split_point(&messages, keep) else {
                prop_assert!(turns.len() <= keep);
                return Ok(());
            };
            let model = mux_llm::testing::ScriptedClient::new().reply_text("SUMMARY");
            let compacted = futures::executor::block_on(compact(&model, "m", 100, &messages, split))
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            // The summary request holds whole pairs only, and the prompt asking for it.
            let request = &model.requests()[0];
            let older = &request.messages[..request.messages.len() - 1];
            prop_assert_eq!(older, &messages[..split]);
            prop_assert!(well_paired(older));
            // The result: the last `keep` turns verbatim, the summary before the first.
            prop_assert!(well_paired(&compacted));
            prop_assert_eq!(compacted.iter().filter(|m| starts_turn(m)).count(), keep);
            prop_assert_eq!(&compacted[1..], &messages[split + 1..]);
            prop_assert_eq!(
                compacted[0].content[0].as_text(),
                Some("Summary of the earlier conversation:\nSUMMARY")
            );
            prop_assert_eq!(&compacted[0].content[1..], &messages[split].content[..]);
            let kept_prompts: Vec<String> = (turns.len() - keep..turns.len())
                .map(|i| format!("prompt {i}"))
                .collect();
            let seen: Vec<String> = compacted
                .iter()
                .filter(|m| starts_turn(m))
                .map(|m| m.content.last().and_then(ContentBlock::as_text).unwrap_or_default().to_owned())
                .collect();
            prop_assert_eq!(seen, kept_prompts);
        }

        #[test]
        fn the_split_never_separates_a_tool_use_from_its_result(
            shape in proptest::collection::vec(0usize..4, 1..12),
            keep in 1usize..4,
        ) {
            let messages: Vec<Message> = shape.iter().enumerate().flat_map(|(i, &t)| turn(i, t)).collect();
            if let Some(split) = split_point(&messages, keep) {
                let (old, kept) = messages.split_at(split);
                prop_assert_eq!(ids(old, true), ids(old, false));
                prop_assert_eq!(ids(kept, true), ids(kept, false));
                prop_assert_eq!(kept.iter().filter(|m| starts_turn(m)).count(), keep);
                prop_assert!(starts_turn(&kept[0]));
            } else {
                prop_assert!(shape.len() <= keep);
            }
        }
    }
}
