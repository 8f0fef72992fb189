//! The worker's side: a process that serves an agent's runs on a task queue. Any number of
//! workers of the same agent may serve one queue; a run survives any of them dying.

use mux_orchestrator::Agent;
use temporalio_client::Client;
use temporalio_sdk::{Runtime, Worker, WorkerOptions};

use crate::activities::AgentActivities;
use crate::error::TemporalError;
use crate::workflow::AgentWorkflow;

/// A Temporal worker running the agent workflow and its activities for one agent.
pub struct AgentWorker {
    task_queue: String,
    worker: Worker,
    // Kept alive as long as the worker: it owns the SDK's telemetry and worker heartbeats.
    _runtime: Runtime,
}

impl std::fmt::Debug for AgentWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentWorker")
            .field("task_queue", &self.task_queue)
            .finish_non_exhaustive()
    }
}

impl AgentWorker {
    /// A worker for `agent` on `task_queue`, over `client`. Call inside a tokio runtime.
    pub fn new(
        agent: Agent,
        client: Client,
        task_queue: impl Into<String>,
    ) -> Result<Self, TemporalError> {
        let task_queue = task_queue.into();
        let fail = |reason: String| TemporalError::Worker {
            task_queue: task_queue.clone(),
            reason,
        };
        let runtime = Runtime::from_current_tokio(Default::default())
            .map_err(|err| fail(err.to_string()))?;
        let activities = AgentActivities::new(agent).map_err(|err| fail(err.to_string()))?;
        let options = WorkerOptions::new(task_queue.clone())
            .register_activities(activities)
            .register_workflow::<AgentWorkflow>()
            .map_err(|err| fail(err.to_string()))?
            .build();
        let worker = Worker::new(&runtime, client, options).map_err(|err| fail(err.to_string()))?;
        Ok(Self {
            task_queue,
            worker,
            _runtime: runtime,
        })
    }

    /// The task queue served.
    pub fn task_queue(&self) -> &str {
        &self.task_queue
    }

    /// A function that asks the worker to stop: it finishes what it is running (or hands it
    /// back to the server) and [`run`](Self::run) returns.
    pub fn shutdown_handle(&self) -> impl Fn() + Send + Sync + 'static {
        self.worker.shutdown_handle()
    }

    /// Serves runs until shut down.
    pub async fn run(mut self) -> Result<(), TemporalError> {
        self.worker
            .run()
            .await
            .map_err(|err| TemporalError::Worker {
                task_queue: self.task_queue.clone(),
                reason: err.to_string(),
            })
    }
}
