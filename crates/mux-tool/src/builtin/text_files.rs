//! Where `read_file`, `write_file` and `edit_file` read and write text when it is not the
//! local disk: an editor's buffers, say, so unsaved changes count (the ACP face delegates to
//! the editor's `fs/read_text_file` and `fs/write_text_file` this way).
//!
//! Insert a [`DelegatedFiles`] in the [`Resources`](crate::Resources) the tools are called
//! with. The path is resolved against the tool's [`Sandbox`] first, so the root and the
//! permission rules apply as they do on disk; only the read or write itself is delegated.
//! Without a `DelegatedFiles` the tools use the disk.

use std::path::Path;
use std::sync::Arc;

use super::{Sandbox, SandboxPath, blocking};
use crate::{BoxFuture, ToolContext, ToolError};

/// Text files somewhere other than the local disk.
pub trait TextFiles: Send + Sync + 'static {
    /// The text of `path` (absolute, inside the sandbox root), or `None` to read the disk.
    fn read_text<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Result<Option<String>, ToolError>>;

    /// Writes `content` to `path` (absolute, inside the sandbox root); `false` to write the
    /// disk instead.
    fn write_text<'a>(
        &'a self,
        path: &'a Path,
        content: &'a str,
    ) -> BoxFuture<'a, Result<bool, ToolError>>;
}

/// The resource that sends the file tools' reads and writes to a [`TextFiles`].
#[derive(Clone)]
pub struct DelegatedFiles {
    files: Arc<dyn TextFiles>,
}

impl std::fmt::Debug for DelegatedFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DelegatedFiles").finish_non_exhaustive()
    }
}

impl DelegatedFiles {
    /// Delegates to `files`.
    pub fn new(files: impl TextFiles) -> Self {
        Self {
            files: Arc::new(files),
        }
    }

    /// The delegate.
    pub fn files(&self) -> &dyn TextFiles {
        &*self.files
    }
}

/// The call's delegate, if its resources have one.
pub(crate) fn delegated(cx: &ToolContext) -> Option<Arc<DelegatedFiles>> {
    cx.resources().get::<DelegatedFiles>()
}

/// `path` checked against `sandbox` (off the async thread: it looks at the disk).
pub(crate) async fn resolve(sandbox: &Sandbox, path: &str) -> Result<SandboxPath, ToolError> {
    let (sandbox, path) = (sandbox.clone(), path.to_owned());
    blocking(move || Ok(sandbox.resolve(&path)?)).await
}
