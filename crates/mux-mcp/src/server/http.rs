//! Streamable HTTP serving: rmcp's session service behind mux's own door (bearer token, body
//! limit and timeouts, loopback by default), on mux-http's accept loop. The `Host` and
//! `Origin` checks are rmcp's (they take `:*` port patterns); the bearer token and the
//! accept loop (connection cap that sheds the oldest idle connection, header, body and idle
//! timeouts) are mux-http's, shared with mux-web and mux-a2a.
//!
//! A `DELETE` of a session this server does not hold (unknown, or ended) answers 404, as the
//! transport spec asks of any request naming an ended session; a live one ends with 204
//! (rmcp's own answer is 202 for both, and the reference Python client logs a warning for
//! anything but 200 or 204).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use mux_http::BearerToken;
use mux_http::serve::{Addrs, Limits, RequestBody, accept_loop};
use rmcp::transport::streamable_http_server::session::SessionManager as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::error::ServeError;
use super::handler::{Handler, Shared};
use crate::Secret;

/// Default largest request body: 4 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// Default time a client has to send its request headers, and separately its body.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Default number of connections served at once; at the cap a new connection sheds the
/// oldest idle one.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;
/// Default time a connection may stay idle between requests, or a response stream may go
/// without a byte out (Streamable HTTP streams send a keep-alive every 15 s).
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// How to serve over HTTP. The defaults listen on `127.0.0.1` (a free port), at `/mcp`,
/// accept the `Host` names `localhost`, `127.0.0.1` and `::1` only (DNS rebinding), refuse
/// requests whose `Origin` (a browser page) is not the server's own loopback origin or
/// listed, and need no token.
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// Where to listen. A non-loopback address needs a bearer token.
    pub addr: SocketAddr,
    /// The endpoint path.
    pub path: String,
    /// When set, every request needs `Authorization: Bearer <token>`; others get 401.
    pub bearer_token: Option<Secret>,
    /// `Host` values accepted (names, or `name:port`). Others get 403.
    pub allowed_hosts: Vec<String>,
    /// `Origin` values accepted (`http://localhost:3000`, `:*` for any port); empty means the
    /// server's own loopback origins. Requests with another `Origin` get 403; requests
    /// without one (not from a browser) pass.
    pub allowed_origins: Vec<String>,
    /// Largest request body; a larger one gets 413 before it is read whole.
    pub max_body_bytes: usize,
    /// Time allowed for the request headers, and again for the body (408 or a closed
    /// connection after it).
    pub request_timeout: Duration,
    /// Connections served at once; at the cap a new connection sheds the oldest idle one
    /// (no request in flight, whether it ever sent a byte or not).
    pub max_connections: usize,
    /// How long a connection may wait between requests, or a response stream go without a
    /// byte out, before it is closed.
    pub idle_timeout: Duration,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            path: "/mcp".into(),
            bearer_token: None,
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            allowed_origins: Vec::new(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
        }
    }
}

impl HttpOptions {
    /// Listens on `127.0.0.1:port` (`0` for a free one).
    pub fn loopback(port: u16) -> Self {
        Self {
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            ..Self::default()
        }
    }

    /// Requires `Authorization: Bearer <token>`.
    pub fn with_bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer_token = Some(Secret::new(token.into()));
        self
    }
}

/// A running HTTP server. Dropping it does not stop it; call [`HttpServer::shutdown`].
#[derive(Debug)]
pub struct HttpServer {
    addr: SocketAddr,
    path: String,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl HttpServer {
    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<addr><path>`.
    pub fn url(&self) -> String {
        format!("http://{}{}", self.addr, self.path)
    }

    /// Stops accepting, ends every session and waits for the accept loop to end.
    pub async fn shutdown(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }

    /// Waits until the server stops (it runs until [`HttpServer::shutdown`] or an error).
    pub async fn wait(self) {
        let _ = self.task.await;
    }
}

type Body = BoxBody<Bytes, Infallible>;

struct Door {
    service: StreamableHttpService<Handler, LocalSessionManager>,
    sessions: Arc<LocalSessionManager>,
    /// Held across a `DELETE`'s check and its close, so two for one session get 204 once.
    deleting: tokio::sync::Mutex<()>,
    path: String,
    token: Option<BearerToken>,
    max_body_bytes: usize,
    request_timeout: Duration,
}

pub(super) async fn serve(
    shared: Arc<Shared>,
    options: HttpOptions,
) -> Result<HttpServer, ServeError> {
    if !options.addr.ip().is_loopback() && options.bearer_token.is_none() {
        return Err(ServeError::Unprotected { addr: options.addr });
    }
    let listener = TcpListener::bind(options.addr)
        .await
        .map_err(|source| ServeError::Bind {
            addr: options.addr,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| ServeError::Bind {
        addr: options.addr,
        source,
    })?;
    let stop = CancellationToken::new();
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(options.allowed_hosts.clone())
        .with_max_request_body_bytes(options.max_body_bytes)
        .with_cancellation_token(stop.child_token());
    // Without a list, a page served by this server's own loopback origin may call it; any
    // other browser origin is refused (DNS rebinding, cross-site requests).
    let origins = if options.allowed_origins.is_empty() {
        let port = addr.port();
        vec![
            format!("http://localhost:{port}"),
            format!("http://127.0.0.1:{port}"),
            format!("http://[::1]:{port}"),
        ]
    } else {
        options.allowed_origins.clone()
    };
    config = config
        .with_allowed_origins(origins)
        .enforce_origin_validation();
    let sessions = Arc::new(LocalSessionManager::default());
    let service = StreamableHttpService::new(
        move || Ok(Handler::new(Arc::clone(&shared))),
        Arc::clone(&sessions),
        config,
    );
    let door = Arc::new(Door {
        service,
        sessions,
        deleting: tokio::sync::Mutex::new(()),
        path: options.path.clone(),
        token: options
            .bearer_token
            .as_ref()
            .map(|token| BearerToken::new(token.expose())),
        max_body_bytes: options.max_body_bytes,
        request_timeout: options.request_timeout,
    });
    // Stopping ends every session, and with them their streams: nothing to wait for.
    let limits = Limits::default()
        .header_read_timeout(options.request_timeout)
        .body_read_timeout(options.request_timeout)
        .idle_timeout(options.idle_timeout)
        .max_connections(options.max_connections)
        .shutdown_grace(Duration::ZERO);
    let task = tokio::spawn(accept_loop(
        listener,
        limits,
        stop.clone(),
        move |request: Request<RequestBody>, _addrs: Addrs| {
            let door = Arc::clone(&door);
            async move { door.handle(request).await }
        },
    ));
    Ok(HttpServer {
        addr,
        path: options.path,
        stop,
        task,
    })
}

impl Door {
    async fn handle(&self, request: Request<RequestBody>) -> Response<Body> {
        if request.uri().path() != self.path {
            return plain(
                StatusCode::NOT_FOUND,
                "not found: the MCP endpoint is elsewhere",
            );
        }
        if let Some(expected) = &self.token
            && !request
                .headers()
                .get(header::AUTHORIZATION)
                .is_some_and(|v| expected.authorizes(v.as_bytes()))
        {
            let mut response = plain(
                StatusCode::UNAUTHORIZED,
                "unauthorized: a bearer token is required",
            );
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return response;
        }
        let declared = request
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|len| len > self.max_body_bytes as u64) {
            return plain(StatusCode::PAYLOAD_TOO_LARGE, "request body too large");
        }
        let (parts, body) = request.into_parts();
        let collected = tokio::time::timeout(
            self.request_timeout,
            Limited::new(body, self.max_body_bytes).collect(),
        )
        .await;
        let bytes = match collected {
            Err(_) => return plain(StatusCode::REQUEST_TIMEOUT, "request body too slow"),
            Ok(Err(err)) if err.is::<http_body_util::LengthLimitError>() => {
                return plain(StatusCode::PAYLOAD_TOO_LARGE, "request body too large");
            }
            Ok(Err(_)) => return plain(StatusCode::BAD_REQUEST, "request body could not be read"),
            Ok(Ok(collected)) => collected.to_bytes(),
        };
        let request = Request::from_parts(parts, Full::new(bytes));
        if request.method() == Method::DELETE {
            return self.delete(request).await;
        }
        self.service.handle(request).await
    }

    /// A `DELETE`: 404 for a session this server does not hold, else rmcp ends it (its 202
    /// answered as 204).
    async fn delete(&self, request: Request<Full<Bytes>>) -> Response<Body> {
        let Some(id) = request
            .headers()
            .get(HEADER_SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(|id| Arc::<str>::from(id.to_owned()))
        else {
            // rmcp answers a DELETE without a session id (400).
            return self.service.handle(request).await;
        };
        let _one_at_a_time = self.deleting.lock().await;
        if !self.sessions.has_session(&id).await.unwrap_or(false) {
            return plain(
                StatusCode::NOT_FOUND,
                "not found: no such session (unknown, or it has ended)",
            );
        }
        let mut response = self.service.handle(request).await;
        if response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::NO_CONTENT;
            *response.body_mut() = Full::new(Bytes::new()).boxed();
            response.headers_mut().remove(header::CONTENT_TYPE);
            response.headers_mut().remove(header::CONTENT_LENGTH);
        }
        response
    }
}

/// The session header of Streamable HTTP.
const HEADER_SESSION_ID: &str = "mcp-session-id";

fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    response
}
