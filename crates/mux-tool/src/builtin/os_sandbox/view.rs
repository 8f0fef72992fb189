//! The read-only view: the child enters a user and a mount namespace of its own (as
//! bubblewrap does, unprivileged), in which every mount is read-only except bind mounts of
//! the writable directories, with the protected and `deny_write` paths read-only again on
//! top, and the hidden paths covered last by something empty (an empty read-only `tmpfs` over
//! a directory, `/dev/null` read-only over a file). So writes outside the root fail whatever
//! they are, metadata included (`chmod`, `utimes`, `setxattr`, `chown`, for which Landlock has
//! no right), and a hidden path shows nothing however it is spelled (symlinks, `..`,
//! `/proc/self/root`: every lookup crosses the same mounts). The command cannot take a mount
//! away: it has no capability in this namespace, Landlock refuses every mount and unmount to a
//! restricted process (in a nested user namespace too), and a nested namespace would get
//! these mounts locked to their parents.
//!
//! Everything here is prepared by the parent ([`View::new`]); the child only makes system
//! calls on it ([`View::enter`]), allocating nothing.

use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use libc::{c_int, c_uint};

use super::step::{Failed, Step};
use super::{Confinement, OsSandboxError};

const AT_RECURSIVE: c_uint = 0x8000;
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

const WRITABLE: MountAttr = MountAttr {
    attr_set: 0,
    attr_clr: MOUNT_ATTR_RDONLY,
    propagation: 0,
    userns_fd: 0,
};

/// The namespaces and mounts of one command, prepared before `fork`.
pub(super) struct View {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    /// Writable directories, outermost first.
    writable: Vec<CString>,
    /// Directories between a writable place and a path kept read-only or hidden beneath it,
    /// outermost first: bound onto themselves, so the command cannot rename them and leave
    /// the path where the next call does not look.
    pins: Vec<CString>,
    /// Paths inside the root to mount read-only again.
    protected: Vec<CString>,
    /// Paths to hide, outermost first, and whether each is a directory.
    hidden: Vec<(CString, bool)>,
    /// The working directory, entered again once the root is a new mount.
    cwd: CString,
    /// The namespaces entered: user and mount, and network under the egress proxy.
    namespaces: c_int,
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
        let protected_c = protected
            .iter()
            .map(|path| c_path(path))
            .collect::<Result<Vec<_>, _>>()?;
        let pins = pins(confinement, protected)
            .iter()
            .map(|path| c_path(path))
            .collect::<Result<Vec<_>, _>>()?;
        let hidden = confinement
            .files
            .hidden
            .iter()
            .map(|hidden| Ok((c_path(&hidden.path)?, hidden.dir)))
            .collect::<Result<Vec<_>, OsSandboxError>>()?;
        // The same ids inside as outside: files keep their owner, and root stays uid 0 (with
        // no capability left once the child drops them).
        let uid = rustix::process::geteuid().as_raw();
        let gid = rustix::process::getegid().as_raw();
        Ok(Self {
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
            writable,
            pins,
            protected: protected_c,
            hidden,
            cwd: c_path(&confinement.root)?,
            namespaces: libc::CLONE_NEWUSER
                | libc::CLONE_NEWNS
                | if confinement.egress.is_some() {
                    libc::CLONE_NEWNET
                } else {
                    0
                },
        })
    }

    /// In the child, between `fork` and `exec`: enters the namespaces and builds the view.
    pub(super) fn enter(&mut self) -> Result<(), Failed> {
        // SAFETY: plain system calls on buffers prepared before the fork; nothing allocates.
        #[allow(unsafe_code)]
        unsafe {
            check(Step::Namespaces, libc::unshare(self.namespaces))?;
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
            // Bind mounts of their own for the writable directories (with their submounts),
            // then every mount read-only at once, then the writable binds writable again.
            for dir in &self.writable {
                bind(dir)?;
            }
            set_attr(c"/", &READ_ONLY, AT_RECURSIVE)?;
            for dir in &self.writable {
                // A submount that was read-only before is locked so, which fails the
                // recursive change: then only the bind itself turns writable again.
                if set_attr(dir, &WRITABLE, AT_RECURSIVE).is_err() {
                    set_attr(dir, &WRITABLE, 0)?;
                }
            }
            for dir in &self.pins {
                bind(dir)?;
            }
            for path in &self.protected {
                bind(path)?;
                set_attr(path, &READ_ONLY, AT_RECURSIVE)?;
            }
            // Last, so nothing mounted before shows through.
            for (path, dir) in &self.hidden {
                hide(path, *dir)?;
            }
            check(Step::Mounts, libc::chdir(self.cwd.as_ptr()))?;
        }
        Ok(())
    }
}

/// The directories to pin for `confinement` with `protected` paths: every directory strictly
/// between a writable place and a protected, `deny_write` or hidden path beneath it.
fn pins(confinement: &Confinement, protected: &[PathBuf]) -> Vec<PathBuf> {
    let writable = confinement.writable();
    let kept = protected
        .iter()
        .chain(confinement.files.hidden.iter().map(|hidden| &hidden.path));
    let mut pins: Vec<PathBuf> = Vec::new();
    for path in kept {
        for dir in &writable {
            if path == dir || !path.starts_with(dir) {
                continue;
            }
            for ancestor in path.ancestors().skip(1) {
                if ancestor == dir {
                    break;
                }
                if !pins.iter().any(|pin| pin == ancestor) {
                    pins.push(ancestor.to_owned());
                }
            }
        }
    }
    pins.sort_by_key(|pin| pin.components().count());
    pins
}

/// Maps a `-1` return to the failure of `step`, with `errno`.
fn check(step: Step, ret: c_int) -> Result<(), Failed> {
    if ret < 0 {
        Err(Failed::last(step))
    } else {
        Ok(())
    }
}

/// Writes `bytes` to the file at `path`.
#[allow(unsafe_code)]
unsafe fn write_file(path: &CStr, bytes: &[u8]) -> Result<(), Failed> {
    // SAFETY: (for the caller) nothing: `path` is NUL-terminated and `bytes` valid.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        check(Step::IdMaps, fd)?;
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        let failed = (written != bytes.len() as isize).then(|| Failed::last(Step::IdMaps));
        libc::close(fd);
        failed.map_or(Ok(()), Err)
    }
}

/// Bind-mounts `path` (with its submounts) onto itself, as a mount of its own.
#[allow(unsafe_code)]
unsafe fn bind(path: &CStr) -> Result<(), Failed> {
    // SAFETY: (for the caller) nothing: `path` is NUL-terminated.
    let ret = unsafe {
        libc::mount(
            path.as_ptr(),
            path.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND | libc::MS_REC,
            std::ptr::null(),
        )
    };
    check(Step::Mounts, ret)
}

/// Covers `path` with something empty and read-only: a `tmpfs` no one may enter over a
/// directory, `/dev/null` over anything else.
#[allow(unsafe_code)]
unsafe fn hide(path: &CStr, dir: bool) -> Result<(), Failed> {
    // SAFETY: (for the caller) nothing: every string is NUL-terminated.
    unsafe {
        if dir {
            let ret = libc::mount(
                c"none".as_ptr(),
                path.as_ptr(),
                c"tmpfs".as_ptr(),
                libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                c"mode=000,size=4k".as_ptr().cast(),
            );
            check(Step::Mounts, ret)
        } else {
            let ret = libc::mount(
                c"/dev/null".as_ptr(),
                path.as_ptr(),
                std::ptr::null(),
                libc::MS_BIND,
                std::ptr::null(),
            );
            check(Step::Mounts, ret)?;
            set_attr(path, &READ_ONLY, 0)
        }
    }
}

/// Changes the attributes of the mount at `path` (with `AT_RECURSIVE`, of those beneath too).
#[allow(unsafe_code)]
unsafe fn set_attr(path: &CStr, attr: &MountAttr, flags: c_uint) -> Result<(), Failed> {
    // SAFETY: (for the caller) nothing: `path` is NUL-terminated and `attr` a valid struct.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            flags,
            attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    check(Step::Mounts, ret as c_int)
}
