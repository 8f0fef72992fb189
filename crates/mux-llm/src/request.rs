//! A request: model, system prompt, messages, tools and sampling settings.

use std::collections::BTreeMap;
use std::sync::Arc;

use mux_tool::ToolSpec;
use serde::{Deserialize, Serialize};

use crate::message::{CacheHint, ContentBlock, Message, Role};
use crate::retry::OnRetry;

/// How the model may use tools.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// The model must call some tool.
    Any,
    /// The model must not call tools.
    None,
    /// The model must call this tool.
    Tool {
        /// The tool name.
        name: String,
    },
}

/// Reasoning effort for models that take an effort level instead of a token budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningEffort {
    /// Minimal reasoning.
    Low,
    /// The default.
    Medium,
    /// Most reasoning.
    High,
}

impl ReasoningEffort {
    /// The lowercase name providers use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }

    /// The effort closest to a token budget (for providers that take an effort level).
    pub fn from_budget(budget_tokens: u32) -> Self {
        match budget_tokens {
            0..=2048 => Self::Low,
            2049..=8192 => Self::Medium,
            _ => Self::High,
        }
    }
}

/// Extended thinking / reasoning settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Thinking {
    /// The most tokens the model may spend thinking.
    pub budget_tokens: u32,
    /// An explicit effort level; derived from the budget when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<ReasoningEffort>,
}

impl Thinking {
    /// Thinking with a token budget.
    pub fn budget(budget_tokens: u32) -> Self {
        Self {
            budget_tokens,
            effort: None,
        }
    }

    /// The effort level: explicit, or derived from the budget.
    pub fn effort(&self) -> ReasoningEffort {
        self.effort
            .unwrap_or_else(|| ReasoningEffort::from_budget(self.budget_tokens))
    }
}

/// Prompt-cache hints beyond the per-message [`Message::cache`] marks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CachePolicy {
    /// Cache the system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<CacheHint>,
    /// Cache the tool definitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<CacheHint>,
    /// Cache the conversation up to its last message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail: Option<CacheHint>,
}

impl CachePolicy {
    /// Caches system, tools and conversation tail with the same hint.
    pub fn all(hint: CacheHint) -> Self {
        Self {
            system: Some(hint),
            tools: Some(hint),
            tail: Some(hint),
        }
    }
}

/// One model request. Model and `max_tokens` are per request, not per client.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// The model name.
    pub model: String,
    /// The system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The conversation, shared copy-on-write: a loop hands the same history to every turn's
    /// request without copying it, and `Arc::make_mut` copies only when a shared one changes.
    pub messages: Arc<Vec<Message>>,
    /// The tools, sorted by name so the wire order is stable (prompt caching depends on it).
    /// Shared, so a request per turn does not copy every tool's schema.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Arc<ToolSpec>>,
    /// How tools may be used.
    #[serde(default)]
    pub tool_choice: ToolChoice,
    /// The most output tokens.
    pub max_tokens: u32,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Sequences that stop generation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop_sequences: Vec<String>,
    /// Extended thinking / reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<Thinking>,
    /// Prompt-cache hints.
    #[serde(default)]
    pub cache: CachePolicy,
    /// Free-form metadata (`user_id` is sent to providers that accept it).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    /// The shape the final answer must take, as JSON (structured output). Each provider maps
    /// it to its own mechanism: OpenAI `response_format: json_schema`, Gemini
    /// `responseSchema`, Anthropic a forced output tool whose input becomes the reply's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<OutputSchema>,
    /// Told before each retry of this request (not serialized).
    #[serde(skip)]
    pub on_retry: Option<OnRetry>,
}

/// A JSON Schema the final answer must satisfy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutputSchema {
    /// A short name for the shape (`weather_report`); providers show it to the model.
    pub name: String,
    /// The JSON Schema (draft 2020-12, as schemars writes it).
    pub schema: serde_json::Value,
}

impl OutputSchema {
    /// The name the Anthropic mapping gives its output tool.
    pub const TOOL_NAME: &'static str = "final_result";

    /// A schema named `name`.
    pub fn new(name: impl Into<String>, schema: serde_json::Value) -> Self {
        Self {
            name: name.into(),
            schema,
        }
    }

    /// Whether OpenAI's strict mode accepts the schema: every object closes its properties
    /// (`additionalProperties: false`) and requires all of them. Strict mode is sent only
    /// then; otherwise the reply is validated after the fact.
    pub fn is_strict_compatible(&self) -> bool {
        is_strict_schema(&self.schema)
    }
}

/// Whether OpenAI's strict mode accepts `schema` (see [`OutputSchema::is_strict_compatible`]).
pub(crate) fn is_strict_schema(schema: &serde_json::Value) -> bool {
    match schema {
        serde_json::Value::Object(map) => {
            if let Some(props) = map.get("properties").and_then(|p| p.as_object()) {
                let closed =
                    map.get("additionalProperties") == Some(&serde_json::Value::Bool(false));
                let required: Vec<&str> = map
                    .get("required")
                    .and_then(|r| r.as_array())
                    .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
                    .unwrap_or_default();
                if !closed || !props.keys().all(|k| required.contains(&k.as_str())) {
                    return false;
                }
            }
            map.values().all(is_strict_schema)
        }
        serde_json::Value::Array(items) => items.iter().all(is_strict_schema),
        _ => true,
    }
}

impl Request {
    /// A request for `model` with an output limit and no messages yet.
    pub fn new(model: impl Into<String>, max_tokens: u32) -> Self {
        Self {
            model: model.into(),
            system: None,
            messages: Arc::default(),
            tools: Vec::new(),
            tool_choice: ToolChoice::Auto,
            max_tokens,
            temperature: None,
            stop_sequences: Vec::new(),
            thinking: None,
            cache: CachePolicy::default(),
            metadata: BTreeMap::new(),
            output: None,
            on_retry: None,
        }
    }

    /// Sets the system prompt.
    pub fn system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// Appends a message.
    pub fn message(mut self, message: Message) -> Self {
        Arc::make_mut(&mut self.messages).push(message);
        self
    }

    /// Appends a user text message.
    pub fn user(self, text: impl Into<String>) -> Self {
        self.message(Message::user(text))
    }

    /// Sets the tools, sorted by name for a stable wire order.
    /// Takes owned specs or shared ones (`Arc<ToolSpec>`, as
    /// [`Registry::shared_specs`](mux_tool::Registry::shared_specs) lists them).
    pub fn tools<T: Into<Arc<ToolSpec>>>(mut self, tools: impl IntoIterator<Item = T>) -> Self {
        self.tools = tools.into_iter().map(Into::into).collect();
        self.tools.sort_by(|a, b| a.name.cmp(&b.name));
        self
    }

    /// Sets the tool choice.
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = choice;
        self
    }

    /// Sets the temperature.
    pub fn temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Adds a stop sequence.
    pub fn stop_sequence(mut self, stop: impl Into<String>) -> Self {
        self.stop_sequences.push(stop.into());
        self
    }

    /// Enables thinking with a token budget.
    pub fn thinking(mut self, budget_tokens: u32) -> Self {
        self.thinking = Some(Thinking::budget(budget_tokens));
        self
    }

    /// Sets the prompt-cache hints.
    pub fn cache(mut self, cache: CachePolicy) -> Self {
        self.cache = cache;
        self
    }

    /// Adds a metadata entry.
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// Asks for a final answer that is JSON matching `schema` (structured output).
    pub fn output(mut self, schema: OutputSchema) -> Self {
        self.output = Some(schema);
        self
    }

    /// Calls `on_retry` before each retry of this request.
    pub fn on_retry(mut self, on_retry: OnRetry) -> Self {
        self.on_retry = Some(on_retry);
        self
    }

    /// The tool results of the last user message, as `(tool_use_id, text, is_error)`; empty
    /// when the last message is not a user message carrying results. A scripted model reads
    /// them to answer from what its tools returned.
    ///
    /// ```
    /// use mux_llm::{ContentBlock, Message, Request, Role};
    ///
    /// let request = Request::new("m", 10).message(Message::new(
    ///     Role::User,
    ///     vec![ContentBlock::tool_result("call_1", "5", false)],
    /// ));
    /// assert_eq!(request.last_tool_results(), vec![("call_1", "5".to_owned(), false)]);
    /// ```
    pub fn last_tool_results(&self) -> Vec<(&str, String, bool)> {
        let Some(last) = self.messages.last().filter(|m| m.role == Role::User) else {
            return Vec::new();
        };
        last.content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                } => Some((
                    tool_use_id.as_str(),
                    content.iter().filter_map(ContentBlock::as_text).collect(),
                    *is_error,
                )),
                _ => None,
            })
            .collect()
    }

    /// The tools in wire order (sorted by name), whatever order they were pushed in.
    pub fn sorted_tools(&self) -> Vec<&ToolSpec> {
        let mut tools: Vec<&ToolSpec> = self.tools.iter().map(|spec| &**spec).collect();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        tools
    }
}
