//! The editor's buffers as the file tools' [`TextFiles`], when the client offers
//! `fs.readTextFile` / `fs.writeTextFile`: `read_file`, `edit_file` and `write_file` read and
//! write through the editor, so unsaved changes count. The tools resolve every path against
//! the session's root first, and the permission rules gate the call before it runs.

use std::path::Path;
use std::time::Duration;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{ReadTextFileRequest, WriteTextFileRequest};
use mux_tool::builtin::TextFiles;
use mux_tool::{BoxFuture, ToolError};

/// How long the editor may take to answer a file request.
const EDITOR_TIMEOUT: Duration = Duration::from_secs(30);

/// One session's view of the editor's files.
#[derive(Clone)]
pub(crate) struct EditorFiles {
    pub(crate) cx: ConnectionTo<Client>,
    pub(crate) session: String,
    pub(crate) read: bool,
    pub(crate) write: bool,
}

impl TextFiles for EditorFiles {
    fn read_text<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Result<Option<String>, ToolError>> {
        Box::pin(async move {
            if !self.read {
                return Ok(None);
            }
            let request = ReadTextFileRequest::new(self.session.clone(), path);
            let answer =
                tokio::time::timeout(EDITOR_TIMEOUT, self.cx.send_request(request).block_task())
                    .await
                    .map_err(|_| timed_out("fs/read_text_file"))?;
            match answer {
                Ok(response) => Ok(Some(response.content)),
                // Not open and not known to the editor (a new file, say): the disk decides.
                Err(err) => {
                    tracing::debug!(target: "mux_acp", path = %path.display(), error = %err, "the editor did not read the file; reading the disk");
                    Ok(None)
                }
            }
        })
    }

    fn write_text<'a>(
        &'a self,
        path: &'a Path,
        content: &'a str,
    ) -> BoxFuture<'a, Result<bool, ToolError>> {
        Box::pin(async move {
            if !self.write {
                return Ok(false);
            }
            let request = WriteTextFileRequest::new(self.session.clone(), path, content);
            tokio::time::timeout(EDITOR_TIMEOUT, self.cx.send_request(request).block_task())
                .await
                .map_err(|_| timed_out("fs/write_text_file"))?
                .map_err(|err| {
                    ToolError::failed(format!(
                        "the editor did not write {}: {err}",
                        path.display()
                    ))
                })?;
            Ok(true)
        })
    }
}

fn timed_out(method: &str) -> ToolError {
    ToolError::failed(format!(
        "the editor did not answer {method} within {} s",
        EDITOR_TIMEOUT.as_secs()
    ))
}
