//! A started command, and what must live as long as it runs.

use super::protected;

/// A started command, and what must live as long as it runs.
#[derive(Debug)]
pub(crate) struct Spawned {
    /// The command.
    pub(crate) child: tokio::process::Child,
    /// Placeholders that keep absent protected paths from being created; removed on drop.
    pub(crate) placeholders: protected::Placeholders,
    /// The command's egress proxy, stopped on drop.
    pub(crate) _proxy: Option<super::super::egress::Proxy>,
}
