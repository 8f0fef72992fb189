//! The Gemini client.

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

use super::stream::GeminiDecoder;
use super::stream::response_from_json;
use super::wire::request_body;

/// The public API root.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com";

/// A client of the Gemini API. The key goes in the `x-goog-api-key` header.
///
/// ```no_run
/// use mux_llm::{LlmClient, Request};
/// use mux_llm::gemini::GeminiClient;
///
/// # async fn run() -> Result<(), mux_llm::LlmError> {
/// let client = GeminiClient::from_env()?; // GEMINI_API_KEY
/// let reply = client.complete(Request::new("gemini-2.5-flash", 1024).user("Hi")).await?;
/// println!("{}", reply.text());
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct GeminiClient {
    transport: Transport,
}

impl GeminiClient {
    env_constructors!(
        "gemini",
        "GEMINI_API_KEY",
        KeyRule::Required,
        "GEMINI_BASE_URL",
        DEFAULT_BASE_URL,
        "A client from `GEMINI_API_KEY` and, when set, `GEMINI_BASE_URL`."
    );

    /// A client with explicit HTTP options.
    pub fn with_options(options: HttpOptions) -> Result<Self, LlmError> {
        Ok(Self {
            transport: Transport::new("gemini", options)?,
        })
    }

    fn rebuild(self, change: impl FnOnce(&mut HttpOptions)) -> Result<Self, LlmError> {
        let mut options = self.transport.options.clone();
        change(&mut options);
        Self::with_options(options)
    }

    http_settings!();

    fn headers(&self) -> Result<reqwest::header::HeaderMap, LlmError> {
        let key = self.transport.api_key();
        headers(
            "gemini",
            &[("x-goog-api-key", key), ("accept", "application/json")],
        )
    }
}

/// The model path segment, checked so that it cannot change the URL's shape.
fn model_path(model: &str) -> Result<&str, LlmError> {
    let model = model.strip_prefix("models/").unwrap_or(model);
    if model.is_empty()
        || !model
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
    {
        return Err(LlmError::new(
            "gemini",
            crate::LlmFailure::Config {
                message: format!("invalid model name `{model}`"),
            },
        ));
    }
    Ok(model)
}

impl LlmClient for GeminiClient {
    fn provider(&self) -> &str {
        "gemini"
    }

    fn stream(&self, request: Request) -> BoxFuture<'_, Result<EventStream, LlmError>> {
        traced(request_span(&request, true), async move {
            let path = format!(
                "/v1beta/models/{}:streamGenerateContent?alt=sse",
                model_path(&request.model)?
            );
            let body = request_body(&request);
            self.transport
                .post_stream(
                    &path,
                    self.headers()?,
                    &body,
                    GeminiDecoder::new,
                    request.on_retry.as_ref(),
                )
                .await
        })
    }

    fn complete(&self, request: Request) -> BoxFuture<'_, Result<Response, LlmError>> {
        traced(request_span(&request, false), async move {
            let path = format!(
                "/v1beta/models/{}:generateContent",
                model_path(&request.model)?
            );
            let body = request_body(&request);
            let value = self
                .transport
                .post_json(&path, self.headers()?, &body, request.on_retry.as_ref())
                .await?;
            response_from_json(&value)
        })
    }
}
