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
    /// The pre-hook that asked for the call to be approved by someone, if one did
    /// ([`PreHookAction::Ask`](crate::PreHookAction::Ask)): the gate asks unless a rule
    /// denies.
    pub ask_requested_by: Option<&'a str>,
}

pub use crate::verdict::{GateVerdict, Scope, Verdict};

/// What the tool's own configuration says about one call, beside the policy: step 3 of
/// [`before_the_face`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ToolSays {
    /// Nothing: the policy's verdict stands.
    #[default]
    Nothing,
    /// Ask someone first, for this reason; a deny of the policy still holds.
    Ask(String),
    /// No approval needed: an ask of the policy becomes allow, a deny still holds. A gate
    /// says so only where no one set a policy.
    Allow,
}

/// The one approval order, up to the face: what a gate concludes from the hooks' marks on
/// `request`, the `policy`'s verdict and what the `tool` itself says.
/// [`Verdict::Ask`] means the face decides; allow and deny are final.
///
/// 1. Hooks. A hook's deny never reaches a gate (the executor refuses the call first); a
///    hook's ask or allow is marked on the request.
/// 2. Rules and mode: the `policy`'s verdict (mux-permission's `Permissions::check_call`,
///    where the mode reads the tool's annotations when no rule matched). A deny is final:
///    no hook, tool or answer runs the call.
/// 3. A hook's ask, then the tool's own say ([`ToolSays`]).
/// 4. The policy's allow or ask; a hook's allow answers that ask in advance.
///
/// ```
/// use mux_tool::approval::{ApprovalRequest, ToolSays, before_the_face};
/// use mux_tool::{GateVerdict, Subject, ToolCall, ToolSpec, Verdict};
/// use std::sync::Arc;
///
/// let call = ToolCall::new("c1", "deploy", serde_json::json!({}));
/// let spec = Arc::new(ToolSpec::new("deploy", "ships it", serde_json::json!({"type": "object"}))?);
/// let subject = Subject::None;
/// let request = ApprovalRequest {
///     call: &call,
///     spec: &spec,
///     subject: &subject,
///     pre_approved_by: Some("ci"),
///     ask_requested_by: None,
/// };
/// // A hook's allow answers the policy's ask, but never its deny.
/// let asks = GateVerdict::ask("no rule allows this call to `deploy`");
/// assert!(before_the_face(&request, asks, ToolSays::Nothing).is_allow());
/// let denies = GateVerdict::deny("denied by the rule `deploy`");
/// assert!(before_the_face(&request, denies, ToolSays::Nothing).is_deny());
/// # Ok::<(), mux_tool::SpecError>(())
/// ```
pub fn before_the_face(
    request: &ApprovalRequest<'_>,
    policy: GateVerdict,
    tool: ToolSays,
) -> GateVerdict {
    // 2. Rules and mode: a deny is final.
    if policy.is_deny() {
        return policy;
    }
    // 3. A hook's ask, then the tool's own say.
    if let Some(hook) = request.ask_requested_by {
        return GateVerdict::ask(format!("the pre-tool-use hook `{hook}` asked for approval"));
    }
    match tool {
        ToolSays::Ask(reason) => return GateVerdict::ask(reason),
        ToolSays::Allow => {
            return GateVerdict {
                verdict: Verdict::Allow,
                ..policy
            };
        }
        ToolSays::Nothing => {}
    }
    // 4. The policy's verdict; a hook's allow answers its ask in advance.
    match request.pre_approved_by {
        Some(hook) if policy.is_ask() => {
            tracing::info!(
                target: "mux_tool",
                tool = request.spec.name.as_str(),
                hook,
                "pre-approved by a hook; not asking"
            );
            GateVerdict {
                verdict: Verdict::Allow,
                ..policy
            }
        }
        _ => policy,
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

    /// The verdict on a call to `spec` under this policy, for a gate without rules: ask
    /// (saying why) when the call needs approval, allow otherwise.
    pub fn verdict(self, spec: &ToolSpec) -> GateVerdict {
        match self {
            _ if !self.requires_approval(spec) => GateVerdict::allow(),
            Self::Always => GateVerdict::ask("every call needs approval (ApprovalPolicy::Always)"),
            _ => GateVerdict::ask("the tool is not read-only and no permission policy is set"),
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
