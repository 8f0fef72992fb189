//! The standalone GET stream of a Streamable HTTP session that began with `initialize`.
//!
//! rmcp opens that stream in the background once the handshake is done, and a server request
//! sent on it before it is open is lost. [`Signalling`] wraps the HTTP client and tells a
//! [`StandaloneStream`] when the first opening settled, so `connect` can wait for it before
//! reporting `connected`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::Sse;
use tokio::sync::watch;

/// How the first opening of the standalone stream ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Opening {
    /// Not settled yet.
    Pending,
    /// The server answered the GET with the stream open.
    Open,
    /// The server answered 405: it offers no standalone stream.
    Unsupported,
    /// The GET failed, for this reason.
    Failed(String),
    /// `initialize` got no session id, so rmcp opens no standalone stream.
    NoSession,
}

/// The first opening's outcome, shared between the wrapped client and the connection.
#[derive(Clone)]
pub(crate) struct StandaloneStream {
    opening: Arc<watch::Sender<Opening>>,
}

impl StandaloneStream {
    pub(crate) fn new() -> Self {
        Self {
            opening: Arc::new(watch::Sender::new(Opening::Pending)),
        }
    }

    /// Records `outcome` unless an earlier one was recorded.
    fn settle(&self, outcome: Opening) {
        self.opening.send_if_modified(|opening| {
            let first = *opening == Opening::Pending;
            if first {
                *opening = outcome;
            }
            first
        });
    }

    /// The first opening's outcome, once settled; `None` when it is not settled within `limit`.
    pub(crate) async fn settled(&self, limit: Duration) -> Option<Opening> {
        let mut opening = self.opening.subscribe();
        let settled = opening.wait_for(|opening| *opening != Opening::Pending);
        match tokio::time::timeout(limit, settled).await {
            Ok(Ok(outcome)) => Some(outcome.clone()),
            // The sender lives in `self`, so it cannot be gone; treat it as a timeout anyway.
            Ok(Err(_)) | Err(_) => None,
        }
    }
}

/// A [`StreamableHttpClient`] that delegates every request to `inner` and reports the first
/// standalone GET (a session id, no `Last-Event-ID`) and a session-less `initialize` to its
/// [`StandaloneStream`].
#[derive(Clone)]
pub(crate) struct Signalling<C> {
    inner: C,
    stream: StandaloneStream,
}

impl<C> Signalling<C> {
    pub(crate) fn new(inner: C, stream: StandaloneStream) -> Self {
        Self { inner, stream }
    }
}

type GetResult<E> = Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<E>>;
type PostResult<E> = Result<StreamableHttpPostResponse, StreamableHttpError<E>>;

fn is_initialize(message: &ClientJsonRpcMessage) -> bool {
    matches!(message, ClientJsonRpcMessage::Request(request)
        if matches!(request.request, ClientRequest::InitializeRequest(_)))
}

/// Awaits `request`, then lets `observe` look at its result before handing it on.
async fn observed<T>(request: impl Future<Output = T>, observe: impl FnOnce(&T)) -> T {
    let result = request.await;
    observe(&result);
    result
}

/// Settles `stream` as [`Opening::NoSession`] when `result` answers `initialize` without a
/// session id.
fn after_post<E: std::error::Error + Send + Sync + 'static>(
    stream: &StandaloneStream,
    initialize: bool,
    result: &PostResult<E>,
) {
    if !initialize {
        return;
    }
    if let Ok(
        StreamableHttpPostResponse::Json(_, None) | StreamableHttpPostResponse::Sse(_, None),
    ) = result
    {
        stream.settle(Opening::NoSession);
    }
}

/// Settles `stream` with the outcome of the first standalone GET.
fn after_get<E: std::error::Error + Send + Sync + 'static>(
    stream: &StandaloneStream,
    standalone: bool,
    result: &GetResult<E>,
) {
    if !standalone {
        return;
    }
    stream.settle(match result {
        Ok(_) => Opening::Open,
        Err(StreamableHttpError::ServerDoesNotSupportSse) => Opening::Unsupported,
        Err(err) => Opening::Failed(err.to_string()),
    });
}

impl<C: StreamableHttpClient> StreamableHttpClient for Signalling<C> {
    type Error = C::Error;

    fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = PostResult<Self::Error>> + Send + '_ {
        let initialize = is_initialize(&message);
        let stream = self.stream.clone();
        let post = self
            .inner
            .post_message(uri, message, session_id, auth_header, custom_headers);
        observed(post, move |result| after_post(&stream, initialize, result))
    }

    fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> impl Future<Output = PostResult<Self::Error>> + Send + '_ {
        let initialize = is_initialize(&message);
        let stream = self.stream.clone();
        let post = self.inner.post_message_with_max_sse_event_size(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        );
        observed(post, move |result| after_post(&stream, initialize, result))
    }

    fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<(), StreamableHttpError<Self::Error>>> + Send + '_ {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
    }

    fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = GetResult<Self::Error>> + Send + '_ {
        let standalone = session_id.is_some() && last_event_id.is_none();
        let stream = self.stream.clone();
        let get =
            self.inner
                .get_stream(uri, session_id, last_event_id, auth_header, custom_headers);
        observed(get, move |result| after_get(&stream, standalone, result))
    }

    fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> impl Future<Output = GetResult<Self::Error>> + Send + '_ {
        let standalone = session_id.is_some() && last_event_id.is_none();
        let stream = self.stream.clone();
        let get = self.inner.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        );
        observed(get, move |result| after_get(&stream, standalone, result))
    }
}
