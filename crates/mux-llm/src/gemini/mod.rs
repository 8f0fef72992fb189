//! Google Gemini (`generateContent` / `streamGenerateContent`) with function calling. The
//! API key travels in the `x-goog-api-key` header, never in the URL.

mod client;
mod stream;
mod wire;

pub use client::{DEFAULT_BASE_URL, GeminiClient};
pub use stream::{GeminiDecoder, response_from_json};
pub use wire::request_body;
