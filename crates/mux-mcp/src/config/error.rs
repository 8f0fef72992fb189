//! Why a config cannot be used.

/// A config file that cannot be used. Every variant names the server and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The text is not JSON.
    #[error("MCP config is not valid JSON: {0}")]
    Json(String),
    /// The top level is not an object with an `mcpServers` object.
    #[error("MCP config must be an object with an `mcpServers` object")]
    NoServers,
    /// A field has the wrong type or value.
    #[error("MCP server `{server}`: field `{field}` {problem}")]
    Field {
        /// The server.
        server: String,
        /// The field, as a path such as `env.TOKEN`.
        field: String,
        /// What is wrong.
        problem: String,
    },
    /// A field at the top of the config (beside `mcpServers`, such as `sandbox`) has the
    /// wrong type or value.
    #[error("MCP config: field `{field}` {problem}")]
    Setting {
        /// The field, as a path such as `sandbox.policy`.
        field: String,
        /// What is wrong.
        problem: String,
    },
    /// A `${VAR}` reference names a variable that is not set and has no default.
    #[error("MCP server `{server}`: field `{field}` uses `${{{var}}}`, which is not set")]
    UnsetVariable {
        /// The server.
        server: String,
        /// The field.
        field: String,
        /// The variable.
        var: String,
    },
    /// The file could not be read.
    #[error("cannot read MCP config {path}: {reason}")]
    Read {
        /// The path.
        path: String,
        /// The I/O error.
        reason: String,
    },
}
