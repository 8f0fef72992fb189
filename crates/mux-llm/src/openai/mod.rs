//! OpenAI Chat Completions, and the servers that speak it (Ollama, vLLM, llama.cpp server,
//! OpenRouter, Groq) through a base URL, an optional key and a [`Preset`].

mod client;
mod stream;
mod wire;

pub use client::{OpenAiClient, Preset};
pub use stream::OpenAiDecoder;
pub use wire::{WireOptions, request_body, response_from_json};
