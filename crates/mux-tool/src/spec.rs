//! What a model sees of a tool: its name, description, schemas and annotations.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The longest tool name providers accept.
pub const MAX_NAME_LEN: usize = 64;

/// A tool name checked against `^[A-Za-z0-9_-]{1,64}$`, the pattern every provider accepts.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct ToolName(String);

impl ToolName {
    /// Checks `name` and wraps it.
    ///
    /// ```
    /// use mux_tool::ToolName;
    /// assert!(ToolName::new("read_file").is_ok());
    /// assert!(ToolName::new("read file").is_err());
    /// ```
    pub fn new(name: impl Into<String>) -> Result<Self, SpecError> {
        let name = name.into();
        if name.is_empty() || name.len() > MAX_NAME_LEN {
            let len = name.len();
            return Err(SpecError::NameLength { name, len });
        }
        if let Some(bad) = name
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
        {
            return Err(SpecError::NameCharacter { name, bad });
        }
        Ok(Self(name))
    }

    /// The name as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for ToolName {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(deserializer)?;
        ToolName::new(raw).map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for ToolName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for ToolName {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

/// How a tool's calls show on a face: the icon and wording an editor or a page picks.
///
/// The same list as ACP's tool kinds. A face maps it and nothing else: it never guesses a
/// kind from a tool's name. It is presentation only; policy reads the other annotations.
/// An unknown kind read from JSON is [`Other`](Self::Other).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolKind {
    /// Reads files or data.
    Read,
    /// Changes files or content.
    Edit,
    /// Removes files or data.
    Delete,
    /// Moves or renames files.
    Move,
    /// Searches for information.
    Search,
    /// Runs a command or code.
    Execute,
    /// Retrieves something from outside (the web, a service).
    Fetch,
    /// Thinks or plans, with no effect outside the agent (a todo list, a delegated task).
    Think,
    /// Anything else; the default.
    #[default]
    #[serde(other)]
    Other,
}

impl ToolKind {
    /// The kind's name on the wire: `read`, `edit`, ..., `other`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Edit => "edit",
            Self::Delete => "delete",
            Self::Move => "move",
            Self::Search => "search",
            Self::Execute => "execute",
            Self::Fetch => "fetch",
            Self::Think => "think",
            Self::Other => "other",
        }
    }

    fn is_other(&self) -> bool {
        *self == Self::Other
    }
}

/// Hints about a tool's behaviour, with the same meaning as MCP's tool annotations, and how
/// its calls show on a face ([`ToolKind`]).
///
/// They are hints for policy (the permission layer's plan mode allows only `read_only` tools),
/// not guarantees made by the tool. `kind` is for faces only.
///
/// ```
/// use mux_tool::{ToolAnnotations, ToolKind};
///
/// // The read-only preset shows as a read; say more with `with_kind`.
/// assert_eq!(ToolAnnotations::read_only().kind, ToolKind::Read);
/// let search = ToolAnnotations::read_only().with_kind(ToolKind::Search);
/// assert_eq!(search.kind, ToolKind::Search);
/// // Anything else starts as `other`.
/// assert_eq!(ToolAnnotations::destructive().kind, ToolKind::Other);
/// assert_eq!(ToolAnnotations::default().kind, ToolKind::Other);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// The tool does not modify its environment.
    pub read_only: bool,
    /// The tool may perform destructive updates (delete, overwrite).
    pub destructive: bool,
    /// Calling the tool twice with the same arguments has no additional effect.
    pub idempotent: bool,
    /// The tool talks to an open world of external entities (the web, other people).
    pub open_world: bool,
    /// How its calls show on a face. Default: [`ToolKind::Other`]; the
    /// [`read_only`](Self::read_only) preset sets [`ToolKind::Read`].
    #[serde(skip_serializing_if = "ToolKind::is_other")]
    pub kind: ToolKind,
}

impl ToolAnnotations {
    /// Annotations of a tool that only reads: read-only and idempotent, shown as
    /// [`ToolKind::Read`] (a search, a fetch or a plan says so with [`with_kind`](Self::with_kind)).
    pub fn read_only() -> Self {
        Self {
            read_only: true,
            idempotent: true,
            kind: ToolKind::Read,
            ..Self::default()
        }
    }

    /// Sets how the tool's calls show on a face.
    pub fn with_kind(mut self, kind: ToolKind) -> Self {
        self.kind = kind;
        self
    }

    /// Annotations of a tool that may destroy data.
    pub fn destructive() -> Self {
        Self {
            destructive: true,
            ..Self::default()
        }
    }

    /// Sets `open_world`.
    pub fn with_open_world(mut self, open_world: bool) -> Self {
        self.open_world = open_world;
        self
    }

    /// Sets `idempotent`.
    pub fn with_idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = idempotent;
        self
    }
}

/// The description of a tool that is sent to a model and read by policy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSpec {
    /// The validated tool name.
    pub name: ToolName,
    /// What the tool does, written for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub input_schema: Value,
    /// JSON Schema of the structured output, when the tool returns one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Behaviour hints.
    #[serde(default)]
    pub annotations: ToolAnnotations,
}

impl ToolSpec {
    /// Builds a spec, checking the name and that the input schema describes an object.
    ///
    /// ```
    /// use mux_tool::ToolSpec;
    /// use serde_json::json;
    ///
    /// let spec = ToolSpec::new("echo", "Echoes its text", json!({
    ///     "type": "object",
    ///     "properties": {"text": {"type": "string"}},
    ///     "required": ["text"]
    /// }))?;
    /// assert_eq!(spec.name.as_str(), "echo");
    /// # Ok::<(), mux_tool::SpecError>(())
    /// ```
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> Result<Self, SpecError> {
        let name = ToolName::new(name)?;
        check_object_schema(&name, &input_schema)?;
        Ok(Self {
            name,
            description: description.into(),
            input_schema,
            output_schema: None,
            annotations: ToolAnnotations::default(),
        })
    }

    /// Sets the annotations.
    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = annotations;
        self
    }

    /// Sets the output schema.
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }
}

fn check_object_schema(name: &ToolName, schema: &Value) -> Result<(), SpecError> {
    let Some(object) = schema.as_object() else {
        return Err(SpecError::SchemaNotObject {
            tool: name.to_string(),
        });
    };
    match object.get("type") {
        None => Ok(()),
        Some(Value::String(t)) if t == "object" => Ok(()),
        Some(other) => Err(SpecError::SchemaType {
            tool: name.to_string(),
            found: other.to_string(),
        }),
    }
}

/// A tool spec that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// The name is empty or longer than [`MAX_NAME_LEN`] bytes.
    #[error("tool name `{name}` is {len} bytes long; it must be 1 to 64")]
    NameLength {
        /// The rejected name.
        name: String,
        /// Its length in bytes.
        len: usize,
    },
    /// The name holds a character outside `[A-Za-z0-9_-]`.
    #[error(
        "tool name `{name}` contains {bad:?}; only ASCII letters, digits, `_` and `-` are allowed"
    )]
    NameCharacter {
        /// The rejected name.
        name: String,
        /// The first offending character.
        bad: char,
    },
    /// The input schema is not a JSON object.
    #[error("input schema of tool `{tool}` must be a JSON object")]
    SchemaNotObject {
        /// The tool.
        tool: String,
    },
    /// The input schema's `type` is not `"object"`.
    #[error("input schema of tool `{tool}` must have type \"object\", found {found}")]
    SchemaType {
        /// The tool.
        tool: String,
        /// The `type` value found.
        found: String,
    },
    /// The input schema is not a valid JSON Schema.
    #[error("input schema of tool `{tool}` is not a valid JSON Schema: {reason}")]
    InvalidSchema {
        /// The tool.
        tool: String,
        /// What the schema compiler reported.
        reason: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_follow_the_provider_pattern() {
        for ok in ["a", "read_file", "mcp__fs__read-file", &"x".repeat(64)] {
            assert!(ToolName::new(ok).is_ok(), "{ok}");
        }
        assert!(matches!(
            ToolName::new(""),
            Err(SpecError::NameLength { len: 0, .. })
        ));
        assert!(matches!(
            ToolName::new("x".repeat(65)),
            Err(SpecError::NameLength { len: 65, .. })
        ));
        assert!(matches!(
            ToolName::new("a.b"),
            Err(SpecError::NameCharacter { bad: '.', .. })
        ));
        assert!(matches!(
            ToolName::new("é"),
            Err(SpecError::NameCharacter { .. })
        ));
    }

    #[test]
    fn deserializing_a_bad_name_fails() {
        let err = serde_json::from_value::<ToolName>(json!("no spaces")).unwrap_err();
        assert!(err.to_string().contains("no spaces"));
    }

    #[test]
    fn kinds_read_from_json_default_to_other() {
        let old: ToolAnnotations = serde_json::from_value(json!({"readOnly": true})).unwrap();
        assert_eq!(old.kind, ToolKind::Other, "annotations from before kinds");
        let edit: ToolAnnotations = serde_json::from_value(json!({"kind": "edit"})).unwrap();
        assert_eq!(edit.kind, ToolKind::Edit);
        let unknown: ToolAnnotations = serde_json::from_value(json!({"kind": "teleport"})).unwrap();
        assert_eq!(unknown.kind, ToolKind::Other);
        // `other` is left out, so specs without a kind serialize as before.
        let wire = serde_json::to_value(ToolAnnotations::destructive()).unwrap();
        assert!(wire.get("kind").is_none(), "{wire}");
        for kind in [ToolKind::Read, ToolKind::Move, ToolKind::Think] {
            assert_eq!(serde_json::to_value(kind).unwrap(), json!(kind.as_str()));
        }
    }

    #[test]
    fn input_schema_must_describe_an_object() {
        assert!(ToolSpec::new("t", "", json!({"type": "object"})).is_ok());
        assert!(ToolSpec::new("t", "", json!({})).is_ok());
        assert!(matches!(
            ToolSpec::new("t", "", json!(true)),
            Err(SpecError::SchemaNotObject { .. })
        ));
        assert!(matches!(
            ToolSpec::new("t", "", json!({"type": "string"})),
            Err(SpecError::SchemaType { .. })
        ));
    }
}
