//! The span tree a run exports through OpenTelemetry, read back from an in-process exporter:
//! names, nesting and attribute types as the GenAI conventions have them.
#![cfg(all(feature = "otel", feature = "agents", feature = "testing"))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use mux::orchestrator::Agent;
use std::time::Duration;

use mux::agents::{AgentDefinition, AgentRuntime, AgentSession};
use mux::llm::testing::ScriptedClient;
use mux::llm::{ContentBlock, Response, StopReason, Usage};
use mux::tool::Registry;
use opentelemetry::Value;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt;

/// Test tools the integration tests of several crates share (`Echo` here).
#[path = "../../mux-tool/tests/support/tools.rs"]
#[allow(dead_code, unreachable_pub)]
mod tools;
use tools::Echo;

fn call(id: &str, name: &str, input: serde_json::Value) -> Response {
    Response::new(
        vec![ContentBlock::tool_use(id, name, input)],
        StopReason::ToolUse,
    )
    .with_usage(Usage {
        input_tokens: 12,
        output_tokens: 4,
        ..Usage::default()
    })
}

/// Runs a lead agent that delegates to `worker`, which calls `echo`; returns the spans.
fn export_a_delegating_run(capture: bool) -> (Vec<SpanData>, usize) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let model_calls = run_a_delegating_agent(&provider, capture);
    provider.force_flush().unwrap();
    (exporter.get_finished_spans().unwrap(), model_calls)
}

/// The scenario, traced into `provider`; returns how many model calls it made.
fn run_a_delegating_agent(provider: &SdkTracerProvider, capture: bool) -> usize {
    let subscriber = tracing_subscriber::registry().with(mux::otel::layer(provider));
    let _default = tracing::subscriber::set_default(subscriber);

    let client = ScriptedClient::new()
        .reply(call(
            "t1",
            "task",
            json!({"agent": "worker", "prompt": "echo hi"}),
        ))
        .reply(call("e1", "echo", json!({"text": "hi"})))
        .reply(Response::from_text("hi").with_usage(Usage {
            input_tokens: 20,
            output_tokens: 2,
            ..Usage::default()
        }))
        .reply(Response::from_text("the worker said hi"));
    let tools = Registry::new();
    tools.register_typed(Echo).unwrap();
    // One thread: the spawned agent tasks see this thread's subscriber.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let agents = AgentRuntime::builder(
            Agent::builder(client.clone(), "m")
                .tools(tools.list())
                .build()
                .unwrap(),
        )
        .definition(AgentDefinition::new("worker"))
        .configure(move |c| c.capture_content(capture))
        .build();
        let lead = agents
            .spawn(AgentDefinition::new("lead"), AgentSession::New)
            .await
            .unwrap();
        let summary = lead
            .prompt("delegate")
            .unwrap()
            .wait_timeout(Duration::from_secs(10))
            .await
            .unwrap();
        assert_eq!(summary.text, "the worker said hi");
        agents.shutdown_all();
    });
    drop(runtime);
    client.requests().len()
}

fn attr<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

/// A span as a receiver shows it.
struct Node {
    id: String,
    parent: Option<String>,
    name: String,
    start: String,
}

/// The tree as indented names, children in start order.
fn tree(spans: &[SpanData]) -> Vec<String> {
    let nodes: Vec<Node> = spans
        .iter()
        .map(|s| Node {
            id: s.span_context.span_id().to_string(),
            parent: (s.parent_span_id != opentelemetry::trace::SpanId::INVALID)
                .then(|| s.parent_span_id.to_string()),
            name: s.name.to_string(),
            start: format!(
                "{:020}",
                s.start_time
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_nanos()
            ),
        })
        .collect();
    indented(&nodes)
}

/// Indented names, children in start order.
fn indented(nodes: &[Node]) -> Vec<String> {
    fn walk(id: Option<&str>, depth: usize, nodes: &[Node], out: &mut Vec<String>) {
        let mut children: Vec<&Node> = nodes.iter().filter(|n| n.parent.as_deref() == id).collect();
        children.sort_by(|a, b| a.start.cmp(&b.start));
        for node in children {
            out.push(format!("{}{}", "  ".repeat(depth), node.name));
            walk(Some(&node.id), depth + 1, nodes, out);
        }
    }
    let mut out = Vec::new();
    walk(None, 0, nodes, &mut out);
    out
}

/// The tree every exporter must show.
const TREE: [&str; 12] = [
    "invoke_agent lead",
    "  turn",
    "    chat m",
    "    execute_tool task",
    "      invoke_agent worker",
    "        turn",
    "          chat m",
    "          execute_tool echo",
    "        turn",
    "          chat m",
    "  turn",
    "    chat m",
];

#[test]
fn a_delegating_run_exports_one_tree_in_the_genai_conventions() {
    let (spans, model_calls) = export_a_delegating_run(false);
    assert_eq!(tree(&spans), TREE);
    let chats: Vec<&SpanData> = spans
        .iter()
        .filter(|s| s.name.starts_with("chat"))
        .collect();
    assert_eq!(
        chats.len(),
        model_calls,
        "exactly one chat span per model call"
    );
    for chat in &chats {
        assert_eq!(
            attr(chat, "gen_ai.provider.name"),
            Some(&Value::from("scripted"))
        );
        assert_eq!(attr(chat, "gen_ai.request.model"), Some(&Value::from("m")));
        assert!(
            matches!(attr(chat, "gen_ai.usage.input_tokens"), Some(Value::I64(_))),
            "token counts are integers: {:?}",
            attr(chat, "gen_ai.usage.input_tokens")
        );
        assert!(attr(chat, "gen_ai.system").is_none());
        assert_eq!(chat.span_kind, opentelemetry::trace::SpanKind::Client);
        assert!(
            attr(chat, "gen_ai.input.messages").is_none(),
            "content is opt-in"
        );
    }
    let echo = spans
        .iter()
        .find(|s| s.name == "execute_tool echo")
        .unwrap();
    assert_eq!(attr(echo, "gen_ai.tool.call.id"), Some(&Value::from("e1")));
    assert_eq!(attr(echo, "gen_ai.tool.name"), Some(&Value::from("echo")));
    assert!(attr(echo, "gen_ai.tool.call.arguments").is_none());
    let lead = spans
        .iter()
        .find(|s| s.name == "invoke_agent lead")
        .unwrap();
    assert_eq!(attr(lead, "gen_ai.agent.name"), Some(&Value::from("lead")));
    assert_eq!(
        attr(lead, "gen_ai.usage.input_tokens"),
        Some(&Value::I64(12))
    );
}

#[test]
fn content_is_recorded_only_when_asked() {
    let (spans, _) = export_a_delegating_run(true);
    let echo = spans
        .iter()
        .find(|s| s.name == "execute_tool echo")
        .unwrap();
    assert_eq!(
        attr(echo, "gen_ai.tool.call.arguments"),
        Some(&Value::from(r#"{"text":"hi"}"#))
    );
    assert_eq!(
        attr(echo, "gen_ai.tool.call.result"),
        Some(&Value::from("hi"))
    );
    let chat = spans.iter().find(|s| s.name == "chat m").unwrap();
    let input = attr(chat, "gen_ai.input.messages").unwrap().as_str();
    assert!(input.contains("delegate"), "{input}");
}

/// The spans `run` records, through the in-process exporter.
fn traced(run: impl FnOnce()) -> Vec<SpanData> {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    {
        let subscriber = tracing_subscriber::registry().with(mux::otel::layer(&provider));
        let _default = tracing::subscriber::set_default(subscriber);
        run();
    }
    provider.force_flush().unwrap();
    exporter.get_finished_spans().unwrap()
}

/// A one-thread runtime: the agents' tasks see the thread's subscriber.
fn one_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A run started inside an application's span (an eval case, a request) is its child, though
/// the loop runs on a task of its own.
#[test]
fn a_run_started_inside_a_span_is_its_child() {
    let spans = traced(|| {
        let client = ScriptedClient::new().reply(Response::from_text("hi"));
        one_thread().block_on(async {
            let agent = Agent::builder(client, "m").build().unwrap();
            let outer = tracing::info_span!("case");
            let run = {
                let _entered = outer.enter();
                agent.stream("hello").unwrap()
            };
            drop(outer);
            let mut events = run.events;
            while events.recv().await.is_some() {}
            run.handle.wait().await.unwrap();
        });
    });
    assert_eq!(
        tree(&spans),
        ["case", "  invoke_agent", "    turn", "      chat m"]
    );
}

#[test]
fn a_vote_is_one_invoke_workflow_span_over_its_voters_and_judge() {
    use mux::agents::{Aggregator, Voting};
    let spans = traced(|| {
        // Two voters disagree; the judge picks the first candidate.
        let client = ScriptedClient::new()
            .reply(Response::from_text("42"))
            .reply(Response::from_text("41"))
            .reply(Response::from_text("1"));
        one_thread().block_on(async {
            let agents =
                AgentRuntime::builder(Agent::builder(client, "m").build().unwrap()).build();
            let outcome = Voting::same(AgentDefinition::new("solver"), 2)
                .aggregator(Aggregator::Judge(Box::new(AgentDefinition::new("judge"))))
                .name("answer-check")
                .run(&agents, "6 x 7?")
                .await
                .unwrap();
            assert!(outcome.winner.is_some());
            agents.shutdown_all();
        });
    });
    assert_eq!(
        tree(&spans),
        [
            "invoke_workflow answer-check",
            "  invoke_agent solver",
            "    turn",
            "      chat m",
            "  invoke_agent solver",
            "    turn",
            "      chat m",
            "  invoke_agent judge",
            "    turn",
            "      chat m",
        ]
    );
    let workflow = spans
        .iter()
        .find(|s| s.name == "invoke_workflow answer-check")
        .unwrap();
    assert_eq!(
        attr(workflow, "gen_ai.operation.name"),
        Some(&Value::from("invoke_workflow"))
    );
    assert_eq!(
        attr(workflow, "gen_ai.workflow.name"),
        Some(&Value::from("answer-check"))
    );
    assert_eq!(
        attr(workflow, "mux.workflow.kind"),
        Some(&Value::from("voting"))
    );
    assert_eq!(workflow.span_kind, opentelemetry::trace::SpanKind::Internal);
    assert!(attr(workflow, "error.type").is_none());
}

#[test]
fn a_failed_vote_records_its_error_type() {
    use mux::agents::{Aggregator, Voting, VotingError};
    let spans = traced(|| {
        let client = ScriptedClient::new();
        one_thread().block_on(async {
            let agents =
                AgentRuntime::builder(Agent::builder(client, "m").build().unwrap()).build();
            let err = Voting::same(AgentDefinition::new("solver"), 1)
                .aggregator(Aggregator::FirstK(2))
                .run(&agents, "?")
                .await
                .unwrap_err();
            assert!(matches!(err, VotingError::InvalidK { k: 2, voters: 1 }));
        });
    });
    assert_eq!(tree(&spans), ["invoke_workflow voting"]);
    assert_eq!(
        attr(&spans[0], "error.type"),
        Some(&Value::from("invalid_k"))
    );
}

#[test]
fn a_decomposition_is_one_invoke_workflow_span_with_a_plan_span_and_its_workers() {
    use mux::agents::Decomposition;
    use mux::llm::Request;
    let spans = traced(|| {
        let plan = json!({
            "goal": "ship it",
            "steps": [
                {"id": "a", "description": "do a", "depends_on": []},
                {"id": "b", "description": "do b", "depends_on": ["a"]},
            ],
        });
        // The planner (the only agent with `finish_plan`) plans, then says so; workers answer.
        let client = ScriptedClient::new().respond_with(move |request: &Request| {
            let planner = request
                .tools
                .iter()
                .any(|t| t.name.as_str() == "finish_plan");
            Ok(match (planner, request.messages.len()) {
                (true, 1) => Response::from_tool_use("p1", "finish_plan", plan.clone()),
                (true, _) => Response::from_text("planned"),
                (false, _) => Response::from_text("done"),
            })
        });
        one_thread().block_on(async {
            let agents =
                AgentRuntime::builder(Agent::builder(client, "m").build().unwrap()).build();
            let outcome = Decomposition::new(
                AgentDefinition::new("planner"),
                AgentDefinition::new("worker"),
            )
            .run(&agents, "ship it")
            .await
            .unwrap();
            assert!(outcome.succeeded());
            agents.shutdown_all();
        });
    });
    assert_eq!(
        tree(&spans),
        [
            "invoke_workflow decomposition",
            "  plan planner",
            "    invoke_agent planner",
            "      turn",
            "        chat m",
            "        execute_tool finish_plan",
            "      turn",
            "        chat m",
            "  invoke_agent worker",
            "    turn",
            "      chat m",
            "  invoke_agent worker",
            "    turn",
            "      chat m",
        ]
    );
    let plan = spans.iter().find(|s| s.name == "plan planner").unwrap();
    assert_eq!(
        attr(plan, "gen_ai.operation.name"),
        Some(&Value::from("plan"))
    );
    assert_eq!(
        attr(plan, "gen_ai.agent.name"),
        Some(&Value::from("planner"))
    );
    let workflow = spans
        .iter()
        .find(|s| s.name == "invoke_workflow decomposition")
        .unwrap();
    assert_eq!(
        attr(workflow, "gen_ai.workflow.name"),
        Some(&Value::from("decomposition"))
    );
    assert_eq!(
        attr(workflow, "mux.workflow.kind"),
        Some(&Value::from("decomposition"))
    );
}

/// A Phoenix server (`arize-phoenix` from PyPI, installed by `cargo xtask peers`) on loopback,
/// in a temporary working directory, killed on drop.
struct Phoenix {
    child: std::process::Child,
    port: u16,
    /// Its OTLP/gRPC port.
    #[cfg_attr(not(feature = "otel-grpc"), allow(dead_code))]
    grpc: u16,
    _dir: tempfile::TempDir,
}

impl Phoenix {
    fn start() -> Self {
        let bin = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../target/otel-peers-venv/bin/phoenix");
        assert!(
            bin.exists(),
            "{} is missing: run `cargo xtask peers` (cargo xtask ci does it)",
            bin.display()
        );
        let free = || {
            std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port()
        };
        let (port, grpc) = (free(), free());
        let dir = tempfile::tempdir().unwrap();
        let child = std::process::Command::new(bin)
            .arg("serve")
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", port.to_string())
            .env("PHOENIX_GRPC_PORT", grpc.to_string())
            .env("PHOENIX_WORKING_DIR", dir.path())
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let phoenix = Self {
            child,
            port,
            grpc,
            _dir: dir,
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(180);
        while phoenix.get("/v1/projects").is_none() {
            assert!(
                std::time::Instant::now() < deadline,
                "Phoenix did not start in 180 s"
            );
            std::thread::sleep(Duration::from_millis(500));
        }
        phoenix
    }

    /// GET `path`, as JSON; `None` when the server does not answer yet.
    fn get(&self, path: &str) -> Option<serde_json::Value> {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .ok()?;
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n",
            self.port
        )
        .ok()?;
        let mut reply = Vec::new();
        stream.read_to_end(&mut reply).ok()?;
        let reply = String::from_utf8_lossy(&reply);
        let (head, body) = reply.split_once("\r\n\r\n")?;
        if !head.starts_with("HTTP/1.1 200") {
            return None;
        }
        let body = if head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            dechunk(body)
        } else {
            body.to_owned()
        };
        serde_json::from_str(&body).ok()
    }
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A chunked HTTP body, joined.
fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || tail.len() < size {
            break;
        }
        out.push_str(&tail[..size]);
        rest = tail[size..].trim_start_matches("\r\n");
    }
    out
}

#[test]
fn phoenix_receives_the_tree_over_otlp_http() {
    let phoenix = Phoenix::start();
    let otel = mux::otel::Otel::http(format!("http://127.0.0.1:{}/v1/traces", phoenix.port));
    phoenix_receives_the_tree(&phoenix, otel);
}

#[cfg(feature = "otel-grpc")]
#[test]
fn phoenix_receives_the_tree_over_otlp_grpc() {
    let phoenix = Phoenix::start();
    let otel = mux::otel::Otel::grpc(format!("http://127.0.0.1:{}", phoenix.grpc));
    phoenix_receives_the_tree(&phoenix, otel);
}

/// Runs the delegating agent exporting through `otel`, then reads the spans back from
/// Phoenix's REST API: the whole tree, one `chat` per model call, integer usage.
fn phoenix_receives_the_tree(phoenix: &Phoenix, otel: mux::otel::Otel) {
    let provider = otel.service_name("mux-otel-test").provider().unwrap();
    let model_calls = run_a_delegating_agent(&provider, false);
    provider.force_flush().unwrap();

    // Phoenix stores what it receives in the background: read until the whole tree is there.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let spans = loop {
        let spans = phoenix
            .get("/v1/projects/default/spans?limit=1000")
            .and_then(|v| v["data"].as_array().cloned())
            .unwrap_or_default();
        if spans.len() >= TREE.len() || std::time::Instant::now() > deadline {
            break spans;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    provider.shutdown().unwrap();
    let nodes: Vec<Node> = spans
        .iter()
        .map(|s| Node {
            id: s["context"]["span_id"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            parent: s["parent_id"].as_str().map(str::to_owned),
            name: s["name"].as_str().unwrap_or_default().to_owned(),
            start: s["start_time"].as_str().unwrap_or_default().to_owned(),
        })
        .collect();
    let shown = indented(&nodes);
    eprintln!("Phoenix shows:\n{}", shown.join("\n"));
    assert_eq!(shown, TREE);
    let chats: Vec<&serde_json::Value> = spans
        .iter()
        .filter(|s| s["name"].as_str().is_some_and(|n| n.starts_with("chat ")))
        .collect();
    assert_eq!(chats.len(), model_calls);
    for chat in chats {
        let attributes = &chat["attributes"];
        assert_eq!(
            attributes["gen_ai.provider.name"], "scripted",
            "{attributes}"
        );
        assert!(
            attributes["gen_ai.usage.input_tokens"].is_i64(),
            "usage is an integer: {attributes}"
        );
        // Phoenix reads the GenAI conventions into its own kinds: a chat is an LLM span.
        assert_eq!(chat["span_kind"], "LLM", "{chat}");
    }
}
