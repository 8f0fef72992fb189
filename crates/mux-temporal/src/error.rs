//! Errors of mux-temporal: each names the operation and the workflow it concerned.

/// What went wrong talking to Temporal or running a worker.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TemporalError {
    /// The address is not a URL the client can dial.
    #[error("temporal: the address `{address}` is not valid: {reason}")]
    Address {
        /// The address given.
        address: String,
        /// Why it is not valid.
        reason: String,
    },
    /// The server could not be reached, or refused the client.
    #[error("temporal: connecting to {address}: {reason}")]
    Connect {
        /// The server's address.
        address: String,
        /// Why.
        reason: String,
    },
    /// The workflow could not be started (an id already running, the server refused).
    #[error("temporal: starting run `{workflow_id}`: {reason}")]
    Start {
        /// The run's workflow id.
        workflow_id: String,
        /// Why.
        reason: String,
    },
    /// A query failed (no worker to answer it, an unknown run).
    #[error("temporal: query `{query}` of run `{workflow_id}`: {reason}")]
    Query {
        /// The run's workflow id.
        workflow_id: String,
        /// The query.
        query: &'static str,
        /// Why.
        reason: String,
    },
    /// An approval was refused (no such pending call, answered already) or not delivered.
    #[error("temporal: approving call `{call_id}` of run `{workflow_id}`: {reason}")]
    Approve {
        /// The run's workflow id.
        workflow_id: String,
        /// The call.
        call_id: String,
        /// Why.
        reason: String,
    },
    /// The cancel request was not delivered.
    #[error("temporal: cancelling run `{workflow_id}`: {reason}")]
    Cancel {
        /// The run's workflow id.
        workflow_id: String,
        /// Why.
        reason: String,
    },
    /// The run was cancelled.
    #[error("temporal: run `{workflow_id}` was cancelled")]
    Cancelled {
        /// The run's workflow id.
        workflow_id: String,
    },
    /// The run failed (a model error that may not be retried, retries spent, a timeout) or
    /// its result could not be read.
    #[error("temporal: run `{workflow_id}` failed: {reason}")]
    Failed {
        /// The run's workflow id.
        workflow_id: String,
        /// Why.
        reason: String,
    },
    /// A worker could not be built or stopped with an error.
    #[error("temporal: worker on task queue `{task_queue}`: {reason}")]
    Worker {
        /// The worker's task queue.
        task_queue: String,
        /// Why.
        reason: String,
    },
}
