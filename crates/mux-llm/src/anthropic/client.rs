//! The Anthropic client.

use crate::client::{BoxFuture, EventStream, LlmClient};
use crate::error::LlmError;
use crate::http::{
    HttpOptions, KeyRule, Timeouts, Transport, env_constructors, headers, http_settings,
    request_span, traced,
};
use crate::request::Request;
use crate::response::Response;
use crate::retry::RetryPolicy;
use mux_tool::Secret;

use super::stream::AnthropicDecoder;
use super::wire::{request_body, response_from_json};

/// The public API root.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The `anthropic-version` header sent by default.
pub const DEFAULT_VERSION: &str = "2023-06-01";

/// A client of the Anthropic Messages API (`POST {base}/v1/messages`).
///
/// ```no_run
/// use mux_llm::{LlmClient, Request};
/// use mux_llm::anthropic::AnthropicClient;
///
/// # async fn run() -> Result<(), mux_llm::LlmError> {
/// let client = AnthropicClient::from_env()?; // ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL
/// let reply = client.complete(Request::new("claude-sonnet-4-5", 1024).user("Hi")).await?;
/// println!("{}", reply.text());
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct AnthropicClient {
    transport: Transport,
    version: String,
    betas: Vec<String>,
}

impl AnthropicClient {
    env_constructors!(
        "anthropic",
        "ANTHROPIC_API_KEY",
        KeyRule::Required,
        "ANTHROPIC_BASE_URL",
        DEFAULT_BASE_URL,
        "A client from `ANTHROPIC_API_KEY` and, when set, `ANTHROPIC_BASE_URL`."
    );

    /// A client with explicit HTTP options.
    pub fn with_options(options: HttpOptions) -> Result<Self, LlmError> {
        Ok(Self {
            transport: Transport::new("anthropic", options)?,
            version: DEFAULT_VERSION.to_owned(),
            betas: Vec::new(),
        })
    }

    fn rebuild(self, change: impl FnOnce(&mut HttpOptions)) -> Result<Self, LlmError> {
        let mut options = self.transport.options.clone();
        change(&mut options);
        Ok(Self {
            transport: Transport::new("anthropic", options)?,
            ..self
        })
    }

    http_settings!();

    /// Adds an `anthropic-beta` feature flag.
    pub fn beta(mut self, flag: impl Into<String>) -> Self {
        self.betas.push(flag.into());
        self
    }

    /// Sets the `anthropic-version` header.
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    fn headers(&self) -> Result<reqwest::header::HeaderMap, LlmError> {
        let key = self.transport.api_key();
        let betas = self.betas.join(",");
        let mut pairs = vec![
            ("x-api-key", key),
            ("anthropic-version", self.version.as_str()),
            ("accept", "application/json"),
        ];
        if !betas.is_empty() {
            pairs.push(("anthropic-beta", betas.as_str()));
        }
        headers("anthropic", &pairs)
    }
}

impl LlmClient for AnthropicClient {
    fn provider(&self) -> &str {
        "anthropic"
    }

    fn stream(&self, request: Request) -> BoxFuture<'_, Result<EventStream, LlmError>> {
        traced(request_span(&request, true), async move {
            let headers = self.headers()?;
            let body = request_body(&request, true);
            let stream = self
                .transport
                .post_stream(
                    "/v1/messages",
                    headers,
                    &body,
                    AnthropicDecoder::new,
                    request.on_retry.as_ref(),
                )
                .await?;
            Ok(match request.output {
                Some(output) => super::output::stream_into_text(output, stream),
                None => stream,
            })
        })
    }

    fn complete(&self, request: Request) -> BoxFuture<'_, Result<Response, LlmError>> {
        traced(request_span(&request, false), async move {
            let headers = self.headers()?;
            let body = request_body(&request, false);
            let value = self
                .transport
                .post_json("/v1/messages", headers, &body, request.on_retry.as_ref())
                .await?;
            if value.get("type").and_then(|t| t.as_str()) == Some("error") {
                let (kind, message) = crate::http::error_body(&value.to_string());
                return Err(LlmError::in_stream(
                    "anthropic",
                    kind.as_deref().unwrap_or("api_error"),
                    message.unwrap_or_default(),
                ));
            }
            let mut response = response_from_json(&value)?;
            if let Some(output) = &request.output {
                response = super::output::into_text(output, response);
            }
            tracing::info!(
                gen_ai.usage.input_tokens = response.usage.input_tokens,
                gen_ai.usage.output_tokens = response.usage.output_tokens,
                "llm response"
            );
            Ok(response)
        })
    }
}
