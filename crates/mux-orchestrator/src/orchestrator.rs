//! The orchestrator: services plus one conversation, and the handles of a run.

use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use futures::FutureExt;
use mux_llm::{LlmClient, Message, Usage};
use mux_permission::Permissions;
use mux_tool::{Registry, Resources, ToolOutput};
use serde_json::Value;
use tokio::sync::{broadcast, mpsc};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::approval::{NeedsApproval, NeedsApprovalMap};
use crate::ask_user::AskUser;
use crate::context::ContextProvider;
use crate::emitter::{Emitter, EventReceiver, Subscription};
use crate::event::{LoopEvent, LoopInput};
use crate::hooks::{Hook, Hooks};
use crate::run_state::RunShared;
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
    pub(crate) broadcast: broadcast::Sender<LoopEvent>,
    pub(crate) cancel: CancellationToken,
    pub(crate) needs_approval: NeedsApprovalMap,
    #[cfg(feature = "mcp")]
    pub(crate) mcp: Option<crate::mcp::McpLink>,
}

/// The conversation an orchestrator carries across runs.
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
    /// Without a permission policy: tools allowed "always" in this conversation.
    pub(crate) always_allowed: Arc<Mutex<HashSet<String>>>,
}

/// The think-act loop over one conversation.
///
/// Cheap to clone: clones share the services and the conversation. One run at a time per
/// conversation; build another orchestrator (they can share every service) for another
/// conversation.
#[derive(Clone)]
pub struct Orchestrator {
    pub(crate) services: Arc<Services>,
    pub(crate) conversation: Arc<Mutex<Conversation>>,
    running: Arc<AtomicBool>,
}

/// Builds an [`Orchestrator`].
pub struct OrchestratorBuilder {
    client: Arc<dyn LlmClient>,
    config: OrchestratorConfig,
    tools: Registry,
    permissions: Option<Permissions>,
    contexts: Vec<Arc<dyn ContextProvider>>,
    store: Option<Arc<dyn SessionStore>>,
    hooks: Hooks,
    resources: Resources,
    cancel: CancellationToken,
    needs_approval: HashMap<String, NeedsApproval>,
    #[cfg(feature = "mcp")]
    mcp: Option<(mux_mcp::Coordinator, Option<crate::mcp::McpServers>)>,
    #[cfg(feature = "mcp")]
    mcp_filter: mux_mcp::McpFilter,
}

impl OrchestratorBuilder {
    /// The tools the model may call. The orchestrator adds `ask_user` to this registry unless
    /// [`OrchestratorConfig::ask_user`] is off.
    pub fn tools(mut self, tools: Registry) -> Self {
        self.tools = tools;
        self
    }

    /// The permission policy. Without one, read-only tools run and every other call asks.
    pub fn permissions(mut self, permissions: Permissions) -> Self {
        self.permissions = Some(permissions);
        self
    }

    /// Adds a context provider; its content joins the system prompt every turn.
    pub fn context(mut self, provider: impl ContextProvider) -> Self {
        self.contexts.push(Arc::new(provider));
        self
    }

    /// Persists the conversation in `store`.
    pub fn session_store(mut self, store: Arc<dyn SessionStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Adds a hook.
    pub fn hook(self, hook: impl Hook) -> Self {
        self.hooks.add(hook);
        self
    }

    /// Uses a shared hook list (hooks added to it later apply too).
    pub fn hooks(mut self, hooks: Hooks) -> Self {
        self.hooks = hooks;
        self
    }

    /// Resources every tool call can reach.
    pub fn resources(mut self, resources: Resources) -> Self {
        self.resources = resources;
        self
    }

    /// A parent token: cancelling it cancels every run of this orchestrator.
    pub fn cancellation(mut self, token: CancellationToken) -> Self {
        self.cancel = token;
        self
    }

    /// Offers the tools of `coordinator`'s servers (as `mcp__<server>__<tool>` proxies),
    /// kept current before every model request. You run the coordinator: the orchestrator
    /// never starts or stops its servers. Replaces an earlier `mcp` or `mcp_servers`.
    #[cfg(feature = "mcp")]
    pub fn mcp(mut self, coordinator: mux_mcp::Coordinator) -> Self {
        self.mcp = Some((coordinator, None));
        self
    }

    /// Offers the tools of `servers` and takes ownership of them: they stop on
    /// [`Orchestrator::shutdown`] or when the last clone of the orchestrator is dropped.
    /// Servers that failed to start are reported once, as [`LoopEvent::McpServerFailed`] at
    /// the start of the first run. Replaces an earlier `mcp` or `mcp_servers`.
    #[cfg(feature = "mcp")]
    pub fn mcp_servers(mut self, servers: crate::mcp::McpServers) -> Self {
        self.mcp = Some((servers.coordinator().clone(), Some(servers)));
        self
    }

    /// Offers only the MCP tools `filter` accepts (all by default), for example
    /// `McpFilter::Spec(ToolFilter::ReadOnly)` or one of a [`mux_mcp::ToolModes`]' filters.
    #[cfg(feature = "mcp")]
    pub fn mcp_filter(mut self, filter: mux_mcp::McpFilter) -> Self {
        self.mcp_filter = filter;
        self
    }

    /// Decides per call whether `tool` needs approval, from its input: `true` asks the face
    /// (deny rules still hold), `false` runs it unasked, or with a permission policy leaves it
    /// to the policy. It replaces [`OrchestratorConfig::approval`] for that tool. A predicate
    /// that panics asks.
    pub fn needs_approval(
        mut self,
        tool: impl Into<String>,
        predicate: impl Fn(&Value) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.needs_approval
            .insert(tool.into(), Arc::new(predicate) as NeedsApproval);
        self
    }

    fn services(self) -> Services {
        if self.config.ask_user {
            // `replace` keeps an application's own `ask_user` from failing the build.
            if let Ok(tool) = mux_tool::Typed::new(AskUser) {
                let _ = self.tools.replace(Arc::new(tool));
            }
        }
        let (broadcast, _) = broadcast::channel(self.config.broadcast_capacity.max(1));
        #[cfg(feature = "mcp")]
        let mcp = self.mcp.map(|(coordinator, owned)| {
            crate::mcp::McpLink::new(&coordinator, owned, self.mcp_filter, &self.tools)
        });
        Services {
            client: self.client,
            config: self.config,
            tools: self.tools,
            permissions: self.permissions,
            contexts: self.contexts,
            store: self.store,
            hooks: self.hooks,
            resources: self.resources,
            broadcast,
            // A child, so `Orchestrator::shutdown` never cancels the caller's token.
            cancel: self.cancel.child_token(),
            needs_approval: Arc::new(self.needs_approval),
            #[cfg(feature = "mcp")]
            mcp,
        }
    }

    /// Builds an orchestrator with a new, empty conversation.
    pub fn build(self) -> Orchestrator {
        Orchestrator::from_parts(self.services(), SessionMeta::new(), Vec::new(), false)
    }

    /// Builds an orchestrator that continues session `id` from the session store.
    pub async fn resume(self, id: &str) -> Result<Orchestrator, LoopError> {
        let Some(store) = self.store.clone() else {
            return Err(LoopError::NoSessionStore {
                operation: "resume a session",
            });
        };
        let session = store.load(id).await?;
        Ok(Orchestrator::from_parts(
            self.services(),
            session.meta,
            session.messages,
            true,
        ))
    }
}

impl Orchestrator {
    /// A builder with `client` and `config`.
    pub fn builder(client: Arc<dyn LlmClient>, config: OrchestratorConfig) -> OrchestratorBuilder {
        OrchestratorBuilder {
            client,
            config,
            tools: Registry::new(),
            permissions: None,
            contexts: Vec::new(),
            store: None,
            hooks: Hooks::new(),
            resources: Resources::new(),
            cancel: CancellationToken::new(),
            needs_approval: HashMap::new(),
            #[cfg(feature = "mcp")]
            mcp: None,
            #[cfg(feature = "mcp")]
            mcp_filter: mux_mcp::McpFilter::All,
        }
    }

    fn from_parts(
        services: Services,
        meta: SessionMeta,
        messages: Vec<Message>,
        persisted: bool,
    ) -> Self {
        Self {
            services: Arc::new(services),
            conversation: Arc::new(Mutex::new(Conversation {
                meta,
                messages: Arc::new(messages),
                usage: Usage::default(),
                reported_tokens: None,
                persisted,
                title_requested: false,
                always_allowed: Arc::default(),
            })),
            running: Arc::new(AtomicBool::new(false)),
        }
    }

    /// A new orchestrator with the same services and an empty conversation.
    pub fn new_conversation(&self) -> Self {
        self.new_conversation_from(Vec::new())
    }

    /// A new orchestrator with the same services and a conversation that starts with
    /// `messages` (imported history, say). The messages are persisted with the first run.
    pub fn new_conversation_from(&self, messages: Vec<Message>) -> Self {
        Self {
            services: Arc::clone(&self.services),
            conversation: Arc::new(Mutex::new(Conversation {
                meta: SessionMeta::new(),
                messages: Arc::new(messages),
                usage: Usage::default(),
                reported_tokens: None,
                persisted: false,
                title_requested: false,
                always_allowed: Arc::default(),
            })),
            running: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Copies this conversation into a new session of the session store, whose `parent` is
    /// this one, and returns an orchestrator on the copy; this conversation goes on unchanged.
    /// The conversation must have been saved (a run has finished or started).
    pub async fn fork(&self) -> Result<Orchestrator, LoopError> {
        let Some(store) = self.services.store.clone() else {
            return Err(LoopError::NoSessionStore {
                operation: "fork a conversation",
            });
        };
        let meta = store.fork(&self.session().id).await?;
        let session = store.load(&meta.id).await?;
        let forked = self.new_conversation_from(session.messages);
        {
            let mut conversation = forked.lock();
            conversation.meta = session.meta;
            conversation.persisted = true;
        }
        Ok(forked)
    }

    /// The configuration.
    pub fn config(&self) -> &OrchestratorConfig {
        &self.services.config
    }

    /// The tool registry (with `ask_user`, when enabled).
    pub fn tools(&self) -> &Registry {
        &self.services.tools
    }

    /// The hooks; hooks added here apply from the next call on.
    pub fn hooks(&self) -> &Hooks {
        &self.services.hooks
    }

    /// The permission policy, if one is set.
    pub fn permissions(&self) -> Option<&Permissions> {
        self.services.permissions.as_ref()
    }

    /// The coordinator whose tools the loop offers, if one is set.
    #[cfg(feature = "mcp")]
    pub fn mcp(&self) -> Option<&mux_mcp::Coordinator> {
        self.services
            .mcp
            .as_ref()
            .map(crate::mcp::McpLink::coordinator)
    }

    /// The MCP servers this orchestrator owns, if it was given some.
    #[cfg(feature = "mcp")]
    pub fn mcp_servers(&self) -> Option<&crate::mcp::McpServers> {
        self.services
            .mcp
            .as_ref()
            .and_then(crate::mcp::McpLink::owned)
    }

    /// Shuts the orchestrator down: cancels every run (of every clone and of conversations
    /// made with [`Orchestrator::new_conversation`]; later runs end cancelled at once) and,
    /// with the `mcp` feature, stops the MCP servers it owns and waits until their processes
    /// are gone. The token given to [`OrchestratorBuilder::cancellation`] is not cancelled,
    /// and a coordinator passed to `OrchestratorBuilder::mcp` is left running.
    pub async fn shutdown(&self) {
        self.services.cancel.cancel();
        #[cfg(feature = "mcp")]
        if let Some(link) = &self.services.mcp {
            link.shutdown().await;
        }
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, Conversation> {
        self.conversation
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The conversation so far.
    pub fn messages(&self) -> Vec<Message> {
        self.lock().messages.to_vec()
    }

    /// The session's metadata.
    pub fn session(&self) -> SessionMeta {
        self.lock().meta.clone()
    }

    /// Usage of every model call of this conversation.
    pub fn usage(&self) -> Usage {
        self.lock().usage
    }

    /// Whether a run is in progress.
    pub fn is_running(&self) -> bool {
        self.running.load(Ordering::SeqCst)
    }

    /// Another observer of every run's events. A slow subscriber receives
    /// [`LoopEvent::Lagged`] with the number of events it missed.
    pub fn subscribe(&self) -> Subscription {
        Subscription::new(self.services.broadcast.subscribe())
    }

    /// Starts a run with `prompt` and returns its event receiver, input sender and handle.
    ///
    /// The event receiver is bounded and lossless: the loop waits while it is full, so read it
    /// (or drop it). Must be called inside a tokio runtime.
    pub fn run(&self, prompt: impl Into<String>) -> Result<Run, LoopError> {
        let running = RunningGuard::acquire(&self.running)?;
        let config = &self.services.config;
        let (events_tx, events) = mpsc::channel(config.event_capacity.max(1));
        let (input, inputs) = mpsc::channel(64);
        let cancel = self.services.cancel.child_token();
        // Fires when the run is cancelled or its loop has ended: from then on no event waits
        // for the face, and the router drains the inputs left and stops.
        let winding_down = cancel.child_token();
        let emitter = Emitter::new(
            events_tx,
            self.services.broadcast.clone(),
            winding_down.clone(),
        );
        let run = Arc::new(RunShared::new(emitter, cancel.clone()));

        let this = self.clone();
        let prompt = prompt.into();
        // One task: the input router runs beside the loop, and the run ends when both have.
        let join = tokio::spawn(async move {
            let _running = running;
            let router = route_inputs(inputs, Arc::clone(&run), winding_down.clone());
            let driven = async {
                let result = crate::run::drive(&this, &run, prompt).await;
                winding_down.cancel();
                result
            };
            let (result, ()) = tokio::join!(driven, router);
            // Messages queued after the loop's last look at the queue: say so, never drop them.
            for text in run.take_queued_messages() {
                let message = unread_message(&text);
                run.emit(LoopEvent::InputRejected { message }).await;
            }
            result
        });
        Ok(Run {
            events,
            input: InputSender {
                tx: input,
                cancel: cancel.clone(),
            },
            handle: RunHandle { join, cancel },
        })
    }

    /// Runs `prompt` to the end without a face: approvals are denied
    /// ("no one is available to approve this call") and `ask_user` is told the user is not
    /// available. Subscribers still see every event. Returns the final text, the tool calls,
    /// the iterations and the usage. Dropping the future cancels the run.
    pub async fn run_to_completion(
        &self,
        prompt: impl Into<String>,
    ) -> Result<RunSummary, LoopError> {
        self.run_unattended(prompt.into(), None).await
    }

    /// [`run_to_completion`](Self::run_to_completion), with every request asking for a final
    /// answer shaped as `output`.
    pub(crate) async fn run_unattended(
        &self,
        prompt: String,
        output: Option<mux_llm::OutputSchema>,
    ) -> Result<RunSummary, LoopError> {
        let running = RunningGuard::acquire(&self.running)?;
        let cancel = self.services.cancel.child_token();
        let emitter = Emitter::broadcast_only(self.services.broadcast.clone());
        let _cancel_on_drop = cancel.clone().drop_guard();
        let run = Arc::new(
            RunShared::new(emitter, cancel)
                .unattended()
                .with_output(output),
        );
        // The loop runs in the caller's task: no spawn, no hand-off. A panic in it is reported
        // as a crash, as it is for a spawned run.
        let outcome = AssertUnwindSafe(crate::run::drive(self, &run, prompt))
            .catch_unwind()
            .await;
        drop(running);
        outcome.unwrap_or_else(|panic| Err(LoopError::Crashed(panic_message(&*panic))))
    }

    /// Summarizes older turns now (if there are enough), whatever the token count.
    pub async fn compact(&self) -> Result<Option<(u64, u64)>, LoopError> {
        let _running = RunningGuard::acquire(&self.running)?;
        let emitter = Emitter::broadcast_only(self.services.broadcast.clone());
        let run = Arc::new(RunShared::new(emitter, self.services.cancel.child_token()));
        crate::run::compact_now(self, &run).await
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

    /// Records a key in the session metadata (for example a subagent link) and saves it.
    pub async fn set_session_extra(
        &self,
        key: impl Into<String>,
        value: Value,
    ) -> Result<(), LoopError> {
        self.lock().meta.extra.insert(key.into(), value);
        self.persist(&[]).await
    }
}

impl std::fmt::Debug for Orchestrator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Orchestrator")
            .field("model", &self.services.config.model)
            .field("provider", &self.services.client.provider())
            .field("session", &self.lock().meta.id)
            .finish_non_exhaustive()
    }
}

/// What a panic said, for [`LoopError::Crashed`].
fn panic_message(payload: &(dyn Any + Send)) -> String {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with a non-string payload".to_owned());
    format!("the loop panicked: {message}")
}

/// Marks a conversation as running until dropped, so a panic or a dropped future cannot leave
/// it locked.
struct RunningGuard {
    flag: Arc<AtomicBool>,
}

impl RunningGuard {
    fn acquire(flag: &Arc<AtomicBool>) -> Result<Self, LoopError> {
        if flag.swap(true, Ordering::SeqCst) {
            return Err(LoopError::AlreadyRunning);
        }
        Ok(Self {
            flag: Arc::clone(flag),
        })
    }
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        self.flag.store(false, Ordering::SeqCst);
    }
}

/// Reads the face's inputs and delivers them: approvals and responses to the calls waiting
/// for them, new messages to the next turn, cancel to the run's token. An answer nobody waits
/// for is reported, never silently dropped. Once `winding_down` fires it takes no new inputs
/// and answers the ones already sent; a message the loop can no longer read is rejected.
async fn route_inputs(
    mut inputs: mpsc::Receiver<LoopInput>,
    run: Arc<RunShared>,
    winding_down: CancellationToken,
) {
    loop {
        let input = tokio::select! {
            biased;
            input = inputs.recv() => input,
            () = winding_down.cancelled(), if !inputs.is_closed() => {
                inputs.close();
                continue;
            }
        };
        let Some(input) = input else { return };
        let rejected = match input {
            LoopInput::Cancel => {
                run.cancel.cancel();
                None
            }
            LoopInput::ToolApproval { call_id, decision } => (!run
                .answer_approval(&call_id, decision))
            .then(|| format!("no call `{call_id}` is waiting for approval")),
            LoopInput::UserResponse { call_id, text } => (!run.answer_response(&call_id, text))
                .then(|| format!("no call `{call_id}` is waiting for a user response")),
            LoopInput::UserMessage { text } if winding_down.is_cancelled() => {
                Some(unread_message(&text))
            }
            LoopInput::UserMessage { text } => {
                run.queue_message(text);
                None
            }
        };
        if let Some(message) = rejected {
            run.emit(LoopEvent::InputRejected { message }).await;
        }
    }
}

/// Why a message the run ended (or was cancelled) before reading is rejected.
fn unread_message(text: &str) -> String {
    format!("the run ended before it read the message {text:?}; send it again in a new run")
}

/// A started run.
#[derive(Debug)]
pub struct Run {
    /// Every event of the run, in order.
    pub events: EventReceiver,
    /// Where the face sends answers, messages and cancel.
    pub input: InputSender,
    /// Waits for the outcome or cancels.
    pub handle: RunHandle,
}

/// Sends [`LoopInput`]s into a run.
#[derive(Clone, Debug)]
pub struct InputSender {
    tx: mpsc::Sender<LoopInput>,
    cancel: CancellationToken,
}

impl InputSender {
    /// Sends an input; returns false when the run has ended.
    ///
    /// [`LoopInput::Cancel`] takes effect at once, ahead of inputs still queued: it never
    /// waits behind a router that is itself waiting for a face to read.
    pub async fn send(&self, input: LoopInput) -> bool {
        if matches!(input, LoopInput::Cancel) {
            self.cancel.cancel();
            return !self.tx.is_closed();
        }
        self.tx.send(input).await.is_ok()
    }
}

/// The outcome of a run, and a cancel that really cancels.
#[derive(Debug)]
pub struct RunHandle {
    join: JoinHandle<Result<RunSummary, LoopError>>,
    cancel: CancellationToken,
}

impl RunHandle {
    /// Cancels the run: the model stream is dropped and running tools are cancelled.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// The run's cancellation token (a child of the orchestrator's).
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Whether the run has ended.
    pub fn is_finished(&self) -> bool {
        self.join.is_finished()
    }

    /// Waits for the run to end.
    pub async fn wait(self) -> Result<RunSummary, LoopError> {
        match self.join.await {
            Ok(result) => result,
            Err(err) => Err(LoopError::Crashed(err.to_string())),
        }
    }
}

/// A tool call made during a run, with what the model read back.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCallRecord {
    /// The call id.
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The arguments as run (after any rewrite).
    pub input: Value,
    /// The output the model read.
    pub output: ToolOutput,
}

/// A call denied because no one could approve it: a run with no face (such as
/// [`Orchestrator::run_to_completion`]) called a tool that needs approval. Allow it with a
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

/// What a finished run produced.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSummary {
    /// The final assistant text.
    pub text: String,
    /// Every tool call, in order.
    pub tool_calls: Vec<ToolCallRecord>,
    /// Model calls made.
    pub iterations: u32,
    /// Usage of this run.
    pub usage: Usage,
    /// Calls denied because no one could approve them (see [`UnapprovedCall`]).
    pub unapproved: Vec<UnapprovedCall>,
}
