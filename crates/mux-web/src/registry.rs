//! The run registry: threads (with the loop each holds), runs (with their event logs for
//! replay), and how a `RunAgentInput` becomes a run.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use mux_orchestrator::runs::{RunOwner, RunRecord, RunStatus, RunStore, RunStoreError, Takeover};
use mux_orchestrator::{Answer, LoopError, LoopInput};

use mux_orchestrator::session::{
    ID_RULE, Session, SessionError, SessionMeta, SessionStore, valid_id,
};
use mux_orchestrator::{Agent, ConversationBuilder};
use mux_tool::Registry;

use crate::buffer::{Ending, RunBuffer};
use crate::config::{DoubleTexting, WebConfig};
use crate::durable::{self, Durable, parse_store_id, store_id};
use crate::error::{ErrorCode, WebError};
use crate::frontend::FrontendTool;
use crate::history;
use crate::ownership::{Owner, Owners};
use crate::security::{Principal, Probes};
use crate::thread::{LiveLoop, Prefill, Resumed, Thread};
use crate::translate::Translator;
use crate::types::{Event, Message, PROTOCOL_VERSION, ResumeEntry, RunAgentInput};

/// Opens a thread's conversation: an [`Agent`] does (the documented way), and so does any
/// `Fn(Registry) -> ConversationBuilder` (a conversation of an agent the closure picks).
///
/// `frontend` holds the run's frontend tools (those the page offers in `RunAgentInput.tools`).
/// An [`Agent`] adds them to its own, replacing a tool of the same name; a closure adds them
/// itself ([`ConversationBuilder::add_tools`], or `Agent::conversation_with`). The web face
/// then sets the session store and a cancellation token, and resumes the thread's session.
pub trait AgentFactory: Send + Sync + 'static {
    /// A builder for one loop run on a thread, or why there is none.
    fn builder(&self, frontend: Registry) -> Result<ConversationBuilder, String>;

    /// Where threads are kept when the router is given no store: the agent's session store,
    /// if it has one.
    fn session_store(&self) -> Option<Arc<dyn SessionStore>> {
        None
    }

    /// Where runs are kept when the router is given no run store: the agent's, if it has one.
    fn run_store(&self) -> Option<Arc<dyn mux_orchestrator::runs::RunStore>> {
        None
    }
}

impl AgentFactory for Agent {
    fn builder(&self, frontend: Registry) -> Result<ConversationBuilder, String> {
        let builder = self
            .conversation_at(self.root())
            .map_err(|err| err.to_string())?;
        Ok(builder.add_tools(&frontend))
    }

    fn session_store(&self) -> Option<Arc<dyn SessionStore>> {
        Agent::session_store(self).cloned()
    }

    fn run_store(&self) -> Option<Arc<dyn mux_orchestrator::runs::RunStore>> {
        Agent::run_store(self).cloned()
    }
}

impl<F> AgentFactory for F
where
    F: Fn(Registry) -> ConversationBuilder + Send + Sync + 'static,
{
    fn builder(&self, frontend: Registry) -> Result<ConversationBuilder, String> {
        Ok(self(frontend))
    }
}

/// Resolves once a new loop's prompt is stored, or the session store could not write it (see
/// [`RunHandle::prompt_written`](mux_orchestrator::RunHandle::prompt_written)).
type PromptStored = std::pin::Pin<Box<dyn std::future::Future<Output = Option<bool>> + Send>>;

/// A run's key: run ids are per principal, so one principal cannot see, or learn of,
/// another's runs.
type RunKey = (Principal, String);

/// How a loop starts on a thread's session.
enum Start {
    /// With the user's prompt, on the thread's session.
    Prompt(String, ThreadSession),
    /// Continuing the session's open turn (a paused run resumed, or a run taken over),
    /// with answers to pending approvals by call id.
    Resume(Vec<(String, Answer)>),
}

/// What the owner check found: `principal`'s thread, or a new one the store did not have when
/// asked.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Claimed {
    Owned,
    New,
}

/// A thread's session as a new run finds it.
enum ThreadSession {
    /// Stored, and loaded.
    Loaded(Session),
    /// Not stored yet: the loop's first write creates it with this metadata.
    New(SessionMeta),
}

/// Threads and runs.
pub(crate) struct RunRegistry {
    factory: Arc<dyn AgentFactory>,
    store: Arc<dyn SessionStore>,
    pub(crate) config: WebConfig,
    pub(crate) durable: Durable,
    threads: Mutex<HashMap<String, Arc<Thread>>>,
    runs: Mutex<HashMap<RunKey, (Arc<RunBuffer>, Instant)>>,
    owners: Owners,
    pub(crate) probes: Arc<Probes>,
    /// When ended runs were last deleted from the run store.
    pruned: Mutex<Option<Instant>>,
    /// When this process last swept its runs and threads.
    swept: Mutex<Option<Instant>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn run_store_error(err: RunStoreError) -> WebError {
    WebError::RunStore(err.to_string())
}

impl Drop for RunRegistry {
    fn drop(&mut self) {
        // The router is gone: its writers stop renewing, its loops stop where they are (as
        // in a process that ended), and other processes take the runs over.
        self.durable.owner.stop();
        for thread in lock(&self.threads).values() {
            thread.abort();
        }
    }
}

/// The runs of processes that stopped, taken over by this registry's run owner.
impl Takeover for RunRegistry {
    fn continue_run(&self, record: RunRecord) -> mux_tool::BoxFuture<'_, ()> {
        Box::pin(self.continue_taken_run(record))
    }
}

impl RunRegistry {
    pub(crate) fn new(
        factory: Arc<dyn AgentFactory>,
        store: Arc<dyn SessionStore>,
        runs: Arc<dyn RunStore>,
        config: WebConfig,
    ) -> Self {
        let probes = Arc::new(Probes::new(config.probe_limit));
        Self {
            owners: Owners::new(Arc::clone(&store)),
            durable: Durable {
                owner: RunOwner::new(
                    runs,
                    "web",
                    durable::PREFIX,
                    config.lease,
                    tokio_util::sync::CancellationToken::new(),
                ),
            },
            factory,
            store,
            config,
            threads: Mutex::default(),
            runs: Mutex::default(),
            probes,
            pruned: Mutex::default(),
            swept: Mutex::default(),
        }
    }

    /// Starts the run owner's watch: runs of stopped processes are taken over and continued
    /// here ([`Takeover`]); it ends with the registry.
    pub(crate) fn watch_runs(self: &Arc<Self>) {
        self.durable.owner.watch(Arc::downgrade(self));
    }

    /// Continues `record`, a run the owner took over from a process that stopped: its
    /// events go on after the last stored one; its loop resumes at the session's last step.
    async fn continue_taken_run(&self, record: RunRecord) {
        let durable = &self.durable;
        let Some((principal, run_id)) = parse_store_id(&record.run_id) else {
            let _ = durable
                .owner
                .store()
                .set_status(&record.run_id, durable.owner.id(), RunStatus::Failed)
                .await;
            return;
        };
        tracing::info!(run = %run_id, thread = %record.session_id, "taking over a run whose owner stopped");
        let last = durable
            .owner
            .store()
            .events_after(&record.run_id, record.last_seq.saturating_sub(1), 1)
            .await
            .unwrap_or_default();
        // The page's frontend tools, stored after `RUN_STARTED`.
        let frontend = durable
            .owner
            .store()
            .events_after(&record.run_id, 0, 2)
            .await
            .unwrap_or_default()
            .iter()
            .find_map(durable::frontend_tools_of)
            .unwrap_or_default();
        if let Some(ending) = last.first().and_then(durable::ending_of) {
            // Its events are complete; only the status was not set.
            let status = match ending {
                Ending::Finished => RunStatus::Finished,
                Ending::Cancelled => RunStatus::Cancelled,
                Ending::Failed => RunStatus::Failed,
                // The session holds what it waits for; a resume rebuilds it.
                Ending::Paused => RunStatus::Paused,
            };
            let _ = durable
                .owner
                .store()
                .set_status(&record.run_id, durable.owner.id(), status)
                .await;
            return;
        }
        let thread_id = record.session_id.clone();
        let thread = self.thread(&thread_id);
        let run = RunBuffer::stored(&thread_id, &run_id, record.last_seq);
        lock(&self.runs).insert(
            (principal.clone(), run_id.clone()),
            (Arc::clone(&run), Instant::now()),
        );
        thread.attach(&run);
        thread.prefill(HashMap::new());
        durable.keep(record.run_id.clone(), Arc::clone(&run), Arc::clone(&thread));
        run.push([crate::translate::custom(
            "run_taken_over",
            serde_json::json!({"runId": run_id}),
        )]);
        let prefix = format!("{run_id}-{}", record.last_seq);
        if let Err((code, message)) = self
            .build_loop(&thread, &prefix, frontend, Start::Resume(Vec::new()))
            .await
        {
            if code == ErrorCode::Loop(LoopError::NothingToResume.kind().into()) {
                run.push([finished(&thread_id, &run_id)]);
            } else {
                fail(&run, code, message);
            }
            thread.detach(&run);
        }
    }

    /// Where `run`'s events are read once this process stops writing it: the run store and
    /// its id there (none for a run kept only here).
    pub(crate) fn stored_of(
        &self,
        principal: &Principal,
        run: &RunBuffer,
    ) -> Option<(Arc<dyn RunStore>, String)> {
        run.is_stored().then(|| {
            (
                Arc::clone(self.durable.owner.store()),
                durable::store_id(principal, &run.run_id),
            )
        })
    }

    /// A kept run of `principal`'s, if this process keeps it.
    pub(crate) fn local_run(&self, principal: &Principal, run_id: &str) -> Option<Arc<RunBuffer>> {
        let key = (principal.clone(), run_id.to_owned());
        lock(&self.runs).get(&key).map(|(run, _)| Arc::clone(run))
    }

    /// `principal`'s run `run_id` as the run store has it (any process's); a miss counts
    /// against its probe limit.
    pub(crate) async fn stored_run(
        &self,
        principal: &Principal,
        run_id: &str,
    ) -> Result<String, WebError> {
        let id = store_id(principal, run_id);
        match self.durable.owner.store().get(&id).await {
            Ok(_) => Ok(id),
            Err(RunStoreError::NotFound(_)) => {
                self.probes.miss(principal);
                Err(WebError::RunNotFound(run_id.to_owned()))
            }
            Err(err) => Err(run_store_error(err)),
        }
    }

    /// Refuses a thread that exists and belongs to another principal, as if it did not exist
    /// (a miss). With `claim`, a new thread becomes `principal`'s; without, an unknown thread
    /// is a miss too. Says whether the store had the thread when asked.
    async fn check_owner(
        &self,
        principal: &Principal,
        thread_id: &str,
        claim: bool,
    ) -> Result<Claimed, WebError> {
        let not_found = || {
            self.probes.miss(principal);
            WebError::ThreadNotFound(thread_id.to_owned())
        };
        let owner = match self.owners.lookup(thread_id).await? {
            Owner::Known(owner) if owner == *principal => return Ok(Claimed::Owned),
            // A refusal is the store's to make: a cached owner may be a stale claim.
            Owner::Known(_) => self.owners.reload(thread_id).await?,
            Owner::NotStored => Owner::NotStored,
        };
        match owner {
            Owner::Known(owner) if owner == *principal => Ok(Claimed::Owned),
            Owner::Known(_) => Err(not_found()),
            Owner::NotStored if claim && self.owners.claim(thread_id, principal) => {
                Ok(Claimed::New)
            }
            Owner::NotStored => Err(not_found()),
        }
    }

    fn thread(&self, id: &str) -> Arc<Thread> {
        let mut threads = lock(&self.threads);
        Arc::clone(threads.entry(id.to_owned()).or_insert_with(|| {
            Thread::new(id, self.config.interrupt_timeout, self.config.pause_grace)
        }))
    }

    /// Forgets finished runs older than the replay retention, and threads idle for as long
    /// (their answered and expired interrupt ids go with them; the history stays in the store).
    /// A sweep reads every run and thread here, so it runs at most four times per retention and
    /// at least every second, not on every request.
    fn sweep(&self) {
        let retention = self.config.replay_retention;
        if !due(&self.swept, (retention / 4).min(Duration::from_secs(1))) {
            return;
        }
        // An ended run the store has replays from there: its copy here goes at once.
        lock(&self.runs).retain(|_, (run, started)| {
            !run.is_done() || (!run.is_stored() && started.elapsed() < retention)
        });
        // A thread another request holds (about to attach a run) is kept.
        let mut threads = lock(&self.threads);
        threads
            .retain(|_, thread| Arc::strong_count(thread) > 1 || !thread.is_forgettable(retention));
        self.owners.forget_unless(|id| threads.contains_key(id));
    }

    /// Deletes runs that ended longer than the replay retention ago from the run store (at
    /// most four times per retention, and every ten seconds at most).
    async fn prune(&self) {
        let retention = self.config.replay_retention;
        if !due(&self.pruned, (retention / 4).min(Duration::from_secs(10))) {
            return;
        }
        if let Err(err) = self.durable.owner.store().forget_ended(retention).await {
            tracing::warn!("forgetting ended runs: {err}");
        }
    }

    /// A thread's stored messages and its unanswered interrupts, for a page that reloads.
    pub(crate) async fn history(
        &self,
        principal: &Principal,
        thread_id: &str,
    ) -> Result<(Vec<Message>, Vec<crate::types::Interrupt>), WebError> {
        if !valid_id(thread_id) {
            return Err(WebError::BadRequest(format!(
                "threadId `{thread_id}` must be {ID_RULE}"
            )));
        }
        self.check_owner(principal, thread_id, false).await?;
        let messages = match self.store.load(thread_id).await {
            Ok(session) => history::snapshot(thread_id, &session.messages),
            Err(SessionError::NotFound(_)) => Vec::new(),
            Err(e) => return Err(WebError::Session(e.to_string())),
        };
        let thread = lock(&self.threads).get(thread_id).cloned();
        let mut interrupts = thread.map(|t| t.open_interrupts()).unwrap_or_default();
        if interrupts.is_empty()
            && let Some(paused) = self.paused_run(thread_id).await?
        {
            interrupts = self
                .durable
                .waits(&paused.run_id)
                .await
                .map_err(run_store_error)?
                .interrupts;
        }
        Ok((messages, interrupts))
    }

    /// The thread's run paused in the run store (evicted here, or paused by another process).
    async fn paused_run(&self, thread_id: &str) -> Result<Option<RunRecord>, WebError> {
        let active = self
            .durable
            .owner
            .store()
            .active_run(thread_id)
            .await
            .map_err(run_store_error)?;
        Ok(active.filter(|run| run.status == RunStatus::Paused))
    }

    /// Stops the loop behind `run_id`, on whichever process runs it: the model stream, the
    /// tools and their processes. A paused run is cancelled in the run store.
    pub(crate) async fn cancel(
        &self,
        principal: &Principal,
        run_id: &str,
    ) -> Result<bool, WebError> {
        if let Some(run) = self.local_run(principal, run_id) {
            let thread = lock(&self.threads).get(&run.thread_id).cloned();
            if let Some(thread) = thread {
                match thread.busy_with() {
                    Some(current) if current == run.run_id => return Ok(thread.cancel()),
                    None if run.is_done() && thread.is_live() => return Ok(thread.cancel()),
                    _ => {}
                }
            }
        }
        let id = self.stored_run(principal, run_id).await?;
        self.cancel_stored(&id).await
    }

    /// Cancels a stored run: a running one through its owner (who sees the request at its
    /// next look), a paused one here. A paused run's open calls get their results in its
    /// thread's session first ([`mux_orchestrator::settle_open_turn`]): the next prompt on
    /// the thread follows a closed turn.
    async fn cancel_stored(&self, id: &str) -> Result<bool, WebError> {
        let store = self.durable.owner.store();
        let record = store.get(id).await.map_err(run_store_error)?;
        match record.status {
            RunStatus::Running => {
                store.request_cancel(id).await.map_err(run_store_error)?;
                if self.durable.owner.holds(id) {
                    // Ours: cancel it now rather than at the writer's next look.
                    let thread = lock(&self.threads).get(&record.session_id).cloned();
                    if let Some(thread) = thread {
                        thread.cancel();
                    }
                }
                Ok(true)
            }
            RunStatus::Paused => {
                match self.durable.owner.claim(id).await {
                    Ok(_) => {
                        // Held here: no loop runs on the session. Should the store fail, the
                        // next run's prompt leaves the open calls behind just the same.
                        let settled =
                            mux_orchestrator::settle_open_turn(&*self.store, &record.session_id)
                                .await;
                        if let Err(err) = settled {
                            tracing::warn!(
                                thread = %record.session_id,
                                "settling the open calls of a cancelled run: {err}"
                            );
                        }
                        store
                            .set_status(id, self.durable.owner.id(), RunStatus::Cancelled)
                            .await
                            .map_err(run_store_error)?;
                        Ok(true)
                    }
                    // Resumed or cancelled meanwhile.
                    Err(RunStoreError::Held { .. }) => Ok(false),
                    Err(err) => Err(run_store_error(err)),
                }
            }
            _ => Ok(false),
        }
    }

    /// Starts (or resumes) a run; its events fill the returned buffer.
    pub(crate) async fn start(
        &self,
        principal: &Principal,
        input: RunAgentInput,
    ) -> Result<Arc<RunBuffer>, WebError> {
        for (what, id) in [("threadId", &input.thread_id), ("runId", &input.run_id)] {
            if !valid_id(id) {
                return Err(WebError::BadRequest(format!(
                    "{what} `{id}` must be {ID_RULE}"
                )));
            }
        }
        self.sweep();
        self.prune().await;
        let claimed = self.check_owner(principal, &input.thread_id, true).await?;
        let thread = self.thread(&input.thread_id);
        let key = (principal.clone(), input.run_id.clone());
        if lock(&self.runs).contains_key(&key) {
            return Err(WebError::RunExists(input.run_id));
        }
        let tool_results: Vec<(String, String)> = input
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::Tool {
                    tool_call_id,
                    content,
                    ..
                } => Some((tool_call_id.clone(), content.text())),
                _ => None,
            })
            .collect();
        let resume = input.resume.clone().unwrap_or_default();
        let id = store_id(principal, &input.run_id);

        if thread.is_live() && (!resume.is_empty() || thread.delivers(&tool_results)) {
            return self
                .resume_live(principal, &thread, &input, &resume, tool_results, id)
                .await;
        }
        if (!resume.is_empty() || !tool_results.is_empty())
            && let Some(paused) = self.paused_run(&input.thread_id).await?
        {
            let waiting = self
                .durable
                .waits(&paused.run_id)
                .await
                .map_err(run_store_error)?;
            let delivers = tool_results
                .iter()
                .any(|(call, _)| waiting.frontend.contains(call));
            if !resume.is_empty() || delivers {
                let stored = (paused, waiting);
                return self
                    .resume_stored(
                        principal,
                        &thread,
                        &input,
                        &resume,
                        tool_results,
                        stored,
                        id,
                    )
                    .await;
            }
        }
        if !resume.is_empty() {
            // Nothing is paused here or in the store: the ids are expired, answered, unknown,
            // or held by another process's loop (one with a call still running).
            let run = RunBuffer::local(&input.thread_id, &input.run_id);
            run.push([started(&input)]);
            lock(&self.runs).insert(key, (Arc::clone(&run), Instant::now()));
            if self.held_elsewhere(&input.thread_id, &resume).await {
                fail(
                    &run,
                    ErrorCode::InterruptHeldElsewhere,
                    "the loop waiting for this answer is held by another process: send the \
                     answer there (route the thread to it), or wait until it is taken over"
                        .into(),
                );
                return Ok(run);
            }
            match thread.check(&resume) {
                Err((code, message)) => {
                    if code == ErrorCode::UnknownInterrupt {
                        self.probes.miss(principal);
                    }
                    fail(&run, code, message);
                }
                // Every entry named an expired interrupt, and the loop has gone on without
                // an answer: show what happened instead of running again.
                Ok(()) => self.expired(&run, &input, &resume).await,
            }
            return Ok(run);
        }

        let at_once = self
            .begin(principal, &input.thread_id, &input.run_id, &id)
            .await?;
        let run = RunBuffer::stored(&input.thread_id, &input.run_id, 0);
        self.hold(&key, &id, &thread, &run);
        run.push(opening(&input));
        // A thread the store did not have, with no run on it since: its session is new (were
        // it made meanwhile, the loop's first write would fail rather than write into it).
        let new = claimed == Claimed::New && at_once;
        match self.new_loop(principal, &thread, &run, &input, new).await {
            // The prompt is acknowledged (the stream opens) once it is stored: a loop that
            // pauses, is cancelled or is taken over afterwards finds it in the session.
            Ok(stored) => match stored.await {
                // The session store could not write the prompt: nothing is acknowledged.
                // The loop stops, the run ends failed, and the request is answered 503.
                Some(false) => {
                    let cause = "the session store did not take the run's prompt";
                    tracing::warn!(
                        thread = %input.thread_id,
                        run = %input.run_id,
                        "refusing the run: {cause}"
                    );
                    thread.abort();
                    fail(&run, ErrorCode::RunStore, format!("{cause}; send it again"));
                    thread.detach(&run);
                    lock(&self.runs).remove(&key);
                    return Err(WebError::Session(cause.into()));
                }
                Some(true) => {}
                None => tracing::warn!(
                    thread = %input.thread_id,
                    run = %input.run_id,
                    "the run ended before its prompt was stored"
                ),
            },
            Err((code, message)) => {
                fail(&run, code, message);
                thread.detach(&run);
            }
        }
        Ok(run)
    }

    /// Whether another process holds a loop (in memory, holding its run) that waits for an
    /// interrupt of `resume`.
    async fn held_elsewhere(&self, thread_id: &str, resume: &[ResumeEntry]) -> bool {
        let durable = &self.durable;
        let Ok(Some(active)) = durable.owner.store().active_run(thread_id).await else {
            return false;
        };
        if active.status != RunStatus::Running
            || active.owner.as_deref() == Some(durable.owner.id())
        {
            return false;
        }
        let Ok(waiting) = durable.waits(&active.run_id).await else {
            return false;
        };
        resume.iter().any(|entry| {
            waiting
                .interrupts
                .iter()
                .any(|i| i.id == entry.interrupt_id)
        })
    }

    /// Registers a run this process now holds in the run store, attaches it to its thread
    /// and starts its writer.
    fn hold(&self, key: &RunKey, id: &str, thread: &Arc<Thread>, run: &Arc<RunBuffer>) {
        lock(&self.runs).insert(key.clone(), (Arc::clone(run), Instant::now()));
        thread.attach(run);
        self.durable
            .keep(id.to_owned(), Arc::clone(run), Arc::clone(thread));
    }

    /// Begins `run_id` on the thread in the run store, applying the double-texting strategy
    /// when the thread has a run in progress; says whether it began at once.
    async fn begin(
        &self,
        principal: &Principal,
        thread_id: &str,
        run_id: &str,
        id: &str,
    ) -> Result<bool, WebError> {
        let durable = &self.durable;
        let waited = tokio::time::Instant::now();
        let mut cancelled = false;
        let mut tries = 0_u32;
        loop {
            tries += 1;
            let busy = match durable.owner.begin(thread_id, id).await {
                Ok(_) => return Ok(tries == 1),
                Err(RunStoreError::Exists(_)) => return Err(WebError::RunExists(run_id.into())),
                Err(RunStoreError::Busy { run_id: active, .. }) => active,
                Err(err) => return Err(run_store_error(err)),
            };
            let record = match durable.owner.store().get(&busy).await {
                Ok(record) => record,
                // Ended between the two reads: try again.
                Err(RunStoreError::NotFound(_)) => continue,
                Err(err) => return Err(run_store_error(err)),
            };
            let strategy = self.config.double_texting;
            // A loop held here waits for a question's answer or a frontend result.
            let held = lock(&self.threads)
                .get(thread_id)
                .filter(|thread| thread.is_live() && thread.busy_with().is_none())
                .map(|thread| thread.pending_interrupts());
            if let Some(interrupt_ids) = held.filter(|_| strategy != DoubleTexting::Interrupt) {
                return Err(WebError::InterruptPending {
                    thread_id: thread_id.to_owned(),
                    interrupt_ids,
                });
            }
            let paused = record.status == RunStatus::Paused;
            if paused && strategy != DoubleTexting::Interrupt {
                let interrupt_ids = durable
                    .waits(&busy)
                    .await
                    .map_err(run_store_error)?
                    .interrupts
                    .into_iter()
                    .map(|i| i.id)
                    .collect();
                return Err(WebError::InterruptPending {
                    thread_id: thread_id.to_owned(),
                    interrupt_ids,
                });
            }
            let thread_busy = || {
                let shown = parse_store_id(&busy)
                    .filter(|(owner, _)| owner == principal)
                    .map(|(_, run)| run)
                    .unwrap_or_default();
                WebError::ThreadBusy {
                    thread_id: thread_id.to_owned(),
                    run_id: shown,
                }
            };
            let limit = match strategy {
                DoubleTexting::Reject => return Err(thread_busy()),
                DoubleTexting::Enqueue => self.config.interrupt_timeout,
                DoubleTexting::Interrupt => {
                    if !cancelled {
                        cancelled = true;
                        self.cancel_stored(&busy).await?;
                    }
                    // The owner sees the cancel within a heartbeat; a dead one's run is
                    // taken over once it may be.
                    durable.owner.settle_within()
                }
            };
            if waited.elapsed() >= limit {
                return Err(thread_busy());
            }
            durable
                .owner
                .store()
                .changed(
                    &busy,
                    durable
                        .owner
                        .poll_interval()
                        .min(Duration::from_millis(500)),
                )
                .await;
        }
    }

    /// Resumes the loop this process holds in memory (it waits for a question's answer or
    /// a frontend tool's result, or has not been evicted yet).
    async fn resume_live(
        &self,
        principal: &Principal,
        thread: &Arc<Thread>,
        input: &RunAgentInput,
        resume: &[ResumeEntry],
        tool_results: Vec<(String, String)>,
        id: String,
    ) -> Result<Arc<RunBuffer>, WebError> {
        let key = (principal.clone(), input.run_id.clone());
        if let Some(run_id) = thread.busy_with() {
            return Err(WebError::ThreadBusy {
                thread_id: input.thread_id.clone(),
                run_id,
            });
        }
        let local_error = |code: ErrorCode, message: String| {
            let run = RunBuffer::local(&input.thread_id, &input.run_id);
            run.push([started(input)]);
            fail(&run, code, message);
            lock(&self.runs).insert(key.clone(), (Arc::clone(&run), Instant::now()));
            run
        };
        if let Err((code, message)) = thread.check(resume) {
            if code == ErrorCode::UnknownInterrupt {
                self.probes.miss(principal);
            }
            return Ok(local_error(code, message));
        }
        let durable = &self.durable;
        let Some(active) = durable
            .owner
            .store()
            .active_run(&input.thread_id)
            .await
            .map_err(run_store_error)?
        else {
            return Ok(local_error(
                ErrorCode::RunStore,
                "the paused run is no longer in the run store".into(),
            ));
        };
        match durable.owner.hand_over(&active.run_id, &id).await {
            Ok(_) => {}
            Err(RunStoreError::Exists(_)) => return Err(WebError::RunExists(input.run_id.clone())),
            Err(RunStoreError::Held { .. }) => {
                return Err(WebError::ThreadBusy {
                    thread_id: input.thread_id.clone(),
                    run_id: String::new(),
                });
            }
            Err(err) => return Err(run_store_error(err)),
        }
        let run = RunBuffer::stored(&input.thread_id, &input.run_id, 0);
        lock(&self.runs).insert(key, (Arc::clone(&run), Instant::now()));
        self.durable.keep(id, Arc::clone(&run), Arc::clone(thread));
        run.push(opening(input));
        match thread.resume(&run, resume, tool_results).await {
            Ok(Resumed::Continued) => {}
            Ok(Resumed::NotPaused) => {
                // The loop ended between the check and the resume.
                run.push([finished(&input.thread_id, &input.run_id)]);
            }
            Err((code, message)) => fail(&run, code, message),
        }
        Ok(run)
    }

    /// Resumes a run paused in the run store (evicted here, or paused by a process that may
    /// have stopped since): claims it, rebuilds its loop from the session and answers its
    /// approvals.
    #[allow(clippy::too_many_arguments)]
    async fn resume_stored(
        &self,
        principal: &Principal,
        thread: &Arc<Thread>,
        input: &RunAgentInput,
        resume: &[ResumeEntry],
        tool_results: Vec<(String, String)>,
        (paused, waiting): (RunRecord, durable::Waiting),
        id: String,
    ) -> Result<Arc<RunBuffer>, WebError> {
        let durable = &self.durable;
        let key = (principal.clone(), input.run_id.clone());
        let open = waiting.interrupts;
        let mut answers = Vec::new();
        let mut expired = Vec::new();
        // Frontend results and question answers wait for the rebuilt loop's calls.
        let mut prefills: HashMap<String, Prefill> = tool_results
            .into_iter()
            .map(|(call, content)| (call, Prefill::Result(content)))
            .collect();
        for entry in resume {
            let found = open.iter().find(|i| i.id == entry.interrupt_id);
            let Some(interrupt) = found else {
                let run = RunBuffer::local(&input.thread_id, &input.run_id);
                run.push([started(input)]);
                let (code, message) = match thread.check(std::slice::from_ref(entry)) {
                    Err(refusal) => refusal,
                    Ok(()) => (
                        ErrorCode::UnknownInterrupt,
                        format!(
                            "thread `{}` has no interrupt `{}`",
                            input.thread_id, entry.interrupt_id
                        ),
                    ),
                };
                if code == ErrorCode::UnknownInterrupt {
                    self.probes.miss(principal);
                }
                fail(&run, code, message);
                lock(&self.runs).insert(key, (Arc::clone(&run), Instant::now()));
                return Ok(run);
            };
            let call_id = interrupt.tool_call_id.clone().unwrap_or_default();
            let late = interrupt
                .expires_at
                .as_deref()
                .is_some_and(crate::expiry::is_past);
            if late {
                expired.push(interrupt.id.clone());
            }
            if interrupt.reason != "tool_call" {
                let text = if late {
                    "(no answer: the question expired)".to_owned()
                } else {
                    let payload = entry.payload.clone().unwrap_or(serde_json::Value::Null);
                    crate::thread::reply(&entry.status, &payload)
                };
                prefills.insert(call_id, Prefill::Answer(text));
                continue;
            }
            let answer = if late {
                Answer::Deny {
                    reason: "the approval expired: nobody answered in time".into(),
                }
            } else {
                match crate::thread::approval(
                    &call_id,
                    entry,
                    crate::types::offers_always(interrupt),
                ) {
                    LoopInput::ToolApproval { answer, .. } => answer,
                    _ => Answer::Deny {
                        reason: "the user denied this call".into(),
                    },
                }
            };
            answers.push((call_id, answer));
        }
        match durable.owner.hand_over(&paused.run_id, &id).await {
            Ok(_) => {}
            Err(RunStoreError::Exists(_)) => return Err(WebError::RunExists(input.run_id.clone())),
            Err(RunStoreError::Held { .. } | RunStoreError::NotFound(_)) => {
                // Another request resumed it first.
                let run = RunBuffer::local(&input.thread_id, &input.run_id);
                run.push([started(input)]);
                fail(
                    &run,
                    ErrorCode::InterruptAlreadyAnswered,
                    "the interrupt was answered already".into(),
                );
                lock(&self.runs).insert(key, (Arc::clone(&run), Instant::now()));
                return Ok(run);
            }
            Err(err) => return Err(run_store_error(err)),
        }
        thread.answered(resume.iter().map(|e| e.interrupt_id.clone()));
        thread.prefill(prefills);
        let run = RunBuffer::stored(&input.thread_id, &input.run_id, 0);
        self.hold(&key, &id, thread, &run);
        run.push(opening(input));
        if !expired.is_empty() {
            run.push([crate::translate::custom(
                "interrupt_expired",
                serde_json::json!({"interruptIds": expired}),
            )]);
        }
        if let Err((code, message)) = self
            .build_loop(
                thread,
                &input.run_id,
                input.tools.clone(),
                Start::Resume(answers),
            )
            .await
        {
            fail(&run, code, message);
            thread.detach(&run);
        }
        Ok(run)
    }

    /// Ends a run that resumed only expired interrupts: the history (with the denials that
    /// say they expired) and a success.
    async fn expired(&self, run: &RunBuffer, input: &RunAgentInput, resume: &[ResumeEntry]) {
        let messages = match self.store.load(&input.thread_id).await {
            Ok(session) => history::snapshot(&input.thread_id, &session.messages),
            Err(e) => return fail(run, ErrorCode::Session, e.to_string()),
        };
        let ids: Vec<&str> = resume.iter().map(|r| r.interrupt_id.as_str()).collect();
        run.push([
            Event::MessagesSnapshot { messages },
            crate::translate::custom(
                "interrupt_expired",
                serde_json::json!({"interruptIds": ids}),
            ),
            finished(&input.thread_id, &input.run_id),
        ]);
    }

    /// Starts a loop run on the thread's session with the input's last user message; what
    /// resolves once the prompt is stored.
    async fn new_loop(
        &self,
        principal: &Principal,
        thread: &Arc<Thread>,
        run: &Arc<RunBuffer>,
        input: &RunAgentInput,
        new: bool,
    ) -> Result<PromptStored, (ErrorCode, String)> {
        let Some((user_id, prompt)) = input.messages.iter().rev().find_map(|m| match m {
            Message::User { id, content } => Some((id.clone(), content.text())),
            _ => None,
        }) else {
            return Err((
                ErrorCode::NoUserMessage,
                "the request has no user message to answer".into(),
            ));
        };
        let prompt = with_context(prompt, input);

        let fresh = || {
            let mut meta = SessionMeta::new();
            meta.id = input.thread_id.clone();
            crate::ownership::record(&mut meta, principal);
            ThreadSession::New(meta)
        };
        let session = if new {
            fresh()
        } else {
            match self.store.load(&input.thread_id).await {
                // The owner check passed on a cached or an absent owner; the stored one decides.
                Ok(session) if !crate::ownership::owns(&session.meta, principal) => {
                    return Err((
                        ErrorCode::Session,
                        format!("thread `{}` was not found", input.thread_id),
                    ));
                }
                Ok(session) => ThreadSession::Loaded(session),
                Err(SessionError::NotFound(_)) => fresh(),
                Err(e) => return Err((ErrorCode::Session, e.to_string())),
            }
        };
        if let ThreadSession::Loaded(session) = &session
            && !session.messages.is_empty()
        {
            let mut messages = history::snapshot(&input.thread_id, &session.messages);
            messages.push(Message::User {
                id: user_id,
                content: crate::types::UserContent::Text(prompt.clone()),
            });
            run.push([Event::MessagesSnapshot { messages }]);
        }
        if let Some(todos) = thread.todos() {
            run.push([Event::StateSnapshot {
                snapshot: serde_json::json!({ crate::translate::TODOS: todos }),
            }]);
        }
        self.build_loop(
            thread,
            &input.run_id,
            input.tools.clone(),
            Start::Prompt(prompt, session),
        )
        .await
    }

    /// Builds the thread's loop from its stored session and starts it: with a prompt, or
    /// continuing its open turn. Returns what resolves once the prompt is stored (false at
    /// the run's end for a run continued without one).
    async fn build_loop(
        &self,
        thread: &Arc<Thread>,
        prefix: &str,
        frontend: Vec<crate::types::Tool>,
        start: Start,
    ) -> Result<PromptStored, (ErrorCode, String)> {
        let tools = Registry::new();
        for tool in &frontend {
            let tool = FrontendTool::new(tool, thread, self.config.interrupt_timeout)
                .map_err(|e| (ErrorCode::InvalidTool, e))?;
            tools
                .register(tool)
                .map_err(|e| (ErrorCode::InvalidTool, e.to_string()))?;
        }
        let cancel = tokio_util::sync::CancellationToken::new();
        let builder = self
            .factory
            .builder(tools)
            .map_err(|e| (ErrorCode::Loop("agent_setup".into()), e))?
            .stored_in(Arc::clone(&self.store))
            // A prompt the store did not take is refused (503), so it must not stay behind.
            .reconfigure(|config| config.prompts_need_store(true))
            .cancellation(cancel.clone());
        let (orchestrator, started) = match start {
            Start::Prompt(prompt, session) => {
                let orchestrator = match session {
                    ThreadSession::Loaded(session) => builder.resume_session(session),
                    ThreadSession::New(meta) => builder.build_session(meta),
                };
                let started = orchestrator.run(prompt);
                (orchestrator, started)
            }
            Start::Resume(answers) => {
                let orchestrator = builder
                    .resume(&thread.id)
                    .await
                    .map_err(|e| (ErrorCode::Session, e.to_string()))?;
                let started = orchestrator.resume_run(answers);
                (orchestrator, started)
            }
        };
        let started = started.map_err(|e| (ErrorCode::Loop(e.kind().into()), e.to_string()))?;
        let stored = Box::pin(started.handle.prompt_written());
        let translator = Translator::new(prefix, thread.todos(), orchestrator.tools().clone());
        let live = LiveLoop::new(
            started.input,
            cancel,
            translator,
            orchestrator.config().model.clone(),
            started.handle,
        );
        thread.start_loop(live, started.events);
        Ok(stored)
    }
}

/// Whether `every` has passed since `last` (then `last` becomes now), or it is the first time.
fn due(last: &Mutex<Option<Instant>>, every: Duration) -> bool {
    let mut last = lock(last);
    if last.is_some_and(|at| at.elapsed() < every) {
        return false;
    }
    *last = Some(Instant::now());
    true
}

/// The opening event of `input`'s run.
/// A stored run's first events: `RUN_STARTED`, then the page's frontend tools (if it
/// offers any), so a process that takes the run over offers them to the loop again.
fn opening(input: &RunAgentInput) -> Vec<Event> {
    let mut events = vec![started(input)];
    if !input.tools.is_empty() {
        events.push(durable::frontend_tools_event(&input.tools));
    }
    events
}

fn started(input: &RunAgentInput) -> Event {
    Event::RunStarted {
        thread_id: input.thread_id.clone(),
        run_id: input.run_id.clone(),
        protocol_version: Some(PROTOCOL_VERSION.into()),
    }
}

/// A success with nothing pending.
fn finished(thread_id: &str, run_id: &str) -> Event {
    Event::RunFinished {
        thread_id: thread_id.to_owned(),
        run_id: run_id.to_owned(),
        result: None,
        outcome: crate::types::Outcome::Success {
            pending_tool_call_ids: Vec::new(),
        },
        usage: Vec::new(),
    }
}

/// The prompt with the run's context entries appended.
fn with_context(prompt: String, input: &RunAgentInput) -> String {
    if input.context.is_empty() {
        return prompt;
    }
    let mut out = prompt;
    out.push_str("\n\nContext from the application:");
    for entry in &input.context {
        out.push_str(&format!("\n- {}: {}", entry.description, entry.value));
    }
    out
}

fn fail(run: &RunBuffer, code: ErrorCode, message: String) {
    run.push([Event::RunError {
        message,
        code: Some(code.as_str().to_owned()),
    }]);
}
