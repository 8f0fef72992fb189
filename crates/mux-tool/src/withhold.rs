//! Paths a call must leave out of what it returns: the seam through which permission rules
//! reach inside a search.

use std::fmt;
use std::path::Path;

/// Decides which paths a call must not reveal. A gate hands one to the executor with its
/// approval ([`ApprovalGate::path_filter`](crate::ApprovalGate::path_filter)); tools that walk
/// a tree (`grep`, `glob`, `list_dir`) skip what it withholds and say how many paths they
/// left out.
///
/// ```
/// use std::path::Path;
/// use mux_tool::PathFilter;
///
/// struct NoSecrets;
/// impl PathFilter for NoSecrets {
///     fn withholds(&self, path: &Path) -> bool {
///         path.components().any(|c| c.as_os_str() == "secrets")
///     }
/// }
/// assert!(NoSecrets.withholds(Path::new("/repo/secrets/key")));
/// ```
pub trait PathFilter: Send + Sync + 'static {
    /// Whether `path` (absolute, symlinks resolved) must be left out.
    fn withholds(&self, path: &Path) -> bool;
}

impl fmt::Debug for dyn PathFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PathFilter")
    }
}
