//! The caller's side: start an agent's run on Temporal, and from any process (any face) read
//! its history and pending approvals, answer them, cancel it, and wait for its outcome.

use std::time::Duration;

use mux_llm::{Message, RetryPolicy};
use mux_orchestrator::Agent;
use mux_permission::Answer;
use temporalio_client::{
    Client, ClientOptions, Connection, ConnectionOptions, Url, WorkflowCancelOptions,
    WorkflowExecuteUpdateOptions, WorkflowGetResultOptions, WorkflowHandle, WorkflowQueryOptions,
    WorkflowStartOptions,
};

use temporalio_client::errors::WorkflowGetResultError;

use crate::error::TemporalError;
use crate::retry::{ActivityRetry, millis};
use crate::wire::{Approval, PendingApproval, RunInput, RunOptions, RunOutcome};
use crate::workflow::AgentWorkflow;

/// The workflow's run marker (the macro's), which handles are typed by.
type AgentWorkflowRun = <AgentWorkflow as temporalio_sdk::workflows::WorkflowImplementation>::Run;

/// A model call may take this long by default (each attempt).
pub const DEFAULT_MODEL_TIMEOUT: Duration = Duration::from_secs(300);
/// A worker that stops heartbeating during a tool call is declared dead after this long by
/// default, and the call goes to another worker.
pub const DEFAULT_HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(5);

/// Connects to the Temporal server at `address` (`http://host:port`, or `host:port`) and
/// binds a client to `namespace`.
pub async fn connect(address: &str, namespace: &str) -> Result<Client, TemporalError> {
    let url = if address.contains("://") {
        address.to_owned()
    } else {
        format!("http://{address}")
    };
    let url = Url::parse(&url).map_err(|err| TemporalError::Address {
        address: address.to_owned(),
        reason: err.to_string(),
    })?;
    let identity = format!("mux-temporal@{}", std::process::id());
    let connection = Connection::connect(ConnectionOptions::new(url).identity(identity).build())
        .await
        .map_err(|err| TemporalError::Connect {
            address: address.to_owned(),
            reason: err.to_string(),
        })?;
    Client::new(connection, ClientOptions::new(namespace).build()).map_err(|err| {
        TemporalError::Connect {
            address: address.to_owned(),
            reason: err.to_string(),
        }
    })
}

/// Starts runs of an agent on a task queue, and attaches to runs by id.
///
/// The run's settings (turn limit, timeouts, retries) are taken from the agent when this is
/// built, and travel in each run's input, so every worker replays the same decisions.
#[derive(Clone)]
pub struct TemporalAgent {
    client: Client,
    task_queue: String,
    options: RunOptions,
}

impl std::fmt::Debug for TemporalAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TemporalAgent")
            .field("task_queue", &self.task_queue)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl TemporalAgent {
    /// Runs of `agent` on `task_queue` (served by [`AgentWorker`](crate::AgentWorker)s of the
    /// same agent): its turn limit and tool timeout, mux's default model retry policy.
    pub fn new(client: Client, task_queue: impl Into<String>, agent: &Agent) -> Self {
        let config = agent.config();
        let options = RunOptions {
            max_turns: config.max_iterations.max(1),
            model_timeout_ms: millis(DEFAULT_MODEL_TIMEOUT),
            // The executor's own timeout ends the call first; the activity's is a backstop.
            tool_timeout_ms: millis(config.tool_timeout.saturating_add(Duration::from_secs(5))),
            heartbeat_timeout_ms: millis(DEFAULT_HEARTBEAT_TIMEOUT),
            model_retry: ActivityRetry::default(),
            approval_timeout_ms: config.approval_timeout.map(millis),
        };
        Self {
            client,
            task_queue: task_queue.into(),
            options,
        }
    }

    /// The model call's retries: mux's policy, mapped onto Temporal's activity retry policy
    /// (give the provider client [`RetryPolicy::none`] so that Temporal alone retries).
    pub fn model_retry(mut self, policy: &RetryPolicy) -> Self {
        self.options.model_retry = ActivityRetry::from(policy);
        self
    }

    /// How long a model call may take, each attempt.
    pub fn model_timeout(mut self, timeout: Duration) -> Self {
        self.options.model_timeout_ms = millis(timeout).max(1);
        self
    }

    /// How soon a worker that died during a tool call is replaced (its heartbeat timeout).
    pub fn heartbeat_timeout(mut self, timeout: Duration) -> Self {
        self.options.heartbeat_timeout_ms = millis(timeout).max(1);
        self
    }

    /// The run's settings as they will travel.
    pub fn options(&self) -> &RunOptions {
        &self.options
    }

    /// The client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Starts `prompt` as run `workflow_id`, a new conversation.
    pub async fn start(
        &self,
        workflow_id: &str,
        prompt: impl Into<String>,
    ) -> Result<AgentRun, TemporalError> {
        self.start_after(workflow_id, prompt, Vec::new()).await
    }

    /// Starts `prompt` as run `workflow_id`, continuing the conversation `history` (an earlier
    /// run's [`RunOutcome::messages`]).
    pub async fn start_after(
        &self,
        workflow_id: &str,
        prompt: impl Into<String>,
        history: Vec<Message>,
    ) -> Result<AgentRun, TemporalError> {
        let input = RunInput {
            prompt: prompt.into(),
            history,
            options: self.options.clone(),
        };
        let handle = self
            .client
            .start_workflow(
                AgentWorkflow::run,
                input,
                WorkflowStartOptions::new(self.task_queue.clone(), workflow_id.to_owned()).build(),
            )
            .await
            .map_err(|err| TemporalError::Start {
                workflow_id: workflow_id.to_owned(),
                reason: err.to_string(),
            })?;
        Ok(AgentRun {
            workflow_id: workflow_id.to_owned(),
            handle,
        })
    }

    /// The run `workflow_id`, started by this process or any other.
    pub fn run(&self, workflow_id: &str) -> AgentRun {
        AgentRun {
            workflow_id: workflow_id.to_owned(),
            handle: self
                .client
                .get_workflow_handle::<AgentWorkflowRun>(workflow_id.to_owned()),
        }
    }
}

/// One run of an agent on Temporal, from any process.
pub struct AgentRun {
    workflow_id: String,
    handle: WorkflowHandle<Client, AgentWorkflowRun>,
}

impl std::fmt::Debug for AgentRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentRun")
            .field("workflow_id", &self.workflow_id)
            .finish_non_exhaustive()
    }
}

impl AgentRun {
    /// The run's workflow id.
    pub fn id(&self) -> &str {
        &self.workflow_id
    }

    /// The conversation so far (the `history` query).
    pub async fn history(&self) -> Result<Vec<Message>, TemporalError> {
        self.handle
            .query(AgentWorkflow::history, (), WorkflowQueryOptions::default())
            .await
            .map_err(|err| TemporalError::Query {
                workflow_id: self.workflow_id.clone(),
                query: "history",
                reason: err.to_string(),
            })
    }

    /// The calls waiting for a person's answer (the `pending` query).
    pub async fn pending(&self) -> Result<Vec<PendingApproval>, TemporalError> {
        self.handle
            .query(AgentWorkflow::pending, (), WorkflowQueryOptions::default())
            .await
            .map_err(|err| TemporalError::Query {
                workflow_id: self.workflow_id.clone(),
                query: "pending",
                reason: err.to_string(),
            })
    }

    /// Answers the pending call `call_id` (the `approve` update). Refused with the reason when
    /// no such call is pending.
    pub async fn approve(&self, call_id: &str, answer: Answer) -> Result<(), TemporalError> {
        let approval = Approval {
            call_id: call_id.to_owned(),
            answer,
        };
        self.handle
            .execute_update(
                AgentWorkflow::approve,
                approval,
                WorkflowExecuteUpdateOptions::default(),
            )
            .await
            .map_err(|err| TemporalError::Approve {
                workflow_id: self.workflow_id.clone(),
                call_id: call_id.to_owned(),
                reason: error_chain(&err),
            })
    }

    /// Cancels the run: a running call is told to stop, and the run ends cancelled, every
    /// open call settled in its history.
    pub async fn cancel(&self) -> Result<(), TemporalError> {
        self.handle
            .cancel(WorkflowCancelOptions::default())
            .await
            .map_err(|err| TemporalError::Cancel {
                workflow_id: self.workflow_id.clone(),
                reason: err.to_string(),
            })
    }

    /// Waits for the run to end and returns its outcome.
    pub async fn outcome(&self) -> Result<RunOutcome, TemporalError> {
        match self
            .handle
            .get_result(WorkflowGetResultOptions::default())
            .await
        {
            Ok(outcome) => Ok(outcome),
            Err(WorkflowGetResultError::Cancelled { .. }) => Err(TemporalError::Cancelled {
                workflow_id: self.workflow_id.clone(),
            }),
            Err(err) => Err(TemporalError::Failed {
                workflow_id: self.workflow_id.clone(),
                reason: error_chain(&err),
            }),
        }
    }
}

/// An error and its causes, one line.
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let line = cause.to_string();
        if !text.contains(&line) {
            text.push_str(": ");
            text.push_str(&line);
        }
        source = cause.source();
    }
    text
}
