//! Helpers the integration test modules share.
// Each module uses some of them; without a provider feature, none is used.
#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use mux_llm::{LlmClient, LlmError, Request, Response, RetryPolicy};

/// A recorded response under `tests/fixtures/`, such as `anthropic/basic.sse`.
pub fn fixture(path: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|err| panic!("reading {path}: {err}"))
}

/// Retries with 1–5 ms backoff, so retry tests take no time.
pub fn fast_retries(max_retries: u32) -> RetryPolicy {
    RetryPolicy {
        max_retries,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(5),
        ..RetryPolicy::default()
    }
}

/// Streams `request` through `stream()` and accumulates the events, so the streaming path is
/// the one exercised.
pub async fn streamed(client: &impl LlmClient, request: Request) -> Result<Response, LlmError> {
    let stream = client.stream(request).await?;
    mux_llm::accumulate(client.provider(), stream).await
}

/// A local server replaying `replies` in order.
#[cfg(feature = "testing")]
pub async fn serve(replies: Vec<mux_llm::testing::Reply>) -> mux_llm::testing::ReplayServer {
    mux_llm::testing::ReplayServer::start(replies)
        .await
        .expect("the replay server starts")
}

/// Asserts that `key` shows in neither the error (displayed or debugged) nor the client.
pub fn assert_key_hidden(key: &str, error: &LlmError, client: &impl std::fmt::Debug) {
    for text in [
        format!("{error}"),
        format!("{error:?}"),
        format!("{client:?}"),
    ] {
        assert!(!text.contains(key), "the key leaked into {text}");
    }
}

/// Asserts that `error` is a timeout in `phase`.
pub fn assert_timed_out(error: &LlmError, phase: mux_llm::TimeoutPhase) {
    assert!(
        matches!(&error.failure, mux_llm::LlmFailure::Timeout { phase: p, .. } if *p == phase),
        "expected a {phase:?} timeout, got {error:?}"
    );
}
