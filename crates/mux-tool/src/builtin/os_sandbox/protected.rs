//! Protected paths under the wall: every name of the one list ([`crate::protected`], read by
//! the permission layer too) is kept read-only at the top of the root under `WorkspaceWrite`,
//! so a command the analysis misjudged cannot plant a git hook, an MCP server or a setting.
//!
//! A protected path that does not exist yet is held by an empty placeholder directory for the
//! length of the call (mounted read-only inside the sandbox), so it cannot be created either.
//! The placeholder is removed once no call has held it for [`LINGER`]: removing a directory
//! that was a mount point costs the kernel an RCU grace period (milliseconds), which calls in
//! quick succession should not each pay.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

#[cfg(target_os = "linux")]
use super::{Confinement, OsSandboxError, SandboxPolicy};

#[cfg(target_os = "linux")]
use crate::protected::PROTECTED;

/// What stays read-only inside `.git` when git may write its repository: what git reads as
/// code or configuration (config, hooks, attributes and excludes, submodules' and linked
/// worktrees' own repositories).
#[cfg(target_os = "linux")]
const GIT_CODE: [&str; 5] = ["config", "hooks", "info", "modules", "worktrees"];

/// How long a placeholder no call holds stays before it is removed.
const LINGER: Duration = Duration::from_secs(1);

/// A placeholder: how many calls hold it, and since when none has.
#[derive(Debug)]
struct Held {
    count: usize,
    released: Option<Instant>,
}

/// The placeholders that exist now, and whether a thread is on its way to remove them.
struct Registry {
    held: BTreeMap<PathBuf, Held>,
    reaper: bool,
}

static HELD: Mutex<Registry> = Mutex::new(Registry {
    held: BTreeMap::new(),
    reaper: false,
});

/// The protected paths of one call: all exist (a placeholder stands for a missing one).
#[cfg(target_os = "linux")]
#[derive(Debug, Default)]
pub(super) struct Protection {
    /// Absolute paths to mount read-only, inside the root.
    pub(super) paths: Vec<PathBuf>,
    /// The placeholders this call holds.
    pub(super) placeholders: Placeholders,
}

/// Placeholder directories held by one call; released on drop.
#[derive(Debug, Default)]
pub(crate) struct Placeholders {
    held: Vec<PathBuf>,
}

impl Placeholders {
    /// Makes sure `path` exists, holding a placeholder (an empty directory) if it does not.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    fn hold(&mut self, path: &Path) -> io::Result<()> {
        let mut registry = HELD.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(held) = registry.held.get_mut(path) {
            // Removed from outside while it lingered: made again.
            if let Err(err) = std::fs::create_dir(path)
                && err.kind() != io::ErrorKind::AlreadyExists
            {
                return Err(err);
            }
            held.count += 1;
            held.released = None;
            self.held.push(path.to_owned());
            return Ok(());
        }
        match std::fs::symlink_metadata(path) {
            Ok(_) => return Ok(()),
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => return Err(err),
        }
        match std::fs::create_dir(path) {
            Ok(()) => {
                registry.held.insert(
                    path.to_owned(),
                    Held {
                        count: 1,
                        released: None,
                    },
                );
                self.held.push(path.to_owned());
                Ok(())
            }
            // Someone else's now: protected as an existing path.
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => Ok(()),
            Err(err) => Err(err),
        }
    }
}

impl Drop for Placeholders {
    fn drop(&mut self) {
        if self.held.is_empty() {
            return;
        }
        let mut registry = HELD.lock().unwrap_or_else(PoisonError::into_inner);
        for path in self.held.drain(..) {
            if let Some(held) = registry.held.get_mut(&path) {
                held.count -= 1;
                if held.count == 0 {
                    held.released = Some(Instant::now());
                }
            }
        }
        if !registry.reaper {
            registry.reaper = std::thread::Builder::new()
                .name("mux-placeholders".into())
                .spawn(reap)
                .is_ok();
        }
    }
}

/// Removes the placeholders no call has held for [`LINGER`], until none is left.
fn reap() {
    loop {
        std::thread::sleep(LINGER);
        let mut registry = HELD.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        registry.held.retain(|path, held| {
            let idle = held
                .released
                .is_some_and(|since| now.duration_since(since) >= LINGER);
            if idle {
                // Only an empty directory goes; anything put in it from outside stays.
                let _ = std::fs::remove_dir(path);
            }
            !idle
        });
        if registry.held.is_empty() {
            registry.reaper = false;
            return;
        }
    }
}

/// The protected paths of a call confined as `confinement` says, with `more` (paths inside the
/// root that must stay as they are for this call): none but under `WorkspaceWrite` (under
/// `ReadOnly` the whole root is read-only already).
#[cfg(target_os = "linux")]
pub(super) fn protect(
    confinement: &Confinement,
    more: &[PathBuf],
) -> Result<Protection, OsSandboxError> {
    let mut protection = Protection::default();
    if confinement.policy != SandboxPolicy::WorkspaceWrite || !confinement.mount_view {
        return Ok(protection);
    }
    let at_home = std::env::var_os("HOME")
        .and_then(|home| std::fs::canonicalize(home).ok())
        .is_some_and(|home| home == confinement.root);
    for entry in PROTECTED {
        let name = entry.name;
        let path = confinement.root.join(name);
        // A file read only from the home directory changes nothing elsewhere: held when it
        // exists (it may be read one day), not made when it does not.
        if entry.home && !at_home && std::fs::symlink_metadata(&path).is_err() {
            continue;
        }
        let git_dir = name == ".git"
            && std::fs::symlink_metadata(&path).is_ok_and(|meta| meta.file_type().is_dir());
        if git_dir && confinement.git_writes {
            for inner in GIT_CODE {
                add(&mut protection, path.join(inner), confinement)?;
            }
        } else {
            add(&mut protection, path, confinement)?;
        }
    }
    for path in more {
        add(&mut protection, path.clone(), confinement)?;
    }
    Ok(protection)
}

#[cfg(target_os = "linux")]
fn add(
    protection: &mut Protection,
    path: PathBuf,
    confinement: &Confinement,
) -> Result<(), OsSandboxError> {
    let setup = |err: io::Error| OsSandboxError::Setup {
        policy: confinement.policy,
        reason: format!("cannot protect {}: {err}", path.display()),
    };
    protection.placeholders.hold(&path).map_err(setup)?;
    protection.paths.push(path);
    Ok(())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn confinement(root: &Path, git_writes: bool) -> Confinement {
        Confinement {
            policy: SandboxPolicy::WorkspaceWrite,
            network: false,
            egress: None,
            root: root.to_owned(),
            scratch: root.join("tmp"),
            mount_view: true,
            git_writes,
            nested_git: false,
        }
    }

    #[test]
    fn missing_names_are_held_by_placeholders_until_the_last_call_ends() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".mcp.json"), "{}").unwrap();
        let first = protect(&confinement(dir.path(), false), &[]).unwrap();
        let second = protect(&confinement(dir.path(), false), &[]).unwrap();
        let everywhere = PROTECTED.iter().filter(|entry| !entry.home).count();
        assert_eq!(first.paths.len(), everywhere);
        assert!(dir.path().join(".claude").is_dir());
        assert!(dir.path().join(".mcp.json").is_file());
        drop(first);
        std::thread::sleep(LINGER * 2);
        assert!(
            dir.path().join(".claude").is_dir(),
            "still held by the second call"
        );
        drop(second);
        assert!(dir.path().join(".claude").is_dir(), "lingers a moment");
        wait_gone(&dir.path().join(".claude"));
        wait_gone(&dir.path().join(".git"));
        assert!(
            dir.path().join(".mcp.json").is_file(),
            "an existing file stays"
        );
    }

    #[test]
    fn a_home_file_is_held_where_it_exists_and_not_made_where_it_does_not() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".bashrc"), "").unwrap();
        let protection = protect(&confinement(dir.path(), false), &[]).unwrap();
        assert!(protection.paths.contains(&dir.path().join(".bashrc")));
        assert!(protection.paths.contains(&dir.path().join(".vscode")));
        assert!(!protection.paths.contains(&dir.path().join(".zshrc")));
        assert!(!dir.path().join(".zshrc").exists());
    }

    #[test]
    fn git_writes_protect_what_git_runs_and_leave_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git/objects")).unwrap();
        std::fs::write(dir.path().join(".git/config"), "").unwrap();
        let protection = protect(&confinement(dir.path(), true), &[]).unwrap();
        assert!(protection.paths.contains(&dir.path().join(".git/hooks")));
        assert!(protection.paths.contains(&dir.path().join(".git/config")));
        assert!(!protection.paths.contains(&dir.path().join(".git")));
        assert!(dir.path().join(".git/hooks").is_dir());
        drop(protection);
        wait_gone(&dir.path().join(".git/hooks"));
    }

    fn wait_gone(path: &Path) {
        let gone = (0..100).any(|_| {
            std::thread::sleep(LINGER / 10);
            !path.exists()
        });
        assert!(gone, "{} was not removed", path.display());
    }
}
