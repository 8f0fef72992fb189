//! The approval gate the executor consults, and the asker it hands questions to.

use std::sync::{Arc, Mutex};

use mux_tool::approval::ApprovalRequest;
use mux_tool::{ApprovalGate, BoxFuture, GateVerdict, PathFilter, Subject, ToolCall};

use crate::{Permissions, PolicyVerdict, Remember, Scope, Verdict};

/// A call the policy wants someone to approve.
#[derive(Clone, Copy, Debug)]
pub struct Question<'a> {
    /// The call.
    pub call: &'a ToolCall,
    /// What it touches.
    pub subject: &'a Subject,
    /// Why the policy asks.
    pub verdict: &'a PolicyVerdict,
}

/// A person's answer to a call that needs approval: the answer to a [`Question`] here, and
/// what a face sends back into the loop (mux-orchestrator's `LoopInput::ToolApproval`).
/// The words match the policy's [`Verdict`] (allow / deny) and ACP's permission options.
///
/// Serialises as `{"answer":"allow_once"}`, `{"answer":"allow_always","remember":…}` or
/// `{"answer":"deny","reason":…}`; the tag `"decision"` of earlier releases is still read.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case", try_from = "AnswerWire")]
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
    /// Allowed, and calls like it for the rest of the session (remembered in memory).
    pub fn allow_for_session() -> Self {
        Self::AllowAlways {
            remember: Remember::exact(Scope::Session),
        }
    }

    /// A denial with a reason.
    pub fn deny(reason: impl Into<String>) -> Self {
        Self::Deny {
            reason: reason.into(),
        }
    }
}

/// What [`Answer`] reads: today's tag `answer`, or the tag `decision` of earlier releases.
#[derive(serde::Deserialize)]
struct AnswerWire {
    answer: Option<AnswerKind>,
    decision: Option<AnswerKind>,
    remember: Option<Remember>,
    reason: Option<String>,
}

#[derive(Clone, Copy, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
enum AnswerKind {
    AllowOnce,
    AllowAlways,
    Deny,
}

impl TryFrom<AnswerWire> for Answer {
    type Error = String;

    fn try_from(wire: AnswerWire) -> Result<Self, String> {
        let kind = match (wire.answer, wire.decision) {
            (Some(kind), None) | (None, Some(kind)) => kind,
            (Some(_), Some(_)) => {
                return Err("an answer has both `answer` and `decision`".to_owned());
            }
            (None, None) => return Err("an answer needs its `answer` tag".to_owned()),
        };
        match kind {
            AnswerKind::AllowOnce => Ok(Answer::AllowOnce),
            AnswerKind::AllowAlways => wire
                .remember
                .map(|remember| Answer::AllowAlways { remember })
                .ok_or_else(|| "an `allow_always` answer needs `remember`".to_owned()),
            AnswerKind::Deny => wire
                .reason
                .map(|reason| Answer::Deny { reason })
                .ok_or_else(|| "a `deny` answer needs a `reason`".to_owned()),
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

    async fn decide(&self, request: ApprovalRequest<'_>) -> GateVerdict {
        let mut verdict =
            self.permissions
                .check_call(request.spec, request.subject, &request.call.input);
        // A hook that asks turns an allow into a question; a deny still holds.
        if let (Some(hook), Verdict::Allow | Verdict::Ask) =
            (request.ask_requested_by, verdict.verdict)
        {
            verdict.verdict = Verdict::Ask;
            verdict.reason = format!("the pre-tool-use hook `{hook}` asked for approval");
        }
        match verdict.verdict {
            Verdict::Allow => GateVerdict::allow(),
            Verdict::Deny => GateVerdict::deny(verdict.reason),
            Verdict::Ask => {
                if let Some(hook) = request
                    .pre_approved_by
                    .filter(|_| request.ask_requested_by.is_none())
                {
                    tracing::info!(
                        target: "mux_permission",
                        tool = request.spec.name.as_str(),
                        hook,
                        "pre-approved by a hook; not asking"
                    );
                    return GateVerdict::allow();
                }
                let Some(asker) = &self.asker else {
                    return GateVerdict::ask(format!("no one to ask: {}", verdict.reason));
                };
                let answer = asker
                    .ask(Question {
                        call: request.call,
                        subject: request.subject,
                        verdict: &verdict,
                    })
                    .await;
                self.answered(request, answer)
            }
        }
    }

    /// Takes a person's answer to `request`: records it, and for "always" adds the rule its
    /// [`Remember`] describes, so that calls like it run unasked. The one place an "always"
    /// answer is remembered: the orchestrator hands the answers its face gives here too.
    ///
    /// Returns what the executor does: allow for either "allow" answer (also when the rule
    /// could not be added; the failure is logged), deny with the person's reason otherwise.
    pub fn answered(&self, request: ApprovalRequest<'_>, answer: Answer) -> GateVerdict {
        self.record(request, &answer);
        match answer {
            Answer::AllowOnce => GateVerdict::allow(),
            Answer::AllowAlways { remember: choice } => {
                if let Err(err) = self
                    .permissions
                    .remember(request.spec, request.subject, &choice)
                {
                    tracing::warn!(
                        target: "mux_permission",
                        tool = request.spec.name.as_str(),
                        error = %err,
                        "could not remember an always-allow answer; allowing once"
                    );
                }
                GateVerdict::allow()
            }
            Answer::Deny { reason } => GateVerdict::deny(reason),
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
    fn review<'a>(&'a self, request: ApprovalRequest<'a>) -> BoxFuture<'a, GateVerdict> {
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
/// let asker = asker_fn(|_call, _subject, verdict| async move {
///     if verdict.reason.contains("git") { Answer::AllowOnce } else {
///         Answer::Deny { reason: "not now".into() }
///     }
/// });
/// # let _ = asker;
/// ```
pub fn asker_fn<F, Fut>(f: F) -> Arc<dyn Asker>
where
    F: Fn(ToolCall, Subject, PolicyVerdict) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Answer> + Send + 'static,
{
    Arc::new(FnAsker { f })
}

struct FnAsker<F> {
    f: F,
}

impl<F, Fut> Asker for FnAsker<F>
where
    F: Fn(ToolCall, Subject, PolicyVerdict) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Answer> + Send + 'static,
{
    fn ask<'a>(&'a self, question: Question<'a>) -> BoxFuture<'a, Answer> {
        Box::pin((self.f)(
            question.call.clone(),
            question.subject.clone(),
            question.verdict.clone(),
        ))
    }
}
