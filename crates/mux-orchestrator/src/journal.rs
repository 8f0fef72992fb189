//! The run's journal: how far each tool call of the current turn got, written to the session
//! as it happens ([`HistoryRecord::Call`]), so another process can continue a run that paused
//! for an approval or stopped mid-turn. The turn's results message supersedes it.
//!
//! A call to a tool that may run twice (read-only or idempotent) costs no write of its own:
//! the next run on the session would run it again whether it started or not, so its start is
//! not recorded, and its output goes with the session's next write (the turn's results, or a
//! pause) rather than in one of its own.

use mux_tool::hooks::{HookError, PostHook, PostHookAction};
use mux_tool::{BoxFuture, CallResult, ToolCall};

use crate::LoopError;
use crate::core::{Core, OnFailure};
use crate::dangling::may_rerun;
use crate::session::{CallProgress, HistoryRecord};

/// Writes call progress to the session store; does nothing without one.
#[derive(Clone)]
pub(crate) struct Journal(Option<Core>);

impl Journal {
    pub(crate) fn of(core: &Core) -> Self {
        Self(core.services.store.is_some().then(|| core.clone()))
    }

    /// Records that `call_id` got as far as `progress` (built only when a store keeps it).
    /// An unreachable store holds the record (see [`Core::write`]); it never stops the call.
    pub(crate) async fn record(&self, call_id: &str, progress: impl FnOnce() -> CallProgress) {
        if let Err(err) = self.write(call_id, progress, OnFailure::Hold).await {
            tracing::warn!(call_id, "recording a call's progress failed: {err}");
        }
    }

    /// Records that `call_id` starts, in the store before it runs: `Err` when the store did
    /// not take it (the record is still held).
    pub(crate) async fn record_start(&self, call_id: &str) -> Result<(), LoopError> {
        self.write(call_id, || CallProgress::Started, OnFailure::Fail)
            .await
    }

    /// Writes what the run holds (its messages written behind the loop), before a person is
    /// asked: the question is then in the store for whoever answers it, in any process.
    pub(crate) async fn settle(&self) {
        let Some(core) = &self.0 else {
            return;
        };
        if let Err(err) = core.write_held(OnFailure::Hold).await {
            tracing::warn!("writing the run's records before a question failed: {err}");
        }
    }

    async fn write(
        &self,
        call_id: &str,
        progress: impl FnOnce() -> CallProgress,
        on_failure: OnFailure,
    ) -> Result<(), LoopError> {
        let Some(core) = &self.0 else {
            return Ok(());
        };
        let record = HistoryRecord::Call {
            call_id: call_id.to_owned(),
            progress: progress(),
        };
        core.write(&[record], on_failure).await
    }
}

/// The journal as the executor's last post-hook: each call's final output, as it returns.
impl PostHook for Journal {
    fn name(&self) -> &str {
        "journal"
    }

    fn after<'a>(
        &'a self,
        call: &'a ToolCall,
        result: &'a CallResult,
    ) -> BoxFuture<'a, Result<PostHookAction, HookError>> {
        Box::pin(async move {
            let Some(core) = &self.0 else {
                return Ok(PostHookAction::Keep);
            };
            let progress = || CallProgress::Finished {
                output: match result {
                    Ok(output) => output.clone(),
                    Err(err) => err.to_output(),
                },
            };
            let spec = core.services.tools.get(&call.name);
            if may_rerun(spec.as_ref().map(|tool| tool.spec())) {
                core.defer(&[HistoryRecord::Call {
                    call_id: call.id.clone(),
                    progress: progress(),
                }]);
            } else {
                self.record(&call.id, progress).await;
            }
            Ok(PostHookAction::Keep)
        })
    }
}

/// A tool call that waits for a person's approval in a stored session: its run paused on it,
/// here or in a process that has stopped since. See
/// [`Orchestrator::pending_approvals`](crate::Orchestrator::pending_approvals).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PendingApproval {
    /// The call id: answer it under this id.
    pub call_id: String,
    /// The tool.
    pub name: String,
    /// The arguments.
    pub input: serde_json::Value,
    /// Why the policy asks.
    pub reason: String,
}

/// An `ask_user` question that waits for the person's answer in a stored session: its run
/// paused on it, here or in a process that has stopped since. See
/// [`Orchestrator::pending_questions`](crate::Orchestrator::pending_questions).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PendingQuestion {
    /// The call id: the resumed run asks again under this id.
    pub call_id: String,
    /// The question.
    pub question: String,
}
