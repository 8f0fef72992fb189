//! The same workload on Temporal (issue 45, item 4: a figure, not a target): mux-temporal's
//! agent workflow on the Temporal CLI's dev server (`temporal server start-dev`, in memory,
//! installed by mux-testkit into a venv under the target dir), one worker in this process
//! (the SDK's own threads), runs started and awaited by this process's client. A run is the
//! same three steps: a model activity that asks for `count`, the review and the `count`
//! activity, a model activity that answers "ok", each recorded in Temporal's history before
//! the next starts.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use mux_temporal::{AgentWorker, RunStatus, TemporalAgent, WorkerSettings, WorkerThread, connect};
use mux_testkit::temporal::DevServer;
use mux_tool::ApprovalPolicy;

use super::server::{Count, Scripted};
use crate::load::Load;

/// The task queue of the bench's worker.
const QUEUE: &str = "durable-peers";

/// A dev server, a client and one worker serving the workload.
pub(crate) struct Temporal {
    agent: TemporalAgent,
    _worker: WorkerThread,
    _server: DevServer,
}

impl Temporal {
    /// Starts the server and a worker whose `count` appends to `counts`.
    pub(crate) fn start(rt: &tokio::runtime::Runtime, counts: &Path) -> Result<Self, String> {
        let dir = crate::process::root().join("target");
        let server = DevServer::start(&dir)?;
        let registry = mux_tool::Registry::new();
        registry
            .register(Count::new(counts.to_owned())?)
            .map_err(|e| e.to_string())?;
        let agent =
            mux_orchestrator::Agent::builder_shared(Arc::new(Scripted { slow: None }), "bench")
                .tools(registry.list())
                .approval(ApprovalPolicy::Never)
                .build()
                .map_err(|e| e.to_string())?;
        let client = rt
            .block_on(connect(&server.address(), "default"))
            .map_err(|e| e.to_string())?;
        let worker = rt
            .block_on(async {
                AgentWorker::spawn(
                    agent.clone(),
                    client.clone(),
                    QUEUE,
                    WorkerSettings::default(),
                )
            })
            .map_err(|e| e.to_string())?;
        Ok(Self {
            agent: TemporalAgent::new(client, QUEUE, &agent),
            _worker: worker,
            _server: server,
        })
    }

    /// `runs` runs named `{prefix}-{n}`, `concurrency` at a time, each awaited to its outcome
    /// and checked for "ok".
    pub(crate) async fn load(
        &self,
        prefix: &str,
        runs: usize,
        concurrency: usize,
    ) -> Result<Load, String> {
        let next = Arc::new(AtomicUsize::new(0));
        let started = Instant::now();
        let mut workers = Vec::new();
        for _ in 0..concurrency {
            let (agent, next, prefix) = (self.agent.clone(), Arc::clone(&next), prefix.to_owned());
            workers.push(tokio::spawn(async move {
                let mut latencies = Vec::new();
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= runs {
                        return Ok::<_, String>(latencies);
                    }
                    let name = format!("{prefix}-{n}");
                    let t = Instant::now();
                    let run = agent
                        .start(&name, name.clone())
                        .await
                        .map_err(|e| e.to_string())?;
                    let outcome = run.outcome().await.map_err(|e| e.to_string())?;
                    if outcome.status != RunStatus::Complete || outcome.text != "ok" {
                        return Err(format!("run {name} did not finish with ok: {outcome:?}"));
                    }
                    latencies.push(t.elapsed());
                }
            }));
        }
        let mut latencies = Vec::new();
        for worker in workers {
            latencies.extend(worker.await.map_err(|e| e.to_string())??);
        }
        let elapsed = started.elapsed();
        latencies.sort();
        let p99 = latencies
            .get((latencies.len() * 99 / 100).min(latencies.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default();
        Ok(Load {
            runs_per_s: runs as f64 / elapsed.as_secs_f64(),
            p99_ms: p99.as_secs_f64() * 1000.0,
        })
    }
}
