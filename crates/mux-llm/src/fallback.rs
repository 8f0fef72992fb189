//! A client that falls back to the next of several clients when one fails with a retryable
//! error before anything of its answer was delivered.

use std::sync::Arc;

use futures::StreamExt;

use crate::client::{BoxFuture, EventStream, LlmClient};
use crate::error::LlmError;
use crate::event::StreamEvent;
use crate::request::Request;
use crate::response::Response;

/// One switch from a failed client to the next, as [`FallbackClient::on_switch`] reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct FallbackSwitch {
    /// The provider that failed.
    pub from: String,
    /// The provider tried next.
    pub to: String,
    /// Why the failed one was left.
    pub error: LlmError,
}

type OnSwitch = Arc<dyn Fn(&FallbackSwitch) + Send + Sync>;

struct Entry {
    client: Arc<dyn LlmClient>,
    /// The model this client is asked for, instead of the request's.
    model: Option<String>,
}

/// Tries its clients in order. A client that fails with a retryable error (overloaded, rate
/// limited after its own retries, a server error, a timeout, a broken connection) before its
/// stream delivered an event is left for the next one; any other error, and any error after
/// the first event, is the caller's.
///
/// Each switch is visible three ways: a [`StreamEvent::Fallback`] first in the stream that
/// follows, a `tracing` warning, and the [`FallbackClient::on_switch`] callback (the only one a
/// `complete` call has).
///
/// ```
/// # #[cfg(feature = "testing")] {
/// use mux_llm::testing::ScriptedClient;
/// use mux_llm::{FallbackClient, LlmClient, LlmError, Request};
///
/// # futures::executor::block_on(async {
/// let busy = ScriptedClient::new().push(mux_llm::testing::Script::Error(LlmError::new("primary", mux_llm::LlmFailure::Overloaded {
///     status: 529, message: "Overloaded".into(), retry_after: None,
/// })));
/// let spare = ScriptedClient::new().reply_text("Hello");
/// let client = FallbackClient::new([busy, spare]);
/// let reply = client.complete(Request::new("m", 10).user("Hi")).await?;
/// assert_eq!(reply.text(), "Hello");
/// # Ok::<(), LlmError>(()) }).unwrap();
/// # }
/// ```
#[derive(Clone)]
pub struct FallbackClient {
    entries: Arc<Vec<Entry>>,
    on_switch: Option<OnSwitch>,
}

impl std::fmt::Debug for FallbackClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let providers: Vec<&str> = self.entries.iter().map(|e| e.client.provider()).collect();
        f.debug_struct("FallbackClient")
            .field("providers", &providers)
            .finish()
    }
}

impl FallbackClient {
    /// Falls back through `clients` in order, each asked for the request's model. Mixed client
    /// types go in as `Arc<dyn LlmClient>`.
    pub fn new<C: LlmClient + 'static>(clients: impl IntoIterator<Item = C>) -> Self {
        Self {
            entries: Arc::new(
                clients
                    .into_iter()
                    .map(|client| Entry {
                        client: Arc::new(client),
                        model: None,
                    })
                    .collect(),
            ),
            on_switch: None,
        }
    }

    /// Adds a client tried after the others, asked for `model` instead of the request's
    /// (another provider names its models otherwise).
    pub fn then_with_model(
        mut self,
        client: impl LlmClient + 'static,
        model: impl Into<String>,
    ) -> Self {
        self.push(Arc::new(client), Some(model.into()));
        self
    }

    /// Adds a client tried after the others, asked for the request's model.
    pub fn then(mut self, client: impl LlmClient + 'static) -> Self {
        self.push(Arc::new(client), None);
        self
    }

    fn push(&mut self, client: Arc<dyn LlmClient>, model: Option<String>) {
        let mut entries: Vec<Entry> = self
            .entries
            .iter()
            .map(|e| Entry {
                client: e.client.clone(),
                model: e.model.clone(),
            })
            .collect();
        entries.push(Entry { client, model });
        self.entries = Arc::new(entries);
    }

    /// Calls `on_switch` at each switch from a failed client to the next.
    pub fn on_switch(
        mut self,
        on_switch: impl Fn(&FallbackSwitch) + Send + Sync + 'static,
    ) -> Self {
        self.on_switch = Some(Arc::new(on_switch));
        self
    }

    fn request_for(entry: &Entry, request: &Request) -> Request {
        let mut request = request.clone();
        if let Some(model) = &entry.model {
            request.model.clone_from(model);
        }
        request
    }

    /// Records a switch away from `from` after `error`; returns the event for the stream.
    fn switch(&self, from: usize, error: &LlmError) -> Option<FallbackSwitch> {
        let next = self.entries.get(from + 1)?;
        let switch = FallbackSwitch {
            from: self.entries[from].client.provider().to_owned(),
            to: next.client.provider().to_owned(),
            error: error.clone(),
        };
        tracing::warn!(
            from = %switch.from,
            to = %switch.to,
            error.kind = error.kind(),
            error = %error,
            "falling back to the next model client"
        );
        if let Some(on_switch) = &self.on_switch {
            on_switch(&switch);
        }
        Some(switch)
    }

    fn empty() -> LlmError {
        LlmError::new(
            "fallback",
            crate::LlmFailure::Config {
                message: "a FallbackClient needs at least one client".into(),
            },
        )
    }
}

impl LlmClient for FallbackClient {
    /// The first client's provider name.
    fn provider(&self) -> &str {
        self.entries
            .first()
            .map_or("fallback", |entry| entry.client.provider())
    }

    fn stream(&self, request: Request) -> BoxFuture<'_, Result<EventStream, LlmError>> {
        Box::pin(async move {
            let mut switches: Vec<StreamEvent> = Vec::new();
            let mut last = None;
            for (i, entry) in self.entries.iter().enumerate() {
                let attempt = entry
                    .client
                    .stream(Self::request_for(entry, &request))
                    .await;
                // The first event decides: an error in its place is still "before anything
                // reached the consumer".
                let error = match attempt {
                    Ok(mut stream) => match stream.next().await {
                        Some(Ok(first)) => {
                            let head: Vec<Result<StreamEvent, LlmError>> = switches
                                .into_iter()
                                .map(Ok)
                                .chain(std::iter::once(Ok(first)))
                                .collect();
                            return Ok(
                                Box::pin(futures::stream::iter(head).chain(stream)) as EventStream
                            );
                        }
                        Some(Err(error)) => error,
                        None => LlmError::transport(
                            entry.client.provider(),
                            "the stream ended before its first event",
                        ),
                    },
                    Err(error) => error,
                };
                if !error.is_retryable() {
                    return Err(error);
                }
                if let Some(switch) = self.switch(i, &error) {
                    switches.push(StreamEvent::Fallback {
                        from: switch.from,
                        to: switch.to,
                        error: switch.error,
                    });
                }
                last = Some(error);
            }
            Err(last.unwrap_or_else(Self::empty))
        })
    }

    fn complete(&self, request: Request) -> BoxFuture<'_, Result<Response, LlmError>> {
        Box::pin(async move {
            let mut last = None;
            for (i, entry) in self.entries.iter().enumerate() {
                match entry
                    .client
                    .complete(Self::request_for(entry, &request))
                    .await
                {
                    Ok(response) => return Ok(response),
                    Err(error) if error.is_retryable() => {
                        self.switch(i, &error);
                        last = Some(error);
                    }
                    Err(error) => return Err(error),
                }
            }
            Err(last.unwrap_or_else(Self::empty))
        })
    }
}

#[cfg(all(test, feature = "testing"))]
mod tests {
    use super::*;
    use crate::testing::{Script, ScriptedClient};
    use std::sync::Mutex;

    fn overloaded() -> LlmError {
        LlmError::new(
            "scripted",
            crate::LlmFailure::Overloaded {
                status: 529,
                message: "Overloaded".into(),
                retry_after: None,
            },
        )
    }

    #[tokio::test]
    async fn complete_switches_on_retryable_errors_only_and_reports_each_switch() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let a = ScriptedClient::new().push(Script::Error(overloaded()));
        let b = ScriptedClient::new().reply_text("from b");
        let client = FallbackClient::new([a, b.clone()])
            .on_switch(move |s| log.lock().unwrap().push(s.error.kind()));
        let reply = client
            .complete(Request::new("m", 5).user("x"))
            .await
            .unwrap();
        assert_eq!(reply.text(), "from b");
        assert_eq!(*seen.lock().unwrap(), vec!["overloaded"]);

        let auth = LlmError::new(
            "a",
            crate::LlmFailure::Authentication {
                status: 401,
                message: "bad key".into(),
            },
        );
        let a = ScriptedClient::new().push(Script::Error(auth));
        let b = ScriptedClient::new().reply_text("never");
        let client = FallbackClient::new([a, b.clone()]);
        let err = client
            .complete(Request::new("m", 5).user("x"))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), "authentication");
        assert!(b.requests().is_empty());
    }

    #[tokio::test]
    async fn the_model_override_reaches_the_next_client_and_the_last_error_is_returned() {
        let a = ScriptedClient::new().push(Script::Error(overloaded()));
        let b = ScriptedClient::new().push(Script::Error(overloaded()));
        let client = FallbackClient::new([a]).then_with_model(b.clone(), "other-model");
        let err = client
            .stream(Request::new("m", 5).user("x"))
            .await
            .err()
            .unwrap();
        assert_eq!(err.kind(), "overloaded");
        assert_eq!(b.requests()[0].model, "other-model");
        let none = FallbackClient::new(Vec::<ScriptedClient>::new());
        let err = none.stream(Request::new("m", 5)).await.err().unwrap();
        assert_eq!(err.kind(), "config");
    }
}
