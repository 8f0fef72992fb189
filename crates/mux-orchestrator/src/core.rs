//! The services an orchestrator is built from and the session it carries: what the
//! loop (`run`), titles and compaction work on. A leaf: it imports none of them.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use mux_llm::{LlmClient, Message, Usage};
use mux_permission::Permissions;
use mux_tool::{Registry, Resources};
use tokio_util::sync::CancellationToken;

use crate::context::ContextProvider;
use crate::emitter::Broadcast;
use crate::hooks::Hooks;
use crate::needs_approval::NeedsApprovalMap;
use crate::session::{CallProgress, HistoryRecord, SessionError, SessionMeta, SessionStore};
use crate::{LoopError, OrchestratorConfig};

/// What an orchestrator is built from, shared by every run.
pub(crate) struct Services {
    pub(crate) client: Arc<dyn LlmClient>,
    pub(crate) config: OrchestratorConfig,
    pub(crate) tools: Registry,
    /// Shared: each run's gate holds it without copying the rules.
    pub(crate) permissions: Option<Arc<Permissions>>,
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
    /// Whether the session exists in the store.
    pub(crate) persisted: bool,
    /// Records the store did not take (it was unreachable), oldest first: the next write
    /// sends them before anything newer.
    pub(crate) unwritten: Vec<HistoryRecord>,
    /// After a failed write: when to try again, and the wait after that.
    pub(crate) backoff: Option<(Instant, Duration)>,
    /// How far each call of the stored session's open turn got (loaded with the session;
    /// taken by the next run, which resolves those calls).
    pub(crate) calls: std::collections::BTreeMap<String, CallProgress>,
    /// Whether a title was asked for already.
    pub(crate) title_requested: bool,
    /// Whether a write behind the loop is under way (see [`Core::write_behind`]).
    writing_behind: bool,
    /// Whether the last write behind the loop was refused for good: the next record is
    /// written in the loop's own time, so the run fails with the store's error.
    refused: bool,
}

/// The services and one session: what a run works on. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Core {
    pub(crate) services: Arc<Services>,
    pub(crate) conversation: Arc<Mutex<Conversation>>,
    /// Held while writing to the store, so records go out once and in order.
    writing: Arc<tokio::sync::Mutex<()>>,
}

/// How many records a conversation holds for an unreachable store before its run fails.
pub(crate) const MAX_UNWRITTEN: usize = 4096;
/// The first and the longest wait between writes to an unreachable store.
const BACKOFF: (Duration, Duration) = (Duration::from_millis(100), Duration::from_secs(2));

/// What [`Core::write`] does when the store refuses.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnFailure {
    /// Report the error (the records stay held for the next write).
    Fail,
    /// Hold the records and go on, unless too many are held already. While the store is
    /// backing off, do not even try.
    Hold,
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
                unwritten: Vec::new(),
                backoff: None,
                calls: Default::default(),
                title_requested: false,
                writing_behind: false,
                refused: false,
            })),
            writing: Arc::default(),
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

    /// Appends records to the session store, creating the session on first use. When the
    /// store refuses, the records are held (see [`Core::write`]) and the error returned.
    pub(crate) async fn persist(&self, records: &[HistoryRecord]) -> Result<(), LoopError> {
        self.write(records, OnFailure::Fail).await
    }

    /// Holds `records` for the next write instead of writing them now: records whose loss
    /// costs only a re-run. Like any record, they are dropped while the session has not been
    /// created (its first write stores the whole conversation).
    pub(crate) fn defer(&self, records: &[HistoryRecord]) {
        let mut conversation = self.lock();
        if conversation.persisted {
            conversation.unwritten.extend_from_slice(records);
        }
    }

    /// Writes `records` after any held ones. A store that refuses does not lose them: they
    /// are held, in order, for the next write (at most [`MAX_UNWRITTEN`]).
    pub(crate) async fn write(
        &self,
        records: &[HistoryRecord],
        on_failure: OnFailure,
    ) -> Result<(), LoopError> {
        self.write_then(records, on_failure, false).await
    }

    /// Hands `record` to the store behind the loop, which goes on at once: the record goes
    /// out now, after any held ones, unless a write is under way already, and then with the
    /// next. The loop waits for its records only where it must: a person's words, before a
    /// tool that may not run twice, before a question, at a pause and at the run's end (each
    /// such write takes the held records first, in order). Until the session exists, and
    /// after the store refused a write for good, this is [`Core::write`].
    pub(crate) async fn write_behind(
        &self,
        record: HistoryRecord,
        behind: &Behind,
    ) -> Result<(), LoopError> {
        if self.services.store.is_none() {
            return Ok(());
        }
        {
            let mut conversation = self.lock();
            if conversation.persisted && !conversation.refused {
                conversation.unwritten.push(record);
                let held = conversation.unwritten.len();
                if held > MAX_UNWRITTEN {
                    return Err(too_many_held(held));
                }
                if !std::mem::replace(&mut conversation.writing_behind, true) {
                    drop(conversation);
                    behind.start(self.clone());
                }
                return Ok(());
            }
        }
        self.write(std::slice::from_ref(&record), OnFailure::Hold)
            .await
    }

    /// Writes the held records, if any once it is this call's turn to write.
    pub(crate) async fn write_held(&self, on_failure: OnFailure) -> Result<(), LoopError> {
        self.write_then(&[], on_failure, true).await
    }

    async fn write_then(
        &self,
        records: &[HistoryRecord],
        on_failure: OnFailure,
        only_held: bool,
    ) -> Result<(), LoopError> {
        let Some(store) = &self.services.store else {
            return Ok(());
        };
        let _writing = self.writing.lock().await;
        let (meta, batch, create) = {
            let mut conversation = self.lock();
            if only_held && conversation.persisted && conversation.unwritten.is_empty() {
                return Ok(());
            }
            conversation.meta.touch();
            if conversation.persisted {
                conversation.unwritten.extend_from_slice(records);
            }
            let held = conversation.unwritten.len();
            if on_failure == OnFailure::Hold {
                if held > MAX_UNWRITTEN {
                    return Err(too_many_held(held));
                }
                if conversation
                    .backoff
                    .is_some_and(|(retry_at, _)| Instant::now() < retry_at)
                {
                    return Ok(());
                }
            }
            // The first write records the whole conversation, so seeded history is kept.
            let create = !conversation.persisted;
            let batch = if create {
                vec![HistoryRecord::Replace {
                    messages: conversation.messages.to_vec(),
                }]
            } else {
                conversation.unwritten.clone()
            };
            (conversation.meta.clone(), batch, create)
        };
        let written = async {
            if create {
                match store.create_and_append(&meta, &batch).await {
                    // An earlier try created it (its answer lost, or its append failed after):
                    // the first record replaces the whole conversation, so writing it again is
                    // safe. A session someone else made is not this one's to write.
                    Err(SessionError::AlreadyExists(id)) => {
                        if !same_session(&store.load_meta(&meta.id).await?, &meta) {
                            return Err(SessionError::AlreadyExists(id));
                        }
                        if batch.is_empty() {
                            return Ok(());
                        }
                        store.append(&meta.id, &batch).await
                    }
                    done => done,
                }
            } else {
                store.save_and_append(&meta, &batch).await
            }
        }
        .await;
        let mut conversation = self.lock();
        match written {
            Ok(()) => {
                conversation.persisted = true;
                conversation.refused = false;
                if create {
                    conversation.unwritten.clear();
                } else {
                    conversation.unwritten.drain(..batch.len());
                }
                if conversation.backoff.take().is_some() {
                    tracing::info!(session = %meta.id, "the session store took the held records");
                }
                Ok(())
            }
            // No retry can help (a session someone else made, one deleted meanwhile, a
            // record that does not serialize...): the run fails now rather than holding its
            // records as for an unreachable store.
            Err(err) if !err.is_transient() => {
                tracing::warn!(session = %meta.id, "the session store refused a write for good: {err}");
                Err(err.into())
            }
            Err(err) => {
                let wait = conversation
                    .backoff
                    .map_or(BACKOFF.0, |(_, wait)| (wait * 2).min(BACKOFF.1));
                conversation.backoff = Some((Instant::now() + wait, wait));
                let held = conversation.unwritten.len();
                tracing::warn!(session = %meta.id, held, "the session store refused a write: {err}");
                match on_failure {
                    OnFailure::Hold => Ok(()),
                    OnFailure::Fail => Err(err.into()),
                }
            }
        }
    }

    /// Writes every held record, trying again until `within` has passed or `cancel` fires.
    pub(crate) async fn flush(
        &self,
        within: Duration,
        cancel: &CancellationToken,
    ) -> Result<(), LoopError> {
        let deadline = Instant::now() + within;
        loop {
            let pending = {
                let conversation = self.lock();
                !conversation.unwritten.is_empty()
                    || (conversation.backoff.is_some() && !conversation.persisted)
            };
            if !pending {
                return Ok(());
            }
            let err = match self.write_held(OnFailure::Fail).await {
                Ok(()) => continue,
                // No retry can help: see `write`.
                Err(LoopError::Session(cause)) if !cause.is_transient() => {
                    return Err(cause.into());
                }
                Err(err) => err,
            };
            let retry_at = self.lock().backoff.map_or_else(Instant::now, |(at, _)| at);
            if retry_at >= deadline || cancel.is_cancelled() {
                return Err(LoopError::Unwritten {
                    records: self.lock().unwritten.len().max(1),
                    reason: err.to_string(),
                });
            }
            tokio::select! {
                () = tokio::time::sleep_until(retry_at.into()) => {}
                () = cancel.cancelled() => {}
            }
        }
    }
}

fn too_many_held(held: usize) -> LoopError {
    LoopError::Unwritten {
        records: held,
        reason: "too many records held while the store is unreachable".into(),
    }
}

/// A run's write behind its loop (see [`Core::write_behind`]). Dropped with the run: a loop
/// stopped midway (its run taken over by another process) writes nothing more.
#[derive(Default)]
pub(crate) struct Behind(Mutex<Option<tokio::task::JoinHandle<()>>>);

impl Behind {
    /// Writes `core`'s held records until none are left, the store backs off or it refuses.
    fn start(&self, core: Core) {
        let task = tokio::spawn(async move {
            let mut under_way = UnderWay(Some(core.clone()));
            loop {
                let written = core.write_held(OnFailure::Hold).await;
                let mut conversation = core.lock();
                if written.is_err() {
                    // The next record is written in the loop's time, and fails it.
                    conversation.refused = true;
                }
                if written.is_err()
                    || conversation.unwritten.is_empty()
                    || conversation.backoff.is_some()
                {
                    conversation.writing_behind = false;
                    under_way.0 = None;
                    return;
                }
            }
        });
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(task);
    }
}

impl Drop for Behind {
    fn drop(&mut self) {
        if let Some(task) = self
            .0
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            task.abort();
        }
    }
}

/// Marks the conversation's write behind as over if its task is dropped midway.
struct UnderWay(Option<Core>);

impl Drop for UnderWay {
    fn drop(&mut self) {
        if let Some(core) = self.0.take() {
            core.lock().writing_behind = false;
        }
    }
}

/// Whether stored metadata is `meta` as this conversation made it (all but the update time,
/// which every write moves).
fn same_session(stored: &SessionMeta, meta: &SessionMeta) -> bool {
    stored.id == meta.id
        && stored.created_at_ms == meta.created_at_ms
        && stored.parent == meta.parent
        && stored.extra == meta.extra
}
