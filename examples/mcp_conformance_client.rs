//! The client the official MCP conformance runner (`@modelcontextprotocol/conformance`) drives.
//!
//! ```text
//! MCP_CONFORMANCE_SCENARIO=tools_call mcp_conformance_client http://127.0.0.1:PORT/mcp
//! ```
//!
//! The runner starts a mock server per scenario, passes its URL as the last argument, names the
//! scenario in `MCP_CONFORMANCE_SCENARIO` and, for some scenarios, passes JSON in
//! `MCP_CONFORMANCE_CONTEXT` (tool calls to make, pre-registered OAuth credentials). Everything
//! goes through mux-mcp's public API: a [`Coordinator`] with one Streamable HTTP server, its tool
//! proxies, and [`ClientHandlers`] for sampling and elicitation. `cargo xtask conformance` runs
//! the suite against this binary.
//!
//! The exit status is 0 when the scenario's client side ran to its end, 1 otherwise (the error
//! goes to stderr); the runner judges conformance from what it saw on the wire.

// Sampling is deprecated in 2026-07-28, but the 2025-11-25 scenarios still ask for it.
#![allow(deprecated)]

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use mux::mcp::rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ElicitationAction, Role, SamplingMessage, SamplingMessageContentBlock,
};
use mux::mcp::{
    ClientFeatures, ClientHandlers, ConnectionOptions, Coordinator, CoordinatorConfig,
    HandlerError, JwtAlgorithm, Lifecycle, McpTool, OAuthSpec, PrivateKeyJwt, ReconnectPolicy,
    Secret, ServerSpec,
};
use mux::tool::{BoxFuture, Tool, ToolContext};
use serde_json::{Map, Value, json};

/// The name the one server gets inside the coordinator.
const SERVER: &str = "conformance";
/// The redirect URI this client registers; nothing listens there, [`Handlers::authorize`]
/// reads the redirect instead of following it.
const REDIRECT_URI: &str = "http://localhost:3000/callback";
/// The Client ID Metadata Document URL the suite's authorization servers accept (SEP-991).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";
/// The runner kills a client after 30 s; finish (or fail) before that.
const SCENARIO_LIMIT: Duration = Duration::from_secs(25);

/// What the runner asked for.
struct Scenario {
    name: String,
    url: String,
    context: Value,
    lifecycle: Lifecycle,
}

impl Scenario {
    fn from_env() -> Result<Self, String> {
        let name = std::env::var("MCP_CONFORMANCE_SCENARIO")
            .map_err(|_| "MCP_CONFORMANCE_SCENARIO is not set".to_string())?;
        let url = std::env::args()
            .skip(1)
            .last()
            .ok_or("the server URL must be the last argument")?;
        let context = match std::env::var("MCP_CONFORMANCE_CONTEXT") {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|err| format!("MCP_CONFORMANCE_CONTEXT is not JSON: {err}"))?,
            Err(_) => Value::Null,
        };
        // The runner says which revision's wire to speak: the dated revisions through
        // 2025-11-25 begin with `initialize`, 2026-07-28 is stateless.
        let lifecycle = match std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").as_deref() {
            Ok("2026-07-28") => Lifecycle::Stateless,
            Ok(_) => Lifecycle::Initialize,
            Err(_) => Lifecycle::Auto,
        };
        Ok(Self {
            name,
            url,
            context,
            lifecycle,
        })
    }

    /// The OAuth settings for `auth/*` scenarios: the client-credentials grant for the
    /// `auth/client-credentials-*` scenarios (a secret, or a private key for
    /// `private_key_jwt`); pre-registered credentials
    /// when the context has them, else a metadata document URL with registration as the
    /// fallback.
    fn oauth(&self) -> Option<OAuthSpec> {
        if !self.name.starts_with("auth/") {
            return None;
        }
        let text = |key: &str| self.context.get(key).and_then(Value::as_str);
        if self.name.starts_with("auth/client-credentials")
            && let Some(client_id) = text("client_id")
        {
            if let Some(secret) = text("client_secret") {
                return Some(OAuthSpec::client_credentials(
                    client_id,
                    Secret::new(secret),
                ));
            }
            let algorithm = match text("signing_algorithm") {
                Some("ES384") => JwtAlgorithm::ES384,
                Some("RS256") => JwtAlgorithm::RS256,
                _ => JwtAlgorithm::ES256,
            };
            if let Some(pem) = text("private_key_pem") {
                let key = PrivateKeyJwt::new(Secret::new(pem), algorithm);
                return Some(OAuthSpec::client_credentials_jwt(client_id, key));
            }
        }
        let mut oauth = OAuthSpec::new(REDIRECT_URI)
            .with_client_metadata_url(CLIENT_METADATA_URL)
            .with_client_name("mux-conformance");
        if let Some(client_id) = text("client_id") {
            oauth = oauth.with_client(client_id, text("client_secret").map(Secret::new));
        }
        Some(oauth)
    }

    /// The `toolCalls` the context lists, as (name, arguments).
    fn tool_calls(&self) -> Vec<(String, Value)> {
        self.context
            .get("toolCalls")
            .and_then(Value::as_array)
            .map(|calls| {
                calls
                    .iter()
                    .filter_map(|call| {
                        let name = call.get("name")?.as_str()?.to_string();
                        let args = call.get("arguments").cloned().unwrap_or(json!({}));
                        Some((name, args))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Answers sampling with a canned completion and elicitation with the schema's defaults.
struct Handlers;

impl ClientHandlers for Handlers {
    fn features(&self) -> ClientFeatures {
        ClientFeatures {
            roots: false,
            sampling: true,
            elicitation_form: true,
            elicitation_url: false,
        }
    }

    fn create_message(
        &self,
        _server: &str,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, HandlerError>> {
        let prompt = serde_json::to_value(&params.messages)
            .ok()
            .and_then(|messages| {
                messages
                    .pointer("/0/content/text")
                    .or_else(|| messages.pointer("/0/content/0/text"))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .unwrap_or_default();
        Box::pin(async move {
            let message = SamplingMessage::new(
                Role::Assistant,
                SamplingMessageContentBlock::text(format!("A canned answer to: {prompt}")),
            );
            Ok(CreateMessageResult::new(message, "mux-conformance".into())
                .with_stop_reason("endTurn"))
        })
    }

    /// Plays the user's browser: opens the authorization page, whose server answers at once
    /// with a redirect, and hands that redirect back instead of following it.
    fn authorize(&self, _server: &str, url: &str) -> BoxFuture<'_, Result<String, HandlerError>> {
        let url = url.to_string();
        Box::pin(async move {
            let refused = |what: String| HandlerError(format!("authorization page: {what}"));
            // reqwest here is mux-mcp's: rustls without a process-wide crypto provider, so
            // the client names one. The conformance authorization pages are plain `http://`.
            let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .map_err(|err| refused(err.to_string()))?
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth();
            let client = reqwest::Client::builder()
                .tls_backend_preconfigured(tls)
                .redirect(reqwest::redirect::Policy::none())
                .timeout(Duration::from_secs(10))
                .build()
                .map_err(|err| refused(err.to_string()))?;
            let response = client
                .get(&url)
                .send()
                .await
                .map_err(|err| refused(err.to_string()))?;
            response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|location| location.to_str().ok())
                .map(str::to_string)
                .ok_or_else(|| refused(format!("{} without a redirect", response.status())))
        })
    }

    fn elicit(
        &self,
        _server: &str,
        params: ElicitRequestParams,
    ) -> BoxFuture<'_, Result<ElicitResult, HandlerError>> {
        let defaults = schema_defaults(&params);
        Box::pin(
            async move { Ok(ElicitResult::new(ElicitationAction::Accept).with_content(defaults)) },
        )
    }
}

/// The `default` of every property in a form elicitation's requested schema.
fn schema_defaults(params: &ElicitRequestParams) -> Value {
    let wire = serde_json::to_value(params).unwrap_or(Value::Null);
    let mut content = Map::new();
    if let Some(properties) = wire
        .pointer("/requestedSchema/properties")
        .and_then(Value::as_object)
    {
        for (name, property) in properties {
            if let Some(default) = property.get("default") {
                content.insert(name.clone(), default.clone());
            }
        }
    }
    Value::Object(content)
}

/// Arguments that satisfy a tool's required properties, by type.
fn placeholder_arguments(schema: &Value) -> Value {
    let mut args = Map::new();
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for name in required.iter().filter_map(Value::as_str) {
        let kind = schema
            .pointer(&format!("/properties/{name}/type"))
            .and_then(Value::as_str);
        let value = match kind {
            Some("number") => json!(1.0),
            Some("integer") => json!(1),
            Some("boolean") => json!(true),
            Some("array") => json!([]),
            Some("object") => json!({}),
            _ => json!("test"),
        };
        args.insert(name.to_string(), value);
    }
    Value::Object(args)
}

/// Calls `proxy` and reports the outcome on stderr; a tool error does not end the scenario.
async fn call(proxy: &McpTool, args: Value, seq: usize) -> Result<(), String> {
    let cx = ToolContext::new(format!("conformance-{seq}"));
    match proxy.call(args, cx).await {
        Ok(output) => {
            eprintln!(
                "called {}: {}",
                proxy.remote_name(),
                if output.is_error {
                    "error output"
                } else {
                    "ok"
                }
            );
            Ok(())
        }
        Err(err) => Err(format!("calling {}: {err}", proxy.remote_name())),
    }
}

fn find<'a>(proxies: &'a [Arc<McpTool>], remote: &str) -> Option<&'a Arc<McpTool>> {
    proxies.iter().find(|proxy| proxy.remote_name() == remote)
}

async fn run(coordinator: &Coordinator, scenario: &Scenario) -> Result<(), String> {
    let mut spec = ServerSpec::http(SERVER, scenario.url.clone());
    if let Some(oauth) = scenario.oauth() {
        spec = spec.with_oauth(oauth);
    }
    coordinator.add(spec).map_err(|err| err.to_string())?;
    coordinator
        .connect(SERVER)
        .await
        .map_err(|err| err.to_string())?;
    let proxies = coordinator.proxies();
    match scenario.name.as_str() {
        // Connect and list only.
        "initialize" | "json-schema-ref-no-deref" => Ok(()),
        // Hand the schema mux kept for one tool back to the server, which checks that no
        // JSON Schema 2020-12 keyword was lost on the way into the proxy's ToolSpec.
        "json-schema-2020-12-preservation" => {
            let kept = find(&proxies, "json_schema_2020_12_tool")
                .ok_or("the server lists no `json_schema_2020_12_tool`")?;
            let echo = find(&proxies, "json_schema_echo")
                .ok_or("the server lists no `json_schema_echo`")?;
            let schema = kept.spec().input_schema.clone();
            call(echo, json!({ "schema": schema }), 0).await
        }
        // Call what the context lists, or else every tool.
        _ => {
            let listed = scenario.tool_calls();
            if listed.is_empty() {
                for (seq, proxy) in proxies.iter().enumerate() {
                    let args = placeholder_arguments(&proxy.spec().input_schema);
                    call(proxy, args, seq).await?;
                }
            } else {
                for (seq, (name, args)) in listed.into_iter().enumerate() {
                    let proxy = find(&proxies, &name)
                        .ok_or_else(|| format!("the server lists no tool `{name}`"))?;
                    call(proxy, args, seq).await?;
                }
            }
            Ok(())
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let scenario = match Scenario::from_env() {
        Ok(scenario) => scenario,
        Err(message) => {
            eprintln!("mcp_conformance_client: {message}");
            return ExitCode::FAILURE;
        }
    };
    let config = CoordinatorConfig {
        reconnect: ReconnectPolicy::None,
        health_interval: None,
        tool_timeout: Duration::from_secs(20),
        connection: ConnectionOptions {
            connect_timeout: Duration::from_secs(20),
            lifecycle: scenario.lifecycle,
            ..ConnectionOptions::default()
        },
        ..CoordinatorConfig::default()
    };
    let coordinator = Coordinator::new(config).with_client_handlers(Arc::new(Handlers));
    let outcome = tokio::time::timeout(SCENARIO_LIMIT, run(&coordinator, &scenario)).await;
    coordinator.stop_all().await;
    match outcome {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(message)) => {
            eprintln!("mcp_conformance_client: {}: {message}", scenario.name);
            ExitCode::FAILURE
        }
        Err(_) => {
            eprintln!(
                "mcp_conformance_client: {}: no end within {SCENARIO_LIMIT:?}",
                scenario.name
            );
            ExitCode::FAILURE
        }
    }
}
