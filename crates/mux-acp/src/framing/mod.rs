//! JSON-RPC on a byte stream, one message a line, that no input can stop.
//!
//! The SDK's own byte transport reads text: one line of invalid UTF-8 ends the connection,
//! and a line that is not JSON is answered with a parse error that echoes the whole line.
//! Here the input is read as bytes, one line at a time, and only lines that are UTF-8 and
//! parse as JSON reach the SDK; every other line is answered here with a short JSON-RPC error
//! (`id: null`) and skipped. A line longer than the limit is refused while it is read: its
//! bytes are dropped as they come, never held whole.
//!
//! Errors quote what they refuse (a method name, an id, a path, the SDK's whole params
//! object), so on the way out an error response's message and data are cut to a short text:
//! megabytes in never make megabytes of error out.

mod cut;
mod judge;
mod lines;

use std::io;
use std::pin::Pin;
use std::sync::Arc;

use agent_client_protocol::Lines;
use futures::future::Either;
use futures::io::{AsyncWrite, AsyncWriteExt, BufReader};
use futures::{AsyncRead, Sink, Stream};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use cut::bounded;
use judge::{Verdict, judge};
use lines::LineReader;

/// The longest line accepted by default: 64 MiB.
pub(crate) const DEFAULT_MAX_LINE: usize = 64 * 1024 * 1024;

/// Where both the SDK's messages and this module's errors go, a line at a time.
struct Output<W> {
    writer: Mutex<W>,
    /// Cancelled when a write finds the client gone (a broken pipe or reset, or a write that
    /// took nothing): input ends there, as at the end of input.
    gone: CancellationToken,
}

impl<W: AsyncWrite + Unpin> Output<W> {
    /// Writes `line` and a newline, and flushes. A client that is gone is no error: the line
    /// is dropped and [`Output::gone`] cancelled.
    async fn send(&self, line: &str) -> io::Result<()> {
        if self.gone.is_cancelled() {
            return Ok(());
        }
        let mut writer = self.writer.lock().await;
        let written = async {
            writer.write_all(line.as_bytes()).await?;
            writer.write_all(b"\n").await?;
            writer.flush().await
        }
        .await;
        match written {
            Err(err) if client_gone(&err) => {
                tracing::debug!(target: "mux_acp", "the client closed its input: ending");
                self.gone.cancel();
                Ok(())
            }
            other => other,
        }
    }
}

/// Whether a write's `err` says the client is gone. However the OS and the writer say it
/// (a broken pipe, a reset, a closed socket, or a write that took nothing), the client stopped
/// reading for good.
fn client_gone(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::BrokenPipe
            | io::ErrorKind::WriteZero
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::NotConnected
    )
}

/// The outgoing lines.
pub(crate) type Outgoing = Pin<Box<dyn Sink<String, Error = io::Error> + Send>>;
/// The incoming lines.
pub(crate) type Incoming = Pin<Box<dyn Stream<Item = io::Result<String>> + Send>>;

/// The SDK's line transport over `reader` and `writer`, with lines judged as the module
/// docs say and lines over `max_line` bytes refused. Input ends at the end of `reader`, or
/// when a write finds the client gone.
pub(crate) fn transport<R, W>(reader: R, writer: W, max_line: usize) -> Lines<Outgoing, Incoming>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let output = Arc::new(Output {
        writer: Mutex::new(writer),
        gone: CancellationToken::new(),
    });
    let outgoing = futures::sink::unfold(Arc::clone(&output), async |output, line: String| {
        output.send(&bounded(line)).await?;
        Ok::<_, io::Error>(output)
    });
    let lines = LineReader {
        reader: BufReader::new(reader),
        max: max_line,
    };
    let incoming = futures::stream::unfold((lines, output), async |(mut lines, output)| {
        loop {
            let read = {
                let next = std::pin::pin!(lines.next());
                let gone = std::pin::pin!(output.gone.cancelled());
                match futures::future::select(next, gone).await {
                    Either::Left((read, _)) => read,
                    Either::Right(((), _)) => return None,
                }
            };
            let line = match read {
                Ok(Some(line)) => line,
                Ok(None) => return None,
                Err(err) => return Some((Err(err), (lines, output))),
            };
            match judge(line, lines.max) {
                Verdict::Pass(text) => return Some((Ok(text), (lines, output))),
                Verdict::Blank => {}
                Verdict::Refuse(response) => {
                    tracing::warn!(
                        target: "mux_acp",
                        reason = %response["error"]["data"]["reason"],
                        "input line refused"
                    );
                    if let Err(err) = output.send(&response.to_string()).await {
                        return Some((Err(err), (lines, output)));
                    }
                }
            }
        }
    });
    Lines::new(
        Box::pin(outgoing) as Outgoing,
        Box::pin(incoming) as Incoming,
    )
}
