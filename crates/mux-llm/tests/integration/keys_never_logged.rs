//! API keys never appear in what the crate logs: every span and event field, at every level,
//! is captured through a recording subscriber while requests fail, retry and succeed.
#![cfg(all(feature = "anthropic", feature = "openai", feature = "testing"))]

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{fixture, serve};
use mux_llm::anthropic::AnthropicClient;
use mux_llm::http::HttpOptions;
use mux_llm::openai::{OpenAiClient, Preset};
use mux_llm::testing::{ReplayServer, Reply};
use mux_llm::{LlmClient, Request, RetryPolicy, Secret};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

const KEY: &str = "sk-never-log-this-0123456789";

/// Writes every field of every span and event into one string.
#[derive(Clone, Default)]
struct Recorder {
    text: Arc<Mutex<String>>,
    next_id: Arc<AtomicU64>,
}

struct Fields<'a>(&'a mut String);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={:?}", field.name(), value);
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut text = self.text.lock().unwrap();
        let _ = write!(text, "\nspan {}", span.metadata().name());
        span.record(&mut Fields(&mut text));
        Id::from_u64(self.next_id.fetch_add(1, Ordering::Relaxed) + 1)
    }
    fn record(&self, _: &Id, values: &Record<'_>) {
        values.record(&mut Fields(&mut self.text.lock().unwrap()));
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut text = self.text.lock().unwrap();
        let _ = write!(text, "\nevent {}", event.metadata().level());
        event.record(&mut Fields(&mut text));
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

fn options(server: &ReplayServer) -> HttpOptions {
    let mut options = HttpOptions::new(server.url(), Some(Secret::new(KEY)));
    options.retry = RetryPolicy {
        max_retries: 2,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(2),
        ..RetryPolicy::default()
    };
    options
}

#[tokio::test(flavor = "current_thread")]
async fn retries_failures_and_successes_log_no_key() {
    let recorder = Recorder::default();
    let _guard = tracing::subscriber::set_default(recorder.clone());
    let echo =
        format!(r#"{{"error":{{"type":"rate_limit_error","message":"key {KEY} is limited"}}}}"#);
    let server = serve(vec![
        Reply::json(429, echo.clone()).header("retry-after-ms", "1"),
        Reply::sse(fixture("anthropic/basic.sse")),
        Reply::json(500, echo.clone()),
        Reply::sse(fixture("openai/max_tokens.sse")),
        Reply::json(401, echo),
    ])
    .await;
    let anthropic = AnthropicClient::with_options(options(&server)).unwrap();
    let stream = anthropic
        .stream(Request::new("m", 8).user("hi"))
        .await
        .unwrap();
    mux_llm::accumulate("anthropic", stream).await.unwrap();
    let openai = OpenAiClient::with_options(Preset::OpenAi, options(&server)).unwrap();
    let stream = openai
        .stream(Request::new("m", 8).user("hi"))
        .await
        .unwrap();
    mux_llm::accumulate("openai", stream).await.unwrap();
    let error = anthropic
        .stream(Request::new("m", 8).user("hi"))
        .await
        .err()
        .unwrap();
    tracing::error!(error = %error, debug = ?error, client = ?anthropic, "as an application would log it");

    let text = recorder.text.lock().unwrap().clone();
    assert!(
        text.contains("retrying LLM request"),
        "the retries were not logged:\n{text}"
    );
    assert!(
        text.contains("llm.request"),
        "the request spans were not logged:\n{text}"
    );
    assert!(!text.contains(KEY), "the key leaked into the logs:\n{text}");
}
