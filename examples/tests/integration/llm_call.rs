//! The `llm_call` example against a local server replaying recorded provider traffic.

use mux_examples::llm_call::run;
use mux_llm::testing::{ReplayServer, Reply};
use serde_json::json;

fn fixture(path: &str) -> Vec<u8> {
    let path = format!(
        "{}/../crates/mux-llm/tests/fixtures/{path}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|err| panic!("reading {path}: {err}"))
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

fn env(name: &str) -> Option<String> {
    name.ends_with("_API_KEY").then(|| "dummy-key".to_owned())
}

#[tokio::test]
async fn anthropic_stream_prints_the_assembled_response() {
    let server = ReplayServer::start(vec![Reply::sse(fixture("anthropic/tool_use.sse"))])
        .await
        .unwrap();
    let (value, code) = run(
        &args(&[
            "--provider",
            "anthropic",
            "--base-url",
            &server.url(),
            "--stream",
            "Weather in Paris?",
        ]),
        env,
    )
    .await;
    assert_eq!(code, 0, "{value}");
    assert_eq!(
        value,
        json!({
            "content": [
                {"type": "text", "text": "I'll check the current weather in Paris for you."},
                {"type": "tool_use", "id": "toolu_01NRLabsLyVHZPKxbKvkfSMn", "name": "get_weather", "input": {"location": "Paris"}}
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 377, "output_tokens": 65, "cache_read_tokens": 0, "cache_write_tokens": 0}
        })
    );
}

#[tokio::test]
async fn openai_with_a_tools_file_sends_the_tools() {
    let dir = std::env::temp_dir().join(format!("mux-llm-call-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let tools = dir.join("tools.json");
    std::fs::write(
        &tools,
        json!([{"name": "get_stock_price", "description": "Latest price", "inputSchema": {"type": "object", "properties": {"ticker": {"type": "string"}}}}]).to_string(),
    )
    .unwrap();
    let server = ReplayServer::start(vec![Reply::sse(fixture("openai/parallel_tools.sse"))])
        .await
        .unwrap();
    let (value, code) = run(
        &args(&[
            "--provider",
            "openai",
            "--base-url",
            &server.url(),
            "--stream",
            "--tools",
            tools.to_str().unwrap(),
            "--model",
            "gpt-4o",
            "AAPL?",
        ]),
        env,
    )
    .await;
    assert_eq!(code, 0, "{value}");
    assert_eq!(value["stop_reason"], "tool_use");
    assert_eq!(value["content"].as_array().unwrap().len(), 2);
    assert_eq!(value["usage"]["input_tokens"], 149);
    let sent = server.requests()[0].json();
    assert_eq!(sent["tools"][0]["function"]["name"], "get_stock_price");
    assert_eq!(sent["model"], "gpt-4o");
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn a_rate_limit_prints_the_error_object_and_exits_1() {
    let body = r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#;
    let server = ReplayServer::start(vec![Reply::json(429, body).header("retry-after", "3")])
        .await
        .unwrap();
    let (value, code) = run(
        &args(&[
            "--provider",
            "anthropic",
            "--base-url",
            &server.url(),
            "--max-retries",
            "0",
            "hi",
        ]),
        env,
    )
    .await;
    assert_eq!(code, 1);
    // The message names the URL that failed (without its query).
    let message = value["error"]["message"].as_str().unwrap().to_owned();
    assert!(
        message.starts_with("slow down (POST http://127.0.0.1:"),
        "{message}"
    );
    assert!(message.ends_with("/v1/messages)"), "{message}");
    assert_eq!(
        value,
        json!({"error": {"kind": "rate_limited", "status": 429, "message": message, "retry_after_ms": 3000}})
    );
}

#[tokio::test]
async fn a_missing_key_is_a_config_error() {
    let (value, code) = run(&args(&["--provider", "gemini", "hi"]), |_| None).await;
    assert_eq!(code, 1);
    assert_eq!(value["error"]["kind"], "config");
}

#[tokio::test]
async fn bad_arguments_print_usage() {
    let (value, code) = run(&args(&["--provider", "nope", "hi"]), env).await;
    assert_eq!(code, 2);
    assert!(
        value["error"]["message"]
            .as_str()
            .unwrap()
            .contains("usage: llm_call")
    );
}
