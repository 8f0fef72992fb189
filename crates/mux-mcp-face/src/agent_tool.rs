//! One agent as one MCP tool: [`AgentTool`], the tool `ask`
//! `{prompt, session_id?}` that runs the agent on a conversation of its own and answers with
//! the final text and the conversation's id.
//!
//! It lives in a face crate, not in mux-mcp: the tool drives the loop (mux-orchestrator), and
//! asks the MCP caller through mux-mcp's [`Callers`]; both crates sit below this one.
//!
//! - The loop's events stream to the caller while the agent works: text as partial output
//!   (`notifications/message`), each tool call's lifecycle as `notifications/progress`.
//! - The inner loop's approvals go to the caller ([`Callers::ask_approval`]: elicitation at
//!   2025-11-25, `input_required` at 2026-07-28). A caller that can do neither gets the inner
//!   call refused with the reason; it never runs unasked. `ask_user` questions go the same way
//!   as a one-field form.
//! - Cancelling the MCP call cancels the inner run, which stops its tools and their processes.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mux_mcp::rmcp::model::{ElicitRequest, ElicitRequestParams, InputRequest, InputRequests};
use mux_mcp::{Callers, McpServer};
use mux_tool::{
    ApprovalPolicy, Executor, Registry, RegistryError, ToolAnnotations, ToolContext, ToolError,
    ToolOutput, TypedTool,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use mux_orchestrator::{Agent, InputSender, LoopError, LoopEvent, LoopInput, Run};

use crate::caller_answer::{QUOTED_ARGS, answer_of, quote};

/// The tool's name.
pub const ASK_TOOL: &str = "ask";
/// Conversations an [`AgentTool`] keeps by default; past it, the least recently used goes.
pub const DEFAULT_MAX_SESSIONS: usize = 256;
/// How long one `ask` may run by default (the executor's timeout for the tool).
pub const DEFAULT_ASK_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// The key of an `ask_user` question in an elicitation round.
const QUESTION_KEY: &str = "mux_question";

/// An [`Agent`] as one tool, `ask`, for an MCP server.
///
/// ```no_run
/// use mux_llm::testing::ScriptedClient;
/// use mux_mcp_face::AgentTool;
/// use mux_orchestrator::Agent;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let agent = Agent::builder(ScriptedClient::new().reply_text("Hi!"), "m").build()?;
/// AgentTool::new(agent).into_server()?.serve_stdio().await?;
/// # Ok(()) }
/// ```
///
/// A call without `session_id` starts a conversation; the result's `session_id` continues
/// it. The ids are 128 random bits, so a caller cannot reach a conversation it was not
/// given. Conversations live as long as the tool, at most
/// [`with_max_sessions`](Self::with_max_sessions) of them; one runs one `ask` at a time.
/// Clones share the conversations.
#[derive(Clone)]
pub struct AgentTool {
    agent: Agent,
    callers: Callers,
    description: String,
    timeout: Duration,
    max_sessions: usize,
    sessions: Arc<Mutex<Sessions>>,
}

/// The conversations, least recently used first.
#[derive(Default)]
struct Sessions {
    by_id: HashMap<String, Agent>,
    order: VecDeque<String>,
}

impl Sessions {
    fn touch(&mut self, id: &str) {
        self.order.retain(|known| known != id);
        self.order.push_back(id.to_owned());
    }

    fn insert(&mut self, id: String, agent: Agent, max: usize) {
        while self.by_id.len() >= max.max(1) {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            self.by_id.remove(&oldest);
        }
        self.touch(&id);
        self.by_id.insert(id, agent);
    }
}

impl std::fmt::Debug for AgentTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentTool")
            .field("agent", &self.agent)
            .field("sessions", &self.lock().by_id.len())
            .finish_non_exhaustive()
    }
}

/// The arguments of `ask`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskArgs {
    /// What to ask the agent.
    pub prompt: String,
    /// A `session_id` from an earlier answer, to continue that conversation.
    #[serde(default)]
    pub session_id: Option<String>,
}

impl AgentTool {
    /// `agent` as the tool `ask`, asking callers through a table of its own
    /// ([`callers`](Self::callers)).
    pub fn new(agent: Agent) -> Self {
        Self::with_callers(agent, Callers::new())
    }

    /// `agent` as the tool `ask`, asking callers through `callers` (the table the serving
    /// [`McpServer`] was given with [`McpServer::with_callers`]).
    pub fn with_callers(agent: Agent, callers: Callers) -> Self {
        Self {
            agent,
            callers,
            description: "Ask an agent to do a task. It works with its own tools and answers \
                          with its final reply and a session_id; pass the session_id again to \
                          continue the same conversation."
                .to_owned(),
            timeout: DEFAULT_ASK_TIMEOUT,
            max_sessions: DEFAULT_MAX_SESSIONS,
            sessions: Arc::default(),
        }
    }

    /// What the calling model reads about the agent (the tool's description).
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// How long one `ask` may run when served by [`into_server`](Self::into_server).
    /// Default: [`DEFAULT_ASK_TIMEOUT`].
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How many conversations are kept (at least one). Default: [`DEFAULT_MAX_SESSIONS`].
    pub fn with_max_sessions(mut self, max: usize) -> Self {
        self.max_sessions = max.max(1);
        self
    }

    /// The table the tool asks callers through.
    pub fn callers(&self) -> Callers {
        self.callers.clone()
    }

    /// An MCP server whose one tool is this one, with its callers table and its timeout.
    pub fn into_server(self) -> Result<McpServer, RegistryError> {
        let callers = self.callers();
        let timeout = self.timeout;
        let registry = Registry::new();
        registry.register_typed(self)?;
        // `ask` itself runs unasked: the client chose to call it, and every call the agent
        // makes inside goes through the agent's own approvals (which ask this client).
        let executor = Executor::builder(registry)
            .approval_policy(ApprovalPolicy::Never)
            .timeout(timeout)
            .build();
        Ok(McpServer::new(executor).with_callers(callers))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Sessions> {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The conversation `id` names, or a new one with a fresh id.
    fn conversation(&self, id: Option<&str>) -> Result<(String, Agent), String> {
        let mut sessions = self.lock();
        match id {
            Some(id) => match sessions.by_id.get(id).cloned() {
                Some(agent) => {
                    sessions.touch(id);
                    Ok((id.to_owned(), agent))
                }
                None => Err(format!(
                    "unknown session_id `{}`: it was never handed out here, or it expired; \
                     omit session_id to start a new conversation",
                    quote(id, 80)
                )),
            },
            None => {
                let id = session_id();
                let agent = self.agent.new_session();
                sessions.insert(id.clone(), agent.clone(), self.max_sessions);
                Ok((id, agent))
            }
        }
    }

    async fn ask(&self, args: AskArgs, cx: ToolContext) -> ToolOutput {
        let (session_id, agent) = match self.conversation(args.session_id.as_deref()) {
            Ok(found) => found,
            Err(message) => return ToolOutput::error(message),
        };
        let run = match agent.orchestrator().run(args.prompt) {
            Ok(run) => run,
            Err(LoopError::AlreadyRunning) => {
                return ToolOutput::error(format!(
                    "session `{session_id}` is answering another ask; wait for it to finish"
                ));
            }
            Err(err) => return ToolOutput::error(format!("the agent could not start: {err}")),
        };
        let ended = Turn {
            callers: &self.callers,
            cx: &cx,
            step: 0.0,
        }
        .drive(run)
        .await;
        match ended {
            Ok(answer) => ToolOutput::json(json!({"session_id": session_id, "answer": answer})),
            Err(LoopError::Cancelled) => ToolOutput::error("the ask was cancelled"),
            Err(err) => ToolOutput::error(format!("the agent failed: {err}")),
        }
    }
}

/// One `ask` in progress: the inner run's events, relayed to the caller.
struct Turn<'a> {
    callers: &'a Callers,
    cx: &'a ToolContext,
    step: f64,
}

impl Turn<'_> {
    /// Relays the run's events until it ends; the MCP call's cancellation cancels it.
    async fn drive(mut self, run: Run) -> Result<String, LoopError> {
        let Run {
            mut events,
            input,
            handle,
        } = run;
        let stop = handle.cancellation().clone();
        // Dropped unfinished (the executor gave up on this call): the inner run stops too.
        let _stop_on_drop = stop.clone().drop_guard();
        loop {
            tokio::select! {
                biased;
                () = self.cx.cancellation().cancelled(), if !stop.is_cancelled() => stop.cancel(),
                event = events.recv() => match event {
                    Some(event) => self.on_event(event, &input, &stop).await,
                    None => break,
                },
            }
        }
        let summary = handle.wait().await?;
        if stop.is_cancelled() {
            return Err(LoopError::Cancelled);
        }
        Ok(summary.text)
    }

    async fn progress(&mut self, message: String) {
        self.step += 1.0;
        self.cx.progress(self.step, None, Some(message)).await;
    }

    async fn on_event(&mut self, event: LoopEvent, input: &InputSender, stop: &CancellationToken) {
        match event {
            LoopEvent::TextDelta { text } => self.cx.output(text).await,
            LoopEvent::ToolExecuting { name, .. } => {
                self.progress(format!("running `{name}`")).await;
            }
            LoopEvent::ToolResult { name, output, .. } => {
                let how = if output.is_error { "failed" } else { "done" };
                self.progress(format!("`{name}` {how}")).await;
            }
            LoopEvent::ToolDenied { reason, .. } => {
                self.progress(format!("a call was refused: {reason}")).await;
            }
            LoopEvent::ApprovalRequired {
                call_id,
                name,
                input: args,
                reason,
                ..
            } => {
                self.progress(format!("asking the caller to approve `{name}`"))
                    .await;
                let question = format!(
                    "The agent wants to call `{name}` with {}. It needs approval because: {reason}. Allow it?",
                    quote(&args.to_string(), QUOTED_ARGS)
                );
                let asked = self.callers.ask_approval(self.cx.call_id(), question);
                let answer = tokio::select! {
                    answer = asked => answer_of(answer),
                    // The call is being cancelled: stop waiting; the run is stopping.
                    () = self.cx.cancellation().cancelled() => {
                        stop.cancel();
                        return;
                    }
                };
                input
                    .send(LoopInput::ToolApproval { call_id, answer })
                    .await;
            }
            LoopEvent::AwaitingInput { call_id, question } => {
                let asked = self.ask_user(&question);
                let text = tokio::select! {
                    text = asked => text,
                    () = self.cx.cancellation().cancelled() => {
                        stop.cancel();
                        return;
                    }
                };
                input.send(LoopInput::UserResponse { call_id, text }).await;
            }
            _ => {}
        }
    }

    /// The caller's answer to the agent's `ask_user` question, as a one-field form; or a note
    /// the model can act on when the caller cannot or does not answer.
    async fn ask_user(&self, question: &str) -> String {
        let params = json!({
            "mode": "form",
            "message": question,
            "requestedSchema": {
                "type": "object",
                "properties": {"answer": {"type": "string", "title": "Answer"}},
                "required": ["answer"],
            }
        });
        let Ok(params) = serde_json::from_value::<ElicitRequestParams>(params) else {
            return NO_ANSWER.to_owned();
        };
        let mut requests = InputRequests::new();
        requests.insert(
            QUESTION_KEY.to_owned(),
            InputRequest::Elicitation(ElicitRequest::new(params)),
        );
        match self.callers.request(self.cx.call_id(), requests).await {
            Ok(mut answers) => {
                let answer = answers.remove(QUESTION_KEY).unwrap_or(Value::Null);
                match (
                    answer["action"].as_str(),
                    answer["content"]["answer"].as_str(),
                ) {
                    (Some("accept"), Some(text)) => text.to_owned(),
                    _ => NO_ANSWER.to_owned(),
                }
            }
            Err(_) => NO_ANSWER.to_owned(),
        }
    }
}

/// What `ask_user` hears when the caller gives no answer.
const NO_ANSWER: &str = "The caller did not answer. Go on without the answer, or end your \
                         reply with the question.";

impl TypedTool for AgentTool {
    type Args = AskArgs;
    const NAME: &'static str = ASK_TOOL;

    fn description(&self) -> String {
        self.description.clone()
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::default().with_open_world(true)
    }

    fn output_schema(&self) -> Option<Value> {
        Some(json!({
            "type": "object",
            "properties": {
                "session_id": {"type": "string"},
                "answer": {"type": "string"}
            },
            "required": ["session_id", "answer"],
        }))
    }

    async fn call(&self, args: AskArgs, cx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(self.ask(args, cx).await)
    }
}

/// 128 random bits, hex: a conversation's handle.
fn session_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No randomness: the store's id still differs per conversation.
        return mux_orchestrator::session::new_session_id();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use mux_llm::testing::ScriptedClient;
    use mux_tool::Tool as _;

    fn agent(model: ScriptedClient) -> Agent {
        Agent::builder(model, "m").build().unwrap()
    }

    #[test]
    fn the_spec_is_ask_with_a_prompt() {
        let tool = mux_tool::Typed::new(AgentTool::new(agent(ScriptedClient::new()))).unwrap();
        let spec = tool.spec();
        assert_eq!(spec.name.as_str(), "ask");
        assert_eq!(spec.input_schema["required"], json!(["prompt"]));
        assert_eq!(spec.input_schema["additionalProperties"], json!(false));
    }

    #[test]
    fn the_server_serves_ask() {
        let server = AgentTool::new(agent(ScriptedClient::new()))
            .into_server()
            .unwrap();
        assert!(format!("{server:?}").contains("\"ask\""), "{server:?}");
    }

    #[tokio::test]
    async fn a_session_id_continues_the_conversation() {
        let model = ScriptedClient::new().reply_text("one").reply_text("two");
        let tool = mux_tool::Typed::new(AgentTool::new(agent(model))).unwrap();
        let first = tool
            .call(json!({"prompt": "hi"}), ToolContext::new("c1"))
            .await
            .unwrap();
        let Some(mux_tool::Content::Json { value }) = first.content.first() else {
            panic!("{first:?}")
        };
        assert_eq!(value["answer"], "one");
        let id = value["session_id"].as_str().unwrap().to_owned();
        assert_eq!(id.len(), 32);
        let second = tool
            .call(
                json!({"prompt": "again", "session_id": id}),
                ToolContext::new("c2"),
            )
            .await
            .unwrap();
        assert!(!second.is_error, "{second:?}");
        let (_, conversation) = tool.inner().conversation(Some(&id)).unwrap();
        assert_eq!(conversation.orchestrator().messages().len(), 4);
    }

    #[tokio::test]
    async fn an_unknown_session_id_is_an_error_naming_it() {
        let tool = mux_tool::Typed::new(AgentTool::new(agent(ScriptedClient::new()))).unwrap();
        let out = tool
            .call(
                json!({"prompt": "hi", "session_id": "nope"}),
                ToolContext::new("c1"),
            )
            .await
            .unwrap();
        assert!(out.is_error);
        assert!(out.to_text().contains("`nope`"), "{}", out.to_text());
    }

    #[test]
    fn sessions_past_the_limit_drop_the_least_recently_used() {
        let base = agent(ScriptedClient::new());
        let mut sessions = Sessions::default();
        sessions.insert("a".into(), base.new_session(), 2);
        sessions.insert("b".into(), base.new_session(), 2);
        sessions.touch("a");
        sessions.insert("c".into(), base.new_session(), 2);
        assert!(sessions.by_id.contains_key("a"));
        assert!(!sessions.by_id.contains_key("b"));
        assert!(sessions.by_id.contains_key("c"));
    }

    #[test]
    fn quotes_cut_at_a_character_boundary() {
        assert_eq!(quote("ééé", 3), "é…");
        assert_eq!(quote("abc", 3), "abc");
    }
}
