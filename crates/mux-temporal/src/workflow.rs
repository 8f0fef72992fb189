//! The loop as a Temporal workflow: deterministic, it only keeps the conversation and decides
//! what comes next; every model call, review and tool call is an activity, an approval is the
//! `approve` update, cancel is workflow cancellation, and `history` / `pending` are queries.

// The SDK's macros add an undocumented constant per method (its marker, in an impl of
// their own); every item written here is documented.
#![allow(missing_docs)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use mux_llm::{ContentBlock, Message, Role, Usage};
use mux_permission::Answer;
use mux_tool::{ToolCall, ToolOutput};
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::{
    ActivityExecutionError, ActivityOptions, SyncWorkflowContext, WorkflowContext,
    WorkflowContextView, WorkflowResult, WorkflowTermination,
};

use crate::activities::AgentActivities;
use crate::effect;
use crate::wire::{
    Approval, ModelTurn, PendingApproval, Review, ReviewInput, RunInput, RunOutcome, RunStatus,
    ToolCallInput,
};

/// The name the workflow type is registered under.
pub const WORKFLOW_TYPE: &str = "mux.agent";

/// How many times a tool call's activity is tried. Its first attempt's failure is a worker
/// that died or a call that outlived its timeout; later attempts only settle the call
/// (outcome unknown) or re-run one that may run twice.
const TOOL_ATTEMPTS: u32 = 5;

/// An agent's run as a workflow. Started by [`TemporalAgent`](crate::TemporalAgent), run by
/// an [`AgentWorker`](crate::AgentWorker).
#[workflow]
pub struct AgentWorkflow {
    input: RunInput,
    messages: Vec<Message>,
    pending: Vec<PendingApproval>,
    answers: BTreeMap<String, Answer>,
    allowed: BTreeSet<String>,
}

#[workflow_methods]
impl AgentWorkflow {
    /// The run's state before its first turn.
    #[init]
    pub fn new(_ctx: &WorkflowContextView, input: RunInput) -> Self {
        let mut messages = input.history.clone();
        messages.push(Message::user(input.prompt.clone()));
        Self {
            input,
            messages,
            pending: Vec::new(),
            answers: BTreeMap::new(),
            allowed: BTreeSet::new(),
        }
    }

    /// The loop: a model turn, then its calls (reviewed, asked, run), until the model stops
    /// calling tools or the turns run out.
    #[run(name = "mux.agent")]
    pub async fn run(ctx: &mut WorkflowContext<Self>) -> WorkflowResult<RunOutcome> {
        let options = ctx.state(|s| s.input.options.clone());
        let workflow_id = ctx.workflow_id().to_owned();
        let mut usage = Usage::default();
        for turn in 1..=options.max_turns {
            let messages = ctx.state(|s| s.messages.clone());
            let model = ctx
                .execute_activity(
                    AgentActivities::model,
                    messages,
                    ActivityOptions::with_start_to_close_timeout(Duration::from_millis(
                        options.model_timeout_ms,
                    ))
                    .retry_policy(options.model_retry.to_temporal())
                    .build(),
                )
                .await;
            let ModelTurn {
                message,
                calls,
                usage: spent,
            } = match model {
                Ok(turn) => turn,
                Err(err) => return Err(stopped(err)),
            };
            add_usage(&mut usage, &spent);
            ctx.state_mut(|s| s.messages.push(message));
            if calls.is_empty() {
                return Ok(ctx.state(|s| outcome(s, RunStatus::Complete, usage, turn)));
            }
            let results = match Self::turn(ctx, &workflow_id, turn, calls.clone()).await {
                Ok(results) => results,
                Err(Stop::Cancelled { done, running }) => {
                    settle(ctx, &calls, &done, running.as_deref());
                    return Err(WorkflowTermination::cancelled());
                }
                Err(Stop::Failed(termination)) => return Err(termination),
            };
            let blocks = calls
                .iter()
                .zip(&results)
                .map(|(call, output)| mux_orchestrator::tool_result_block(&call.id, output))
                .collect();
            ctx.state_mut(|s| s.messages.push(Message::new(Role::User, blocks)));
        }
        Ok(ctx.state(|s| outcome(s, RunStatus::LimitReached, usage, options.max_turns)))
    }

    /// Answers a pending call (see the `pending` query). Refused, with the reason, for a call
    /// that is not pending.
    #[update_validator(approve)]
    fn validate_approve(
        &self,
        _ctx: &WorkflowContextView,
        approval: &Approval,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        if !self.pending.iter().any(|p| p.call.id == approval.call_id) {
            return Err(format!(
                "approve: no call `{}` is waiting for an answer (pending: {:?})",
                approval.call_id,
                self.pending.iter().map(|p| &p.call.id).collect::<Vec<_>>()
            )
            .into());
        }
        if self.answers.contains_key(&approval.call_id) {
            return Err(
                format!("approve: call `{}` was answered already", approval.call_id).into(),
            );
        }
        Ok(())
    }

    /// Records a person's answer to a pending call; the parked run goes on.
    #[update]
    pub fn approve(&mut self, _ctx: &mut SyncWorkflowContext<Self>, approval: Approval) {
        self.answers.insert(approval.call_id, approval.answer);
    }

    /// The conversation so far: the prompt, every model turn and every tool result.
    #[query]
    pub fn history(&self, _ctx: &WorkflowContextView) -> Vec<Message> {
        self.messages.clone()
    }

    /// The calls waiting for a person's answer, in call order.
    #[query]
    pub fn pending(&self, _ctx: &WorkflowContextView) -> Vec<PendingApproval> {
        self.pending
            .iter()
            .filter(|p| !self.answers.contains_key(&p.call.id))
            .cloned()
            .collect()
    }
}

/// Why a turn's calls stopped before all returned.
enum Stop {
    /// The run was cancelled: the outputs of the calls that returned, by call id, and the
    /// call that was running, if one was.
    Cancelled {
        done: BTreeMap<String, ToolOutput>,
        running: Option<String>,
    },
    /// An activity failed for good.
    Failed(WorkflowTermination),
}

impl AgentWorkflow {
    /// One turn's calls: reviewed, asked (the run parks until every asked call is answered),
    /// then run in call order.
    async fn turn(
        ctx: &mut WorkflowContext<Self>,
        workflow_id: &str,
        turn: u32,
        calls: Vec<ToolCall>,
    ) -> Result<Vec<ToolOutput>, Stop> {
        let options = ctx.state(|s| s.input.options.clone());
        let allowed = ctx.state(|s| s.allowed.clone());
        let reviews = ctx
            .execute_activity(
                AgentActivities::review,
                ReviewInput {
                    calls: calls.clone(),
                    allowed,
                },
                ActivityOptions::with_start_to_close_timeout(Duration::from_millis(
                    options.tool_timeout_ms,
                ))
                .build(),
            )
            .await
            .map_err(stop)?;
        let asked: Vec<PendingApproval> = calls
            .iter()
            .zip(&reviews)
            .filter_map(|(call, review)| match review {
                Review::Ask { reason } => Some(PendingApproval {
                    call: call.clone(),
                    reason: reason.clone(),
                }),
                _ => None,
            })
            .collect();
        if !asked.is_empty() {
            let ids: Vec<String> = asked.iter().map(|p| p.call.id.clone()).collect();
            ctx.state_mut(|s| s.pending = asked);
            let answered = |s: &Self| ids.iter().all(|id| s.answers.contains_key(id));
            let waited = match options.approval_timeout_ms {
                Some(ms) => {
                    temporalio_sdk::workflows::select! {
                        done = ctx.wait_condition(answered) => done.map(|()| true),
                        _ = ctx.timer(Duration::from_millis(ms)) => Ok(false),
                    }
                }
                None => ctx.wait_condition(answered).await.map(|()| true),
            };
            if waited.is_err() {
                ctx.state_mut(|s| s.pending.clear());
                return Err(Stop::Cancelled {
                    done: BTreeMap::new(),
                    running: None,
                });
            }
        }
        // Taken, so that a later turn's call with a reused id is asked again.
        let answers = ctx.state_mut(|s| {
            s.pending.clear();
            std::mem::take(&mut s.answers)
        });
        let mut done = BTreeMap::new();
        let mut outputs = Vec::with_capacity(calls.len());
        for (call, review) in calls.iter().zip(reviews) {
            let run = match review {
                Review::Allow => Ok(()),
                Review::Deny { reason } => Err(ToolOutput::error(format!(
                    "denied: the `{}` call was refused: {reason}",
                    call.name
                ))),
                Review::Ask { .. } => match answers.get(&call.id) {
                    Some(Answer::AllowOnce) => Ok(()),
                    Some(Answer::AllowAlways { .. }) => {
                        ctx.state_mut(|s| s.allowed.insert(call.name.clone()));
                        Ok(())
                    }
                    Some(Answer::Deny { reason }) => Err(ToolOutput::error(format!(
                        "denied: the user refused this `{}` call: {reason}",
                        call.name
                    ))),
                    // Unanswered in time (or an answer this release does not know).
                    _ => Err(ToolOutput::error(format!(
                        "denied: no one approved this `{}` call in time",
                        call.name
                    ))),
                },
            };
            let output = match run {
                Err(output) => output,
                Ok(()) => {
                    let input = ToolCallInput {
                        call: call.clone(),
                        effect_key: effect::key(workflow_id, turn, &call.id),
                    };
                    let result = ctx
                        .execute_activity(
                            AgentActivities::call_tool,
                            input,
                            ActivityOptions::with_start_to_close_timeout(Duration::from_millis(
                                options.tool_timeout_ms,
                            ))
                            .heartbeat_timeout(Duration::from_millis(options.heartbeat_timeout_ms))
                            .retry_policy(
                                temporalio_common::RetryPolicy::builder()
                                    .initial_interval(Duration::from_millis(100))
                                    .maximum_interval(Duration::from_secs(2))
                                    .maximum_attempts(TOOL_ATTEMPTS)
                                    .build(),
                            )
                            .build(),
                        )
                        .await;
                    match result {
                        Ok(output) => output,
                        Err(ActivityExecutionError::Cancelled(_)) => {
                            return Err(Stop::Cancelled {
                                done,
                                running: Some(call.id.clone()),
                            });
                        }
                        // Every attempt failed: it may have run.
                        Err(_) => mux_orchestrator::outcome_unknown(call),
                    }
                }
            };
            done.insert(call.id.clone(), output.clone());
            outputs.push(output);
        }
        Ok(outputs)
    }
}

/// A model or review activity that did not return: cancelled, or failed for good.
fn stopped(err: ActivityExecutionError) -> WorkflowTermination {
    match err {
        ActivityExecutionError::Cancelled(_) => WorkflowTermination::cancelled(),
        other => other.into(),
    }
}

fn stop(err: ActivityExecutionError) -> Stop {
    match err {
        ActivityExecutionError::Cancelled(_) => Stop::Cancelled {
            done: BTreeMap::new(),
            running: None,
        },
        other => Stop::Failed(other.into()),
    }
}

/// Gives every call of a cancelled turn its result, so the history a query returns has no
/// call without one: what returned, "outcome unknown" for the call that was running, "not
/// run" for the rest.
fn settle(
    ctx: &mut WorkflowContext<AgentWorkflow>,
    calls: &[ToolCall],
    done: &BTreeMap<String, ToolOutput>,
    running: Option<&str>,
) {
    let blocks = effect::settled(calls, done, running)
        .iter()
        .map(|(call, output)| mux_orchestrator::tool_result_block(&call.id, output))
        .collect();
    ctx.state_mut(|s| {
        s.pending.clear();
        s.messages.push(Message::new(Role::User, blocks));
    });
}

fn add_usage(total: &mut Usage, turn: &Usage) {
    total.input_tokens += turn.input_tokens;
    total.output_tokens += turn.output_tokens;
    total.cache_read_tokens += turn.cache_read_tokens;
    total.cache_write_tokens += turn.cache_write_tokens;
    total.reasoning_tokens += turn.reasoning_tokens;
}

fn outcome(state: &AgentWorkflow, status: RunStatus, usage: Usage, turns: u32) -> RunOutcome {
    let text = state
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant)
        .map(|m| {
            m.content
                .iter()
                .filter_map(|block| match block {
                    ContentBlock::Text { text, .. } => Some(text.as_str()),
                    _ => None,
                })
                .collect::<String>()
        })
        .unwrap_or_default();
    RunOutcome {
        status,
        text,
        messages: state.messages.clone(),
        usage,
        turns,
    }
}
