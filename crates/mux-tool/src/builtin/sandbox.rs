//! The root directory every built-in file tool is confined to.
//!
//! A path from the model is checked on every call in two steps:
//!
//! 1. **Lexically**: empty paths, NUL bytes, `~`, `..` components and absolute paths outside the
//!    root are refused before the file system is touched.
//! 2. **Physically**: starting from the real path of the root, each component is looked at with
//!    `lstat`. A symlink is resolved to its real path, which must lie inside the root; a dangling
//!    symlink or a symlink loop is refused. Components that do not exist yet (a file about to be
//!    written, directories about to be created) are appended to the last real directory.
//!
//! The result is a real path whose every existing component lies inside the real root, so a
//! write through a symlink ends inside the root or does not happen.
//!
//! The check guards against the paths a model asks for. It does not defend against another
//! process that swaps directories for symlinks between the check and the use, and hard links
//! that already exist inside the root are followed like any file.

use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

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
    /// The path has a `..` component.
    #[error(
        "the path {path:?} contains `..`; parent components are refused, give a path inside the root"
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

/// A path checked against a [`Sandbox`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SandboxPath {
    real: PathBuf,
    relative: PathBuf,
}

impl SandboxPath {
    /// The real path to operate on: symlinks resolved, inside the real root.
    pub fn real(&self) -> &Path {
        &self.real
    }

    /// The real path relative to the root (empty for the root itself).
    pub fn relative(&self) -> &Path {
        &self.relative
    }

    /// The relative path for messages, `.` for the root.
    pub fn display(&self) -> String {
        if self.relative.as_os_str().is_empty() {
            ".".to_owned()
        } else {
            self.relative.to_string_lossy().into_owned()
        }
    }
}

/// A root directory that bounds every path the built-in tools touch.
///
/// ```
/// use mux_tool::builtin::{Sandbox, SandboxError};
///
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("notes.txt"), "hi")?;
/// let sandbox = Sandbox::new(dir.path())?;
///
/// let notes = sandbox.resolve_existing("notes.txt")?;
/// assert_eq!(std::fs::read_to_string(notes.real())?, "hi");
/// assert!(matches!(sandbox.resolve("../etc/passwd"), Err(SandboxError::ParentComponent { .. })));
/// assert!(matches!(sandbox.resolve("/etc/passwd"), Err(SandboxError::OutsideRoot { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Sandbox {
    /// The real path of the root.
    root: PathBuf,
    /// The root as configured (made absolute), which absolute paths may also start with.
    configured: PathBuf,
}

impl Sandbox {
    /// A sandbox rooted at `root`, which must be an existing directory. The root's real path is
    /// recorded; every call checks that it still is the root's real path.
    pub fn new(root: impl AsRef<Path>) -> Result<Self, SandboxError> {
        let root = root.as_ref();
        let real = canonical_root(root)?;
        let configured = std::path::absolute(root).unwrap_or_else(|_| real.clone());
        Ok(Self {
            root: real,
            configured,
        })
    }

    /// The root's real path as of construction.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves `path` (relative to the root, or absolute under it) to a real path inside the
    /// root. The last components may not exist yet; every existing one is checked.
    pub fn resolve(&self, path: &str) -> Result<SandboxPath, SandboxError> {
        let root = canonical_root(&self.root)?;
        if root != self.root {
            return Err(SandboxError::RootChanged {
                root: self.root.clone(),
            });
        }
        let components = self.lexical(path, &root)?;
        let mut current = root.clone();
        let mut missing = false;
        let last = components.len().saturating_sub(1);
        for (index, component) in components.iter().enumerate() {
            let candidate = current.join(component);
            if missing {
                current = candidate;
                continue;
            }
            let relative_here = || relative_to(&candidate, &root);
            match std::fs::symlink_metadata(&candidate) {
                Err(err) if err.kind() == io::ErrorKind::NotFound => {
                    missing = true;
                    current = candidate;
                }
                Err(source) => {
                    return Err(SandboxError::Io {
                        path: path.to_owned(),
                        source,
                    });
                }
                Ok(meta) if meta.file_type().is_symlink() => {
                    let target = std::fs::canonicalize(&candidate)
                        .map_err(|err| symlink_error(path, relative_here(), err))?;
                    if !target.starts_with(&root) {
                        return Err(SandboxError::SymlinkEscape {
                            path: path.to_owned(),
                            link: relative_here(),
                        });
                    }
                    if index < last && !target.is_dir() {
                        return Err(SandboxError::NotADirectory {
                            path: path.to_owned(),
                            file: relative_here(),
                        });
                    }
                    current = target;
                }
                Ok(meta) => {
                    if index < last && !meta.is_dir() {
                        return Err(SandboxError::NotADirectory {
                            path: path.to_owned(),
                            file: relative_here(),
                        });
                    }
                    current = candidate;
                }
            }
        }
        let relative = relative_to(&current, &root);
        Ok(SandboxPath {
            real: current,
            relative,
        })
    }

    /// Like [`resolve`](Self::resolve), and the path must exist.
    pub fn resolve_existing(&self, path: &str) -> Result<SandboxPath, SandboxError> {
        let resolved = self.resolve(path)?;
        match std::fs::symlink_metadata(resolved.real()) {
            Ok(_) => Ok(resolved),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Err(SandboxError::NotFound {
                path: path.to_owned(),
            }),
            Err(source) => Err(SandboxError::Io {
                path: path.to_owned(),
                source,
            }),
        }
    }

    /// The checks that need no file system: the path's normal components, relative to `root`.
    fn lexical(&self, path: &str, root: &Path) -> Result<Vec<OsString>, SandboxError> {
        let owned = || path.to_owned();
        if path.trim().is_empty() {
            return Err(SandboxError::Empty);
        }
        if path.contains('\0') {
            return Err(SandboxError::Nul { path: owned() });
        }
        if path.starts_with('~') {
            return Err(SandboxError::Home { path: owned() });
        }
        let given = Path::new(path);
        let relative = if given.has_root() || given.is_absolute() {
            given
                .strip_prefix(root)
                .or_else(|_| given.strip_prefix(&self.root))
                .or_else(|_| given.strip_prefix(&self.configured))
                .map_err(|_| SandboxError::OutsideRoot { path: owned() })?
        } else {
            given
        };
        let mut components = Vec::new();
        for component in relative.components() {
            match component {
                Component::Normal(name) => components.push(name.to_owned()),
                Component::CurDir => {}
                Component::ParentDir => {
                    return Err(SandboxError::ParentComponent { path: owned() });
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(SandboxError::OutsideRoot { path: owned() });
                }
            }
        }
        Ok(components)
    }
}

fn canonical_root(root: &Path) -> Result<PathBuf, SandboxError> {
    let real = std::fs::canonicalize(root).map_err(|source| SandboxError::Root {
        root: root.to_owned(),
        source,
    })?;
    if !real.is_dir() {
        return Err(SandboxError::RootNotDirectory {
            root: root.to_owned(),
        });
    }
    Ok(real)
}

fn relative_to(path: &Path, root: &Path) -> PathBuf {
    path.strip_prefix(root).unwrap_or(path).to_owned()
}

fn symlink_error(path: &str, link: PathBuf, err: io::Error) -> SandboxError {
    let path = path.to_owned();
    if err.kind() == io::ErrorKind::NotFound {
        SandboxError::DanglingSymlink { path, link }
    } else if is_loop(&err) {
        SandboxError::SymlinkLoop { path, link }
    } else {
        SandboxError::Io { path, source: err }
    }
}

#[cfg(unix)]
fn is_loop(err: &io::Error) -> bool {
    err.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error())
}

#[cfg(not(unix))]
fn is_loop(err: &io::Error) -> bool {
    let _ = err;
    false
}
