//! The standalone GET stream of a 2025-11-25 Streamable HTTP session is open before the
//! connection reports `connected`.
//!
//! The server here is written by hand on hyper so it can behave like the TypeScript SDK's:
//! it answers the GET late (or refuses it), and a server request it sends while no GET
//! stream is open is dropped. Its `ask` tool sends `elicitation/create` on the GET stream as
//! soon as the call arrives and returns what the client answered, or says the request was
//! dropped.

use crate::common;

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Bytes, Frame, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use mux_mcp::{ConnectionOptions, Lifecycle, LogLevel, ServerConnection, ServerSpec};
use mux_tool::ToolContext;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};

/// Every wait in these tests ends within this.
const LIMIT: Duration = Duration::from_secs(20);
/// How long the server lets a GET wait before answering it, in the tests that open it late.
const GET_DELAY: Duration = Duration::from_millis(500);
/// How long mux waits for the standalone stream (`STANDALONE_STREAM_WAIT` in the crate).
const MUX_WAIT: Duration = Duration::from_secs(2);

/// What the server does with the standalone GET.
#[derive(Clone, Copy)]
enum Get {
    /// Opens the stream after this delay.
    OpenAfter(Duration),
    /// Answers 405 at once.
    Refuse,
}

#[derive(Default)]
struct State {
    /// The open standalone stream's sender.
    stream: Option<mpsc::UnboundedSender<Bytes>>,
    /// Where the client's answer to the pending elicitation goes.
    answer: Option<oneshot::Sender<Value>>,
}

type Body = BoxBody<Bytes, Infallible>;

fn full(status: StatusCode, body: Option<Value>) -> Response<Body> {
    let mut response = Response::builder().status(status);
    if body.is_some() {
        response = response.header("content-type", "application/json");
    }
    let bytes = body.map(|b| Bytes::from(b.to_string())).unwrap_or_default();
    response.body(Full::new(bytes).boxed()).unwrap()
}

fn result(id: &Value, result: Value) -> Response<Body> {
    full(
        StatusCode::OK,
        Some(json!({"jsonrpc": "2.0", "id": id, "result": result})),
    )
}

async fn handle(
    state: Arc<Mutex<State>>,
    get: Get,
    request: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    match *request.method() {
        Method::GET => Ok(open_stream(&state, get).await),
        Method::POST => {
            let bytes = request.into_body().collect().await.unwrap().to_bytes();
            let message: Value = serde_json::from_slice(&bytes).unwrap();
            Ok(post(&state, message).await)
        }
        _ => Ok(full(StatusCode::OK, None)),
    }
}

async fn open_stream(state: &Mutex<State>, get: Get) -> Response<Body> {
    let delay = match get {
        Get::Refuse => return full(StatusCode::METHOD_NOT_ALLOWED, None),
        Get::OpenAfter(delay) => delay,
    };
    tokio::time::sleep(delay).await;
    let (tx, rx) = mpsc::unbounded_channel::<Bytes>();
    state.lock().unwrap().stream = Some(tx);
    let events = futures::stream::unfold(rx, |mut rx| async move {
        let bytes = rx.recv().await?;
        Some((Ok::<_, Infallible>(Frame::data(bytes)), rx))
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(BodyExt::boxed(StreamBody::new(events)))
        .unwrap()
}

async fn post(state: &Mutex<State>, message: Value) -> Response<Body> {
    let id = message.get("id").cloned();
    let Some(method) = message.get("method").and_then(Value::as_str) else {
        // The client's answer to our elicitation.
        if let Some(answer) = state.lock().unwrap().answer.take() {
            let _ = answer.send(message);
        }
        return full(StatusCode::ACCEPTED, None);
    };
    let Some(id) = id else {
        return full(StatusCode::ACCEPTED, None);
    };
    match method {
        "initialize" => {
            let mut response = result(
                &id,
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "late-stream", "version": "1.0.0"},
                }),
            );
            response
                .headers_mut()
                .insert("mcp-session-id", "session-1".parse().unwrap());
            response
        }
        "tools/list" => result(
            &id,
            json!({"tools": [{"name": "ask", "inputSchema": {"type": "object"}}]}),
        ),
        "tools/call" => result(&id, ask(state).await),
        "ping" => result(&id, json!({})),
        _ => full(
            StatusCode::OK,
            Some(json!({
                "jsonrpc": "2.0",
                "id": id,
                "error": {"code": -32601, "message": format!("no method {method}")},
            })),
        ),
    }
}

/// Sends `elicitation/create` on the standalone stream, if it is open, and waits for the
/// answer. The tool result says what came back.
async fn ask(state: &Mutex<State>) -> Value {
    let (tx, rx) = oneshot::channel();
    let sent = {
        let mut state = state.lock().unwrap();
        state.answer = Some(tx);
        let request = json!({
            "jsonrpc": "2.0",
            "id": "elicit-1",
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": "Your name?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                },
            },
        });
        state
            .stream
            .as_ref()
            .is_some_and(|stream| stream.send(format!("data: {request}\n\n").into()).is_ok())
    };
    let text = if sent {
        match tokio::time::timeout(LIMIT, rx).await {
            Ok(Ok(answer)) => format!("answered {}", answer["result"]["content"]["name"]),
            _ => "no answer".to_string(),
        }
    } else {
        "dropped: no standalone stream was open".to_string()
    };
    json!({"content": [{"type": "text", "text": text}]})
}

/// Serves on 127.0.0.1; returns the URL and the accept loop.
async fn serve(get: Get) -> (String, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let state = Arc::new(Mutex::new(State::default()));
    let task = tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let state = state.clone();
            tokio::spawn(async move {
                let service =
                    hyper::service::service_fn(move |request| handle(state.clone(), get, request));
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), service)
                    .await;
            });
        }
    });
    (format!("http://127.0.0.1:{port}/mcp"), task)
}

/// Connects to `url` with `lifecycle`; returns the connection and how long `connect` took.
async fn connect(url: &str, lifecycle: Lifecycle) -> (ServerConnection, Duration) {
    let connection = ServerConnection::new(
        ServerSpec::http("late", url),
        ConnectionOptions {
            lifecycle,
            ..ConnectionOptions::default()
        },
    );
    connection.set_client_handlers(common::FormAnswers::accept());
    let started = Instant::now();
    let tools = tokio::time::timeout(LIMIT, connection.connect())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(tools.len(), 1, "{tools:?}");
    (connection, started.elapsed())
}

/// Calls `ask` right after `connect` returned.
async fn ask_now(connection: &ServerConnection) -> String {
    let result = connection
        .call_tool("ask", json!({}), &ToolContext::new("a"), LIMIT)
        .await
        .unwrap();
    serde_json::to_value(&result).unwrap()["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string()
}

fn warnings(connection: &ServerConnection) -> Vec<String> {
    connection
        .log()
        .into_iter()
        .filter(|entry| entry.level >= LogLevel::Warning)
        .map(|entry| entry.message)
        .collect()
}

async fn request_on_late_stream_reaches_the_handlers(lifecycle: Lifecycle) {
    let (url, server) = serve(Get::OpenAfter(GET_DELAY)).await;
    let (connection, _) = connect(&url, lifecycle).await;
    assert_eq!(connection.protocol_version().as_deref(), Some("2025-11-25"));
    assert_eq!(ask_now(&connection).await, r#"answered "mux""#);
    assert!(
        connection
            .log()
            .iter()
            .any(|entry| entry.message == "standalone SSE stream open"),
        "{:?}",
        connection.log()
    );
    assert!(warnings(&connection).is_empty(), "{:?}", connection.log());
    tokio::time::timeout(LIMIT, connection.disconnect())
        .await
        .unwrap();
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_on_the_standalone_stream_right_after_connect_reaches_the_handlers() {
    request_on_late_stream_reaches_the_handlers(Lifecycle::Initialize).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_falling_back_from_discover_the_standalone_stream_is_open_too() {
    request_on_late_stream_reaches_the_handlers(Lifecycle::Auto).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_refusing_the_standalone_stream_connects_without_waiting() {
    let (url, server) = serve(Get::Refuse).await;
    let (connection, took) = connect(&url, Lifecycle::Initialize).await;
    assert!(took < MUX_WAIT, "connect took {took:?}");
    let log = connection.log();
    let refusal = log
        .iter()
        .find(|entry| entry.message.contains("offers no standalone SSE stream"))
        .unwrap_or_else(|| panic!("no refusal in the log: {log:?}"));
    assert_eq!(refusal.level, LogLevel::Info);
    assert!(warnings(&connection).is_empty(), "{log:?}");
    assert_eq!(
        ask_now(&connection).await,
        "dropped: no standalone stream was open"
    );
    tokio::time::timeout(LIMIT, connection.disconnect())
        .await
        .unwrap();
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standalone_stream_that_does_not_open_delays_connected_by_the_wait_only() {
    let (url, server) = serve(Get::OpenAfter(LIMIT)).await;
    let (connection, took) = connect(&url, Lifecycle::Initialize).await;
    assert!(
        took >= MUX_WAIT && took < MUX_WAIT * 3,
        "connect took {took:?}"
    );
    let warnings = warnings(&connection);
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("standalone SSE stream was not open after 2s")),
        "{:?}",
        connection.log()
    );
    tokio::time::timeout(LIMIT, connection.disconnect())
        .await
        .unwrap();
    server.abort();
}
