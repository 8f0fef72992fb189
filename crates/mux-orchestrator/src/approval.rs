//! The loop's one approval path: hooks, then rules and mode, then the tool's own say (all
//! three in [`before_the_face`]), then the face, whose answer the permission layer takes.

use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use std::sync::Arc;
use std::time::Duration;

use mux_permission::{Answer, Permissions};
use mux_tool::approval::{ApprovalRequest, ToolSays, before_the_face};
use mux_tool::{
    ApprovalGate, ApprovalPolicy, BoxFuture, GateVerdict, PathFilter, Subject, ToolCall, Verdict,
};

use crate::dangling::may_rerun;
use crate::event::LoopEvent;
use crate::journal::Journal;
use crate::needs_approval::NeedsApprovalMap;
use crate::run_state::{RunShared, Waiting};
use crate::session::CallProgress;
use crate::unapproved::UnapprovedCall;

/// How long a tool may take to preview a call asked about.
const PREVIEW_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a call is denied when no face can answer.
pub(crate) const UNATTENDED_DENIAL: &str = "no one is available to approve this call";

/// Turns a question into an [`LoopEvent::ApprovalRequired`] and waits for the answer, a
/// timeout (deny) or cancellation (deny).
pub(crate) struct LoopAsker {
    pub(crate) run: Arc<RunShared>,
    pub(crate) timeout: Option<Duration>,
    /// Where a pending approval is recorded, so another process can answer it.
    pub(crate) journal: Journal,
    /// The run's tools, for the preview of a call asked about.
    pub(crate) tools: mux_tool::Registry,
}

impl LoopAsker {
    async fn ask_face(&self, call: &ToolCall, subject: &Subject, reason: &str) -> Answer {
        // Answered before it was asked: a run resumed with the answers to its pending calls.
        if let Some(answer) = self.run.take_answer(&call.id) {
            if !matches!(answer, Answer::Deny { .. }) {
                self.approved(call, matches!(answer, Answer::AllowAlways { .. }))
                    .await;
            }
            return answer;
        }
        self.ask_now(call, subject, reason, true).await
    }

    /// Asks the face about `call` now, and waits. A question asked in the middle of a
    /// running call (`recorded: false`, such as a walled command's network destination) is
    /// not journaled: the call itself is, and a run resumed elsewhere runs it again or
    /// reports its outcome unknown.
    pub(crate) async fn ask_now(
        &self,
        call: &ToolCall,
        subject: &Subject,
        reason: &str,
        recorded: bool,
    ) -> Answer {
        if self.run.attended && recorded {
            self.journal
                .record(&call.id, || CallProgress::AwaitingApproval {
                    reason: reason.to_owned(),
                })
                .await;
        }
        let preview = self.preview(call).await;
        let answer = self.run.expect_approval(&call.id);
        // Until answered, a drop (the walled command whose question this is ended first)
        // forgets the waiter and ends the wait.
        let mut abandoned = Abandoned {
            run: &self.run,
            call_id: &call.id,
            waiting: false,
            armed: true,
        };
        self.run
            .emit(LoopEvent::ApprovalRequired {
                call_id: call.id.clone(),
                name: call.name.clone(),
                input: call.input.clone(),
                subject: subject.clone(),
                reason: reason.to_owned(),
                preview,
            })
            .await;
        if !self.run.attended {
            self.run.forget(&call.id);
            tracing::warn!(
                tool = call.name.as_str(),
                call_id = call.id.as_str(),
                reason,
                "denied: no one is available to approve this call; allow it with a permission \
                 rule, or without a policy with OrchestratorConfig::approval(ApprovalPolicy::Never)"
            );
            self.run.record_unapproved(UnapprovedCall {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                reason: reason.to_owned(),
            });
            return Answer::Deny {
                reason: UNATTENDED_DENIAL.into(),
            };
        }
        abandoned.waiting = true;
        self.run.begin_wait(Waiting::Approval).await;
        let timeout = async {
            match self.timeout {
                Some(limit) => tokio::time::sleep(limit).await,
                None => std::future::pending().await,
            }
        };
        let answer = tokio::select! {
            answer = answer => answer.ok(),
            () = timeout => {
                let limit = self.timeout.unwrap_or_default();
                Some(Answer::deny(format!("no approval arrived within {limit:?}")))
            }
            () = self.run.cancel.cancelled() => {
                Some(Answer::deny("the run was cancelled"))
            }
        };
        abandoned.armed = false;
        self.run.forget(&call.id);
        self.run.end_wait(Waiting::Approval).await;
        match answer {
            Some(answer @ Answer::AllowOnce) => {
                self.approved(call, false).await;
                answer
            }
            Some(answer @ Answer::AllowAlways { .. }) => {
                self.approved(call, true).await;
                answer
            }
            Some(answer) => answer,
            None => Answer::deny("the approval channel closed"),
        }
    }

    /// The tool's preview of `call`, for a face that can show it; nothing when no one is
    /// listening, or when the tool takes longer than [`PREVIEW_TIMEOUT`] or panics.
    async fn preview(&self, call: &ToolCall) -> Option<mux_tool::Presentation> {
        if !self.run.attended || !self.run.emitter.is_listening() {
            return None;
        }
        let tool = self.tools.get(&call.name)?;
        let preview = AssertUnwindSafe(tool.preview(&call.input)).catch_unwind();
        match tokio::time::timeout(PREVIEW_TIMEOUT, preview).await {
            Ok(Ok(preview)) => preview,
            Ok(Err(_)) => {
                tracing::warn!(tool = call.name.as_str(), "the tool's preview panicked");
                None
            }
            Err(_) => {
                tracing::warn!(tool = call.name.as_str(), "the tool's preview timed out");
                None
            }
        }
    }

    async fn approved(&self, call: &ToolCall, always: bool) {
        self.run
            .emit(LoopEvent::ToolApproved {
                call_id: call.id.clone(),
                always,
            })
            .await;
    }
}

/// A wait for the face's answer, undone if it is dropped before the answer: the waiter is
/// forgotten and, once the run waited, the wait ends, so the run's state does not stay
/// "awaiting approval" for a question nobody waits for any more. A walled command's network
/// question is dropped so when the command ends first (its timeout, or its program giving
/// up).
struct Abandoned<'a> {
    run: &'a Arc<RunShared>,
    call_id: &'a str,
    /// Whether the run began waiting.
    waiting: bool,
    /// Cleared once the wait ended the ordinary way.
    armed: bool,
}

impl Drop for Abandoned<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        self.run.forget(self.call_id);
        if !self.waiting {
            return;
        }
        // Ending the wait emits the state change: on the runtime, as the loop would have.
        let run = Arc::clone(self.run);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { run.end_wait(Waiting::Approval).await });
        }
    }
}

/// The orchestrator's gate. It asks the permission policy for a verdict, asks the face
/// itself, and hands the face's answer back to the policy: nothing calls back up into it.
pub(crate) struct LoopGate {
    /// The permission policy ([`Permissions::unset`] when none was set); none only under
    /// `ApprovalPolicy::Always` or `Never`, which then decide alone.
    pub(crate) permissions: Option<Arc<Permissions>>,
    /// The face.
    pub(crate) asker: Arc<LoopAsker>,
    /// Without a policy (`Always` or `Never`): which calls need approval.
    pub(crate) approval: ApprovalPolicy,
    /// Per-tool predicates over the input: `true` asks (deny rules still hold), `false`
    /// leaves the call to the policy, or under no policy anyone set runs it.
    pub(crate) needs_approval: NeedsApprovalMap,
    /// Where an approved call is recorded as started, before it runs.
    pub(crate) journal: Journal,
}

impl LoopGate {
    /// The one approval path, in its documented order.
    async fn decide(&self, request: ApprovalRequest<'_>) -> GateVerdict {
        // 1. Hooks: a deny never gets here; an ask or an allow is marked on the request.
        // 2. Rules and mode, which read the tool's annotations where no rule matched.
        let policy = match &self.permissions {
            Some(permissions) => {
                permissions.check_call(request.spec, request.subject, &request.call.input)
            }
            None => self.approval.verdict(request.spec),
        };
        // 3. The tool's own say. A deny of step 2 is final, whatever steps 1 and 3 say.
        let verdict = before_the_face(&request, policy, self.tool_says(&request));
        if verdict.verdict != Verdict::Ask {
            return verdict;
        }
        // 4. The face; the policy takes the answer (and remembers "always").
        let answer = self
            .asker
            .ask_face(request.call, request.subject, &verdict.reason)
            .await;
        match &self.permissions {
            Some(permissions) => permissions.answered(&request, answer),
            None => answer.into_verdict(),
        }
    }

    /// What the tool's `needs_approval` predicate says. A predicate that panics asks, as a
    /// gate that panics denies: never run unasked. Its "no" runs the call only where no one
    /// set a policy.
    fn tool_says(&self, request: &ApprovalRequest<'_>) -> ToolSays {
        let Some(needs) = self.needs_approval.get(request.spec.name.as_str()) else {
            return ToolSays::Nothing;
        };
        let asks = std::panic::catch_unwind(AssertUnwindSafe(|| needs(&request.call.input)))
            .unwrap_or(true);
        let unset = self
            .permissions
            .as_deref()
            .is_none_or(Permissions::is_unset);
        match (asks, unset) {
            (true, _) => ToolSays::Ask("the tool's needs_approval predicate asked".into()),
            (false, true) => ToolSays::Allow,
            (false, false) => ToolSays::Nothing,
        }
    }
}

impl LoopGate {
    /// Records that an allowed call starts, before it runs. A call that must not run twice
    /// is not run when the store did not take the record: were this process to stop, no one
    /// could tell whether it ran.
    /// A call that may run twice needs no record: the next run on the session runs it again
    /// whether it started or not.
    async fn record_start(&self, request: &ApprovalRequest<'_>) -> GateVerdict {
        if may_rerun(Some(request.spec.as_ref())) {
            return GateVerdict::allow();
        }
        let Err(err) = self.journal.record_start(&request.call.id).await else {
            return GateVerdict::allow();
        };
        tracing::warn!(
            call_id = request.call.id.as_str(),
            "not running a call whose start the session store did not record: {err}"
        );
        GateVerdict::deny(format!(
            "not run: the session store did not record that this call starts ({err}), and it \
             is not safe to run twice; try again when the store is back"
        ))
    }
}

impl ApprovalGate for LoopGate {
    fn review<'a>(&'a self, request: ApprovalRequest<'a>) -> BoxFuture<'a, GateVerdict> {
        Box::pin(async move {
            // The event's fields are only copied when someone will read it.
            let ids = self
                .asker
                .run
                .emitter
                .is_listening()
                .then(|| (request.call.id.clone(), request.call.name.clone()));
            let mut verdict = self.decide(request).await;
            if verdict.is_allow() {
                verdict = self.record_start(&request).await;
            }
            let Some((call_id, name)) = ids else {
                return verdict;
            };
            let event = if verdict.is_allow() {
                LoopEvent::ToolExecuting { call_id, name }
            } else {
                LoopEvent::ToolDenied {
                    call_id,
                    reason: verdict.reason.clone(),
                }
            };
            self.asker.run.emit(event).await;
            verdict
        })
    }

    /// A search withholds the paths deny and ask rules of its family cover.
    fn path_filter(&self, request: ApprovalRequest<'_>) -> Option<Arc<dyn PathFilter>> {
        self.permissions.as_ref()?.path_filter(request.spec)
    }
}
