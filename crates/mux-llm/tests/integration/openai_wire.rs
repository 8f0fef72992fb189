//! The Chat Completions provider against a local server replaying recorded OpenAI, vLLM and
//! Ollama traffic.
#![cfg(all(feature = "openai", feature = "testing"))]

use crate::common::{assert_key_hidden, fast_retries, fixture, serve, streamed};
use mux_llm::http::HttpOptions;
use mux_llm::openai::{OpenAiClient, Preset};
use mux_llm::testing::{ReplayServer, Reply};
use mux_llm::{LlmClient, Request, Secret, StopReason};
use serde_json::json;

const KEY: &str = "sk-proj-test-abcdef0123456789";

fn client(server: &ReplayServer, preset: Preset, key: Option<&str>, retries: u32) -> OpenAiClient {
    let mut options = HttpOptions::new(server.url(), key.map(Secret::new));
    options.retry = fast_retries(retries);
    OpenAiClient::with_options(preset, options).unwrap()
}

#[tokio::test]
async fn parallel_tool_calls_and_the_usage_chunk() {
    let server = serve(vec![
        Reply::sse(fixture("openai/parallel_tools.sse")).chunked(5),
    ])
    .await;
    let client = client(&server, Preset::OpenAi, Some(KEY), 0);
    let reply = streamed(
        &client,
        Request::new("gpt-4o-2024-08-06", 256).user("Weather in Edinburgh? Price of AAPL?"),
    )
    .await
    .unwrap();
    assert_eq!(reply.stop_reason, StopReason::ToolUse);
    let calls: Vec<_> = reply
        .tool_calls()
        .map(|(id, name, input)| (id.to_owned(), name.to_owned(), input.clone()))
        .collect();
    assert_eq!(
        calls,
        vec![
            (
                "call_lQnnsesjFMWMQ5IeWPHzR4th".into(),
                "GetWeatherArgs".into(),
                json!({"city": "Edinburgh", "country": "UK", "units": "c"})
            ),
            (
                "call_2xjOUgaCdiwAcl9ZBL9LyMUU".into(),
                "get_stock_price".into(),
                json!({"ticker": "AAPL", "exchange": "NASDAQ"})
            ),
        ]
    );
    assert_eq!(reply.usage.input_tokens, 149);
    assert_eq!(reply.usage.output_tokens, 60);

    let request = &server.requests()[0];
    assert_eq!(request.path, "/chat/completions");
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let body = request.json();
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["max_completion_tokens"], json!(256));
}

#[tokio::test]
async fn length_finish_is_max_tokens() {
    let server = serve(vec![Reply::sse(fixture("openai/max_tokens.sse"))]).await;
    let reply = streamed(
        &client(&server, Preset::OpenAi, Some(KEY), 0),
        Request::new("gpt-4o", 1).user("x"),
    )
    .await
    .unwrap();
    assert_eq!(reply.stop_reason, StopReason::MaxTokens);
    assert_eq!(reply.text(), "{\"");
    assert_eq!(reply.usage.output_tokens, 1);
}

#[tokio::test]
async fn refusal_deltas_become_text_and_a_refusal_stop() {
    let server = serve(vec![Reply::sse(fixture("openai/refusal.sse")).chunked(3)]).await;
    let reply = streamed(
        &client(&server, Preset::OpenAi, Some(KEY), 0),
        Request::new("gpt-4o", 64).user("x"),
    )
    .await
    .unwrap();
    assert_eq!(reply.stop_reason, StopReason::Refusal);
    assert_eq!(
        reply.text(),
        "I'm sorry, but I can't assist with that request."
    );
}

#[tokio::test]
async fn vllm_tool_call_stream_without_usage() {
    let server = serve(vec![
        Reply::sse(fixture("openai/vllm_tool_call.sse")).chunked(11),
    ])
    .await;
    let reply = streamed(
        &client(&server, Preset::Vllm, None, 0),
        Request::new("m", 64).user("ls"),
    )
    .await
    .unwrap();
    let (id, name, input) = reply.tool_calls().next().unwrap();
    assert_eq!(id, "chatcmpl-tool-ca99dda515524c6abe47d1ea22813507");
    assert_eq!(name, "run_command");
    assert_eq!(input, &json!({"command": "ls"}));
    assert_eq!(reply.stop_reason, StopReason::ToolUse);
    assert_eq!(reply.model, None, "vLLM sent an empty model name");
    let body = server.requests()[0].json();
    assert_eq!(body["max_tokens"], json!(64));
    assert!(server.requests()[0].header("authorization").is_none());
}

#[tokio::test]
async fn ollama_whole_tool_call_in_one_chunk_and_no_done() {
    let server = serve(vec![Reply::sse(fixture("openai/ollama_tool_call.sse"))]).await;
    let reply = streamed(
        &client(&server, Preset::Ollama, None, 0),
        Request::new("qwen2.5-coder", 64).user("ls -a"),
    )
    .await
    .unwrap();
    let (id, name, input) = reply.tool_calls().next().unwrap();
    assert_eq!((id, name), ("call_lbcjwr0u", "run_command"));
    assert_eq!(input, &json!({"command": "ls -a"}));
    assert_eq!(reply.stop_reason, StopReason::ToolUse);
}

#[tokio::test]
async fn unauthorized_is_not_retried_and_the_key_is_redacted() {
    let body = format!(
        r#"{{"error":{{"message":"Incorrect API key provided: {KEY}.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}}}"#
    );
    let server = serve(vec![
        Reply::json(401, body),
        Reply::sse(fixture("openai/max_tokens.sse")),
    ])
    .await;
    let client = client(&server, Preset::OpenAi, Some(KEY), 3);
    let error = streamed(&client, Request::new("gpt-4o", 8).user("x"))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "authentication");
    assert_eq!(server.requests().len(), 1);
    assert_key_hidden(KEY, &error, &client);
}

#[tokio::test]
async fn server_errors_are_retried_then_succeed() {
    let server = serve(vec![
        Reply::json(
            500,
            r#"{"error":{"message":"The server had an error","type":"server_error"}}"#,
        ),
        Reply::json(
            429,
            r#"{"error":{"message":"Rate limit reached","type":"requests"}}"#,
        )
        .header("x-ratelimit-reset-requests", "20ms"),
        Reply::sse(fixture("openai/max_tokens.sse")),
    ])
    .await;
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = std::sync::Arc::clone(&seen);
    let on_retry = mux_llm::OnRetry::new(move |notice| {
        record
            .lock()
            .unwrap()
            .push((notice.attempt, notice.error.kind().to_owned()));
    });
    let reply = streamed(
        &client(&server, Preset::OpenAi, Some(KEY), 2),
        Request::new("gpt-4o", 1).user("x").on_retry(on_retry),
    )
    .await
    .unwrap();
    assert_eq!(reply.stop_reason, StopReason::MaxTokens);
    assert_eq!(server.requests().len(), 3);
    // Each retry was told, with the attempt that failed and why.
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].0, 1);
    assert_eq!(seen[1].0, 2);
    assert_ne!(
        seen[0].1, seen[1].1,
        "a server error, then a rate limit: {seen:?}"
    );
}

#[tokio::test]
async fn environment_configuration_allows_a_keyless_local_server() {
    let server = serve(vec![Reply::sse(fixture("openai/max_tokens.sse"))]).await;
    let url = server.url();
    let client =
        OpenAiClient::from_lookup(|name| (name == "OPENAI_BASE_URL").then(|| url.clone())).unwrap();
    let reply = streamed(&client, Request::new("gpt-4o", 1).user("x"))
        .await
        .unwrap();
    assert_eq!(reply.stop_reason, StopReason::MaxTokens);
    assert_eq!(
        OpenAiClient::from_lookup(|_| None).unwrap_err().kind(),
        "config"
    );
}

#[tokio::test]
async fn non_streaming_tool_call() {
    let server = serve(vec![Reply::json(200, fixture("openai/tool_call.json"))]).await;
    let client = client(&server, Preset::OpenAi, Some(KEY), 0);
    let reply = client
        .complete(
            Request::new("gpt-4o", 4000)
                .system("You are a helpful assistant")
                .user("What's the weather in Florence,Italy?"),
        )
        .await
        .unwrap();
    let (id, name, input) = reply.tool_calls().next().unwrap();
    assert_eq!((id, name), ("call_PzVhbfSC5fkOlTTPrPLKF3og", "weather"));
    assert_eq!(input, &json!({"location": "Florence, Italy"}));
    assert_eq!(reply.stop_reason, StopReason::ToolUse);
    assert_eq!(
        (reply.usage.input_tokens, reply.usage.output_tokens),
        (61, 16)
    );
    assert!(server.requests()[0].json().get("stream").is_none());
}

#[test]
fn an_error_chunk_in_the_stream_is_a_typed_error() {
    use mux_llm::decode::decode_chunks;
    use mux_llm::openai::OpenAiDecoder;
    let body = b"data: {\"error\":{\"message\":\"The server had an error while processing your request.\",\"type\":\"server_error\"}}\n\n";
    let error = decode_chunks(OpenAiDecoder::new("openai"), [&body[..]]).unwrap_err();
    assert_eq!(error.kind(), "server");
    assert!(error.is_retryable());
}

#[tokio::test]
async fn a_json_error_with_status_200_on_a_stream_is_typed() {
    let body = r#"{"error":{"message":"model 'llama9' not found, try pulling it first","type":"api_error"}}"#;
    let server = serve(vec![Reply::json(200, body)]).await;
    let error = streamed(
        &client(&server, Preset::Ollama, None, 0),
        Request::new("llama9", 8).user("x"),
    )
    .await
    .unwrap_err();
    assert_eq!(error.kind(), "server");
    assert!(error.message().contains("not found"));
}

/// At a URL other than its preset's, a client's errors name the server:
/// `openai-compatible (host:port)`.
#[tokio::test]
async fn a_custom_base_url_is_labelled_openai_compatible() {
    let server = serve(vec![Reply::json(
        400,
        r#"{"error":{"message":"bad model","type":"invalid_request_error"}}"#,
    )])
    .await;
    let client =
        OpenAiClient::with_options(Preset::OpenAi, HttpOptions::new(server.url(), None)).unwrap();
    let error = client
        .complete(Request::new("m", 16).user("Hi"))
        .await
        .unwrap_err();
    let shown = error.to_string();
    assert!(
        shown.starts_with("openai-compatible (127.0.0.1:"),
        "{shown}"
    );
    assert_eq!(
        client.provider().split(' ').next(),
        Some("openai-compatible")
    );
}
