//! Server specs and the standard `mcpServers` JSON config, with `${VAR}` expansion.
//!
//! A config entry is read in two steps: serde reads it into a `RawEntry`,
//! whose fields take any JSON value, and `TryFrom` turns that into a [`ServerSpec`],
//! checking each field and naming it in the error.

use serde_json::Value;

use self::entry::read_entry;
pub use self::environment::DEFAULT_INHERITED_ENV;
pub(crate) use self::environment::server_environment;
pub use self::error::ConfigError;
use self::expand::expand_vars;
use self::sandbox::read_sandbox;
pub use self::sandbox::{StdioSandbox, StdioSandboxPolicy};
pub use self::spec::{HttpSpec, ServerSpec, StdioSpec, TransportSpec};
pub use crate::oauth::spec::{
    JwtAlgorithm, OAuthGrant, OAuthSpec, PrivateKeyJwt, SharedTokenStore,
};
pub use mux_tool::Secret;

mod entry;
mod environment;
mod error;
mod expand;
mod fields;
mod oauth_entry;
mod raw;
mod sandbox;
mod spec;
#[cfg(test)]
mod tests;

/// Parses the standard `mcpServers` config (Claude Desktop, Cursor, VS Code), expanding
/// `${VAR}` and `${VAR:-default}` from the process environment.
///
/// Servers come back sorted by name. Besides the standard fields (`command`, `args`, `env`,
/// `cwd`, `type`, `url`, `headers`), mux reads `bearerToken`, `oauth` (`grant`,
/// `redirectUri`, `scopes`, `privateKeyFile`, `signingAlgorithm`, `clientId`, `clientSecret`, `clientMetadataUrl`, `clientName`, and `tokenStore`,
/// a directory where tokens persist across restarts; see [`OAuthSpec`]), `caCertificates` (PEM files of extra CAs for HTTPS, read and checked
/// while parsing; see [`HttpSpec::ca_certificates`]), `toolTimeoutMs`, `connectTimeoutMs`,
/// `disabled` (disabled servers are skipped) and `sandbox` (the OS wall around a stdio server:
/// `true`, `false`, or `{"policy": "readOnly" | "workspaceWrite", "network": bool, "root":
/// path}`; see [`StdioSandbox`]). A `sandbox` beside `mcpServers` is the wall of every stdio
/// server whose entry has none; `"sandbox": false` in an entry opts it out.
///
/// ```
/// let config = r#"{"mcpServers": {
///     "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${HOME:-/tmp}"]},
///     "remote": {"type": "http", "url": "http://127.0.0.1:3001/mcp", "toolTimeoutMs": 5000}
/// }}"#;
/// let servers = mux_mcp::parse_config(config)?;
/// assert_eq!(servers.len(), 2);
/// assert_eq!(servers[0].name, "fs");
/// # Ok::<(), mux_mcp::ConfigError>(())
/// ```
pub fn parse_config(text: &str) -> Result<Vec<ServerSpec>, ConfigError> {
    parse_config_with(text, &|name| std::env::var(name).ok())
}

/// Reads and parses a config file; see [`parse_config`].
pub fn load_config(path: impl AsRef<std::path::Path>) -> Result<Vec<ServerSpec>, ConfigError> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path).map_err(|err| ConfigError::Read {
        path: path.display().to_string(),
        reason: err.to_string(),
    })?;
    parse_config(&text)
}

/// Parses a config, looking variables up with `lookup` instead of the environment.
pub fn parse_config_with(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<ServerSpec>, ConfigError> {
    let root: Value =
        serde_json::from_str(text).map_err(|err| ConfigError::Json(err.to_string()))?;
    let servers = root
        .get("mcpServers")
        .and_then(Value::as_object)
        .ok_or(ConfigError::NoServers)?;
    let default_sandbox = match root.get("sandbox") {
        None => None,
        Some(value) => read_sandbox(
            value,
            &|field, text| {
                expand_vars(&text, lookup).map_err(|problem| ConfigError::Setting {
                    field: field.to_string(),
                    problem: problem.describe(),
                })
            },
            &|field, problem| ConfigError::Setting {
                field: field.to_string(),
                problem,
            },
        )?,
    };
    let mut specs = Vec::with_capacity(servers.len());
    for (name, entry) in servers {
        if let Some(spec) = read_entry(name, entry, lookup, default_sandbox.as_ref())? {
            specs.push(spec);
        }
    }
    specs.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(specs)
}
