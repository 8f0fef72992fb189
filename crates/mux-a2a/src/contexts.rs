//! Contexts: an A2A `contextId` is a mux session id. Each context holds the conversation
//! (an [`Orchestrator`] on the session store) its tasks run on, one task at a time.
//! Idle contexts past the cap are dropped from memory; their sessions stay in the store and
//! are resumed when the context is used again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use mux_orchestrator::session::{ID_RULE, SessionError, SessionMeta, SessionStore, valid_id};
use mux_orchestrator::{Agent, Orchestrator};
use tokio_util::sync::CancellationToken;

use crate::rpc::RpcError;
use crate::task::TaskEntry;
use crate::tasks::shown;
use crate::time;

/// One context.
pub(crate) struct Context {
    pub(crate) id: String,
    pub(crate) orchestrator: Orchestrator,
    state: Mutex<ContextState>,
}

struct ContextState {
    /// The task running or paused on this context.
    active: Option<Arc<TaskEntry>>,
    last_used_ms: i64,
}

impl Context {
    fn state(&self) -> MutexGuard<'_, ContextState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Makes `task` the context's task, unless another one is still running or paused.
    pub(crate) fn claim(&self, task: &Arc<TaskEntry>) -> Result<(), RpcError> {
        let mut state = self.state();
        if let Some(active) = &state.active
            && !active.state().is_terminal()
        {
            return Err(RpcError::unsupported(format!(
                "context `{}` has task `{}` in progress ({:?}); answer it (message.taskId) or cancel it first",
                self.id,
                active.id,
                active.state()
            )));
        }
        state.active = Some(Arc::clone(task));
        state.last_used_ms = time::now_ms();
        Ok(())
    }

    fn is_idle(&self) -> bool {
        self.state()
            .active
            .as_ref()
            .is_none_or(|t| t.state().is_terminal())
    }
}

/// The contexts in memory.
pub(crate) struct Contexts {
    agent: Agent,
    store: Arc<dyn SessionStore>,
    map: Mutex<HashMap<String, Arc<Context>>>,
    max: usize,
    /// The parent of every conversation's token: cancelled when the server stops.
    stop: CancellationToken,
}

impl Contexts {
    pub(crate) fn new(
        agent: Agent,
        store: Arc<dyn SessionStore>,
        max: usize,
        stop: CancellationToken,
    ) -> Self {
        Self {
            agent,
            store,
            map: Mutex::default(),
            max: max.max(1),
            stop,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<Context>>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The context `id` (the client's, or a new one when `None`), opened from the session
    /// store when it is not in memory.
    pub(crate) async fn open(&self, id: Option<&str>) -> Result<Arc<Context>, RpcError> {
        let builder = || {
            self.agent
                .orchestrator_at(self.agent.root())
                .map(|b| {
                    b.session_store(Arc::clone(&self.store))
                        .cancellation(self.stop.child_token())
                })
                .map_err(|e| RpcError::internal(format!("the agent could not be set up: {e}")))
        };
        let orchestrator = match id {
            None => builder()?.build(),
            Some(id) => {
                if !valid_id(id) {
                    return Err(RpcError::invalid_params(format!(
                        "contextId `{}` must be {ID_RULE}",
                        shown(id)
                    )));
                }
                if let Some(context) = self.lock().get(id) {
                    return Ok(Arc::clone(context));
                }
                let session = |e: SessionError| {
                    RpcError::internal(format!("the session store failed on `{id}`: {e}"))
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
                builder()?
                    .resume(id)
                    .await
                    .map_err(|e| RpcError::internal(format!("cannot resume `{id}`: {e}")))?
            }
        };
        let id = orchestrator.session().id;
        let context = Arc::new(Context {
            id: id.clone(),
            orchestrator,
            state: Mutex::new(ContextState {
                active: None,
                last_used_ms: time::now_ms(),
            }),
        });
        let mut map = self.lock();
        // Another request may have opened it meanwhile: one conversation per context.
        if let Some(existing) = map.get(&id) {
            return Ok(Arc::clone(existing));
        }
        map.insert(id, Arc::clone(&context));
        if map.len() > self.max {
            let mut idle: Vec<(i64, String)> = map
                .values()
                .filter(|c| c.is_idle() && c.id != context.id)
                .map(|c| (c.state().last_used_ms, c.id.clone()))
                .collect();
            idle.sort();
            let excess = map.len() - self.max;
            for (_, id) in idle.into_iter().take(excess) {
                map.remove(&id);
            }
        }
        Ok(context)
    }
}
