//! The root directory every built-in file tool is confined to.
//!
//! A path from the model is checked on every call, and the file is then used through the
//! same checked handles:
//!
//! 1. **Lexically**: empty paths, NUL bytes, `~` and absolute paths outside the root are
//!    refused before the file system is touched.
//! 2. **Beneath a handle of the root** (module `beneath`): each component is looked up
//!    relative to an open handle of the real directory before it, without following symlinks.
//!    A symlink is resolved as the kernel would, and must stay inside the root; a dangling
//!    symlink or a symlink loop is refused. `..` goes back to the directory opened before, so
//!    `sub/../inside.txt` and `link/..` are resolved physically, and a `..` that would climb
//!    above the root is refused. Components that do not exist yet (a file about to be
//!    written, directories about to be created) are kept for the tool to create, beneath the
//!    last real directory.
//!
//! The tools open, create and rename files relative to the handles this yields, never by a
//! path name that could have changed since the check: another process that swaps a directory
//! for a symlink at any moment makes the call fail or act inside the root, never outside.
//! Hard links that already exist inside the root are followed like any file.

use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::Mode;
use rustix::io::Errno;

use super::beneath::{DIR_FLAGS, Located, Part, locate, parts};
use super::checked_walk::CheckedWalk;
use super::sandbox_error::SandboxError;

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
/// std::fs::create_dir(dir.path().join("sub"))?;
/// std::fs::write(dir.path().join("notes.txt"), "hi")?;
/// let sandbox = Sandbox::new(dir.path())?;
///
/// let notes = sandbox.resolve_existing("sub/../notes.txt")?;
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
    /// The root directory's device and inode at construction.
    identity: (u64, u64),
}

impl Sandbox {
    /// A sandbox rooted at `root`, which must be an existing directory. The root's real path
    /// and identity are recorded; every call checks that the directory at that path still is
    /// the root.
    pub fn new(root: impl AsRef<Path>) -> Result<Self, SandboxError> {
        let root = root.as_ref();
        let real = canonical_root(root)?;
        let meta = std::fs::metadata(&real).map_err(|source| SandboxError::Root {
            root: root.to_owned(),
            source,
        })?;
        let configured = std::path::absolute(root).unwrap_or_else(|_| real.clone());
        Ok(Self {
            root: real,
            configured,
            identity: (meta.dev(), meta.ino()),
        })
    }

    /// The root's real path as of construction.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves `path` (relative to the root, or absolute under it) to a real path inside the
    /// root. The last components may not exist yet; every existing one is checked.
    ///
    /// This is a check as of now; the built-in tools do not open the path it returns by
    /// name, but through the directory handles the same resolution holds.
    pub fn resolve(&self, path: &str) -> Result<SandboxPath, SandboxError> {
        let located = self.locate(path)?;
        Ok(self.sandbox_path(&located))
    }

    /// Like [`resolve`](Self::resolve), and the path must exist.
    pub fn resolve_existing(&self, path: &str) -> Result<SandboxPath, SandboxError> {
        let located = self.locate_existing(path)?;
        Ok(self.sandbox_path(&located))
    }

    /// Resolves `path` beneath a handle of the root, keeping the handles for the tool to use.
    pub(crate) fn locate(&self, path: &str) -> Result<Located, SandboxError> {
        let parts = self.lexical(path)?;
        let root = self.open_root()?;
        locate(root, &self.root, path, parts)
    }

    /// Like [`locate`](Self::locate), and the path must exist.
    pub(crate) fn locate_existing(&self, path: &str) -> Result<Located, SandboxError> {
        let located = self.locate(path)?;
        if !located.exists() {
            return Err(SandboxError::NotFound {
                path: path.to_owned(),
            });
        }
        Ok(located)
    }

    /// The checked form of `located`.
    pub(crate) fn sandbox_path(&self, located: &Located) -> SandboxPath {
        let relative = located.relative();
        SandboxPath {
            real: self.root.join(&relative),
            relative,
        }
    }

    /// Lookups of walk entries beneath a fresh handle of the root.
    pub(crate) fn checked_walk(&self) -> Result<CheckedWalk, SandboxError> {
        Ok(CheckedWalk::new(self.open_root()?))
    }

    /// A handle of the root, which must still be the directory recorded at construction.
    fn open_root(&self) -> Result<OwnedFd, SandboxError> {
        let fd = rustix::fs::open(&self.root, DIR_FLAGS, Mode::empty()).map_err(
            |errno| match errno {
                Errno::LOOP | Errno::NOTDIR => SandboxError::RootChanged {
                    root: self.root.clone(),
                },
                errno => SandboxError::Root {
                    root: self.root.clone(),
                    source: errno.into(),
                },
            },
        )?;
        let stat = rustix::fs::fstat(&fd).map_err(|errno| SandboxError::Root {
            root: self.root.clone(),
            source: errno.into(),
        })?;
        #[allow(clippy::useless_conversion)] // The field types differ between targets.
        let identity = (u64::from(stat.st_dev), u64::from(stat.st_ino));
        if identity != self.identity {
            return Err(SandboxError::RootChanged {
                root: self.root.clone(),
            });
        }
        Ok(fd)
    }

    /// The checks that need no file system: the path's components, relative to the root.
    fn lexical(&self, path: &str) -> Result<Vec<Part>, SandboxError> {
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
                .strip_prefix(&self.root)
                .or_else(|_| given.strip_prefix(&self.configured))
                .map_err(|_| SandboxError::OutsideRoot { path: owned() })?
        } else {
            given
        };
        if relative
            .components()
            .any(|c| matches!(c, Component::RootDir | Component::Prefix(_)))
        {
            return Err(SandboxError::OutsideRoot { path: owned() });
        }
        Ok(parts(relative))
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
