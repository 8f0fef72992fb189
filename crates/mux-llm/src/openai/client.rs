//! The Chat Completions client and its presets for compatible servers.

use crate::client::{BoxFuture, EventStream, LlmClient};
use crate::error::LlmError;
use crate::http::{
    HttpOptions, KeyRule, Timeouts, Transport, bearer_headers, http_settings, request_span, traced,
};
use crate::request::Request;
use crate::response::Response;
use crate::retry::RetryPolicy;
use mux_tool::Secret;

use super::stream::OpenAiDecoder;
use super::wire::{WireOptions, request_body, response_from_json};

/// A server that speaks Chat Completions, with its default URL and quirks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Preset {
    /// OpenAI itself.
    OpenAi,
    /// Ollama's OpenAI-compatible endpoint.
    Ollama,
    /// vLLM's OpenAI-compatible server.
    Vllm,
    /// llama.cpp's `llama-server`.
    LlamaCpp,
    /// OpenRouter.
    OpenRouter,
    /// Groq.
    Groq,
}

impl Preset {
    /// The provider name used in errors and traces.
    pub fn name(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Ollama => "ollama",
            Self::Vllm => "vllm",
            Self::LlamaCpp => "llama.cpp",
            Self::OpenRouter => "openrouter",
            Self::Groq => "groq",
        }
    }

    /// The default API root (requests go to `{base}/chat/completions`).
    pub fn base_url(self) -> &'static str {
        match self {
            Self::OpenAi => "https://api.openai.com/v1",
            Self::Ollama => "http://localhost:11434/v1",
            Self::Vllm => "http://localhost:8000/v1",
            Self::LlamaCpp => "http://localhost:8080/v1",
            Self::OpenRouter => "https://openrouter.ai/api/v1",
            Self::Groq => "https://api.groq.com/openai/v1",
        }
    }

    /// The wire differences of this server.
    pub fn wire_options(self) -> WireOptions {
        match self {
            Self::OpenAi => WireOptions::default(),
            Self::Ollama | Self::Vllm | Self::LlamaCpp => WireOptions {
                max_completion_tokens: false,
                include_usage: true,
                reasoning_effort: false,
            },
            Self::OpenRouter | Self::Groq => WireOptions {
                max_completion_tokens: false,
                include_usage: true,
                reasoning_effort: true,
            },
        }
    }

    /// Whether the server needs an API key.
    pub fn needs_key(self) -> bool {
        matches!(self, Self::OpenAi | Self::OpenRouter | Self::Groq)
    }
}

/// A Chat Completions client (`POST {base}/chat/completions`).
///
/// ```no_run
/// use mux_llm::{LlmClient, Request};
/// use mux_llm::openai::{OpenAiClient, Preset};
///
/// # async fn run() -> Result<(), mux_llm::LlmError> {
/// let local = OpenAiClient::preset(Preset::Ollama, None)?;
/// let reply = local.complete(Request::new("qwen3:8b", 512).user("Hi")).await?;
/// println!("{}", reply.text());
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct OpenAiClient {
    transport: Transport,
    /// The name in errors: the preset's, or `openai-compatible (host)` at another URL.
    provider: String,
    preset: Preset,
    wire: WireOptions,
}

/// The provider name errors carry: the preset's at its own URL, or, at another URL,
/// `openai-compatible (host)` (`ollama (host)` for another preset), so an error says which
/// server failed.
fn label(preset: Preset, base_url: &str) -> String {
    if base_url.trim_end_matches('/') == preset.base_url() {
        return preset.name().to_owned();
    }
    let host = reqwest::Url::parse(base_url)
        .ok()
        .and_then(|url| {
            url.host_str().map(|host| match url.port() {
                Some(port) => format!("{host}:{port}"),
                None => host.to_owned(),
            })
        })
        .unwrap_or_else(|| "unknown host".to_owned());
    match preset {
        Preset::OpenAi => format!("openai-compatible ({host})"),
        other => format!("{} ({host})", other.name()),
    }
}

impl OpenAiClient {
    /// A client of OpenAI's API with this key.
    pub fn new(api_key: Secret) -> Result<Self, LlmError> {
        Self::preset(Preset::OpenAi, Some(api_key))
    }

    /// A client of a compatible server at its default URL.
    pub fn preset(preset: Preset, api_key: Option<Secret>) -> Result<Self, LlmError> {
        Self::with_options(preset, HttpOptions::new(preset.base_url(), api_key))
    }

    /// A client from `OPENAI_API_KEY` and, when set, `OPENAI_BASE_URL`. The key may be absent
    /// when the base URL points to a local server.
    pub fn from_env() -> Result<Self, LlmError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Like [`OpenAiClient::from_env`], reading variables through `get`.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, LlmError> {
        let options = HttpOptions::from_lookup(
            Preset::OpenAi.name(),
            ("OPENAI_API_KEY", KeyRule::UnlessBaseUrl),
            "OPENAI_BASE_URL",
            Preset::OpenAi.base_url(),
            get,
        )?;
        Self::with_options(Preset::OpenAi, options)
    }

    /// A client with a preset's quirks and explicit HTTP options.
    pub fn with_options(preset: Preset, options: HttpOptions) -> Result<Self, LlmError> {
        if preset.needs_key() && options.api_key.is_none() && options.base_url == preset.base_url()
        {
            return Err(LlmError::new(
                preset.name(),
                crate::LlmFailure::Config {
                    message: "an API key is required".into(),
                },
            ));
        }
        let provider = label(preset, &options.base_url);
        Ok(Self {
            transport: Transport::new(&provider, options)?,
            provider,
            preset,
            wire: preset.wire_options(),
        })
    }

    fn rebuild(self, change: impl FnOnce(&mut HttpOptions)) -> Result<Self, LlmError> {
        let mut options = self.transport.options.clone();
        change(&mut options);
        let provider = label(self.preset, &options.base_url);
        Ok(Self {
            transport: Transport::new(&provider, options)?,
            provider,
            ..self
        })
    }

    http_settings!();

    /// Overrides the wire differences (for a server no preset describes).
    pub fn wire_options(mut self, wire: WireOptions) -> Self {
        self.wire = wire;
        self
    }

    fn headers(&self) -> Result<reqwest::header::HeaderMap, LlmError> {
        bearer_headers(&self.provider, self.transport.options.api_key.as_ref())
    }
}

impl LlmClient for OpenAiClient {
    fn provider(&self) -> &str {
        &self.provider
    }

    fn stream(&self, request: Request) -> BoxFuture<'_, Result<EventStream, LlmError>> {
        traced(request_span(&request, true), async move {
            let headers = self.headers()?;
            let body = request_body(&request, self.wire, true);
            let provider = self.provider.clone();
            self.transport
                .post_stream(
                    "/chat/completions",
                    headers,
                    &body,
                    || OpenAiDecoder::new(provider.clone()),
                    request.on_retry.as_ref(),
                )
                .await
        })
    }

    fn complete(&self, request: Request) -> BoxFuture<'_, Result<Response, LlmError>> {
        traced(request_span(&request, false), async move {
            let headers = self.headers()?;
            let body = request_body(&request, self.wire, false);
            let value = self
                .transport
                .post_json(
                    "/chat/completions",
                    headers,
                    &body,
                    request.on_retry.as_ref(),
                )
                .await?;
            response_from_json(&self.provider, &value)
        })
    }
}
