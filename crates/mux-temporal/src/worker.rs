//! The worker's side: a process that serves an agent's runs on a task queue. Any number of
//! workers of the same agent may serve one queue; a run survives any of them dying.

use std::time::Duration;

use mux_orchestrator::Agent;
use temporalio_client::Client;
use temporalio_sdk::{Runtime, Worker, WorkerOptions};

use crate::activities::AgentActivities;
use crate::error::TemporalError;
use crate::workflow::AgentWorkflow;

/// How a worker serves its queue.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct WorkerSettings {
    /// How long a run's next step waits for the worker that ran its last one (Temporal's
    /// sticky queue) before any worker may take it: the delay before a run whose worker died
    /// between steps goes on elsewhere. Default 10 s, Temporal's.
    pub sticky_timeout: Duration,
    /// Runs kept in memory between steps. Default 1000.
    pub max_cached_runs: usize,
}

impl Default for WorkerSettings {
    fn default() -> Self {
        Self {
            sticky_timeout: Duration::from_secs(10),
            max_cached_runs: 1000,
        }
    }
}

impl WorkerSettings {
    /// Sets [`sticky_timeout`](Self::sticky_timeout).
    pub fn sticky_timeout(mut self, timeout: Duration) -> Self {
        self.sticky_timeout = timeout;
        self
    }

    /// Sets [`max_cached_runs`](Self::max_cached_runs).
    pub fn max_cached_runs(mut self, runs: usize) -> Self {
        self.max_cached_runs = runs;
        self
    }
}

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
    /// A worker for `agent` on `task_queue`, over `client`, with the default
    /// [`WorkerSettings`]. Call inside a tokio runtime.
    pub fn new(
        agent: Agent,
        client: Client,
        task_queue: impl Into<String>,
    ) -> Result<Self, TemporalError> {
        Self::with_settings(agent, client, task_queue, WorkerSettings::default())
    }

    /// A worker for `agent` on `task_queue`, over `client`, with `settings`. Call inside a
    /// tokio runtime.
    pub fn with_settings(
        agent: Agent,
        client: Client,
        task_queue: impl Into<String>,
        settings: WorkerSettings,
    ) -> Result<Self, TemporalError> {
        let task_queue = task_queue.into();
        let fail = |reason: String| TemporalError::Worker {
            task_queue: task_queue.clone(),
            reason,
        };
        let runtime =
            Runtime::from_current_tokio(Default::default()).map_err(|err| fail(err.to_string()))?;
        let activities = AgentActivities::new(agent).map_err(|err| fail(err.to_string()))?;
        let options = WorkerOptions::new(task_queue.clone())
            .register_activities(activities)
            .register_workflow::<AgentWorkflow>()
            .map_err(|err| fail(err.to_string()))?
            .sticky_queue_schedule_to_start_timeout(settings.sticky_timeout)
            .max_cached_workflows(settings.max_cached_runs)
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

    /// A worker for `agent` on a thread of its own, with a tokio runtime of its own (the
    /// SDK's worker future is not `Send`, so it cannot be handed to `tokio::spawn`). Returns
    /// once the worker is built; it serves runs until the returned value is shut down or
    /// dropped.
    pub fn spawn(
        agent: Agent,
        client: Client,
        task_queue: impl Into<String>,
        settings: WorkerSettings,
    ) -> Result<WorkerThread, TemporalError> {
        let task_queue = task_queue.into();
        let queue = task_queue.clone();
        let fail = move |reason: String| TemporalError::Worker {
            task_queue: queue.clone(),
            reason,
        };
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        // Asked to stop (or the handle dropped): the worker's own thread starts the shutdown,
        // inside the runtime the SDK needs for it.
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(format!("mux-temporal {task_queue}"))
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(err) => {
                        let _ = ready_tx.send(Err(fail(err.to_string())));
                        return Ok(());
                    }
                };
                runtime.block_on(async move {
                    let worker =
                        match AgentWorker::with_settings(agent, client, task_queue, settings) {
                            Ok(worker) => worker,
                            Err(err) => {
                                let _ = ready_tx.send(Err(err));
                                return Ok(());
                            }
                        };
                    let stop = worker.shutdown_handle();
                    let _ = ready_tx.send(Ok(()));
                    let mut run = std::pin::pin!(worker.run());
                    tokio::select! {
                        biased;
                        result = &mut run => return result,
                        _ = stop_rx => stop(),
                    }
                    run.await
                })
            })
            .map_err(|err| TemporalError::Worker {
                task_queue: String::new(),
                reason: format!("spawning the worker's thread: {err}"),
            })?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(WorkerThread {
                stop: Some(stop_tx),
                thread: Some(thread),
            }),
            Ok(Err(err)) => {
                let _ = thread.join();
                Err(err)
            }
            Err(_) => Err(TemporalError::Worker {
                task_queue: String::new(),
                reason: "the worker's thread ended before the worker was built".into(),
            }),
        }
    }

    /// Serves runs until shut down. The future is not `Send`: await it where it was built, or
    /// use [`spawn`](Self::spawn).
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

/// A worker on a thread of its own ([`AgentWorker::spawn`]): shut down and joined on drop.
pub struct WorkerThread {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<Result<(), TemporalError>>>,
}

impl std::fmt::Debug for WorkerThread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerThread")
            .field("running", &self.thread.is_some())
            .finish_non_exhaustive()
    }
}

impl WorkerThread {
    /// Asks the worker to stop and waits for its thread: what it was running finishes or
    /// goes back to the server. Returns the worker's error, if it stopped with one.
    pub fn shutdown(mut self) -> Result<(), TemporalError> {
        self.stop_and_join()
    }

    fn stop_and_join(&mut self) -> Result<(), TemporalError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.thread.take().map(std::thread::JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(TemporalError::Worker {
                task_queue: String::new(),
                reason: "the worker's thread panicked".into(),
            }),
            None => Ok(()),
        }
    }
}

impl Drop for WorkerThread {
    fn drop(&mut self) {
        if let Err(err) = self.stop_and_join() {
            tracing::warn!(target: "mux_temporal", error = %err, "worker stopped with an error");
        }
    }
}
