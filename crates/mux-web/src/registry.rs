//! The run registry: threads (with the loop each holds), runs (with their event logs for
//! replay), and how a `RunAgentInput` becomes a run.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use mux_orchestrator::session::{ID_RULE, SessionError, SessionMeta, SessionStore, valid_id};
use mux_orchestrator::{Agent, OrchestratorBuilder};
use mux_tool::Registry;

use crate::buffer::RunBuffer;
use crate::config::WebConfig;
use crate::error::{ErrorCode, WebError};
use crate::frontend::FrontendTool;
use crate::history;
use crate::ownership::Owners;
use crate::security::{Principal, Probes};
use crate::thread::{LiveLoop, Resumed, Thread};
use crate::translate::Translator;
use crate::types::{Event, Message, PROTOCOL_VERSION, ResumeEntry, RunAgentInput};

/// Opens a thread's conversation: an [`Agent`] does (the documented way), and so does any
/// `Fn(Registry) -> OrchestratorBuilder`.
///
/// `frontend` holds the run's frontend tools (those the page offers in `RunAgentInput.tools`).
/// An [`Agent`] adds them to its own, replacing a tool of the same name; a closure adds the
/// application's tools to it and passes it to the builder. The web face then sets the session
/// store and a cancellation token, and resumes the thread's session.
pub trait AgentFactory: Send + Sync + 'static {
    /// A builder for one loop run on a thread, or why there is none.
    fn builder(&self, frontend: Registry) -> Result<OrchestratorBuilder, String>;

    /// Where threads are kept when the router is given no store: the agent's session store,
    /// if it has one.
    fn session_store(&self) -> Option<Arc<dyn SessionStore>> {
        None
    }
}

impl AgentFactory for Agent {
    fn builder(&self, frontend: Registry) -> Result<OrchestratorBuilder, String> {
        let builder = self
            .orchestrator_at(self.root())
            .map_err(|err| err.to_string())?;
        Ok(builder.add_tools(&frontend))
    }

    fn session_store(&self) -> Option<Arc<dyn SessionStore>> {
        Agent::session_store(self).cloned()
    }
}

impl<F> AgentFactory for F
where
    F: Fn(Registry) -> OrchestratorBuilder + Send + Sync + 'static,
{
    fn builder(&self, frontend: Registry) -> Result<OrchestratorBuilder, String> {
        Ok(self(frontend))
    }
}

/// A run's key: run ids are per principal, so one principal cannot see, or learn of,
/// another's runs.
type RunKey = (Principal, String);

/// Threads and runs.
pub(crate) struct RunRegistry {
    factory: Arc<dyn AgentFactory>,
    store: Arc<dyn SessionStore>,
    pub(crate) config: WebConfig,
    threads: Mutex<HashMap<String, Arc<Thread>>>,
    runs: Mutex<HashMap<RunKey, (Arc<RunBuffer>, Instant)>>,
    owners: Owners,
    pub(crate) probes: Arc<Probes>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl RunRegistry {
    pub(crate) fn new(
        factory: Arc<dyn AgentFactory>,
        store: Arc<dyn SessionStore>,
        config: WebConfig,
    ) -> Self {
        let probes = Arc::new(Probes::new(config.probe_limit));
        Self {
            owners: Owners::new(Arc::clone(&store)),
            factory,
            store,
            config,
            threads: Mutex::default(),
            runs: Mutex::default(),
            probes,
        }
    }

    /// A kept run of `principal`'s; a miss counts against its probe limit.
    pub(crate) fn run(
        &self,
        principal: &Principal,
        run_id: &str,
    ) -> Result<Arc<RunBuffer>, WebError> {
        let key = (principal.clone(), run_id.to_owned());
        let run = lock(&self.runs).get(&key).map(|(run, _)| Arc::clone(run));
        run.ok_or_else(|| {
            self.probes.miss(principal);
            WebError::RunNotFound(run_id.to_owned())
        })
    }

    /// Refuses a thread that exists and belongs to another principal, as if it did not exist
    /// (a miss). With `claim`, a new thread becomes `principal`'s; without, an unknown thread
    /// is a miss too.
    async fn check_owner(
        &self,
        principal: &Principal,
        thread_id: &str,
        claim: bool,
    ) -> Result<(), WebError> {
        let not_found = || {
            self.probes.miss(principal);
            WebError::ThreadNotFound(thread_id.to_owned())
        };
        match self.owners.owner(thread_id).await? {
            Some(owner) if owner == *principal => Ok(()),
            Some(_) => Err(not_found()),
            None if claim && self.owners.claim(thread_id, principal) => Ok(()),
            None => Err(not_found()),
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
    fn sweep(&self) {
        let retention = self.config.replay_retention;
        lock(&self.runs)
            .retain(|_, (run, started)| !run.is_done() || started.elapsed() < retention);
        // A thread another request holds (about to attach a run) is kept.
        let mut threads = lock(&self.threads);
        threads
            .retain(|_, thread| Arc::strong_count(thread) > 1 || !thread.is_forgettable(retention));
        self.owners.forget_unless(|id| threads.contains_key(id));
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
        let interrupts = thread.map(|t| t.open_interrupts()).unwrap_or_default();
        Ok((messages, interrupts))
    }

    /// Stops the loop behind `run_id`: the model stream, the tools and their processes.
    pub(crate) fn cancel(&self, principal: &Principal, run_id: &str) -> Result<bool, WebError> {
        let run = self.run(principal, run_id)?;
        let thread = lock(&self.threads).get(&run.thread_id).cloned();
        let Some(thread) = thread else {
            return Ok(false);
        };
        // A paused run's loop belongs to it until another run attaches.
        match thread.busy_with() {
            Some(current) if current != run.run_id => Ok(false),
            Some(_) => Ok(thread.cancel()),
            None if run.is_done() && thread.is_live() => Ok(thread.cancel()),
            None => Ok(false),
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
        self.check_owner(principal, &input.thread_id, true).await?;
        let thread = self.thread(&input.thread_id);
        let run = RunBuffer::new(&input.thread_id, &input.run_id);
        let key = (principal.clone(), input.run_id.clone());
        {
            let mut runs = lock(&self.runs);
            if runs.contains_key(&key) {
                return Err(WebError::RunExists(input.run_id));
            }
            if let Some(run_id) = thread.busy_with() {
                return Err(WebError::ThreadBusy {
                    thread_id: input.thread_id,
                    run_id,
                });
            }
            thread.attach(&run);
            runs.insert(key.clone(), (Arc::clone(&run), Instant::now()));
        }
        run.push([Event::RunStarted {
            thread_id: input.thread_id.clone(),
            run_id: input.run_id.clone(),
            protocol_version: Some(PROTOCOL_VERSION.into()),
        }]);

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
        match thread.resume(&run, &resume, tool_results).await {
            Ok(Resumed::Continued) => return Ok(run),
            Err((code, message)) => {
                if code == ErrorCode::UnknownInterrupt {
                    self.probes.miss(principal);
                }
                fail(&run, code, message);
                return Ok(run);
            }
            Ok(Resumed::NotPaused) => {}
        }
        if thread.is_live() {
            thread.detach(&run);
            lock(&self.runs).remove(&key);
            return Err(WebError::InterruptPending {
                thread_id: input.thread_id,
                interrupt_ids: thread.pending_interrupts(),
            });
        }
        if !resume.is_empty() {
            // Every entry named an expired interrupt (others are errors above), and the loop
            // has gone on without an answer: show what happened instead of running again.
            self.expired(&run, &input, &resume).await;
            thread.detach(&run);
            return Ok(run);
        }
        if let Err((code, message)) = self.new_loop(principal, &thread, &run, &input).await {
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
            Event::RunFinished {
                thread_id: input.thread_id.clone(),
                run_id: input.run_id.clone(),
                result: None,
                outcome: crate::types::Outcome::Success {
                    pending_tool_call_ids: Vec::new(),
                },
                usage: Vec::new(),
            },
        ]);
    }

    /// Starts a loop run on the thread's session with the input's last user message.
    async fn new_loop(
        &self,
        principal: &Principal,
        thread: &Arc<Thread>,
        run: &Arc<RunBuffer>,
        input: &RunAgentInput,
    ) -> Result<(), (ErrorCode, String)> {
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

        let tools = Registry::new();
        for tool in &input.tools {
            let tool = FrontendTool::new(tool, thread, self.config.interrupt_timeout)
                .map_err(|e| (ErrorCode::InvalidTool, e))?;
            tools
                .register(tool)
                .map_err(|e| (ErrorCode::InvalidTool, e.to_string()))?;
        }

        let session_error = |e: SessionError| (ErrorCode::Session, e.to_string());
        let history = match self.store.load(&input.thread_id).await {
            Ok(session) => session.messages,
            Err(SessionError::NotFound(_)) => {
                let mut meta = SessionMeta::new();
                meta.id = input.thread_id.clone();
                crate::ownership::record(&mut meta, principal);
                self.store.create(&meta).await.map_err(session_error)?;
                Vec::new()
            }
            Err(e) => return Err(session_error(e)),
        };
        let cancel = tokio_util::sync::CancellationToken::new();
        let orchestrator = self
            .factory
            .builder(tools)
            .map_err(|e| (ErrorCode::Loop("agent_setup".into()), e))?
            .session_store(Arc::clone(&self.store))
            .cancellation(cancel.clone())
            .resume(&input.thread_id)
            .await
            .map_err(|e| (ErrorCode::Session, e.to_string()))?;

        if !history.is_empty() {
            let mut messages = history::snapshot(&input.thread_id, &history);
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
        let started = orchestrator
            .run(prompt)
            .map_err(|e| (ErrorCode::Loop("loop_start".into()), e.to_string()))?;
        let translator = Translator::new(
            input.run_id.clone(),
            thread.todos(),
            orchestrator.tools().clone(),
        );
        let live = LiveLoop::new(
            started.input,
            cancel,
            translator,
            orchestrator.config().model.clone(),
        );
        thread.start_loop(live, started.events);
        Ok(())
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
