//! The thread, the loop it holds, and what that loop waits for.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use mux_orchestrator::{InputSender, RunHandle};
use mux_tool::ToolOutput;
use serde_json::Value;
use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::buffer::RunBuffer;
use crate::translate::Translator;
use crate::types::{Event, Interrupt};

/// What a pending interrupt waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Waits {
    /// A tool approval.
    Approval,
    /// An answer to a question (`ask_user`).
    Answer,
}

/// An interrupt the loop waits for.
#[derive(Debug)]
pub(super) struct Pending {
    /// The tool call it is about.
    pub(super) call_id: String,
    pub(super) waits: Waits,
    pub(super) interrupt: Interrupt,
    /// When it expires.
    pub(super) deadline: Instant,
    /// Whether a run ended on it already.
    pub(super) announced: bool,
}

/// An answer that came while the loop was evicted, for the rebuilt loop's call of the same
/// id: a question's answer, or a frontend tool's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Prefill {
    /// The answer to an `ask_user` question.
    Answer(String),
    /// A frontend tool's result.
    Result(String),
}

/// A frontend tool call waiting for its result.
#[derive(Debug)]
pub(super) struct Frontend {
    pub(super) tx: oneshot::Sender<ToolOutput>,
    /// Whether a run ended on it already.
    pub(super) announced: bool,
}

/// A loop run in progress on this thread.
pub(crate) struct LiveLoop {
    pub(super) input: InputSender,
    pub(super) cancel: CancellationToken,
    pub(super) translator: Translator,
    pub(super) interrupts: BTreeMap<String, Pending>,
    pub(super) frontend: BTreeMap<String, Frontend>,
    /// Events produced while no AG-UI run was attached.
    pub(super) carry: Vec<Event>,
    pub(super) model: String,
    /// Stops the loop's task without a word (eviction, a process going away).
    pub(super) handle: RunHandle,
    /// Calls whose arguments arrived and whose result has not.
    pub(super) open_calls: HashSet<String>,
}

impl LiveLoop {
    pub(crate) fn new(
        input: InputSender,
        cancel: CancellationToken,
        translator: Translator,
        model: String,
        handle: RunHandle,
    ) -> Self {
        Self {
            input,
            cancel,
            translator,
            interrupts: BTreeMap::new(),
            frontend: BTreeMap::new(),
            carry: Vec::new(),
            model,
            handle,
            open_calls: HashSet::new(),
        }
    }

    /// Whether everything the loop waits for is stored: it waits for approvals, answers to
    /// questions or frontend results, and no other call is open. Such a loop can be dropped
    /// and rebuilt from the session: a rebuilt loop asks its approvals and questions and calls
    /// its frontend tools again under the same call ids (`ask_user` and frontend tools are
    /// read-only), and answers and results given meanwhile are [`Prefill`]ed.
    pub(super) fn is_evictable(&self) -> bool {
        (!self.frontend.is_empty() || !self.interrupts.is_empty())
            && self.open_calls.iter().all(|id| {
                self.frontend.contains_key(id) || self.interrupts.values().any(|p| &p.call_id == id)
            })
    }
}

#[derive(Default)]
pub(super) struct State {
    pub(super) current: Option<Arc<RunBuffer>>,
    pub(super) live: Option<LiveLoop>,
    /// Interrupts answered (a second answer is refused).
    pub(super) answered: HashSet<String>,
    /// Interrupts that expired (a late answer is ignored).
    pub(super) expired: HashSet<String>,
    /// The todo list as the last loop left it.
    pub(super) todos: Option<Value>,
    /// When a run last attached or the last loop ended.
    pub(super) last_active: Option<Instant>,
    /// Whether the last loop was evicted on its pause (the store holds it).
    pub(super) evicted: bool,
    /// Answers for the rebuilt loop, by call id.
    pub(super) prefills: HashMap<String, Prefill>,
}

/// A thread of the run registry.
pub(crate) struct Thread {
    pub(crate) id: String,
    state: Mutex<State>,
    pub(super) wake: Notify,
    /// How long an interrupt waits for its answer.
    pub(super) timeout: Duration,
    /// How long after the last event a run ends on pending calls.
    pub(super) grace: Duration,
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

    pub(super) fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
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

    /// Whether the last loop was evicted on its pause: its state is in the session and the
    /// run store only.
    pub(crate) fn was_evicted(&self) -> bool {
        self.state().evicted
    }

    /// Answers the rebuilt loop's calls get at once, by call id (replacing any left).
    pub(crate) fn prefill(&self, prefills: HashMap<String, Prefill>) {
        self.state().prefills = prefills;
    }

    /// Takes the prefilled answer of `call_id`, if any.
    pub(super) fn take_prefill(&self, call_id: &str) -> Option<Prefill> {
        self.state().prefills.remove(call_id)
    }

    /// Whether a loop is live (running or paused).
    pub(crate) fn is_live(&self) -> bool {
        self.state().live.is_some()
    }

    /// The todo list the last loop left.
    pub(crate) fn todos(&self) -> Option<Value> {
        self.state().todos.clone()
    }

    /// Stops the live loop's task without a word (nothing more reaches the session), as if
    /// the process had ended.
    pub(crate) fn abort(&self) {
        let mut state = self.state();
        // The attached run hears nothing more from here (its events stop where they are).
        state.current = None;
        if let Some(live) = state.live.take() {
            live.handle.abort();
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
}
