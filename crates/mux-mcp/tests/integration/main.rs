//! The integration tests, one module per area, linked into one test binary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

mod client_handlers;
mod everything_stdio;
mod failure_modes;
mod http_and_filesystem;
mod https;
mod listen_refused;
mod oauth;
mod paging_and_logging;
mod python_peers;
mod registry_sync;
#[cfg(feature = "server")]
mod server_door_and_codes;
#[cfg(feature = "server")]
mod server_side;
mod standalone_stream;
mod stdio_walls;
