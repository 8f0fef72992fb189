//! The integration tests, one module per area, linked into one test binary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

mod a_model_call_cut_short_is_issued_again;
mod agent_front_door;
mod approvals_and_ask_user;
mod budgets;
mod cancellation;
mod context_providers;
mod effect_keys;
mod hooks_at_every_point;
mod loop_on_a_scripted_model;
mod loop_on_recorded_provider_traffic;
mod mcp_servers;
mod only_the_tools_you_gave;
mod session_stores;
mod sessions_and_compaction;
mod settings_name_the_agents_tools;
mod the_same_defaults_on_every_face;
#[cfg(feature = "builtin")]
mod the_wall_and_the_policy_are_one_value;
mod unanswered_calls;
mod writes_behind_the_loop;
