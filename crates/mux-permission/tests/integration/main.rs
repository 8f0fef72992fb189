//! The integration tests, one module per area, linked into one test binary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod awk_reads_as_awk_reads;
mod bash_reads_first;
mod builtin_tools;
mod decision_matrix;
mod foreign_git_directories_ask;
mod gate;
mod internal_addresses_are_denied_however_spelled;
mod jq_reads_as_jq_reads;
mod option_arity_attacks;
mod properties;
mod protected_paths_and_plan_mode;
mod real_programs;
mod sandbox_settings;
mod sandbox_verdicts;
mod sandbox_walls;
mod scopes;
mod sed_reads_as_gnu_sed_reads;
mod shell_adversarial;
mod shell_mutations;
mod tool_matrix;
mod tracing_events;
mod unexplained_words_never_allow;
