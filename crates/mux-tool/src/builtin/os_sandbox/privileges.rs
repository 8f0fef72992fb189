//! No capabilities: the child empties its bounding set, locks the secure bits that would give
//! uid 0 capabilities back at `exec`, clears every capability set and sets `no_new_privs`, so
//! the command (root included) has no capability and cannot gain one.

use libc::c_ulong;

use super::step::{Failed, Step};

/// `_LINUX_CAPABILITY_VERSION_3`.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;
/// `SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
/// SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED`.
const SECURE_BITS: c_ulong = 0b10_1111;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Drops every capability. `unprivileged` says the process holds none to begin with (no user
/// namespace, not root): then emptying the bounding set and locking the secure bits, which
/// need a capability, are skipped, since there is nothing for them to take away and
/// `no_new_privs` keeps it so.
pub(super) fn drop_all(unprivileged: bool) -> Result<(), Failed> {
    // SAFETY: plain prctl and capset calls on stack values; nothing allocates.
    #[allow(unsafe_code)]
    unsafe {
        if !unprivileged {
            for cap in 0..64 {
                if libc::prctl(libc::PR_CAPBSET_READ, cap as c_ulong, 0, 0, 0) < 0 {
                    break; // past the last capability this kernel knows
                }
                check(libc::prctl(libc::PR_CAPBSET_DROP, cap as c_ulong, 0, 0, 0))?;
            }
            check(libc::prctl(libc::PR_SET_SECUREBITS, SECURE_BITS, 0, 0, 0))?;
        }
        // Fails with EINVAL only before Linux 4.3, which had no ambient set to clear.
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as c_ulong,
            0,
            0,
            0,
        );
        let header = CapHeader {
            version: CAPABILITY_VERSION_3,
            pid: 0,
        };
        let none = [CapData {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        check(libc::syscall(libc::SYS_capset, &header as *const CapHeader, none.as_ptr()) as i32)?;
        check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
    }
    Ok(())
}

fn check(ret: libc::c_int) -> Result<(), Failed> {
    if ret < 0 {
        Err(Failed::last(Step::Capabilities))
    } else {
        Ok(())
    }
}
