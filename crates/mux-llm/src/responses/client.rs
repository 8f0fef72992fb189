//! The Responses API client.

use crate::client::{BoxFuture, EventStream, LlmClient};
use crate::error::LlmError;
use crate::http::{
    HttpOptions, KeyRule, Timeouts, Transport, bearer_headers, env_constructors, http_settings,
    request_span, traced,
};
use crate::request::Request;
use crate::response::Response;
use crate::retry::RetryPolicy;
use mux_tool::Secret;

use super::stream::ResponsesDecoder;
use super::wire::{ResponsesOptions, request_body, response_from_json};

/// OpenAI's API root (requests go to `{base}/responses`).
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// The provider name in errors and traces.
const PROVIDER: &str = "openai-responses";

/// A Responses API client (`POST {base}/responses`).
///
/// ```no_run
/// use mux_llm::{LlmClient, Request};
/// use mux_llm::responses::ResponsesClient;
///
/// # async fn run() -> Result<(), mux_llm::LlmError> {
/// let client = ResponsesClient::from_env()?.encrypted_reasoning(true); // OPENAI_API_KEY
/// let reply = client.complete(Request::new("gpt-5-mini", 1024).user("Hi")).await?;
/// println!("{}", reply.text());
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct ResponsesClient {
    transport: Transport,
    options: ResponsesOptions,
}

impl ResponsesClient {
    env_constructors!(
        PROVIDER,
        "OPENAI_API_KEY",
        KeyRule::UnlessBaseUrl,
        "OPENAI_BASE_URL",
        DEFAULT_BASE_URL,
        "A client from `OPENAI_API_KEY` and, when set, `OPENAI_BASE_URL`. The key may be absent \
         when the base URL points to a local server."
    );

    /// A client with explicit HTTP options. OpenAI's own URL needs a key.
    pub fn with_options(options: HttpOptions) -> Result<Self, LlmError> {
        if options.api_key.is_none() && options.base_url == DEFAULT_BASE_URL {
            return Err(LlmError::new(
                PROVIDER,
                crate::LlmFailure::Config {
                    message: "an API key is required".into(),
                },
            ));
        }
        Ok(Self {
            transport: Transport::new(PROVIDER, options)?,
            options: ResponsesOptions::default(),
        })
    }

    fn rebuild(self, change: impl FnOnce(&mut HttpOptions)) -> Result<Self, LlmError> {
        let mut options = self.transport.options.clone();
        change(&mut options);
        Ok(Self {
            transport: Transport::new(PROVIDER, options)?,
            ..self
        })
    }

    http_settings!();

    /// Stateless reasoning: sends `store: false` and asks for reasoning items' encrypted
    /// content, which comes back in the thinking blocks' signatures and goes out again with
    /// the next turn.
    pub fn encrypted_reasoning(mut self, on: bool) -> Self {
        self.options.encrypted_reasoning = on;
        self
    }

    /// Asks for a reasoning summary (`auto`, `concise` or `detailed`) when a request asks for
    /// thinking; it streams as thinking text.
    pub fn reasoning_summary(mut self, summary: impl Into<String>) -> Self {
        self.options.reasoning_summary = Some(summary.into());
        self
    }

    fn headers(&self) -> Result<reqwest::header::HeaderMap, LlmError> {
        bearer_headers(PROVIDER, self.transport.options.api_key.as_ref())
    }
}

impl LlmClient for ResponsesClient {
    fn provider(&self) -> &str {
        PROVIDER
    }

    fn stream(&self, request: Request) -> BoxFuture<'_, Result<EventStream, LlmError>> {
        traced(request_span(&request, true), async move {
            let headers = self.headers()?;
            let body = request_body(&request, &self.options, true)?;
            self.transport
                .post_stream(
                    "/responses",
                    headers,
                    &body,
                    || ResponsesDecoder::new(PROVIDER),
                    request.on_retry.as_ref(),
                )
                .await
        })
    }

    fn complete(&self, request: Request) -> BoxFuture<'_, Result<Response, LlmError>> {
        traced(request_span(&request, false), async move {
            let headers = self.headers()?;
            let body = request_body(&request, &self.options, false)?;
            let value = self
                .transport
                .post_json("/responses", headers, &body, request.on_retry.as_ref())
                .await?;
            response_from_json(PROVIDER, &value)
        })
    }
}
