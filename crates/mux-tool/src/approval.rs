//! The approval gate: the seam where the permission layer and the human decide.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::{BoxFuture, PathFilter, Subject, ToolCall, ToolSpec};

/// A call waiting for a verdict.
#[derive(Clone, Copy, Debug)]
pub struct ApprovalRequest<'a> {
    /// The call, with validated (and possibly rewritten) arguments.
    pub call: &'a ToolCall,
    /// The tool's spec, shared: a gate that keeps it clones the `Arc`, not the schema.
    pub spec: &'a Arc<ToolSpec>,
    /// What the call touches.
    pub subject: &'a Subject,
    /// The pre-hook that approved the call in advance, if one did.
    pub pre_approved_by: Option<&'a str>,
    /// The pre-hook that asked for the call to be approved by someone, if one did
    /// ([`PreHookAction::Ask`](crate::PreHookAction::Ask)): the gate asks unless a rule
    /// denies.
    pub ask_requested_by: Option<&'a str>,
}

/// The policy's three outcomes for a call: run it, ask someone first, or refuse it.
///
/// The one word for what a policy or gate concludes; a person's reply is mux-permission's
/// `Answer`. Serialises as `"allow"`, `"ask"` or `"deny"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Run the call.
    Allow,
    /// Ask someone first.
    Ask,
    /// Refuse the call.
    Deny,
}

impl Verdict {
    /// The lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::Ask => "ask",
            Verdict::Deny => "deny",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A gate's result: a [`Verdict`] and the reason for it.
///
/// Only [`Verdict::Allow`] runs the call. [`Verdict::Deny`] refuses it, and so does
/// [`Verdict::Ask`]: a gate that returns ask found no one to answer. Either way the reason
/// reaches the model. Serialises as `{"verdict":"allow|ask|deny","reason":…}`; the key
/// `"decision"` of earlier releases is still read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateVerdict {
    /// Allow, ask (no one answered) or deny.
    #[serde(alias = "decision")]
    pub verdict: Verdict,
    /// Why; empty for a plain allow.
    #[serde(default)]
    pub reason: String,
}

impl GateVerdict {
    /// Run the call.
    pub fn allow() -> Self {
        Self {
            verdict: Verdict::Allow,
            reason: String::new(),
        }
    }

    /// Refuse the call, with a reason the model reads.
    pub fn deny(reason: impl Into<String>) -> Self {
        Self {
            verdict: Verdict::Deny,
            reason: reason.into(),
        }
    }

    /// The call still needs an answer no one gave: it does not run.
    pub fn ask(reason: impl Into<String>) -> Self {
        Self {
            verdict: Verdict::Ask,
            reason: reason.into(),
        }
    }

    /// Whether the call runs.
    pub fn is_allow(&self) -> bool {
        self.verdict == Verdict::Allow
    }
}

/// Decides whether a call may run. mux-permission implements policy with it, and
/// mux-orchestrator asks the human through it.
///
/// The executor consults the gate for every call when one is set. A gate that panics counts
/// as a denial.
pub trait ApprovalGate: Send + Sync + 'static {
    /// Reviews one call. May wait (for a human, say); the executor stops waiting when the call
    /// is cancelled.
    fn review<'a>(&'a self, request: ApprovalRequest<'a>) -> BoxFuture<'a, GateVerdict>;

    /// The paths an approved call must leave out of its results (a search over a tree that
    /// holds denied files, say). Asked once per approved call. Default: none.
    fn path_filter(&self, request: ApprovalRequest<'_>) -> Option<Arc<dyn PathFilter>> {
        let _ = request;
        None
    }
}

/// Which calls need a gate's approval when no gate is set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalPolicy {
    /// Every call needs approval.
    Always,
    /// Calls to tools annotated read-only run without approval; others need it.
    #[default]
    UnlessReadOnly,
    /// No call needs approval.
    Never,
}

impl ApprovalPolicy {
    /// Whether a call to `spec` needs approval under this policy.
    pub fn requires_approval(self, spec: &ToolSpec) -> bool {
        match self {
            Self::Always => true,
            Self::UnlessReadOnly => !spec.annotations.read_only,
            Self::Never => false,
        }
    }
}

/// A gate from an async closure over an owned snapshot of the request.
///
/// ```
/// use mux_tool::{approval::gate_fn, GateVerdict};
///
/// let gate = gate_fn(|request| async move {
///     if request.spec.annotations.destructive {
///         GateVerdict::deny("destructive tools are off")
///     } else {
///         GateVerdict::allow()
///     }
/// });
/// # let _ = gate;
/// ```
pub fn gate_fn<F, Fut>(f: F) -> FnGate<F>
where
    F: Fn(OwnedApprovalRequest) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = GateVerdict> + Send + 'static,
{
    FnGate { f }
}

/// An owned copy of an [`ApprovalRequest`], for gates that move it into a task.
#[derive(Clone, Debug)]
pub struct OwnedApprovalRequest {
    /// The call.
    pub call: ToolCall,
    /// The tool's spec.
    pub spec: Arc<ToolSpec>,
    /// What the call touches.
    pub subject: Subject,
    /// The pre-hook that approved the call in advance, if one did.
    pub pre_approved_by: Option<String>,
    /// The pre-hook that asked for the call to be approved by someone, if one did.
    pub ask_requested_by: Option<String>,
}

impl From<ApprovalRequest<'_>> for OwnedApprovalRequest {
    fn from(request: ApprovalRequest<'_>) -> Self {
        Self {
            call: request.call.clone(),
            spec: Arc::clone(request.spec),
            subject: request.subject.clone(),
            pre_approved_by: request.pre_approved_by.map(str::to_owned),
            ask_requested_by: request.ask_requested_by.map(str::to_owned),
        }
    }
}

/// See [`gate_fn`].
#[derive(Debug)]
pub struct FnGate<F> {
    f: F,
}

impl<F, Fut> ApprovalGate for FnGate<F>
where
    F: Fn(OwnedApprovalRequest) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = GateVerdict> + Send + 'static,
{
    fn review<'a>(&'a self, request: ApprovalRequest<'a>) -> BoxFuture<'a, GateVerdict> {
        Box::pin((self.f)(request.into()))
    }
}
