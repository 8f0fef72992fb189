//! The integration tests, one module per area, linked into one test binary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod builtin_tools;
mod decision_matrix;
mod gate;
mod properties;
mod scopes;
mod shell_adversarial;
mod shell_mutations;
mod tracing_events;
