//! `read_file`: a range of lines of a text file, numbered, within a size cap.

use std::io::{BufRead, BufReader};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::text::decode_head;
use super::{Sandbox, blocking, text_files};
use crate::utf8_cut::floor_char_boundary;
use crate::{
    Location, Presentation, Subject, ToolAnnotations, ToolContext, ToolError, ToolOutput, TypedTool,
};

/// How many lines are read when the call gives no `limit`.
const DEFAULT_LINE_LIMIT: usize = 2000;
/// How many bytes of output a call returns at most, by default.
const DEFAULT_MAX_BYTES: usize = 100_000;
/// How many bytes of one line are shown, by default; the rest is cut with a marker.
const DEFAULT_MAX_LINE_BYTES: usize = 2000;
/// How often (in lines) a long read checks for cancellation.
const CANCEL_CHECK_LINES: usize = 4096;
/// How many leading bytes are checked for a NUL byte to tell binary files.
const BINARY_SNIFF_BYTES: usize = 8192;

/// The arguments of `read_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileArgs {
    /// The file to read, relative to the root.
    pub path: String,
    /// The 1-based line number to start at. Default: 1.
    #[schemars(range(min = 1))]
    pub offset: Option<u64>,
    /// How many lines to read at most. Default: 2000.
    #[schemars(range(min = 1))]
    pub limit: Option<u64>,
}

/// Reads a text file as numbered lines (`cat -n` style), from `offset` for `limit` lines.
///
/// Binary files (a NUL byte in the first 8 KiB) are refused; invalid UTF-8 is shown as U+FFFD;
/// long lines and the whole output are cut on character boundaries with a visible marker that
/// says which `offset` continues.
#[derive(Clone, Debug)]
pub struct ReadFile {
    sandbox: Sandbox,
    max_bytes: usize,
    max_line_bytes: usize,
}

impl ReadFile {
    /// `read_file` confined to `sandbox`, with the default caps.
    pub fn new(sandbox: Sandbox) -> Self {
        Self {
            sandbox,
            max_bytes: DEFAULT_MAX_BYTES,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
        }
    }

    /// Caps the output of one call at `bytes`.
    pub fn max_bytes(mut self, bytes: usize) -> Self {
        self.max_bytes = bytes;
        self
    }

    /// Caps each shown line at `bytes`.
    pub fn max_line_bytes(mut self, bytes: usize) -> Self {
        self.max_line_bytes = bytes;
        self
    }
}

impl TypedTool for ReadFile {
    type Args = ReadFileArgs;
    const NAME: &'static str = "read_file";

    fn description(&self) -> String {
        "Reads a text file under the workspace root. Returns numbered lines (line number, tab, \
         text). Use offset (1-based line) and limit (line count) to read part of a large file."
            .into()
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only()
    }

    fn subject(&self, args: &ReadFileArgs) -> Subject {
        Subject::path(&args.path)
    }

    async fn call(&self, args: ReadFileArgs, cx: ToolContext) -> Result<ToolOutput, ToolError> {
        let tool = self.clone();
        let cancel = cx.cancellation().clone();
        if let Some(delegate) = text_files::delegated(&cx) {
            let path = text_files::resolve(&self.sandbox, &args.path).await?;
            if let Some(text) = delegate.files().read_text(path.real()).await? {
                let shown = path.display();
                let reader = std::io::Cursor::new(text.into_bytes());
                return blocking(move || tool.numbered(&args, &shown, reader, &cancel)).await;
            }
        }
        blocking(move || tool.read(&args, &cancel)).await
    }
}

impl ReadFile {
    fn read(
        &self,
        args: &ReadFileArgs,
        cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        let located = self.sandbox.locate_existing(&args.path)?;
        let shown = self.sandbox.sandbox_path(&located).display();
        if located.is_dir() {
            return Err(ToolError::failed(format!(
                "{shown} is a directory; use list_dir to see what it holds"
            )));
        }
        let Some(file) = located.open_file()? else {
            // A FIFO or device could block the read forever.
            return Err(ToolError::failed(format!(
                "{shown} is not a regular file (a pipe, socket or device); read_file reads files only"
            )));
        };
        let reader = BufReader::with_capacity(BINARY_SNIFF_BYTES, file);
        self.numbered(args, &shown, reader, cancel)
    }

    /// The lines of `reader` (the file `shown`) from `offset`, numbered and capped.
    fn numbered(
        &self,
        args: &ReadFileArgs,
        shown: &str,
        mut reader: impl BufRead,
        cancel: &CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        let offset = to_usize(args.offset.unwrap_or(1), "offset")?;
        let limit = to_usize(args.limit.unwrap_or(DEFAULT_LINE_LIMIT as u64), "limit")?;
        let mut location = Location::new(shown);
        if let Some(line) = args.offset.and_then(|line| u32::try_from(line).ok()) {
            location = location.with_line(line);
        }
        let shown_here = Presentation::new().with_location(location);
        let head = reader.fill_buf()?;
        if head[..head.len().min(BINARY_SNIFF_BYTES)].contains(&0) {
            return Err(ToolError::failed(format!(
                "{shown} is a binary file; read_file shows text only"
            )));
        }

        let mut out = String::new();
        let mut line = Vec::new();
        let mut number = 0usize;
        let mut shown_lines = 0usize;
        let mut stop: Option<&'static str> = None;
        while let Some(cut) = read_capped_line(&mut reader, self.max_line_bytes, &mut line)? {
            number += 1;
            if number.is_multiple_of(CANCEL_CHECK_LINES) && cancel.is_cancelled() {
                return Err(ToolError::Cancelled);
            }
            if number < offset {
                continue;
            }
            if shown_lines == limit {
                stop = Some("line limit");
                break;
            }
            let bytes = trim_newline(&line);
            let text = if cut {
                decode_head(bytes)
            } else {
                String::from_utf8_lossy(bytes)
            };
            let mut entry = format!("{number:>6}\t{text}");
            if cut {
                entry.push_str(" … [line cut]");
            }
            if out.len() + entry.len() + 1 > self.max_bytes {
                stop = Some("size cap");
                if shown_lines == 0 {
                    // Show part of a first line that alone exceeds the cap, so that the next
                    // offset always moves forward.
                    let marker = " … [line cut]";
                    let room = self.max_bytes.saturating_sub(marker.len());
                    entry.truncate(floor_char_boundary(&entry, room));
                    entry.push_str(marker);
                    out.push_str(&entry);
                    shown_lines = 1;
                }
                break;
            }
            if shown_lines > 0 {
                out.push('\n');
            }
            out.push_str(&entry);
            shown_lines += 1;
        }

        if shown_lines == 0 && stop.is_none() {
            if number == 0 {
                return Ok(
                    ToolOutput::text(format!("({shown} is empty)")).with_presentation(shown_here)
                );
            }
            return Err(ToolError::InvalidArguments(format!(
                "offset {offset} is past the end of {shown}, which has {number} lines"
            )));
        }
        let mut output = ToolOutput::text(out)
            .with_metadata("lines", json!(shown_lines))
            .with_presentation(shown_here);
        if let Some(reason) = stop {
            let next = offset + shown_lines;
            output = output
                .with_content(crate::Content::text(format!(
                    "\n[{reason} reached: more lines follow; continue with offset={next}]"
                )))
                .with_metadata("next_offset", json!(next));
        }
        Ok(output)
    }
}

fn to_usize(value: u64, name: &str) -> Result<usize, ToolError> {
    if value == 0 {
        return Err(ToolError::InvalidArguments(format!(
            "{name} must be at least 1"
        )));
    }
    usize::try_from(value)
        .map_err(|_| ToolError::InvalidArguments(format!("{name} {value} is too large")))
}

fn trim_newline(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Reads one line into `line`, keeping at most `cap` bytes of it and skipping the rest, so a
/// huge line costs no memory. `None` at the end of the file; otherwise whether it was cut.
fn read_capped_line(
    reader: &mut impl BufRead,
    cap: usize,
    line: &mut Vec<u8>,
) -> std::io::Result<Option<bool>> {
    line.clear();
    let mut cut = false;
    let mut any = false;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(any.then_some(cut));
        }
        any = true;
        let (chunk, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(end) => (&buf[..=end], true),
            None => (buf, false),
        };
        let room = cap.saturating_sub(line.len());
        if chunk.len() > room {
            let keep = &chunk[..room];
            line.extend_from_slice(keep);
            cut |= !(done && chunk.len() == room + 1);
        } else {
            line.extend_from_slice(chunk);
        }
        let used = chunk.len();
        reader.consume(used);
        if done {
            return Ok(Some(cut));
        }
    }
}
