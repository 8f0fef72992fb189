//! The services an orchestrator is built from and the session it carries: what the
//! loop (`run`), titles and compaction work on. A leaf: it imports none of them.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use mux_llm::{LlmClient, Message, Usage};
use mux_permission::Permissions;
use mux_tool::{Registry, Resources};
use tokio_util::sync::CancellationToken;

use crate::approval::NeedsApprovalMap;
use crate::context::ContextProvider;
use crate::emitter::Broadcast;
use crate::hooks::Hooks;
use crate::session::{HistoryRecord, SessionMeta, SessionStore};
use crate::{LoopError, OrchestratorConfig};

/// What an orchestrator is built from, shared by every run.
pub(crate) struct Services {
    pub(crate) client: Arc<dyn LlmClient>,
    pub(crate) config: OrchestratorConfig,
    pub(crate) tools: Registry,
    pub(crate) permissions: Option<Permissions>,
    pub(crate) contexts: Vec<Arc<dyn ContextProvider>>,
    pub(crate) store: Option<Arc<dyn SessionStore>>,
    pub(crate) hooks: Hooks,
    pub(crate) resources: Resources,
    pub(crate) broadcast: Broadcast,
    pub(crate) cancel: CancellationToken,
    pub(crate) needs_approval: NeedsApprovalMap,
    #[cfg(feature = "mcp")]
    pub(crate) mcp: Option<crate::mcp::McpLink>,
}

/// The session an orchestrator carries across runs.
#[derive(Debug)]
pub(crate) struct Conversation {
    pub(crate) meta: SessionMeta,
    /// Shared with each turn's request, copy-on-write: a turn does not copy the history.
    pub(crate) messages: Arc<Vec<Message>>,
    pub(crate) usage: Usage,
    /// Context size the provider reported on the last call (input + cache + output tokens).
    pub(crate) reported_tokens: Option<u64>,
    pub(crate) persisted: bool,
    /// Whether a title was asked for already.
    pub(crate) title_requested: bool,
    /// Without a permission policy: tools allowed "always" in this session.
    pub(crate) always_allowed: Arc<Mutex<HashSet<String>>>,
}

/// The services and one session: what a run works on. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Core {
    pub(crate) services: Arc<Services>,
    pub(crate) conversation: Arc<Mutex<Conversation>>,
}

impl Core {
    /// A session over `services`.
    pub(crate) fn new(
        services: Arc<Services>,
        meta: SessionMeta,
        messages: Vec<Message>,
        persisted: bool,
    ) -> Self {
        Self {
            services,
            conversation: Arc::new(Mutex::new(Conversation {
                meta,
                messages: Arc::new(messages),
                usage: Usage::default(),
                reported_tokens: None,
                persisted,
                title_requested: false,
                always_allowed: Arc::default(),
            })),
        }
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, Conversation> {
        self.conversation
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The session so far.
    pub(crate) fn messages(&self) -> Vec<Message> {
        self.lock().messages.to_vec()
    }

    /// Appends records to the session store, creating the session on first use.
    pub(crate) async fn persist(&self, records: &[HistoryRecord]) -> Result<(), LoopError> {
        let Some(store) = &self.services.store else {
            return Ok(());
        };
        let (meta, first) = {
            let mut conversation = self.lock();
            conversation.meta.touch();
            // The first write records the whole conversation, so seeded history is kept.
            let first = (!conversation.persisted).then(|| HistoryRecord::Replace {
                messages: conversation.messages.to_vec(),
            });
            conversation.persisted = true;
            (conversation.meta.clone(), first)
        };
        match first {
            Some(everything) => {
                store.create(&meta).await?;
                store
                    .append(&meta.id, std::slice::from_ref(&everything))
                    .await?;
            }
            None => {
                store.save_meta(&meta).await?;
                store.append(&meta.id, records).await?;
            }
        }
        Ok(())
    }
}
