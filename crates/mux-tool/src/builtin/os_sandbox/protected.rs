//! Protected paths under the wall: every name of the one list ([`crate::protected`], read by
//! the permission layer too) is kept read-only at the top of the root under `WorkspaceWrite`,
//! so a command the analysis misjudged cannot plant a git hook, an MCP server or a setting;
//! and so is every `deny_write` path of the file policy, under any policy.
//!
//! A protected path that does not exist yet is held by an empty placeholder directory for the
//! length of the call (mounted read-only inside the sandbox), so it cannot be created either.
//! A name cannot be held without a directory entry (a mount needs one, and a file system
//! shared with the user has no entry only one mount namespace sees), so the placeholder is
//! real while the call runs and leaves no residue after it:
//! - it is removed as soon as the last call holding it ends, before the call returns;
//! - if the agent dies first, a reaper removes it: a small process forked (no second binary)
//!   when the call takes its placeholders, in a session of its own, that waits on a pipe only
//!   the agent writes. Told the call ended, it exits; at end of file without that word (the
//!   agent was killed) it kills the command's process group, whose namespace would otherwise
//!   lose the placeholder's mount, then removes the empty placeholders and exits.
//!
//! Placeholders are shared by the calls that run at once in the same root (counted), since
//! removing one a running call holds would take its mount away.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

#[cfg(target_os = "linux")]
use super::reaper::Reaper;
#[cfg(target_os = "linux")]
use super::{Confinement, OsSandboxError, SandboxPolicy};

#[cfg(target_os = "linux")]
use crate::protected::PROTECTED;

/// What stays read-only inside `.git` when git may write its repository: what git reads as
/// code or configuration (config, hooks, attributes and excludes, submodules' and linked
/// worktrees' own repositories).
#[cfg(target_os = "linux")]
const GIT_CODE: [&str; 5] = ["config", "hooks", "info", "modules", "worktrees"];

/// The placeholders that exist now, and how many calls hold each.
static HELD: Mutex<BTreeMap<PathBuf, usize>> = Mutex::new(BTreeMap::new());

/// The protected paths of one call: all exist (a placeholder stands for a missing one).
#[cfg(target_os = "linux")]
#[derive(Debug, Default)]
pub(super) struct Protection {
    /// Absolute paths to mount read-only.
    pub(super) paths: Vec<PathBuf>,
    /// The placeholders this call holds.
    pub(super) placeholders: Placeholders,
}

/// Placeholder directories held by one call; released on drop (the last holder removes
/// them), or by the reaper if the agent dies first.
#[derive(Debug, Default)]
pub(crate) struct Placeholders {
    held: Vec<PathBuf>,
    #[cfg(target_os = "linux")]
    reaper: Option<Reaper>,
}

impl Placeholders {
    /// Makes sure `path` exists, holding a placeholder (an empty directory) if it does not.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    fn hold(&mut self, path: &Path) -> io::Result<()> {
        let mut registry = HELD.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = registry.get_mut(path) {
            // Removed from outside while another call held it: made again.
            if let Err(err) = std::fs::create_dir(path)
                && err.kind() != io::ErrorKind::AlreadyExists
            {
                return Err(err);
            }
            *count += 1;
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
                registry.insert(path.to_owned(), 1);
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
    fn guard(&mut self) -> io::Result<()> {
        if !self.held.is_empty() {
            self.reaper = Some(Reaper::start(&self.held)?);
        }
        Ok(())
    }

    /// Tells the reaper the process group of the command, which it kills if the agent dies.
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
        let mut registry = HELD.lock().unwrap_or_else(PoisonError::into_inner);
        let mut last = Vec::new();
        for path in self.held.drain(..).rev() {
            if let Some(count) = registry.get_mut(&path) {
                *count -= 1;
                if *count == 0 {
                    registry.remove(&path);
                    last.push(path);
                }
            }
        }
        remove(&last);
        drop(registry);
        // Then the reaper is told the call ended (its drop), and exits.
        #[cfg(target_os = "linux")]
        drop(self.reaper.take());
    }
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

/// The protected paths of a call confined as `confinement` says, with `more` (paths inside the
/// root that must stay as they are for this call): the protected names at the top of the root
/// under `WorkspaceWrite` (under `ReadOnly` the whole root is read-only already) and at the
/// top of every extra writable dir, and the `deny_write` paths. None without the mount view.
#[cfg(target_os = "linux")]
pub(super) fn protect(
    confinement: &Confinement,
    more: &[PathBuf],
) -> Result<Protection, OsSandboxError> {
    let mut protection = Protection::default();
    if confinement.policy == SandboxPolicy::FullAccess || !confinement.mount_view {
        return Ok(protection);
    }
    if confinement.policy == SandboxPolicy::WorkspaceWrite {
        protect_names(&mut protection, confinement, &confinement.root, more)?;
    }
    // The extra writable dirs keep their protected names as the root does (a writable home
    // keeps its `.bashrc`, and cannot be given one).
    for dir in &confinement.files.allow_write {
        if std::fs::metadata(dir).is_ok_and(|meta| meta.is_dir()) {
            protect_names(&mut protection, confinement, dir, &[])?;
        }
    }
    // `deny_write` paths: kept read-only where they exist, held where they do not and could
    // be made (inside a writable place).
    let writable = confinement.writable();
    for path in &confinement.files.deny_write {
        if std::fs::symlink_metadata(path).is_ok() {
            protection.paths.push(path.clone());
        } else if writable.iter().any(|dir| path.starts_with(dir)) {
            add(&mut protection, path.clone(), confinement)?;
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    protection.paths.retain(|path| seen.insert(path.clone()));
    protection
        .placeholders
        .guard()
        .map_err(|err| OsSandboxError::Setup {
            policy: confinement.policy,
            reason: format!("cannot start the placeholders' reaper: {err}"),
        })?;
    Ok(protection)
}

/// The protected names at the top of `dir` (the root, or an extra writable dir), and `more`.
#[cfg(target_os = "linux")]
fn protect_names(
    protection: &mut Protection,
    confinement: &Confinement,
    dir: &Path,
    more: &[PathBuf],
) -> Result<(), OsSandboxError> {
    let at_home = match &confinement.files.home {
        Some(home) => home == dir,
        None => std::env::var_os("HOME")
            .and_then(|home| std::fs::canonicalize(home).ok())
            .is_some_and(|home| home == dir),
    };
    for entry in PROTECTED {
        let name = entry.name;
        let path = dir.join(name);
        if protection.paths.contains(&path) {
            continue;
        }
        // A file read only from the home directory changes nothing elsewhere: held when it
        // exists (it may be read one day), not made when it does not.
        if entry.home && !at_home && std::fs::symlink_metadata(&path).is_err() {
            continue;
        }
        let git_dir = name == ".git"
            && std::fs::symlink_metadata(&path).is_ok_and(|meta| meta.file_type().is_dir());
        if git_dir && confinement.git_writes && dir == confinement.root {
            for inner in GIT_CODE {
                add(protection, path.join(inner), confinement)?;
            }
        } else {
            add(protection, path, confinement)?;
        }
    }
    for path in more {
        add(protection, path.clone(), confinement)?;
    }
    Ok(())
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
            files: Default::default(),
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
        assert!(
            dir.path().join(".claude").is_dir(),
            "still held by the second call"
        );
        drop(second);
        assert!(
            !dir.path().join(".claude").exists(),
            "gone with the last call"
        );
        assert!(!dir.path().join(".git").exists());
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
        assert!(!dir.path().join(".git/hooks").exists());
    }
}
