//! Streamable HTTP serving: rmcp's session service behind mux's own door (bearer token, body
//! limit and timeouts, loopback by default), on mux-http's accept loop. The `Host` and
//! `Origin` checks are rmcp's (they take `:*` port patterns); the bearer token and the
//! accept loop are mux-http's, shared with mux-web and mux-a2a.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use mux_http::BearerToken;
use mux_http::serve::{Limits, accept_loop};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::ServeError;
use super::handler::{Handler, Shared};
use crate::Secret;

/// Default largest request body: 4 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// Default time a client has to send its request headers, and separately its body.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Default number of connections served at once; more wait in the kernel's backlog.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;

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
    /// Connections served at once.
    pub max_connections: usize,
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
    let service = StreamableHttpService::new(
        move || Ok(Handler::new(Arc::clone(&shared))),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let door = Arc::new(Door {
        service,
        path: options.path.clone(),
        token: options
            .bearer_token
            .as_ref()
            .map(|token| BearerToken::new(token.expose())),
        max_body_bytes: options.max_body_bytes,
        request_timeout: options.request_timeout,
    });
    let limits = Limits::new(options.request_timeout, options.max_connections);
    let task = tokio::spawn(accept_loop(
        listener,
        limits,
        stop.clone(),
        move |request, _local| {
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
    async fn handle(&self, request: Request<Incoming>) -> Response<Body> {
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
        self.service
            .handle(Request::from_parts(parts, Full::new(bytes)))
            .await
    }
}

fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    response
}
