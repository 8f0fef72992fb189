//! The activities a worker runs for the agent workflow: a model turn, the review of a turn's
//! calls by the agent's permission policy, and one tool call. They hold the worker's
//! [`Agent`]: its client, tools and policy never travel through Temporal.

// The SDK's macros add an undocumented constant per method (its marker, in an impl of
// their own); every item written here is documented.
#![allow(missing_docs)]

use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use mux_llm::{Message, Request};
use mux_orchestrator::Agent;
use mux_tool::{CallScope, EffectKey, EffectScope, Executor, Registry, ToolCall, ToolOutput};
use temporalio_macros::activities;
use temporalio_sdk::activities::{ActivityContext, ActivityError};
use tokio_util::sync::CancellationToken;

use crate::effect::{self, Attempt};
use crate::retry::model_failure;
use crate::wire::{ModelTurn, Review, ReviewInput, ToolCallInput};

/// A running tool call heartbeats this often when its activity has no heartbeat timeout.
const DEFAULT_BEAT: Duration = Duration::from_secs(1);

/// The agent's side of the workflow, registered on a worker by
/// [`AgentWorker`](crate::AgentWorker).
pub struct AgentActivities {
    agent: Agent,
    tools: Registry,
    executor: Executor,
}

impl std::fmt::Debug for AgentActivities {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentActivities")
            .field("agent", &self.agent)
            .field("tools", &self.tools.names())
            .finish_non_exhaustive()
    }
}

impl AgentActivities {
    /// The activities of `agent`, with its tools at its root. The review activity applies the
    /// agent's permission policy (or, without one, its approval policy); the executor runs
    /// what the workflow allowed, with the agent's tool timeout.
    pub fn new(agent: Agent) -> Result<Self, mux_orchestrator::AgentBuildError> {
        let tools = agent.tools_at(agent.root())?;
        let executor = Executor::builder(tools.clone())
            .approval_policy(mux_tool::ApprovalPolicy::Never)
            .timeout(agent.config().tool_timeout)
            .build();
        Ok(Self {
            agent,
            tools,
            executor,
        })
    }

    /// The model request of a turn over `messages`.
    fn request(&self, messages: Vec<Message>) -> Request {
        let config = self.agent.config();
        let mut request =
            Request::new(config.model.clone(), config.max_tokens).tools(self.tools.shared_specs());
        if let Some(system) = &config.system_prompt {
            request = request.system(system.clone());
        }
        request.temperature = config.temperature;
        request.messages = Arc::new(messages);
        request
    }

    /// The verdict on one call.
    fn review_one(&self, call: &ToolCall, input: &ReviewInput) -> Review {
        // An unknown tool is the executor's to report ("did you mean"), as an output.
        let Some(tool) = self.tools.get(&call.name) else {
            return Review::Allow;
        };
        let spec = tool.spec();
        let (verdict, reason) = match self.agent.permissions() {
            Some(permissions) => {
                let subject = tool.subject(&call.input);
                let verdict = permissions.check_call(spec, &subject, &call.input);
                (verdict.verdict, verdict.reason)
            }
            None if self.agent.config().approval.requires_approval(spec) => (
                mux_tool::Verdict::Ask,
                format!("`{}` is not read-only", spec.name),
            ),
            None => (mux_tool::Verdict::Allow, String::new()),
        };
        match verdict {
            mux_tool::Verdict::Allow => Review::Allow,
            mux_tool::Verdict::Deny => Review::Deny { reason },
            _ if input.allowed.contains(&call.name) => Review::Allow,
            _ => Review::Ask { reason },
        }
    }
}

#[activities]
impl AgentActivities {
    /// One model turn over the conversation so far.
    #[activity(name = "mux.model")]
    pub async fn model(
        self: Arc<Self>,
        ctx: ActivityContext,
        messages: Vec<Message>,
    ) -> Result<ModelTurn, ActivityError> {
        let request = self.request(messages);
        let client = Arc::clone(self.agent.client());
        let response = tokio::select! {
            response = client.complete(request) => response.map_err(model_failure)?,
            () = ctx.cancelled() => return Err(ActivityError::cancelled()),
        };
        let calls = response
            .tool_calls()
            .map(|(id, name, input)| ToolCall::new(id, name, input.clone()))
            .collect();
        Ok(ModelTurn {
            message: response.to_message(),
            calls,
            usage: response.usage,
        })
    }

    /// The policy's verdict on each of a turn's calls, in call order.
    #[activity(name = "mux.review")]
    pub async fn review(
        self: Arc<Self>,
        _ctx: ActivityContext,
        input: ReviewInput,
    ) -> Result<Vec<Review>, ActivityError> {
        Ok(input
            .calls
            .iter()
            .map(|call| self.review_one(call, &input))
            .collect())
    }

    /// Runs one allowed call, heartbeating while it runs. A retried attempt (its first one
    /// started on a worker that died, or outlived its timeout) runs again only when the tool
    /// is read-only or idempotent; otherwise the model gets "outcome unknown".
    #[activity(name = "mux.tool")]
    pub async fn call_tool(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: ToolCallInput,
    ) -> Result<ToolOutput, ActivityError> {
        let attempt = ctx.info().attempt;
        let spec = self.tools.get(&input.call.name).map(|t| t.spec().clone());
        tracing::info!(
            target: "mux_temporal",
            tool = input.call.name.as_str(),
            call_id = input.call.id.as_str(),
            effect_key = input.effect_key.as_str(),
            attempt,
            "tool call activity"
        );
        if let Attempt::Unknown(output) = effect::attempt(&input.call, spec.as_ref(), attempt) {
            return Ok(output);
        }
        let beat = ctx
            .info()
            .heartbeat_timeout
            .filter(|t| !t.is_zero())
            .map_or(DEFAULT_BEAT, |t| t / 3);
        let cancel = CancellationToken::new();
        let mut scope = CallScope::with_cancel(cancel.clone());
        // The tool reads it as `ToolContext::effect_key()`: the same key on every attempt.
        scope.effects = Some(Arc::new(EffectScope::exact(EffectKey::new(
            input.effect_key.clone(),
            attempt,
        ))));
        let mut run = pin!(self.executor.execute(input.call, &scope));
        let mut ticker = tokio::time::interval(beat);
        loop {
            tokio::select! {
                outcome = &mut run => return Ok(outcome.into_output()),
                () = ctx.cancelled() => {
                    cancel.cancel();
                    // The executor stops the tool within its grace period.
                    let _ = run.await;
                    return Err(ActivityError::cancelled());
                }
                _ = ticker.tick() => {
                    if let Err(err) = ctx.record_heartbeat(attempt).await {
                        tracing::warn!(target: "mux_temporal", error = %err, "heartbeat not recorded");
                    }
                }
            }
        }
    }
}
