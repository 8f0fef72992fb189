//! The orchestrator: one session over shared services, and its runs.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::FutureExt;
use mux_llm::{ContentBlock, LlmClient, Message, Usage};
use mux_permission::Permissions;
use mux_tool::Registry;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::core::{Core, Services};
use crate::emitter::{Emitter, EventReceiver, Subscription};
use crate::event::{LoopEvent, LoopInput};
use crate::hooks::Hooks;
use crate::journal::{PendingApproval, PendingQuestion};
use crate::parent::ParentRun;
use crate::run::UserPrompt;
use crate::run_state::RunShared;
use crate::session::CallProgress;
use crate::session::SessionMeta;
use crate::{InputSender, LoopError, OrchestratorConfig, Run, RunHandle, RunSummary};
use mux_permission::Answer;

/// The think-act loop over one session.
///
/// Cheap to clone: clones share the services and the session. One run at a time per
/// session; build another orchestrator (they can share every service) for another
/// session.
#[derive(Clone)]
pub struct Orchestrator {
    pub(crate) core: Core,
    running: Arc<AtomicBool>,
}

impl Orchestrator {
    pub(crate) fn from_parts(
        services: Services,
        meta: SessionMeta,
        messages: Vec<Message>,
        persisted: bool,
    ) -> Self {
        Self {
            core: Core::new(Arc::new(services), meta, messages, persisted),
            running: Arc::new(AtomicBool::new(false)),
        }
    }

    /// A new orchestrator with the same services and an empty session.
    pub fn new_session(&self) -> Self {
        self.new_session_from(Vec::new())
    }

    /// A new orchestrator with the same services and a session that starts with
    /// `messages` (imported history, say). The messages are persisted with the first run.
    pub fn new_session_from(&self, messages: Vec<Message>) -> Self {
        Self {
            core: Core::new(
                Arc::clone(&self.core.services),
                SessionMeta::new(),
                messages,
                false,
            ),
            running: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Copies this session into a new session of the session store, whose `parent` is
    /// this one, and returns an orchestrator on the copy; this session goes on unchanged.
    /// The session must have been saved (a run has finished or started).
    pub async fn fork(&self) -> Result<Orchestrator, LoopError> {
        let Some(store) = self.core.services.store.clone() else {
            return Err(LoopError::NoSessionStore {
                operation: "fork a session",
            });
        };
        let meta = store.fork(&self.session().id).await?;
        let session = store.load(&meta.id).await?;
        let forked = self.new_session_from(session.messages);
        {
            let mut conversation = forked.core.lock();
            conversation.meta = session.meta;
            conversation.persisted = true;
        }
        Ok(forked)
    }

    /// The configuration.
    pub fn config(&self) -> &OrchestratorConfig {
        &self.core.services.config
    }

    /// The tool registry (with `ask_user`, when enabled).
    pub fn tools(&self) -> &Registry {
        &self.core.services.tools
    }

    /// The hooks; hooks added here apply from the next call on.
    pub fn hooks(&self) -> &Hooks {
        &self.core.services.hooks
    }

    /// The permission policy: the one set, or [`Permissions::unset`] when none was and
    /// approval is the default. `None` under `ApprovalPolicy::Always` or `Never` without a
    /// policy.
    pub fn permissions(&self) -> Option<&Permissions> {
        self.core.services.permissions.as_deref()
    }

    /// The coordinator whose tools the loop offers, if one is set.
    #[cfg(feature = "mcp")]
    pub fn mcp(&self) -> Option<&mux_mcp::Coordinator> {
        self.core
            .services
            .mcp
            .as_ref()
            .map(crate::mcp::McpLink::coordinator)
    }

    /// The MCP servers this orchestrator owns, if it was given some.
    #[cfg(feature = "mcp")]
    pub fn mcp_servers(&self) -> Option<&crate::mcp::McpServers> {
        self.core
            .services
            .mcp
            .as_ref()
            .and_then(crate::mcp::McpLink::owned)
    }

    /// Shuts the orchestrator down: cancels every run (of every clone and of sessions
    /// made with [`Orchestrator::new_session`]; later runs end cancelled at once) and,
    /// with the `mcp` feature, stops the MCP servers it owns and waits until their processes
    /// are gone. The token given to [`ConversationBuilder::cancellation`](crate::ConversationBuilder::cancellation) is not cancelled,
    /// and the agent's MCP servers are left running ([`Agent::shutdown`](crate::Agent::shutdown) stops them).
    pub async fn shutdown(&self) {
        self.core.services.cancel.cancel();
        #[cfg(feature = "mcp")]
        if let Some(link) = &self.core.services.mcp {
            link.shutdown().await;
        }
    }

    /// The session so far.
    pub fn messages(&self) -> Vec<Message> {
        self.core.messages()
    }

    /// The session's metadata.
    pub fn session(&self) -> SessionMeta {
        self.core.lock().meta.clone()
    }

    /// Usage of every model call of this session.
    pub fn usage(&self) -> Usage {
        self.core.lock().usage
    }

    /// Whether a run is in progress.
    pub fn is_running(&self) -> bool {
        self.running.load(Ordering::SeqCst)
    }

    /// Another observer of every run's events. A slow subscriber receives
    /// [`LoopEvent::Lagged`] with the number of events it missed.
    pub fn subscribe(&self) -> Subscription {
        Subscription::new(self.core.services.broadcast.subscribe())
    }

    /// Starts a run with `prompt` and returns its event receiver, input sender and handle.
    ///
    /// The event receiver is bounded and lossless: the loop waits while it is full, so read it
    /// (or drop it). Must be called inside a tokio runtime.
    pub fn run(&self, prompt: impl Into<String>) -> Result<Run, LoopError> {
        self.run_with(prompt, Vec::new())
    }

    /// [`run`](Self::run), with blocks sent beside the prompt's text in the same user message:
    /// images (`ContentBlock::Image`) a face received with the prompt, say. Hooks see the
    /// text only.
    pub fn run_with(
        &self,
        prompt: impl Into<String>,
        attachments: Vec<ContentBlock>,
    ) -> Result<Run, LoopError> {
        self.start(Some(UserPrompt::new(prompt, attachments)), None, Vec::new())
    }

    /// The calls of this session's open turn that wait for a person's approval: a run paused
    /// on them, possibly in another process that has stopped since. Answer them with
    /// [`resume_run`](Self::resume_run).
    pub fn pending_approvals(&self) -> Vec<PendingApproval> {
        let conversation = self.core.lock();
        crate::dangling::unanswered(&conversation.messages)
            .into_iter()
            .filter_map(|call| match conversation.calls.get(&call.id) {
                Some(CallProgress::AwaitingApproval { reason }) => Some(PendingApproval {
                    reason: reason.clone(),
                    call_id: call.id,
                    name: call.name,
                    input: call.input,
                }),
                _ => None,
            })
            .collect()
    }

    /// The `ask_user` questions of this session's open turn that wait for the person's
    /// answer: a run paused on them, possibly in another process that has stopped since.
    /// [`resume_run`](Self::resume_run) asks each again under the same call id
    /// ([`LoopEvent::AwaitingInput`]); answer it with [`LoopInput::UserResponse`].
    pub fn pending_questions(&self) -> Vec<PendingQuestion> {
        let conversation = self.core.lock();
        crate::dangling::unanswered(&conversation.messages)
            .into_iter()
            .filter(|call| {
                call.name == crate::ask_user::ASK_USER
                    && !matches!(
                        conversation.calls.get(&call.id),
                        Some(CallProgress::Finished { .. })
                    )
            })
            .map(|call| PendingQuestion {
                question: call.input["question"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                call_id: call.id,
            })
            .collect()
    }

    /// Continues the run this session's open turn belongs to: one that paused for an
    /// approval, or stopped mid-turn (its process ended), here or in another process that
    /// stored the session. `answers` answer [pending approvals](Self::pending_approvals) by
    /// call id; a pending call left unanswered is asked again
    /// ([`LoopEvent::ApprovalRequired`]). Calls that returned give their recorded output;
    /// calls that started are run again only when read-only or idempotent, else they get an
    /// "outcome unknown" error. Then the loop goes on to the model.
    ///
    /// [`LoopError::NothingToResume`] when the session has no open turn.
    pub fn resume_run(
        &self,
        answers: impl IntoIterator<Item = (String, Answer)>,
    ) -> Result<Run, LoopError> {
        self.start(None, None, answers.into_iter().collect())
    }

    /// [`run`](Self::run) on behalf of another run: this run draws from the parent's budget
    /// as well as from this orchestrator's own [`RunLimits`](crate::RunLimits), and its trace
    /// hangs under the parent's span. A tool that delegates gets `parent` from
    /// [`ParentRun::of_call`].
    pub fn run_under(
        &self,
        prompt: impl Into<String>,
        parent: ParentRun,
    ) -> Result<Run, LoopError> {
        self.start(
            Some(UserPrompt::new(prompt, Vec::new())),
            Some(parent),
            Vec::new(),
        )
    }

    fn start(
        &self,
        prompt: Option<UserPrompt>,
        parent: Option<ParentRun>,
        answers: Vec<(String, Answer)>,
    ) -> Result<Run, LoopError> {
        let running = RunningGuard::acquire(&self.running)?;
        let config = &self.core.services.config;
        let (events_tx, events) = EventReceiver::channel(config.event_capacity);
        // Boxed inputs, so the channel's first block (32 slots, made with it) is small.
        let (input, inputs) = mpsc::channel(64);
        let cancel = self.core.services.cancel.child_token();
        // Fires when the run is cancelled or its loop has ended: from then on no event waits
        // for the face, and the router drains the inputs left and stops.
        let winding_down = cancel.child_token();
        let emitter = Emitter::new(
            events_tx,
            self.core.services.broadcast.clone(),
            winding_down.clone(),
        );
        let run = Arc::new(
            RunShared::new(emitter, cancel.clone())
                .with_parent(parent)
                .with_answers(answers),
        );

        let prompt_stored = run.prompt_watch();
        let this = self.clone();
        // One task: the input router runs beside the loop, and the run ends when both have.
        let join = tokio::spawn(async move {
            let _running = running;
            let router = route_inputs(inputs, Arc::clone(&run), winding_down.clone());
            let driven = async {
                let result = crate::run::drive(&this.core, &run, prompt).await;
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
            handle: RunHandle {
                join,
                cancel,
                prompt: prompt_stored,
            },
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
        let cancel = self.core.services.cancel.child_token();
        let emitter = Emitter::broadcast_only(self.core.services.broadcast.clone());
        let _cancel_on_drop = cancel.clone().drop_guard();
        let run = Arc::new(
            RunShared::new(emitter, cancel)
                .unattended()
                .with_output(output),
        );
        // The loop runs in the caller's task: no spawn, no hand-off. A panic in it is reported
        // as a crash, as it is for a spawned run.
        let prompt = UserPrompt::new(prompt, Vec::new());
        let outcome = AssertUnwindSafe(crate::run::drive(&self.core, &run, Some(prompt)))
            .catch_unwind()
            .await;
        drop(running);
        outcome.unwrap_or_else(|panic| Err(LoopError::Crashed(panic_message(&*panic))))
    }

    /// Summarizes older turns now (if there are enough), whatever the token count.
    pub async fn compact(&self) -> Result<Option<(u64, u64)>, LoopError> {
        let _running = RunningGuard::acquire(&self.running)?;
        let emitter = Emitter::broadcast_only(self.core.services.broadcast.clone());
        let run = Arc::new(RunShared::new(
            emitter,
            self.core.services.cancel.child_token(),
        ));
        crate::run::compact_now(&self.core, &run).await
    }

    /// Records a key in the session metadata (for example a subagent link) and saves it.
    pub async fn set_session_extra(
        &self,
        key: impl Into<String>,
        value: Value,
    ) -> Result<(), LoopError> {
        self.core.lock().meta.extra.insert(key.into(), value);
        self.core.persist(&[]).await
    }
}

impl std::fmt::Debug for Orchestrator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Orchestrator")
            .field("model", &self.core.services.config.model)
            .field("provider", &self.core.services.client.provider())
            .field("session", &self.core.lock().meta.id)
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

/// Marks a session as running until dropped, so a panic or a dropped future cannot leave
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
    mut inputs: mpsc::Receiver<Box<LoopInput>>,
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
        let rejected = match *input {
            LoopInput::Cancel => {
                run.cancel.cancel();
                None
            }
            LoopInput::ToolApproval { call_id, answer } => (!run.answer_approval(&call_id, answer))
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
