//! The HTTP surface: the card, and the JSON-RPC endpoint answering in JSON or, for the
//! streaming methods, in SSE.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request as HttpRequest, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::Stream;

use crate::card::{CARD_PATH, Card, PROTOCOL_VERSION, RPC_PATH};
use crate::methods::{Methods, Reply, Source};
use crate::rpc::{Request, RequestId, RpcError, error_response, result_text};
use crate::security::{Guard, Refusal};
use crate::task::Next;

/// The port a connection came in on, set by [`crate::A2aServer::serve`] so the server's own
/// loopback origin is known.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LocalPort(pub(crate) u16);

/// What every request shares.
pub(crate) struct Shared {
    pub(crate) methods: Methods,
    pub(crate) guard: Guard,
    pub(crate) card: Card,
    pub(crate) public_url: Option<String>,
    pub(crate) body_limit: usize,
    pub(crate) body_timeout: Duration,
}

pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route(CARD_PATH, get(card))
        .route(RPC_PATH, post(call))
        .with_state(shared)
}

fn local_port(request: &HttpRequest) -> Option<u16> {
    request.extensions().get::<LocalPort>().map(|p| p.0)
}

async fn card(State(shared): State<Arc<Shared>>, request: HttpRequest) -> Response {
    if let Err(refusal) =
        shared
            .guard
            .check_public(request.headers(), request.uri(), local_port(&request))
    {
        return refused(&request, refusal);
    }
    let url = match &shared.public_url {
        Some(url) => url.clone(),
        // The Host passed the allow list above, so it is one of this server's names.
        None => {
            let host = request
                .headers()
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .unwrap_or("localhost");
            format!("http://{host}{RPC_PATH}")
        }
    };
    json_response(StatusCode::OK, shared.card.for_url(&url).to_string())
}

async fn call(State(shared): State<Arc<Shared>>, request: HttpRequest) -> Response {
    let checks = shared
        .guard
        .check_public(request.headers(), request.uri(), local_port(&request))
        .and_then(|()| shared.guard.check_call(request.method(), request.headers()));
    if let Err(refusal) = checks {
        return refused(&request, refusal);
    }
    let version = request.headers().get("a2a-version").cloned();
    let body = request.into_body();
    let bytes = match tokio::time::timeout(
        shared.body_timeout,
        axum::body::to_bytes(body, shared.body_limit),
    )
    .await
    {
        Err(_) => {
            return status_error(StatusCode::REQUEST_TIMEOUT, "the request body was too slow");
        }
        Ok(Err(_)) => {
            return status_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("the request body is over {} bytes", shared.body_limit),
            );
        }
        Ok(Ok(bytes)) => bytes,
    };
    let request = match Request::read(&bytes) {
        Ok(request) => request,
        Err((id, error)) => return rpc_error(&id, &error),
    };
    if let Err(error) = check_version(version.as_ref()) {
        return rpc_error(&request.id, &error);
    }
    match shared.methods.call(&request).await {
        Ok(Reply::Result(result)) => {
            json_response(StatusCode::OK, result_text(&request.id, &result))
        }
        Ok(Reply::Stream { source, first }) => sse(stream(request.id, source, first)),
        Err(error) => rpc_error(&request.id, &error),
    }
}

/// `A2A-Version` must be 1.x. Without it the client speaks 0.3 (the spec's default).
fn check_version(value: Option<&HeaderValue>) -> Result<(), RpcError> {
    let Some(value) = value else {
        return Err(RpcError::version(format!(
            "the request has no A2A-Version header, which means A2A 0.3; this server speaks A2A {PROTOCOL_VERSION}"
        )));
    };
    let text = value.to_str().unwrap_or_default().trim();
    let major = text.split('.').next().unwrap_or_default();
    if major == "1"
        && text
            .split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    {
        Ok(())
    } else {
        Err(RpcError::version(format!(
            "A2A-Version `{}` is not supported; this server speaks A2A {PROTOCOL_VERSION}",
            text.chars().take(40).collect::<String>()
        )))
    }
}

fn stream(
    id: RequestId,
    source: Source,
    first: String,
) -> impl Stream<Item = Result<Event, Infallible>> + Send + 'static {
    struct Reading {
        id: RequestId,
        source: Source,
        queued: VecDeque<String>,
    }
    let reading = Reading {
        id,
        source,
        queued: VecDeque::from([first]),
    };
    futures::stream::unfold(Some(reading), |state| async move {
        let mut reading = state?;
        loop {
            if let Some(item) = reading.queued.pop_front() {
                let event = Event::default().data(result_text(&reading.id, &item));
                return Some((Ok(event), Some(reading)));
            }
            match reading.source.next().await {
                Next::Updates(updates) => {
                    reading.queued.extend(updates.iter().map(|u| u.to_string()));
                }
                Next::Snapshot(task) => {
                    let item = crate::wire::StreamResponse::Task(*task);
                    reading
                        .queued
                        .push_back(serde_json::to_string(&item).unwrap_or_else(|_| "{}".into()));
                }
                Next::End => return None,
            }
        }
    })
}

fn sse(stream: impl Stream<Item = Result<Event, Infallible>> + Send + 'static) -> Response {
    let mut response = Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response();
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

fn json_response(status: StatusCode, body: String) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// A JSON-RPC error, sent with HTTP 200 as the binding does (an OS error's text goes to the
/// log, not to the client).
fn rpc_error(id: &RequestId, error: &RpcError) -> Response {
    json_response(
        StatusCode::OK,
        error_response(id, &error.for_client()).to_string(),
    )
}

/// A request refused at the HTTP level: its status, with a JSON-RPC error body a client
/// can show.
fn status_error(status: StatusCode, message: &str) -> Response {
    let error = RpcError::invalid_request(message);
    json_response(
        status,
        error_response(&RequestId(serde_json::Value::Null), &error).to_string(),
    )
}

fn refused(request: &HttpRequest, refusal: Refusal) -> Response {
    tracing::warn!(
        status = refusal.status.as_u16(),
        reason = refusal.reason,
        method = %request.method(),
        path = %request.uri().path().chars().take(200).collect::<String>(),
        "mux-a2a refused a request: {}",
        refusal.message
    );
    let error = RpcError {
        code: -32600,
        reason: refusal.reason,
        message: refusal.message,
    };
    let mut response = json_response(
        refusal.status,
        error_response(&RequestId(serde_json::Value::Null), &error).to_string(),
    );
    if refusal.status == StatusCode::UNAUTHORIZED {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    response
}
