//! Which directories a session may take as its root: the `cwd` of `session/new` and
//! `session/load` becomes the root of the session's sandbox and permission rules.

use std::path::{Path, PathBuf};

/// Why a `cwd` was refused as a session's root.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CwdRefusal {
    /// The path is not absolute.
    #[error("it is not an absolute path")]
    Relative,
    /// The path does not lead to an existing directory (or cannot be resolved).
    #[error("it cannot be resolved: {0}")]
    Missing(String),
    /// The path is a file or something else that is not a directory.
    #[error("it is not a directory")]
    NotADirectory,
    /// The path resolves to the filesystem root.
    #[error(
        "it resolves to `/`, the whole filesystem; open a project directory (an application can allow this with AcpAgent::allow_broad_roots)"
    )]
    FilesystemRoot,
    /// The path resolves to a user's home directory.
    #[error(
        "it resolves to the home directory `{0}`; open a project directory (an application can allow this with AcpAgent::allow_broad_roots)"
    )]
    Home(PathBuf),
    /// The path resolves to a directory that holds a user's home directory.
    #[error(
        "it resolves to `{resolved}`, which holds the home directory `{home}`; open a project directory (an application can allow this with AcpAgent::allow_broad_roots)"
    )]
    HoldsHome {
        /// What the path resolved to.
        resolved: PathBuf,
        /// The home directory inside it.
        home: PathBuf,
    },
}

/// The root a session may take for `cwd`: `cwd` resolved (symbolic links, `.` and `..`),
/// which must be an existing directory. Unless `allow_broad` is set, the resolved path must
/// not be the filesystem root, a home directory (`$HOME`, `/root`, any `/home/*`) or a
/// directory that holds one.
pub(crate) fn session_root(cwd: &Path, allow_broad: bool) -> Result<PathBuf, CwdRefusal> {
    // The homes are only looked up when they matter.
    judge(cwd, allow_broad, homes)
}

/// [`session_root`] with the home directories from `homes`.
fn judge(
    cwd: &Path,
    allow_broad: bool,
    homes: impl FnOnce() -> Vec<PathBuf>,
) -> Result<PathBuf, CwdRefusal> {
    if !cwd.is_absolute() {
        return Err(CwdRefusal::Relative);
    }
    let resolved =
        std::fs::canonicalize(cwd).map_err(|err| CwdRefusal::Missing(err.to_string()))?;
    if !resolved.is_dir() {
        return Err(CwdRefusal::NotADirectory);
    }
    if allow_broad {
        return Ok(resolved);
    }
    if resolved.parent().is_none() {
        return Err(CwdRefusal::FilesystemRoot);
    }
    for home in homes() {
        if home == resolved {
            return Err(CwdRefusal::Home(home));
        }
        if home.starts_with(&resolved) {
            return Err(CwdRefusal::HoldsHome { resolved, home });
        }
    }
    Ok(resolved)
}

/// The home directories on this machine, resolved: `$HOME`, `/root` and every directory in
/// `/home`.
fn homes() -> Vec<PathBuf> {
    let mut homes: Vec<PathBuf> = Vec::new();
    if let Some(home) = std::env::var_os("HOME").filter(|home| !home.is_empty()) {
        homes.push(home.into());
    }
    homes.push("/root".into());
    if let Ok(entries) = std::fs::read_dir("/home") {
        homes.extend(entries.flatten().map(|entry| entry.path()));
    }
    homes
        .into_iter()
        .filter_map(|home| std::fs::canonicalize(home).ok())
        .filter(|home| home.is_dir())
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_project_directory_is_taken_resolved() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("project")).unwrap();
        let given = dir.path().join("project/../project/.");
        let root = session_root(&given, false).unwrap();
        assert_eq!(
            root,
            std::fs::canonicalize(dir.path().join("project")).unwrap()
        );
    }

    #[test]
    fn relative_missing_and_file_paths_are_refused_even_when_broad_roots_are_allowed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file.txt");
        std::fs::write(&file, "x").unwrap();
        for allow in [false, true] {
            assert_eq!(
                session_root(Path::new("relative/dir"), allow),
                Err(CwdRefusal::Relative)
            );
            assert!(matches!(
                session_root(&dir.path().join("absent"), allow),
                Err(CwdRefusal::Missing(_))
            ));
            assert_eq!(session_root(&file, allow), Err(CwdRefusal::NotADirectory));
        }
    }

    #[test]
    fn the_filesystem_root_is_refused_however_it_is_spelled_unless_allowed() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("link-to-root");
        std::os::unix::fs::symlink("/", &link).unwrap();
        for spelled in [Path::new("/"), Path::new("/tmp/.."), link.as_path()] {
            assert_eq!(
                session_root(spelled, false),
                Err(CwdRefusal::FilesystemRoot),
                "{}",
                spelled.display()
            );
            assert_eq!(session_root(spelled, true).unwrap(), Path::new("/"));
        }
    }

    #[test]
    fn a_home_and_a_directory_holding_one_are_refused_unless_allowed() {
        let dir = tempfile::tempdir().unwrap();
        let users = std::fs::canonicalize(dir.path()).unwrap().join("users");
        let alice = users.join("alice");
        std::fs::create_dir_all(alice.join("project")).unwrap();
        let link = dir.path().join("link-to-home");
        std::os::unix::fs::symlink(&alice, &link).unwrap();
        let homes = || vec![alice.clone()];
        assert_eq!(
            judge(&alice, false, homes),
            Err(CwdRefusal::Home(alice.clone()))
        );
        assert_eq!(
            judge(&link, false, homes),
            Err(CwdRefusal::Home(alice.clone()))
        );
        assert_eq!(
            judge(&users, false, homes),
            Err(CwdRefusal::HoldsHome {
                resolved: users.clone(),
                home: alice.clone()
            })
        );
        assert_eq!(
            judge(&alice.join("project"), false, homes).unwrap(),
            alice.join("project")
        );
        assert_eq!(judge(&alice, true, homes).unwrap(), alice);
        assert_eq!(judge(&users, true, homes).unwrap(), users);
    }

    #[test]
    fn the_machine_homes_include_root_and_home() {
        let homes = homes();
        assert!(
            homes.iter().any(|home| home == Path::new("/root")),
            "{homes:?}"
        );
        if let Some(home) = std::env::var_os("HOME").and_then(|h| std::fs::canonicalize(h).ok()) {
            assert!(homes.contains(&home), "{homes:?}");
        }
    }
}
