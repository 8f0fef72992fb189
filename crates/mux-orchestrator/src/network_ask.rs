//! A walled command's network destination that no rule covers, asked about on the run's face
//! like a tool call: "allow network access to `crates.io:443`?", once or always.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use mux_permission::Answer;
use mux_tool::builtin::{DomainAnswer, DomainAsker, DomainAskers, DomainRequest};
use mux_tool::{BoxFuture, Subject, ToolCall};
use serde_json::json;

use crate::approval::LoopAsker;

/// The name a destination's approval carries on the face, in place of a tool's.
pub const NETWORK_APPROVAL: &str = "network";

/// The run's askers: one per call, sharing the destinations allowed "always" for the rest of
/// the conversation.
pub(crate) struct RunDomainAskers {
    pub(crate) asker: Arc<LoopAsker>,
    /// `host:port` answered "always", kept by the orchestrator across its runs.
    pub(crate) always: Arc<Mutex<HashSet<String>>>,
}

impl std::fmt::Debug for RunDomainAskers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunDomainAskers").finish_non_exhaustive()
    }
}

impl std::fmt::Debug for CallDomainAsker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallDomainAsker")
            .field("call_id", &self.call_id)
            .finish_non_exhaustive()
    }
}

impl DomainAskers for RunDomainAskers {
    fn for_call(&self, call_id: &str) -> Arc<dyn DomainAsker> {
        Arc::new(CallDomainAsker {
            asker: Arc::clone(&self.asker),
            always: Arc::clone(&self.always),
            call_id: call_id.to_owned(),
        })
    }
}

/// Asks about the destinations of one call.
struct CallDomainAsker {
    asker: Arc<LoopAsker>,
    always: Arc<Mutex<HashSet<String>>>,
    call_id: String,
}

impl DomainAsker for CallDomainAsker {
    fn ask(&self, request: DomainRequest) -> BoxFuture<'_, DomainAnswer> {
        Box::pin(async move {
            let destination = request.to_string();
            let remembered = self
                .always
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .contains(&destination);
            if remembered {
                return DomainAnswer::AllowOnce;
            }
            // An id of its own, so the question cannot take or give the answer of the call.
            let call = ToolCall::new(
                format!("{}:network:{destination}", self.call_id),
                NETWORK_APPROVAL,
                json!({"host": request.host, "port": request.port, "call_id": self.call_id}),
            );
            let subject = Subject::url(format!("https://{destination}/"));
            let reason = format!("allow network access to `{destination}`?");
            match self.asker.ask_now(&call, &subject, &reason, false).await {
                Answer::AllowOnce => DomainAnswer::AllowOnce,
                Answer::AllowAlways { .. } => {
                    self.always
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(destination);
                    DomainAnswer::AllowAlways
                }
                _ => DomainAnswer::Deny,
            }
        })
    }
}
