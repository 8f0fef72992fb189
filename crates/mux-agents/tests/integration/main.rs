//! The integration tests, one module per area, linked into one test binary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

mod console;
mod console_in_a_terminal;
mod decomposition;
mod delegation;
mod runtime_and_handles;
mod voting;
