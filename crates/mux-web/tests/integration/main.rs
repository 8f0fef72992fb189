//! The integration tests, one module per area, linked into one test binary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

mod ag_ui_validate;
mod an_agent_is_served_as_described;
mod http_surface;
mod real_agui_client;
mod requests_from_elsewhere_are_refused;
mod the_server_limits_connections;
