//! The HTTP machinery the providers share: a reqwest client with rustls, timeouts, typed
//! status errors, retries before the first event, and key redaction.

use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use crate::client::EventStream;
use crate::decode::{EventMapper, decode_stream};
use crate::error::{LlmError, TimeoutPhase, one_line, snippet};
use crate::retry::{OnRetry, RetryNotice, RetryPolicy, retry_after_from_headers};
use mux_tool::Secret;

/// The three waits every request is bounded by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// Opening the TCP/TLS connection.
    pub connect: Duration,
    /// Until the response headers arrive (the whole body when not streaming).
    pub request: Duration,
    /// Between two chunks of a stream.
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(10),
            request: Duration::from_secs(600),
            idle: Duration::from_secs(120),
        }
    }
}

/// The settings every HTTP provider shares.
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// The API root, without a trailing slash.
    pub base_url: String,
    /// The API key (absent for local servers).
    pub api_key: Option<Secret>,
    /// Retries of failed attempts.
    pub retry: RetryPolicy,
    /// Connection, request and idle timeouts.
    pub timeouts: Timeouts,
    /// Extra headers sent with every request.
    pub headers: Vec<(String, String)>,
}

impl HttpOptions {
    /// Options for `base_url` with the default retry policy and timeouts.
    pub fn new(base_url: impl Into<String>, api_key: Option<Secret>) -> Self {
        Self {
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            api_key,
            retry: RetryPolicy::default(),
            timeouts: Timeouts::default(),
            headers: Vec::new(),
        }
    }

    /// Options from the environment through `get`: the key from `key_var` (trimmed) and the
    /// base URL from `base_var`, or `default_base` when that is unset or blank. Whether the key
    /// may be missing is `key`'s to say.
    pub(crate) fn from_lookup(
        provider: &str,
        (key_var, key): (&str, KeyRule),
        base_var: &str,
        default_base: &str,
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, LlmError> {
        let api_key = get(key_var)
            .filter(|key| !key.trim().is_empty())
            .map(|key| Secret::new(key.trim()));
        let base = get(base_var).filter(|url| !url.trim().is_empty());
        let missing = match key {
            KeyRule::Required if api_key.is_none() => Some(format!("{key_var} is not set")),
            KeyRule::UnlessBaseUrl if api_key.is_none() && base.is_none() => Some(format!(
                "{key_var} is not set (set {base_var} for a local server)"
            )),
            _ => None,
        };
        if let Some(message) = missing {
            return Err(LlmError::new(
                provider,
                crate::LlmFailure::Config { message },
            ));
        }
        let base = base.unwrap_or_else(|| default_base.to_owned());
        Ok(Self::new(base, api_key))
    }
}

/// Whether a provider read from the environment needs its API key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KeyRule {
    /// Always (Anthropic, Gemini).
    #[cfg_attr(not(any(feature = "anthropic", feature = "gemini")), allow(dead_code))]
    Required,
    /// Unless the base URL is set: a local server needs none (OpenAI and compatible servers).
    #[cfg_attr(
        not(any(feature = "openai", feature = "openai-responses")),
        allow(dead_code)
    )]
    UnlessBaseUrl,
}

/// The span of one request to a provider, with the OpenTelemetry GenAI request attributes
/// the clients share.
pub(crate) fn request_span(request: &crate::request::Request, stream: bool) -> tracing::Span {
    tracing::debug_span!(
        "llm.request",
        model = %request.model,
        max_tokens = request.max_tokens,
        stream,
    )
}

/// `call` as a client method's boxed future, running in `span`.
pub(crate) fn traced<'a, T>(
    span: tracing::Span,
    call: impl std::future::Future<Output = Result<T, LlmError>> + Send + 'a,
) -> crate::client::BoxFuture<'a, Result<T, LlmError>> {
    Box::pin(tracing::Instrument::instrument(call, span))
}

/// `accept: application/json` and, with a key, `authorization: Bearer <key>` (OpenAI and the
/// servers that speak its API).
#[cfg_attr(
    not(any(feature = "openai", feature = "openai-responses")),
    allow(dead_code)
)]
pub(crate) fn bearer_headers(provider: &str, key: Option<&Secret>) -> Result<HeaderMap, LlmError> {
    let bearer = key.map(|key| format!("Bearer {}", key.expose()));
    let mut pairs = vec![("accept", "application/json")];
    if let Some(bearer) = &bearer {
        pairs.push(("authorization", bearer.as_str()));
    }
    headers(provider, &pairs)
}

/// The settings every client changes the same way, as builder methods: the base URL, the
/// retry policy and the timeouts. Each rebuilds the client's transport through the client's
/// own `rebuild(self, change)`.
macro_rules! http_settings {
    () => {
        /// Sends requests to `base_url` instead (a proxy, a compatible server, or a local test
        /// server).
        pub fn base_url(self, base_url: impl Into<String>) -> Result<Self, LlmError> {
            let base = base_url.into().trim_end_matches('/').to_owned();
            self.rebuild(|options| options.base_url = base)
        }

        /// Sets the retry policy.
        pub fn retry(self, retry: RetryPolicy) -> Result<Self, LlmError> {
            self.rebuild(|options| options.retry = retry)
        }

        /// Sets the timeouts.
        pub fn timeouts(self, timeouts: Timeouts) -> Result<Self, LlmError> {
            self.rebuild(|options| options.timeouts = timeouts)
        }
    };
}

pub(crate) use http_settings;

/// The constructors every provider with one URL shares: `new(key)` for its public API,
/// `from_env()` and `from_lookup(get)` from its key and base URL variables, each through the
/// client's own `with_options`. Takes the provider name, the key variable and its rule, the
/// base URL variable, the default URL, and the sentence `from_env` documents.
#[cfg(any(
    feature = "anthropic",
    feature = "gemini",
    feature = "openai-responses"
))]
macro_rules! env_constructors {
    ($provider:expr, $key:literal, $rule:expr, $base_url:literal, $default:expr, $env_doc:literal) => {
        /// A client with this key for the provider's public API.
        pub fn new(api_key: Secret) -> Result<Self, LlmError> {
            Self::with_options(HttpOptions::new($default, Some(api_key)))
        }

        #[doc = $env_doc]
        pub fn from_env() -> Result<Self, LlmError> {
            Self::from_lookup(|name| std::env::var(name).ok())
        }

        /// Like `from_env`, reading variables through `get`.
        pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, LlmError> {
            let options =
                HttpOptions::from_lookup($provider, ($key, $rule), $base_url, $default, get)?;
            Self::with_options(options)
        }
    };
}

#[cfg(any(
    feature = "anthropic",
    feature = "gemini",
    feature = "openai-responses"
))]
pub(crate) use env_constructors;

/// A sender bound to one provider.
#[derive(Clone)]
pub(crate) struct Transport {
    provider: String,
    client: reqwest::Client,
    pub(crate) options: HttpOptions,
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transport")
            .field("provider", &self.provider)
            .field("options", &self.options)
            .finish()
    }
}

impl Transport {
    /// The API key, or an empty string when there is none (a local server).
    #[cfg(any(feature = "anthropic", feature = "gemini"))]
    pub(crate) fn api_key(&self) -> &str {
        self.options
            .api_key
            .as_ref()
            .map(Secret::expose)
            .unwrap_or_default()
    }

    pub(crate) fn new(provider: &str, options: HttpOptions) -> Result<Self, LlmError> {
        let client = reqwest::Client::builder()
            .connect_timeout(options.timeouts.connect)
            .tcp_nodelay(true)
            .build()
            .map_err(|err| {
                LlmError::new(
                    provider,
                    crate::LlmFailure::Config {
                        message: format!("building the HTTP client: {err}"),
                    },
                )
            })?;
        Ok(Self {
            provider: provider.to_owned(),
            client,
            options,
        })
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.options.base_url)
    }

    fn redact(&self, error: LlmError) -> LlmError {
        match &self.options.api_key {
            Some(key) => error.redact(key.expose()),
            None => error,
        }
    }

    fn map_reqwest(&self, err: reqwest::Error) -> LlmError {
        let error = if err.is_timeout() && err.is_connect() {
            LlmError::new(
                self.provider.clone(),
                crate::LlmFailure::Timeout {
                    phase: TimeoutPhase::Connect,
                    after: self.options.timeouts.connect,
                },
            )
        } else {
            let mut message = err.to_string();
            let mut source = std::error::Error::source(&err);
            while let Some(cause) = source {
                message.push_str(": ");
                message.push_str(&cause.to_string());
                source = cause.source();
            }
            LlmError::transport(&self.provider, message)
        };
        self.redact(error)
    }

    /// Sends one POST and returns the response if its status is a success.
    async fn send_once(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: &Bytes,
    ) -> Result<reqwest::Response, LlmError> {
        let mut builder = self
            .client
            .post(url)
            .headers(headers.clone())
            .header("content-type", "application/json")
            .body(body.clone());
        for (name, value) in &self.options.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        let response = self.within_request_timeout(builder.send()).await?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retry_after = retry_after_from_headers(|name| {
            response.headers().get(name).and_then(|v| v.to_str().ok())
        });
        // An error body that cannot be read in time is an empty one: the status still speaks.
        let text = self
            .within_request_timeout(response.text())
            .await
            .unwrap_or_default();
        let (error_type, message) = error_body(&text);
        let message = message.unwrap_or_else(|| {
            let reason = status.canonical_reason().unwrap_or("error");
            let body = one_line(&text);
            if body.is_empty() {
                format!("HTTP {} {reason} with an empty body", status.as_u16())
            } else {
                format!("HTTP {} {reason}: {}", status.as_u16(), snippet(&body))
            }
        });
        // The URL without its query, which may carry a key (Gemini's `?key=`).
        let message = format!("{message} (POST {})", url.split('?').next().unwrap_or(url));
        Err(self.redact(LlmError::from_status(
            &self.provider,
            status.as_u16(),
            error_type.as_deref(),
            message,
            retry_after,
        )))
    }

    async fn backoff(&self, retry: u32, error: &LlmError, on_retry: Option<&OnRetry>) -> bool {
        if !error.is_retryable() {
            return false;
        }
        match self.options.retry.delay(retry, error.retry_after()) {
            Some(delay) => {
                tracing::warn!(
                    provider = %self.provider,
                    error.kind = error.kind(),
                    retry = retry + 1,
                    delay_ms = delay.as_millis() as u64,
                    "retrying LLM request"
                );
                if let Some(on_retry) = on_retry {
                    on_retry.notify(RetryNotice {
                        attempt: retry + 1,
                        delay,
                        error,
                    });
                }
                tokio::time::sleep(delay).await;
                true
            }
            None => false,
        }
    }

    /// POSTs a JSON body and returns the decoded JSON reply, retrying retryable failures.
    pub(crate) async fn post_json(
        &self,
        path: &str,
        headers: HeaderMap,
        body: &Value,
        on_retry: Option<&OnRetry>,
    ) -> Result<Value, LlmError> {
        let url = self.url(path);
        let body = self.encode(body)?;
        self.retrying(on_retry, || async {
            let response = self.send_once(&url, &headers, &body).await?;
            let bytes = self.within_request_timeout(response.bytes()).await?;
            serde_json::from_slice::<Value>(&bytes).map_err(|err| {
                self.redact(LlmError::decode(
                    &self.provider,
                    format!("the reply is not JSON: {err}"),
                    &String::from_utf8_lossy(&bytes),
                ))
            })
        })
        .await
    }

    /// POSTs a streaming request and returns its event stream. Failures are retried while no
    /// event has reached the caller: HTTP errors, and a retryable error as the first event.
    pub(crate) async fn post_stream<M: EventMapper>(
        &self,
        path: &str,
        headers: HeaderMap,
        body: &Value,
        mapper: impl Fn() -> M,
        on_retry: Option<&OnRetry>,
    ) -> Result<EventStream, LlmError> {
        let url = self.url(path);
        let body = self.encode(body)?;
        self.retrying(on_retry, || async {
            let response = self.send_once(&url, &headers, &body).await?;
            let json_reply = response
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.starts_with("application/json"));
            if json_reply {
                return Err(self.json_instead_of_stream(response).await);
            }
            let this = self.clone();
            let bytes = response
                .bytes_stream()
                .map_err(move |err| this.map_reqwest(err))
                .boxed();
            let mut stream = decode_stream(bytes, mapper(), Some(self.options.timeouts.idle));
            match stream.next().await {
                Some(Ok(first)) => Ok(Box::pin(
                    futures::stream::once(async { Ok(first) }).chain(stream),
                ) as EventStream),
                Some(Err(error)) => Err(self.redact(error)),
                None => Err(LlmError::transport(
                    &self.provider,
                    "the stream ended before its first event",
                )),
            }
        })
        .await
    }

    /// `work` within the request timeout; a timeout or a reqwest error becomes an `LlmError`.
    async fn within_request_timeout<T>(
        &self,
        work: impl Future<Output = Result<T, reqwest::Error>>,
    ) -> Result<T, LlmError> {
        let limit = self.options.timeouts.request;
        match tokio::time::timeout(limit, work).await {
            Ok(result) => result.map_err(|err| self.map_reqwest(err)),
            Err(_) => Err(LlmError::new(
                self.provider.clone(),
                crate::LlmFailure::Timeout {
                    phase: TimeoutPhase::Request,
                    after: limit,
                },
            )),
        }
    }

    fn encode(&self, body: &Value) -> Result<Bytes, LlmError> {
        serde_json::to_vec(body).map(Bytes::from).map_err(|err| {
            LlmError::new(
                self.provider.clone(),
                crate::LlmFailure::Config {
                    message: format!("encoding the request: {err}"),
                },
            )
        })
    }

    /// Runs `attempt` until it succeeds, fails for good, or the retry policy gives up; the
    /// final error says how many attempts were made.
    async fn retrying<T, F, Fut>(
        &self,
        on_retry: Option<&OnRetry>,
        mut attempt: F,
    ) -> Result<T, LlmError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, LlmError>>,
    {
        let mut retry = 0;
        loop {
            match attempt().await {
                Ok(value) => return Ok(value),
                Err(error) => {
                    if !self.backoff(retry, &error, on_retry).await {
                        return Err(error.after_attempts(retry + 1));
                    }
                    retry += 1;
                }
            }
        }
    }
}

impl Transport {
    /// A server answered a streaming request with a JSON body (some compatible servers report
    /// errors this way, with status 200): the body's error, typed, or a decode error.
    async fn json_instead_of_stream(&self, response: reqwest::Response) -> LlmError {
        let limit = self.options.timeouts.request;
        let text = match tokio::time::timeout(limit, response.text()).await {
            Ok(Ok(text)) => text,
            Ok(Err(err)) => return self.map_reqwest(err),
            Err(_) => {
                return LlmError::new(
                    self.provider.clone(),
                    crate::LlmFailure::Timeout {
                        phase: TimeoutPhase::Request,
                        after: limit,
                    },
                );
            }
        };
        let error = match error_body(&text) {
            (kind, Some(message)) => LlmError::in_stream(
                &self.provider,
                kind.as_deref().unwrap_or("api_error"),
                message,
            ),
            _ => LlmError::decode(
                &self.provider,
                "a JSON reply instead of an event stream",
                &text,
            ),
        };
        self.redact(error)
    }
}

/// Builds a header map, rejecting values that are not valid header text.
pub(crate) fn headers(provider: &str, pairs: &[(&str, &str)]) -> Result<HeaderMap, LlmError> {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
            LlmError::new(
                provider,
                crate::LlmFailure::Config {
                    message: format!("invalid header name `{name}`"),
                },
            )
        })?;
        let mut value = HeaderValue::from_str(value).map_err(|_| {
            LlmError::new(
                provider,
                crate::LlmFailure::Config {
                    message: format!("invalid value for header `{name}` (not shown)"),
                },
            )
        })?;
        value.set_sensitive(true);
        map.insert(name, value);
    }
    Ok(map)
}

/// The error type and message of a JSON error body, for all three providers' shapes:
/// `{"error":{"type","message"}}`, `{"error":{"code","message"}}`, `{"error":{"status","message"}}`,
/// `{"error":"text"}` and `{"message":...}`.
pub(crate) fn error_body(text: &str) -> (Option<String>, Option<String>) {
    let Ok(value) = serde_json::from_str::<Value>(text) else {
        return (None, None);
    };
    let error = value.get("error").unwrap_or(&value);
    if let Some(message) = error.as_str() {
        return (None, Some(message.to_owned()));
    }
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let error_type = ["type", "code", "status"]
        .iter()
        .find_map(|key| error.get(*key).and_then(Value::as_str))
        .map(str::to_owned);
    (error_type, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_of_every_shape_are_read() {
        let anthropic =
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert_eq!(
            error_body(anthropic),
            (Some("overloaded_error".into()), Some("Overloaded".into()))
        );
        let openai = r#"{"error":{"message":"bad","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
        assert_eq!(error_body(openai).1.as_deref(), Some("bad"));
        let ollama = r#"{"error":"model \"x\" not found"}"#;
        assert_eq!(
            error_body(ollama),
            (None, Some("model \"x\" not found".into()))
        );
        assert_eq!(error_body("<html>502 Bad Gateway</html>"), (None, None));
    }
}
