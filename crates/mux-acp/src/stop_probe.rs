//! Why the model stopped: the loop reports a finished run, and ACP wants to know whether the
//! last reply ended normally, hit `max_tokens` or was a refusal. A thin [`LlmClient`] wrapper
//! notes the stop reason of each streamed reply as it passes by; it changes nothing.

use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt;
use mux_llm::{
    BoxFuture, EventStream, LlmClient, LlmError, Request, Response, StopReason, StreamEvent,
};

/// Wraps a client and remembers the stop reason of the last streamed reply.
pub(crate) struct StopProbe {
    inner: Arc<dyn LlmClient>,
    last: Arc<Mutex<Option<StopReason>>>,
}

impl StopProbe {
    pub(crate) fn new(inner: Arc<dyn LlmClient>) -> (Self, ProbeReader) {
        let last = Arc::new(Mutex::new(None));
        let reader = ProbeReader {
            last: Arc::clone(&last),
        };
        (Self { inner, last }, reader)
    }
}

/// Reads what a [`StopProbe`] saw.
#[derive(Clone)]
pub(crate) struct ProbeReader {
    last: Arc<Mutex<Option<StopReason>>>,
}

impl ProbeReader {
    /// The stop reason of the last streamed reply, if one was seen.
    pub(crate) fn last(&self) -> Option<StopReason> {
        self.last
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Forgets the last reason (at the start of a prompt turn).
    pub(crate) fn reset(&self) {
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

impl LlmClient for StopProbe {
    fn provider(&self) -> &str {
        self.inner.provider()
    }

    fn stream(&self, request: Request) -> BoxFuture<'_, Result<EventStream, LlmError>> {
        let last = Arc::clone(&self.last);
        Box::pin(async move {
            let stream = self.inner.stream(request).await?;
            let observed = stream.inspect(move |event| {
                if let Ok(StreamEvent::MessageDelta {
                    stop_reason: Some(reason),
                    ..
                }) = event
                {
                    *last.lock().unwrap_or_else(PoisonError::into_inner) = Some(reason.clone());
                }
            });
            Ok(Box::pin(observed) as EventStream)
        })
    }

    fn complete(&self, request: Request) -> BoxFuture<'_, Result<Response, LlmError>> {
        // Side calls (titles, compaction summaries) go straight through unobserved.
        self.inner.complete(request)
    }
}
