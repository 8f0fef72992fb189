//! The ACP face driven in-process by a JSON-RPC peer over line channels: every method, the
//! updates a prompt run sends, approvals, modes, cancellation, replay and bad input.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod a_network_destination_is_asked_about;
mod an_agents_own_mcp_servers_stay;
mod budgets;
mod harness;
mod input;
mod methods;
/// Test models the orchestrator's, the agents' and the faces' tests share.
#[path = "../../../mux-llm/tests/support/models.rs"]
#[allow(dead_code, unreachable_pub)]
mod models;
mod prompt_runs;
mod read_only_tools_run_unasked;
/// Test tools mux-tool's, the orchestrator's and this crate's tests share.
#[path = "../../../mux-tool/tests/support/tools.rs"]
#[allow(dead_code, unreachable_pub)]
mod tools;
mod tools_describe_themselves;
