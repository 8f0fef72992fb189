//! What one run shares between the loop, the approval gate, the `ask_user` tool and the input
//! router: the event emitter, the state machine, and the answers the faces owe.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::emitter::Emitter;
use crate::event::LoopEvent;
use crate::state::{LoopState, StateMachine};
use crate::unapproved::UnapprovedCall;
use mux_permission::Answer;

/// A run's shared state.
#[derive(Debug)]
pub(crate) struct RunShared {
    pub(crate) emitter: Emitter,
    pub(crate) cancel: CancellationToken,
    /// Whether a face can answer: without one, approvals are denied and `ask_user` is told
    /// the user is away, at once.
    pub(crate) attended: bool,
    machine: Mutex<Machine>,
    approvals: Mutex<HashMap<String, oneshot::Sender<Answer>>>,
    /// Answers given before the calls asked (a paused run resumed with its answers).
    answers: Mutex<HashMap<String, Answer>>,
    responses: Mutex<HashMap<String, oneshot::Sender<String>>>,
    queued_messages: Mutex<Vec<String>>,
    stop_request: Mutex<Option<(String, String)>>,
    unapproved: Mutex<Vec<UnapprovedCall>>,
    /// The shape the final answer must take (structured output), for every request of the run.
    pub(crate) output: Option<mux_llm::OutputSchema>,
    /// The run that started this one (a subagent's parent): its budget is charged as well,
    /// and its span holds this run's.
    pub(crate) parent: Option<crate::ParentRun>,
    /// The span current where the run was started: the parent of its `invoke_agent` span
    /// when no delegating call is (held, so it stays open while the run goes on).
    pub(crate) caller_span: tracing::Span,
    /// Whether the prompt's message is in the session store: unknown (`None`) until the loop
    /// appended it; see [`RunHandle::prompt_stored`](crate::RunHandle::prompt_stored).
    prompt: watch::Sender<Option<bool>>,
}

#[derive(Debug)]
struct Machine {
    machine: StateMachine,
    waiting_approvals: usize,
    waiting_inputs: usize,
}

/// Which kind of answer a call waits for.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Waiting {
    Approval,
    Input,
}

impl RunShared {
    pub(crate) fn new(emitter: Emitter, cancel: CancellationToken) -> Self {
        Self {
            emitter,
            cancel,
            attended: true,
            machine: Mutex::new(Machine {
                machine: StateMachine::new(),
                waiting_approvals: 0,
                waiting_inputs: 0,
            }),
            approvals: Mutex::new(HashMap::new()),
            answers: Mutex::new(HashMap::new()),
            responses: Mutex::new(HashMap::new()),
            queued_messages: Mutex::new(Vec::new()),
            stop_request: Mutex::new(None),
            unapproved: Mutex::new(Vec::new()),
            output: None,
            parent: None,
            caller_span: tracing::Span::current(),
            prompt: watch::channel(None).0,
        }
    }

    /// Follows whether the prompt's message is stored (see [`RunShared::prompt_appended`]).
    pub(crate) fn prompt_watch(&self) -> watch::Receiver<Option<bool>> {
        self.prompt.subscribe()
    }

    /// The prompt's message was appended: `written` when the session store took it (or the
    /// session has no store), false when the store holds it back for a later write.
    pub(crate) fn prompt_appended(&self, written: bool) {
        self.prompt.send_replace(Some(written));
    }

    /// Keeps a call denied because no one could approve it, for the run's summary.
    pub(crate) fn record_unapproved(&self, call: UnapprovedCall) {
        self.unapproved
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(call);
    }

    /// The calls denied so far because no one could approve them.
    pub(crate) fn take_unapproved(&self) -> Vec<UnapprovedCall> {
        std::mem::take(
            &mut *self
                .unapproved
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// Marks the run as having no face to answer.
    pub(crate) fn with_output(mut self, output: Option<mux_llm::OutputSchema>) -> Self {
        self.output = output;
        self
    }

    pub(crate) fn with_parent(mut self, parent: Option<crate::ParentRun>) -> Self {
        self.parent = parent;
        self
    }

    pub(crate) fn unattended(mut self) -> Self {
        self.attended = false;
        self
    }

    /// Delivers `event` to the run's receiver and subscribers. Not an `async fn`: the event
    /// is boxed before the returned future's first wait, so the loop's states that emit hold
    /// a pointer, not the event (see [`Emitter::emit`]).
    pub(crate) fn emit(&self, event: LoopEvent) -> impl Future<Output = ()> + Send + '_ {
        // Nobody listening (a face-less run): skip the delivery machinery altogether.
        let event = self.emitter.is_listening().then(|| Box::new(event));
        async move {
            if let Some(event) = event {
                self.emitter.emit_boxed(event).await;
            }
        }
    }

    pub(crate) fn state(&self) -> LoopState {
        self.lock_machine().machine.state()
    }

    fn lock_machine(&self) -> std::sync::MutexGuard<'_, Machine> {
        self.machine.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Moves to `to` and emits the change. An invalid move is reported as an error event and
    /// leaves the state alone; it never panics.
    pub(crate) async fn set_state(&self, to: LoopState) {
        let moved = {
            let mut m = self.lock_machine();
            if m.machine.state() == to {
                return;
            }
            m.machine.move_to(to)
        };
        match moved {
            Ok(from) => self.emit(LoopEvent::StateChanged { from, to }).await,
            Err(err) => {
                tracing::error!("{err}");
                self.emit(LoopEvent::Error {
                    kind: "invalid_state".into(),
                    message: err.to_string(),
                })
                .await;
            }
        }
    }

    /// Starts waiting for an answer; the first waiter moves the state.
    pub(crate) async fn begin_wait(&self, waiting: Waiting) {
        let to = {
            let mut m = self.lock_machine();
            match waiting {
                Waiting::Approval => {
                    m.waiting_approvals += 1;
                    (m.waiting_approvals == 1 && m.waiting_inputs == 0)
                        .then_some(LoopState::AwaitingApproval)
                }
                Waiting::Input => {
                    m.waiting_inputs += 1;
                    (m.waiting_inputs == 1).then_some(LoopState::AwaitingInput)
                }
            }
        };
        if let Some(to) = to {
            self.set_state(to).await;
        }
    }

    /// Stops waiting; when nobody waits any more, tools are executing again.
    pub(crate) async fn end_wait(&self, waiting: Waiting) {
        let to = {
            let mut m = self.lock_machine();
            match waiting {
                Waiting::Approval => m.waiting_approvals = m.waiting_approvals.saturating_sub(1),
                Waiting::Input => m.waiting_inputs = m.waiting_inputs.saturating_sub(1),
            }
            let current = m.machine.state();
            if m.waiting_inputs == 0
                && m.waiting_approvals > 0
                && current == LoopState::AwaitingInput
            {
                Some(LoopState::AwaitingApproval)
            } else if m.waiting_inputs == 0 && m.waiting_approvals == 0 && !current.is_terminal() {
                (current != LoopState::ExecutingTools).then_some(LoopState::ExecutingTools)
            } else {
                None
            }
        };
        if let Some(to) = to {
            self.set_state(to).await;
        }
    }

    /// Answers for calls that will ask: a paused run resumed with the answers to its pending
    /// calls.
    pub(crate) fn with_answers(self, answers: impl IntoIterator<Item = (String, Answer)>) -> Self {
        self.answers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(answers);
        self
    }

    /// The answer given in advance for `call_id`, once.
    pub(crate) fn take_answer(&self, call_id: &str) -> Option<Answer> {
        self.answers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(call_id)
    }

    pub(crate) fn expect_approval(&self, call_id: &str) -> oneshot::Receiver<Answer> {
        let (tx, rx) = oneshot::channel();
        self.approvals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(call_id.to_owned(), tx);
        rx
    }

    pub(crate) fn expect_response(&self, call_id: &str) -> oneshot::Receiver<String> {
        let (tx, rx) = oneshot::channel();
        self.responses
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(call_id.to_owned(), tx);
        rx
    }

    /// Delivers an approval; false when no call with this id waits for one.
    pub(crate) fn answer_approval(&self, call_id: &str, answer: Answer) -> bool {
        let waiting = self
            .approvals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(call_id);
        waiting.is_some_and(|tx| tx.send(answer).is_ok())
    }

    /// Delivers a user response; false when no call with this id waits for one.
    pub(crate) fn answer_response(&self, call_id: &str, text: String) -> bool {
        let waiting = self
            .responses
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(call_id);
        waiting.is_some_and(|tx| tx.send(text).is_ok())
    }

    pub(crate) fn forget(&self, call_id: &str) {
        self.approvals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(call_id);
        self.responses
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(call_id);
    }

    pub(crate) fn queue_message(&self, text: String) {
        self.queued_messages
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(text);
    }

    pub(crate) fn take_queued_messages(&self) -> Vec<String> {
        std::mem::take(
            &mut *self
                .queued_messages
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// A hook asked to stop the run; the loop stops at the next turn boundary.
    pub(crate) fn request_stop(&self, hook: &str, reason: &str) {
        let mut stop = self
            .stop_request
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        stop.get_or_insert_with(|| (hook.to_owned(), reason.to_owned()));
    }

    pub(crate) fn stop_requested(&self) -> Option<(String, String)> {
        self.stop_request
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}
