//! The `task` tool: the model delegates a piece of work to a subagent definition.

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Weak};

use futures::FutureExt;
use mux_orchestrator::hooks::SubagentEvent;
use mux_orchestrator::{HookError, LoopEvent, RunSummary};
use mux_tool::{BoxFuture, ToolAnnotations, ToolContext, ToolError, ToolOutput, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;

use mux_orchestrator::Hooks;

use crate::{AgentDefinition, AgentError, AgentEvent, AgentHandle, AgentId};

/// The `task` tool's name.
pub const TASK: &str = "task";

/// The `task` tool's arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TaskArgs {
    /// The name of the agent definition to delegate to.
    pub agent: String,
    /// What the subagent should do, with every detail it needs: it sees nothing else.
    pub prompt: String,
    /// The id of a subagent this agent delegated to before, to continue its conversation.
    #[serde(default)]
    pub resume: Option<String>,
}

/// What the `task` tool needs of the runtime that made it: the definitions it may delegate
/// to, the running agents, a way to start a subagent, and the shared hooks. The runtime
/// implements it, so this module does not depend on the runtime's.
pub(crate) trait Delegator: Send + Sync {
    /// The definitions the tool may delegate to, by name.
    fn definitions(&self) -> Vec<AgentDefinition>;
    /// The definition named `name`.
    fn definition(&self, name: &str) -> Result<AgentDefinition, AgentError>;
    /// The running agent `id`.
    fn agent(&self, id: &str) -> Option<AgentHandle>;
    /// Starts a new subagent of `parent` from `definition`.
    fn spawn_child<'a>(
        self: Arc<Self>,
        parent: &'a AgentHandle,
        definition: AgentDefinition,
    ) -> BoxFuture<'a, Result<AgentHandle, AgentError>>;
    /// The hooks every agent shares.
    fn hooks(&self) -> &Hooks;
}

/// Runs a subagent and returns its final text as the tool result. The subagent's events
/// reach the delegating agent's subscribers tagged with its id, approvals included.
pub(crate) struct TaskTool {
    runtime: Weak<dyn Delegator>,
    parent: AgentId,
}

impl TaskTool {
    pub(crate) fn new(runtime: Weak<dyn Delegator>, parent: AgentId) -> Self {
        Self { runtime, parent }
    }
}

impl TypedTool for TaskTool {
    type Args = TaskArgs;
    const NAME: &'static str = TASK;

    fn description(&self) -> String {
        let mut text = String::from(
            "Delegates a task to a subagent and returns its final answer. \
             Pass `resume` with a subagent id from an earlier result to continue it.",
        );
        if let Some(runtime) = self.runtime.upgrade() {
            let definitions = runtime.definitions();
            if !definitions.is_empty() {
                text.push_str(" Agents:");
                for definition in definitions {
                    text.push_str(&format!(
                        "\n- {}: {}",
                        definition.name, definition.description
                    ));
                }
            }
        }
        text
    }

    fn annotations(&self) -> ToolAnnotations {
        // Delegating touches nothing itself; the subagent's own tool calls are gated.
        ToolAnnotations::read_only().with_kind(mux_tool::ToolKind::Think)
    }

    async fn call(&self, args: TaskArgs, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let runtime = self
            .runtime
            .upgrade()
            .ok_or_else(|| ToolError::failed("the agent runtime is gone"))?;
        let parent = runtime
            .agent(self.parent.as_str())
            .ok_or_else(|| ToolError::failed(format!("agent {} has exited", self.parent)))?;
        let child = subagent(&runtime, &parent, &args)
            .await
            .map_err(|err| ToolError::failed(err.to_string()))?;

        let event = SubagentEvent {
            session_id: child.session_id(),
            agent: child.name().to_owned(),
            result: None,
        };
        fire_start(&parent, &*runtime, &event).await;
        let outcome = delegate(&parent, &child, args.prompt, &ctx).await;
        let result = match &outcome {
            Ok(summary) => Ok(summary.text.clone()),
            Err(err) => Err(err.to_string()),
        };
        parent.emit(AgentEvent::SubagentComplete {
            id: child.id().clone(),
            agent: child.name().to_owned(),
            result: result.clone(),
        });
        let event = SubagentEvent {
            result: result.as_ref().ok().cloned(),
            ..event
        };
        fire_stop(&parent, &*runtime, &event).await;
        match outcome {
            Ok(summary) => Ok(ToolOutput::text(summary.text)
                .with_metadata("agent_id", serde_json::json!(child.id()))),
            Err(err) => Ok(ToolOutput::error(format!(
                "subagent {} ({}) failed: {err}",
                child.id(),
                child.name()
            ))),
        }
    }
}

/// The subagent to delegate to: the one to resume, or a new one.
async fn subagent(
    runtime: &Arc<dyn Delegator>,
    parent: &AgentHandle,
    args: &TaskArgs,
) -> Result<AgentHandle, AgentError> {
    if let Some(id) = &args.resume {
        let child = runtime
            .agent(id)
            .ok_or_else(|| AgentError::UnknownAgent(id.clone()))?;
        if child.parent() != Some(parent.id()) {
            return Err(AgentError::NotAChild {
                child: child.id().clone(),
                parent: parent.id().clone(),
            });
        }
        return Ok(child);
    }
    let definition = runtime.definition(&args.agent)?;
    let child = Arc::clone(runtime).spawn_child(parent, definition).await?;
    parent.emit(AgentEvent::SubagentSpawned {
        id: child.id().clone(),
        agent: child.name().to_owned(),
        depth: child.depth(),
    });
    Ok(child)
}

/// Runs `prompt` on `child`, forwarding its events to `parent`'s subscribers, until it ends
/// or the tool call is cancelled.
async fn delegate(
    parent: &AgentHandle,
    child: &AgentHandle,
    prompt: String,
    ctx: &ToolContext,
) -> Result<RunSummary, AgentError> {
    let mut events = child.subscribe();
    // The delegated run spends its parent's budget too, and traces under this call.
    let mut run = match mux_orchestrator::ParentRun::of_call(ctx) {
        Some(parent) => child.prompt_under(prompt, parent)?,
        None => child.prompt(prompt)?,
    };
    // Should the loop drop this call instead of cancelling it, the child's run stops too.
    let _stop_if_dropped = run.token().clone().drop_guard();
    let forward = |event: AgentEvent| {
        parent.emit(match event {
            AgentEvent::Loop(event) => AgentEvent::Subagent {
                id: child.id().clone(),
                agent: child.name().to_owned(),
                event,
            },
            // Grandchildren's events are tagged already.
            other => other,
        });
    };
    let outcome = loop {
        tokio::select! {
            outcome = run.wait() => break outcome,
            Some(event) = events.recv() => {
                show_under_call(ctx, child.name(), &event).await;
                forward(event);
            }
            () = ctx.cancellation().cancelled() => {
                run.cancel();
                break run.wait().await;
            }
        }
    };
    // Every event of the run was published before its outcome.
    while let Some(event) = events.try_recv() {
        show_under_call(ctx, child.name(), &event).await;
        forward(event);
    }
    outcome
}

async fn fire_start(parent: &AgentHandle, runtime: &dyn Delegator, event: &SubagentEvent) {
    for hook in runtime.hooks().snapshot() {
        let outcome = guarded(|| hook.subagent_start(event)).await;
        if let Err(message) = outcome {
            report(parent, hook.name(), "subagent_start", message);
        }
    }
}

async fn fire_stop(parent: &AgentHandle, runtime: &dyn Delegator, event: &SubagentEvent) {
    for hook in runtime.hooks().snapshot() {
        let outcome = guarded(|| hook.subagent_stop(event)).await;
        if let Err(message) = outcome {
            report(parent, hook.name(), "subagent_stop", message);
        }
    }
}

/// Runs a hook call, a panic while making or polling its future included, as a message.
async fn guarded<'h>(
    call: impl FnOnce() -> BoxFuture<'h, Result<(), HookError>>,
) -> Result<(), String> {
    match AssertUnwindSafe(async move { call().await })
        .catch_unwind()
        .await
    {
        Ok(Ok(())) => Ok(()),
        Ok(Err(err)) => Err(err.message),
        Err(_) => Err("panicked".to_owned()),
    }
}

fn report(parent: &AgentHandle, hook: &str, point: &str, message: String) {
    parent.emit(AgentEvent::Loop(LoopEvent::HookFailed {
        hook: hook.to_owned(),
        point: point.to_owned(),
        message,
    }));
}

/// Reports the subagent's tool calls and answer as updates of the delegating call, so a face
/// that sees only the parent's run shows them under the `task` call. Deltas and state changes
/// stay on the runtime's own subscription.
async fn show_under_call(ctx: &ToolContext, agent: &str, event: &AgentEvent) {
    let AgentEvent::Loop(event) = event else {
        return;
    };
    let shown = matches!(
        event,
        LoopEvent::ToolCallArguments { .. }
            | LoopEvent::ToolResult { .. }
            | LoopEvent::ToolDenied { .. }
            | LoopEvent::Finished { .. }
    );
    if !shown {
        return;
    }
    if let Ok(event) = serde_json::to_value(event) {
        ctx.update(mux_tool::ToolUpdate::Subagent {
            agent: agent.to_owned(),
            event,
        })
        .await;
    }
}
