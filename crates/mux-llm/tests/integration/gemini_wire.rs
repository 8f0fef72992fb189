//! The Gemini provider against a local server replaying recorded Gemini traffic.
#![cfg(all(feature = "gemini", feature = "testing"))]

use crate::common::{fast_retries, fixture, serve, streamed};
use mux_llm::gemini::GeminiClient;
use mux_llm::http::HttpOptions;
use mux_llm::testing::{ReplayServer, Reply};
use mux_llm::{ContentBlock, LlmClient, Message, Request, Role, Secret, StopReason};
use mux_tool::ToolSpec;
use serde_json::json;

const KEY: &str = "AIzaSy-test-key-0123456789";

fn client(server: &ReplayServer, retries: u32) -> GeminiClient {
    let mut options = HttpOptions::new(server.url(), Some(Secret::new(KEY)));
    options.retry = fast_retries(retries);
    GeminiClient::with_options(options).unwrap()
}

#[tokio::test]
async fn text_with_crlf_frames_and_the_key_in_a_header() {
    let server = serve(vec![Reply::sse(fixture("gemini/simple.sse")).chunked(9)]).await;
    let reply = streamed(
        &client(&server, 0),
        Request::new("gemini-2.5-flash", 4000)
            .system("You are a helpful assistant")
            .user("Say hi in Portuguese"),
    )
    .await
    .unwrap();
    assert_eq!(reply.text(), "Olá!\n\nIn Portuguese, \"hi\" is **Olá!**");
    assert_eq!(reply.stop_reason, StopReason::EndTurn);
    assert_eq!(reply.usage.input_tokens, 11);
    assert_eq!(reply.usage.output_tokens, 14 + 24);
    assert_eq!(reply.usage.reasoning_tokens, 24);
    let request = &server.requests()[0];
    assert_eq!(
        request.path,
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert!(!request.path.contains(KEY));
    assert_eq!(request.header("x-goog-api-key"), Some(KEY));
}

#[tokio::test]
async fn function_call_round_trip_keeps_the_thought_signature() {
    let server = serve(vec![
        Reply::sse(fixture("gemini/tool_call.sse")).chunked(17),
        Reply::sse(fixture("gemini/tool_followup.sse")),
    ])
    .await;
    let client = client(&server, 0);
    let weather = ToolSpec::new(
        "weather",
        "Get weather information for a location",
        json!({"type": "object", "properties": {"location": {"type": "string"}}}),
    )
    .unwrap();
    let first = Request::new("gemini-2.5-flash", 4000)
        .user("What's the weather in Florence,Italy?")
        .tools([weather]);
    let reply = streamed(&client, first.clone()).await.unwrap();
    assert_eq!(reply.stop_reason, StopReason::ToolUse);
    let (id, name, input) = reply.tool_calls().next().unwrap();
    assert_eq!(name, "weather");
    assert_eq!(input, &json!({"location": "Florence,Italy"}));
    let id = id.to_owned();

    let second = first.message(reply.to_message()).message(Message::new(
        Role::User,
        vec![ContentBlock::tool_result(&id, "40 C", false)],
    ));
    let answer = streamed(&client, second).await.unwrap();
    assert_eq!(answer.text(), "The weather in Florence, Italy is 40 C.");

    let sent = server.requests()[1].json();
    let model_part = &sent["contents"][1]["parts"][0];
    assert_eq!(model_part["functionCall"]["name"], "weather");
    assert!(
        model_part["thoughtSignature"]
            .as_str()
            .unwrap()
            .starts_with("CiQB0e2Kbz2c")
    );
    let response_part = &sent["contents"][2]["parts"][0]["functionResponse"];
    assert_eq!(response_part["name"], "weather");
    assert_eq!(response_part["response"], json!({"result": "40 C"}));
}

#[tokio::test]
async fn resource_exhausted_is_rate_limited_and_retried() {
    let body = r#"{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}"#;
    let server = serve(vec![
        Reply::json(429, body).header("retry-after", "0"),
        Reply::sse(fixture("gemini/simple.sse")),
    ])
    .await;
    let reply = streamed(
        &client(&server, 1),
        Request::new("gemini-2.5-flash", 64).user("hi"),
    )
    .await
    .unwrap();
    assert!(reply.text().starts_with("Olá"));
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_model_name_cannot_reshape_the_url() {
    let server = serve(vec![]).await;
    let error = streamed(
        &client(&server, 0),
        Request::new("../x?key=1", 64).user("hi"),
    )
    .await
    .unwrap_err();
    assert_eq!(error.kind(), "config");
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn non_streaming_function_call() {
    let server = serve(vec![Reply::json(200, fixture("gemini/tool_call.json"))]).await;
    let reply = client(&server, 0)
        .complete(
            Request::new("gemini-2.5-flash", 4000).user("What's the weather in Florence,Italy?"),
        )
        .await
        .unwrap();
    let (_, name, input) = reply.tool_calls().next().unwrap();
    assert_eq!(name, "weather");
    assert_eq!(input, &json!({"location": "Florence, Italy"}));
    assert_eq!(reply.stop_reason, StopReason::ToolUse);
    assert_eq!(
        (
            reply.usage.input_tokens,
            reply.usage.output_tokens,
            reply.usage.reasoning_tokens
        ),
        (54, 66, 51)
    );
    assert_eq!(
        server.requests()[0].path,
        "/v1beta/models/gemini-2.5-flash:generateContent"
    );
}
