//! The integration tests, one module per area, linked into one test binary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

mod builtin_a_swapped_symlink_never_wins_the_race;
mod builtin_bash_egress;
mod builtin_bash_file_policy;
mod builtin_bash_git_drivers_and_trailers;
mod builtin_bash_git_under_the_wall;
mod builtin_bash_kills_its_process_group;
mod builtin_bash_os_placeholders;
mod builtin_bash_os_sandbox;
mod builtin_bash_os_wall;
mod builtin_delegated_files;
mod builtin_file_tools;
mod builtin_paths_cannot_escape_the_root;
mod builtin_schemas;
mod builtin_tools_present_themselves;
mod builtin_wall_around_any_command;
mod builtin_web_fetch;
mod executor_hooks_and_approval;
mod executor_isolation_and_batches;
mod registry_and_typed_tools;
