//! Entries of a directory walk looked up again beneath the root handle before they are used.
//!
//! The walk (`ignore`) decides which names are listed (gitignore rules) but reads directories
//! by path, so a directory swapped for a symlink while it runs could lead it outside the root.
//! Each entry it yields is therefore looked up again here, relative to handles of real
//! directories opened from the root with `O_NOFOLLOW`: an entry under a directory that is now
//! a symlink, or that does not exist inside the root, is dropped, and files are opened through
//! the same handles.

use std::ffi::OsString;
use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path};

use rustix::fs::{AtFlags, FileType};

use super::beneath::{open_dir, open_regular};

/// Handles of the directories on the path to the last entry looked up, from the root.
#[derive(Debug)]
pub(crate) struct CheckedWalk {
    root: OwnedFd,
    open: Vec<(OsString, OwnedFd)>,
}

impl CheckedWalk {
    /// Lookups beneath `root`, a handle of the sandbox root.
    pub(crate) fn new(root: OwnedFd) -> Self {
        Self {
            root,
            open: Vec::new(),
        }
    }

    /// The type of the entry at `relative` (to the root), as it is now inside the root;
    /// `None` when it is not there.
    pub(crate) fn kind(&mut self, relative: &Path) -> Option<FileType> {
        let name = relative.file_name()?.to_owned();
        let dir = self.dir(relative.parent()?)?;
        let stat = rustix::fs::statat(dir, &name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
        Some(FileType::from_raw_mode(stat.st_mode))
    }

    /// Opens the regular file at `relative` (to the root) inside the root; `None` when it is
    /// not a regular file there.
    pub(crate) fn open_file(&mut self, relative: &Path) -> Option<File> {
        let name = relative.file_name()?.to_owned();
        let dir = self.dir(relative.parent()?)?;
        open_regular(dir, &name).ok().flatten()
    }

    /// The handle of the directory at `relative`, opened component by component without
    /// following symlinks, reusing the handles of the previous lookup's common prefix.
    fn dir(&mut self, relative: &Path) -> Option<BorrowedFd<'_>> {
        let mut names = Vec::new();
        for component in relative.components() {
            match component {
                Component::Normal(name) => names.push(name.to_owned()),
                Component::CurDir => {}
                _ => return None,
            }
        }
        let common = self
            .open
            .iter()
            .zip(&names)
            .take_while(|((open, _), name)| open == *name)
            .count();
        self.open.truncate(common);
        for name in &names[common..] {
            let parent = match self.open.last() {
                Some((_, fd)) => fd.as_fd(),
                None => self.root.as_fd(),
            };
            let fd = open_dir(parent, name).ok()?;
            self.open.push((name.clone(), fd));
        }
        Some(match self.open.last() {
            Some((_, fd)) => fd.as_fd(),
            None => self.root.as_fd(),
        })
    }
}
