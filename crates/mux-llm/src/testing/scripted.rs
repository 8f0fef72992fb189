//! A client that plays scripted responses and records the requests it receives.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;

use crate::client::{BoxFuture, EventStream, LlmClient};
use crate::error::LlmError;
use crate::event::{BlockStart, StreamEvent};
use crate::message::ContentBlock;
use crate::request::Request;
use crate::response::Response;

type Responder = Box<dyn FnMut(&Request) -> Result<Response, LlmError> + Send>;

/// One scripted answer.
pub enum Script {
    /// A whole response, streamed as the events that build it.
    Response(Response),
    /// These events, in order (an `Err` ends the stream with that error).
    Events(Vec<Result<StreamEvent, LlmError>>),
    /// The request fails before streaming.
    Error(LlmError),
}

/// Plays a queue of [`Script`]s (or calls a closure) and records every request.
///
/// ```
/// use mux_llm::testing::ScriptedClient;
/// use mux_llm::{LlmClient, Request};
///
/// # futures::executor::block_on(async {
/// let client = ScriptedClient::new().reply_text("Hello");
/// let reply = client.complete(Request::new("m", 10).user("Hi")).await?;
/// assert_eq!(reply.text(), "Hello");
/// assert_eq!(client.requests()[0].messages[0].text(), "Hi");
/// # Ok::<(), mux_llm::LlmError>(()) }).unwrap();
/// ```
#[derive(Clone, Default)]
pub struct ScriptedClient {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Default)]
struct Inner {
    scripts: VecDeque<Script>,
    responder: Option<Responder>,
    requests: Vec<Request>,
    /// When set, replies stream word by word with this wait before each event.
    pace: Option<Duration>,
}

impl ScriptedClient {
    /// A client with nothing scripted; requests fail until something is queued.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queues a script.
    pub fn push(self, script: Script) -> Self {
        self.lock().scripts.push_back(script);
        self
    }

    /// Queues a whole response.
    pub fn reply(self, response: Response) -> Self {
        self.push(Script::Response(response))
    }

    /// Queues a text reply that ends the turn.
    pub fn reply_text(self, text: impl Into<String>) -> Self {
        self.reply(Response::from_text(text))
    }

    /// Queues a reply that calls one tool: a `tool_use` block with `id`, `name` and `input`,
    /// ending the turn with [`StopReason::ToolUse`](crate::StopReason::ToolUse).
    ///
    /// ```
    /// use mux_llm::testing::ScriptedClient;
    /// use serde_json::json;
    ///
    /// let model = ScriptedClient::new()
    ///     .reply_tool_call("call_1", "add", json!({"a": 2, "b": 3}))
    ///     .reply_text("5");
    /// # let _ = model;
    /// ```
    pub fn reply_tool_call(
        self,
        id: impl Into<String>,
        name: impl Into<String>,
        input: serde_json::Value,
    ) -> Self {
        self.reply(Response::from_tool_use(id, name, input))
    }

    /// Streams every scripted reply word by word, waiting `delay` before each event, so
    /// streaming and cancellation can be shown and tested offline.
    ///
    /// ```
    /// use std::time::Duration;
    /// use futures::StreamExt;
    /// use mux_llm::testing::ScriptedClient;
    /// use mux_llm::{LlmClient, Request, StreamEvent};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
    /// let client = ScriptedClient::new()
    ///     .reply_text("one two three")
    ///     .stream_words(Duration::from_millis(1));
    /// let words: Vec<String> = client
    ///     .stream(Request::new("m", 10).user("count"))
    ///     .await?
    ///     .filter_map(|event| async move {
    ///         match event {
    ///             Ok(StreamEvent::TextDelta { text, .. }) => Some(text),
    ///             _ => None,
    ///         }
    ///     })
    ///     .collect()
    ///     .await;
    /// assert_eq!(words, ["one ", "two ", "three"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stream_words(self, delay: Duration) -> Self {
        self.lock().pace = Some(delay);
        self
    }

    /// Answers every request (once the queue is empty) by calling `responder`.
    pub fn respond_with(
        self,
        responder: impl FnMut(&Request) -> Result<Response, LlmError> + Send + 'static,
    ) -> Self {
        self.lock().responder = Some(Box::new(responder));
        self
    }

    /// The requests received so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        self.lock().requests.clone()
    }

    fn next(&self, request: &Request) -> Script {
        let mut inner = self.lock();
        inner.requests.push(request.clone());
        if let Some(script) = inner.scripts.pop_front() {
            return script;
        }
        match inner.responder.as_mut() {
            Some(responder) => match responder(request) {
                Ok(response) => Script::Response(response),
                Err(error) => Script::Error(error),
            },
            None => Script::Error(LlmError::new(
                "scripted",
                crate::LlmFailure::Config {
                    message: format!(
                        "no scripted reply left for request {}",
                        inner.requests.len()
                    ),
                },
            )),
        }
    }
}

/// The events that stream `response`.
pub fn events_of(response: &Response) -> Vec<StreamEvent> {
    let mut events = vec![StreamEvent::MessageStart {
        id: response.id.clone(),
        model: response.model.clone(),
        usage: Default::default(),
    }];
    for (index, block) in response.content.iter().enumerate() {
        let (start, delta) = match block {
            ContentBlock::Text { text } => (
                BlockStart::Text,
                vec![StreamEvent::TextDelta {
                    index,
                    text: text.clone(),
                }],
            ),
            ContentBlock::Thinking {
                thinking,
                signature,
            } => (
                BlockStart::Thinking,
                vec![
                    StreamEvent::ThinkingDelta {
                        index,
                        thinking: thinking.clone(),
                    },
                    StreamEvent::SignatureDelta {
                        index,
                        signature: signature.clone(),
                    },
                ],
            ),
            ContentBlock::RedactedThinking { data } => {
                (BlockStart::RedactedThinking { data: data.clone() }, vec![])
            }
            ContentBlock::ToolUse { id, name, input } => (
                BlockStart::ToolUse {
                    id: id.clone(),
                    name: name.clone(),
                },
                vec![StreamEvent::ToolInputDelta {
                    index,
                    partial_json: input.to_string(),
                }],
            ),
            _ => continue,
        };
        events.push(StreamEvent::BlockStart {
            index,
            block: start,
        });
        events.extend(delta);
        events.push(StreamEvent::BlockStop { index });
    }
    if let Some(details) = &response.stop_details {
        events.push(StreamEvent::StopDetails(details.clone()));
    }
    events.push(StreamEvent::MessageDelta {
        stop_reason: Some(response.stop_reason.clone()),
        stop_sequence: response.stop_sequence.clone(),
        usage: Some(response.usage),
    });
    events.push(StreamEvent::MessageStop);
    events
}

impl LlmClient for ScriptedClient {
    fn provider(&self) -> &str {
        "scripted"
    }

    fn stream(&self, request: Request) -> BoxFuture<'_, Result<EventStream, LlmError>> {
        let script = self.next(&request);
        let pace = self.lock().pace;
        Box::pin(async move {
            let events: Vec<Result<StreamEvent, LlmError>> = match script {
                Script::Response(response) => events_of(&response).into_iter().map(Ok).collect(),
                Script::Events(events) => events,
                Script::Error(error) => return Err(error),
            };
            let Some(delay) = pace else {
                return Ok(Box::pin(futures::stream::iter(events)) as EventStream);
            };
            let words = events.into_iter().flat_map(|event| match event {
                Ok(StreamEvent::TextDelta { index, text }) => text
                    .split_inclusive(' ')
                    .map(|word| {
                        Ok(StreamEvent::TextDelta {
                            index,
                            text: word.to_owned(),
                        })
                    })
                    .collect(),
                other => vec![other],
            });
            let paced = futures::stream::iter(words).then(move |event| async move {
                tokio::time::sleep(delay).await;
                event
            });
            Ok(Box::pin(paced) as EventStream)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn scripts_play_in_order_then_the_closure_answers() {
        let client = ScriptedClient::new()
            .push(Script::Error(LlmError::transport("scripted", "down")))
            .reply_text("first")
            .respond_with(|request| {
                let mut reply = Response::from_text(format!("echo {}", request.messages[0].text()));
                reply.model = Some(request.model.clone());
                Ok(reply)
            });
        let request = |text: &str| Request::new("m", 8).user(text);
        assert_eq!(
            client.complete(request("a")).await.unwrap_err().kind(),
            "transport"
        );
        assert_eq!(client.complete(request("b")).await.unwrap().text(), "first");
        assert_eq!(
            client.complete(request("c")).await.unwrap().text(),
            "echo c"
        );
        let seen: Vec<String> = client
            .requests()
            .iter()
            .map(|r| r.messages[0].text())
            .collect();
        assert_eq!(seen, vec!["a", "b", "c"]);
    }

    #[tokio::test]
    async fn event_scripts_can_fail_mid_stream_and_empty_queues_fail() {
        let client = ScriptedClient::new().push(Script::Events(vec![
            Ok(StreamEvent::BlockStart {
                index: 0,
                block: BlockStart::Text,
            }),
            Ok(StreamEvent::TextDelta {
                index: 0,
                text: "partial".into(),
            }),
            Err(LlmError::transport("scripted", "cut")),
        ]));
        let events: Vec<_> = client
            .stream(Request::new("m", 8).user("x"))
            .await
            .unwrap()
            .collect()
            .await;
        assert_eq!(events.len(), 3);
        assert!(events[2].is_err());
        assert_eq!(
            client
                .complete(Request::new("m", 8).user("y"))
                .await
                .unwrap_err()
                .kind(),
            "config"
        );
    }

    #[test]
    fn responses_round_trip_through_their_events() {
        let response = Response {
            id: Some("id".into()),
            model: None,
            content: vec![
                ContentBlock::Thinking {
                    thinking: "hm".into(),
                    signature: "sig".into(),
                },
                ContentBlock::text("hi"),
                ContentBlock::tool_use("t1", "x", serde_json::json!({"a": [1, 2]})),
            ],
            stop_reason: crate::StopReason::ToolUse,
            stop_sequence: None,
            usage: crate::Usage {
                input_tokens: 3,
                output_tokens: 4,
                ..Default::default()
            },
            stop_details: None,
        };
        let mut acc = crate::Accumulator::new("scripted");
        for event in events_of(&response) {
            acc.push(&event).unwrap();
        }
        assert_eq!(acc.finish().unwrap(), response);
    }
}
