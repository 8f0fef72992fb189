//! Which AG-UI run a thread's events go to: attaching a run for a new loop, detaching it,
//! writing events to it (or keeping them for the next one), and resuming a paused loop with
//! a new run.

use std::sync::Arc;
use std::time::Duration;

use mux_tool::ToolOutput;
use tokio::time::Instant;

use super::interrupts::{answer, check_resume};
use super::state::{State, Thread};
use crate::buffer::RunBuffer;
use crate::error::ErrorCode;
use crate::types::{Event, ResumeEntry};

/// How a resume request checks out against the paused loop.
pub(crate) enum Resumed {
    /// Answers (and frontend results) were delivered; follow the new run.
    Continued,
    /// Nothing is paused and the request does not resume: start a new loop.
    NotPaused,
}

impl Thread {
    /// The attached run, if it has not ended.
    pub(crate) fn busy_with(&self) -> Option<String> {
        let state = self.state();
        state
            .current
            .as_ref()
            .filter(|run| !run.is_done())
            .map(|run| run.run_id.clone())
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
            let State {
                live,
                current,
                answered,
                expired,
                ..
            } = &mut *state;
            let open = live.as_ref().map(|live| &live.interrupts);
            check_resume(&self.id, resume, open, answered, expired)?;
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

    /// Writes events to the attached run, or keeps them for the next one.
    pub(super) fn emit(&self, events: Vec<Event>) {
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
}
