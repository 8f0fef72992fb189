#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

/// The code in docs/llm-reference.md (the Responses API block), compiled as doctests; the
/// guide, docs/llm.md, is compiled by the facade on `mux::` paths.
#[cfg(all(
    doctest,
    feature = "anthropic",
    feature = "openai",
    feature = "openai-responses",
    feature = "gemini",
    feature = "testing"
))]
#[doc = include_str!("../../../docs/llm-reference.md")]
pub struct LlmReferenceDocs;

mod accumulate;
#[cfg(feature = "anthropic")]
pub mod anthropic;
#[cfg(any(feature = "openai", feature = "openai-responses", feature = "gemini"))]
mod blocks;
mod client;
pub mod decode;
mod error;
mod event;
mod fallback;
#[cfg(feature = "gemini")]
pub mod gemini;
#[cfg(feature = "http")]
pub mod http;
mod message;
#[cfg(feature = "openai")]
pub mod openai;
#[cfg(any(feature = "openai", feature = "openai-responses"))]
mod openai_content;
mod request;
mod response;
#[cfg(feature = "openai-responses")]
pub mod responses;
pub mod retry;
pub mod sse;
#[cfg(feature = "testing")]
pub mod testing;

pub use accumulate::Accumulator;
pub use client::{BoxFuture, EventStream, LlmClient, accumulate};
pub use error::{LlmError, LlmFailure, TimeoutPhase};
pub use event::{BlockStart, StreamEvent};
pub use fallback::{FallbackClient, FallbackSwitch};
pub use message::{CacheHint, ContentBlock, ImageSource, Message, Role};
pub use mux_tool::Secret;
pub use request::{CachePolicy, OutputSchema, ReasoningEffort, Request, Thinking, ToolChoice};
pub use response::{Response, StopDetails, StopReason, Usage};
pub use retry::{OnRetry, RetryNotice, RetryPolicy};
