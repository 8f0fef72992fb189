//! A local HTTP/1.1 server on 127.0.0.1 that serves scripted replies in order and records
//! every request, so tests exercise real provider code over a real socket.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

/// How long a stalled reply keeps its connection open at most.
const STALL_LIMIT: Duration = Duration::from_secs(30);
/// The largest request head or body the server reads.
const MAX_REQUEST: usize = 16 * 1024 * 1024;

/// One scripted HTTP reply.
#[derive(Clone, Debug)]
pub struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    chunks: Vec<Vec<u8>>,
    end: End,
    delay: Duration,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    Complete,
    Cut(usize),
    Stall(usize),
}

impl Reply {
    /// A reply with a status, a content type and a body.
    pub fn new(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), content_type.into())],
            chunks: vec![body.into()],
            end: End::Complete,
            delay: Duration::ZERO,
        }
    }

    /// A JSON reply.
    pub fn json(status: u16, body: impl Into<Vec<u8>>) -> Self {
        Self::new(status, "application/json", body)
    }

    /// A 200 `text/event-stream` reply sent as one chunk.
    pub fn sse(body: impl Into<Vec<u8>>) -> Self {
        Self::new(200, "text/event-stream; charset=utf-8", body)
    }

    /// Adds a response header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers
            .push((name.to_ascii_lowercase(), value.to_owned()));
        self
    }

    /// Replaces the response headers (a cassette's recorded ones).
    pub(super) fn set_headers(&mut self, headers: Vec<(String, String)>) {
        self.headers = headers;
    }

    /// Re-splits the body into network chunks of `size` bytes, each written and flushed
    /// separately.
    pub fn chunked(mut self, size: usize) -> Self {
        let body: Vec<u8> = self.chunks.concat();
        self.chunks = body.chunks(size.max(1)).map(<[u8]>::to_vec).collect();
        self
    }

    /// Splits the body at these byte offsets.
    pub fn split_at(mut self, offsets: &[usize]) -> Self {
        let body: Vec<u8> = self.chunks.concat();
        let mut chunks = Vec::new();
        let mut start = 0;
        for &offset in offsets {
            let offset = offset.clamp(start, body.len());
            chunks.push(body[start..offset].to_vec());
            start = offset;
        }
        chunks.push(body[start..].to_vec());
        self.chunks = chunks;
        self
    }

    /// Closes the connection abruptly after `chunks` chunks, without ending the body.
    pub fn cut_after(mut self, chunks: usize) -> Self {
        self.end = End::Cut(chunks);
        self
    }

    /// Waits this long before sending the status line (for request timeouts).
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay.min(STALL_LIMIT);
        self
    }

    /// Sends `chunks` chunks, then keeps the connection open without sending more.
    pub fn stall_after(mut self, chunks: usize) -> Self {
        self.end = End::Stall(chunks);
        self
    }
}

/// A request the server received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedRequest {
    /// The method (`POST`).
    pub method: String,
    /// The path and query.
    pub path: String,
    /// The headers, names lowercased, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The body bytes.
    pub body: Vec<u8>,
}

impl RecordedRequest {
    /// The first value of a header (name matched case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body parsed as JSON (`Null` when it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

#[derive(Default)]
struct Shared {
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<RecordedRequest>>,
}

/// The server. It stops when dropped.
///
/// ```
/// use mux_llm::testing::{Reply, ReplayServer};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let server = ReplayServer::start(vec![Reply::json(200, r#"{"ok":true}"#)]).await?;
/// assert!(server.url().starts_with("http://127.0.0.1:"));
/// # Ok::<(), std::io::Error>(()) }).unwrap();
/// ```
pub struct ReplayServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl ReplayServer {
    /// Starts serving `replies`, one per request, in order. Requests beyond the script get a
    /// 500 reply saying so.
    pub async fn start(replies: Vec<Reply>) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            replies: Mutex::new(replies.into()),
            requests: Mutex::new(Vec::new()),
        });
        let state = shared.clone();
        let task = tokio::spawn(async move {
            let mut connections = JoinSet::new();
            while let Ok((stream, _)) = listener.accept().await {
                let state = state.clone();
                connections.spawn(async move {
                    let _ = serve(stream, state).await;
                });
                while connections.try_join_next().is_some() {}
            }
        });
        Ok(Self { addr, shared, task })
    }

    /// The base URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// How many scripted replies are still unused.
    pub fn remaining(&self) -> usize {
        lock(&self.shared.replies).len()
    }
}

impl Drop for ReplayServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}

pub(super) async fn read_request(
    stream: &mut TcpStream,
) -> std::io::Result<Option<RecordedRequest>> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos;
        }
        if buf.len() > MAX_REQUEST {
            return Ok(None);
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or_default().split(' ');
    let method = first.next().unwrap_or_default().to_owned();
    let path = first.next().unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0)
        .min(MAX_REQUEST);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(length);
    Ok(Some(RecordedRequest {
        method,
        path,
        headers,
        body,
    }))
}

async fn serve(mut stream: TcpStream, shared: Arc<Shared>) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let Some(request) = read_request(&mut stream).await? else {
        return Ok(());
    };
    let number = {
        let mut requests = lock(&shared.requests);
        requests.push(request);
        requests.len()
    };
    let reply = lock(&shared.replies).pop_front().unwrap_or_else(|| {
        Reply::new(
            500,
            "text/plain",
            format!("replay server: no reply scripted for request {number}"),
        )
    });
    write_reply(&mut stream, &reply).await
}

/// Writes `reply` as a chunked HTTP/1.1 response and closes the connection (or cuts or stalls
/// it, as the reply says).
pub(super) async fn write_reply(stream: &mut TcpStream, reply: &Reply) -> std::io::Result<()> {
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    let mut head = format!("HTTP/1.1 {} {}\r\n", reply.status, reason(reply.status));
    // A header with a line break (from a hand-edited cassette) would split the head: skipped.
    for (name, value) in &reply.headers {
        if name.contains(['\r', '\n']) || value.contains(['\r', '\n']) {
            continue;
        }
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("connection: close\r\ntransfer-encoding: chunked\r\n\r\n");
    stream.write_all(head.as_bytes()).await?;
    stream.flush().await?;
    for (i, chunk) in reply.chunks.iter().enumerate() {
        match reply.end {
            End::Cut(n) if i == n => return Ok(()),
            End::Stall(n) if i == n => {
                tokio::time::sleep(STALL_LIMIT).await;
                return Ok(());
            }
            _ => {}
        }
        if chunk.is_empty() {
            continue;
        }
        stream
            .write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
            .await?;
        stream.write_all(chunk).await?;
        stream.write_all(b"\r\n").await?;
        stream.flush().await?;
    }
    match reply.end {
        End::Cut(_) => return Ok(()),
        End::Stall(_) => {
            tokio::time::sleep(STALL_LIMIT).await;
            return Ok(());
        }
        End::Complete => {}
    }
    stream.write_all(b"0\r\n\r\n").await?;
    stream.flush().await?;
    stream.shutdown().await
}
