//! The wire form of [`LoopEvent`] and [`LoopInput`]: one sample of every variant, snapshotted
//! as JSON, so a change to a tag or a field name shows up in review.

use mux_llm::Usage;
use mux_permission::{Remember, Scope};
use mux_tool::{Subject, ToolOutput, ToolUpdate};
use serde_json::json;

use crate::{Answer, LoopEvent, LoopInput, LoopState};

/// Each variant's `"type"` tag. The match is exhaustive: a new variant does not compile until
/// it is named here, and `every_event` must then carry a sample of it.
fn event_tag(event: &LoopEvent) -> &'static str {
    match event {
        LoopEvent::StateChanged { .. } => "state_changed",
        LoopEvent::TextDelta { .. } => "text_delta",
        LoopEvent::ThinkingDelta { .. } => "thinking_delta",
        LoopEvent::ToolCallStarted { .. } => "tool_call_started",
        LoopEvent::ToolCallArguments { .. } => "tool_call_arguments",
        LoopEvent::ApprovalRequired { .. } => "approval_required",
        LoopEvent::ToolApproved { .. } => "tool_approved",
        LoopEvent::ToolDenied { .. } => "tool_denied",
        LoopEvent::ToolExecuting { .. } => "tool_executing",
        LoopEvent::ToolOutputDelta { .. } => "tool_output_delta",
        LoopEvent::ToolResult { .. } => "tool_result",
        LoopEvent::AwaitingInput { .. } => "awaiting_input",
        LoopEvent::Retrying { .. } => "retrying",
        LoopEvent::ModelFallback { .. } => "model_fallback",
        LoopEvent::TurnComplete { .. } => "turn_complete",
        LoopEvent::Usage { .. } => "usage",
        LoopEvent::TitleGenerated { .. } => "title_generated",
        LoopEvent::Compacted { .. } => "compacted",
        LoopEvent::HookFailed { .. } => "hook_failed",
        LoopEvent::InputRejected { .. } => "input_rejected",
        LoopEvent::ToolsChanged { .. } => "tools_changed",
        LoopEvent::McpServerFailed { .. } => "mcp_server_failed",
        LoopEvent::Lagged { .. } => "lagged",
        LoopEvent::Finished { .. } => "finished",
        LoopEvent::Error { .. } => "error",
    }
}

fn input_tag(input: &LoopInput) -> &'static str {
    match input {
        LoopInput::ToolApproval { .. } => "tool_approval",
        LoopInput::UserResponse { .. } => "user_response",
        LoopInput::UserMessage { .. } => "user_message",
        LoopInput::Cancel => "cancel",
    }
}

fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: 7,
        ..Usage::default()
    }
}

fn every_event() -> Vec<LoopEvent> {
    let id = || "call_1".to_owned();
    vec![
        LoopEvent::StateChanged {
            from: LoopState::Streaming,
            to: LoopState::ExecutingTools,
        },
        LoopEvent::TextDelta { text: "Hel".into() },
        LoopEvent::ThinkingDelta {
            thinking: "hmm".into(),
        },
        LoopEvent::ToolCallStarted {
            call_id: id(),
            name: "bash".into(),
        },
        LoopEvent::ToolCallArguments {
            call_id: id(),
            name: "bash".into(),
            input: json!({"command": "ls"}),
        },
        LoopEvent::ApprovalRequired {
            call_id: id(),
            name: "bash".into(),
            input: json!({"command": "ls"}),
            subject: Subject::command("ls"),
            reason: "no rule allows it".into(),
            preview: None,
        },
        LoopEvent::ToolApproved {
            call_id: id(),
            always: true,
        },
        LoopEvent::ToolDenied {
            call_id: id(),
            reason: "the user said no".into(),
        },
        LoopEvent::ToolExecuting {
            call_id: id(),
            name: "bash".into(),
        },
        LoopEvent::ToolOutputDelta {
            call_id: id(),
            update: ToolUpdate::Output {
                text: "a.txt\n".into(),
            },
        },
        LoopEvent::ToolResult {
            call_id: id(),
            name: "bash".into(),
            output: ToolOutput::text("a.txt"),
        },
        LoopEvent::AwaitingInput {
            call_id: "call_2".into(),
            question: "Which file?".into(),
        },
        LoopEvent::Retrying {
            attempt: 1,
            delay_ms: 500,
            error:
                "anthropic is overloaded (HTTP 529) (POST https://api.anthropic.com/v1/messages)"
                    .into(),
        },
        LoopEvent::ModelFallback {
            from: "anthropic".into(),
            to: "openai-responses".into(),
            error: "anthropic is overloaded (HTTP 529) after 2 attempts".into(),
        },
        LoopEvent::TurnComplete {
            iteration: 1,
            has_more: true,
        },
        LoopEvent::Usage {
            turn: usage(10, 5),
            total: usage(30, 9),
        },
        LoopEvent::TitleGenerated {
            title: "Listing files".into(),
        },
        LoopEvent::Compacted {
            tokens_before: 1200,
            tokens_after: 300,
        },
        LoopEvent::HookFailed {
            hook: "audit".into(),
            point: "pre_tool_use".into(),
            message: "panicked".into(),
        },
        LoopEvent::InputRejected {
            message: "no call `x` is waiting for approval".into(),
        },
        LoopEvent::ToolsChanged {
            added: vec!["mcp__ev__echo".into()],
            removed: vec![],
            updated: vec!["mcp__ev__add".into()],
        },
        LoopEvent::McpServerFailed {
            server: "ev".into(),
            reason: "command not found".into(),
        },
        LoopEvent::Lagged { missed: 3 },
        LoopEvent::Finished {
            text: "Two files.".into(),
            iterations: 2,
            usage: usage(30, 9),
            limit: None,
        },
        LoopEvent::Finished {
            text: String::new(),
            iterations: 1,
            usage: usage(30, 9),
            limit: Some(crate::LimitReached::ToolCalls { max: 1 }),
        },
        LoopEvent::Error {
            kind: "cancelled".into(),
            message: "the run was cancelled".into(),
        },
    ]
}

fn every_input() -> Vec<LoopInput> {
    vec![
        LoopInput::ToolApproval {
            call_id: "call_1".into(),
            answer: Answer::AllowOnce,
        },
        LoopInput::ToolApproval {
            call_id: "call_1".into(),
            answer: Answer::AllowAlways {
                remember: Remember::prefix(Scope::Project, "git diff"),
            },
        },
        LoopInput::ToolApproval {
            call_id: "call_1".into(),
            answer: Answer::Deny {
                reason: "not now".into(),
            },
        },
        LoopInput::UserResponse {
            call_id: "call_2".into(),
            text: "the README".into(),
        },
        LoopInput::UserMessage {
            text: "also check the tests".into(),
        },
        LoopInput::Cancel,
    ]
}

/// The number of `LoopEvent` variants (the arms of `event_tag`).
const EVENT_VARIANTS: usize = 25;

#[test]
fn every_event_has_its_stable_type_tag() {
    let events = every_event();
    let tags: std::collections::HashSet<&str> = events.iter().map(event_tag).collect();
    assert_eq!(tags.len(), EVENT_VARIANTS, "a sample of every variant");
    for event in &events {
        let value = serde_json::to_value(event).unwrap();
        assert_eq!(value["type"], event_tag(event), "{value}");
        let back: LoopEvent = serde_json::from_value(value).unwrap();
        assert_eq!(&back, event);
    }
    insta::assert_json_snapshot!("loop_events", events);
}

#[test]
fn every_input_has_its_stable_type_tag_and_round_trips() {
    let inputs = every_input();
    for input in &inputs {
        let text = serde_json::to_string(input).unwrap();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["type"], input_tag(input), "{text}");
        let back: LoopInput = serde_json::from_str(&text).unwrap();
        assert_eq!(&back, input);
    }
    insta::assert_json_snapshot!("loop_inputs", inputs);
}

#[test]
fn approvals_in_the_shape_of_earlier_releases_still_parse() {
    let old: Vec<LoopInput> = serde_json::from_value(json!([
        {"type": "tool_approval", "call_id": "c1", "decision": {"decision": "allow_once"}},
        {"type": "tool_approval", "call_id": "c1", "decision": {"decision": "deny", "reason": "no"}},
        {"type": "tool_approval", "call_id": "c1", "decision": {"decision": "allow_always",
            "remember": {"scope": "project", "prefix": "git diff", "persist": false}}},
    ]))
    .unwrap();
    assert_eq!(
        old[0],
        LoopInput::ToolApproval {
            call_id: "c1".into(),
            answer: Answer::AllowOnce,
        }
    );
    assert_eq!(
        old[1],
        LoopInput::ToolApproval {
            call_id: "c1".into(),
            answer: Answer::deny("no"),
        }
    );
    assert_eq!(
        old[2],
        LoopInput::ToolApproval {
            call_id: "c1".into(),
            answer: Answer::AllowAlways {
                remember: Remember::prefix(Scope::Project, "git diff"),
            },
        }
    );
    let both = json!({"type": "tool_approval", "call_id": "c1",
        "answer": {"answer": "allow_once", "decision": "deny", "reason": "x"}});
    assert!(serde_json::from_value::<LoopInput>(both).is_err());
    let incomplete = json!({"type": "tool_approval", "call_id": "c1",
        "answer": {"answer": "allow_always"}});
    assert!(serde_json::from_value::<LoopInput>(incomplete).is_err());
}

#[test]
fn inputs_parse_from_what_a_client_would_send() {
    let parsed: Vec<LoopInput> = serde_json::from_value(json!([
        {"type": "tool_approval", "call_id": "c1", "answer": {"answer": "allow_once"}},
        {"type": "tool_approval", "call_id": "c1", "answer": {"answer": "deny", "reason": "no"}},
        {"type": "user_response", "call_id": "c2", "text": "yes"},
        {"type": "user_message", "text": "more"},
        {"type": "cancel"}
    ]))
    .unwrap();
    assert_eq!(
        parsed.iter().map(input_tag).collect::<Vec<_>>(),
        [
            "tool_approval",
            "tool_approval",
            "user_response",
            "user_message",
            "cancel"
        ]
    );
    assert!(serde_json::from_value::<LoopInput>(json!({"type": "resume"})).is_err());
}
