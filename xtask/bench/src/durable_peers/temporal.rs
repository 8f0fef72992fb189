//! The same workload on Temporal (issue 45, item 4: a figure, not a target): mux-temporal's
//! agent workflow on the Temporal CLI's dev server (`temporal server start-dev`, in memory,
//! installed by mux-testkit into a venv under the target dir), one worker in this process
//! (the SDK's own threads), runs started and awaited by this process's client. A run is the
//! same three steps: a model activity that asks for `count`, the review and the `count`
//! activity, a model activity that answers "ok", each recorded in Temporal's history before
//! the next starts.

use std::path::Path;
use std::sync::Arc;

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
        let (agent, prefix) = (self.agent.clone(), prefix.to_owned());
        crate::load::spread(runs, concurrency, move |n| {
            let (agent, name) = (agent.clone(), format!("{prefix}-{n}"));
            async move {
                let run = agent
                    .start(&name, name.clone())
                    .await
                    .map_err(|e| e.to_string())?;
                let outcome = run.outcome().await.map_err(|e| e.to_string())?;
                if outcome.status != RunStatus::Complete || outcome.text != "ok" {
                    return Err(format!("run {name} did not finish with ok: {outcome:?}"));
                }
                Ok(())
            }
        })
        .await
    }
}
