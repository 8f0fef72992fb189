//! The whole loop through the real Anthropic and OpenAI provider code, against a local server
//! replaying traffic recorded from the real APIs (fixtures in mux-llm/tests/fixtures).

use crate::common;

use std::path::PathBuf;
use std::sync::Arc;

use common::{Conversation, labels, loop_agent};
use mux_llm::anthropic::AnthropicClient;
use mux_llm::openai::OpenAiClient;
use mux_llm::testing::{ReplayServer, Reply};
use mux_llm::{ContentBlock, LlmClient, Secret};
use mux_orchestrator::{LoopEvent, OrchestratorConfig};
use mux_tool::{Registry, ToolAnnotations, ToolContext, ToolError, ToolOutput, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;

fn fixture(path: &str) -> Vec<u8> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../mux-llm/tests/fixtures");
    std::fs::read(dir.join(path)).unwrap()
}

/// A read-only "Current weather" tool `$tool` named `$name`, taking `$args` and answering
/// `$answer` of them (each recording names its own tool and arguments).
macro_rules! weather_tool {
    ($(#[$doc:meta])* $tool:ident, $name:literal, $args:ty, |$a:ident| $answer:expr) => {
        $(#[$doc])*
        struct $tool;

        impl TypedTool for $tool {
            type Args = $args;
            const NAME: &'static str = $name;
            fn description(&self) -> String {
                "Current weather".into()
            }
            fn annotations(&self) -> ToolAnnotations {
                ToolAnnotations::read_only()
            }
            async fn call(&self, $a: $args, _: ToolContext) -> Result<ToolOutput, ToolError> {
                Ok(ToolOutput::text($answer))
            }
        }
    };
}

#[derive(Deserialize, JsonSchema)]
struct WeatherArgs {
    /// The city.
    location: String,
}

weather_tool!(
    /// The tool of the Anthropic recording.
    GetWeather,
    "get_weather",
    WeatherArgs,
    |args| format!("18°C and cloudy in {}", args.location)
);
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct CityWeatherArgs {
    /// The city.
    city: String,
    /// The country.
    country: String,
    /// `c` or `f`.
    units: String,
}

weather_tool!(
    /// The tool of the OpenAI recording.
    GetWeatherArgs,
    "GetWeatherArgs",
    CityWeatherArgs,
    |args| format!("7°{} and raining in {}", args.units.to_uppercase(), args.city)
);
/// A local server replaying `replies`.
async fn serve(replies: Vec<Reply>) -> ReplayServer {
    ReplayServer::start(replies).await.unwrap()
}

/// The Anthropic provider at `server`.
fn anthropic(server: &ReplayServer) -> AnthropicClient {
    AnthropicClient::new(Secret::new("sk-ant-test"))
        .unwrap()
        .base_url(server.url())
        .unwrap()
}

/// A conversation on `model` through `client` offering `tool` alone.
fn with_tool(
    client: impl LlmClient + 'static,
    model: &str,
    tool: impl TypedTool + 'static,
) -> mux_orchestrator::Orchestrator {
    let registry = Registry::new();
    registry.register_typed(tool).unwrap();
    let client = Arc::new(client) as Arc<dyn LlmClient>;
    loop_agent(client, OrchestratorConfig::new(model))
        .tools(registry.list())
        .conversation()
}

#[tokio::test]
async fn anthropic_tool_use_then_answer() {
    let server = serve(vec![
        Reply::sse(fixture("anthropic/tool_use.sse")).chunked(7),
        Reply::sse(fixture("anthropic/basic.sse")).chunked(5),
    ])
    .await;
    let client = anthropic(&server);
    let agent = with_tool(client, "claude-sonnet-4-20250514", GetWeather);
    let (events, outcome) = common::drain(agent.run("What's the weather in Paris?").unwrap()).await;
    let summary = outcome.unwrap();

    assert_eq!(summary.tool_calls.len(), 1);
    assert_eq!(summary.tool_calls[0].name, "get_weather");
    assert_eq!(
        summary.tool_calls[0].output.to_text(),
        "18°C and cloudy in Paris"
    );
    assert_eq!(summary.iterations, 2);
    assert!(summary.usage.input_tokens > 0 && summary.usage.output_tokens > 0);
    assert!(events.iter().any(
        |e| matches!(e, LoopEvent::ToolCallArguments { input, .. } if input["location"] == "Paris")
    ));
    insta::assert_json_snapshot!("anthropic_tool_use_then_answer", labels(&events));

    // The second request carried the tool_use and its result, paired by the recorded id.
    let second = server.requests()[1].json();
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[1]["content"][1]["type"], "tool_use");
    let id = messages[1]["content"][1]["id"].as_str().unwrap();
    assert_eq!(messages[2]["content"][0]["tool_use_id"], id);
    assert_eq!(
        server.requests()[0].header("x-api-key"),
        Some("sk-ant-test")
    );
    let ContentBlock::ToolResult { .. } = &agent.messages()[2].content[0] else {
        panic!("no tool result")
    };
}

#[tokio::test]
async fn openai_parallel_tool_calls_then_answer() {
    let server = serve(vec![
        Reply::sse(fixture("openai/parallel_tools.sse")).chunked(11),
        Reply::sse(fixture("openai/max_tokens.sse")),
    ])
    .await;
    let client = OpenAiClient::new(Secret::new("sk-test"))
        .unwrap()
        .base_url(format!("{}/v1", server.url()))
        .unwrap();
    let agent = with_tool(client, "gpt-4o-2024-08-06", GetWeatherArgs);
    let (events, outcome) = common::drain(
        agent
            .run("Weather in Edinburgh and New York? And a stock price.")
            .unwrap(),
    )
    .await;
    let summary = outcome.unwrap();

    // The recording calls GetWeatherArgs and get_stock_price (which we do not have) in parallel.
    let names: Vec<&str> = summary.tool_calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["GetWeatherArgs", "get_stock_price"]);
    assert_eq!(
        summary.tool_calls[0].output.to_text(),
        "7°C and raining in Edinburgh"
    );
    assert!(
        summary.tool_calls[1].output.is_error,
        "an unknown tool is an error result, not a crash"
    );
    insta::assert_json_snapshot!("openai_parallel_tools_then_answer", labels(&events));

    let second = server.requests()[1].json();
    let tool_messages: Vec<&serde_json::Value> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(
        tool_messages.len(),
        2,
        "every tool call answered with a role:tool message"
    );
}

/// A retried request shows as `Retrying` events before the turn's text, and the run goes on.
#[tokio::test]
async fn retries_are_visible_as_events() {
    let server = serve(vec![
        Reply::json(
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        )
        .header("retry-after-ms", "5"),
        Reply::sse(fixture("anthropic/basic.sse")),
    ])
    .await;
    let client = anthropic(&server);
    let agent = loop_agent(
        Arc::new(client) as Arc<dyn LlmClient>,
        OrchestratorConfig::new("claude-sonnet-4-20250514"),
    )
    .conversation();
    let (events, outcome) = common::drain(agent.run("Hi").unwrap()).await;
    outcome.unwrap();
    let retrying: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            LoopEvent::Retrying {
                attempt,
                delay_ms,
                error,
            } => Some((*attempt, *delay_ms, error.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(retrying.len(), 1, "{events:?}");
    assert_eq!(retrying[0].0, 1);
    assert_eq!(retrying[0].1, 5);
    assert!(retrying[0].2.contains("529"), "{}", retrying[0].2);
    let first_text = events
        .iter()
        .position(|e| matches!(e, LoopEvent::TextDelta { .. }))
        .unwrap();
    let retry = events
        .iter()
        .position(|e| matches!(e, LoopEvent::Retrying { .. }))
        .unwrap();
    assert!(retry < first_text);
    assert!(!retrying[0].2.contains("sk-ant-test"));
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Place {
    location: String,
}

/// Structured output on Anthropic: the recorded tool-use stream, with its tool renamed to the
/// output tool, comes back as the typed answer; the request forced that tool.
#[tokio::test]
async fn anthropic_structured_output_through_the_output_tool() {
    let recorded = String::from_utf8(fixture("anthropic/tool_use.sse")).unwrap();
    let answered = recorded.replace("\"name\":\"get_weather\"", "\"name\":\"final_result\"");
    let server = serve(vec![Reply::sse(answered.into_bytes()).chunked(9)]).await;
    let client = anthropic(&server);
    let agent = mux_orchestrator::Agent::builder(client, "claude-sonnet-4-20250514")
        .build()
        .unwrap();
    let place: Place = agent.prompt_typed("Where?").await.unwrap();
    assert_eq!(place.location, "Paris");
    let request = server.requests()[0].json();
    // The output tool is the only tool (an agent's own conversation offers no `ask_user`
    // unless told), so the model is made to call it by name.
    assert_eq!(request["tool_choice"]["type"], "tool");
    assert_eq!(request["tool_choice"]["name"], "final_result");
    let tools = request["tools"].as_array().unwrap();
    let output = tools.iter().find(|t| t["name"] == "final_result").unwrap();
    assert_eq!(output["input_schema"]["required"][0], "location");
    assert_eq!(
        server.requests().len(),
        1,
        "a valid answer needs no correction"
    );
}

#[derive(Deserialize, JsonSchema)]
struct LocationArgs {
    /// The place.
    location: String,
}

weather_tool!(
    /// The tool of the Responses API recording (gpt-5).
    Weather,
    "weather",
    LocationArgs,
    |args| format!("40°C in {}", args.location)
);
fn responses_client(server: &ReplayServer) -> mux_llm::responses::ResponsesClient {
    mux_llm::responses::ResponsesClient::new(Secret::new("sk-test"))
        .unwrap()
        .base_url(format!("{}/v1", server.url()))
        .unwrap()
}

/// The Responses API provider through the whole loop: a recorded function call, its output
/// sent back as `function_call_output` with the recorded call id, then the recorded answer.
#[tokio::test]
async fn responses_api_tool_call_then_answer() {
    let server = serve(vec![
        Reply::sse(fixture("responses/tool_call.sse")).chunked(13),
        Reply::sse(fixture("responses/tool_followup.sse")).chunked(7),
    ])
    .await;
    let agent = with_tool(responses_client(&server), "gpt-5", Weather);
    let summary = agent
        .run_to_completion("What's the weather in Florence?")
        .await
        .unwrap();
    assert_eq!(summary.tool_calls.len(), 1);
    assert_eq!(
        summary.tool_calls[0].output.to_text(),
        "40°C in Florence, Italy"
    );
    assert!(
        summary
            .text
            .starts_with("Florence, Italy is currently about 40°C"),
        "{}",
        summary.text
    );
    assert_eq!(summary.iterations, 2);

    let second = server.requests()[1].json();
    let input = second["input"].as_array().unwrap();
    let call = input
        .iter()
        .find(|item| item["type"] == "function_call")
        .expect("the call goes back");
    let output = input
        .iter()
        .find(|item| item["type"] == "function_call_output")
        .expect("with its output");
    assert_eq!(call["call_id"], output["call_id"]);
    assert_eq!(output["output"], "40°C in Florence, Italy");
}

#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
struct Person {
    name: String,
    age: u32,
    city: String,
}

/// A typed answer through the Responses API: the schema goes out as `text.format`, and the
/// recorded JSON answer comes back as a `Person`.
#[tokio::test]
async fn responses_api_typed_answer() {
    let server = serve(vec![
        Reply::sse(fixture("responses/structured_output.sse")).chunked(9),
    ])
    .await;
    let agent = mux_orchestrator::Agent::builder(responses_client(&server), "gpt-4o-mini")
        .build()
        .unwrap();
    let person: Person = agent.prompt_typed("Alice, 30, Paris").await.unwrap();
    assert_eq!(
        person,
        Person {
            name: "Alice".into(),
            age: 30,
            city: "Paris".into()
        }
    );
    let request = server.requests()[0].json();
    assert_eq!(request["text"]["format"]["type"], "json_schema");
    assert_eq!(request["text"]["format"]["name"], "Person");
}
