//! The server the official MCP conformance suite's server scenarios drive, built on mux-mcp's
//! server side: every tool is a mux `Tool` run by a mux `Executor`; the tools that need the
//! client (sampling, elicitation, roots, `input_required`) ask it through `Callers`.
//!
//! ```text
//! cargo run --example mcp_conformance_server -- --port N
//! ```
//!
//! `cargo xtask conformance` runs `conformance server --url http://127.0.0.1:N/mcp` against
//! it for 2025-11-25 and 2026-07-28.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;

use mux::mcp::rmcp::model::InputResponses;
use mux::mcp::rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, GetPromptResult, InputRequest,
    InputRequests, Prompt, PromptArgument, PromptMessage, Resource, ResourceContents,
    ResourceTemplate, Role,
};
use mux::mcp::{Callers, Catalog, CatalogError, HttpOptions, McpServer, Offers, PromptOutcome};
use mux::tool::{
    BoxFuture, Content, Executor, Registry, Tool, ToolAnnotations, ToolContext, ToolError,
    ToolOutput, ToolSpec,
};
use serde_json::{Map, Value, json};

/// A 1x1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A tiny WAV header.
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEARKwAAIhYAQACABAAZGF0YQAAAAA=";

#[tokio::main]
async fn main() -> ExitCode {
    mux_examples::exit_code_as("mcp_conformance_server", run().await)
}

async fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let port = match (args.next().as_deref(), args.next()) {
        (Some("--port"), Some(port)) => port
            .parse::<u16>()
            .map_err(|_| format!("--port takes a number, not `{port}`"))?,
        _ => return Err("usage: mcp_conformance_server --port N".into()),
    };
    let callers = Callers::new();
    let registry = Registry::new();
    for kind in KINDS {
        registry
            .register(Fixture::new(*kind, callers.clone(), registry.clone())?)
            .map_err(|err| err.to_string())?;
    }
    let executor = Executor::builder(registry)
        .approval_policy(mux::tool::ApprovalPolicy::Never)
        .build();
    let server = McpServer::new(executor)
        .with_name("mux-conformance-server", env!("CARGO_PKG_VERSION"))
        .with_callers(callers)
        .with_catalog(Arc::new(Fixtures));
    mux_examples::mcp_serving::serve_http(server, HttpOptions::loopback(port)).await
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    SimpleText,
    Image,
    Audio,
    EmbeddedResource,
    Mixed,
    Logging,
    Progress,
    Error,
    Sampling,
    Elicitation,
    ElicitationDefaults,
    ElicitationEnums,
    IrElicitation,
    IrSampling,
    IrRoots,
    IrRequestState,
    IrMultiple,
    IrMultiRound,
    IrTampered,
    IrCapabilities,
    MissingCapability,
    StreamingElicitation,
    LoggingTool,
    TriggerToolChange,
    /// Added and removed by `test_trigger_tool_change`; not served at start.
    Dynamic,
}

const KINDS: &[Kind] = &[
    Kind::SimpleText,
    Kind::Image,
    Kind::Audio,
    Kind::EmbeddedResource,
    Kind::Mixed,
    Kind::Logging,
    Kind::Progress,
    Kind::Error,
    Kind::Sampling,
    Kind::Elicitation,
    Kind::ElicitationDefaults,
    Kind::ElicitationEnums,
    Kind::IrElicitation,
    Kind::IrSampling,
    Kind::IrRoots,
    Kind::IrRequestState,
    Kind::IrMultiple,
    Kind::IrMultiRound,
    Kind::IrTampered,
    Kind::IrCapabilities,
    Kind::MissingCapability,
    Kind::StreamingElicitation,
    Kind::LoggingTool,
    Kind::TriggerToolChange,
];

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Self::SimpleText => "test_simple_text",
            Self::Image => "test_image_content",
            Self::Audio => "test_audio_content",
            Self::EmbeddedResource => "test_embedded_resource",
            Self::Mixed => "test_multiple_content_types",
            Self::Logging => "test_tool_with_logging",
            Self::Progress => "test_tool_with_progress",
            Self::Error => "test_error_handling",
            Self::Sampling => "test_sampling",
            Self::Elicitation => "test_elicitation",
            Self::ElicitationDefaults => "test_elicitation_sep1034_defaults",
            Self::ElicitationEnums => "test_elicitation_sep1330_enums",
            Self::IrElicitation => "test_input_required_result_elicitation",
            Self::IrSampling => "test_input_required_result_sampling",
            Self::IrRoots => "test_input_required_result_list_roots",
            Self::IrRequestState => "test_input_required_result_request_state",
            Self::IrMultiple => "test_input_required_result_multiple_inputs",
            Self::IrMultiRound => "test_input_required_result_multi_round",
            Self::IrTampered => "test_input_required_result_tampered_state",
            Self::IrCapabilities => "test_input_required_result_capabilities",
            Self::MissingCapability => "test_missing_capability",
            Self::StreamingElicitation => "test_streaming_elicitation",
            Self::LoggingTool => "test_logging_tool",
            Self::TriggerToolChange => "test_trigger_tool_change",
            Self::Dynamic => "test_dynamic_tool",
        }
    }

    fn schema(self) -> Value {
        match self {
            Self::Sampling => {
                json!({"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]})
            }
            Self::Elicitation => {
                json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]})
            }
            _ => json!({"type": "object", "properties": {}}),
        }
    }
}

struct Fixture {
    kind: Kind,
    spec: ToolSpec,
    callers: Callers,
    /// The served tools, which `test_trigger_tool_change` changes.
    registry: Registry,
}

impl Fixture {
    fn new(kind: Kind, callers: Callers, registry: Registry) -> Result<Self, String> {
        let spec = ToolSpec::new(
            kind.name(),
            format!("Conformance fixture {}", kind.name()),
            kind.schema(),
        )
        .map_err(|err| err.to_string())?
        .with_annotations(ToolAnnotations::read_only());
        Ok(Self {
            kind,
            spec,
            callers,
            registry,
        })
    }

    async fn ask(
        &self,
        cx: &ToolContext,
        requests: InputRequests,
    ) -> Result<BTreeMap<String, Value>, ToolError> {
        self.callers
            .request(cx.call_id(), requests)
            .await
            .map_err(|err| ToolError::failed(err.to_string()))
    }

    async fn run(&self, input: Value, cx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(match self.kind {
            Kind::SimpleText => ToolOutput::text("This is a simple text response for testing."),
            Kind::Image => ToolOutput::default().with_content(Content::image(PNG, "image/png")),
            Kind::Audio => ToolOutput::default().with_content(Content::Audio {
                data: WAV.into(),
                mime_type: "audio/wav".into(),
            }),
            Kind::EmbeddedResource => ToolOutput::default().with_content(Content::Resource {
                uri: "test://embedded-resource".into(),
                mime_type: Some("text/plain".into()),
                text: Some("This is an embedded resource content.".into()),
                blob: None,
            }),
            Kind::Mixed => ToolOutput::text("Multiple content types test:")
                .with_content(Content::image(PNG, "image/png"))
                .with_content(Content::Resource {
                    uri: "test://mixed-content-resource".into(),
                    mime_type: Some("application/json".into()),
                    text: Some(json!({"test": "data", "value": 123}).to_string()),
                    blob: None,
                }),
            Kind::MissingCapability => {
                let request = sampling("Say hello", 20);
                // Without `sampling` declared, the server answers the call with -32021.
                self.callers
                    .require(cx.call_id(), &request)
                    .map_err(|err| ToolError::failed(err.to_string()))?;
                let answers = self.ask(&cx, one("hello", request)).await?;
                ToolOutput::text(format!(
                    "The model said: {}",
                    answers["hello"]["content"]["text"]
                ))
            }
            Kind::StreamingElicitation => {
                cx.progress(0.0, Some(1.0), Some("asking".into())).await;
                let answers = self
                    .ask(&cx, one("user_name", name_request("What is your name?")))
                    .await?;
                cx.progress(1.0, Some(1.0), Some("answered".into())).await;
                ToolOutput::text(format!(
                    "Hello, {}!",
                    answers["user_name"]["content"]["name"]
                ))
            }
            Kind::LoggingTool => {
                cx.output("test_logging_tool ran").await;
                ToolOutput::text("logged")
            }
            Kind::TriggerToolChange => {
                let name = Kind::Dynamic.name();
                let now = if self.registry.remove(name).is_some() {
                    "removed"
                } else {
                    let tool =
                        Fixture::new(Kind::Dynamic, self.callers.clone(), self.registry.clone())
                            .map_err(ToolError::failed)?;
                    self.registry
                        .register(tool)
                        .map_err(|err| ToolError::failed(err.to_string()))?;
                    "added"
                };
                ToolOutput::text(format!("{name} {now}"))
            }
            Kind::Dynamic => ToolOutput::text("a tool added at run time"),
            Kind::Logging => {
                for line in [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ] {
                    cx.output(line).await;
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
                ToolOutput::text("Tool with logging executed successfully")
            }
            Kind::Progress => {
                for step in [0.0, 50.0, 100.0] {
                    cx.progress(step, Some(100.0), Some(format!("Completed step {step}")))
                        .await;
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
                ToolOutput::text("Tool with progress executed successfully")
            }
            Kind::Error => {
                ToolOutput::error("This tool intentionally returns an error for testing")
            }
            Kind::Sampling => {
                let prompt = input["prompt"].as_str().unwrap_or_default();
                let answers = self
                    .ask(&cx, one("sampling", sampling(prompt, 100)))
                    .await?;
                let text = answers["sampling"]["content"]["text"]
                    .as_str()
                    .unwrap_or_default();
                ToolOutput::text(format!("LLM response: {text}"))
            }
            Kind::Elicitation => {
                let message = input["message"].as_str().unwrap_or_default();
                let schema = json!({"type": "object", "properties": {
                    "username": {"type": "string", "description": "User's response"},
                    "email": {"type": "string", "description": "User's email address"}},
                    "required": ["username", "email"]});
                let answers = self.ask(&cx, one("e", elicit(message, schema))).await?;
                ToolOutput::text(format!("User response: {}", answers["e"]))
            }
            Kind::ElicitationDefaults => {
                let schema = json!({"type": "object", "properties": {
                    "name": {"type": "string", "default": "John Doe"},
                    "age": {"type": "integer", "default": 30},
                    "score": {"type": "number", "default": 95.5},
                    "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                    "verified": {"type": "boolean", "default": true}}});
                let answers = self
                    .ask(
                        &cx,
                        one(
                            "e",
                            elicit(
                                "Please review and update the form fields with defaults",
                                schema,
                            ),
                        ),
                    )
                    .await?;
                ToolOutput::text(format!("Elicitation completed: {}", answers["e"]))
            }
            Kind::ElicitationEnums => {
                let schema = json!({"type": "object", "properties": {
                    "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                    "titledSingle": {"type": "string", "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"}]},
                    "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                        "enumNames": ["Option One", "Option Two", "Option Three"]},
                    "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                    "titledMulti": {"type": "array", "items": {"anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"}]}}}});
                let answers = self
                    .ask(
                        &cx,
                        one(
                            "e",
                            elicit("Please select options from the enum fields", schema),
                        ),
                    )
                    .await?;
                ToolOutput::text(format!("Elicitation completed: {}", answers["e"]))
            }
            Kind::IrElicitation => {
                let answers = self
                    .ask(&cx, one("user_name", name_request("What is your name?")))
                    .await?;
                let name = answers["user_name"]["content"]["name"]
                    .as_str()
                    .unwrap_or("stranger");
                ToolOutput::text(format!("Hello, {name}!"))
            }
            Kind::IrSampling => {
                let answers = self
                    .ask(
                        &cx,
                        one(
                            "capital_question",
                            sampling("What is the capital of France?", 100),
                        ),
                    )
                    .await?;
                let text = answers["capital_question"]["content"]["text"]
                    .as_str()
                    .unwrap_or_default();
                ToolOutput::text(format!("The model said: {text}"))
            }
            Kind::IrRoots => {
                let answers = self.ask(&cx, one("client_roots", roots())).await?;
                ToolOutput::text(format!(
                    "Client roots: {}",
                    answers["client_roots"]["roots"]
                ))
            }
            Kind::IrRequestState => {
                let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]});
                self.ask(&cx, one("confirm", elicit("Please confirm", schema)))
                    .await?;
                // The state is a server-side handle; reaching here means it was valid.
                ToolOutput::text("state-ok: confirmed")
            }
            Kind::IrTampered => {
                let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]});
                self.ask(&cx, one("confirm", elicit("Please confirm", schema)))
                    .await?;
                ToolOutput::text("state-ok")
            }
            Kind::IrMultiple => {
                let mut requests = one("user_name", name_request("What is your name?"));
                requests.insert("greeting".into(), sampling("Generate a greeting", 50));
                requests.insert("client_roots".into(), roots());
                let answers = self.ask(&cx, requests).await?;
                ToolOutput::text(format!(
                    "Received all inputs: name={}, greeting={}, roots={}",
                    answers["user_name"]["content"]["name"],
                    answers["greeting"]["content"]["text"],
                    answers["client_roots"]["roots"]
                ))
            }
            Kind::IrMultiRound => {
                let first = self
                    .ask(
                        &cx,
                        one("step1", name_request("Step 1: What is your name?")),
                    )
                    .await?;
                let schema = json!({"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]});
                let second = self
                    .ask(
                        &cx,
                        one(
                            "step2",
                            elicit("Step 2: What is your favorite color?", schema),
                        ),
                    )
                    .await?;
                ToolOutput::text(format!(
                    "Completed multi-round: name={}, color={}",
                    first["step1"]["content"]["name"], second["step2"]["content"]["color"]
                ))
            }
            Kind::IrCapabilities => {
                let mut requests = InputRequests::new();
                for (key, request) in [
                    ("user_name", name_request("What is your name?")),
                    ("greeting", sampling("Generate a greeting", 50)),
                    ("client_roots", roots()),
                ] {
                    if self.callers.supports(cx.call_id(), &request).is_ok() {
                        requests.insert(key.into(), request);
                    }
                }
                let keys: Vec<String> = requests.keys().cloned().collect();
                if !requests.is_empty() {
                    self.ask(&cx, requests).await?;
                }
                ToolOutput::text(format!("Asked for: {}", keys.join(", ")))
            }
        })
    }
}

impl Tool for Fixture {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, input: Value, cx: ToolContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(self.run(input, cx))
    }
}

fn one(key: &str, request: InputRequest) -> InputRequests {
    let mut requests = InputRequests::new();
    requests.insert(key.into(), request);
    requests
}

fn parse(value: Value) -> InputRequest {
    // The shapes below are fixed; an error here is a bug in this file, shown to the client.
    serde_json::from_value(value).unwrap_or_else(|err| {
        InputRequest::Elicitation(mux::mcp::rmcp::model::ElicitRequest::new(
            mux::mcp::rmcp::model::ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: format!("fixture error: {err}"),
                requested_schema: mux::mcp::rmcp::model::ElicitationSchema::builder()
                    .build_unchecked(),
            },
        ))
    })
}

fn elicit(message: &str, schema: Value) -> InputRequest {
    parse(
        json!({"method": "elicitation/create", "params": {"mode": "form", "message": message, "requestedSchema": schema}}),
    )
}

fn name_request(message: &str) -> InputRequest {
    elicit(
        message,
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
    )
}

fn sampling(text: &str, max_tokens: u32) -> InputRequest {
    parse(json!({"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
        "maxTokens": max_tokens}}))
}

fn roots() -> InputRequest {
    parse(json!({"method": "roots/list", "params": {}}))
}

/// The prompt that asks for input first (`input_required` on `prompts/get`).
const INPUT_PROMPT: &str = "test_input_required_result_prompt";

/// The resources, templates and prompts the suite reads.
struct Fixtures;

impl Catalog for Fixtures {
    fn offers(&self) -> Offers {
        Offers {
            resources: true,
            prompts: true,
            completions: true,
        }
    }

    fn resources(&self) -> Vec<Resource> {
        vec![
            Resource::new("test://static-text", "static-text")
                .with_description("A static text resource")
                .with_mime_type("text/plain"),
            Resource::new("test://static-binary", "static-binary")
                .with_description("A static binary resource")
                .with_mime_type("image/png"),
            Resource::new("test://watched-resource", "watched-resource")
                .with_description("A resource to subscribe to")
                .with_mime_type("text/plain"),
        ]
    }

    fn resource_templates(&self) -> Vec<ResourceTemplate> {
        vec![
            ResourceTemplate::new("test://template/{id}/data", "template")
                .with_description("A templated resource")
                .with_mime_type("application/json"),
        ]
    }

    fn read(&self, uri: &str) -> Result<Vec<ResourceContents>, CatalogError> {
        let contents = match uri {
            "test://static-text" => {
                ResourceContents::text("This is the content of the static text resource.", uri)
                    .with_mime_type("text/plain")
            }
            "test://static-binary" => ResourceContents::blob(PNG, uri).with_mime_type("image/png"),
            "test://watched-resource" => {
                ResourceContents::text("Watched resource content", uri).with_mime_type("text/plain")
            }
            _ => {
                let id = uri
                    .strip_prefix("test://template/")
                    .and_then(|rest| rest.strip_suffix("/data"))
                    .filter(|id| !id.is_empty() && !id.contains('/'))
                    .ok_or_else(|| CatalogError::ResourceNotFound {
                        uri: uri.to_string(),
                    })?;
                let body =
                    json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
                ResourceContents::text(body.to_string(), uri).with_mime_type("application/json")
            }
        };
        Ok(vec![contents])
    }

    fn prompts(&self) -> Vec<Prompt> {
        vec![
            Prompt::new(
                "test_simple_prompt",
                Some("A simple prompt without arguments"),
                None,
            ),
            Prompt::new(
                "test_prompt_with_arguments",
                Some("A prompt with required arguments"),
                Some(vec![
                    PromptArgument::new("arg1")
                        .with_description("First test argument")
                        .with_required(true),
                    PromptArgument::new("arg2")
                        .with_description("Second test argument")
                        .with_required(true),
                ]),
            ),
            Prompt::new(
                "test_prompt_with_embedded_resource",
                Some("A prompt that includes an embedded resource"),
                Some(vec![
                    PromptArgument::new("resourceUri")
                        .with_description("URI of the resource to embed")
                        .with_required(true),
                ]),
            ),
            Prompt::new(
                "test_prompt_with_image",
                Some("A prompt that includes an image"),
                None,
            ),
            Prompt::new(
                INPUT_PROMPT,
                Some("A prompt that asks the client for context first"),
                None,
            ),
        ]
    }

    fn prompt_with_inputs(
        &self,
        name: &str,
        arguments: &Map<String, Value>,
        inputs: &InputResponses,
    ) -> Result<PromptOutcome, CatalogError> {
        if name != INPUT_PROMPT {
            return self.prompt(name, arguments).map(PromptOutcome::Ready);
        }
        let answer = inputs.get("user_context");
        let context = answer
            .filter(|answer| answer["action"] == "accept")
            .and_then(|answer| answer["content"]["context"].as_str());
        Ok(match context {
            Some(context) => {
                PromptOutcome::Ready(GetPromptResult::new(vec![PromptMessage::new_text(
                    Role::User,
                    format!("Use this context: {context}"),
                )]))
            }
            None => PromptOutcome::NeedsInput(one(
                "user_context",
                elicit(
                    "What context should the prompt use?",
                    json!({"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]}),
                ),
            )),
        })
    }

    fn prompt(
        &self,
        name: &str,
        arguments: &Map<String, Value>,
    ) -> Result<GetPromptResult, CatalogError> {
        let arg = |key: &str| {
            arguments
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let messages = match name {
            "test_simple_prompt" => vec![PromptMessage::new_text(
                Role::User,
                "This is a simple prompt for testing.",
            )],
            "test_prompt_with_arguments" => vec![PromptMessage::new_text(
                Role::User,
                format!(
                    "Prompt with arguments: arg1='{}', arg2='{}'",
                    arg("arg1"),
                    arg("arg2")
                ),
            )],
            "test_prompt_with_embedded_resource" => {
                let uri = arg("resourceUri");
                vec![
                    PromptMessage::new_resource(
                        Role::User,
                        uri,
                        Some("text/plain".into()),
                        Some("Embedded resource content for testing.".into()),
                        None,
                        None,
                        None,
                    ),
                    PromptMessage::new_text(
                        Role::User,
                        "Please process the embedded resource above.",
                    ),
                ]
            }
            "test_prompt_with_image" => vec![
                PromptMessage::new(
                    Role::User,
                    mux::mcp::rmcp::model::ContentBlock::image(PNG, "image/png"),
                ),
                PromptMessage::new_text(Role::User, "Please analyze the image above."),
            ],
            _ => {
                return Err(CatalogError::PromptNotFound {
                    name: name.to_string(),
                });
            }
        };
        Ok(GetPromptResult::new(messages))
    }

    fn complete(&self, _request: &CompleteRequestParams) -> CompleteResult {
        CompleteResult::new(CompletionInfo::new(Vec::new()).unwrap_or_default())
    }
}
