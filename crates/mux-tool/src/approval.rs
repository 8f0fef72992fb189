//! The approval gate: the seam where the permission layer and the human decide.

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
}

/// A gate's verdict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Approval {
    /// Run the call.
    Allow,
    /// Refuse the call; the reason reaches the model.
    Deny {
        /// Why.
        reason: String,
    },
}

impl Approval {
    /// A denial with a reason.
    pub fn deny(reason: impl Into<String>) -> Self {
        Self::Deny {
            reason: reason.into(),
        }
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
    fn review<'a>(&'a self, request: ApprovalRequest<'a>) -> BoxFuture<'a, Approval>;

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
/// use mux_tool::{approval::gate_fn, Approval};
///
/// let gate = gate_fn(|request| async move {
///     if request.spec.annotations.destructive {
///         Approval::deny("destructive tools are off")
///     } else {
///         Approval::Allow
///     }
/// });
/// # let _ = gate;
/// ```
pub fn gate_fn<F, Fut>(f: F) -> FnGate<F>
where
    F: Fn(OwnedApprovalRequest) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Approval> + Send + 'static,
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
}

impl From<ApprovalRequest<'_>> for OwnedApprovalRequest {
    fn from(request: ApprovalRequest<'_>) -> Self {
        Self {
            call: request.call.clone(),
            spec: Arc::clone(request.spec),
            subject: request.subject.clone(),
            pre_approved_by: request.pre_approved_by.map(str::to_owned),
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
    Fut: std::future::Future<Output = Approval> + Send + 'static,
{
    fn review<'a>(&'a self, request: ApprovalRequest<'a>) -> BoxFuture<'a, Approval> {
        Box::pin((self.f)(request.into()))
    }
}
