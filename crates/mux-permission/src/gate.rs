//! The approval gate the executor consults, and the asker it hands questions to.

use std::sync::{Arc, Mutex};

use mux_tool::approval::ApprovalRequest;
use mux_tool::{Approval, ApprovalGate, BoxFuture, PathFilter, Subject, ToolCall};

use crate::{Decision, Permissions, Remember, Verdict};

/// A call the policy wants someone to approve.
#[derive(Clone, Copy, Debug)]
pub struct Question<'a> {
    /// The call.
    pub call: &'a ToolCall,
    /// What it touches.
    pub subject: &'a Subject,
    /// Why the policy asks.
    pub decision: &'a Decision,
}

/// A person's answer to a call that needs approval: the answer to a [`Question`] here, and
/// what a face sends back into the loop (mux-orchestrator's `LoopInput::ToolApproval`).
/// The words match the policy's [`Verdict`] (allow / deny) and ACP's permission options.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Answer {
    /// Run this call only.
    AllowOnce,
    /// Run it, and add a rule so that calls like it run without asking.
    AllowAlways {
        /// Where and how to remember the rule.
        remember: Remember,
    },
    /// Refuse it; the reason reaches the model.
    Deny {
        /// Why.
        reason: String,
    },
}

impl Answer {
    /// A denial with a reason.
    pub fn deny(reason: impl Into<String>) -> Self {
        Self::Deny {
            reason: reason.into(),
        }
    }
}

/// Answers questions: the layer above supplies it (the orchestrator asks a human).
pub trait Asker: Send + Sync + 'static {
    /// Answers one question. May wait; the executor stops waiting when the call is cancelled.
    fn ask<'a>(&'a self, question: Question<'a>) -> BoxFuture<'a, Answer>;
}

/// An answer the gate received, kept for the record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedAnswer {
    /// The call id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The answer.
    pub answer: Answer,
}

/// Plugs [`Permissions`] into mux-tool's executor.
///
/// Allow runs the call, deny refuses it with the reason, and ask goes to the [`Asker`]; its
/// answer is recorded, and "always" adds a rule. A call a pre-hook approved in advance skips
/// asking, but deny rules still hold. With no asker, ask refuses.
pub struct PermissionGate {
    permissions: Permissions,
    asker: Option<Arc<dyn Asker>>,
    answers: Mutex<Vec<RecordedAnswer>>,
}

impl std::fmt::Debug for PermissionGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PermissionGate")
            .field("permissions", &self.permissions)
            .field("asker", &self.asker.is_some())
            .finish_non_exhaustive()
    }
}

impl PermissionGate {
    /// A gate over `permissions` that asks `asker`.
    pub fn new(permissions: Permissions, asker: Arc<dyn Asker>) -> Self {
        Self {
            permissions,
            asker: Some(asker),
            answers: Mutex::new(Vec::new()),
        }
    }

    /// A gate with no one to ask: ask refuses.
    pub fn without_asker(permissions: Permissions) -> Self {
        Self {
            permissions,
            asker: None,
            answers: Mutex::new(Vec::new()),
        }
    }

    /// The policy.
    pub fn permissions(&self) -> &Permissions {
        &self.permissions
    }

    /// Every answer received so far, oldest first.
    pub fn answers(&self) -> Vec<RecordedAnswer> {
        self.answers
            .lock()
            .map(|a| a.clone())
            .unwrap_or_else(|poisoned| poisoned.into_inner().clone())
    }

    async fn decide(&self, request: ApprovalRequest<'_>) -> Approval {
        let decision = self.permissions.check(request.spec, request.subject);
        match decision.verdict {
            Verdict::Allow => Approval::Allow,
            Verdict::Deny => Approval::deny(decision.reason),
            Verdict::Ask => {
                if let Some(hook) = request.pre_approved_by {
                    tracing::info!(
                        target: "mux_permission",
                        tool = request.spec.name.as_str(),
                        hook,
                        "pre-approved by a hook; not asking"
                    );
                    return Approval::Allow;
                }
                let Some(asker) = &self.asker else {
                    return Approval::deny(format!("no one to ask: {}", decision.reason));
                };
                let answer = asker
                    .ask(Question {
                        call: request.call,
                        subject: request.subject,
                        decision: &decision,
                    })
                    .await;
                self.record(request, &answer);
                match answer {
                    Answer::AllowOnce => Approval::Allow,
                    Answer::AllowAlways { remember: choice } => {
                        if let Err(err) =
                            self.permissions
                                .remember(request.spec, request.subject, &choice)
                        {
                            tracing::warn!(
                                target: "mux_permission",
                                tool = request.spec.name.as_str(),
                                error = %err,
                                "could not remember an always-allow answer; allowing once"
                            );
                        }
                        Approval::Allow
                    }
                    Answer::Deny { reason } => Approval::deny(reason),
                }
            }
        }
    }

    fn record(&self, request: ApprovalRequest<'_>, answer: &Answer) {
        tracing::info!(
            target: "mux_permission",
            tool = request.spec.name.as_str(),
            call_id = request.call.id.as_str(),
            answer = ?answer,
            "permission answer"
        );
        let entry = RecordedAnswer {
            call_id: request.call.id.clone(),
            tool: request.spec.name.to_string(),
            answer: answer.clone(),
        };
        match self.answers.lock() {
            Ok(mut answers) => answers.push(entry),
            Err(poisoned) => poisoned.into_inner().push(entry),
        }
    }
}

impl ApprovalGate for PermissionGate {
    fn review<'a>(&'a self, request: ApprovalRequest<'a>) -> BoxFuture<'a, Approval> {
        Box::pin(self.decide(request))
    }

    /// A search withholds the paths deny and ask rules of its family cover.
    fn path_filter(&self, request: ApprovalRequest<'_>) -> Option<Arc<dyn PathFilter>> {
        self.permissions.path_filter(request.spec)
    }
}

/// An asker from an async closure over owned copies of the question's parts.
///
/// ```
/// use mux_permission::{Answer, asker_fn};
///
/// let asker = asker_fn(|_call, _subject, decision| async move {
///     if decision.reason.contains("git") { Answer::AllowOnce } else {
///         Answer::Deny { reason: "not now".into() }
///     }
/// });
/// # let _ = asker;
/// ```
pub fn asker_fn<F, Fut>(f: F) -> Arc<dyn Asker>
where
    F: Fn(ToolCall, Subject, Decision) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Answer> + Send + 'static,
{
    Arc::new(FnAsker { f })
}

struct FnAsker<F> {
    f: F,
}

impl<F, Fut> Asker for FnAsker<F>
where
    F: Fn(ToolCall, Subject, Decision) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Answer> + Send + 'static,
{
    fn ask<'a>(&'a self, question: Question<'a>) -> BoxFuture<'a, Answer> {
        Box::pin((self.f)(
            question.call.clone(),
            question.subject.clone(),
            question.decision.clone(),
        ))
    }
}
