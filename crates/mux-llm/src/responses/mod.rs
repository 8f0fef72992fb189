//! The OpenAI Responses API (`POST {base}/responses`), also spoken by servers implementing the
//! Open Responses specification: typed streaming events, function calls, reasoning items
//! carried across turns (with their encrypted content when asked), structured output through
//! `text.format`, and usage with cached and reasoning tokens.

mod client;
mod stream;
mod wire;

pub use client::{DEFAULT_BASE_URL, ResponsesClient};
pub use stream::ResponsesDecoder;
pub use wire::{ResponsesOptions, request_body, response_from_json};
