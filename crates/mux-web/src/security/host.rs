//! The `Host` allow-list, against DNS rebinding, is mux-http's [`HostAllowList`]; this module
//! keeps the local address [`crate::serve`] gives it, and the configuration error.

use std::net::SocketAddr;

use crate::error::ConfigError;

pub(crate) use mux_http::HostAllowList;

/// The local address a connection was accepted on; [`crate::serve`] puts it in every request's
/// extensions, so the default allow-list knows the server's own address and port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalAddr(pub SocketAddr);

impl From<mux_http::InvalidHost> for ConfigError {
    fn from(invalid: mux_http::InvalidHost) -> Self {
        Self::InvalidAllowedHost(invalid.0)
    }
}
