//! What a tool call touches, as seen by the permission layer.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// What a call acts on. The permission layer matches rule specifiers against it, so any tool
/// with a shell, path or URL subject gets the same matching as the built-in ones.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Subject {
    /// Nothing the permission layer can match beyond the tool name.
    #[default]
    None,
    /// A shell command line.
    Command(String),
    /// A file-system path, as the model gave it.
    Path(PathBuf),
    /// A URL.
    Url(String),
}

impl Subject {
    /// A command subject.
    pub fn command(command: impl Into<String>) -> Self {
        Self::Command(command.into())
    }

    /// A path subject.
    pub fn path(path: impl Into<PathBuf>) -> Self {
        Self::Path(path.into())
    }

    /// A URL subject.
    pub fn url(url: impl Into<String>) -> Self {
        Self::Url(url.into())
    }
}
