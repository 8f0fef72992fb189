//! From bytes to normalized events: an SSE decoder feeding a provider's [`EventMapper`].

use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};

use crate::client::EventStream;
use crate::error::{LlmError, TimeoutPhase};
use crate::event::StreamEvent;
use crate::sse::{SseDecoder, SseError, SseEventRef};

/// Whether a stream goes on after an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// More events follow.
    Continue,
    /// The provider's terminal event arrived; the rest of the body is ignored.
    Done,
}

/// Translates one provider's SSE events into normalized [`StreamEvent`]s.
pub trait EventMapper: Send + 'static {
    /// The provider name used in errors.
    fn provider(&self) -> &str;

    /// Handles one SSE event. An in-stream error event becomes `Err`.
    fn on_event(
        &mut self,
        event: SseEventRef<'_>,
        out: &mut Vec<StreamEvent>,
    ) -> Result<Flow, LlmError>;

    /// The body ended before [`Flow::Done`]: emit what closes the message, or fail when the
    /// stream was cut short.
    fn on_end(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), LlmError>;
}

/// Why feeding stopped early.
enum Halt {
    Sse(SseError),
    Mapper(LlmError),
    Done,
}

impl From<SseError> for Halt {
    fn from(err: SseError) -> Self {
        Self::Sse(err)
    }
}

/// Feeds one chunk (or the end of input, for `None`) through the decoder and the mapper.
/// Returns whether the mapper saw its terminal event.
fn pump<M: EventMapper>(
    decoder: &mut SseDecoder,
    mapper: &mut M,
    chunk: Option<&[u8]>,
    out: &mut Vec<StreamEvent>,
) -> Result<bool, LlmError> {
    let mut step = |event: SseEventRef<'_>| match mapper.on_event(event, out) {
        Ok(Flow::Continue) => Ok(()),
        Ok(Flow::Done) => Err(Halt::Done),
        Err(err) => Err(Halt::Mapper(err)),
    };
    let result = match chunk {
        Some(chunk) => decoder.feed_with(chunk, &mut step),
        None => decoder.finish_with(&mut step),
    };
    match result {
        Ok(()) => Ok(false),
        Err(Halt::Done) => Ok(true),
        Err(Halt::Mapper(err)) => Err(err),
        Err(Halt::Sse(err)) => Err(LlmError::decode(
            mapper.provider(),
            err.to_string(),
            &err.snippet,
        )),
    }
}

/// Decodes a whole body held in memory, chunk by chunk, into events.
pub fn decode_chunks<'a, M: EventMapper>(
    mut mapper: M,
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> Result<Vec<StreamEvent>, LlmError> {
    let mut decoder = SseDecoder::new();
    let mut out = Vec::new();
    for chunk in chunks {
        if pump(&mut decoder, &mut mapper, Some(chunk), &mut out)? {
            return Ok(out);
        }
    }
    if !pump(&mut decoder, &mut mapper, None, &mut out)? {
        mapper.on_end(&mut out)?;
    }
    Ok(out)
}

struct State<S, M> {
    bytes: S,
    decoder: SseDecoder,
    mapper: M,
    pending: VecDeque<StreamEvent>,
    scratch: Vec<StreamEvent>,
    idle: Option<Duration>,
    finished: bool,
    /// An error to deliver once the events decoded before it have been delivered.
    failed: Option<LlmError>,
}

impl<S, M> State<S, M>
where
    S: Stream<Item = Result<Bytes, LlmError>> + Unpin + Send,
    M: EventMapper,
{
    async fn next_event(&mut self) -> Option<Result<StreamEvent, LlmError>> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some(Ok(event));
            }
            if let Some(error) = self.failed.take() {
                return Some(Err(error));
            }
            if self.finished {
                return None;
            }
            let next = match self.idle {
                Some(limit) => match tokio::time::timeout(limit, self.bytes.next()).await {
                    Ok(next) => next,
                    Err(_) => {
                        self.finished = true;
                        return Some(Err(LlmError::new(
                            self.mapper.provider().to_owned(),
                            crate::LlmFailure::Timeout {
                                phase: TimeoutPhase::Idle,
                                after: limit,
                            },
                        )));
                    }
                },
                None => self.bytes.next().await,
            };
            let step = match next {
                Some(Ok(chunk)) => pump(
                    &mut self.decoder,
                    &mut self.mapper,
                    Some(&chunk),
                    &mut self.scratch,
                ),
                Some(Err(err)) => Err(err),
                None => pump(&mut self.decoder, &mut self.mapper, None, &mut self.scratch)
                    .and_then(|done| {
                        if !done {
                            self.mapper.on_end(&mut self.scratch)?;
                        }
                        Ok(true)
                    }),
            };
            self.pending.extend(self.scratch.drain(..));
            match step {
                Ok(done) => self.finished = done,
                Err(err) => {
                    self.finished = true;
                    self.failed = Some(err);
                }
            }
        }
    }
}

/// Turns a body's byte stream into a stream of normalized events. When `idle` is set, a gap
/// longer than it between chunks ends the stream with a [`TimeoutPhase::Idle`] timeout. After
/// an error the stream ends.
pub fn decode_stream<S, M>(bytes: S, mapper: M, idle: Option<Duration>) -> EventStream
where
    S: Stream<Item = Result<Bytes, LlmError>> + Unpin + Send + 'static,
    M: EventMapper,
{
    let state = State {
        bytes,
        decoder: SseDecoder::new(),
        mapper,
        pending: VecDeque::new(),
        scratch: Vec::new(),
        idle,
        finished: false,
        failed: None,
    };
    Box::pin(futures::stream::unfold(state, |mut state| async move {
        let item = state.next_event().await?;
        Some((item, state))
    }))
}
