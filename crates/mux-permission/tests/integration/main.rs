//! The integration tests, one module per area, linked into one test binary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod builtin_tools;
mod decision_matrix;
mod foreign_git_directories_ask;
mod gate;
mod internal_addresses_are_denied_however_spelled;
mod properties;
mod protected_paths_and_plan_mode;
mod scopes;
mod shell_adversarial;
mod shell_mutations;
mod tool_matrix;
mod tracing_events;
mod unexplained_words_never_allow;
