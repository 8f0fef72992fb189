//! mux-mcp's Streamable HTTP server at its door and in its error codes: 300 silent sockets do
//! not lock out an `initialize`; a `tools/call` with bad params answers -32602 (raw JSON-RPC
//! and the Python `mcp` client); a `DELETE` of an unknown or ended session answers 404 and
//! of a live one 204.

use std::net::SocketAddr;
use std::time::Duration;

use mux_mcp::{HttpOptions, McpServer};
use mux_tool::{
    Executor, Registry, ToolAnnotations, ToolContext, ToolError, ToolOutput, TypedTool,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::common::venv_bin;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// What to say.
    text: String,
}

struct Echo;

impl TypedTool for Echo {
    type Args = EchoArgs;
    const NAME: &'static str = "echo";

    fn description(&self) -> String {
        "Says it back".into()
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only()
    }

    async fn call(&self, args: EchoArgs, _cx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(args.text))
    }
}

async fn served() -> mux_mcp::HttpServer {
    let registry = Registry::new();
    registry.register_typed(Echo).unwrap();
    McpServer::new(Executor::new(registry))
        .with_name("door", "1.0.0")
        .serve_http(HttpOptions::default())
        .await
        .unwrap()
}

/// A hang detector, not a timing assertion.
const ANSWER_WITHIN: Duration = Duration::from_secs(5);

/// An HTTP answer: its status, headers (names in lower case) and body (de-chunked).
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC message: the JSON body, or the first JSON `data:` line of an SSE one.
    fn message(&self) -> Option<Value> {
        serde_json::from_str::<Value>(&self.body).ok().or_else(|| {
            self.body
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .find_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        })
    }
}

fn dechunk(mut raw: &str) -> String {
    let mut body = String::new();
    while let Some((size, rest)) = raw.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || rest.len() < size {
            break;
        }
        body.push_str(&rest[..size]);
        raw = rest[size..].trim_start_matches("\r\n");
    }
    body
}

/// One request on a fresh connection (`Connection: close`), read to its end within
/// [`ANSWER_WITHIN`].
async fn request(addr: SocketAddr, method: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    let mut head = format!(
        "{method} /mcp HTTP/1.1\r\nhost: 127.0.0.1:{}\r\nconnection: close\r\ncontent-length: {}\r\n",
        addr.port(),
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let exchange = async {
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        tcp.write_all(head.as_bytes()).await.unwrap();
        tcp.write_all(body.as_bytes()).await.unwrap();
        let mut raw = Vec::new();
        tcp.read_to_end(&mut raw).await.unwrap();
        raw
    };
    let raw = tokio::time::timeout(ANSWER_WITHIN, exchange)
        .await
        .expect("the server answers in time");
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {raw:?}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        dechunk(rest)
    } else {
        rest.to_owned()
    };
    Answer {
        status,
        headers,
        body,
    }
}

/// POSTs one JSON-RPC message.
async fn post(addr: SocketAddr, session: Option<&str>, body: &Value) -> Answer {
    let mut headers = vec![
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2025-06-18"),
    ];
    if let Some(session) = session {
        headers.push(("mcp-session-id", session));
    }
    request(addr, "POST", &headers, &body.to_string()).await
}

fn initialize_body() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}})
}

/// A session that finished the handshake; its id.
async fn session(addr: SocketAddr) -> String {
    let answer = post(addr, None, &initialize_body()).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let message = answer.message().unwrap();
    assert!(message["result"]["serverInfo"].is_object(), "{message}");
    let session = answer
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let answer = post(addr, Some(&session), &initialized).await;
    assert_eq!(answer.status, 202, "{}", answer.body);
    session
}

#[tokio::test]
async fn three_hundred_silent_sockets_do_not_delay_initialize() {
    let server = served().await;
    let addr = server.local_addr();
    let mut idle = Vec::new();
    for _ in 0..300 {
        idle.push(TcpStream::connect(addr).await.unwrap());
    }
    // Let the server accept what it will before the real request.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let answer = post(addr, None, &initialize_body()).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert!(answer.header("mcp-session-id").is_some());
    let message = answer.message().unwrap();
    assert!(
        message["result"]["protocolVersion"].is_string(),
        "initialize is answered: {message}"
    );
    drop(idle);
    server.shutdown().await;
}

#[tokio::test]
async fn tools_call_with_bad_params_answers_invalid_params() {
    let server = served().await;
    let addr = server.local_addr();
    let session = session(addr).await;
    let bad = [
        json!({"nme": "echo", "arguments": {"text": "hi"}}),
        json!({"name": "echo", "arguments": 5}),
        json!({"arguments": {"text": "hi"}}),
        json!({"name": 5}),
        json!({"name": "echo", "arguments": [1]}),
    ];
    for (i, params) in bad.iter().enumerate() {
        let call =
            json!({"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call", "params": params});
        let answer = post(addr, Some(&session), &call).await;
        let message = answer
            .message()
            .unwrap_or_else(|| panic!("{params}: no JSON-RPC answer ({})", answer.status));
        assert_eq!(message["error"]["code"], -32602, "{params}: {message}");
        assert_eq!(message["id"], 10 + i, "{message}");
        let text = message["error"]["message"].as_str().unwrap();
        assert!(text.contains("tools/call"), "{text}");
    }
    // A method nobody defines is still -32601.
    let unknown = json!({"jsonrpc": "2.0", "id": 99, "method": "tools/nope", "params": {}});
    let message = post(addr, Some(&session), &unknown)
        .await
        .message()
        .unwrap();
    assert_eq!(message["error"]["code"], -32601, "{message}");
    // And a good call still works.
    let good = json!({"jsonrpc": "2.0", "id": 100, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hi"}}});
    let message = post(addr, Some(&session), &good).await.message().unwrap();
    assert_eq!(message["result"]["content"][0]["text"], "hi", "{message}");
    server.shutdown().await;
}

async fn delete(addr: SocketAddr, session: &str) -> u16 {
    let headers = [
        ("mcp-session-id", session),
        ("mcp-protocol-version", "2025-06-18"),
    ];
    request(addr, "DELETE", &headers, "").await.status
}

#[tokio::test]
async fn delete_ends_a_live_session_and_answers_404_for_unknown_or_ended_ones() {
    let server = served().await;
    let addr = server.local_addr();
    assert_eq!(
        delete(addr, "00000000-0000-0000-0000-000000000000").await,
        404,
        "an unknown session"
    );
    let session = session(addr).await;
    assert_eq!(delete(addr, &session).await, 204, "a live session ends");
    assert_eq!(delete(addr, &session).await, 404, "an ended session");
    let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "ping"});
    let answer = post(addr, Some(&session), &ping).await;
    assert_eq!(answer.status, 404, "the ended session is gone");
    server.shutdown().await;
}

/// The Python `mcp` client (the reference SDK): a `tools/call` with arguments that are not an
/// object comes back as an `McpError` with -32602, and closing the session (its `DELETE`)
/// logs no warning.
#[tokio::test]
async fn the_python_client_sees_invalid_params_and_closes_cleanly() {
    let server = served().await;
    let script = r#"
import asyncio, json, logging, sys
import mcp_types as types
from mcp import ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client

warnings = []
class Keep(logging.Handler):
    def emit(self, record):
        if record.levelno >= logging.WARNING:
            warnings.append(record.getMessage())
logging.getLogger().addHandler(Keep())

async def main(url):
    out = {}
    async with streamable_http_client(url) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            codes = []
            for params in ({"name": "echo", "arguments": 5}, {"nme": "echo"}):
                request = types.Request.model_construct(method="tools/call", params=params)
                try:
                    await session.send_request(request, types.CallToolResult)
                    codes.append(None)
                except MCPError as e:
                    codes.append(e.error.code)
            out["codes"] = codes
            result = await session.call_tool("echo", {"text": "hi"})
            out["echo"] = result.content[0].text
    out["warnings"] = warnings
    print(json.dumps(out))

asyncio.run(main(sys.argv[1]))
"#;
    let output = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::process::Command::new(venv_bin("python"))
            .arg("-c")
            .arg(script)
            .arg(server.url())
            .output(),
    )
    .await
    .expect("the Python client finished")
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let out: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|_| panic!("{stdout}"));
    assert_eq!(out["codes"], json!([-32602, -32602]), "{out}\n{stderr}");
    assert_eq!(out["echo"], "hi");
    assert_eq!(out["warnings"], json!([]), "{out}\n{stderr}");
    server.shutdown().await;
}
