//! Why a path was refused by the [`Sandbox`](super::Sandbox) or could not be resolved.
//!
//! The error has its own module so that the resolution beneath a handle (`beneath`) and the
//! sandbox built on it both depend on it, and neither on the other's error.

use std::io;
use std::path::PathBuf;

use crate::ToolError;

/// Why a path was refused or could not be resolved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// The root directory cannot be used.
    #[error("the sandbox root {root:?} cannot be used: {source}")]
    Root {
        /// The root as configured.
        root: PathBuf,
        /// What went wrong.
        source: io::Error,
    },
    /// The root's real path is no longer the one recorded at construction: the root, or a
    /// directory above it, was moved or replaced by a symlink.
    #[error("the sandbox root {root:?} was moved or replaced since the sandbox was created")]
    RootChanged {
        /// The root's real path as recorded.
        root: PathBuf,
    },
    /// The root exists but is not a directory.
    #[error("the sandbox root {root:?} is not a directory")]
    RootNotDirectory {
        /// The root as configured.
        root: PathBuf,
    },
    /// The path is empty.
    #[error("the path is empty; give a path relative to the root, or `.` for the root itself")]
    Empty,
    /// The path contains a NUL byte.
    #[error("the path {path:?} contains a NUL byte")]
    Nul {
        /// The path as given.
        path: String,
    },
    /// The path starts with `~`.
    #[error(
        "the path {path:?} starts with `~`; home directories are not expanded, give a path relative to the root"
    )]
    Home {
        /// The path as given.
        path: String,
    },
    /// A `..` component of the path climbs above the root.
    #[error(
        "the path {path:?} contains a `..` that leads outside the root; give a path inside the root"
    )]
    ParentComponent {
        /// The path as given.
        path: String,
    },
    /// The path is absolute and does not lie under the root.
    #[error("the path {path:?} is absolute and outside the root; give a path relative to the root")]
    OutsideRoot {
        /// The path as given.
        path: String,
    },
    /// A symlink on the path leads outside the root.
    #[error("the path {path:?} leads outside the root through the symlink {link:?}")]
    SymlinkEscape {
        /// The path as given.
        path: String,
        /// The symlink, relative to the root.
        link: PathBuf,
    },
    /// A symlink on the path is part of a loop.
    #[error("the path {path:?} goes through a symlink loop at {link:?}")]
    SymlinkLoop {
        /// The path as given.
        path: String,
        /// The symlink, relative to the root.
        link: PathBuf,
    },
    /// A symlink on the path points to nothing.
    #[error("the path {path:?} goes through the dangling symlink {link:?}")]
    DanglingSymlink {
        /// The path as given.
        path: String,
        /// The symlink, relative to the root.
        link: PathBuf,
    },
    /// A component before the last is a file, not a directory.
    #[error("the path {path:?} goes through {file:?}, which is not a directory")]
    NotADirectory {
        /// The path as given.
        path: String,
        /// The offending component, relative to the root.
        file: PathBuf,
    },
    /// The path does not exist (for operations that need it to).
    #[error("{path:?} does not exist")]
    NotFound {
        /// The path as given.
        path: String,
    },
    /// The path kept changing (another process replacing what it names) while it was being
    /// opened; nothing was done.
    #[error("{path:?} kept changing while it was being opened; nothing was done, try again")]
    Unstable {
        /// The path as given.
        path: String,
    },
    /// The file system failed while the path was being resolved.
    #[error("cannot resolve {path:?}: {source}")]
    Io {
        /// The path as given.
        path: String,
        /// What went wrong.
        source: io::Error,
    },
}

impl From<SandboxError> for ToolError {
    fn from(error: SandboxError) -> Self {
        ToolError::other(error)
    }
}
