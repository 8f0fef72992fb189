//! `write_file`: creates or replaces a file atomically, creating parent directories.

use std::io::Read;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::atomic::write_atomically;
use super::beneath::Located;
use super::{Sandbox, blocking, text_files};
use crate::{
    Diff, Location, Presentation, Subject, ToolAnnotations, ToolContext, ToolError, ToolKind,
    ToolOutput, TypedTool,
};

/// The largest old file read to show the diff of a write; a larger one shows no diff.
const MAX_OLD_TEXT_BYTES: u64 = 10 * 1024 * 1024;

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
        ToolAnnotations::destructive()
            .with_idempotent(true)
            .with_kind(ToolKind::Edit)
    }

    fn subject(&self, args: &WriteFileArgs) -> Subject {
        Subject::path(&args.path)
    }

    /// The diff the write would make against the file on disk.
    async fn preview(&self, args: WriteFileArgs) -> Option<Presentation> {
        let sandbox = self.sandbox.clone();
        blocking(move || {
            let located = sandbox.locate(&args.path)?;
            if located.is_dir() {
                return Ok(None);
            }
            let shown = sandbox.sandbox_path(&located).display();
            let old = Old::of(&located);
            Ok(written(located.exists(), &shown, &old, &args.content).presentation())
        })
        .await
        .ok()
        .flatten()
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
            // The text before the write, for the diff: the editor's buffer, else the disk.
            let old = match delegate.files().read_text(path.real()).await? {
                Some(text) => Old::Text(text),
                None if !existed => Old::Missing,
                None => {
                    let (sandbox, given) = (self.sandbox.clone(), args.path.clone());
                    blocking(move || Ok(Old::of(&sandbox.locate(&given)?))).await?
                }
            };
            if delegate
                .files()
                .write_text(path.real(), &args.content)
                .await?
            {
                return Ok(written(existed, &path.display(), &old, &args.content));
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
            let old = Old::of(&located);
            located.create_parents()?;
            write_located(&located, args.content.as_bytes())?;
            Ok(written(existed, &shown, &old, &args.content))
        })
        .await
    }
}

/// What the model reads after a write, and the diff a face shows.
fn written(existed: bool, shown: &str, old: &Old, content: &str) -> ToolOutput {
    let verb = if existed { "Overwrote" } else { "Created" };
    let bytes = content.len();
    let mut presentation = Presentation::new().with_location(Location::new(shown));
    match old {
        Old::Missing => presentation = presentation.with_diff(Diff::new(shown, None, content)),
        Old::Text(text) => {
            presentation = presentation.with_diff(Diff::new(shown, Some(text), content));
        }
        Old::Unknown => {}
    }
    ToolOutput::text(format!("{verb} {shown} ({bytes} bytes)"))
        .with_metadata("bytes", json!(bytes))
        .with_metadata("created", json!(!existed))
        .with_presentation(presentation)
}

/// A file's text before a write.
enum Old {
    /// There was no file.
    Missing,
    /// Its text.
    Text(String),
    /// Something the diff cannot show: not a regular file, larger than
    /// [`MAX_OLD_TEXT_BYTES`], not UTF-8, or unreadable.
    Unknown,
}

impl Old {
    /// The current text of the file `located` names.
    fn of(located: &Located) -> Self {
        if !located.exists() {
            return Self::Missing;
        }
        let Ok(Some(file)) = located.open_file() else {
            return Self::Unknown;
        };
        let mut bytes = Vec::new();
        match file.take(MAX_OLD_TEXT_BYTES + 1).read_to_end(&mut bytes) {
            Ok(_) if bytes.len() as u64 <= MAX_OLD_TEXT_BYTES => {
                String::from_utf8(bytes).map_or(Self::Unknown, Self::Text)
            }
            _ => Self::Unknown,
        }
    }
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
