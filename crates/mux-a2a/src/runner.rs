//! A task's run: the loop's events become the task's updates.
//!
//! - text streams into the artifact `answer` (a turn that goes on to tools replaces what it
//!   said; the finished answer is sent whole as the last chunk);
//! - a tool call that starts or ends is a `working` status with a line saying so;
//! - an approval or an `ask_user` question pauses the task as `input-required`, with the
//!   question in the status message (see [`crate::answer`]);
//! - the end is `completed`, `canceled` (a cancelled run) or `failed`.
//!
//! Each change goes to the run store through the task's writer. A pause on approvals and
//! questions alone (every open call waits for one) stops the loop where it waits and gives
//! the run up as `paused`: the session holds the pending calls, and the answer, on any
//! process, rebuilds the loop
//! ([`Orchestrator::resume_run`](mux_orchestrator::Orchestrator::resume_run)), which asks
//! again under the same call ids; a question's answer waits for that ([`TaskEntry::prefill`]). A
//! cancel asked on another process cancels the loop; a run another process took over stops
//! here, writing nothing more. A run store that stops taking the task's changes for the
//! writer's bound ([`WRITE_TIMEOUT`](mux_orchestrator::runs::WRITE_TIMEOUT)) ends the task
//! `failed`, naming the cause ([`store_failed`]).

use std::collections::HashSet;
use std::sync::Arc;

use mux_orchestrator::runs::{RunStatus, RunWriter};
use mux_orchestrator::{LoopEvent, LoopInput, Run, RunHandle};
use serde_json::json;

use crate::task::{Ask, TaskEntry};
use crate::wire::{Artifact, Message, Part, TaskState};

/// The id of the artifact that holds a task's answer.
pub(crate) const ANSWER: &str = "answer";

/// Follows `run` until it ends or pauses on approvals or questions, updating `task` and storing its
/// changes through `writer`.
pub(crate) async fn follow(task: Arc<TaskEntry>, run: Run, writer: RunWriter) {
    // The input sender is already the task's (set before this task was spawned).
    let Run {
        mut events, handle, ..
    } = run;
    task.set_status(TaskState::Working, None);
    let cancel_asked = writer.cancel_requested();
    let lost = writer.lost();
    let failed = writer.failed();
    let mut fresh_turn = true;
    let mut ended = false;
    // Calls whose arguments are complete and that have no result yet.
    let mut open: HashSet<String> = HashSet::new();
    loop {
        let event = tokio::select! {
            event = events.recv() => event,
            () = cancel_asked.cancelled(), if !handle.cancellation().is_cancelled() => {
                handle.cancel();
                continue;
            }
            () = failed.cancelled() => {
                handle.abort();
                store_failed(&task, &writer);
                return;
            }
            () = lost.cancelled() => {
                // Another process continues it; stop here where we are.
                handle.abort();
                return;
            }
        };
        let Some(event) = event else { break };
        match &event {
            LoopEvent::ToolCallArguments { call_id, .. } => {
                open.insert(call_id.clone());
            }
            LoopEvent::ToolResult { call_id, .. } => {
                open.remove(call_id);
            }
            _ => {}
        }
        match event {
            LoopEvent::TextDelta { text } if !text.is_empty() => {
                task.set_artifact(answer(vec![Part::text(text)]), !fresh_turn, false);
                fresh_turn = false;
            }
            LoopEvent::TurnComplete { has_more: true, .. } => fresh_turn = true,
            LoopEvent::ToolExecuting { name, .. } => {
                working(&task, format!("Running `{name}`."));
            }
            LoopEvent::ToolResult { name, output, .. } => {
                let how = if output.is_error {
                    "failed"
                } else {
                    "finished"
                };
                working(&task, format!("`{name}` {how}."));
            }
            LoopEvent::ApprovalRequired {
                call_id,
                name,
                input,
                reason,
                ..
            } => {
                open.insert(call_id.clone());
                let ask = Ask::Approval {
                    call_id,
                    tool: name,
                    input,
                    reason,
                };
                if ask_for(&task, ask, &open, &handle, &writer) {
                    return;
                }
            }
            LoopEvent::AwaitingInput { call_id, question } => {
                if let Some(text) = task.take_prefill(&call_id) {
                    // Answered while the loop was stopped: the rebuilt loop asked again.
                    if let Some(input) = task.input() {
                        input.send(LoopInput::UserResponse { call_id, text }).await;
                    }
                    continue;
                }
                let ask = Ask::Question { call_id, question };
                if ask_for(&task, ask, &open, &handle, &writer) {
                    return;
                }
            }
            // Answered here, or by the loop itself (an approval timeout): the task goes on.
            LoopEvent::ToolApproved { call_id, .. } | LoopEvent::ToolDenied { call_id, .. }
                if task.remove_ask(&call_id) =>
            {
                resume(&task);
            }
            LoopEvent::Finished { text, .. } => {
                let reply = agent_message(&task, vec![Part::text(text.clone())]);
                task.record(reply);
                task.set_artifact(answer(vec![Part::text(text)]), false, true);
                task.set_status(TaskState::Completed, None);
                ended = true;
            }
            LoopEvent::Error { kind, message } => {
                if kind == "cancelled" {
                    task.set_status(TaskState::Canceled, None);
                } else {
                    let text = format!("The run failed ({kind}): {message}");
                    let reply = agent_message(&task, vec![Part::text(text)]);
                    task.set_status(TaskState::Failed, Some(reply));
                }
                ended = true;
            }
            _ => {}
        }
        if !ended
            && task.state() == TaskState::InputRequired
            && waits_for_answers_only(&task, &open)
        {
            // The session holds the pause; whoever answers rebuilds the loop.
            handle.abort();
            task.release_input();
            writer.finish(RunStatus::Paused);
            return;
        }
    }
    let outcome = handle.wait().await;
    if !ended {
        let text = match outcome {
            Err(e) => format!("The run ended without an answer: {e}"),
            Ok(_) => "The run ended without an answer.".to_owned(),
        };
        let reply = agent_message(&task, vec![Part::text(text)]);
        task.set_status(TaskState::Failed, Some(reply));
    }
    writer.finish(match task.state() {
        TaskState::Completed => RunStatus::Finished,
        TaskState::Canceled => RunStatus::Cancelled,
        _ => RunStatus::Failed,
    });
}

/// The run store did not take the task's changes within the writer's bound (its loop, if
/// any, is stopped already): the task ends `failed` with a message naming the cause, shown
/// at once though the store has not taken it, and the whole task is handed to the writer as
/// the run's end, stored once the store takes writes again. A task that ended here already
/// keeps its end, handed over the same way. Does nothing before the writer gave up, and only
/// the first call hands anything over.
pub(crate) fn store_failed(task: &TaskEntry, writer: &RunWriter) {
    let Some(failure) = writer.failure() else {
        return;
    };
    tracing::error!(
        task = %task.id,
        fault = failure.fault.as_str(),
        "ending the task: {failure} (last error: {})",
        failure.reason
    );
    task.release_input();
    let text = crate::rpc::client_text(format!(
        "The run store did not take this task's changes within {} s ({}); the run was \
         stopped. Send the message again once the store is back.",
        failure.within.as_secs(),
        failure.fault
    ));
    let reply = agent_message(task, vec![Part::text(text)]);
    task.set_status(TaskState::Failed, Some(reply));
    let status = match task.state() {
        TaskState::Completed => RunStatus::Finished,
        TaskState::Canceled => RunStatus::Cancelled,
        _ => RunStatus::Failed,
    };
    writer.finish_with(task.whole_record(), status);
}

/// Adds `ask` to what the task waits for, pausing it on the first. When the task then waits
/// for answers alone, its loop is stopped there and the run given up as paused (true), before
/// the client learns of the pause, so an answer finds the pause in the store.
fn ask_for(
    task: &TaskEntry,
    ask: Ask,
    open: &HashSet<String>,
    handle: &RunHandle,
    writer: &RunWriter,
) -> bool {
    if !task.push_ask(ask.clone()) {
        return false;
    }
    let park = waits_for_answers_only(task, open);
    if park {
        handle.abort();
        task.release_input();
    }
    pause(task, &ask);
    if park {
        writer.finish(RunStatus::Paused);
    }
    park
}

/// Whether the task waits for answers (approvals, questions) and nothing else: every open
/// call waits for one.
fn waits_for_answers_only(task: &TaskEntry, open: &HashSet<String>) -> bool {
    let asks = task.asks();
    !asks.is_empty()
        && open.iter().all(|id| {
            asks.iter().any(|ask| match ask {
                Ask::Approval { call_id, .. } | Ask::Question { call_id, .. } => call_id == id,
            })
        })
}

/// Pauses the task on `ask`.
pub(crate) fn pause(task: &TaskEntry, ask: &Ask) {
    let message = agent_message(task, question_parts(ask));
    task.set_status(TaskState::InputRequired, Some(message));
}

/// After an answer: pauses on the next ask, or goes back to work.
pub(crate) fn resume(task: &TaskEntry) {
    if task.state() != TaskState::InputRequired {
        return;
    }
    match task.first_ask() {
        Some(next) => pause(task, &next),
        None => {
            task.set_status(TaskState::Working, None);
        }
    }
}

fn working(task: &TaskEntry, line: String) {
    if task.has_asks() {
        return;
    }
    let message = agent_message(task, vec![Part::text(line)]);
    task.set_status(TaskState::Working, Some(message));
}

fn answer(parts: Vec<Part>) -> Artifact {
    Artifact {
        artifact_id: ANSWER.to_owned(),
        name: Some(ANSWER.to_owned()),
        description: None,
        parts,
        metadata: None,
    }
}

/// A message from the agent in `task`.
pub(crate) fn agent_message(task: &TaskEntry, parts: Vec<Part>) -> Message {
    Message::agent(mux_http::unguessable(), &task.context_id, &task.id, parts)
}

/// The status message of a pause: the question in words, and the same as data.
fn question_parts(ask: &Ask) -> Vec<Part> {
    match ask {
        Ask::Approval {
            call_id,
            tool,
            input,
            reason,
        } if tool == mux_orchestrator::NETWORK_APPROVAL => {
            // A walled command's destination: the reason is the question.
            let question = reason.strip_prefix("allow ").unwrap_or(reason);
            vec![
                Part::text(format!(
                    "Allow {question} Reply `approve` (this time), `always` (for the rest of \
                     this conversation) or `deny` with a reason."
                )),
                Part::data(json!({"approval": {
                    "callId": call_id, "tool": tool, "input": input, "reason": reason,
                    "always": true,
                }})),
            ]
        }
        Ask::Approval {
            call_id,
            tool,
            input,
            reason,
        } => vec![
            Part::text(format!(
                "Approve `{tool}` {input}? ({reason}) Reply `approve` or `deny` with a reason."
            )),
            Part::data(json!({"approval": {
                "callId": call_id, "tool": tool, "input": input, "reason": reason,
            }})),
        ],
        Ask::Question { call_id, question } => vec![
            Part::text(question.clone()),
            Part::data(json!({"question": {"callId": call_id, "question": question}})),
        ],
    }
}
