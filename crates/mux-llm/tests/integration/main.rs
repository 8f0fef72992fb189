//! The integration tests, one module per area, linked into one test binary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

mod anthropic_wire;
mod cassettes;
mod fallback;
mod gemini_wire;
mod keys_never_logged;
mod openai_wire;
mod rechunking;
mod request_bodies;
mod responses_wire;
