//! [`Permissions`] as a gate for mux-tool's executor on its own, with an [`Asker`] for the
//! calls it asks about. A thin adapter over [`Permissions::check_call`], the one approval
//! order ([`before_the_face`]) and [`Permissions::answered`]; the orchestrator does not use
//! it (its gate asks its face itself).

use std::sync::{Arc, Mutex};

use mux_tool::approval::{ApprovalRequest, ToolSays, before_the_face};
use mux_tool::{ApprovalGate, BoxFuture, GateVerdict, PathFilter, Subject, ToolCall, Verdict};

use crate::{Answer, Permissions};

/// A call the policy wants someone to approve.
#[derive(Clone, Copy, Debug)]
pub struct Question<'a> {
    /// The call.
    pub call: &'a ToolCall,
    /// What it touches.
    pub subject: &'a Subject,
    /// Why the policy asks.
    pub verdict: &'a GateVerdict,
}

/// Answers a [`PermissionGate`]'s questions: whoever uses the gate supplies it (an MCP
/// server asks its caller, say).
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
/// asking, and a hook's ask asks, but deny rules still hold ([`before_the_face`]). With no
/// asker, ask refuses.
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

    /// The one approval order over the policy's verdict; an ask goes to the asker, whose
    /// answer [`Permissions::answered`] applies and the gate records.
    async fn decide(&self, request: ApprovalRequest<'_>) -> GateVerdict {
        let policy =
            self.permissions
                .check_call(request.spec, request.subject, &request.call.input);
        let verdict = before_the_face(&request, policy, ToolSays::Nothing);
        if verdict.verdict != Verdict::Ask {
            return verdict;
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
        self.record(&request, &answer);
        self.permissions.answered(&request, answer)
    }

    fn record(&self, request: &ApprovalRequest<'_>, answer: &Answer) {
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
    F: Fn(ToolCall, Subject, GateVerdict) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Answer> + Send + 'static,
{
    Arc::new(FnAsker { f })
}

struct FnAsker<F> {
    f: F,
}

impl<F, Fut> Asker for FnAsker<F>
where
    F: Fn(ToolCall, Subject, GateVerdict) -> Fut + Send + Sync + 'static,
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
