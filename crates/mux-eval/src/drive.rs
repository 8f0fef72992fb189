//! Drives one attempt of a case: sends its messages to the agent, answers its approval
//! questions from the case's script, keeps the attempt within its budget and timeout, and
//! records what happened.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use mux_orchestrator::{Agent, Answer, LoopEvent, LoopInput, Run, RunSummary};

use crate::case::{Case, CaseBudget};
use crate::record::{ApprovalAsked, Entry, Failure, RunRecord, ToolCall};

/// How long a cancelled run may take to wind down before its task is aborted.
const WIND_DOWN: Duration = Duration::from_secs(5);

/// What `ask_user` is told: an eval has no one to answer.
const NO_USER: &str = "No one can answer questions during this eval; go on with what you have.";

/// Runs every message of `case` on `agent` (a fresh conversation) and records the attempt.
pub(crate) async fn drive(agent: &Agent, case: &Case, budget: &CaseBudget) -> RunRecord {
    let started = Instant::now();
    let deadline = budget.timeout().map(|t| tokio::time::Instant::now() + t);
    let mut record = RunRecord::default();
    let mut spent = Spent::default();
    for message in case.input.messages() {
        record.transcript.push(Entry::User {
            text: message.to_owned(),
        });
        let run = match agent.stream(message) {
            Ok(run) => run,
            Err(err) => {
                fail(&mut record, err.kind(), err.to_string());
                break;
            }
        };
        let outcome = follow(run, case, budget, deadline, &mut record, &mut spent).await;
        if let Some(summary) = outcome {
            finish(&mut record, summary);
        }
        if record.failure.is_some() {
            break;
        }
    }
    record.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    record
}

/// Records a failure (the first one stays).
pub(crate) fn fail(record: &mut RunRecord, kind: &str, message: String) {
    record.transcript.push(Entry::Error {
        kind: kind.to_owned(),
        message: message.clone(),
    });
    if record.failure.is_none() {
        record.failure = Some(Failure {
            kind: kind.to_owned(),
            message,
        });
    }
}

#[derive(Default)]
struct Spent {
    model_calls: u32,
    tool_calls: u32,
    tokens: u64,
}

/// Reads one run's events to its end; `None` when the run failed or was stopped (the
/// failure is in the record).
async fn follow(
    run: Run,
    case: &Case,
    budget: &CaseBudget,
    deadline: Option<tokio::time::Instant>,
    record: &mut RunRecord,
    spent: &mut Spent,
) -> Option<RunSummary> {
    let Run {
        mut events,
        input,
        handle,
    } = run;
    let mut turn_text = String::new();
    let mut names: HashMap<String, String> = HashMap::new();
    let stopped: Option<(&'static str, String)> = loop {
        let next = match deadline {
            Some(at) => match tokio::time::timeout_at(at, events.recv()).await {
                Ok(next) => next,
                Err(_) => {
                    let secs = budget.timeout_secs.unwrap_or_default();
                    break Some(("timeout", format!("the case took longer than {secs} s")));
                }
            },
            None => events.recv().await,
        };
        let Some(event) = next else { break None };
        match &event {
            LoopEvent::TextDelta { text } => turn_text.push_str(text),
            LoopEvent::ToolCallArguments {
                call_id,
                name,
                input,
            } => {
                names.insert(call_id.clone(), name.clone());
                record.transcript.push(Entry::ToolCall {
                    name: name.clone(),
                    input: input.clone(),
                });
            }
            LoopEvent::ApprovalRequired {
                call_id,
                name,
                input: arguments,
                ..
            } => {
                let allowed = case.approvals.allows(name);
                record.approvals.push(ApprovalAsked {
                    call_id: call_id.clone(),
                    tool: name.clone(),
                    input: arguments.clone(),
                    allowed,
                });
                record.transcript.push(Entry::Approval {
                    tool: name.clone(),
                    allowed,
                });
                let answer = if allowed {
                    Answer::AllowOnce
                } else {
                    Answer::Deny {
                        reason: "denied by the eval case's approval script".into(),
                    }
                };
                let reply = LoopInput::ToolApproval {
                    call_id: call_id.clone(),
                    answer,
                };
                input.send(reply).await;
            }
            LoopEvent::AwaitingInput { call_id, .. } => {
                let reply = LoopInput::UserResponse {
                    call_id: call_id.clone(),
                    text: NO_USER.into(),
                };
                input.send(reply).await;
            }
            LoopEvent::ToolExecuting { .. } => spent.tool_calls += 1,
            LoopEvent::ToolResult {
                call_id,
                name,
                output,
            } => {
                let name = names.get(call_id).cloned().unwrap_or_else(|| name.clone());
                record.transcript.push(Entry::ToolResult {
                    name,
                    output: output.to_text(),
                    is_error: output.is_error,
                });
            }
            LoopEvent::Usage { total, .. } => {
                spent.model_calls += 1;
                spent.tokens = total.input_tokens
                    + total.cache_read_tokens
                    + total.cache_write_tokens
                    + total.output_tokens;
            }
            LoopEvent::TurnComplete { .. } => {
                if !turn_text.trim().is_empty() {
                    record.transcript.push(Entry::Assistant {
                        text: std::mem::take(&mut turn_text),
                    });
                }
                turn_text.clear();
            }
            _ => {}
        }
        record.events.push(event);
        if let Some(over) = over_budget(budget, spent) {
            break Some(("budget", over));
        }
    };
    if !turn_text.trim().is_empty() {
        record.transcript.push(Entry::Assistant { text: turn_text });
    }
    if let Some((kind, message)) = stopped {
        handle.cancel();
        // Dropping the receiver lets a loop blocked on a full channel see the cancel.
        drop(events);
        let until = tokio::time::Instant::now() + WIND_DOWN;
        while !handle.is_finished() && tokio::time::Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if !handle.is_finished() {
            handle.abort();
        }
        fail(record, kind, message);
        return None;
    }
    match handle.wait().await {
        Ok(summary) => Some(summary),
        Err(err) => {
            fail(record, err.kind(), err.to_string());
            None
        }
    }
}

fn over_budget(budget: &CaseBudget, spent: &Spent) -> Option<String> {
    if let Some(max) = budget
        .max_model_calls
        .filter(|max| spent.model_calls > *max)
    {
        return Some(format!(
            "{} model calls, over the budget of {max}",
            spent.model_calls
        ));
    }
    if let Some(max) = budget.max_tool_calls.filter(|max| spent.tool_calls > *max) {
        return Some(format!(
            "{} tool calls, over the budget of {max}",
            spent.tool_calls
        ));
    }
    if let Some(max) = budget.max_tokens.filter(|max| spent.tokens > *max) {
        return Some(format!("{} tokens, over the budget of {max}", spent.tokens));
    }
    None
}

/// Adds a finished run's summary to the record.
fn finish(record: &mut RunRecord, summary: RunSummary) {
    record.output = summary.text;
    record.model_calls += summary.iterations;
    let usage = &mut record.usage;
    usage.input_tokens += summary.usage.input_tokens;
    usage.output_tokens += summary.usage.output_tokens;
    usage.cache_read_tokens += summary.usage.cache_read_tokens;
    usage.cache_write_tokens += summary.usage.cache_write_tokens;
    usage.reasoning_tokens += summary.usage.reasoning_tokens;
    record
        .tool_calls
        .extend(summary.tool_calls.into_iter().map(|call| ToolCall {
            output: call.output.to_text(),
            is_error: call.output.is_error,
            id: call.id,
            name: call.name,
            input: call.input,
        }));
    if let Some(limit) = summary.limit {
        let message = serde_json::to_string(&limit).unwrap_or_else(|_| format!("{limit:?}"));
        fail(
            record,
            "limit",
            format!("the run reached a limit: {message}"),
        );
    }
    if !summary.unapproved.is_empty() {
        let names: Vec<String> = summary
            .unapproved
            .iter()
            .map(|c| format!("{} ({})", c.tool, c.reason))
            .collect();
        fail(
            record,
            "unapproved",
            format!("calls denied for want of an approver: {}", names.join(", ")),
        );
    }
}
