//! A write, what it did or why it failed, and the job that carries it to a commit.

use tokio::sync::oneshot;

use super::runs::{RunAppend, RunBegin};
use super::sessions::SessionWrite;
use crate::fault::StoreFault;

/// One write: a run begun, a run's events and status, or a session's records and metadata.
#[derive(Debug)]
pub(crate) enum Write {
    /// See [`RunBegin`].
    Begin(RunBegin),
    /// See [`RunAppend`].
    Run(RunAppend),
    /// See [`SessionWrite`].
    Session(SessionWrite),
}

/// What a write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Written {
    /// A run's begin: whether it was inserted (not when its id is taken or its session has a
    /// run in progress).
    Begin(bool),
    /// A run's append: the number before its first event, or `None` when the owner does not
    /// hold the run (nothing was written).
    Run(Option<i64>),
    /// A session's write: whether the session exists (nothing was written when not).
    Session(bool),
}

/// Why a write failed: the database's error, as text (one error answers every write of a
/// batch).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{reason}")]
pub(crate) struct Failure {
    /// The database's error.
    pub(crate) reason: String,
    /// The store's fault it shows, if any (a refused statement shows none).
    pub(crate) fault: Option<StoreFault>,
}

impl Failure {
    pub(super) fn of(err: &sqlx::Error) -> Self {
        Self {
            reason: err.to_string(),
            fault: StoreFault::of_sqlx(err),
        }
    }

    /// A commit whose answer was lost: `reason` says what is known of it.
    pub(crate) fn unanswered(reason: String) -> Self {
        Self {
            reason,
            fault: Some(StoreFault::Unanswered),
        }
    }
}

impl Write {
    /// What orders this write: writes with the same key commit in the order they were queued.
    pub(super) fn key(&self) -> Key {
        match self {
            // One begin per session a batch: a batch's begins do not meet each other.
            Self::Begin(begin) => Key::Session(begin.session_id.clone()),
            Self::Run(run) => Key::Run(run.run_id.clone()),
            Self::Session(session) => Key::Session(session.id.clone()),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum Key {
    Run(String),
    Session(String),
}

/// A write and where its answer goes.
pub(super) struct Job {
    pub(super) write: Write,
    pub(super) reply: oneshot::Sender<Result<Written, Failure>>,
    /// Whether it commits in a batch of its own (its batch was given up).
    pub(super) alone: bool,
}
