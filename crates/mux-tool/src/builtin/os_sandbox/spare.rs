//! A sealed process made ahead of time ([`SealedSpare`]): the cost of starting a sealed
//! program, less its `exec`, is paid before the program is needed.
//!
//! [`super::seal`]'s path forks the caller (a copy of its page tables), walls the child and
//! only then `exec`s; a caller that needs the program's answer now waits for all of it. A
//! spare is cloned and walled at once, then waits on its standard input, holding no file of
//! its parent's, for the one argument list and environment it will `exec` the program with;
//! when it has them, all that is left is the `exec`.
//!
//! The spare is cloned as `posix_spawn` clones (`CLONE_VM | CLONE_VFORK`): it shares the
//! parent's memory (nothing is copied, nothing is kept alive) and runs on a stack of its own,
//! while one thread of the parent, the spare's holder, waits for it to `exec` or exit. Until
//! then the spare only makes system calls on what the holder prepared (the wall, three pipes,
//! a buffer, two pointer arrays), allocates nothing and cannot panic. Signals are blocked
//! across the clone, and the spare resets every handler to the default before it unblocks
//! them, so no handler of the parent's ever runs in it.
//!
//! What it runs with is exactly what it is handed: the arguments and the environment (nothing
//! inherited), `/` as its working directory, its standard input at end of file. Each spare
//! runs one program, once.

use std::ffi::{CString, c_char, c_int, c_void};
use std::fs::File;
use std::io::{self, Read as _, Write as _};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::child::Setup;
use super::{OsSandboxError, SandboxPolicy};

/// The most bytes a spare takes: its arguments and environment, each with its end byte, and
/// an 8-byte header.
pub const SPARE_MAX_BYTES: usize = 2 * 1024 * 1024;
/// The most arguments and environment strings a spare takes, together.
pub const SPARE_MAX_STRINGS: usize = 4096;
/// The spare's stack, below the program's `exec`; it runs a few system calls.
const STACK_BYTES: usize = 256 * 1024;
/// The holder's thread's stack: it only clones and waits.
const HOLDER_STACK_BYTES: usize = 128 * 1024;
/// The guard page under the stack.
const GUARD_BYTES: usize = 4096;
/// How long [`SealedSpare::exec`] waits for the program to start once it has its input.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// Exit statuses of a spare that never ran the program.
const WALL_FAILED: c_int = 125;
const BAD_INPUT: c_int = 126;
const EXEC_FAILED: c_int = 127;

/// A sealed process started ahead of time, waiting to run one program once (Linux).
///
/// Walled as [`seal`](crate::builtin::seal) walls a command: a new session, no capability,
/// the file system read-only (Landlock), no socket of any family (seccomp). It holds no file
/// of its parent's while it waits. Dropping an unused spare ends it.
#[derive(Debug)]
pub struct SealedSpare {
    // Field order is drop order: the spare's input closes before the holder is let go, so
    // an unused spare reads end of file and exits, and the holder reaps it.
    input: File,
    stdout: File,
    stderr: File,
    started: mpsc::Receiver<io::Result<libc::pid_t>>,
}

/// A program a [`SealedSpare`] runs.
#[derive(Debug)]
pub struct SealedChild {
    pid: libc::pid_t,
    reaped: bool,
    stdout: File,
    stderr: File,
}

/// What a [`SealedChild`] printed, and how it ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SealedOutput {
    /// Its exit status, or 128 plus the signal that ended it.
    pub status: i32,
    /// Its standard output.
    pub stdout: Vec<u8>,
    /// Its standard error.
    pub stderr: Vec<u8>,
}

impl SealedSpare {
    /// Starts a spare that will run `program` (a path; it is not looked up on the `PATH`).
    ///
    /// Fails with [`OsSandboxError`] where the kernel cannot enforce the wall or the spare
    /// cannot be made.
    pub fn start(program: &Path) -> Result<Self, OsSandboxError> {
        let setup_error = |reason: String| OsSandboxError::Setup {
            policy: SandboxPolicy::ReadOnly,
            reason,
        };
        let program = CString::new(program.as_os_str().as_encoded_bytes())
            .map_err(|_| setup_error("the program's path holds a NUL byte".to_owned()))?;
        let setup = super::spawn::sealed_setup()?;
        let pipes = |what: &str| pipe().map_err(|err| setup_error(format!("{what} pipe: {err}")));
        let (input_read, input_write) = pipes("input")?;
        let (stdout_read, stdout_write) = pipes("output")?;
        let (stderr_read, stderr_write) = pipes("error")?;
        let holder = Holder {
            program,
            setup,
            input: input_read,
            stdout: stdout_write,
            stderr: stderr_write,
            buffer: Vec::new(),
            argv: Vec::new(),
            envp: Vec::new(),
        };
        let (tx, started) = mpsc::channel();
        std::thread::Builder::new()
            .name("mux-sealed-spare".to_owned())
            .stack_size(HOLDER_STACK_BYTES)
            .spawn(move || holder.hold(&tx))
            .map_err(|err| setup_error(format!("cannot start the spare's holder: {err}")))?;
        let mut spare = Self {
            input: File::from(input_write),
            stdout: File::from(stdout_read),
            stderr: File::from(stderr_read),
            started,
        };
        // The spare says it is walled and waiting with one byte; the end of its output
        // instead means the wall could not be set up.
        match read_one(&mut spare.stdout, START_TIMEOUT) {
            Ok(true) => Ok(spare),
            Ok(false) => {
                let status = match spare.started.recv_timeout(START_TIMEOUT) {
                    Ok(Ok(pid)) => wait(pid, 0)
                        .ok()
                        .flatten()
                        .map_or_else(|| "unknown".to_owned(), |status| status.to_string()),
                    Ok(Err(err)) => format!("not cloned: {err}"),
                    Err(_) => "unknown".to_owned(),
                };
                Err(setup_error(format!(
                    "the sealed spare ended before it was walled (status {status})"
                )))
            }
            Err(err) => Err(setup_error(format!(
                "the sealed spare did not start: {err}"
            ))),
        }
    }

    /// Runs the program with `args` (the first is its name, `argv[0]`) and exactly the
    /// environment `env`, and returns it running.
    ///
    /// Fails with [`io::ErrorKind::InvalidInput`] naming what was wrong when a string holds
    /// a NUL byte, a name is empty or holds `=`, or there are more than [`SPARE_MAX_BYTES`]
    /// or [`SPARE_MAX_STRINGS`]; with another error when the spare is gone or the program
    /// could not be started.
    pub fn exec(self, args: &[&str], env: &[(&str, &str)]) -> io::Result<SealedChild> {
        let input = encode(args, env)?;
        let Self {
            input: mut to_spare,
            stdout,
            stderr,
            started,
        } = self;
        let written = to_spare.write_all(&input);
        // End of file: the spare has its whole input.
        drop(to_spare);
        let pid = started
            .recv_timeout(START_TIMEOUT)
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "the spare did not start"))??;
        let child = SealedChild {
            pid,
            reaped: false,
            stdout,
            stderr,
        };
        if let Err(err) = written {
            drop(child);
            return Err(io::Error::new(
                err.kind(),
                format!("cannot hand the spare its input: {err}"),
            ));
        }
        Ok(child)
    }
}

/// Reads one byte of `file` within `timeout`: `true` for a byte, `false` at its end.
fn read_one(file: &mut File, timeout: Duration) -> io::Result<bool> {
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "no answer"));
        }
        let mut fds = [poll_fd(file, true)];
        let ms = c_int::try_from(left.as_millis().max(1)).unwrap_or(c_int::MAX);
        // SAFETY: `fds` is one initialised `pollfd` that outlives the call.
        #[allow(unsafe_code)]
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), 1, ms) };
        if ready == 0
            || (ready < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted)
        {
            continue;
        }
        if ready < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut byte = [0u8; 1];
        match file.read(&mut byte) {
            Ok(read) => return Ok(read == 1),
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
}

/// The input a spare reads: `argc` and `envc` (little-endian u32), then each string and a
/// NUL byte.
fn encode(args: &[&str], env: &[(&str, &str)]) -> io::Result<Vec<u8>> {
    let invalid = |what: String| io::Error::new(io::ErrorKind::InvalidInput, what);
    if args.is_empty() {
        return Err(invalid(
            "a program needs its name as its first argument".to_owned(),
        ));
    }
    if args.len() + env.len() > SPARE_MAX_STRINGS {
        return Err(invalid(format!(
            "{} arguments and variables are more than the {SPARE_MAX_STRINGS} a spare takes",
            args.len() + env.len()
        )));
    }
    let mut input = Vec::new();
    input.extend_from_slice(&u32::try_from(args.len()).unwrap_or(u32::MAX).to_le_bytes());
    input.extend_from_slice(&u32::try_from(env.len()).unwrap_or(u32::MAX).to_le_bytes());
    for arg in args {
        if arg.contains('\0') {
            return Err(invalid(format!("the argument {arg:?} holds a NUL byte")));
        }
        input.extend_from_slice(arg.as_bytes());
        input.push(0);
    }
    for (name, value) in env {
        if name.is_empty() || name.contains(['=', '\0']) {
            return Err(invalid(format!(
                "{name:?} cannot name an environment variable"
            )));
        }
        if value.contains('\0') {
            return Err(invalid(format!(
                "the value of the variable {name} holds a NUL byte"
            )));
        }
        input.extend_from_slice(name.as_bytes());
        input.push(b'=');
        input.extend_from_slice(value.as_bytes());
        input.push(0);
    }
    if input.len() > SPARE_MAX_BYTES {
        return Err(invalid(format!(
            "{} bytes of arguments and environment are more than the {SPARE_MAX_BYTES} a spare takes",
            input.len()
        )));
    }
    Ok(input)
}

impl SealedChild {
    /// Reads its standard output and error to their ends and waits for it to exit, within
    /// `timeout`; at most `max_bytes` of each. Past the timeout or the limit it is killed,
    /// and the error says which.
    pub fn output(mut self, timeout: Duration, max_bytes: usize) -> io::Result<SealedOutput> {
        let deadline = Instant::now() + timeout;
        let mut stdout = Vec::new();
        let mut stderr = Vec::new();
        let mut open = [true, true];
        let mut chunk = [0u8; 16 * 1024];
        while open[0] || open[1] {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("the sealed program did not finish within {timeout:?}"),
                ));
            }
            let mut fds = [
                poll_fd(&self.stdout, open[0]),
                poll_fd(&self.stderr, open[1]),
            ];
            let ms = c_int::try_from(left.as_millis().max(1)).unwrap_or(c_int::MAX);
            // SAFETY: `fds` is an array of two initialised `pollfd`s that outlives the call.
            #[allow(unsafe_code)]
            let ready = unsafe { libc::poll(fds.as_mut_ptr(), 2, ms) };
            if ready < 0 {
                let err = io::Error::last_os_error();
                if err.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(err);
            }
            for (index, fd) in fds.iter().enumerate() {
                if !open[index] || fd.revents == 0 {
                    continue;
                }
                let (pipe, out) = if index == 0 {
                    (&mut self.stdout, &mut stdout)
                } else {
                    (&mut self.stderr, &mut stderr)
                };
                match pipe.read(&mut chunk) {
                    Ok(0) => open[index] = false,
                    Ok(read) => {
                        out.extend_from_slice(&chunk[..read]);
                        if out.len() > max_bytes {
                            return Err(io::Error::other(format!(
                                "the sealed program printed more than {max_bytes} bytes"
                            )));
                        }
                    }
                    Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                    Err(err) => return Err(err),
                }
            }
        }
        let status = self.wait_until(deadline)?;
        Ok(SealedOutput {
            status,
            stdout,
            stderr,
        })
    }

    /// Waits for it to exit until `deadline` (its end is a `pidfd` to poll, so no sleep
    /// adds to the wait), then gives up.
    fn wait_until(&mut self, deadline: Instant) -> io::Result<i32> {
        // SAFETY: pidfd_open on our own child, not reaped yet; the descriptor is owned below.
        #[allow(unsafe_code)]
        let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, self.pid, 0) };
        let pidfd = c_int::try_from(pidfd)
            .ok()
            .filter(|fd| *fd >= 0)
            // SAFETY: a descriptor just made, owned here alone.
            .map(|fd| {
                #[allow(unsafe_code)]
                unsafe {
                    File::from_raw_fd(fd)
                }
            });
        let mut pause = Duration::from_micros(20);
        loop {
            if let Some(status) = wait(self.pid, libc::WNOHANG)? {
                self.reaped = true;
                return Ok(status);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the sealed program did not exit after it closed its output",
                ));
            }
            if let Some(pidfd) = &pidfd {
                let mut fds = [poll_fd(pidfd, true)];
                let ms = c_int::try_from(left.as_millis().max(1)).unwrap_or(c_int::MAX);
                // SAFETY: `fds` is one initialised `pollfd` that outlives the call.
                #[allow(unsafe_code)]
                unsafe {
                    libc::poll(fds.as_mut_ptr(), 1, ms);
                }
            } else {
                std::thread::sleep(pause.min(left));
                pause = (pause * 2).min(Duration::from_millis(5));
            }
        }
    }
}

impl Drop for SealedChild {
    fn drop(&mut self) {
        if !self.reaped {
            // SAFETY: a signal to our own child, not reaped yet, so its pid is not reused.
            #[allow(unsafe_code)]
            unsafe {
                libc::kill(self.pid, libc::SIGKILL);
            }
            let _ = wait(self.pid, 0);
        }
    }
}

fn poll_fd(file: &File, open: bool) -> libc::pollfd {
    libc::pollfd {
        fd: if open { file.as_raw_fd() } else { -1 },
        events: libc::POLLIN,
        revents: 0,
    }
}

/// `waitpid(pid, flags)`: the exit status (128 plus a signal), `None` when `WNOHANG` found it
/// still running.
fn wait(pid: libc::pid_t, flags: c_int) -> io::Result<Option<i32>> {
    let mut status: c_int = 0;
    loop {
        // SAFETY: waits for our own child, writing its status to a local.
        #[allow(unsafe_code)]
        let ret = unsafe { libc::waitpid(pid, &mut status, flags) };
        if ret < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        if ret == 0 {
            return Ok(None);
        }
        return Ok(Some(if libc::WIFSIGNALED(status) {
            128 + libc::WTERMSIG(status)
        } else {
            libc::WEXITSTATUS(status)
        }));
    }
}

/// A pipe whose ends close on `exec`, both above the standard descriptors (so that placing
/// one end at 0, 1 or 2 in the spare cannot overwrite another).
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds: [c_int; 2] = [-1, -1];
    // SAFETY: pipe2 writes two descriptors into a local array.
    #[allow(unsafe_code)]
    let ret = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just made and are owned here alone.
    #[allow(unsafe_code)]
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    Ok((above_standard(read)?, above_standard(write)?))
}

fn above_standard(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    // SAFETY: duplicates a descriptor owned here; the copy is owned by the result.
    #[allow(unsafe_code)]
    let copy = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if copy < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `copy` was just made and is owned here alone.
    #[allow(unsafe_code)]
    Ok(unsafe { OwnedFd::from_raw_fd(copy) })
}

/// What the spare needs, prepared by its holder before the clone, and kept alive by it until
/// the spare has `exec`ed or exited.
struct Holder {
    program: CString,
    setup: Setup,
    input: OwnedFd,
    stdout: OwnedFd,
    stderr: OwnedFd,
    buffer: Vec<u8>,
    argv: Vec<*const c_char>,
    envp: Vec<*const c_char>,
}

// SAFETY: the raw pointers are only ever written by the spare (into the holder's own
// buffers) while the holder waits; the holder never shares them.
#[allow(unsafe_code)]
unsafe impl Send for Holder {}

impl Holder {
    /// On the holder's thread: clones the spare and waits for it to `exec` or exit, then
    /// reports its pid. If no one takes the report (the spare was dropped unused, so it read
    /// end of file and exited), reaps it.
    fn hold(mut self, report: &mpsc::Sender<io::Result<libc::pid_t>>) {
        self.buffer = vec![0; SPARE_MAX_BYTES];
        self.argv = vec![std::ptr::null(); SPARE_MAX_STRINGS + 1];
        self.envp = vec![std::ptr::null(); SPARE_MAX_STRINGS + 1];
        let cloned = self.clone_spare();
        // The spare has its own copies; the parent's ends here must close, so that the
        // reader of its output sees the end.
        drop(self);
        match cloned {
            Ok(pid) => {
                if report.send(Ok(pid)).is_err() {
                    let _ = wait(pid, 0);
                }
            }
            Err(err) => {
                let _ = report.send(Err(err));
            }
        }
    }

    fn clone_spare(&mut self) -> io::Result<libc::pid_t> {
        let stack = Stack::new()?;
        // SAFETY: sigset_t is plain data; sigfillset and pthread_sigmask write to locals.
        // `clone` runs `spare_main` on `stack` (mapped here, unmapped only after the clone
        // returns, when the spare has `exec`ed or exited, CLONE_VFORK) with a pointer to
        // `self`, which outlives the call and which this thread does not touch meanwhile.
        #[allow(unsafe_code)]
        unsafe {
            let mut all: libc::sigset_t = std::mem::zeroed();
            let mut before: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut before);
            let pid = libc::clone(
                spare_main,
                stack.top(),
                libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
                std::ptr::from_mut(self).cast::<c_void>(),
            );
            let err = io::Error::last_os_error();
            libc::pthread_sigmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
            if pid < 0 { Err(err) } else { Ok(pid) }
        }
    }
}

/// The spare's stack: mapped memory with a guard page at its low end.
struct Stack {
    base: *mut c_void,
}

impl Stack {
    fn new() -> io::Result<Self> {
        // SAFETY: a fresh anonymous mapping, then its lowest page made inaccessible.
        #[allow(unsafe_code)]
        unsafe {
            let base = libc::mmap(
                std::ptr::null_mut(),
                STACK_BYTES + GUARD_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            );
            if base == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            if libc::mprotect(base, GUARD_BYTES, libc::PROT_NONE) < 0 {
                let err = io::Error::last_os_error();
                libc::munmap(base, STACK_BYTES + GUARD_BYTES);
                return Err(err);
            }
            Ok(Self { base })
        }
    }

    /// The stack's top (it grows down), 16-byte aligned.
    fn top(&self) -> *mut c_void {
        self.base
            .cast::<u8>()
            .wrapping_add(STACK_BYTES + GUARD_BYTES)
            .cast()
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: unmaps the mapping made in `new`, no longer in use.
        #[allow(unsafe_code)]
        unsafe {
            libc::munmap(self.base, STACK_BYTES + GUARD_BYTES);
        }
    }
}

/// The spare: never returns into the parent's code; it `exec`s or exits.
extern "C" fn spare_main(holder: *mut c_void) -> c_int {
    // SAFETY: `holder` is the holder's `Holder`, alive and untouched by it until this
    // process `exec`s or exits (CLONE_VFORK).
    #[allow(unsafe_code)]
    unsafe {
        let holder = &mut *holder.cast::<Holder>();
        libc::_exit(spare(holder))
    }
}

/// What the spare does; returns only on a failure, with the status to exit with.
#[allow(unsafe_code)]
fn spare(holder: &mut Holder) -> c_int {
    // SAFETY (every block below): system calls on descriptors, buffers and pointer arrays
    // the holder prepared; nothing allocates, and nothing here can panic.
    unsafe {
        // No handler of the parent's may run here; signals stay blocked until the `exec`.
        for signal in 1..libc::SIGRTMAX() + 1 {
            if signal != libc::SIGKILL && signal != libc::SIGSTOP {
                libc::signal(signal, libc::SIG_DFL);
            }
        }
        for (from, to) in [
            (holder.input.as_raw_fd(), 0),
            (holder.stdout.as_raw_fd(), 1),
            (holder.stderr.as_raw_fd(), 2),
        ] {
            if libc::dup2(from, to) < 0 {
                return WALL_FAILED;
            }
        }
        // Every other descriptor of the parent's closes now (not at `exec`): a spare that
        // waits must not hold another child's pipe open. The ruleset's stays for Landlock.
        let ruleset = holder.setup.ruleset.as_raw_fd();
        if close_all_above_standard_but(ruleset).is_err() || libc::chdir(c"/".as_ptr()) < 0 {
            return WALL_FAILED;
        }
        if holder.setup.run().is_err() {
            return WALL_FAILED;
        }
        libc::close(ruleset);
        // Walled and waiting: the one byte `start` waits for.
        if libc::write(1, c"r".as_ptr().cast(), 1) != 1 {
            return WALL_FAILED;
        }
    }
    let Some(length) = read_input(&mut holder.buffer) else {
        return BAD_INPUT;
    };
    let Some(()) = split(holder, length) else {
        return BAD_INPUT;
    };
    // SAFETY: as above; `argv` and `envp` are NULL-terminated arrays of pointers to
    // NUL-terminated strings inside `buffer`.
    #[allow(unsafe_code)]
    unsafe {
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        libc::execve(
            holder.program.as_ptr(),
            holder.argv.as_ptr(),
            holder.envp.as_ptr(),
        );
    }
    EXEC_FAILED
}

/// Closes every descriptor above 2 but `keep`.
fn close_all_above_standard_but(keep: RawFd) -> Result<(), ()> {
    let close_range = |first: RawFd, last: libc::c_uint| {
        let Ok(first) = libc::c_uint::try_from(first) else {
            return Ok(());
        };
        if first > last {
            return Ok(());
        }
        // SAFETY: closes descriptors of this process's own table.
        #[allow(unsafe_code)]
        let ret = unsafe { libc::syscall(libc::SYS_close_range, first, last, 0) };
        if ret < 0 { Err(()) } else { Ok(()) }
    };
    let keep_u = libc::c_uint::try_from(keep).map_err(|_| ())?;
    close_range(3, keep_u.saturating_sub(1))?;
    close_range(keep.saturating_add(1), libc::c_uint::MAX)
}

/// Reads standard input to its end into `buffer`; its length, `None` past the buffer.
fn read_input(buffer: &mut [u8]) -> Option<usize> {
    let mut length = 0;
    loop {
        let room = buffer.get_mut(length..)?;
        if room.is_empty() {
            // Full: only end of file may follow.
            let mut probe = [0u8; 1];
            // SAFETY: reads at most one byte into a local.
            #[allow(unsafe_code)]
            let read = unsafe { libc::read(0, probe.as_mut_ptr().cast(), 1) };
            return (read == 0).then_some(length);
        }
        // SAFETY: reads into the unfilled part of `buffer`.
        #[allow(unsafe_code)]
        let read = unsafe { libc::read(0, room.as_mut_ptr().cast(), room.len()) };
        match read {
            0 => return Some(length),
            n if n > 0 => length += usize::try_from(n).ok()?,
            _ => {
                // SAFETY: reads this thread's errno.
                #[allow(unsafe_code)]
                let errno = unsafe { *libc::__errno_location() };
                if errno != libc::EINTR {
                    return None;
                }
            }
        }
    }
}

/// Points `argv` and `envp` at the strings of the input in `buffer[..length]`.
fn split(holder: &mut Holder, length: usize) -> Option<()> {
    let input = holder.buffer.get(..length)?;
    let count = |at: usize| -> Option<usize> {
        let bytes: [u8; 4] = input.get(at..at + 4)?.try_into().ok()?;
        usize::try_from(u32::from_le_bytes(bytes)).ok()
    };
    let (argc, envc) = (count(0)?, count(4)?);
    if argc == 0 || argc.checked_add(envc)? > SPARE_MAX_STRINGS {
        return None;
    }
    let mut at = 8;
    for index in 0..argc + envc {
        let rest = input.get(at..)?;
        let end = rest.iter().position(|byte| *byte == 0)?;
        let start = rest.as_ptr().cast::<c_char>();
        let slot = if index < argc {
            holder.argv.get_mut(index)?
        } else {
            holder.envp.get_mut(index - argc)?
        };
        *slot = start;
        at = at.checked_add(end)?.checked_add(1)?;
    }
    if at != length {
        return None;
    }
    *holder.argv.get_mut(argc)? = std::ptr::null();
    *holder.envp.get_mut(envc)? = std::ptr::null();
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bash() -> &'static Path {
        Path::new("/bin/bash")
    }

    #[test]
    fn a_spare_runs_what_it_is_handed_with_nothing_else() {
        let spare = SealedSpare::start(bash()).expect("spare");
        let child = spare
            .exec(
                &[
                    "bash",
                    "-c",
                    "printf '%s|%s|' \"$A\" \"$PWD\"; env | wc -l; echo err >&2",
                ],
                &[("A", "one two")],
            )
            .expect("exec");
        let output = child
            .output(Duration::from_secs(10), 1 << 20)
            .expect("output");
        assert_eq!(output.status, 0, "{output:?}");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.starts_with("one two|/|"), "{stdout}");
        assert_eq!(String::from_utf8_lossy(&output.stderr), "err\n");
    }

    #[test]
    fn a_spare_is_sealed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let canary = dir.path().join("CANARY");
        let spare = SealedSpare::start(bash()).expect("spare");
        let script = format!("touch {}; echo done", canary.display());
        let output = spare
            .exec(&["bash", "-c", &script], &[])
            .expect("exec")
            .output(Duration::from_secs(10), 1 << 20)
            .expect("output");
        assert_eq!(String::from_utf8_lossy(&output.stdout), "done\n");
        assert!(!canary.exists(), "the spare wrote a file");
    }

    #[test]
    fn a_waiting_spare_holds_no_file_of_its_parent() {
        let (read, write) = pipe().expect("pipe");
        // The spare is cloned while both ends are open here, and is waiting when `start`
        // returns.
        let spare = SealedSpare::start(bash()).expect("spare");
        drop(write);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut read = File::from(read);
            let mut rest = Vec::new();
            let _ = tx.send(read.read_to_end(&mut rest).map(|_| rest));
        });
        // Were the write end still open in the spare, this read would wait for the spare.
        let rest = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the waiting spare holds the pipe open");
        assert_eq!(rest.expect("read"), Vec::<u8>::new());
        drop(spare);
    }

    #[test]
    fn bad_input_is_named_and_an_unused_spare_ends() {
        let spare = SealedSpare::start(bash()).expect("spare");
        let err = spare.exec(&["bash", "-c", "a\0b"], &[]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("NUL"), "{err}");
        let spare = SealedSpare::start(bash()).expect("spare");
        let err = spare.exec(&["bash"], &[("A=B", "c")]).unwrap_err();
        assert!(err.to_string().contains("cannot name"), "{err}");
        drop(SealedSpare::start(bash()).expect("spare"));
    }

    #[test]
    fn a_program_that_cannot_be_run_is_reported() {
        let spare = SealedSpare::start(Path::new("/nonexistent/program")).expect("spare");
        let output = spare
            .exec(&["program"], &[])
            .expect("exec")
            .output(Duration::from_secs(10), 1 << 20)
            .expect("output");
        assert_eq!(output.status, EXEC_FAILED);
    }
}
