//! The agent card served at `/.well-known/agent-card.json`: one JSON-RPC interface speaking
//! A2A 1.0, streaming on, push notifications off, one skill described by the agent.

use mux_orchestrator::Agent;
use serde_json::{Value, json};

use crate::config::A2aConfig;

/// The card's path.
pub const CARD_PATH: &str = "/.well-known/agent-card.json";

/// The JSON-RPC endpoint's path.
pub const RPC_PATH: &str = "/a2a";

/// The A2A version this server speaks.
pub const PROTOCOL_VERSION: &str = "1.0";

/// The card, but for the interface URL (set per request by [`Card::for_url`]).
#[derive(Clone, Debug)]
pub(crate) struct Card {
    template: Value,
}

impl Card {
    pub(crate) fn new(agent: &Agent, config: &A2aConfig) -> Self {
        let name = config
            .name
            .clone()
            .or_else(|| agent.config().name.clone())
            .unwrap_or_else(|| "mux agent".to_owned());
        let description = config
            .description
            .clone()
            .or_else(|| agent.config().system_prompt.clone())
            .filter(|d| !d.trim().is_empty())
            .unwrap_or_else(|| format!("{name}, a mux agent."));
        let mut tools = agent
            .tools_at(agent.root())
            .map(|r| r.names())
            .unwrap_or_default();
        tools.sort();
        let mut card = json!({
            "name": name,
            "description": description,
            "supportedInterfaces": [{
                "url": "",
                "protocolBinding": "JSONRPC",
                "protocolVersion": PROTOCOL_VERSION,
            }],
            "version": config.version,
            "capabilities": {
                "streaming": true,
                "pushNotifications": false,
                "extendedAgentCard": false,
            },
            "defaultInputModes": ["text/plain", "application/json"],
            "defaultOutputModes": ["text/plain"],
            "skills": [{
                "id": "agent",
                "name": name,
                "description": description,
                "tags": tools,
                "inputModes": ["text/plain", "application/json"],
                "outputModes": ["text/plain"],
            }],
        });
        if config.bearer_token.is_some() {
            card["securitySchemes"] = json!({
                "bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}},
            });
            card["securityRequirements"] = json!([{"schemes": {"bearer": {"list": []}}}]);
        }
        Self { template: card }
    }

    /// The card with its interface at `url`.
    pub(crate) fn for_url(&self, url: &str) -> Value {
        let mut card = self.template.clone();
        card["supportedInterfaces"][0]["url"] = Value::from(url);
        card
    }
}
