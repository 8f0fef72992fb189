//! No conversation keeps a tool call without a result. A process that dies between the
//! model's tool calls and their results (killed, crashed, its store unreachable) leaves the
//! session ending in an assistant message whose calls have no answer, and Anthropic and OpenAI
//! reject such a history. The next run on the session resolves those calls before it adds its
//! prompt:
//!
//! - a call that returned before its run stopped gives the model that output (the session's
//!   journal recorded it, [`CallProgress::Finished`]);
//! - a call that never started (it waited for an approval, or never reached the gate) runs now,
//!   through the gate: a pending approval is asked again, or answered by the answers a paused
//!   run was resumed with;
//! - a call that started (or whose turn has no journal) runs again only when its tool is
//!   read-only or idempotent; any other, or one to a tool that is gone, gets an error result
//!   that says its outcome is unknown, so the model (and the person) check before retrying.
//!
//! Except when the open turn is left behind: its run was cancelled ([`settle_open_turn`]), or
//! a new prompt comes ([`not_run`]). Then nothing of it runs or asks again: a call that
//! returned gives its output, one that never started says it was not run, and one that
//! started has an unknown outcome. A new prompt is so stored at once, its message led by
//! those results, before anything can wait for a person: a prompt is never held in memory
//! while an old approval is asked again (a face that drops a paused loop would drop it too).

use std::collections::BTreeMap;

use mux_llm::{ContentBlock, Message, Role};
use mux_tool::{ToolCall, ToolOutput, ToolSpec};

use crate::convert::tool_result_block;
use crate::session::{CallProgress, HistoryRecord, SessionError, SessionStore};

/// The calls of the last assistant message that no later message answers, in call order.
///
/// Only the tail is looked at: the loop writes each turn's results in one message right after
/// the calls, so a gap can only be left at the end.
pub(crate) fn unanswered(messages: &[Message]) -> Vec<ToolCall> {
    let Some(last) = messages.iter().rposition(|m| m.role == Role::Assistant) else {
        return Vec::new();
    };
    let answered: Vec<&str> = messages[last + 1..]
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|block| match block {
            ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
            _ => None,
        })
        .collect();
    messages[last]
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::ToolUse { id, name, input } if !answered.contains(&id.as_str()) => {
                Some(ToolCall::new(id.clone(), name.clone(), input.clone()))
            }
            _ => None,
        })
        .collect()
}

/// What becomes of an open call on the next run.
#[derive(Debug)]
pub(crate) enum Resolution {
    /// It returned before its run stopped: the model reads that.
    Known(ToolOutput),
    /// It runs now, through the gate, with the effect key it had ([`mux_tool::EffectKey`]):
    /// it never started (attempt 1; a pending approval is asked again, or answered by the
    /// answers the run was resumed with), or it may run twice and may have run (attempt 2:
    /// such a call records no start, so earlier attempts are not counted).
    Run {
        /// Which attempt the run is, from 1.
        attempt: u32,
    },
    /// It may have run and must not run twice.
    Unknown,
}

/// Resolves a call from how far it got (`progress`, from the session's journal; `journaled`
/// when the turn has any record, so a call without one never reached the gate) and its tool.
pub(crate) fn resolution(
    progress: Option<&CallProgress>,
    journaled: bool,
    spec: Option<&ToolSpec>,
) -> Resolution {
    match progress {
        Some(CallProgress::Finished { output }) => Resolution::Known(output.clone()),
        Some(CallProgress::AwaitingApproval { .. }) => Resolution::Run { attempt: 1 },
        // A call that may run twice records no start: without a result, it may have run.
        Some(CallProgress::Started) | None if may_rerun(spec) => Resolution::Run { attempt: 2 },
        // A turn with a journal records every other call's start: this one never reached it.
        None if journaled => Resolution::Run { attempt: 1 },
        // Started, or no journal at all (written before mux kept one): it may have run.
        Some(CallProgress::Started) | None => Resolution::Unknown,
    }
}

/// Whether a call to `spec` may run a second time: its tool says running it again changes
/// nothing (read-only or idempotent). A tool that is gone may not.
pub fn may_rerun(spec: Option<&ToolSpec>) -> bool {
    spec.is_some_and(|spec| spec.annotations.read_only || spec.annotations.idempotent)
}

/// Why an open call is left behind, for the result that says it was not run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LeftBehind {
    /// Its run was cancelled.
    Cancelled,
    /// A new prompt came before it ran.
    NewPrompt,
}

/// The result of an open call whose turn is left behind ([`LeftBehind`]): the output it
/// returned, "not run" when it never started (it waited for an approval, or never reached
/// the gate), and an unknown outcome when it started (or its turn has no journal). Nothing
/// runs or asks again.
pub(crate) fn not_run(
    call: &ToolCall,
    progress: Option<&CallProgress>,
    journaled: bool,
    why: LeftBehind,
) -> ToolOutput {
    let never_started = match progress {
        Some(CallProgress::Finished { output }) => return output.clone(),
        Some(CallProgress::AwaitingApproval { .. }) => true,
        None => journaled,
        Some(CallProgress::Started) => false,
    };
    let why = match why {
        LeftBehind::Cancelled => "its run was cancelled",
        LeftBehind::NewPrompt => "the user sent a new message instead",
    };
    if !never_started {
        return ToolOutput::error(format!(
            "outcome unknown: this `{}` call started, and {why} before it returned. It may or \
             may not have taken effect: check before calling it again.",
            call.name
        ))
        .with_metadata("mux.outcome", serde_json::Value::from("unknown"));
    }
    ToolOutput::error(format!(
        "not run: this `{}` call waited for the user's approval (or its turn), and {why}. \
         Call it again if it is still wanted.",
        call.name
    ))
    .with_metadata("mux.outcome", serde_json::Value::from("not_run"))
}

/// The result of a call whose run was cancelled before it returned, for an engine that keeps
/// its own record of how far each call got (mux-temporal): "outcome unknown" when the call
/// had `started`, "not run" when it had not. Nothing runs or asks again.
pub fn cancelled_call_result(call: &ToolCall, started: bool) -> ToolOutput {
    let progress = if started {
        CallProgress::Started
    } else {
        CallProgress::AwaitingApproval {
            reason: String::new(),
        }
    };
    not_run(call, Some(&progress), true, LeftBehind::Cancelled)
}

/// The message that answers every open call of `messages` (see [`unanswered`]) without
/// running any ([`not_run`]); `None` when no call is open.
pub(crate) fn left_behind(
    messages: &[Message],
    progress: &BTreeMap<String, CallProgress>,
    why: LeftBehind,
) -> Option<Message> {
    let calls = unanswered(messages);
    if calls.is_empty() {
        return None;
    }
    let journaled = !progress.is_empty();
    let blocks = calls
        .iter()
        .map(|call| {
            let output = not_run(call, progress.get(&call.id), journaled, why);
            tool_result_block(&call.id, &output)
        })
        .collect();
    Some(Message::new(Role::User, blocks))
}

/// Settles the open turn of the stored session `session_id` after its run was cancelled
/// while paused (on an approval or a question), so no conversation is left with a tool call
/// without a result: each open call gets a result, and nothing runs. A call that returned
/// gives its output; one that never started says its run was cancelled; one that started
/// has an unknown outcome. Returns how many calls were settled (0 when none was open).
///
/// Call it while no loop runs on the session (a face that holds the paused run's claim):
/// the results are appended to the stored log.
pub async fn settle_open_turn(
    store: &dyn SessionStore,
    session_id: &str,
) -> Result<usize, SessionError> {
    let session = store.load(session_id).await?;
    let Some(message) = left_behind(&session.messages, &session.calls, LeftBehind::Cancelled)
    else {
        return Ok(0);
    };
    let settled = message.content.len();
    store
        .append(session_id, &[HistoryRecord::Message { message }])
        .await?;
    Ok(settled)
}

/// The result of a call that is not run again: its outcome is unknown.
pub fn outcome_unknown(call: &ToolCall) -> ToolOutput {
    ToolOutput::error(format!(
        "outcome unknown: the run that made this `{}` call stopped before the call returned \
         (its process ended or its session could not be written), and it was not run again \
         because it is not read-only or idempotent. It may or may not have taken effect: \
         check before calling it again.",
        call.name
    ))
    .with_metadata("mux.outcome", serde_json::Value::from("unknown"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mux_tool::ToolAnnotations;
    use serde_json::json;

    fn call(id: &str) -> ContentBlock {
        ContentBlock::ToolUse {
            id: id.into(),
            name: "write".into(),
            input: json!({"n": 1}),
        }
    }

    fn result(id: &str) -> ContentBlock {
        ContentBlock::ToolResult {
            tool_use_id: id.into(),
            content: vec![ContentBlock::text("ok")],
            is_error: false,
        }
    }

    fn ids(messages: &[Message]) -> Vec<String> {
        unanswered(messages).into_iter().map(|c| c.id).collect()
    }

    #[test]
    fn finds_only_the_unanswered_calls_of_the_last_assistant_message() {
        let cases: Vec<(Vec<Message>, Vec<&str>)> = vec![
            (vec![], vec![]),
            (vec![Message::user("hi")], vec![]),
            (
                vec![Message::user("hi"), Message::assistant("hello")],
                vec![],
            ),
            (
                vec![
                    Message::user("hi"),
                    Message::new(Role::Assistant, vec![call("a"), call("b")]),
                ],
                vec!["a", "b"],
            ),
            (
                vec![
                    Message::new(Role::Assistant, vec![call("a"), call("b")]),
                    Message::new(Role::User, vec![result("a")]),
                ],
                vec!["b"],
            ),
            (
                vec![
                    Message::new(Role::Assistant, vec![call("a")]),
                    Message::new(Role::User, vec![result("a")]),
                    Message::assistant("done"),
                ],
                vec![],
            ),
        ];
        for (messages, expected) in cases {
            assert_eq!(ids(&messages), expected, "{messages:?}");
        }
    }

    #[test]
    fn only_read_only_or_idempotent_tools_run_again() {
        let spec = |annotations| {
            ToolSpec::new("t", "t", json!({"type": "object"}))
                .unwrap()
                .with_annotations(annotations)
        };
        assert!(may_rerun(Some(&spec(ToolAnnotations::read_only()))));
        assert!(may_rerun(Some(
            &spec(ToolAnnotations::default())
                .with_annotations(ToolAnnotations::default().with_idempotent(true))
        )));
        assert!(!may_rerun(Some(&spec(ToolAnnotations::default()))));
        assert!(!may_rerun(Some(&spec(ToolAnnotations::destructive()))));
        assert!(!may_rerun(None));
    }

    #[test]
    fn a_call_run_again_is_a_second_attempt_unless_it_never_started() {
        let annotated = |annotations| {
            ToolSpec::new("t", "t", json!({"type": "object"}))
                .unwrap()
                .with_annotations(annotations)
        };
        let idempotent = annotated(ToolAnnotations::default().with_idempotent(true));
        let plain = annotated(ToolAnnotations::default());
        let waiting = CallProgress::AwaitingApproval { reason: "r".into() };
        let attempt = |progress: Option<&CallProgress>, journaled, spec: &ToolSpec| match resolution(
            progress,
            journaled,
            Some(spec),
        ) {
            Resolution::Run { attempt } => attempt,
            other => panic!("{other:?}"),
        };
        // Its start is never recorded: without a result, it may have run.
        assert_eq!(attempt(None, true, &idempotent), 2);
        assert_eq!(attempt(None, false, &idempotent), 2);
        assert_eq!(attempt(Some(&CallProgress::Started), true, &idempotent), 2);
        // It waited for a person, or (a call whose start is recorded) never reached the gate.
        assert_eq!(attempt(Some(&waiting), true, &idempotent), 1);
        assert_eq!(attempt(None, true, &plain), 1);
    }

    #[test]
    fn a_left_behind_call_never_runs_and_says_why() {
        let call = ToolCall::new("1", "deploy", json!({}));
        let returned = ToolOutput::text("shipped");
        let waiting = CallProgress::AwaitingApproval {
            reason: "asks".into(),
        };
        let finished = CallProgress::Finished {
            output: returned.clone(),
        };
        // (progress, journaled) → "returned", "not run" or "unknown".
        let cases: Vec<(Option<&CallProgress>, bool, &str)> = vec![
            (Some(&finished), true, "returned"),
            (Some(&waiting), true, "not run"),
            // Journaled turn, no record of this call: it never reached the gate.
            (None, true, "not run"),
            // No journal at all: it may have run.
            (None, false, "unknown"),
            (Some(&CallProgress::Started), true, "unknown"),
        ];
        for why in [LeftBehind::Cancelled, LeftBehind::NewPrompt] {
            for (progress, journaled, expected) in &cases {
                let output = not_run(&call, *progress, *journaled, why);
                let case = format!("{why:?} {progress:?} {journaled}: {output:?}");
                match *expected {
                    "returned" => assert_eq!(output, returned, "{case}"),
                    "not run" => {
                        assert!(output.is_error, "{case}");
                        let text = output.to_text();
                        assert!(
                            text.starts_with("not run") && text.contains("`deploy`"),
                            "{case}"
                        );
                        let said = match why {
                            LeftBehind::Cancelled => "cancelled",
                            LeftBehind::NewPrompt => "new message",
                        };
                        assert!(text.contains(said), "{case}");
                    }
                    _ => {
                        assert!(output.is_error, "{case}");
                        let text = output.to_text();
                        assert!(text.starts_with("outcome unknown"), "{case}");
                        assert!(text.contains("`deploy`"), "{case}");
                        assert_eq!(
                            output.metadata.get("mux.outcome"),
                            Some(&serde_json::Value::from("unknown")),
                            "{case}"
                        );
                    }
                }
            }
        }
    }

    #[tokio::test]
    async fn settling_a_cancelled_turn_answers_each_open_call_once() {
        use crate::session::{MemorySessionStore, SessionMeta};
        let store = MemorySessionStore::new();
        let mut meta = SessionMeta::new();
        meta.id = "s1".into();
        let records = [
            HistoryRecord::Message {
                message: Message::user("ship it"),
            },
            HistoryRecord::Message {
                message: Message::new(Role::Assistant, vec![call("a"), call("b")]),
            },
            HistoryRecord::Call {
                call_id: "a".into(),
                progress: CallProgress::Finished {
                    output: ToolOutput::text("done"),
                },
            },
            HistoryRecord::Call {
                call_id: "b".into(),
                progress: CallProgress::AwaitingApproval {
                    reason: "asks".into(),
                },
            },
        ];
        store.create_and_append(&meta, &records).await.unwrap();
        assert_eq!(settle_open_turn(&store, "s1").await.unwrap(), 2);
        let session = store.load("s1").await.unwrap();
        assert!(unanswered(&session.messages).is_empty());
        assert!(session.calls.is_empty());
        let last = session.messages.last().unwrap();
        let text = format!("{:?}", last.content);
        assert!(
            text.contains("done") && text.contains("its run was cancelled"),
            "{text}"
        );
        // Nothing is left to settle, and a session that is not stored is an error.
        assert_eq!(settle_open_turn(&store, "s1").await.unwrap(), 0);
        assert!(matches!(
            settle_open_turn(&store, "nope").await,
            Err(SessionError::NotFound(_))
        ));
    }

    #[test]
    fn an_unknown_outcome_is_an_error_that_says_so() {
        let output = outcome_unknown(&ToolCall::new("1", "deploy", json!({})));
        assert!(output.is_error);
        assert!(output.to_text().starts_with("outcome unknown"));
        assert!(output.to_text().contains("`deploy`"));
    }
}
