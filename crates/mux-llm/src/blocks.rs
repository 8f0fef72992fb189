//! What the stream decoders share: numbering the blocks they open, closing them, and ending
//! the message.

use crate::event::StreamEvent;
use crate::response::{StopReason, Usage};

/// The blocks a decoder has started, numbered in order, and those still open.
#[cfg(any(feature = "openai", feature = "gemini"))]
#[derive(Debug, Default)]
pub(crate) struct Blocks {
    next: usize,
    open: Vec<usize>,
}

#[cfg(any(feature = "openai", feature = "gemini"))]
impl Blocks {
    /// Starts `block` at the next index and keeps it open until closed.
    pub(crate) fn open(
        &mut self,
        block: crate::event::BlockStart,
        out: &mut Vec<StreamEvent>,
    ) -> usize {
        let index = self.next;
        self.next += 1;
        self.open.push(index);
        out.push(StreamEvent::BlockStart { index, block });
        index
    }

    /// Closes block `index`.
    #[cfg(feature = "gemini")]
    pub(crate) fn close(&mut self, index: usize, out: &mut Vec<StreamEvent>) {
        self.open.retain(|open| *open != index);
        out.push(StreamEvent::BlockStop { index });
    }

    /// Closes every block still open, in the order they were started.
    pub(crate) fn close_all(&mut self, out: &mut Vec<StreamEvent>) {
        for index in self.open.drain(..) {
            out.push(StreamEvent::BlockStop { index });
        }
    }
}

/// Ends the message: its stop reason and usage, then `MessageStop`.
pub(crate) fn end_message(out: &mut Vec<StreamEvent>, reason: StopReason, usage: Option<Usage>) {
    out.push(StreamEvent::MessageDelta {
        stop_reason: Some(reason),
        stop_sequence: None,
        usage,
    });
    out.push(StreamEvent::MessageStop);
}
