//! The provider-neutral client trait.

use std::pin::Pin;
use std::sync::Arc;

use futures::{Stream, StreamExt};

use crate::accumulate::Accumulator;
use crate::error::LlmError;
use crate::event::StreamEvent;
use crate::request::Request;
use crate::response::Response;

pub use mux_tool::BoxFuture;

/// A stream of normalized events. It ends after [`StreamEvent::MessageStop`] or after the
/// first error.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, LlmError>> + Send>>;

/// A model client. Object-safe: hold it as `Arc<dyn LlmClient>`.
///
/// `stream` resolves once the provider has accepted the request (HTTP errors and retries
/// happen before it resolves); `complete` accumulates the stream by default.
pub trait LlmClient: Send + Sync {
    /// The provider name (`anthropic`, `openai`, `ollama`, ...), used in errors and traces.
    fn provider(&self) -> &str;

    /// Sends the request and returns its event stream.
    fn stream(&self, request: Request) -> BoxFuture<'_, Result<EventStream, LlmError>>;

    /// Sends the request and returns the whole response.
    fn complete(&self, request: Request) -> BoxFuture<'_, Result<Response, LlmError>> {
        Box::pin(async move {
            let stream = self.stream(request).await?;
            accumulate(self.provider(), stream).await
        })
    }
}

impl<T: LlmClient + ?Sized> LlmClient for Arc<T> {
    fn provider(&self) -> &str {
        (**self).provider()
    }
    fn stream(&self, request: Request) -> BoxFuture<'_, Result<EventStream, LlmError>> {
        (**self).stream(request)
    }
    fn complete(&self, request: Request) -> BoxFuture<'_, Result<Response, LlmError>> {
        (**self).complete(request)
    }
}

/// Drains an event stream into a [`Response`]; the first error ends it.
pub async fn accumulate(provider: &str, mut stream: EventStream) -> Result<Response, LlmError> {
    let mut acc = Accumulator::new(provider);
    while let Some(event) = stream.next().await {
        acc.push(&event?)?;
    }
    acc.finish()
}
