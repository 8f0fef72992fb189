//! `write_file`: creates or replaces a file atomically, creating parent directories.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::atomic::write_atomically;
use super::beneath::Located;
use super::{Sandbox, blocking, text_files};
use crate::{Subject, ToolAnnotations, ToolContext, ToolError, ToolOutput, TypedTool};

/// The arguments of `write_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFileArgs {
    /// The file to write, relative to the root. Missing parent directories are created.
    pub path: String,
    /// The complete new content of the file.
    pub content: String,
}

/// Writes a whole file: the content goes to a temporary file in the same directory, which is
/// then renamed over the target, so readers see the old file or the new one, never half.
#[derive(Clone, Debug)]
pub struct WriteFile {
    sandbox: Sandbox,
}

impl WriteFile {
    /// `write_file` confined to `sandbox`.
    pub fn new(sandbox: Sandbox) -> Self {
        Self { sandbox }
    }
}

impl TypedTool for WriteFile {
    type Args = WriteFileArgs;
    const NAME: &'static str = "write_file";

    fn description(&self) -> String {
        "Writes a file under the workspace root, replacing it if it exists and creating missing \
         parent directories. Give the complete content; to change part of a file use edit_file."
            .into()
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::destructive().with_idempotent(true)
    }

    fn subject(&self, args: &WriteFileArgs) -> Subject {
        Subject::path(&args.path)
    }

    async fn call(&self, args: WriteFileArgs, cx: ToolContext) -> Result<ToolOutput, ToolError> {
        if let Some(delegate) = text_files::delegated(&cx) {
            let path = text_files::resolve(&self.sandbox, &args.path).await?;
            let existed = path.real().exists();
            if path.real().is_dir() {
                return Err(ToolError::failed(format!(
                    "{} is a directory; give a file path",
                    path.display()
                )));
            }
            if delegate
                .files()
                .write_text(path.real(), &args.content)
                .await?
            {
                return Ok(written(existed, &path.display(), args.content.len()));
            }
        }
        let sandbox = self.sandbox.clone();
        blocking(move || {
            let mut located = sandbox.locate(&args.path)?;
            let shown = sandbox.sandbox_path(&located).display();
            if located.is_dir() {
                return Err(ToolError::failed(format!(
                    "{shown} is a directory; give a file path"
                )));
            }
            let existed = located.exists();
            located.create_parents()?;
            write_located(&located, args.content.as_bytes())?;
            Ok(written(existed, &shown, args.content.len()))
        })
        .await
    }
}

/// What the model reads after a write.
fn written(existed: bool, shown: &str, bytes: usize) -> ToolOutput {
    let verb = if existed { "Overwrote" } else { "Created" };
    ToolOutput::text(format!("{verb} {shown} ({bytes} bytes)"))
        .with_metadata("bytes", json!(bytes))
        .with_metadata("created", json!(!existed))
}

/// Writes `bytes` to the file `located` names, atomically, beneath the handle of its
/// directory (see [`write_atomically`]).
pub(crate) fn write_located(located: &Located, bytes: &[u8]) -> Result<(), ToolError> {
    let name = located
        .name()
        .ok_or_else(|| ToolError::failed("the path names a directory, not a file"))?;
    write_atomically(located.dir(), name, bytes)?;
    Ok(())
}
