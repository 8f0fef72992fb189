//! One thread: the AG-UI run attached to it, and the loop run it holds while that loop is
//! paused on approvals, questions or frontend tool calls.
//!
//! The loop outlives AG-UI runs: a run that pauses ends with `RUN_FINISHED`, the loop keeps
//! waiting, and the next run on the thread answers it and carries on its events.
//!
//! - `state`: the thread, its loop and what they wait for;
//! - `attach`: which AG-UI run the thread's events go to, and resuming a paused loop;
//! - `interrupts`: raising interrupts, ending a run on them, expiring them, and mapping the
//!   answers of a resume to loop inputs;
//! - `pump`: the task that reads the loop's events, translates them and writes them to the
//!   attached run until the loop ends.

mod attach;
mod interrupts;
mod pump;
mod state;

pub(crate) use attach::Resumed;
pub(crate) use interrupts::{approval, reply};
pub(crate) use state::{LiveLoop, Prefill, Thread};
