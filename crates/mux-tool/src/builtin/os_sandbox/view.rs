//! The read-only view: the child enters a user and a mount namespace of its own (as
//! bubblewrap does, unprivileged), in which every mount is read-only except fresh copies of
//! the writable directories, with the protected paths read-only again on top. So writes
//! outside the root fail whatever they are, metadata included (`chmod`, `utimes`, `setxattr`,
//! `chown`, for which Landlock has no right).
//!
//! Everything here is prepared by the parent ([`View::new`]); the child only makes system
//! calls on it ([`View::enter`]), allocating nothing.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use libc::{c_int, c_uint};

use super::child::{Failed, Step};
use super::{Confinement, OsSandboxError};

const OPEN_TREE_CLONE: c_uint = 1;
const AT_RECURSIVE: c_uint = 0x8000;
const MOVE_MOUNT_F_EMPTY_PATH: c_uint = 0x4;
const MOVE_MOUNT_T_SYMLINKS: c_uint = 0x10;
const MOUNT_ATTR_RDONLY: u64 = 0x1;

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const READ_ONLY: MountAttr = MountAttr {
    attr_set: MOUNT_ATTR_RDONLY,
    attr_clr: 0,
    propagation: 0,
    userns_fd: 0,
};

/// The namespaces and mounts of one command, prepared before `fork`.
pub(super) struct View {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    /// Writable directories, outermost first.
    writable: Vec<CString>,
    /// Their detached copies, taken in the child before everything turns read-only.
    copies: Vec<c_int>,
    /// Paths inside the root to mount read-only again.
    protected: Vec<CString>,
    /// The working directory, entered again once the root is a new mount.
    cwd: CString,
}

impl View {
    /// The view for `confinement`, with `protected` (existing paths) read-only.
    pub(super) fn new(
        confinement: &Confinement,
        protected: &[PathBuf],
    ) -> Result<Self, OsSandboxError> {
        let c_path = |path: &Path| {
            CString::new(path.as_os_str().as_bytes()).map_err(|_| OsSandboxError::Setup {
                policy: confinement.policy,
                reason: format!("the path {} contains a NUL byte", path.display()),
            })
        };
        let writable = confinement
            .writable()
            .iter()
            .map(|dir| c_path(dir))
            .collect::<Result<Vec<_>, _>>()?;
        let protected = protected
            .iter()
            .map(|path| c_path(path))
            .collect::<Result<Vec<_>, _>>()?;
        // The same ids inside as outside: files keep their owner, and root stays uid 0 (with
        // no capability left once the child drops them).
        let uid = rustix::process::geteuid().as_raw();
        let gid = rustix::process::getegid().as_raw();
        Ok(Self {
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
            copies: vec![-1; writable.len()],
            writable,
            protected,
            cwd: c_path(&confinement.root)?,
        })
    }

    /// In the child, between `fork` and `exec`: enters the namespaces and builds the view.
    pub(super) fn enter(&mut self) -> Result<(), Failed> {
        // SAFETY: plain system calls on buffers prepared before the fork; nothing allocates.
        #[allow(unsafe_code)]
        unsafe {
            check(
                Step::Namespaces,
                libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS),
            )?;
            write_file(c"/proc/self/setgroups", b"deny")?;
            write_file(c"/proc/self/uid_map", &self.uid_map)?;
            write_file(c"/proc/self/gid_map", &self.gid_map)?;
            check(
                Step::Mounts,
                libc::mount(
                    std::ptr::null(),
                    c"/".as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                ),
            )?;
            for (dir, copy) in self.writable.iter().zip(self.copies.iter_mut()) {
                *copy = open_tree(libc::AT_FDCWD, dir.as_ptr())?;
            }
            set_read_only(libc::AT_FDCWD, c"/".as_ptr(), 0)?;
            for (dir, copy) in self.writable.iter().zip(self.copies.iter()) {
                attach(*copy, dir.as_ptr(), 0)?;
                libc::close(*copy);
            }
            for path in &self.protected {
                let copy = open_tree(libc::AT_FDCWD, path.as_ptr())?;
                set_read_only(copy, c"".as_ptr(), libc::AT_EMPTY_PATH as c_uint)?;
                attach(copy, path.as_ptr(), MOVE_MOUNT_T_SYMLINKS)?;
                libc::close(copy);
            }
            check(Step::Mounts, libc::chdir(self.cwd.as_ptr()))?;
        }
        Ok(())
    }
}

/// Maps a `-1` return to the failure of `step`, with `errno`.
fn check(step: Step, ret: c_int) -> Result<(), Failed> {
    if ret < 0 {
        Err(Failed::last(step))
    } else {
        Ok(())
    }
}

#[allow(unsafe_code)]
unsafe fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> Result<(), Failed> {
    // SAFETY: (for the caller) `path` is NUL-terminated and `bytes` valid.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        check(Step::IdMaps, fd)?;
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        let failed = (written != bytes.len() as isize).then(|| Failed::last(Step::IdMaps));
        libc::close(fd);
        failed.map_or(Ok(()), Err)
    }
}

/// A detached copy of the mount tree at `path`, as it is now.
#[allow(unsafe_code)]
unsafe fn open_tree(dirfd: c_int, path: *const libc::c_char) -> Result<c_int, Failed> {
    // SAFETY: (for the caller) `path` is NUL-terminated.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            dirfd,
            path,
            OPEN_TREE_CLONE | AT_RECURSIVE | libc::O_CLOEXEC as c_uint,
        )
    };
    check(Step::Mounts, fd as c_int)?;
    Ok(fd as c_int)
}

/// Makes the mount tree at `path` (relative to `dirfd`) read-only, recursively.
#[allow(unsafe_code)]
unsafe fn set_read_only(
    dirfd: c_int,
    path: *const libc::c_char,
    flags: c_uint,
) -> Result<(), Failed> {
    // SAFETY: (for the caller) `path` is NUL-terminated; the attribute is a valid struct.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            dirfd,
            path,
            flags | AT_RECURSIVE,
            &READ_ONLY as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    check(Step::Mounts, ret as c_int)
}

/// Attaches the detached tree `copy` at `path`.
#[allow(unsafe_code)]
unsafe fn attach(copy: c_int, path: *const libc::c_char, flags: c_uint) -> Result<(), Failed> {
    // SAFETY: (for the caller) `path` is NUL-terminated.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            copy,
            c"".as_ptr(),
            libc::AT_FDCWD,
            path,
            MOVE_MOUNT_F_EMPTY_PATH | flags,
        )
    };
    check(Step::Mounts, ret as c_int)
}
