//! The Anthropic provider against a local server replaying recorded Anthropic traffic.
#![cfg(all(feature = "anthropic", feature = "testing"))]

use std::time::Duration;

use crate::common::{assert_key_hidden, assert_timed_out, fast_retries, fixture, serve};
use futures::StreamExt;
use mux_llm::anthropic::AnthropicClient;
use mux_llm::http::{HttpOptions, Timeouts};
use mux_llm::testing::{ReplayServer, Reply};
use mux_llm::{
    ContentBlock, LlmClient, Message, Request, RetryPolicy, Role, Secret, StopReason, StreamEvent,
    TimeoutPhase,
};
use mux_tool::ToolSpec;
use serde_json::json;

const KEY: &str = "sk-ant-test-0123456789abcdef";

fn client(server: &ReplayServer, retries: u32) -> AnthropicClient {
    let mut options = HttpOptions::new(server.url(), Some(Secret::new(KEY)));
    options.retry = fast_retries(retries);
    AnthropicClient::with_options(options).unwrap()
}

/// Sends "Hi" to `server` through the streaming path, with `retries`.
async fn hi(server: &ReplayServer, retries: u32) -> Result<mux_llm::Response, mux_llm::LlmError> {
    client(server, retries)
        .complete_streaming(Request::new("m", 64).user("Hi"))
        .await
}

/// The recorded conversation's first request: Florence's weather, with thinking on.
fn florence_with_thinking() -> Request {
    Request::new("claude-sonnet-4-20250514", 4096)
        .system("You are a helpful assistant")
        .user("What's the weather in Florence, Italy?")
        .tools([weather_tool()])
        .thinking(4000)
}

/// `first` followed by `reply` and the tool's answer "40 C" to the call `id`.
fn with_tool_result(first: Request, reply: &mux_llm::Response, id: &str) -> Request {
    first.message(reply.to_message()).message(Message::new(
        Role::User,
        vec![ContentBlock::tool_result(id, "40 C", false)],
    ))
}

fn weather_tool() -> ToolSpec {
    ToolSpec::new(
        "weather",
        "Get weather information for a location",
        json!({"type": "object", "properties": {"location": {"type": "string", "description": "the city"}}, "required": ["location"]}),
    )
    .unwrap()
}

#[tokio::test]
async fn text_stream_is_assembled_with_merged_usage() {
    let server = serve(vec![Reply::sse(fixture("anthropic/basic.sse"))]).await;
    let reply = client(&server, 0)
        .complete_streaming(Request::new("claude-3-opus-latest", 64).user("Hi"))
        .await
        .unwrap();
    assert_eq!(reply.text(), "Hello there!");
    assert_eq!(reply.stop_reason, StopReason::EndTurn);
    assert_eq!(reply.usage.input_tokens, 11);
    assert_eq!(reply.usage.output_tokens, 6);
    assert_eq!(
        reply.id.as_deref(),
        Some("msg_4QpJur2dWWDjF6C758FbBw5vm12BaVipnK")
    );

    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some(KEY));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.header("anthropic-beta"), None);
    assert_eq!(request.json()["stream"], json!(true));
}

/// Streams through `stream()` and accumulates, so the streaming path is the one exercised.
trait CompleteStreaming {
    async fn complete_streaming(
        &self,
        request: Request,
    ) -> Result<mux_llm::Response, mux_llm::LlmError>;
}

impl<C: LlmClient> CompleteStreaming for C {
    async fn complete_streaming(
        &self,
        request: Request,
    ) -> Result<mux_llm::Response, mux_llm::LlmError> {
        crate::common::streamed(self, request).await
    }
}

#[tokio::test]
async fn tool_call_json_split_mid_token_across_chunks() {
    let server = serve(vec![
        Reply::sse(fixture("anthropic/tool_use.sse")).chunked(7),
    ])
    .await;
    let reply = client(&server, 0)
        .complete_streaming(
            Request::new("claude-sonnet-4-20250514", 256)
                .user("Weather in Paris?")
                .tools([weather_tool()]),
        )
        .await
        .unwrap();
    assert_eq!(reply.stop_reason, StopReason::ToolUse);
    let calls: Vec<_> = reply.tool_calls().collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].0, "toolu_01NRLabsLyVHZPKxbKvkfSMn");
    assert_eq!(calls[0].1, "get_weather");
    assert_eq!(calls[0].2, &json!({"location": "Paris"}));
    assert_eq!(reply.usage.input_tokens, 377);
    assert_eq!(reply.usage.output_tokens, 65);
}

#[tokio::test]
async fn thinking_signature_round_trips_and_split_utf8_survives() {
    let followup = fixture("anthropic/thinking_followup_utf8.sse");
    let degree = followup
        .windows(2)
        .position(|w| w == "°".as_bytes())
        .unwrap();
    let server = serve(vec![
        Reply::sse(fixture("anthropic/thinking_tool_use.sse")).chunked(13),
        Reply::sse(followup).split_at(&[degree + 1]),
    ])
    .await;
    let client = client(&server, 0);
    let first = florence_with_thinking();
    let reply = client.complete_streaming(first.clone()).await.unwrap();
    let ContentBlock::Thinking {
        thinking,
        signature,
    } = &reply.content[0]
    else {
        panic!("expected a thinking block, got {:?}", reply.content[0]);
    };
    assert!(thinking.starts_with("The user is asking for weather information for Florence"));
    assert!(signature.starts_with("EsQDCkYICBgCKkBr9") && signature.ends_with("SEYAQ=="));
    let (id, name, input) = reply.tool_calls().next().unwrap();
    assert_eq!((id, name), ("toolu_0171KFcBwn1Z64XzvQfz3sZS", "weather"));
    assert_eq!(input, &json!({"location": "Florence, Italy"}));

    let second = with_tool_result(first, &reply, id);
    let answer = client.complete_streaming(second).await.unwrap();
    assert!(answer.text().contains("40°C (104°F)"));
    assert_eq!(answer.stop_reason, StopReason::EndTurn);

    let sent = server.requests()[1].json();
    let assistant = &sent["messages"][1]["content"];
    assert_eq!(assistant[0]["type"], "thinking");
    assert_eq!(assistant[0]["signature"].as_str(), Some(signature.as_str()));
    assert_eq!(assistant[0]["thinking"].as_str(), Some(thinking.as_str()));
    assert_eq!(
        sent["messages"][2]["content"][0]["tool_use_id"],
        "toolu_0171KFcBwn1Z64XzvQfz3sZS"
    );
    assert_eq!(
        sent["thinking"],
        json!({"type": "enabled", "budget_tokens": 4000})
    );
}

#[tokio::test]
async fn refusal_is_a_stop_reason_with_reasoning_tokens() {
    let server = serve(vec![Reply::sse(fixture("anthropic/refusal.sse"))]).await;
    let reply = client(&server, 0)
        .complete_streaming(Request::new("claude-opus-4-7", 64).user("x"))
        .await
        .unwrap();
    assert_eq!(reply.stop_reason, StopReason::Refusal);
    assert_eq!(reply.usage.output_tokens, 120);
    assert_eq!(reply.usage.reasoning_tokens, 67);
}

fn with_error_after_first_delta() -> Vec<u8> {
    let basic = String::from_utf8(fixture("anthropic/basic.sse")).unwrap();
    let cut = basic.find("event: content_block_delta").unwrap();
    let after = &basic[cut..];
    let second = cut + after[1..].find("event: content_block_delta").unwrap() + 1;
    format!(
        "{}event: error\ndata: {{\"type\": \"error\", \"error\": {{\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}}}\n\n",
        &basic[..second]
    )
    .into_bytes()
}

#[tokio::test]
async fn a_mid_stream_error_reaches_the_consumer_typed_and_is_not_retried() {
    let server = serve(vec![
        Reply::sse(with_error_after_first_delta()),
        Reply::sse(fixture("anthropic/basic.sse")),
    ])
    .await;
    let mut stream = client(&server, 3)
        .stream(Request::new("m", 64).user("Hi"))
        .await
        .unwrap();
    let mut texts = Vec::new();
    let mut error = None;
    while let Some(item) = stream.next().await {
        match item {
            Ok(StreamEvent::TextDelta { text, .. }) => texts.push(text),
            Ok(_) => {}
            Err(err) => error = Some(err),
        }
    }
    assert_eq!(texts, vec!["Hello".to_owned()]);
    let error = error.expect("the in-stream error must surface");
    assert_eq!(error.kind(), "overloaded");
    assert_eq!(
        server.requests().len(),
        1,
        "events already reached the consumer: no retry"
    );
}

const RATE_LIMIT_BODY: &str = r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#;

/// Failures that are retried, each followed by the recorded answer: every case ends with the
/// answer after one request per failure.
#[tokio::test]
async fn transient_failures_are_retried_then_succeed() {
    let overloaded =
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let cases: Vec<(&str, Vec<Reply>)> = vec![
        (
            "an error event before any other",
            vec![Reply::sse(
                b"event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n".to_vec(),
            )],
        ),
        (
            "a rate limit with retry-after-ms",
            vec![Reply::json(429, RATE_LIMIT_BODY).header("retry-after-ms", "15")],
        ),
        (
            "overloaded (529), then a server error (500)",
            vec![
                Reply::json(529, overloaded),
                Reply::json(
                    500,
                    r#"{"type":"error","error":{"type":"api_error","message":"Internal server error"}}"#,
                ),
            ],
        ),
    ];
    for (case, mut replies) in cases {
        let failures = replies.len();
        replies.push(Reply::sse(fixture("anthropic/basic.sse")));
        let server = serve(replies).await;
        let reply = hi(&server, 2)
            .await
            .unwrap_or_else(|err| panic!("{case}: {err}"));
        assert_eq!(reply.text(), "Hello there!", "{case}");
        assert_eq!(server.requests().len(), failures + 1, "{case}");
    }
}

#[tokio::test]
async fn rate_limit_without_retries_reports_retry_after() {
    let server = serve(vec![
        Reply::json(429, RATE_LIMIT_BODY).header("retry-after", "7"),
    ])
    .await;
    let error = hi(&server, 0).await.unwrap_err();
    assert_eq!(error.kind(), "rate_limited");
    assert_eq!(error.status(), Some(429));
    assert_eq!(error.retry_after(), Some(Duration::from_secs(7)));
    assert!(error.message().contains("per-minute rate limit"));
}

#[tokio::test]
async fn exhausted_retries_return_the_last_error() {
    let overloaded =
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let server = serve(vec![
        Reply::json(529, overloaded),
        Reply::json(529, overloaded),
    ])
    .await;
    let error = hi(&server, 1).await.unwrap_err();
    assert_eq!(error.kind(), "overloaded");
    assert_eq!(error.status(), Some(529));
    assert_eq!(server.requests().len(), 2);
    // The final error says how many attempts were made, and where they went.
    let shown = error.to_string();
    assert!(shown.contains("(after 2 attempts)"), "{shown}");
    assert!(shown.contains("(POST http://127.0.0.1:"), "{shown}");
}

/// An HTML error page (a proxy's, say) arrives on one line, tags dropped.
#[tokio::test]
async fn an_html_error_page_is_one_line() {
    let page = "<html>\n<head><title>502 Bad Gateway</title></head>\n<body>\n<center><h1>502 Bad Gateway</h1></center>\n<hr><center>nginx</center>\n</body>\n</html>\n";
    let server = serve(vec![Reply::json(502, page)]).await;
    let error = hi(&server, 0).await.unwrap_err();
    let shown = error.to_string();
    assert!(!shown.contains('\n') && !shown.contains('<'), "{shown}");
    assert!(
        shown.contains("HTTP 502 Bad Gateway: 502 Bad Gateway 502 Bad Gateway nginx"),
        "{shown}"
    );
}

#[tokio::test]
async fn unauthorized_is_not_retried_and_never_shows_the_key() {
    let body = format!(
        r#"{{"type":"error","error":{{"type":"authentication_error","message":"invalid x-api-key {KEY}"}}}}"#
    );
    let server = serve(vec![
        Reply::json(401, body),
        Reply::sse(fixture("anthropic/basic.sse")),
    ])
    .await;
    let client = client(&server, 3);
    let error = client
        .complete_streaming(Request::new("m", 64).user("Hi"))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "authentication");
    assert_eq!(error.status(), Some(401));
    assert_eq!(server.requests().len(), 1);
    assert_key_hidden(KEY, &error, &client);
    assert!(error.message().contains("[redacted]"));
}

#[tokio::test]
async fn a_non_json_error_body_keeps_the_status() {
    let server = serve(vec![Reply::new(
        502,
        "text/html",
        "<html><body>502 Bad Gateway</body></html>",
    )])
    .await;
    let error = hi(&server, 0).await.unwrap_err();
    assert_eq!(error.kind(), "server");
    assert_eq!(error.status(), Some(502));
    assert!(error.message().contains("502 Bad Gateway"));
}

#[tokio::test]
async fn context_length_is_its_own_kind() {
    let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 211000 tokens > 200000 maximum"}}"#;
    let server = serve(vec![Reply::json(400, body)]).await;
    let error = hi(&server, 2).await.unwrap_err();
    assert_eq!(error.kind(), "context_length");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_stream_cut_short_is_a_transport_error() {
    let body = fixture("anthropic/basic.sse");
    let server = serve(vec![
        Reply::sse(body.clone())
            .split_at(&[body.len() / 2])
            .cut_after(1),
    ])
    .await;
    let error = hi(&server, 0).await.unwrap_err();
    assert_eq!(error.kind(), "transport");
}

#[tokio::test]
async fn a_stalled_stream_hits_the_idle_timeout() {
    let body = fixture("anthropic/basic.sse");
    let server = serve(vec![Reply::sse(body).split_at(&[600]).stall_after(1)]).await;
    let mut options = HttpOptions::new(server.url(), Some(Secret::new(KEY)));
    options.retry = RetryPolicy::none();
    options.timeouts = Timeouts {
        idle: Duration::from_millis(200),
        ..Timeouts::default()
    };
    let client = AnthropicClient::with_options(options).unwrap();
    let error = client
        .complete_streaming(Request::new("m", 64).user("Hi"))
        .await
        .unwrap_err();
    assert_timed_out(&error, TimeoutPhase::Idle);
}

#[tokio::test]
async fn environment_configuration_reads_key_and_base_url() {
    let server = serve(vec![Reply::sse(fixture("anthropic/basic.sse"))]).await;
    let url = server.url();
    let client = AnthropicClient::from_lookup(|name| match name {
        "ANTHROPIC_API_KEY" => Some(KEY.to_owned()),
        "ANTHROPIC_BASE_URL" => Some(url.clone()),
        _ => None,
    })
    .unwrap();
    let reply = client
        .complete_streaming(Request::new("m", 64).user("Hi"))
        .await
        .unwrap();
    assert_eq!(reply.text(), "Hello there!");
    assert_eq!(server.requests()[0].header("x-api-key"), Some(KEY));
    let missing = AnthropicClient::from_lookup(|_| None).unwrap_err();
    assert_eq!(missing.kind(), "config");
}

#[tokio::test]
async fn non_streaming_thinking_and_tool_use_round_trip() {
    let server = serve(vec![
        Reply::json(200, fixture("anthropic/thinking_tool_use.json")),
        Reply::json(200, fixture("anthropic/thinking_followup.json")),
    ])
    .await;
    let client = client(&server, 0);
    let first = florence_with_thinking();
    let reply = client.complete(first.clone()).await.unwrap();
    let ContentBlock::Thinking { signature, .. } = &reply.content[0] else {
        panic!("expected a thinking block, got {:?}", reply.content[0]);
    };
    assert!(signature.starts_with("EvIDCkYICBgCKkB3OXkd"));
    let (id, name, input) = reply.tool_calls().next().unwrap();
    assert_eq!((id, name), ("toolu_018GcaTNHipGG9yeZ3srYF9d", "weather"));
    assert_eq!(input, &json!({"location": "Florence, Italy"}));
    assert_eq!(reply.stop_reason, StopReason::ToolUse);
    assert_eq!(
        (reply.usage.input_tokens, reply.usage.output_tokens),
        (423, 126)
    );

    let second = with_tool_result(first, &reply, id);
    let answer = client.complete(second).await.unwrap();
    assert!(
        answer
            .text()
            .starts_with("The current weather in Florence, Italy is 40°C (104°F).")
    );
    assert_eq!(answer.stop_reason, StopReason::EndTurn);

    let sent = server.requests()[1].json();
    assert!(sent.get("stream").is_none());
    assert_eq!(
        sent["messages"][1]["content"][0]["signature"].as_str(),
        Some(signature.as_str())
    );
}

#[tokio::test]
async fn a_slow_response_hits_the_request_timeout_and_is_retried() {
    let slow = || Reply::sse(fixture("anthropic/basic.sse")).delay(Duration::from_secs(5));
    let server = serve(vec![
        slow(),
        slow(),
        Reply::sse(fixture("anthropic/basic.sse")),
    ])
    .await;
    let client = |retries| {
        let mut options = HttpOptions::new(server.url(), Some(Secret::new(KEY)));
        options.retry = fast_retries(retries);
        options.timeouts = Timeouts {
            request: Duration::from_millis(150),
            ..Timeouts::default()
        };
        AnthropicClient::with_options(options).unwrap()
    };
    let error = client(0)
        .complete_streaming(Request::new("m", 64).user("Hi"))
        .await
        .unwrap_err();
    assert_timed_out(&error, TimeoutPhase::Request);
    assert!(error.is_retryable());
    let reply = client(1)
        .complete_streaming(Request::new("m", 64).user("Hi"))
        .await
        .unwrap();
    assert_eq!(reply.text(), "Hello there!");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn beta_flags_are_sent_as_one_header() {
    let server = serve(vec![Reply::sse(fixture("anthropic/basic.sse"))]).await;
    let client = client(&server, 0)
        .beta("prompt-caching-2024-07-31")
        .beta("interleaved-thinking-2025-05-14");
    client
        .complete_streaming(Request::new("m", 64).user("Hi"))
        .await
        .unwrap();
    assert_eq!(
        server.requests()[0].header("anthropic-beta"),
        Some("prompt-caching-2024-07-31,interleaved-thinking-2025-05-14")
    );
}
