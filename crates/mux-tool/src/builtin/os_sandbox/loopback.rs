//! The network namespace's one door: inside its own network namespace (entered with the
//! user and mount namespaces, module `view`), the child brings up `lo`, listens on
//! `127.0.0.1:PROXY_PORT` and hands that listening socket to the agent over a socket pair
//! (`SCM_RIGHTS`) before it execs. A socket keeps the namespace it was made in, so the agent
//! accepts the command's connections from outside and serves its proxy on them; the command
//! has no other route (entering the namespace with `setns` would need a capability the agent
//! does not have).
//!
//! As everywhere between `fork` and `exec`, the child only makes system calls on values
//! prepared before the fork.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use libc::c_int;

use super::step::{Failed, Step};
use super::{OsSandboxError, SandboxPolicy};
use crate::builtin::egress::PROXY_PORT;

/// `struct ifreq` with the flags member (40 bytes on 64-bit Linux, 32 on 32-bit).
#[repr(C)]
#[derive(Clone, Copy)]
struct IfReqFlags {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 24],
}

/// The child's half: what it needs to open the door.
pub(super) struct Loopback {
    /// The child's end of the socket pair.
    end: OwnedFd,
    lo: IfReqFlags,
    addr: libc::sockaddr_in,
}

/// The agent's end of the socket pair, on which the listener arrives.
#[derive(Debug)]
pub(super) struct Door {
    end: OwnedFd,
}

impl Loopback {
    /// Prepares the socket pair and the requests, before `fork`.
    pub(super) fn new(policy: SandboxPolicy) -> Result<(Self, Door), OsSandboxError> {
        let mut fds = [0 as c_int; 2];
        // SAFETY: a plain system call writing two descriptors into `fds`.
        #[allow(unsafe_code)]
        let ret = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        };
        if ret < 0 {
            return Err(OsSandboxError::Setup {
                policy,
                reason: format!(
                    "cannot create the socket pair for the network proxy: {}",
                    std::io::Error::last_os_error()
                ),
            });
        }
        // SAFETY: both descriptors were just created and are owned by nothing else.
        #[allow(unsafe_code)]
        let (agent, child) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let mut name = [0u8; libc::IFNAMSIZ];
        name[..2].copy_from_slice(b"lo");
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: PROXY_PORT.to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from(std::net::Ipv4Addr::LOCALHOST).to_be(),
            },
            sin_zero: [0; 8],
        };
        Ok((
            Self {
                end: child,
                lo: IfReqFlags {
                    name,
                    flags: 0,
                    _pad: [0; 24],
                },
                addr,
            },
            Door { end: agent },
        ))
    }

    /// In the child, inside the new network namespace: brings up `lo`, listens on the proxy
    /// port and sends the listener to the agent.
    pub(super) fn open(&self) -> Result<(), Failed> {
        // SAFETY: plain system calls on stack values prepared before the fork.
        #[allow(unsafe_code)]
        unsafe {
            let control = check(libc::socket(
                libc::AF_INET,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
                0,
            ))?;
            let mut lo = self.lo;
            let up = check(libc::ioctl(
                control,
                libc::SIOCGIFFLAGS,
                &mut lo as *mut IfReqFlags,
            ))
            .and_then(|_| {
                lo.flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
                check(libc::ioctl(
                    control,
                    libc::SIOCSIFFLAGS,
                    &lo as *const IfReqFlags,
                ))
            });
            libc::close(control);
            up?;
            let listener = check(libc::socket(
                libc::AF_INET,
                libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
                0,
            ))?;
            let sent = check(libc::bind(
                listener,
                (&self.addr as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            ))
            .and_then(|_| check(libc::listen(listener, 128)))
            .and_then(|_| send_fd(self.end.as_raw_fd(), listener));
            libc::close(listener);
            sent.map(|_| ())
        }
    }
}

/// Sends `fd` over the socket `over` (`SCM_RIGHTS`), allocating nothing.
#[allow(unsafe_code)]
unsafe fn send_fd(over: RawFd, fd: RawFd) -> Result<c_int, Failed> {
    // SAFETY: (for the caller) nothing: every pointer is to a stack value that outlives the
    // call, and the control buffer is aligned and large enough for one descriptor.
    unsafe {
        let mut byte = [0u8; 1];
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut control = [0u64; 8];
        let space = libc::CMSG_SPACE(std::mem::size_of::<c_int>() as u32) as usize;
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null() {
            return Err(Failed::new(Step::Network, libc::EINVAL));
        }
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<c_int>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<c_int>(), fd);
        check(libc::sendmsg(over, &msg, 0) as c_int)
    }
}

fn check(ret: c_int) -> Result<c_int, Failed> {
    if ret < 0 {
        Err(Failed::last(Step::Network))
    } else {
        Ok(ret)
    }
}

impl Door {
    /// In the agent, once the command has started (its `exec` succeeded, so the child sent
    /// the listener before): the listening socket inside the command's namespace.
    pub(super) fn take(
        self,
        policy: SandboxPolicy,
    ) -> Result<std::net::TcpListener, OsSandboxError> {
        let fail = |why: String| OsSandboxError::Setup {
            policy,
            reason: format!("the command's network namespace sent no proxy listener: {why}"),
        };
        let mut byte = [0u8; 1];
        let mut control = [0u64; 8];
        // SAFETY: recvmsg into stack buffers; a received descriptor is owned by us alone.
        #[allow(unsafe_code)]
        unsafe {
            let mut iov = libc::iovec {
                iov_base: byte.as_mut_ptr().cast(),
                iov_len: 1,
            };
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = std::mem::size_of_val(&control) as _;
            let got = libc::recvmsg(
                self.end.as_raw_fd(),
                &mut msg,
                libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC,
            );
            if got < 0 {
                return Err(fail(std::io::Error::last_os_error().to_string()));
            }
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            if cmsg.is_null()
                || (*cmsg).cmsg_level != libc::SOL_SOCKET
                || (*cmsg).cmsg_type != libc::SCM_RIGHTS
                || msg.msg_flags & libc::MSG_CTRUNC != 0
            {
                return Err(fail("no descriptor in the message".into()));
            }
            let fd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<c_int>());
            let listener = std::net::TcpListener::from_raw_fd(fd);
            listener
                .set_nonblocking(true)
                .map_err(|err| fail(err.to_string()))?;
            Ok(listener)
        }
    }
}
