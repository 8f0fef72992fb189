//! The file policy of a sandboxed command beyond its [`SandboxPolicy`]: paths hidden from it,
//! extra writable paths, and paths kept read-only inside writable places. [`FilePolicy`] is
//! the plain value settings map to; [`FilePolicy::resolve`] turns it, in the parent before
//! the fork, into canonical paths the mount view and Landlock enforce ([`Files`]).

use std::io;
use std::path::{Component, Path, PathBuf};

use super::{OsSandboxError, SandboxPolicy};

/// What a sandboxed command may read and write beyond its [`SandboxPolicy`], taken by
/// [`Bash::file_policy`](crate::builtin::Bash::file_policy).
///
/// Paths are absolute, `~` or `~/…` (the home directory, see
/// [`Bash::home`](crate::builtin::Bash::home)), or relative to the root. Each is resolved
/// when a command starts, symlinks followed: a path that does not exist then has nothing to
/// hide or grant (one created while the command runs is not hidden from that command).
///
/// - `deny_read` paths, and the default secret locations
///   ([`SECRET_LOCATIONS`](crate::secrets::SECRET_LOCATIONS)) unless `secrets_visible` or an
///   `allow_read` path covers them, are hidden from every process of the command: an empty
///   read-only file system is mounted over a directory, an empty device over a file, in the
///   command's mount view. A path that is a symlink hides its target. Hidden wins over
///   everything else.
/// - `allow_write` paths are writable (a package cache such as `~/.npm`) under `ReadOnly` and
///   `WorkspaceWrite`, except what is hidden, protected or `deny_write`.
/// - `deny_write` paths stay read-only even inside writable places (one that does not exist
///   inside a writable place is held by a placeholder for the call, as protected names are).
///
/// Without the mount view ([`Bash::mount_view`](crate::builtin::Bash::mount_view)`(false)`)
/// nothing can be hidden or kept read-only beneath a writable place (Landlock only grants):
/// a call with such paths then fails with [`OsSandboxError::NeedsMountView`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FilePolicy {
    /// Paths hidden from the command.
    pub deny_read: Vec<PathBuf>,
    /// Paths exempt from the default secret locations: a secret location equal to or beneath
    /// one of these stays visible (an explicit `deny_read` path still wins).
    pub allow_read: Vec<PathBuf>,
    /// Extra writable paths.
    pub allow_write: Vec<PathBuf>,
    /// Paths kept read-only even inside writable places.
    pub deny_write: Vec<PathBuf>,
    /// Whether the default secret locations are visible (default: hidden).
    pub secrets_visible: bool,
}

/// A hidden path: canonical, existing.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Hidden {
    /// The canonical path.
    pub(crate) path: PathBuf,
    /// Whether it is a directory (an empty file system goes over it) or not (an empty device).
    pub(crate) dir: bool,
}

/// A [`FilePolicy`] resolved for one command: canonical paths that exist.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Files {
    /// Hidden paths, outermost first, none beneath another.
    pub(crate) hidden: Vec<Hidden>,
    /// Extra writable paths, none hidden, protected or beneath a `deny_write` path.
    pub(crate) allow_write: Vec<PathBuf>,
    /// Paths kept read-only: existing ones, and absent ones to hold with a placeholder.
    pub(crate) deny_write: Vec<PathBuf>,
    /// The home directory, canonical, if there is one.
    pub(crate) home: Option<PathBuf>,
}

/// Where a policy is resolved: the command's root and temp dir, its home, its wall.
pub(crate) struct Place<'a> {
    pub(crate) root: &'a Path,
    pub(crate) scratch: &'a Path,
    pub(crate) home: Option<&'a Path>,
    pub(crate) policy: SandboxPolicy,
    pub(crate) mount_view: bool,
}

impl FilePolicy {
    /// Resolves the policy for a command at `place`, failing closed where it cannot be
    /// enforced.
    pub(crate) fn resolve(&self, place: &Place<'_>) -> Result<Files, OsSandboxError> {
        if place.policy == SandboxPolicy::FullAccess {
            return Ok(Files::default());
        }
        let invalid = |path: &Path, reason: String| OsSandboxError::FilePolicy {
            policy: place.policy,
            path: path.to_owned(),
            reason,
        };
        let expand = |path: &Path| expand(path, place).map_err(|reason| invalid(path, reason));
        let canonical = |path: &Path| canonical(path).map_err(|err| invalid(path, err.to_string()));

        let mut hidden: Vec<Hidden> = Vec::new();
        let mut deny = Vec::new();
        for path in &self.deny_read {
            deny.push(expand(path)?);
        }
        if !self.secrets_visible
            && let Some(home) = place.home
        {
            let allowed = self
                .allow_read
                .iter()
                .map(|path| expand(path))
                .collect::<Result<Vec<_>, _>>()?;
            deny.extend(
                crate::secrets::secret_paths(home)
                    .filter(|secret| !allowed.iter().any(|allow| secret.starts_with(allow))),
            );
        }
        for path in deny {
            // The lexical path and, when it leads elsewhere, its target: a mount over the
            // path lands on the target anyway, so the target is what is hidden.
            let Some(target) = canonical(&path)? else {
                continue;
            };
            for place_dir in [place.root, place.scratch] {
                if place_dir.starts_with(&target) {
                    return Err(invalid(
                        &path,
                        format!("it hides {}, where the command runs", place_dir.display()),
                    ));
                }
            }
            let dir = std::fs::metadata(&target)
                .map_err(|err| invalid(&path, err.to_string()))?
                .is_dir();
            hidden.push(Hidden { path: target, dir });
        }
        hidden.sort_by(|a, b| {
            depth(&a.path)
                .cmp(&depth(&b.path))
                .then_with(|| a.path.cmp(&b.path))
        });
        let mut outermost: Vec<Hidden> = Vec::new();
        for path in hidden {
            if !outermost
                .iter()
                .any(|outer| path.path.starts_with(&outer.path))
            {
                outermost.push(path);
            }
        }

        let is_hidden = |path: &Path| outermost.iter().any(|h| path.starts_with(&h.path));
        let mut deny_write = Vec::new();
        for path in &self.deny_write {
            let path = expand(path)?;
            match canonical(&path)? {
                Some(target) => deny_write.push(target),
                // Absent: its parent's real place, so a placeholder can hold the name.
                None => {
                    if let (Some(parent), Some(Component::Normal(name))) =
                        (path.parent(), path.components().next_back())
                        && let Some(parent) = canonical(parent)?
                    {
                        deny_write.push(parent.join(name));
                    }
                }
            }
        }
        deny_write.retain(|path| !is_hidden(path));

        let mut allow_write = Vec::new();
        for path in &self.allow_write {
            let path = expand(path)?;
            let Some(target) = canonical(&path)? else {
                continue;
            };
            let denied = is_hidden(&target)
                || deny_write.iter().any(|deny| target.starts_with(deny))
                || crate::protected::protected_name(&target).is_some();
            if !denied && !allow_write.contains(&target) {
                allow_write.push(target);
            }
        }
        // Protected names at the top of an extra writable dir stay read-only, as in the root.
        for dir in &allow_write {
            for entry in crate::protected::PROTECTED {
                let path = dir.join(entry.name);
                if std::fs::symlink_metadata(&path).is_ok() && !deny_write.contains(&path) {
                    deny_write.push(path);
                }
            }
        }

        let files = Files {
            hidden: outermost,
            allow_write,
            deny_write,
            home: place.home.and_then(|home| std::fs::canonicalize(home).ok()),
        };
        if !place.mount_view {
            let writable = files.writable_beneath(place);
            let mut needing: Vec<PathBuf> = files.hidden.iter().map(|h| h.path.clone()).collect();
            needing.extend(
                files
                    .deny_write
                    .iter()
                    .filter(|path| writable.iter().any(|dir| path.starts_with(dir)))
                    .cloned(),
            );
            if !needing.is_empty() {
                return Err(OsSandboxError::NeedsMountView {
                    policy: place.policy,
                    paths: needing,
                });
            }
        }
        Ok(files)
    }
}

impl Files {
    /// The writable places at `place` (the root under `WorkspaceWrite`, the temp dir, the
    /// extra writable paths).
    fn writable_beneath(&self, place: &Place<'_>) -> Vec<PathBuf> {
        let mut dirs = vec![place.scratch.to_owned()];
        if place.policy == SandboxPolicy::WorkspaceWrite {
            dirs.push(place.root.to_owned());
        }
        dirs.extend(self.allow_write.iter().cloned());
        dirs
    }
}

fn depth(path: &Path) -> usize {
    path.components().count()
}

/// `path` made absolute: `~` and `~/…` under the home directory, a relative path under the
/// root.
fn expand(path: &Path, place: &Place<'_>) -> Result<PathBuf, String> {
    let mut components = path.components();
    match components.next() {
        Some(Component::Normal(first)) if first == "~" => match place.home {
            Some(home) => Ok(home.join(components.as_path())),
            None => Err("`~` needs a home directory, and none is set (HOME)".into()),
        },
        Some(Component::Normal(first)) if first.as_encoded_bytes().starts_with(b"~") => {
            Err("`~name` (another user's home directory) is not supported; give the path".into())
        }
        None => Err("the path is empty".into()),
        _ => Ok(place.root.join(path)),
    }
}

/// The canonical form of `path`, or `None` when it does not exist (a dangling symlink
/// included) or cannot be reached (then the command, with no more rights, cannot reach it
/// either).
fn canonical(path: &Path) -> io::Result<Option<PathBuf>> {
    match std::fs::canonicalize(path) {
        Ok(path) => Ok(Some(path)),
        Err(err)
            if matches!(
                err.kind(),
                io::ErrorKind::NotFound
                    | io::ErrorKind::PermissionDenied
                    | io::ErrorKind::NotADirectory
            ) =>
        {
            Ok(None)
        }
        Err(err) => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixture {
        _dir: tempfile::TempDir,
        home: PathBuf,
        root: PathBuf,
        scratch: PathBuf,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let home = base.join("home");
        let root = home.join("proj");
        let scratch = base.join("tmp");
        for dir in [&root, &scratch] {
            std::fs::create_dir_all(dir).unwrap();
        }
        Fixture {
            _dir: dir,
            home,
            root,
            scratch,
        }
    }

    fn place(f: &Fixture, mount_view: bool) -> Place<'_> {
        Place {
            root: &f.root,
            scratch: &f.scratch,
            home: Some(&f.home),
            policy: SandboxPolicy::WorkspaceWrite,
            mount_view,
        }
    }

    #[test]
    fn secrets_that_exist_are_hidden_absent_ones_are_not_and_targets_replace_links() {
        let f = fixture();
        std::fs::create_dir_all(f.home.join(".aws")).unwrap();
        std::fs::create_dir_all(f.home.join("vault/ssh")).unwrap();
        std::os::unix::fs::symlink(f.home.join("vault/ssh"), f.home.join(".ssh")).unwrap();
        std::fs::write(f.home.join(".netrc"), "machine x").unwrap();
        let files = FilePolicy::default().resolve(&place(&f, true)).unwrap();
        let hidden: Vec<_> = files.hidden.iter().map(|h| h.path.clone()).collect();
        assert!(hidden.contains(&f.home.join(".aws")), "{hidden:?}");
        assert!(hidden.contains(&f.home.join("vault/ssh")), "{hidden:?}");
        assert!(hidden.contains(&f.home.join(".netrc")), "{hidden:?}");
        assert!(!hidden.contains(&f.home.join(".kube")), "{hidden:?}");
        assert!(
            files
                .hidden
                .iter()
                .any(|h| h.path == f.home.join(".netrc") && !h.dir)
        );

        let visible = FilePolicy {
            secrets_visible: true,
            ..FilePolicy::default()
        };
        assert!(visible.resolve(&place(&f, true)).unwrap().hidden.is_empty());
        let allowed = FilePolicy {
            allow_read: vec!["~/.aws".into()],
            ..FilePolicy::default()
        };
        let files = allowed.resolve(&place(&f, true)).unwrap();
        assert!(!files.hidden.iter().any(|h| h.path == f.home.join(".aws")));
    }

    #[test]
    fn hiding_the_place_a_command_runs_in_is_refused_and_nested_paths_collapse() {
        let f = fixture();
        std::fs::create_dir_all(f.root.join("a/b")).unwrap();
        let policy = FilePolicy {
            deny_read: vec!["~".into()],
            secrets_visible: true,
            ..FilePolicy::default()
        };
        let err = policy.resolve(&place(&f, true)).unwrap_err();
        assert!(matches!(err, OsSandboxError::FilePolicy { .. }), "{err}");
        assert!(err.to_string().contains("where the command runs"), "{err}");

        let policy = FilePolicy {
            deny_read: vec!["a/b".into(), "a".into(), "./a/../a".into()],
            secrets_visible: true,
            ..FilePolicy::default()
        };
        let files = policy.resolve(&place(&f, true)).unwrap();
        assert_eq!(files.hidden.len(), 1);
        assert_eq!(files.hidden[0].path, f.root.join("a"));
    }

    #[test]
    fn without_the_view_what_it_alone_can_enforce_fails_closed() {
        let f = fixture();
        std::fs::create_dir_all(f.home.join(".ssh")).unwrap();
        let err = FilePolicy::default()
            .resolve(&place(&f, false))
            .unwrap_err();
        assert!(
            matches!(&err, OsSandboxError::NeedsMountView { paths, .. } if paths == &[f.home.join(".ssh")]),
            "{err}"
        );
        let deny_write = FilePolicy {
            deny_write: vec!["build".into()],
            secrets_visible: true,
            ..FilePolicy::default()
        };
        assert!(matches!(
            deny_write.resolve(&place(&f, false)),
            Err(OsSandboxError::NeedsMountView { .. })
        ));
        // Nothing to hide, nothing to keep: the view is not needed.
        let fine = FilePolicy {
            secrets_visible: true,
            allow_write: vec!["~/.npm".into()],
            ..FilePolicy::default()
        };
        assert!(fine.resolve(&place(&f, false)).is_ok());
    }

    #[test]
    fn allow_write_loses_to_hidden_protected_and_deny_write() {
        let f = fixture();
        for dir in [".npm", ".cache/x", ".aws", "proj/.git"] {
            std::fs::create_dir_all(f.home.join(dir)).unwrap();
        }
        std::fs::write(f.home.join(".bashrc"), "").unwrap();
        let policy = FilePolicy {
            allow_write: vec![
                "~/.npm".into(),
                "~/.cache/x".into(),
                "~/.aws".into(),
                ".git".into(),
                "~/absent".into(),
                "~".into(),
            ],
            deny_write: vec!["~/.cache".into(), "~/absent-file".into()],
            ..FilePolicy::default()
        };
        let files = policy.resolve(&place(&f, true)).unwrap();
        assert_eq!(files.allow_write, vec![f.home.join(".npm"), f.home.clone()]);
        assert!(files.deny_write.contains(&f.home.join(".cache")));
        assert!(files.deny_write.contains(&f.home.join("absent-file")));
        assert!(
            files.deny_write.contains(&f.home.join(".bashrc")),
            "a protected name at the top of a writable dir: {:?}",
            files.deny_write
        );
    }

    #[test]
    fn tilde_needs_a_home_and_another_users_is_refused() {
        let f = fixture();
        let mut at = place(&f, true);
        at.home = None;
        let policy = FilePolicy {
            deny_read: vec!["~/.x".into()],
            ..FilePolicy::default()
        };
        assert!(
            policy
                .resolve(&at)
                .unwrap_err()
                .to_string()
                .contains("home")
        );
        let policy = FilePolicy {
            deny_read: vec!["~bob/.ssh".into()],
            ..FilePolicy::default()
        };
        assert!(
            policy
                .resolve(&place(&f, true))
                .unwrap_err()
                .to_string()
                .contains("~name")
        );
    }
}
