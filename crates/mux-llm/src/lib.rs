#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod accumulate;
mod client;
pub mod decode;
mod error;
mod event;
mod message;
mod request;
mod response;
pub mod retry;
mod secret;
pub mod sse;

pub use accumulate::Accumulator;
pub use client::{BoxFuture, EventStream, LlmClient, accumulate};
pub use error::{LlmError, TimeoutPhase};
pub use event::{BlockStart, StreamEvent};
pub use message::{CacheHint, ContentBlock, ImageSource, Message, Role};
pub use request::{CachePolicy, ReasoningEffort, Request, Thinking, ToolChoice};
pub use response::{Response, StopReason, Usage};
pub use retry::RetryPolicy;
pub use secret::ApiKey;
