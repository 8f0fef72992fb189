//! x
mod config;
mod connection;
mod error;
mod content;
mod coordinator;
mod event;
// Server log messages are deprecated in 2026-07-28, but older servers still send them.
#[allow(deprecated)]
mod handler;
mod log;
mod naming;
mod policy;
mod proxy;
mod state;
mod transport;
pub use config::*;
pub use event::*;
pub use log::*;
pub use naming::*;
pub use state::*;
pub use connection::*;
pub use error::*;
pub use coordinator::*;
pub use policy::*;
pub use proxy::*;
