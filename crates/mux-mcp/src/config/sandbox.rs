//! The OS wall around a stdio server: [`StdioSandbox`], and reading the `sandbox` field (of an
//! entry, or at the top of the config for every stdio server).

use std::path::PathBuf;

use serde_json::{Map, Value};

use super::error::ConfigError;
use super::fields::Fields;
use super::raw::Loose;

/// The OS wall around a stdio server (`"sandbox"` in its `mcpServers` entry, or at the top of
/// the config for every stdio server): mux-tool's sandbox, as around `bash`. Needs the
/// feature `sandbox` and Linux; where the wall cannot be built the server is not started.
///
/// ```
/// use mux_mcp::{ServerSpec, StdioSandbox, StdioSandboxPolicy};
///
/// let spec = ServerSpec::stdio("fs", "mcp-server-filesystem", ["/srv/docs"])
///     .with_sandbox(StdioSandbox::new(StdioSandboxPolicy::ReadOnly).with_root("/srv/docs"));
/// # let _ = spec;
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StdioSandbox {
    /// What the server may write.
    pub policy: StdioSandboxPolicy,
    /// Whether the server may open Internet sockets (off unless set).
    pub network: bool,
    /// The server's root: its working directory, and what it may write under
    /// [`StdioSandboxPolicy::WorkspaceWrite`]. `None`: the entry's `cwd`, else the agent's
    /// current directory. A relative path is relative to the agent's current directory.
    pub root: Option<PathBuf>,
}

impl StdioSandbox {
    /// A wall of `policy`, with no network, rooted at the server's `cwd`.
    pub fn new(policy: StdioSandboxPolicy) -> Self {
        Self {
            policy,
            ..Self::default()
        }
    }

    /// Lets the server open Internet sockets, or not.
    pub fn with_network(mut self, allowed: bool) -> Self {
        self.network = allowed;
        self
    }

    /// Sets the server's root.
    pub fn with_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.root = Some(root.into());
        self
    }
}

/// What a walled stdio server may write. Reading is not restricted by the policy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum StdioSandboxPolicy {
    /// Only its own temp dir (`TMPDIR`).
    ReadOnly,
    /// Its root (except the protected paths, such as `.git` and `.mcp.json`) and its own temp
    /// dir.
    #[default]
    WorkspaceWrite,
}

impl StdioSandboxPolicy {
    /// The name used in configs: `readOnly` or `workspaceWrite`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "readOnly",
            Self::WorkspaceWrite => "workspaceWrite",
        }
    }
}

/// The keys a `sandbox` object may have.
const KEYS: [&str; 3] = ["policy", "network", "root"];

/// Reads a `sandbox` value: `true` (the default wall), `false` or `null` (no wall), or an
/// object with `policy`, `network` and `root`. Problems are reported through `error`, with
/// the field's path (`sandbox`, `sandbox.policy`, …).
pub(super) fn read_sandbox(
    value: &Value,
    expand: &dyn Fn(&str, String) -> Result<String, ConfigError>,
    error: &dyn Fn(&str, String) -> ConfigError,
) -> Result<Option<StdioSandbox>, ConfigError> {
    let object = match value {
        Value::Bool(false) | Value::Null => return Ok(None),
        Value::Bool(true) => return Ok(Some(StdioSandbox::default())),
        Value::Object(object) => object,
        _ => {
            return Err(error(
                "sandbox",
                "must be true, false or an object with `policy`, `network` and `root`".into(),
            ));
        }
    };
    read_object(object, expand, error).map(Some)
}

fn read_object(
    object: &Map<String, Value>,
    expand: &dyn Fn(&str, String) -> Result<String, ConfigError>,
    error: &dyn Fn(&str, String) -> ConfigError,
) -> Result<StdioSandbox, ConfigError> {
    // A misspelt key of a security setting must not pass unnoticed.
    if let Some(key) = object.keys().find(|key| !KEYS.contains(&key.as_str())) {
        return Err(error(
            &format!("sandbox.{key}"),
            "is not a sandbox setting; expected `policy`, `network` or `root`".into(),
        ));
    }
    let policy = match object.get("policy") {
        None | Some(Value::Null) => StdioSandboxPolicy::default(),
        Some(Value::String(policy)) => match policy.as_str() {
            "readOnly" => StdioSandboxPolicy::ReadOnly,
            "workspaceWrite" => StdioSandboxPolicy::WorkspaceWrite,
            "fullAccess" => {
                return Err(error(
                    "sandbox.policy",
                    "is `fullAccess`; a server without a wall is `\"sandbox\": false`".into(),
                ));
            }
            other => {
                return Err(error(
                    "sandbox.policy",
                    format!("is `{other}`; expected `readOnly` or `workspaceWrite`"),
                ));
            }
        },
        Some(_) => {
            return Err(error(
                "sandbox.policy",
                "must be `readOnly` or `workspaceWrite`".into(),
            ));
        }
    };
    let network = match object.get("network") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(network)) => *network,
        Some(_) => return Err(error("sandbox.network", "must be true or false".into())),
    };
    let root = match object.get("root") {
        None | Some(Value::Null) => None,
        Some(Value::String(root)) if root.trim().is_empty() => {
            return Err(error("sandbox.root", "must not be empty".into()));
        }
        Some(Value::String(root)) => Some(PathBuf::from(expand("sandbox.root", root.clone())?)),
        Some(_) => return Err(error("sandbox.root", "must be a path".into())),
    };
    Ok(StdioSandbox {
        policy,
        network,
        root,
    })
}

impl Fields<'_> {
    /// An entry's `sandbox`: `None` when absent (the config's default applies), `Some(None)`
    /// when it turns the wall off.
    pub(super) fn sandbox(
        &self,
        value: Option<Value>,
    ) -> Result<Option<Option<StdioSandbox>>, ConfigError> {
        value
            .map(|value| {
                read_sandbox(
                    &value,
                    &|field, text| self.text(field, Loose::Given(text)),
                    &|field, problem| self.error(field, problem),
                )
            })
            .transpose()
    }
}
