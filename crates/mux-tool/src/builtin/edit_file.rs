//! `edit_file`: exact string replacement, unique unless `replace_all` is set.

use std::io::Read;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::beneath::Located;
use super::write_file::write_located;
use super::{Sandbox, blocking, text_files};
use crate::{
    Diff, Location, Presentation, Subject, ToolAnnotations, ToolContext, ToolError, ToolKind,
    ToolOutput, TypedTool,
};

/// The largest file `edit_file` loads, by default.
const DEFAULT_MAX_EDIT_BYTES: u64 = 10 * 1024 * 1024;

/// The arguments of `edit_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditFileArgs {
    /// The file to edit, relative to the root.
    pub path: String,
    /// The exact text to replace, including whitespace and indentation.
    pub old_string: String,
    /// The text to put in its place.
    pub new_string: String,
    /// Replace every occurrence instead of requiring exactly one. Default: false.
    #[serde(default)]
    pub replace_all: bool,
}

/// Replaces an exact string in a text file and writes the file atomically.
///
/// `old_string` must occur exactly once unless `replace_all` is set; "not found" and "found N
/// times" are errors that say so, and the file is left untouched.
#[derive(Clone, Debug)]
pub struct EditFile {
    sandbox: Sandbox,
    max_bytes: u64,
}

impl EditFile {
    /// `edit_file` confined to `sandbox`.
    pub fn new(sandbox: Sandbox) -> Self {
        Self {
            sandbox,
            max_bytes: DEFAULT_MAX_EDIT_BYTES,
        }
    }

    /// Refuses files larger than `bytes`.
    pub fn max_bytes(mut self, bytes: u64) -> Self {
        self.max_bytes = bytes;
        self
    }
}

impl TypedTool for EditFile {
    type Args = EditFileArgs;
    const NAME: &'static str = "edit_file";

    fn description(&self) -> String {
        "Replaces exact text in a file under the workspace root. old_string must match the file \
         exactly (whitespace included) and occur once, unless replace_all is true. Read the file \
         first; copy the text without the line-number prefix."
            .into()
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::destructive().with_kind(ToolKind::Edit)
    }

    fn subject(&self, args: &EditFileArgs) -> Subject {
        Subject::path(&args.path)
    }

    /// The diff the edit would make, read from the disk; nothing when it would fail.
    async fn preview(&self, args: EditFileArgs) -> Option<Presentation> {
        let tool = self.clone();
        blocking(move || {
            let (_, shown, content) = tool.read(&args)?;
            let (updated, found) = replace(&args, &content, &shown)?;
            Ok(replaced(found, &shown, &content, &updated).presentation())
        })
        .await
        .ok()
        .flatten()
    }

    async fn call(&self, args: EditFileArgs, cx: ToolContext) -> Result<ToolOutput, ToolError> {
        if let Some(delegate) = text_files::delegated(&cx) {
            let path = text_files::resolve(&self.sandbox, &args.path).await?;
            if let Some(content) = delegate.files().read_text(path.real()).await? {
                let shown = path.display();
                if content.len() as u64 > self.max_bytes {
                    return Err(ToolError::failed(format!(
                        "{shown} is {} bytes, more than the {} bytes edit_file loads",
                        content.len(),
                        self.max_bytes
                    )));
                }
                let (updated, found) = replace(&args, &content, &shown)?;
                if delegate.files().write_text(path.real(), &updated).await? {
                    return Ok(replaced(found, &shown, &content, &updated));
                }
            }
        }
        let tool = self.clone();
        blocking(move || tool.edit(&args)).await
    }
}

/// Checks the arguments, before any file is read.
fn check_args(args: &EditFileArgs) -> Result<(), ToolError> {
    if args.old_string.is_empty() {
        return Err(ToolError::InvalidArguments(
            "old_string is empty; to create or replace a whole file use write_file".into(),
        ));
    }
    if args.old_string == args.new_string {
        return Err(ToolError::InvalidArguments(
            "old_string and new_string are the same; there is nothing to change".into(),
        ));
    }
    Ok(())
}

/// `content` (the file `shown`) with the replacement made, and how many occurrences it
/// replaced.
fn replace(args: &EditFileArgs, content: &str, shown: &str) -> Result<(String, usize), ToolError> {
    check_args(args)?;
    let found = content.matches(args.old_string.as_str()).count();
    match found {
        0 => {
            return Err(ToolError::failed(format!(
                "old_string was not found in {shown}; read the file and copy the text \
                 exactly, whitespace included"
            )));
        }
        1 => {}
        n if !args.replace_all => {
            return Err(ToolError::failed(format!(
                "old_string was found {n} times in {shown}; include more surrounding text \
                 to make it unique, or set replace_all to replace every occurrence"
            )));
        }
        _ => {}
    }
    Ok((
        content.replace(args.old_string.as_str(), &args.new_string),
        found,
    ))
}

/// What the model reads after an edit, and the diff a face shows.
fn replaced(found: usize, shown: &str, old: &str, new: &str) -> ToolOutput {
    let noun = if found == 1 {
        "occurrence"
    } else {
        "occurrences"
    };
    let diff = Diff::new(shown, Some(old), new);
    // The first changed line is the first line of the diff past its context.
    let changed = old
        .lines()
        .zip(new.lines())
        .take_while(|(a, b)| a == b)
        .count();
    let line = u32::try_from(changed + 1).unwrap_or(u32::MAX);
    ToolOutput::text(format!("Replaced {found} {noun} in {shown}"))
        .with_metadata("replacements", json!(found))
        .with_presentation(
            Presentation::new()
                .with_location(Location::new(shown).with_line(line))
                .with_diff(diff),
        )
}

impl EditFile {
    fn edit(&self, args: &EditFileArgs) -> Result<ToolOutput, ToolError> {
        let (located, shown, content) = self.read(args)?;
        let (updated, found) = replace(args, &content, &shown)?;
        write_located(&located, updated.as_bytes())?;
        Ok(replaced(found, &shown, &content, &updated))
    }

    /// The file an edit names, as shown to the model, and its text.
    fn read(&self, args: &EditFileArgs) -> Result<(Located, String, String), ToolError> {
        check_args(args)?;
        let located = self.sandbox.locate_existing(&args.path)?;
        let shown = self.sandbox.sandbox_path(&located).display();
        let Some(mut file) = located.open_file()? else {
            return Err(ToolError::failed(format!("{shown} is not a regular file")));
        };
        let size = file.metadata()?.len();
        if size > self.max_bytes {
            return Err(ToolError::failed(format!(
                "{shown} is {size} bytes, more than the {} bytes edit_file loads",
                self.max_bytes
            )));
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        let content = String::from_utf8(bytes).map_err(|_| {
            ToolError::failed(format!(
                "{shown} is not UTF-8 text; edit_file edits text only"
            ))
        })?;
        Ok((located, shown, content))
    }
}
