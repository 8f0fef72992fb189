//! Paths resolved beneath a directory handle of the sandbox root, never by name from `/`.
//!
//! Each component is looked up relative to an open handle of the real directory before it
//! (`statat`, then `openat` with `O_NOFOLLOW | O_DIRECTORY`), so a directory swapped for a
//! symlink between two steps is seen as the symlink it now is. Symlinks are resolved here, as
//! the kernel would (a relative target from the directory holding the link, an absolute one
//! from `/`, which must lie under the root's real path), and the components they add are
//! checked the same way. `..` pops the last directory opened: it is physical, and it never
//! climbs above the root handle.
//!
//! What this yields is a chain of open directory handles, so the file the tool then opens,
//! creates or renames is named relative to a directory that was checked, not by a path that
//! could have changed since.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::sandbox_error::SandboxError;

/// How many symlinks one path may go through, as Linux allows.
const MAX_HOPS: usize = 40;
/// How many times one component is looked at again when it changes while being opened.
const MAX_RETRIES: usize = 8;

/// One component of a path still to resolve.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Part {
    /// A name.
    Name(OsString),
    /// `..`.
    Parent,
}

/// The parts of a relative path (`.` and any root dropped).
pub(crate) fn parts(path: &Path) -> Vec<Part> {
    path.components()
        .filter_map(|component| match component {
            Component::Normal(name) => Some(Part::Name(name.to_owned())),
            Component::ParentDir => Some(Part::Parent),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => None,
        })
        .collect()
}

/// Where a path led: the real directories opened below the root, the components that do
/// not exist yet, and the last component when it exists and is not a directory.
#[derive(Debug)]
pub(crate) struct Located {
    root: OwnedFd,
    dirs: Vec<(OsString, OwnedFd)>,
    missing: Vec<OsString>,
    leaf: Option<(OsString, FileType)>,
    given: String,
}

/// A component to resolve, and the symlink it came from (`None`: the caller's path).
struct Pending {
    part: Part,
    from: Option<PathBuf>,
}

/// Resolves `path` (the parts of `given`) beneath `root`, a handle of the directory whose
/// real path is `root_real`.
pub(crate) fn locate(
    root: OwnedFd,
    root_real: &Path,
    given: &str,
    path: Vec<Part>,
) -> Result<Located, SandboxError> {
    let mut located = Located {
        root,
        dirs: Vec::new(),
        missing: Vec::new(),
        leaf: None,
        given: given.to_owned(),
    };
    let mut queue: VecDeque<Pending> = path
        .into_iter()
        .map(|part| Pending { part, from: None })
        .collect();
    let mut hops = 0usize;
    let mut retries = 0usize;
    while let Some(Pending { part, from }) = queue.pop_front() {
        if let Some((name, _)) = &located.leaf {
            return Err(SandboxError::NotADirectory {
                path: located.given.clone(),
                file: located.relative_dirs().join(name),
            });
        }
        let name = match part {
            Part::Parent => {
                if located.missing.pop().is_none() && located.dirs.pop().is_none() {
                    let path = located.given.clone();
                    return Err(match from {
                        None => SandboxError::ParentComponent { path },
                        Some(link) => SandboxError::SymlinkEscape { path, link },
                    });
                }
                continue;
            }
            Part::Name(name) => name,
        };
        if !located.missing.is_empty() {
            located.missing_name(name, from)?;
            continue;
        }
        let stat =
            match rustix::fs::statat(located.dir(), name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stat) => stat,
                Err(Errno::NOENT) => {
                    located.missing_name(name, from)?;
                    continue;
                }
                Err(errno) => return Err(located.io(errno)),
            };
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::Symlink => {
                hops += 1;
                let link = located.relative_dirs().join(&name);
                if hops > MAX_HOPS {
                    return Err(SandboxError::SymlinkLoop {
                        path: located.given.clone(),
                        link,
                    });
                }
                let target =
                    match rustix::fs::readlinkat(located.dir(), name.as_os_str(), Vec::new()) {
                        Ok(target) => PathBuf::from(OsStr::from_bytes(target.as_bytes())),
                        // No longer a symlink: look at the component again.
                        Err(Errno::INVAL | Errno::NOENT) => {
                            located.retry(&mut retries)?;
                            queue.push_front(Pending {
                                part: Part::Name(name),
                                from,
                            });
                            continue;
                        }
                        Err(errno) => return Err(located.io(errno)),
                    };
                let rest = if target.has_root() {
                    let Ok(inside) = target.strip_prefix(root_real) else {
                        return Err(SandboxError::SymlinkEscape {
                            path: located.given.clone(),
                            link,
                        });
                    };
                    located.dirs.clear();
                    parts(inside)
                } else {
                    parts(&target)
                };
                for part in rest.into_iter().rev() {
                    queue.push_front(Pending {
                        part,
                        from: Some(link.clone()),
                    });
                }
            }
            FileType::Directory => match open_dir(located.dir(), &name) {
                Ok(fd) => located.dirs.push((name, fd)),
                // Swapped for something else since the `statat`: look again.
                Err(Errno::LOOP | Errno::NOTDIR | Errno::NOENT) => {
                    located.retry(&mut retries)?;
                    queue.push_front(Pending {
                        part: Part::Name(name),
                        from,
                    });
                }
                Err(errno) => return Err(located.io(errno)),
            },
            kind => located.leaf = Some((name, kind)),
        }
    }
    Ok(located)
}

/// How directory handles are opened: as handles to name things by (`O_PATH` on Linux, so a
/// directory that may be searched but not listed can still be gone through), never through
/// a symlink.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) const DIR_FLAGS: OFlags = OFlags::PATH
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);
/// How directory handles are opened: never through a symlink.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(crate) const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// Opens the directory `name` in `dir`, refusing a symlink.
pub(crate) fn open_dir(dir: BorrowedFd<'_>, name: &OsStr) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(dir, name, DIR_FLAGS, Mode::empty())
}

/// Opens the regular file `name` in `dir` for reading, refusing a symlink and never blocking
/// on a pipe or device; `None` when it is not a regular file.
pub(crate) fn open_regular(dir: BorrowedFd<'_>, name: &OsStr) -> rustix::io::Result<Option<File>> {
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let stat = rustix::fs::fstat(&fd)?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Ok(None);
    }
    rustix::fs::fcntl_setfl(&fd, OFlags::empty())?;
    Ok(Some(File::from(fd)))
}

impl Located {
    /// The path relative to the root, symlinks resolved (empty for the root).
    pub(crate) fn relative(&self) -> PathBuf {
        let mut path = self.relative_dirs();
        path.extend(&self.missing);
        if let Some((name, _)) = &self.leaf {
            path.push(name);
        }
        path
    }

    fn relative_dirs(&self) -> PathBuf {
        self.dirs.iter().map(|(name, _)| name.as_os_str()).collect()
    }

    /// Whether every component exists.
    pub(crate) fn exists(&self) -> bool {
        self.missing.is_empty()
    }

    /// Whether the path is an existing directory.
    pub(crate) fn is_dir(&self) -> bool {
        self.missing.is_empty() && self.leaf.is_none()
    }

    /// The last directory opened: the path itself when it is a directory, else its parent.
    pub(crate) fn dir(&self) -> BorrowedFd<'_> {
        match self.dirs.last() {
            Some((_, fd)) => fd.as_fd(),
            None => self.root.as_fd(),
        }
    }

    /// The last component's name in [`dir`](Self::dir), when the path is not a directory.
    pub(crate) fn name(&self) -> Option<&OsStr> {
        match (&self.leaf, self.missing.as_slice()) {
            (Some((name, _)), _) => Some(name),
            (None, [name]) => Some(name),
            _ => None,
        }
    }

    /// Opens the path, which must be an existing regular file; `None` if it is something
    /// else (a directory, a pipe, a device).
    pub(crate) fn open_file(&self) -> Result<Option<File>, SandboxError> {
        match &self.leaf {
            Some((name, FileType::RegularFile)) => {
                open_regular(self.dir(), name).map_err(|errno| match errno {
                    Errno::LOOP => SandboxError::Unstable {
                        path: self.given.clone(),
                    },
                    errno => self.io(errno),
                })
            }
            _ => Ok(None),
        }
    }

    /// Creates the missing directories above the last component, each beneath the handle of
    /// the one before, so that [`name`](Self::name) then names the target in [`dir`](Self::dir).
    pub(crate) fn create_parents(&mut self) -> Result<(), SandboxError> {
        let Some(last) = self.missing.pop() else {
            return Ok(());
        };
        for name in std::mem::take(&mut self.missing) {
            match rustix::fs::mkdirat(self.dir(), name.as_os_str(), Mode::from_raw_mode(0o777)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(errno) => return Err(self.io(errno)),
            }
            let fd = open_dir(self.dir(), &name).map_err(|errno| match errno {
                Errno::LOOP | Errno::NOTDIR | Errno::NOENT => SandboxError::Unstable {
                    path: self.given.clone(),
                },
                errno => self.io(errno),
            })?;
            self.dirs.push((name, fd));
        }
        self.missing.push(last);
        Ok(())
    }

    /// The error for a missing component: fine for the caller's own names, refused for
    /// names a symlink points at.
    fn missing_name(&mut self, name: OsString, from: Option<PathBuf>) -> Result<(), SandboxError> {
        if let Some(link) = from {
            return Err(SandboxError::DanglingSymlink {
                path: self.given.clone(),
                link,
            });
        }
        self.missing.push(name);
        Ok(())
    }

    fn retry(&self, retries: &mut usize) -> Result<(), SandboxError> {
        *retries += 1;
        if *retries > MAX_RETRIES {
            return Err(SandboxError::Unstable {
                path: self.given.clone(),
            });
        }
        Ok(())
    }

    fn io(&self, errno: Errno) -> SandboxError {
        SandboxError::Io {
            path: self.given.clone(),
            source: errno.into(),
        }
    }
}
