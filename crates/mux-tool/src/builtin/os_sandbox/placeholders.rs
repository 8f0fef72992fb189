//! Placeholders: the empty directories that hold absent protected paths while calls run
//! (module `protected`), shared by the calls that run at once in one root, and removed
//! without residue and without making a call wait for the removal.
//!
//! Each placeholder is, in the registry:
//! - **held** by the calls that run with it (counted; removing one a running call holds would
//!   take its mount away);
//! - **pending** once its last holder ended: the remover thread removes it [`linger`] later,
//!   unless a call that starts before then takes it over (held again: no removal, no new
//!   directory). The call that ended does not wait: removing a former mount point waits out
//!   an RCU grace period (milliseconds);
//! - **removing** once the remover has begun; a call that needs it waits for the end (at
//!   most [`REMOVAL_WAIT`]), then makes it anew.
//!
//! Nothing is left behind:
//! - when the agent's process exits (`exit`, a return from `main`), a handler registered with
//!   `atexit` removes every pending placeholder first;
//! - when it is killed, the call's reaper (module `reaper`) removes them: a reaper lives until
//!   its call's placeholders are removed or taken over by another call (whose own reaper then
//!   answers for them).
//!
//! A linger of zero removes them before the call returns (the synchronous path, kept for the
//! benchmark against it).

use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

#[cfg(target_os = "linux")]
use super::reaper::Reaper;

/// How long a call waits for the removal of a placeholder it needs before it fails.
const REMOVAL_WAIT: Duration = Duration::from_secs(10);

/// The default linger, in microseconds: long enough for back-to-back calls to share the
/// placeholders, short enough that a listing made a moment after a call finds none.
const DEFAULT_LINGER_MICROS: u64 = 200_000;

/// The linger, in microseconds (see [`set_placeholder_linger`]).
static LINGER_MICROS: AtomicU64 = AtomicU64::new(DEFAULT_LINGER_MICROS);

/// Where a placeholder is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Held by this many running calls (at least one).
    Held(usize),
    /// No call holds it; its removal is scheduled.
    Pending,
    /// Being removed by the remover (or at exit).
    Removing,
}

/// The placeholders that exist now, by path.
static REGISTRY: Mutex<BTreeMap<PathBuf, State>> = Mutex::new(BTreeMap::new());
/// Told when removals end (for calls waiting to make a placeholder anew).
static REMOVED: Condvar = Condvar::new();
/// The removals scheduled, in the order they are due.
static QUEUE: Mutex<VecDeque<Batch>> = Mutex::new(VecDeque::new());
/// Told when a removal is scheduled.
static QUEUED: Condvar = Condvar::new();

fn lock<T>(mutex: &'static Mutex<T>) -> MutexGuard<'static, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Sets how long the placeholders of absent protected paths stay after the last call that
/// held them ended, so that a call starting meanwhile takes them over (default 200 ms; their
/// removal never delays the call). Zero removes them before the call returns, as before.
/// For benchmarks and tests; it applies to the whole process.
#[doc(hidden)]
pub fn set_placeholder_linger(linger: Duration) {
    let micros = u64::try_from(linger.as_micros()).unwrap_or(u64::MAX);
    LINGER_MICROS.store(micros, Ordering::Relaxed);
}

/// The current linger.
fn linger() -> Duration {
    Duration::from_micros(LINGER_MICROS.load(Ordering::Relaxed))
}

/// Whether `path` exists and is not a placeholder. A placeholder (held by a running call, or
/// pending) counts as absent for the protection of a new call, which then holds it too
/// (takes it over): taken as an existing path, it could go while the call runs, and what
/// the call put inside it (`.git/hooks` in a placeholder `.git`) would keep it from going.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(super) fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok() && !lock(&REGISTRY).contains_key(path)
}

/// Placeholder directories held by one call; released on drop (removed once no call holds
/// them), or by the reaper if the agent dies first.
#[derive(Debug, Default)]
pub(crate) struct Placeholders {
    held: Vec<PathBuf>,
    #[cfg(target_os = "linux")]
    reaper: Option<Reaper>,
}

impl Placeholders {
    /// Makes sure `path` exists, holding a placeholder (an empty directory) if it does not:
    /// one that running calls hold, or a pending one (taken over), or a new one. Waits for a
    /// removal under way (an error after [`REMOVAL_WAIT`]).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(super) fn hold(&mut self, path: &Path) -> io::Result<()> {
        let mut registry = lock(&REGISTRY);
        let deadline = Instant::now() + REMOVAL_WAIT;
        loop {
            match registry.get_mut(path) {
                None => break,
                Some(State::Removing) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            format!(
                                "the removal of the former placeholder did not end within {} s",
                                REMOVAL_WAIT.as_secs()
                            ),
                        ));
                    }
                    registry = REMOVED
                        .wait_timeout(registry, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
                Some(state) => {
                    // Removed from outside meanwhile: made again.
                    if let Err(err) = std::fs::create_dir(path)
                        && err.kind() != io::ErrorKind::AlreadyExists
                    {
                        return Err(err);
                    }
                    *state = match *state {
                        State::Held(count) => State::Held(count + 1),
                        _ => State::Held(1),
                    };
                    self.held.push(path.to_owned());
                    return Ok(());
                }
            }
        }
        match std::fs::symlink_metadata(path) {
            Ok(_) => return Ok(()),
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => return Err(err),
        }
        match std::fs::create_dir(path) {
            Ok(()) => {
                registry.insert(path.to_owned(), State::Held(1));
                self.held.push(path.to_owned());
                Ok(())
            }
            // Someone else's now: protected as an existing path.
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => Ok(()),
            Err(err) => Err(err),
        }
    }

    /// Starts the reaper of the placeholders held, if any.
    #[cfg(target_os = "linux")]
    pub(super) fn guard(&mut self) -> io::Result<()> {
        if !self.held.is_empty() {
            self.reaper = Some(Reaper::start(&self.held)?);
        }
        Ok(())
    }

    /// Tells the reaper the process group of the command, which it kills if the agent dies
    /// during the call.
    pub(crate) fn started(&self, group: u32) {
        #[cfg(target_os = "linux")]
        if let Some(reaper) = &self.reaper {
            reaper.started(group);
        }
        #[cfg(not(target_os = "linux"))]
        let _ = group;
    }
}

impl Drop for Placeholders {
    fn drop(&mut self) {
        if self.held.is_empty() {
            return;
        }
        let mut last = Vec::new();
        {
            let mut registry = lock(&REGISTRY);
            for path in self.held.drain(..).rev() {
                if let Some(state) = registry.get_mut(&path) {
                    *state = match *state {
                        State::Held(count) if count > 1 => State::Held(count - 1),
                        _ => {
                            last.push(path);
                            State::Pending
                        }
                    };
                }
            }
        }
        let batch = Batch {
            paths: last,
            due: Instant::now() + linger(),
            #[cfg(target_os = "linux")]
            reaper: self.reaper.take(),
        };
        // The command has ended: the reaper must not kill its group any more (the id may
        // be reused), only remove what is left.
        #[cfg(target_os = "linux")]
        if let Some(reaper) = &batch.reaper {
            reaper.ended();
        }
        if batch.paths.is_empty() {
            // Every one is still held by another call, whose reaper answers for it.
            return;
        }
        schedule(batch);
    }
}

/// Placeholders whose last holder ended, with the reaper that answers for them until they
/// are removed (its drop tells it to exit).
#[derive(Debug)]
struct Batch {
    paths: Vec<PathBuf>,
    due: Instant,
    #[cfg(target_os = "linux")]
    reaper: Option<Reaper>,
}

/// Schedules the removal of `batch`: by the remover thread when it is due, or now when the
/// linger is zero or there is no remover.
fn schedule(batch: Batch) {
    if linger().is_zero() || !remover_started() || !exit_hook_registered() {
        remove_batch(batch);
        return;
    }
    lock(&QUEUE).push_back(batch);
    QUEUED.notify_one();
}

/// Removes the placeholders of `batch` that are still pending (not taken over, not removed
/// by an earlier batch), then lets its reaper go.
fn remove_batch(batch: Batch) {
    let paths: Vec<PathBuf> = {
        let mut registry = lock(&REGISTRY);
        let mut paths = Vec::new();
        for path in &batch.paths {
            if let Some(state) = registry.get_mut(path)
                && *state == State::Pending
            {
                *state = State::Removing;
                paths.push(path.clone());
            }
        }
        paths
    };
    remove_now(paths);
    drop(batch);
}

/// Removes `paths` (each marked removing), then forgets them and wakes the calls waiting.
fn remove_now(paths: Vec<PathBuf>) {
    if paths.is_empty() {
        return;
    }
    remove(&paths);
    let mut registry = lock(&REGISTRY);
    for path in &paths {
        registry.remove(path);
    }
    drop(registry);
    REMOVED.notify_all();
}

/// Removes the placeholders `paths` (only empty directories: anything put in one from
/// outside stays). Removing a directory that was a mount point waits for an RCU grace period
/// (milliseconds each), so they are removed at once, one thread each, and the wait is paid
/// once; the first fails over to the calling thread.
fn remove(paths: &[PathBuf]) {
    std::thread::scope(|scope| {
        for path in paths.iter().skip(1) {
            let spawned = std::thread::Builder::new()
                .name("mux-placeholder".into())
                .spawn_scoped(scope, move || std::fs::remove_dir(path));
            if spawned.is_err() {
                let _ = std::fs::remove_dir(path);
            }
        }
        if let Some(first) = paths.first() {
            let _ = std::fs::remove_dir(first);
        }
    });
}

/// Whether the remover thread runs (started on first use).
fn remover_started() -> bool {
    static STARTED: OnceLock<bool> = OnceLock::new();
    *STARTED.get_or_init(|| {
        std::thread::Builder::new()
            .name("mux-placeholders".into())
            .spawn(remover)
            .is_ok()
    })
}

/// The remover: removes each scheduled batch when it is due. It idles on a condition
/// variable between batches and lives as long as the process.
fn remover() {
    loop {
        let mut queue = lock(&QUEUE);
        let batch = loop {
            let now = Instant::now();
            match queue.front() {
                None => queue = QUEUED.wait(queue).unwrap_or_else(PoisonError::into_inner),
                Some(batch) if batch.due > now => {
                    let left = batch.due - now;
                    queue = QUEUED
                        .wait_timeout(queue, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
                Some(_) => {
                    if let Some(batch) = queue.pop_front() {
                        break batch;
                    }
                }
            }
        };
        drop(queue);
        remove_batch(batch);
    }
}

/// Whether the exit handler is registered (on first use). Elsewhere than on Linux there is
/// no placeholder, and no handler: removals are made at once.
fn exit_hook_registered() -> bool {
    #[cfg(target_os = "linux")]
    {
        static REGISTERED: OnceLock<bool> = OnceLock::new();
        *REGISTERED.get_or_init(|| {
            AGENT.store(std::process::id(), Ordering::Relaxed);
            // SAFETY: registers a plain function with no argument, which never unwinds.
            #[allow(unsafe_code)]
            let registered = unsafe { libc::atexit(at_exit) };
            registered == 0
        })
    }
    #[cfg(not(target_os = "linux"))]
    false
}

/// The process that registered the exit handler: a child forked from it that calls `exit`
/// inherits the handler, and must leave the agent's placeholders alone.
#[cfg(target_os = "linux")]
static AGENT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// The exit handler: the pending placeholders go before the process does.
#[cfg(target_os = "linux")]
extern "C" fn at_exit() {
    if AGENT.load(Ordering::Relaxed) == std::process::id() {
        let _ = std::panic::catch_unwind(settle);
    }
}

/// Removes every pending placeholder now, lets the scheduled batches' reapers go, and waits
/// (at most [`REMOVAL_WAIT`]) for a removal under way. Placeholders a running call holds stay
/// (at exit, their reapers remove them once the command is killed).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(super) fn settle() {
    let pending: Vec<PathBuf> = {
        let mut registry = lock(&REGISTRY);
        registry
            .iter_mut()
            .filter(|(_, state)| **state == State::Pending)
            .map(|(path, state)| {
                *state = State::Removing;
                path.clone()
            })
            .collect()
    };
    remove_now(pending);
    let batches: Vec<Batch> = lock(&QUEUE).drain(..).collect();
    drop(batches);
    let deadline = Instant::now() + REMOVAL_WAIT;
    let mut registry = lock(&REGISTRY);
    while registry.values().any(|state| *state == State::Removing) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        registry = REMOVED
            .wait_timeout(registry, left)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_call_that_needs_a_placeholder_being_removed_waits_then_makes_it_anew() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".envrc");
        std::fs::create_dir(&path).unwrap();
        lock(&REGISTRY).insert(path.clone(), State::Removing);
        let waiter = {
            let path = path.clone();
            std::thread::spawn(move || {
                let mut placeholders = Placeholders::default();
                placeholders.hold(&path).map(|()| placeholders)
            })
        };
        // The removal under way ends (as `remove_now` ends it).
        std::thread::sleep(Duration::from_millis(50));
        assert!(!waiter.is_finished(), "it did not wait for the removal");
        std::fs::remove_dir(&path).unwrap();
        lock(&REGISTRY).remove(&path);
        REMOVED.notify_all();
        let placeholders = waiter.join().unwrap().unwrap();
        assert!(path.is_dir(), "made anew");
        assert_eq!(lock(&REGISTRY).get(&path), Some(&State::Held(1)));
        drop(placeholders);
        settle();
        assert!(!path.exists());
        assert_eq!(lock(&REGISTRY).get(&path), None);
    }

    #[test]
    fn a_pending_placeholder_is_taken_over_and_anything_put_in_one_stays() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".mux");
        let mut first = Placeholders::default();
        first.hold(&path).unwrap();
        lock(&REGISTRY).insert(path.clone(), State::Pending);
        first.held.clear();
        // Taken over: held again, the same directory.
        let mut second = Placeholders::default();
        second.hold(&path).unwrap();
        assert_eq!(lock(&REGISTRY).get(&path), Some(&State::Held(1)));
        std::fs::write(path.join("kept"), "").unwrap();
        drop(second);
        settle();
        assert!(path.join("kept").is_file(), "a non-empty one stays");
        assert_eq!(lock(&REGISTRY).get(&path), None);
    }
}
