//! Cassettes: real provider clients recorded through `CassetteServer` against a local server
//! acting as the provider, then replayed with that server stopped; a changed request gets a
//! diff; no key reaches the file.
#![cfg(all(
    feature = "anthropic",
    feature = "openai",
    feature = "gemini",
    feature = "testing"
))]

use std::path::Path;

use crate::common::{fixture, serve, streamed};
use mux_llm::anthropic::AnthropicClient;
use mux_llm::gemini::GeminiClient;
use mux_llm::http::HttpOptions;
use mux_llm::openai::{OpenAiClient, Preset};
use mux_llm::testing::{Cassette, CassetteError, CassetteMode, CassetteServer, Reply};
use mux_llm::{LlmClient, Request, Response, Secret};

const ANTHROPIC_KEY: &str = "sk-ant-api03-cassette-secret-0123456789";
const OPENAI_KEY: &str = "sk-proj-cassette-secret-abcdefghij";
const GEMINI_KEY: &str = "AIzaSyCassetteSecret_0123456789abc";

fn anthropic(url: &str) -> AnthropicClient {
    let mut options = HttpOptions::new(url, Some(Secret::new(ANTHROPIC_KEY)));
    options.retry.max_retries = 0;
    AnthropicClient::with_options(options).unwrap()
}

fn greeting() -> Request {
    Request::new("claude-3-opus-20240229", 1024).user("Hello")
}

fn follow_up() -> Request {
    Request::new("claude-sonnet-4-20250514", 1024)
        .system("Be brief.")
        .user("What's the weather in San Francisco?")
}

/// Records two exchanges through a cassette at `path`; returns the replies.
async fn record(path: &Path) -> (Response, Response) {
    let provider = serve(vec![
        Reply::sse(fixture("anthropic/basic.sse")).chunked(64),
        Reply::json(200, fixture("anthropic/thinking_tool_use.json")),
    ])
    .await;
    let cassette = CassetteServer::record(path, &provider.url()).await.unwrap();
    assert_eq!(cassette.mode(), CassetteMode::Record);
    let client = anthropic(&cassette.url());
    let first = streamed(&client, greeting()).await.unwrap();
    let second = client.complete(follow_up()).await.unwrap();
    assert_eq!(cassette.remaining(), 2);
    assert!(cassette.errors().is_empty(), "{:?}", cassette.errors());
    assert_eq!(provider.requests().len(), 2);
    (first, second)
}

#[tokio::test]
async fn recorded_traffic_replays_with_the_provider_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cassettes/anthropic.json");
    let (first, second) = record(&path).await;
    // The provider server is gone: the replay below can only come from the file.

    let cassette = CassetteServer::replay(&path).await.unwrap();
    let client = anthropic(&cassette.url());
    assert_eq!(streamed(&client, greeting()).await.unwrap(), first);
    assert_eq!(client.complete(follow_up()).await.unwrap(), second);
    assert_eq!(cassette.remaining(), 0);
    assert!(cassette.mismatches().is_empty());

    // The file holds the request as normalised JSON and the stream as it came.
    let file = Cassette::load(&path).unwrap();
    assert_eq!(file.interactions.len(), 2);
    let request = &file.interactions[0].request;
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("POST", "/v1/messages")
    );
    assert_eq!(request.body["messages"][0]["content"][0]["text"], "Hello");
    let response = &file.interactions[0].response;
    assert_eq!(response.status, 200);
    assert_eq!(response.body.as_bytes(), fixture("anthropic/basic.sse"));
    assert!(
        response
            .headers
            .iter()
            .any(|(name, value)| name == "content-type" && value.starts_with("text/event-stream"))
    );
}

#[tokio::test]
async fn a_changed_request_gets_a_diff_naming_what_changed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("anthropic.json");
    record(&path).await;

    let cassette = CassetteServer::replay(&path).await.unwrap();
    let client = anthropic(&cassette.url());
    let changed = Request::new("claude-3-opus-20240229", 1024).user("Hello there");
    let err = streamed(&client, changed).await.unwrap_err();
    assert_eq!(err.kind(), "invalid_request");
    let message = err.message();
    assert!(message.contains("matches no recorded request"), "{message}");
    assert!(
        message
            .contains("-           \"text\": \"Hello\",\n+           \"text\": \"Hello there\","),
        "{message}"
    );
    assert_eq!(cassette.mismatches().len(), 1);
    // Unchanged requests still replay, in any order.
    assert!(client.complete(follow_up()).await.is_ok());
    assert!(streamed(&client, greeting()).await.is_ok());
    // And one more than was recorded says so.
    let err = streamed(&client, greeting()).await.unwrap_err();
    assert!(
        err.message()
            .contains("after all 2 recorded requests were used (it repeats recorded request 1)"),
        "{err}"
    );
}

#[tokio::test]
async fn no_key_reaches_the_cassette_even_when_the_provider_echoes_it() {
    let echo = |key: &str| {
        format!(
            r#"{{"error":{{"message":"Incorrect API key provided: {key}.","type":"invalid_request_error","code":"invalid_api_key"}}}}"#
        )
    };
    let provider = serve(vec![
        Reply::json(401, echo(ANTHROPIC_KEY)),
        Reply::json(401, echo(OPENAI_KEY)),
        Reply::json(400, echo(GEMINI_KEY)),
        Reply::json(200, format!(r#"{{"echo":"{GEMINI_KEY}"}}"#)),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("secrets.json");
    let cassette = CassetteServer::record(&path, &provider.url())
        .await
        .unwrap();
    let url = cassette.url();

    // x-api-key, Authorization: Bearer, x-goog-api-key, and a `?key=` query parameter.
    assert!(anthropic(&url).complete(greeting()).await.is_err());
    let openai = OpenAiClient::with_options(
        Preset::OpenAi,
        HttpOptions::new(&url, Some(Secret::new(OPENAI_KEY))),
    )
    .unwrap();
    assert!(
        openai
            .complete(Request::new("gpt-4o", 10).user("hi"))
            .await
            .is_err()
    );
    let gemini =
        GeminiClient::with_options(HttpOptions::new(&url, Some(Secret::new(GEMINI_KEY)))).unwrap();
    assert!(
        gemini
            .complete(Request::new("gemini-2.5-flash", 10).user("hi"))
            .await
            .is_err()
    );
    let raw = reqwest::Client::new()
        .post(format!("{url}/v1beta/models?alt=sse&key={GEMINI_KEY}"))
        .body(format!(r#"{{"note":"{GEMINI_KEY}"}}"#))
        .send()
        .await
        .unwrap();
    // The live caller gets the provider's real body; only the file is scrubbed.
    assert!(raw.text().await.unwrap().contains(GEMINI_KEY));

    assert_eq!(
        provider.requests().len(),
        4,
        "every request reached the provider"
    );
    assert_eq!(
        provider.requests()[0].header("x-api-key"),
        Some(ANTHROPIC_KEY),
        "the key is forwarded to the provider"
    );
    let bytes = std::fs::read(&path).unwrap();
    let text = String::from_utf8(bytes).unwrap();
    for key in [
        ANTHROPIC_KEY,
        OPENAI_KEY,
        GEMINI_KEY,
        "cassette-secret",
        "CassetteSecret",
    ] {
        assert!(!text.contains(key), "{key} in the cassette:\n{text}");
    }
    assert!(text.contains("[redacted]"));
    assert!(text.contains("/v1beta/models?alt=sse\""), "{text}");
    assert!(!text.to_ascii_lowercase().contains("authorization"));
    assert!(!text.contains("x-goog-api-key"));
}

#[tokio::test]
async fn a_missing_cassette_says_how_to_record_it() {
    let dir = tempfile::tempdir().unwrap();
    let err = CassetteServer::replay(dir.path().join("none.json"))
        .await
        .unwrap_err();
    assert!(matches!(err, CassetteError::Missing { .. }));
    assert!(err.to_string().contains("MUX_RECORD=1"), "{err}");

    std::fs::write(
        dir.path().join("bad.json"),
        "{\"version\": 7, \"interactions\": []}",
    )
    .unwrap();
    let err = CassetteServer::replay(dir.path().join("bad.json"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("version 7"), "{err}");

    let mode = |value: Option<&str>| {
        CassetteMode::from_lookup(|name| {
            (name == "MUX_RECORD")
                .then(|| value.map(str::to_owned))
                .flatten()
        })
    };
    assert_eq!(mode(Some("1")), CassetteMode::Record);
    assert_eq!(mode(Some("0")), CassetteMode::Replay);
    assert_eq!(mode(None), CassetteMode::Replay);
}
