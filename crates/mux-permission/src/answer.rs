//! A person's answer to a call that needs approval, and how the policy takes it.

use mux_tool::GateVerdict;
use mux_tool::approval::ApprovalRequest;

use crate::{Permissions, Remember, Scope};

/// A person's answer to a call that needs approval: the answer to a
/// [`Question`](crate::Question), and what a face sends back into the loop (mux-orchestrator's `LoopInput::ToolApproval`).
/// The words match the policy's [`Verdict`](crate::Verdict) (allow / deny) and ACP's permission options.
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

    /// What the answer makes of the call: allow for either "allow" answer, deny with the
    /// person's reason otherwise. Remembers nothing: [`Permissions::answered`] does.
    pub fn into_verdict(self) -> GateVerdict {
        match self {
            Answer::AllowOnce | Answer::AllowAlways { .. } => GateVerdict::allow(),
            Answer::Deny { reason } => GateVerdict::deny(reason),
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

impl Permissions {
    /// Takes a person's answer to `request`: traces it, and for "always" adds the rule its
    /// [`Remember`] describes, so that calls like it run unasked. The one place an answer is
    /// applied: the orchestrator's gate hands its face's answers here, and
    /// [`PermissionGate`](crate::PermissionGate) its asker's.
    ///
    /// Returns what the executor does ([`Answer::into_verdict`]): allow for either "allow"
    /// answer (also when the rule could not be added; the failure is logged), deny with the
    /// person's reason otherwise.
    pub fn answered(&self, request: &ApprovalRequest<'_>, answer: Answer) -> GateVerdict {
        tracing::info!(
            target: "mux_permission",
            tool = request.spec.name.as_str(),
            call_id = request.call.id.as_str(),
            answer = ?answer,
            "permission answer"
        );
        if let Answer::AllowAlways { remember } = &answer
            && let Err(err) = self.remember(request.spec, request.subject, remember)
        {
            tracing::warn!(
                target: "mux_permission",
                tool = request.spec.name.as_str(),
                error = %err,
                "could not remember an always-allow answer; allowing once"
            );
        }
        answer.into_verdict()
    }
}
