//! `FallbackClient` over real provider clients and local servers: an overloaded server is
//! left for the next one and the stream says so; an error after the first event, and an error
//! that retrying cannot fix, are the caller's.
#![cfg(all(
    feature = "anthropic",
    feature = "openai-responses",
    feature = "testing"
))]

use std::sync::{Arc, Mutex};

use crate::common::{fast_retries, fixture, serve};
use futures::StreamExt;
use mux_llm::anthropic::AnthropicClient;
use mux_llm::http::HttpOptions;
use mux_llm::responses::ResponsesClient;
use mux_llm::testing::{ReplayServer, Reply};
use mux_llm::{FallbackClient, LlmClient, LlmError, Request, Secret, StreamEvent};

const OVERLOADED: &str =
    r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;

fn anthropic(server: &ReplayServer, retries: u32) -> AnthropicClient {
    let mut options = HttpOptions::new(server.url(), Some(Secret::new("sk-ant-test-123456")));
    options.retry = fast_retries(retries);
    AnthropicClient::with_options(options).unwrap()
}

fn responses(server: &ReplayServer) -> ResponsesClient {
    let mut options = HttpOptions::new(server.url(), Some(Secret::new("sk-proj-test-123456")));
    options.retry = fast_retries(0);
    ResponsesClient::with_options(options).unwrap()
}

async fn collect(client: &FallbackClient, request: Request) -> Result<Vec<StreamEvent>, LlmError> {
    let mut stream = client.stream(request).await?;
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event?);
    }
    Ok(events)
}

#[tokio::test]
async fn an_overloaded_provider_falls_back_and_the_stream_shows_the_switch() {
    // The primary answers 529 to its first try and to its one retry.
    let primary = serve(vec![
        Reply::json(529, OVERLOADED),
        Reply::json(529, OVERLOADED),
    ])
    .await;
    let secondary = serve(vec![Reply::sse(fixture("responses/text.sse")).chunked(16)]).await;
    let switches = Arc::new(Mutex::new(Vec::new()));
    let log = switches.clone();
    let client = FallbackClient::new([Arc::new(anthropic(&primary, 1)) as Arc<dyn LlmClient>])
        .then_with_model(responses(&secondary), "gpt-4o-mini")
        .on_switch(move |switch| {
            log.lock()
                .unwrap()
                .push((switch.from.clone(), switch.to.clone()))
        });

    let events = collect(
        &client,
        Request::new("claude-sonnet-4-5", 100).user("Say hi in Portuguese"),
    )
    .await
    .unwrap();
    match &events[0] {
        StreamEvent::Fallback { from, to, error } => {
            assert_eq!(
                (from.as_str(), to.as_str()),
                ("anthropic", "openai-responses")
            );
            assert_eq!(error.kind(), "overloaded");
            assert!(error.message().contains("after 2 attempts"), "{error}");
        }
        other => panic!("the stream should open with the switch, not {other:?}"),
    }
    assert!(matches!(events[1], StreamEvent::MessageStart { .. }));
    assert_eq!(events.last(), Some(&StreamEvent::MessageStop));
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(text.contains("Oi"), "{text}");
    assert_eq!(primary.requests().len(), 2);
    assert_eq!(secondary.requests()[0].json()["model"], "gpt-4o-mini");
    assert_eq!(
        *switches.lock().unwrap(),
        vec![("anthropic".to_owned(), "openai-responses".to_owned())]
    );
}

#[tokio::test]
async fn an_error_after_the_first_event_is_not_retried_elsewhere() {
    // The primary's stream delivers its first three events, then breaks off.
    let body = fixture("responses/tool_call.sse");
    let third_event_end = body
        .windows(2)
        .enumerate()
        .filter(|(_, w)| *w == b"\n\n")
        .nth(2)
        .map(|(at, _)| at + 2)
        .unwrap();
    let primary = serve(vec![
        Reply::sse(body).split_at(&[third_event_end]).cut_after(1),
    ])
    .await;
    let secondary = serve(vec![Reply::sse(fixture("responses/text.sse"))]).await;
    let client = FallbackClient::new([responses(&primary), responses(&secondary)]);
    let mut stream = client
        .stream(Request::new("gpt-5", 100).user("weather?"))
        .await
        .unwrap();
    let mut error = None;
    while let Some(event) = stream.next().await {
        match event {
            Ok(StreamEvent::Fallback { .. }) => panic!("no switch after the first event"),
            Ok(_) => {}
            Err(err) => error = Some(err),
        }
    }
    let error = error.expect("the broken stream ends with an error");
    assert!(error.is_retryable(), "{error}");
    assert!(secondary.requests().is_empty());
}

#[tokio::test]
async fn an_error_retrying_cannot_fix_is_returned_at_once() {
    for (status, body, kind) in [
        (
            401,
            r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
            "authentication",
        ),
        (
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: too large"}}"#,
            "invalid_request",
        ),
    ] {
        let primary = serve(vec![Reply::json(status, body)]).await;
        let secondary = serve(vec![Reply::sse(fixture("responses/text.sse"))]).await;
        let client = FallbackClient::new([Arc::new(anthropic(&primary, 2)) as Arc<dyn LlmClient>])
            .then(responses(&secondary));
        let err = client
            .stream(Request::new("m", 10).user("x"))
            .await
            .err()
            .unwrap();
        assert_eq!(err.kind(), kind);
        assert_eq!(primary.requests().len(), 1, "{kind} is not retried");
        assert!(secondary.requests().is_empty(), "{kind} does not fall back");
    }
}

#[tokio::test]
async fn when_every_client_fails_the_last_error_is_returned_after_each_switch() {
    let a = serve(vec![Reply::json(529, OVERLOADED)]).await;
    let b = serve(vec![Reply::json(
        503,
        r#"{"error":{"message":"Service unavailable","type":"server_error"}}"#,
    )])
    .await;
    let count = Arc::new(Mutex::new(0));
    let seen = count.clone();
    let client = FallbackClient::new([Arc::new(anthropic(&a, 0)) as Arc<dyn LlmClient>])
        .then(responses(&b))
        .on_switch(move |_| *seen.lock().unwrap() += 1);
    let err = client
        .complete(Request::new("m", 10).user("x"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "server");
    assert_eq!(err.status(), Some(503));
    assert_eq!(*count.lock().unwrap(), 1);
}

#[cfg(feature = "gemini")]
#[tokio::test]
async fn a_conversation_with_responses_reasoning_falls_back_without_its_reasoning_items() {
    // A first turn from the Responses API (a reasoning item with encrypted content, a call),
    // continued on Anthropic and Gemini: the reasoning item is OpenAI's alone and is left out,
    // the call and its result go through.
    let server = serve(vec![Reply::sse(fixture(
        "responses/reasoning_tool_call.sse",
    ))])
    .await;
    let stream = responses(&server)
        .stream(Request::new("gpt-5", 1000).user("Weather in Florence?"))
        .await
        .unwrap();
    let first = mux_llm::accumulate("openai-responses", stream)
        .await
        .unwrap();
    let (id, _, _) = first.tool_calls().next().unwrap();
    let next = Request::new("m", 1000)
        .user("Weather in Florence?")
        .message(first.to_message())
        .message(mux_llm::Message::new(
            mux_llm::Role::User,
            vec![mux_llm::ContentBlock::tool_result(id, "40 C", false)],
        ));

    let anthropic = mux_llm::anthropic::request_body(&next, false);
    let assistant = &anthropic["messages"][1]["content"];
    assert_eq!(assistant.as_array().unwrap().len(), 1, "{assistant}");
    assert_eq!(assistant[0]["type"], "tool_use");
    assert!(!anthropic.to_string().contains("openai.reasoning"));

    let gemini = mux_llm::gemini::request_body(&next);
    assert!(!gemini.to_string().contains("openai.reasoning"), "{gemini}");
    assert!(gemini.to_string().contains("functionCall"), "{gemini}");
}
