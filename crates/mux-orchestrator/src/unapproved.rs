//! A call denied for want of an approver.

/// A call denied because no one could approve it: a run with no face (such as
/// [`Orchestrator::run_to_completion`](crate::Orchestrator::run_to_completion)) called a tool that needs approval. Allow it with a
/// permission rule, or, without a policy, with
/// `OrchestratorConfig::new(model).approval(ApprovalPolicy::Never)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnapprovedCall {
    /// The call id.
    pub call_id: String,
    /// The tool name.
    pub tool: String,
    /// Why the call needed approval.
    pub reason: String,
}
