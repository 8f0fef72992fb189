//! The logic of the `llm_call` example: parse the command line, send one request, and render
//! the assembled response (or the error) as one JSON object.

use std::sync::Arc;

use mux::llm::anthropic::AnthropicClient;
use mux::llm::gemini::GeminiClient;
use mux::llm::openai::OpenAiClient;
use mux::llm::{LlmClient, LlmError, Request, Response, RetryPolicy};
use mux::tool::ToolSpec;
use serde_json::{Value, json};

/// The usage line.
pub const USAGE: &str = "usage: llm_call --provider anthropic|openai|gemini [--base-url URL] [--model M] \
[--stream] [--max-retries N] [--tools FILE] \"prompt\"";

/// Parsed command-line options.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// `anthropic`, `openai` or `gemini`.
    pub provider: String,
    /// Overrides the provider's base URL.
    pub base_url: Option<String>,
    /// The model (a per-provider default otherwise).
    pub model: Option<String>,
    /// Stream and assemble instead of one non-streaming call.
    pub stream: bool,
    /// Retries of retryable failures.
    pub max_retries: u32,
    /// A JSON file with an array of tool specs (`name`, `description`, `inputSchema`).
    pub tools: Option<String>,
    /// The user prompt.
    pub prompt: String,
}

/// Parses the arguments (without the program name).
pub fn parse(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        provider: String::new(),
        base_url: None,
        model: None,
        stream: false,
        max_retries: 2,
        tools: None,
        prompt: String::new(),
    };
    let mut prompt = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match arg.as_str() {
            "--provider" => options.provider = value("--provider")?,
            "--base-url" => options.base_url = Some(value("--base-url")?),
            "--model" => options.model = Some(value("--model")?),
            "--stream" => options.stream = true,
            "--max-retries" => {
                let raw = value("--max-retries")?;
                options.max_retries = raw
                    .parse()
                    .map_err(|_| format!("--max-retries: `{raw}` is not a number"))?;
            }
            "--tools" => options.tools = Some(value("--tools")?),
            flag if flag.starts_with("--") => return Err(format!("unknown option `{flag}`")),
            text => {
                if prompt.replace(text.to_owned()).is_some() {
                    return Err("give exactly one prompt".into());
                }
            }
        }
    }
    options.prompt = prompt.ok_or("a prompt is required")?;
    if !matches!(options.provider.as_str(), "anthropic" | "openai" | "gemini") {
        return Err(format!(
            "--provider must be anthropic, openai or gemini (got `{}`)",
            options.provider
        ));
    }
    Ok(options)
}

fn default_model(provider: &str) -> &'static str {
    match provider {
        "anthropic" => "claude-sonnet-4-5",
        "openai" => "gpt-4o-mini",
        _ => "gemini-2.5-flash",
    }
}

/// Builds the client for the options, reading keys through `env`.
pub fn client(
    options: &Options,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Arc<dyn LlmClient>, LlmError> {
    let retry = RetryPolicy::with_max_retries(options.max_retries);
    let client: Arc<dyn LlmClient> = match options.provider.as_str() {
        "anthropic" => {
            let mut client = AnthropicClient::from_lookup(&env)?.retry(retry)?;
            if let Some(url) = &options.base_url {
                client = client.base_url(url)?;
            }
            Arc::new(client)
        }
        "openai" => {
            let base = options.base_url.clone();
            let lookup = |name: &str| match (name, &base) {
                ("OPENAI_BASE_URL", Some(url)) => Some(url.clone()),
                _ => env(name),
            };
            Arc::new(OpenAiClient::from_lookup(lookup)?.retry(retry)?)
        }
        _ => {
            let mut client = GeminiClient::from_lookup(&env)?.retry(retry)?;
            if let Some(url) = &options.base_url {
                client = client.base_url(url)?;
            }
            Arc::new(client)
        }
    };
    Ok(client)
}

/// Reads the tools file.
pub fn load_tools(path: &str) -> Result<Vec<ToolSpec>, String> {
    let text = std::fs::read_to_string(path).map_err(|err| format!("reading {path}: {err}"))?;
    serde_json::from_str(&text)
        .map_err(|err| format!("{path}: not a JSON array of tool specs: {err}"))
}

/// The response as the example prints it.
pub fn response_json(response: &Response) -> Value {
    json!({
        "content": response.content,
        "stop_reason": response.stop_reason,
        "usage": {
            "input_tokens": response.usage.input_tokens,
            "output_tokens": response.usage.output_tokens,
            "cache_read_tokens": response.usage.cache_read_tokens,
            "cache_write_tokens": response.usage.cache_write_tokens,
        },
    })
}

/// An error as the example prints it.
pub fn error_json(error: &LlmError) -> Value {
    json!({"error": {
        "kind": error.kind(),
        "status": error.status(),
        "message": error.message(),
        "retry_after_ms": error.retry_after().map(|d| d.as_millis() as u64),
    }})
}

/// Runs the example: returns the JSON to print and the exit code.
pub async fn run(args: &[String], env: impl Fn(&str) -> Option<String>) -> (Value, i32) {
    let options = match parse(args) {
        Ok(options) => options,
        Err(message) => {
            let value = json!({"error": {"kind": "usage", "status": null, "message": format!("{message}\n{USAGE}"), "retry_after_ms": null}});
            return (value, 2);
        }
    };
    let tools = match options.tools.as_deref().map(load_tools).transpose() {
        Ok(tools) => tools.unwrap_or_default(),
        Err(message) => {
            return (
                json!({"error": {"kind": "usage", "status": null, "message": message, "retry_after_ms": null}}),
                2,
            );
        }
    };
    let client = match client(&options, env) {
        Ok(client) => client,
        Err(error) => return (error_json(&error), 1),
    };
    let model = options
        .model
        .clone()
        .unwrap_or_else(|| default_model(&options.provider).to_owned());
    let request = Request::new(model, 1024)
        .user(options.prompt.clone())
        .tools(tools);
    let result = if options.stream {
        match client.stream(request).await {
            Ok(stream) => mux::llm::accumulate(client.provider(), stream).await,
            Err(error) => Err(error),
        }
    } else {
        client.complete(request).await
    };
    match result {
        Ok(response) => (response_json(&response), 0),
        Err(error) => (error_json(&error), 1),
    }
}
