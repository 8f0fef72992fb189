//! Filters over MCP tools (by server, by server tool, or any mux `ToolFilter`, combined with
//! and/or/not) and named modes that select tool sets.

use std::collections::BTreeMap;

use mux_tool::{Tool, ToolFilter};
use serde::{Deserialize, Serialize};

use crate::McpTool;

/// Which MCP tools to offer. Serializes like mux-tool's `ToolFilter`, so modes can live in a
/// config file.
///
/// ```
/// use mux_mcp::McpFilter;
/// use mux_tool::ToolFilter;
///
/// // Everything from `files` that is read-only, plus `git`'s `git_status`.
/// let filter = McpFilter::Or(vec![
///     McpFilter::And(vec![McpFilter::Server("files".into()), McpFilter::Spec(ToolFilter::ReadOnly)]),
///     McpFilter::Tool { server: "git".into(), tool: "git_status".into() },
/// ]);
/// let json = serde_json::to_string(&filter)?;
/// assert_eq!(serde_json::from_str::<McpFilter>(&json)?, filter);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum McpFilter {
    /// Every tool.
    #[default]
    All,
    /// Every tool of this server (matched by server name, not by name prefix).
    Server(String),
    /// One tool, by its name on its server.
    Tool {
        /// The server.
        server: String,
        /// The tool's name on the server.
        tool: String,
    },
    /// Any mux filter over the qualified spec: globs over `mcp__…` names, annotations, names.
    Spec(ToolFilter),
    /// Tools every inner filter accepts.
    And(Vec<McpFilter>),
    /// Tools some inner filter accepts.
    Or(Vec<McpFilter>),
    /// Tools the inner filter rejects.
    Not(Box<McpFilter>),
}

impl McpFilter {
    /// Whether `tool` passes.
    pub fn matches(&self, tool: &McpTool) -> bool {
        match self {
            Self::All => true,
            Self::Server(server) => tool.server() == server,
            Self::Tool { server, tool: name } => {
                tool.server() == server && tool.remote_name() == name
            }
            Self::Spec(filter) => filter.matches(tool.spec()),
            Self::And(inner) => inner.iter().all(|f| f.matches(tool)),
            Self::Or(inner) => inner.iter().any(|f| f.matches(tool)),
            Self::Not(inner) => !inner.matches(tool),
        }
    }
}

/// A mode name that is not defined.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no MCP tool mode named `{mode}`; defined modes: {known}")]
pub struct UnknownMode {
    /// The name asked for.
    pub mode: String,
    /// The defined names, comma-separated.
    pub known: String,
}

/// Named tool sets: `"review" => read-only tools`, `"git" => the git server`, and so on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ToolModes {
    modes: BTreeMap<String, McpFilter>,
}

impl ToolModes {
    /// No modes.
    pub fn new() -> Self {
        Self::default()
    }

    /// Defines (or redefines) mode `name`.
    pub fn with(mut self, name: impl Into<String>, filter: McpFilter) -> Self {
        self.modes.insert(name.into(), filter);
        self
    }

    /// The filter of mode `name`.
    pub fn get(&self, name: &str) -> Result<&McpFilter, UnknownMode> {
        self.modes.get(name).ok_or_else(|| UnknownMode {
            mode: name.to_string(),
            known: self.modes.keys().cloned().collect::<Vec<_>>().join(", "),
        })
    }

    /// The defined mode names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.modes.keys().map(String::as_str).collect()
    }
}
