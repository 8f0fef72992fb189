//! The span tree a run exports through OpenTelemetry, read back from an in-process exporter:
//! names, nesting and attribute types as the GenAI conventions have them.
#![cfg(all(feature = "otel", feature = "agents", feature = "testing"))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use mux::agents::{AgentDefinition, AgentRuntime, AgentSession};
use mux::llm::testing::ScriptedClient;
use mux::llm::{ContentBlock, Response, StopReason, Usage};
use mux::tool::{Registry, ToolAnnotations, ToolContext, ToolError, ToolOutput, TypedTool};
use opentelemetry::Value;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt;

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// Text to echo.
    text: String,
}

struct Echo;

impl TypedTool for Echo {
    type Args = EchoArgs;
    const NAME: &'static str = "echo";
    fn description(&self) -> String {
        "Echoes".into()
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only()
    }
    async fn call(&self, args: EchoArgs, _: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(args.text))
    }
}

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
    let subscriber = tracing_subscriber::registry().with(mux::otel::layer(&provider));
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
        let agents = AgentRuntime::builder(Arc::new(client.clone()), "m")
            .tools(tools)
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
    provider.force_flush().unwrap();
    (
        exporter.get_finished_spans().unwrap(),
        client.requests().len(),
    )
}

fn attr<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

/// The tree as indented names, children in start order.
fn tree(spans: &[SpanData]) -> Vec<String> {
    let mut children: HashMap<_, Vec<&SpanData>> = HashMap::new();
    for span in spans {
        children.entry(span.parent_span_id).or_default().push(span);
    }
    for list in children.values_mut() {
        list.sort_by_key(|s| s.start_time);
    }
    fn walk(
        id: opentelemetry::trace::SpanId,
        depth: usize,
        children: &HashMap<opentelemetry::trace::SpanId, Vec<&SpanData>>,
        out: &mut Vec<String>,
    ) {
        for span in children.get(&id).into_iter().flatten() {
            out.push(format!("{}{}", "  ".repeat(depth), span.name));
            walk(span.span_context.span_id(), depth + 1, children, out);
        }
    }
    let mut out = Vec::new();
    walk(
        opentelemetry::trace::SpanId::INVALID,
        0,
        &children,
        &mut out,
    );
    out
}

#[test]
fn a_delegating_run_exports_one_tree_in_the_genai_conventions() {
    let (spans, model_calls) = export_a_delegating_run(false);
    assert_eq!(
        tree(&spans),
        [
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
        ]
    );
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
