//! The built-in tools, confined to a [`Sandbox`] root (feature `builtin`; `web_fetch` needs
//! the feature `web`).
//!
//! | tool | arguments | annotations | kind | subject |
//! |---|---|---|---|---|
//! | [`read_file`](ReadFile) | `path`, `offset`, `limit` | read-only | read | path |
//! | [`write_file`](WriteFile) | `path`, `content` | destructive | edit | path |
//! | [`edit_file`](EditFile) | `path`, `old_string`, `new_string`, `replace_all` | destructive | edit | path |
//! | [`list_dir`](ListDir) | `path` | read-only | search | path |
//! | [`glob`](Glob) | `pattern`, `path` | read-only | search | path |
//! | [`grep`](Grep) | `pattern`, `path`, `glob`, `ignore_case` | read-only | search | path |
//! | [`bash`](Bash) | `command`, `timeout_ms` | destructive | execute | command |
//! | [`todo_write`](TodoWrite) | `todos` | read-only (its own list only) | think | none |
//! | `web_fetch` (feature `web`) | `url` | read-only, open world | fetch | URL |
//!
//! Their outputs present what a face shows ([`Presentation`](crate::Presentation)): the file
//! or directory they looked at, the diff of a write or an edit, the todo list.
//!
//! Every path is checked against the root on every call (see [`Sandbox`]): a `..` that climbs
//! above the root, `~`, absolute paths outside the root and symlinks that lead out are refused
//! with an error that says why. Files are then opened, created and renamed relative to handles
//! of the checked directories, so a directory swapped for a symlink meanwhile cannot lead a
//! call outside the root.
//!
//! ```
//! use mux_tool::builtin::{self, Sandbox};
//! use mux_tool::{ApprovalPolicy, CallScope, Executor, Registry, ToolCall};
//! use serde_json::json;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//! let dir = tempfile::tempdir()?;
//! let registry = Registry::new();
//! builtin::register(&registry, &Sandbox::new(dir.path())?)?;
//! let executor = Executor::builder(registry)
//!     .approval_policy(ApprovalPolicy::Never)
//!     .build();
//!
//! let write = ToolCall::new("1", "write_file", json!({"path": "src/hello.txt", "content": "hi\n"}));
//! assert!(!executor.execute(write, &CallScope::default()).await.output().is_error);
//!
//! let read = ToolCall::new("2", "read_file", json!({"path": "src/hello.txt"}));
//! assert_eq!(executor.execute(read, &CallScope::default()).await.output().to_text(), "     1\thi");
//!
//! let escape = ToolCall::new("3", "read_file", json!({"path": "../secret"}));
//! let refused = executor.execute(escape, &CallScope::default()).await.output();
//! assert!(refused.is_error && refused.to_text().contains("`..`"));
//!
//! let inside = ToolCall::new("4", "read_file", json!({"path": "src/../src/hello.txt"}));
//! assert_eq!(executor.execute(inside, &CallScope::default()).await.output().to_text(), "     1\thi");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod atomic;
mod bash;
mod beneath;
mod checked_walk;
mod edit_file;
mod egress;
mod environment;
mod glob;
mod grep;
mod list_dir;
mod offload;
mod os_sandbox;
#[cfg(feature = "web")]
mod public_dns;
mod read_file;
mod sandbox;
mod sandbox_error;
mod text;
mod text_files;
mod todo_write;
mod walk;
#[cfg(feature = "web")]
mod web_fetch;
mod write_file;

use std::sync::Arc;

pub use bash::{Bash, BashArgs};
pub use edit_file::{EditFile, EditFileArgs};
pub use egress::{
    CallDomainAskers, DomainAnswer, DomainAsker, DomainAskers, DomainRequest, DomainRuleError,
    NetworkPolicy,
};
pub use environment::DEFAULT_KEPT_ENV;
pub use glob::{Glob, GlobArgs};
pub use grep::{Grep, GrepArgs};
pub use list_dir::{ListDir, ListDirArgs};
pub(crate) use offload::blocking;
#[doc(hidden)]
pub use os_sandbox::set_placeholder_linger;
pub use os_sandbox::{
    FilePolicy, OsSandboxError, PROTECTED_NAMES, SandboxPolicy, Wall, WalledChild, seal,
};
#[cfg(target_os = "linux")]
pub use os_sandbox::{SPARE_MAX_BYTES, SPARE_MAX_STRINGS, SealedChild, SealedOutput, SealedSpare};
pub use read_file::{ReadFile, ReadFileArgs};
pub use sandbox::{Sandbox, SandboxPath};
pub use sandbox_error::SandboxError;
pub use text_files::{DelegatedFiles, TextFiles};
pub use todo_write::{TodoCounts, TodoList, TodoWrite, TodoWriteArgs};
// The todo item and its status live beside the presentation that shows them.
pub use crate::{TodoItem, TodoStatus};
#[cfg(feature = "web")]
pub use web_fetch::{WebFetch, WebFetchArgs};
pub use write_file::{WriteFile, WriteFileArgs};

use crate::{Registry, RegistryError, SpecError, Tool, Typed, TypedTool};

/// Why the built-in tools could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuiltinError {
    /// A tool could not be registered (a name already taken, say).
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// A tool's spec is unusable.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// The HTTP client for `web_fetch` could not be built.
    #[cfg(feature = "web")]
    #[error("cannot build the HTTP client for web_fetch: {0}")]
    HttpClient(#[source] reqwest::Error),
}

/// Every built-in tool with default settings, confined to `sandbox`. Includes `web_fetch`
/// when the feature `web` is on.
pub fn tools(sandbox: &Sandbox) -> Result<Vec<Arc<dyn Tool>>, BuiltinError> {
    fn typed<T: TypedTool>(tool: T) -> Result<Arc<dyn Tool>, BuiltinError> {
        Ok(Arc::new(Typed::new(tool)?))
    }
    let mut tools = Vec::with_capacity(9);
    tools.extend([
        typed(ReadFile::new(sandbox.clone()))?,
        typed(WriteFile::new(sandbox.clone()))?,
        typed(EditFile::new(sandbox.clone()))?,
        typed(ListDir::new(sandbox.clone()))?,
        typed(Glob::new(sandbox.clone()))?,
        typed(Grep::new(sandbox.clone()))?,
        typed(Bash::new(sandbox.clone()))?,
        typed(TodoWrite)?,
    ]);
    #[cfg(feature = "web")]
    tools.push(typed(WebFetch::new().map_err(BuiltinError::HttpClient)?)?);
    Ok(tools)
}

/// Registers every built-in tool (see [`tools`]) in `registry`.
pub fn register(registry: &Registry, sandbox: &Sandbox) -> Result<(), BuiltinError> {
    for tool in tools(sandbox)? {
        registry.register_shared(tool)?;
    }
    Ok(())
}
