//! Serving an [`AcpAgent`]: on stdio, on a byte stream, or on one of the SDK's transports.
//! The connection's methods are in `methods.rs`.

use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol::{Agent, ConnectTo};

use crate::sessions::Sessions;
use crate::{AcpAgent, AcpError};

/// How long a disconnect waits for sessions to stop (processes, MCP servers).
const SHUTDOWN_GRACE: Duration = Duration::from_millis(1500);

/// The buffer between stdin or stdout and the thread that reads or writes it, in bytes.
const STDIO_BUFFER: usize = 256 * 1024;

impl AcpAgent {
    /// Serves the agent on this process's stdin and stdout until the client closes stdin (or
    /// stops reading stdout: a write finds a broken pipe).
    /// Every session is then cancelled and shut down (tools, their processes and MCP servers
    /// with them) before this returns. Input is read as in [`serve_io`](Self::serve_io).
    pub async fn serve_stdio(self) -> Result<(), AcpError> {
        // On their own threads, as the SDK's stdio transport does: a read blocked on stdin
        // never holds up the runtime's shutdown. A small buffer each: lines are assembled by
        // the reader, not here.
        let stdin = blocking::Unblock::with_capacity(STDIO_BUFFER, std::io::stdin());
        let stdout = blocking::Unblock::with_capacity(STDIO_BUFFER, std::io::stdout());
        self.serve_io(stdin, stdout).await
    }

    /// Serves the agent on a byte stream (a pipe, a socket), one JSON-RPC message a line,
    /// until `reader` ends or a write to `writer` finds a broken pipe.
    ///
    /// Input is read as bytes. A line that is not UTF-8 or not JSON is answered with a parse
    /// error (`-32700`, `id: null`); a line over [`max_line_bytes`](Self::max_line_bytes) or
    /// of more than 100,000 JSON values with an invalid request (`-32600`). The error shows
    /// at most the line's first 128 bytes, and the agent goes on. Blank lines are skipped.
    /// Any error response over 4 KiB (errors quote what they refuse) goes out with its
    /// message and data cut to 1 KiB each.
    pub async fn serve_io(
        self,
        reader: impl futures::AsyncRead + Unpin + Send + 'static,
        writer: impl futures::AsyncWrite + Unpin + Send + 'static,
    ) -> Result<(), AcpError> {
        let transport = crate::framing::transport(reader, writer, self.max_line);
        self.serve(transport).await
    }

    /// Serves the agent on `transport`, any of the SDK's transports (channels, lines). Its
    /// input is framed and parsed as that transport does: prefer
    /// [`serve_io`](Self::serve_io) for a byte stream.
    pub async fn serve(self, transport: impl ConnectTo<Agent> + 'static) -> Result<(), AcpError> {
        let name = self.name.clone();
        let sessions = Arc::new(Sessions::new(self));
        let result = crate::methods::builder(&sessions, name)
            .connect_to(transport)
            .await;
        // The client is gone (or the connection failed): nothing may outlive it.
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, sessions.shutdown_all()).await;
        result.map_err(AcpError::from)
    }
}
