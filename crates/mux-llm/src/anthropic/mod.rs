//! The Anthropic Messages API: streaming and not, tools, extended thinking (signatures sent
//! back untouched), redacted thinking, prompt caching and usage with cache tokens.

mod client;
mod output;
mod stream;
mod wire;

pub use client::{AnthropicClient, DEFAULT_BASE_URL, DEFAULT_VERSION};
pub use stream::AnthropicDecoder;
pub use wire::{request_body, response_from_json};
