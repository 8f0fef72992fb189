//! The integration tests, one module per area, linked into one test binary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

#[cfg(feature = "page")]
mod a_branded_page_under_a_prefix;

mod a_locked_database_before_the_stream;
mod a_network_destination_is_asked_about;
mod a_pause_survives_kill_9_on_every_store;
mod a_prompt_the_store_refuses;
mod a_run_on_a_budget_ends_with_its_limit;
mod a_store_that_cannot_write;
mod ag_ui_validate;
mod an_agent_is_served_as_described;
mod durable_runs;
mod http_surface;
mod real_agui_client;
mod reattach_while_the_store_is_down;
mod requests_from_elsewhere_are_refused;
mod store_outages;
#[cfg(feature = "page")]
mod the_chat_page;
mod the_server_limits_connections;
mod tools_describe_themselves;
