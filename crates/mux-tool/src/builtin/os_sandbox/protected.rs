//! Protected paths under the wall: every name of the one list ([`crate::protected`], read by
//! the permission layer too) is kept read-only at the top of the root under `WorkspaceWrite`,
//! so a command the analysis misjudged cannot plant a git hook, an MCP server or a setting;
//! and so is every `deny_write` path of the file policy, under any policy.
//!
//! A protected path that does not exist yet is held by an empty placeholder directory for the
//! length of the call (mounted read-only inside the sandbox), so it cannot be created either.
//! A name cannot be held without a directory entry (a mount needs one, and a file system
//! shared with the user has no entry only one mount namespace sees), so the placeholder is
//! real while the call runs and leaves no residue after it (module `placeholders`: removed in
//! the background a moment after the last call holding it ends, taken over by a call that
//! starts meanwhile, removed at exit, and by a reaper if the agent is killed).

use std::path::{Path, PathBuf};

pub(crate) use super::placeholders::Placeholders;
#[cfg(target_os = "linux")]
use super::placeholders::exists;
#[cfg(target_os = "linux")]
use super::{Confinement, OsSandboxError, SandboxPolicy};

#[cfg(target_os = "linux")]
use crate::protected::PROTECTED;

/// What stays read-only inside `.git` when git may write its repository: what git reads as
/// code or configuration (config, hooks, attributes and excludes, submodules' and linked
/// worktrees' own repositories).
#[cfg(target_os = "linux")]
const GIT_CODE: [&str; 5] = ["config", "hooks", "info", "modules", "worktrees"];

/// The protected paths of one call: all exist (a placeholder stands for a missing one).
#[cfg(target_os = "linux")]
#[derive(Debug, Default)]
pub(super) struct Protection {
    /// Absolute paths to mount read-only.
    pub(super) paths: Vec<PathBuf>,
    /// The placeholders this call holds.
    pub(super) placeholders: Placeholders,
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
        if exists(dir) && std::fs::metadata(dir).is_ok_and(|meta| meta.is_dir()) {
            protect_names(&mut protection, confinement, dir, &[])?;
        }
    }
    // `deny_write` paths: kept read-only where they exist, held where they do not and could
    // be made (inside a writable place).
    let writable = confinement.writable();
    for path in &confinement.files.deny_write {
        if exists(path) {
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
        if entry.home && !at_home && !exists(&path) {
            continue;
        }
        let git_dir = name == ".git"
            && exists(&path)
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
    let setup = |err: std::io::Error| OsSandboxError::Setup {
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
        // Removed a moment later in the background, or now by `settle` (as at exit).
        super::super::placeholders::settle();
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
        super::super::placeholders::settle();
        assert!(!dir.path().join(".git/hooks").exists());
    }
}
