//! Helpers shared by the orchestrator's integration tests.
#![allow(dead_code, unreachable_pub)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mux_llm::LlmClient;
use mux_llm::testing::ScriptedClient;
use mux_llm::{ContentBlock, Response, StopReason, Usage};
use mux_orchestrator::{
    Agent, AgentBuilder, Answer, ConversationBuilder, LoopError, LoopEvent, LoopInput,
    Orchestrator, OrchestratorConfig, Run, RunSummary,
};
use mux_tool::{Registry, Subject, ToolAnnotations, ToolContext, ToolError, ToolOutput, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

#[path = "../../../../mux-tool/tests/support/tools.rs"]
mod tools;
pub use tools::*;

#[path = "../../../../mux-llm/tests/support/models.rs"]
mod models;
pub use models::*;

/// A response that calls tools, given as (id, name, input).
pub fn tool_calls(calls: &[(&str, &str, Value)]) -> Response {
    let content = calls
        .iter()
        .map(|(id, name, input)| ContentBlock::tool_use(*id, *name, input.clone()))
        .collect();
    Response::new(content, StopReason::ToolUse).with_usage(usage(10, 5))
}

/// A final text response.
pub fn text(text: &str) -> Response {
    Response::from_text(text).with_usage(usage(20, 3))
}

fn usage(input_tokens: u64, output_tokens: u64) -> Usage {
    Usage {
        input_tokens,
        output_tokens,
        ..Usage::default()
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct RunArgs {
    /// A shell command.
    pub command: String,
}

/// Pretends to run a shell command; not read-only, so it needs approval. Counts its calls.
#[derive(Clone, Default)]
pub struct Shell {
    pub calls: Arc<AtomicUsize>,
}

impl TypedTool for Shell {
    type Args = RunArgs;
    const NAME: &'static str = "Bash";
    fn description(&self) -> String {
        "Runs a shell command".into()
    }
    fn subject(&self, args: &RunArgs) -> Subject {
        Subject::command(&args.command)
    }
    async fn call(&self, args: RunArgs, _: ToolContext) -> Result<ToolOutput, ToolError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(ToolOutput::text(format!("ran: {}", args.command)))
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct SleepArgs {
    /// Milliseconds.
    pub ms: u64,
}

/// Sleeps until done or cancelled; read-only.
pub struct Sleep;

impl TypedTool for Sleep {
    type Args = SleepArgs;
    const NAME: &'static str = "sleep";
    fn description(&self) -> String {
        "Sleeps".into()
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only()
    }
    async fn call(&self, args: SleepArgs, cx: ToolContext) -> Result<ToolOutput, ToolError> {
        cx.output("sleeping").await;
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(args.ms)) => Ok(ToolOutput::text("woke")),
            () = cx.cancellation().cancelled() => Err(ToolError::Cancelled),
        }
    }
}

/// Always fails the same way; read-only.
pub struct Broken;

impl TypedTool for Broken {
    type Args = EchoArgs;
    const NAME: &'static str = "broken";
    fn description(&self) -> String {
        "Always fails".into()
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only()
    }
    async fn call(&self, _: EchoArgs, _: ToolContext) -> Result<ToolOutput, ToolError> {
        Err(ToolError::failed("disk full"))
    }
}

pub fn registry() -> Registry {
    let registry = Registry::new();
    registry.register_typed(Echo).unwrap();
    registry.register_typed(Shell::default()).unwrap();
    registry.register_typed(Sleep).unwrap();
    registry.register_typed(Broken).unwrap();
    registry
}

/// An agent over `model` with the loop settings `config`, to describe further.
pub fn loop_agent(model: impl LlmClient + 'static, config: OrchestratorConfig) -> AgentBuilder {
    let name = config.model.clone();
    // The config's `ask_user` says whether these loops offer it (an agent's own conversation
    // does not unless told).
    let ask_user = config.ask_user;
    Agent::builder(model, name)
        .configure(|_| config)
        .ask_user(ask_user)
}

/// How the tests finish an [`AgentBuilder`].
pub trait Conversation {
    /// The agent's own conversation (the agent is dropped: not for agents that own MCP
    /// servers, which stop with it).
    fn conversation(self) -> Orchestrator;
    /// A new conversation of the agent at its root, for what a face adds (a cancellation
    /// token) or to resume a stored session.
    fn open(self) -> ConversationBuilder;
}

impl Conversation for AgentBuilder {
    fn conversation(self) -> Orchestrator {
        self.build().unwrap().orchestrator().clone()
    }

    fn open(self) -> ConversationBuilder {
        let agent = self.build().unwrap();
        agent.conversation_at(agent.root()).unwrap()
    }
}

pub fn orchestrator(model: ScriptedClient) -> Orchestrator {
    loop_agent(model, OrchestratorConfig::new("test-model"))
        .tools(registry().list())
        .conversation()
}

/// Drains a run, answering nothing, and returns its events and outcome.
pub async fn drain(run: Run) -> (Vec<LoopEvent>, Result<RunSummary, LoopError>) {
    answer_approvals(run, || None).await
}

/// Drains a run, answering each approval request with `answer`.
pub async fn answer_approvals(
    run: Run,
    answer: impl Fn() -> Option<Answer>,
) -> (Vec<LoopEvent>, Result<RunSummary, LoopError>) {
    let Run {
        mut events,
        input,
        handle,
    } = run;
    let mut seen = Vec::new();
    while let Some(event) = events.recv().await {
        if let LoopEvent::ApprovalRequired { call_id, .. } = &event
            && let Some(reply) = answer()
        {
            let call_id = call_id.clone();
            input
                .send(LoopInput::ToolApproval {
                    call_id,
                    answer: reply,
                })
                .await;
        }
        seen.push(event);
    }
    (seen, handle.wait().await)
}

/// The events still to come, until the run's end.
pub async fn rest(events: &mut mux_orchestrator::EventReceiver) -> Vec<LoopEvent> {
    let mut seen = Vec::new();
    while let Some(event) = events.recv().await {
        seen.push(event);
    }
    seen
}

/// The events as compact one-line labels, for snapshots and assertions.
pub fn labels(events: &[LoopEvent]) -> Vec<String> {
    events
        .iter()
        .map(|event| {
            let value = serde_json::to_value(event).unwrap();
            let kind = value["type"].as_str().unwrap_or("?").to_owned();
            match event {
                LoopEvent::StateChanged { to, .. } => format!("state {to}"),
                LoopEvent::TextDelta { text } => format!("text {text:?}"),
                LoopEvent::ToolCallStarted { call_id, name } => {
                    format!("tool_call_started {call_id} {name}")
                }
                LoopEvent::ToolCallArguments { call_id, input, .. } => {
                    format!("arguments {call_id} {input}")
                }
                LoopEvent::ToolExecuting { call_id, .. } => format!("executing {call_id}"),
                LoopEvent::ToolResult {
                    call_id, output, ..
                } => {
                    format!(
                        "result {call_id} error={} {:?}",
                        output.is_error,
                        output.to_text()
                    )
                }
                LoopEvent::ToolDenied { call_id, reason } => format!("denied {call_id} {reason:?}"),
                LoopEvent::ToolApproved { call_id, always } => {
                    format!("approved {call_id} always={always}")
                }
                LoopEvent::ApprovalRequired { call_id, .. } => {
                    format!("approval_required {call_id}")
                }
                LoopEvent::TurnComplete {
                    iteration,
                    has_more,
                } => format!("turn_complete {iteration} has_more={has_more}"),
                LoopEvent::Finished {
                    text,
                    iterations,
                    limit: None,
                    ..
                } => format!("finished {iterations} {text:?}"),
                LoopEvent::Finished {
                    text,
                    iterations,
                    limit: Some(limit),
                    ..
                } => format!("finished {iterations} {text:?} limit={}", limit.kind()),
                LoopEvent::Error { kind, .. } => format!("error {kind}"),
                _ => kind,
            }
        })
        .collect()
}

pub fn scripted() -> ScriptedClient {
    ScriptedClient::new()
}

pub fn json_input(text: &str) -> Value {
    json!({"text": text})
}

/// A two-worker runtime for tests that start servers or processes of their own.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}
