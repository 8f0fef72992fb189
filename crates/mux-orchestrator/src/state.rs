//! The loop's state machine: which states exist and which moves between them are valid.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Where a run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoopState {
    /// No run in progress.
    Idle,
    /// The model is answering.
    Streaming,
    /// A tool call waits for a face's approval.
    AwaitingApproval,
    /// Tool calls are running.
    ExecutingTools,
    /// The `ask_user` tool waits for the user's answer.
    AwaitingInput,
    /// Older turns are being summarized.
    Compacting,
    /// The run ended normally.
    Complete,
    /// The run ended with an error.
    Error,
    /// The run was cancelled.
    Cancelled,
}

impl LoopState {
    /// Whether the run has ended in this state.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Complete | Self::Error | Self::Cancelled)
    }

    /// Whether moving from `self` to `to` is allowed.
    pub fn can_move_to(self, to: LoopState) -> bool {
        use LoopState::*;
        if self == to {
            return false;
        }
        // Any live state may end in an error or a cancellation.
        if !self.is_terminal() && matches!(to, Error | Cancelled) {
            return true;
        }
        matches!(
            (self, to),
            (Idle, Streaming | Compacting)
                // A run that first resolves the calls an earlier run left open.
                | (Idle, ExecutingTools)
                | (Compacting, Streaming | Idle)
                // A run stopped by its budget before a model call.
                | (Idle | Compacting, Complete)
                // A turn continued by a queued message or a stop hook may compact first.
                | (Streaming, ExecutingTools | Compacting | Complete)
                | (
                    ExecutingTools,
                    AwaitingApproval | AwaitingInput | Streaming | Compacting | Complete
                )
                | (AwaitingApproval, ExecutingTools | AwaitingInput)
                | (AwaitingInput, ExecutingTools | AwaitingApproval)
                | (Complete | Error | Cancelled, Idle)
        )
    }
}

impl fmt::Display for LoopState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Self::Idle => "idle",
            Self::Streaming => "streaming",
            Self::AwaitingApproval => "awaiting_approval",
            Self::ExecutingTools => "executing_tools",
            Self::AwaitingInput => "awaiting_input",
            Self::Compacting => "compacting",
            Self::Complete => "complete",
            Self::Error => "error",
            Self::Cancelled => "cancelled",
        };
        f.write_str(name)
    }
}

/// A move the state machine refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid loop state transition from {from} to {to}")]
pub struct InvalidTransition {
    /// The current state.
    pub from: LoopState,
    /// The refused target.
    pub to: LoopState,
}

/// The current state, changed only through valid transitions.
#[derive(Debug)]
pub(crate) struct StateMachine {
    state: LoopState,
}

impl StateMachine {
    pub(crate) fn new() -> Self {
        Self {
            state: LoopState::Idle,
        }
    }

    pub(crate) fn state(&self) -> LoopState {
        self.state
    }

    /// Moves to `to`, returning the previous state.
    pub(crate) fn move_to(&mut self, to: LoopState) -> Result<LoopState, InvalidTransition> {
        let from = self.state;
        if !from.can_move_to(to) {
            return Err(InvalidTransition { from, to });
        }
        self.state = to;
        Ok(from)
    }
}

#[cfg(test)]
mod tests {
    use super::LoopState::*;
    use super::*;

    #[test]
    fn the_happy_path_is_valid() {
        let mut machine = StateMachine::new();
        for to in [
            Streaming,
            ExecutingTools,
            AwaitingApproval,
            ExecutingTools,
            Streaming,
            Complete,
            Idle,
        ] {
            machine.move_to(to).unwrap();
        }
        assert_eq!(machine.state(), Idle);
    }

    #[test]
    fn a_continued_turn_may_compact_before_it_streams_again() {
        let mut machine = StateMachine::new();
        for to in [Streaming, Compacting, Streaming, Complete] {
            machine.move_to(to).unwrap();
        }
    }

    #[test]
    fn invalid_moves_are_refused_and_leave_the_state_alone() {
        let mut machine = StateMachine::new();
        assert_eq!(
            machine.move_to(AwaitingApproval),
            Err(InvalidTransition {
                from: Idle,
                to: AwaitingApproval
            })
        );
        assert_eq!(machine.state(), Idle);
        machine.move_to(Cancelled).unwrap();
        assert!(
            machine.move_to(Streaming).is_err(),
            "a terminal state only goes back to idle"
        );
        assert!(machine.move_to(Error).is_err());
    }

    #[test]
    fn every_live_state_can_fail_or_be_cancelled() {
        for from in [
            Idle,
            Streaming,
            AwaitingApproval,
            ExecutingTools,
            AwaitingInput,
            Compacting,
        ] {
            assert!(
                from.can_move_to(Error) && from.can_move_to(Cancelled),
                "{from}"
            );
        }
    }
}
