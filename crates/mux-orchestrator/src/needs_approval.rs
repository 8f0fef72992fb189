//! Per-tool predicates that say whether a call needs approval, from its input (as the OpenAI
//! Agents SDK's `needs_approval`).

use std::sync::Arc;

/// A predicate over a call's input that says whether the call needs approval.
pub(crate) type NeedsApproval = Arc<dyn Fn(&serde_json::Value) -> bool + Send + Sync>;

/// Tool name → its [`NeedsApproval`] predicate.
pub(crate) type NeedsApprovalMap = Arc<std::collections::HashMap<String, NeedsApproval>>;
