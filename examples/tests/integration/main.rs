//! The integration tests, one module per area, linked into one test binary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod a2a_agent;
mod a2a_agent_durable;
mod acp_agent;
mod acp_agent_hostile_input;
mod agent_in_twelve_lines;
mod common;
mod evals;
mod llm_call;
mod mcp_agent_server;
mod mcp_client;
mod mcp_inspect;
mod mcp_tools_server;
mod one_agent_on_two_faces;
mod quickstart;
mod temporal_agent;
mod web_agent_durable;
mod web_agent_in_a_browser;
mod web_agent_refuses_cross_site_requests;
mod web_agent_under_slowloris;
