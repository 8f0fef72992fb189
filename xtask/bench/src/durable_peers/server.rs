//! `durable-peers-server`: this binary as mux's side of the durable_peers group, the web face
//! with its sessions and runs in PostgreSQL, on a scripted model that asks for the tool `count`
//! once and then answers "ok". `count` appends the run's name (the prompt) to a file, so how
//! often it ran is countable. Prints `PORT <n>` and serves until killed.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::stream;
use mux_llm::testing::events_of;
use mux_llm::{ContentBlock, EventStream, LlmClient, LlmError, Request, Response, StopReason};

use mux_tool::{ApprovalPolicy, BoxFuture, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use serde_json::{Value, json};

/// The argument that turns this binary into mux's durable server of this group.
pub(crate) const SERVER_ARG: &str = "durable-peers-server";
/// The server's database URL.
pub(crate) const DATABASE_URL_VAR: &str = "MUX_PEERS_DATABASE_URL";
/// The server's lease, in ms.
pub(crate) const LEASE_VAR: &str = "MUX_PEERS_LEASE_MS";
/// The file `count` appends to.
pub(crate) const COUNTS_VAR: &str = "MUX_PEERS_COUNTS";
/// When set: the model's second turn writes this file and then waits to be killed.
pub(crate) const SLOW_MARKER_VAR: &str = "MUX_PEERS_SLOW_MARKER";

/// How long a second model turn waits in the crash check before it gives up.
const SLOW_TURN: Duration = Duration::from_secs(600);

/// Serves mux's durable runs on 127.0.0.1 (configured by the variables above).
pub(crate) fn serve() -> Result<(), String> {
    let var = |name: &str| std::env::var(name).map_err(|e| format!("{name}: {e}"));
    let url = var(DATABASE_URL_VAR)?;
    let counts = PathBuf::from(var(COUNTS_VAR)?);
    let lease = var(LEASE_VAR)?
        .parse()
        .map(Duration::from_millis)
        .map_err(|e| format!("{LEASE_VAR}: {e}"))?;
    let slow = std::env::var_os(SLOW_MARKER_VAR).map(PathBuf::from);
    let runtime = crate::load::runtime()?;
    runtime.block_on(async {
        let (sessions, runs) = postgres_stores(&url).await?;
        let client = Arc::new(Scripted { slow });
        let fixed = mux_tool::Registry::new();
        fixed
            .register(Count::new(counts)?)
            .map_err(|e| e.to_string())?;
        // `count` has side effects; no face is there to approve it.
        let agent = mux_orchestrator::Agent::builder_shared(client, "bench")
            .tools(fixed.list())
            .approval(ApprovalPolicy::Never)
            .build()
            .map_err(|e| e.to_string())?;
        let router = mux_web::AguiRouter::new(agent)
            .session_store(Arc::new(sessions))
            .run_store(Arc::new(runs))
            .config(
                mux_web::WebConfig::default()
                    .replay_retention(Duration::from_secs(1))
                    .lease(lease),
            )
            .build();
        crate::web::serve_printing_port(router).await
    })
}

/// The scripted model: asks for `count` with the run's name, then answers "ok" (the
/// Temporal row's workers run it too).
pub(crate) struct Scripted {
    pub(crate) slow: Option<PathBuf>,
}

impl LlmClient for Scripted {
    fn provider(&self) -> &str {
        "scripted"
    }

    fn stream(&self, request: Request) -> BoxFuture<'_, Result<EventStream, LlmError>> {
        Box::pin(async move {
            let answered = request.messages.last().is_some_and(|m| {
                m.content
                    .iter()
                    .any(|b| matches!(b, ContentBlock::ToolResult { .. }))
            });
            let response = if answered {
                if let Some(marker) = &self.slow {
                    std::fs::write(marker, "second model turn\n").map_err(|e| {
                        LlmError::config("scripted", format!("writing the marker: {e}"))
                    })?;
                    tokio::time::sleep(SLOW_TURN).await;
                    return Err(LlmError::config(
                        "scripted",
                        "the crash run was not killed within 600 s",
                    ));
                }
                Response::new(vec![ContentBlock::text("ok")], StopReason::EndTurn)
            } else {
                let run = request
                    .messages
                    .first()
                    .map(|m| m.text())
                    .unwrap_or_default();
                Response::new(
                    vec![ContentBlock::tool_use(
                        "call_1",
                        "count",
                        json!({"run": run}),
                    )],
                    StopReason::ToolUse,
                )
            };
            let events = events_of(&response);
            let stream: EventStream = Box::pin(stream::iter(events.into_iter().map(Ok)));
            Ok(stream)
        })
    }
}

/// `count`: appends its `run` argument and a newline to a file, in one write.
pub(crate) struct Count {
    spec: ToolSpec,
    path: PathBuf,
}

impl Count {
    pub(crate) fn new(path: PathBuf) -> Result<Self, String> {
        let schema = json!({
            "type": "object",
            "properties": {"run": {"type": "string"}},
            "required": ["run"],
        });
        let spec = ToolSpec::new("count", "Counts its runs", schema).map_err(|e| e.to_string())?;
        Ok(Self { spec, path })
    }
}

impl Tool for Count {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, input: Value, _cx: ToolContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let run = input
                .get("run")
                .and_then(Value::as_str)
                .ok_or_else(|| ToolError::InvalidArguments("`run` is not a string".into()))?;
            std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(&self.path)?
                .write_all(format!("{run}\n").as_bytes())?;
            Ok(ToolOutput::text("ok"))
        })
    }
}

/// The session store and the run store on the PostgreSQL database at `url`.
pub(crate) async fn postgres_stores(
    url: &str,
) -> Result<
    (
        mux_orchestrator::session::PostgresSessionStore,
        mux_orchestrator::runs::PostgresRunStore,
    ),
    String,
> {
    let sessions = mux_orchestrator::session::PostgresSessionStore::connect(url)
        .await
        .map_err(|e| e.to_string())?;
    let runs = mux_orchestrator::runs::PostgresRunStore::connect(url)
        .await
        .map_err(|e| e.to_string())?;
    Ok((sessions, runs))
}
