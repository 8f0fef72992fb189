//! The reaper of a call's placeholders (module `placeholders`): a process forked from the
//! agent that removes them if the agent dies during the call or before their removal (which
//! comes a moment after the call), so a killed agent leaves no residue in the user's project
//! either.
//!
//! It is a plain `fork` with no `exec` (a library ships no second binary): after the fork the
//! child only makes system calls on what was prepared before it (paths as C strings), as
//! between `fork` and `exec`, since the agent is multithreaded. It starts a session of its
//! own (so a signal to the agent's process group or terminal spares it), closes every
//! descriptor but its end of a pipe, and reads from the pipe:
//! - `P` and four bytes: the process group of the command, to kill if the agent dies;
//! - `E`: the command ended: its group is forgotten (the id may be reused), and the reaper
//!   stays for the placeholders, whose removal is pending;
//! - `D`: the placeholders were removed or taken over by another call: it exits;
//! - end of file without `D`: the agent is gone. It kills the command's process group (the
//!   placeholders' mounts go with the directories), removes the placeholders (only empty
//!   directories), and exits.
//!
//! The agent's end of the pipe is close-on-exec, so no command holds it.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// A started reaper: its process and the agent's end of its pipe.
#[derive(Debug)]
pub(super) struct Reaper {
    pid: libc::pid_t,
    pipe: OwnedFd,
}

impl Reaper {
    /// Forks the reaper of `paths`.
    pub(super) fn start(paths: &[PathBuf]) -> io::Result<Self> {
        let paths = paths
            .iter()
            .map(|path| {
                CString::new(path.as_os_str().as_bytes())
                    .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in a path"))
            })
            .collect::<io::Result<Vec<_>>>()?;
        let mut fds = [0 as RawFd; 2];
        // SAFETY: pipe2 writes two descriptors into the array.
        #[allow(unsafe_code)]
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both descriptors were just opened and are owned here only.
        #[allow(unsafe_code)]
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: the child runs `watch`, which only makes system calls on buffers prepared
        // before the fork and never returns.
        #[allow(unsafe_code)]
        let pid = unsafe { libc::fork() };
        match pid {
            -1 => Err(io::Error::last_os_error()),
            0 => watch(read.as_raw_fd(), &paths),
            pid => Ok(Self { pid, pipe: write }),
        }
    }

    /// Tells the reaper the command's process group.
    pub(super) fn started(&self, group: u32) {
        let mut message = [b'P', 0, 0, 0, 0];
        message[1..].copy_from_slice(&group.to_ne_bytes());
        self.send(&message);
    }

    /// Tells the reaper the command ended: it must not kill the group any more.
    pub(super) fn ended(&self) {
        self.send(b"E");
    }

    fn send(&self, bytes: &[u8]) {
        // A pipe write of at most PIPE_BUF bytes is atomic; a failure means the reaper is
        // gone, and then there is no one to tell.
        // SAFETY: a plain write of a buffer to an owned descriptor.
        #[allow(unsafe_code)]
        let _ = unsafe { libc::write(self.pipe.as_raw_fd(), bytes.as_ptr().cast(), bytes.len()) };
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        self.send(b"D");
        loop {
            // SAFETY: waits for the agent's own child; the reaper exits as soon as it reads
            // `D` (or the pipe closes).
            #[allow(unsafe_code)]
            let ret = unsafe { libc::waitpid(self.pid, std::ptr::null_mut(), 0) };
            if ret >= 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                break;
            }
        }
    }
}

/// The reaper itself, in the forked child: never returns.
fn watch(read: RawFd, paths: &[CString]) -> ! {
    // SAFETY: system calls only, on a descriptor and C strings made before the fork.
    #[allow(unsafe_code)]
    unsafe {
        libc::setsid();
        // Every descriptor but the pipe: the agent's sockets and files stay the agent's.
        if read > 0 {
            libc::syscall(libc::SYS_close_range, 0u32, (read - 1) as u32, 0u32);
        }
        libc::syscall(libc::SYS_close_range, (read + 1) as u32, u32::MAX, 0u32);
        let mut group: libc::pid_t = 0;
        loop {
            let mut byte = 0u8;
            let n = libc::read(read, (&raw mut byte).cast(), 1);
            if n < 0 && *libc::__errno_location() == libc::EINTR {
                continue;
            }
            if n == 1 && byte == b'D' {
                libc::_exit(0);
            }
            if n == 1 && byte == b'E' {
                group = 0;
                continue;
            }
            if n == 1 && byte == b'P' {
                let mut bytes = [0u8; 4];
                if read_full(read, &mut bytes) {
                    group = libc::pid_t::from_ne_bytes(bytes);
                    continue;
                }
            }
            break;
        }
        if group > 0 {
            libc::kill(-group, libc::SIGKILL);
        }
        for path in paths.iter().rev() {
            libc::rmdir(path.as_ptr());
        }
        libc::_exit(0)
    }
}

/// Reads exactly `buf.len()` bytes; `false` at end of file or on an error.
#[allow(unsafe_code)]
unsafe fn read_full(fd: RawFd, buf: &mut [u8]) -> bool {
    let mut done = 0;
    while done < buf.len() {
        // SAFETY: (for the caller) nothing: the buffer is valid for its length.
        let n = unsafe { libc::read(fd, buf[done..].as_mut_ptr().cast(), buf.len() - done) };
        if n < 0 && unsafe { *libc::__errno_location() } == libc::EINTR {
            continue;
        }
        if n <= 0 {
            return false;
        }
        done += n as usize;
    }
    true
}
