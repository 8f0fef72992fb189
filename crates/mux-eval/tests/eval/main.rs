//! mux-eval's integration tests, in one binary.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

mod cassettes;
mod evaluators;
mod judge;
mod reports;
mod runner;
mod spans;
mod support;
