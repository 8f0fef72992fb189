//! Contexts: an A2A `contextId` is a mux session id. Each task runs on a conversation (an
//! [`Orchestrator`]) loaded from the session store when the task starts or resumes, so a task
//! continues what any process sharing the store left; the run store keeps one task at a time
//! per context.

use std::sync::Arc;

use mux_orchestrator::session::{ID_RULE, SessionError, SessionMeta, SessionStore, valid_id};
use mux_orchestrator::{Agent, LoopError, Orchestrator};

use crate::rpc::RpcError;
use crate::rpc::shown;

/// Opens the conversations of contexts.
pub(crate) struct Contexts {
    agent: Agent,
    store: Arc<dyn SessionStore>,
}

impl Contexts {
    pub(crate) fn new(agent: Agent, store: Arc<dyn SessionStore>) -> Self {
        Self { agent, store }
    }

    /// Checks a client's `contextId`.
    pub(crate) fn check(id: &str) -> Result<(), RpcError> {
        if valid_id(id) {
            Ok(())
        } else {
            Err(RpcError::invalid_params(format!(
                "contextId `{}` must be {ID_RULE}",
                shown(id)
            )))
        }
    }

    /// Gives the open calls of context `id`'s session their results, after its paused task
    /// was cancelled ([`mux_orchestrator::settle_open_turn`]); the caller holds the task's
    /// run, so no loop runs on the session.
    pub(crate) async fn settle_cancelled(&self, id: &str) -> Result<usize, SessionError> {
        mux_orchestrator::settle_open_turn(&*self.store, id).await
    }

    /// The conversation of context `id` (the client's, or a new one when `None`), as the
    /// session store has it now.
    pub(crate) async fn open(&self, id: Option<&str>) -> Result<Orchestrator, RpcError> {
        let builder = self
            .agent
            .conversation_at(self.agent.root())
            // A server that stops aborts its loops where they are (through their writers),
            // as a process that ends would, rather than cancelling them.
            .map(|b| {
                b.stored_in(Arc::clone(&self.store))
                    // A prompt the store did not take is refused (UNAVAILABLE), so it must
                    // not stay behind in the conversation.
                    .reconfigure(|config| config.prompts_need_store(true))
            })
            .map_err(|e| RpcError::internal(format!("the agent could not be set up: {e}")))?;
        let Some(id) = id else {
            return Ok(builder.build());
        };
        Self::check(id)?;
        let session = |e: SessionError| match e {
            e if e.fault().is_some() => RpcError::unavailable("session", &e),
            e => RpcError::internal(format!("the session store failed on `{id}`: {e}")),
        };
        match self.store.load(id).await {
            Ok(_) => {}
            Err(SessionError::NotFound(_)) => {
                let mut meta = SessionMeta::new();
                meta.id = id.to_owned();
                self.store.create(&meta).await.map_err(session)?;
            }
            Err(e) => return Err(session(e)),
        }
        builder.resume(id).await.map_err(|e| match e {
            LoopError::Session(e) if e.fault().is_some() => RpcError::unavailable("session", &e),
            e => RpcError::internal(format!("cannot resume `{id}`: {e}")),
        })
    }
}
