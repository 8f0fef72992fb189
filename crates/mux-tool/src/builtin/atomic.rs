//! Atomic writes beneath a directory handle: a temporary file created in the directory, then
//! renamed over the target within it.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

/// How many temporary names are tried before giving up.
const NAME_TRIES: usize = 16;

/// Writes `bytes` to `name` in `dir`: a temporary file is created in `dir` (never following a
/// symlink), written, synced and renamed over `name` within `dir`, so readers see the old
/// file or the new one. An existing regular file keeps its permissions; a new one is
/// created with mode 0600 (before the umask).
pub(crate) fn write_atomically(dir: BorrowedFd<'_>, name: &OsStr, bytes: &[u8]) -> io::Result<()> {
    let keep = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile => {
            Some(Mode::from_raw_mode(stat.st_mode & 0o7777))
        }
        _ => None,
    };
    let (temp_name, file) = create_temp(dir)?;
    let written = fill(&file, bytes, keep)
        .and_then(|()| rustix::fs::renameat(dir, &temp_name, dir, name).map_err(io::Error::from));
    if written.is_err() {
        let _ = rustix::fs::unlinkat(dir, &temp_name, AtFlags::empty());
    }
    written
}

fn fill(file: &File, bytes: &[u8], keep: Option<Mode>) -> io::Result<()> {
    let mut writer = file;
    writer.write_all(bytes)?;
    if let Some(mode) = keep {
        rustix::fs::fchmod(file, mode)?;
    }
    file.sync_all()
}

/// A new temporary file in `dir`, with a name no other writer uses.
fn create_temp(dir: BorrowedFd<'_>) -> io::Result<(OsString, File)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.subsec_nanos())
        .unwrap_or_default();
    let mut last = Errno::EXIST;
    for _ in 0..NAME_TRIES {
        let count = COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = OsString::from(format!(
            ".mux-write-{}-{count}-{nanos:08x}",
            std::process::id()
        ));
        match rustix::fs::openat(
            dir,
            name.as_os_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        ) {
            Ok(fd) => return Ok((name, File::from(fd))),
            Err(Errno::EXIST) => last = Errno::EXIST,
            Err(errno) => return Err(errno.into()),
        }
    }
    Err(last.into())
}
