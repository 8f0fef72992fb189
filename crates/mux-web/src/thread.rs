//! One thread: the AG-UI run attached to it, and the loop run it holds while that loop is
//! paused on approvals, questions or frontend tool calls.
//!
//! The loop outlives AG-UI runs: a run that pauses ends with `RUN_FINISHED`, the loop keeps
//! waiting, and the next run on the thread answers it and carries on its events. The pump
//! task reads the loop's events, translates them and writes them to the attached run.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use mux_orchestrator::{Answer, EventReceiver, InputSender, LoopInput};
use mux_tool::ToolOutput;
use serde_json::{Value, json};
use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::buffer::RunBuffer;
use crate::error::ErrorCode;
use crate::translate::{Signal, Translator, token_usage};
use crate::types::{
    Event, Interrupt, Outcome, ResumeEntry, ResumeStatus, approval_response_schema,
};

/// What a pending interrupt waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Waits {
    Approval,
    Answer,
}

#[derive(Debug)]
struct Pending {
    call_id: String,
    waits: Waits,
    interrupt: Interrupt,
    deadline: Instant,
    announced: bool,
}

#[derive(Debug)]
struct Frontend {
    tx: oneshot::Sender<ToolOutput>,
    announced: bool,
}

/// A loop run in progress on this thread.
pub(crate) struct LiveLoop {
    input: InputSender,
    cancel: CancellationToken,
    translator: Translator,
    interrupts: BTreeMap<String, Pending>,
    frontend: BTreeMap<String, Frontend>,
    /// Events produced while no AG-UI run was attached.
    carry: Vec<Event>,
    model: String,
}

impl LiveLoop {
    pub(crate) fn new(
        input: InputSender,
        cancel: CancellationToken,
        translator: Translator,
        model: String,
    ) -> Self {
        Self {
            input,
            cancel,
            translator,
            interrupts: BTreeMap::new(),
            frontend: BTreeMap::new(),
            carry: Vec::new(),
            model,
        }
    }
}

#[derive(Default)]
struct State {
    current: Option<Arc<RunBuffer>>,
    live: Option<LiveLoop>,
    answered: HashSet<String>,
    expired: HashSet<String>,
    /// The todo list as the last loop left it.
    todos: Option<Value>,
    /// When a run last attached or the last loop ended.
    last_active: Option<Instant>,
}

/// How a resume request checks out against the paused loop.
pub(crate) enum Resumed {
    /// Answers (and frontend results) were delivered; follow the new run.
    Continued,
    /// Nothing is paused and the request does not resume: start a new loop.
    NotPaused,
}

/// A thread of the run registry.
pub(crate) struct Thread {
    pub(crate) id: String,
    state: Mutex<State>,
    wake: Notify,
    timeout: Duration,
    grace: Duration,
}

impl Thread {
    pub(crate) fn new(id: &str, timeout: Duration, grace: Duration) -> Arc<Self> {
        Arc::new(Self {
            id: id.to_owned(),
            state: Mutex::default(),
            wake: Notify::new(),
            timeout,
            grace,
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The attached run, if it has not ended.
    pub(crate) fn busy_with(&self) -> Option<String> {
        let state = self.state();
        state
            .current
            .as_ref()
            .filter(|run| !run.is_done())
            .map(|run| run.run_id.clone())
    }

    /// Interrupts the paused loop waits for.
    pub(crate) fn pending_interrupts(&self) -> Vec<String> {
        let state = self.state();
        state
            .live
            .as_ref()
            .map(|live| live.interrupts.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The interrupts the loop waits for (including any raised while no run was attached).
    pub(crate) fn open_interrupts(&self) -> Vec<Interrupt> {
        let state = self.state();
        state
            .live
            .as_ref()
            .map(|live| {
                live.interrupts
                    .values()
                    .map(|p| p.interrupt.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether a loop is live (running or paused).
    pub(crate) fn is_live(&self) -> bool {
        self.state().live.is_some()
    }

    /// The todo list the last loop left.
    pub(crate) fn todos(&self) -> Option<Value> {
        self.state().todos.clone()
    }

    /// Attaches `run` as the thread's current run (a new loop is about to start).
    pub(crate) fn attach(&self, run: &Arc<RunBuffer>) {
        let mut state = self.state();
        state.current = Some(Arc::clone(run));
        state.last_active = Some(Instant::now());
    }

    /// Whether the thread has no loop, no run in progress, and nothing happened on it for
    /// `idle`: the registry may forget it (its history stays in the session store).
    pub(crate) fn is_forgettable(&self, idle: Duration) -> bool {
        let state = self.state();
        state.live.is_none()
            && state.current.as_ref().is_none_or(|run| run.is_done())
            && state.last_active.is_none_or(|at| at.elapsed() >= idle)
    }

    /// Detaches `run` if it is still current (its loop could not start).
    pub(crate) fn detach(&self, run: &Arc<RunBuffer>) {
        let mut state = self.state();
        if state
            .current
            .as_ref()
            .is_some_and(|current| Arc::ptr_eq(current, run))
        {
            state.current = None;
        }
    }

    /// Installs a new loop and starts its pump.
    pub(crate) fn start_loop(self: &Arc<Self>, live: LiveLoop, events: EventReceiver) {
        self.state().live = Some(live);
        let thread = Arc::clone(self);
        tokio::spawn(async move { thread.pump(events).await });
    }

    /// Checks `resume` and the frontend results of `messages` against the paused loop; on
    /// success attaches `run`, writes its opening events and delivers the answers.
    pub(crate) async fn resume(
        &self,
        run: &Arc<RunBuffer>,
        resume: &[ResumeEntry],
        tool_results: Vec<(String, String)>,
    ) -> Result<Resumed, (ErrorCode, String)> {
        let mut answers = Vec::new();
        let input = {
            let mut state = self.state();
            for entry in resume {
                let id = &entry.interrupt_id;
                let known = state
                    .live
                    .as_ref()
                    .is_some_and(|live| live.interrupts.contains_key(id));
                if known || state.expired.contains(id) {
                    continue;
                }
                if state.answered.contains(id) {
                    return Err((
                        ErrorCode::InterruptAlreadyAnswered,
                        format!("interrupt `{id}` was answered already"),
                    ));
                }
                return Err((
                    ErrorCode::UnknownInterrupt,
                    format!("thread `{}` has no interrupt `{id}`", self.id),
                ));
            }
            let State {
                live,
                current,
                answered,
                ..
            } = &mut *state;
            let Some(live) = live.as_mut() else {
                return Ok(Resumed::NotPaused);
            };
            let delivers = tool_results
                .iter()
                .any(|(id, _)| live.frontend.contains_key(id));
            if resume.is_empty() && !delivers {
                return Ok(Resumed::NotPaused);
            }
            for entry in resume {
                if let Some(pending) = live.interrupts.remove(&entry.interrupt_id) {
                    answered.insert(entry.interrupt_id.clone());
                    answers.push(answer(&pending, entry));
                }
            }
            for (call_id, content) in tool_results {
                if let Some(waiter) = live.frontend.remove(&call_id) {
                    let _ = waiter.tx.send(ToolOutput::text(content));
                }
            }
            *current = Some(Arc::clone(run));
            let mut opening = live.translator.attach();
            opening.append(&mut live.carry);
            run.push(opening);
            live.input.clone()
        };
        for answer in answers {
            input.send(answer).await;
        }
        self.wake.notify_one();
        Ok(Resumed::Continued)
    }

    /// Registers a frontend call waiting for its result.
    pub(crate) fn await_frontend(&self, call_id: &str, tx: oneshot::Sender<ToolOutput>) {
        if let Some(live) = self.state().live.as_mut() {
            live.frontend.insert(
                call_id.to_owned(),
                Frontend {
                    tx,
                    announced: false,
                },
            );
        }
        self.wake.notify_one();
    }

    /// Forgets a frontend call (answered, timed out or cancelled).
    pub(crate) fn forget_frontend(&self, call_id: &str) {
        if let Some(live) = self.state().live.as_mut() {
            live.frontend.remove(call_id);
        }
    }

    /// Cancels the live loop, if any.
    pub(crate) fn cancel(&self) -> bool {
        let state = self.state();
        match &state.live {
            Some(live) => {
                live.cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// Writes events to the attached run, or keeps them for the next one.
    fn emit(&self, events: Vec<Event>) {
        if events.is_empty() {
            return;
        }
        let mut state = self.state();
        match &state.current {
            Some(run) if !run.is_done() => {
                run.push(events);
            }
            _ => {
                if let Some(live) = state.live.as_mut() {
                    live.carry.extend(events);
                }
            }
        }
    }

    /// Reads the loop's events until it ends.
    async fn pump(self: Arc<Self>, mut events: EventReceiver) {
        loop {
            let (pause_at, expire_at) = self.timers();
            let event = tokio::select! {
                event = events.recv() => event,
                () = self.wake.notified() => continue,
                () = sleep_until(pause_at), if pause_at.is_some() => {
                    self.pause();
                    continue;
                }
                () = sleep_until(expire_at), if expire_at.is_some() => {
                    self.expire().await;
                    continue;
                }
            };
            let Some(event) = event else {
                self.end(Ending::Failed {
                    kind: "loop_ended".into(),
                    message: "the loop ended without a final event".into(),
                });
                return;
            };
            let (out, signal) = {
                let mut state = self.state();
                match state.live.as_mut() {
                    Some(live) => live.translator.translate(event),
                    None => return,
                }
            };
            self.emit(out);
            match signal {
                Signal::None => {}
                Signal::Approval {
                    call_id,
                    name,
                    input,
                    reason,
                } => {
                    let message = format!("Allow `{name}` with {input}? ({reason})");
                    self.interrupt(
                        call_id,
                        Waits::Approval,
                        message,
                        approval_response_schema(),
                    );
                }
                Signal::Question { call_id, question } => {
                    let schema = json!({"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]});
                    self.interrupt(call_id, Waits::Answer, question, schema);
                }
                Signal::Finished { text, usage } => {
                    return self.end(Ending::Finished { text, usage });
                }
                Signal::Cancelled => return self.end(Ending::Cancelled),
                Signal::Failed { kind, message } => {
                    return self.end(Ending::Failed { kind, message });
                }
            }
        }
    }

    fn interrupt(&self, call_id: String, waits: Waits, message: String, schema: Value) {
        let id = format!("{}-{call_id}-{}", self.id, crate::security::unguessable());
        let reason = match waits {
            Waits::Approval => "tool_call",
            Waits::Answer => "input",
        };
        let mut state = self.state();
        if let Some(live) = state.live.as_mut() {
            let interrupt = Interrupt {
                id: id.clone(),
                reason: reason.into(),
                message: Some(message),
                tool_call_id: Some(call_id.clone()),
                response_schema: Some(schema),
                expires_at: None,
            };
            live.interrupts.insert(
                id,
                Pending {
                    call_id,
                    waits,
                    interrupt,
                    deadline: Instant::now() + self.timeout,
                    announced: false,
                },
            );
        }
    }

    /// When to end the attached run on pending calls, and when the next one expires.
    fn timers(&self) -> (Option<Instant>, Option<Instant>) {
        let state = self.state();
        let Some(live) = state.live.as_ref() else {
            return (None, None);
        };
        let attached = state.current.as_ref().is_some_and(|run| !run.is_done());
        let unannounced = live.interrupts.values().any(|p| !p.announced)
            || live.frontend.values().any(|f| !f.announced);
        let pause = (attached && unannounced).then(|| Instant::now() + self.grace);
        let expire = live.interrupts.values().map(|p| p.deadline).min();
        (pause, expire)
    }

    /// Ends the attached run: interrupts if approvals or answers are pending, else success
    /// with the frontend calls that wait for results.
    fn pause(&self) {
        let mut state = self.state();
        let State { current, live, .. } = &mut *state;
        let (Some(run), Some(live)) = (current.take(), live.as_mut()) else {
            return;
        };
        let mut events = live.translator.detach();
        let interrupts: Vec<Interrupt> = live
            .interrupts
            .values_mut()
            .map(|p| {
                p.announced = true;
                p.interrupt.clone()
            })
            .collect();
        let pending_tool_call_ids: Vec<String> = live
            .frontend
            .iter_mut()
            .map(|(id, f)| {
                f.announced = true;
                id.clone()
            })
            .collect();
        let outcome = if interrupts.is_empty() {
            Outcome::Success {
                pending_tool_call_ids,
            }
        } else {
            Outcome::Interrupt { interrupts }
        };
        events.push(Event::RunFinished {
            thread_id: run.thread_id.clone(),
            run_id: run.run_id.clone(),
            result: None,
            outcome,
            usage: Vec::new(),
        });
        run.push(events);
    }

    /// Denies (or answers) the interrupts whose time is up; the reason says they expired.
    async fn expire(&self) {
        let now = Instant::now();
        let (input, answers) = {
            let mut state = self.state();
            let State { live, expired, .. } = &mut *state;
            let Some(live) = live.as_mut() else { return };
            let due: Vec<String> = live
                .interrupts
                .iter()
                .filter(|(_, p)| p.deadline <= now)
                .map(|(id, _)| id.clone())
                .collect();
            let after = format!("{:?}", self.timeout);
            let mut answers = Vec::new();
            for id in due {
                if let Some(p) = live.interrupts.remove(&id) {
                    expired.insert(id);
                    let reason = format!("the approval expired: nobody answered within {after}");
                    answers.push(match p.waits {
                        Waits::Approval => LoopInput::ToolApproval {
                            call_id: p.call_id,
                            answer: Answer::Deny { reason },
                        },
                        Waits::Answer => LoopInput::UserResponse {
                            call_id: p.call_id,
                            text: format!("(no answer: the question expired after {after})"),
                        },
                    });
                }
            }
            (live.input.clone(), answers)
        };
        for answer in answers {
            input.send(answer).await;
        }
    }

    fn end(&self, ending: Ending) {
        let mut state = self.state();
        state.last_active = Some(Instant::now());
        let live = state.live.take();
        if let Some(todos) = live.as_ref().and_then(|l| l.translator.todos()) {
            state.todos = Some(todos.clone());
        }
        let Some(run) = state.current.take() else {
            return;
        };
        if run.is_done() {
            return;
        }
        let event = match ending {
            Ending::Finished { text, usage } => Event::RunFinished {
                thread_id: run.thread_id.clone(),
                run_id: run.run_id.clone(),
                result: Some(Value::String(text)),
                outcome: Outcome::Success {
                    pending_tool_call_ids: Vec::new(),
                },
                usage: live
                    .as_ref()
                    .map(|l| vec![token_usage(&usage, &l.model)])
                    .unwrap_or_default(),
            },
            Ending::Cancelled => Event::RunFinished {
                thread_id: run.thread_id.clone(),
                run_id: run.run_id.clone(),
                result: None,
                outcome: Outcome::Cancelled,
                usage: Vec::new(),
            },
            Ending::Failed { kind, message } => Event::RunError {
                message,
                code: Some(kind),
            },
        };
        run.push([event]);
    }
}

enum Ending {
    Finished { text: String, usage: mux_llm::Usage },
    Cancelled,
    Failed { kind: String, message: String },
}

/// The loop input that answers `pending` with `entry`.
fn answer(pending: &Pending, entry: &ResumeEntry) -> LoopInput {
    let payload = entry.payload.clone().unwrap_or(Value::Null);
    match pending.waits {
        Waits::Approval => {
            let approved = entry.status == ResumeStatus::Resolved
                && payload["approved"].as_bool() == Some(true);
            let edited = payload.get("editedArgs").is_some_and(|v| !v.is_null());
            let decision = if approved && edited {
                // The loop has no "run with other arguments" answer: never run the original
                // arguments when the person approved different ones.
                Answer::Deny {
                    reason: "the user approved edited arguments, which this server cannot apply; \
                             call the tool again with the arguments the user wants"
                        .to_owned(),
                }
            } else if approved {
                Answer::AllowOnce
            } else {
                let reason = payload["reason"]
                    .as_str()
                    .filter(|r| !r.trim().is_empty())
                    .map(|r| format!("the user denied this call: {r}"))
                    .unwrap_or_else(|| "the user denied this call".to_owned());
                Answer::Deny { reason }
            };
            LoopInput::ToolApproval {
                call_id: pending.call_id.clone(),
                answer: decision,
            }
        }
        Waits::Answer => LoopInput::UserResponse {
            call_id: pending.call_id.clone(),
            text: match (&entry.status, payload["answer"].as_str()) {
                (ResumeStatus::Resolved, Some(text)) => text.to_owned(),
                _ => "(the user declined to answer)".to_owned(),
            },
        },
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => futures::future::pending().await,
    }
}
