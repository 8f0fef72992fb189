//! Path specifiers (gitignore-style globs anchored at the project root, the home directory or
//! the file-system root) and resolving the paths a call touches.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};

/// Where relative paths and `./` and `~/` patterns are anchored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathContext {
    root: PathBuf,
    root_real: PathBuf,
    home: Option<PathBuf>,
    home_real: Option<PathBuf>,
}

impl PathContext {
    /// A context for the project at `root` (made absolute against the current directory) and
    /// the home directory from `$HOME`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        Self::with_home(root, home)
    }

    /// A context with an explicit home directory (`None`: `~` patterns match nothing).
    pub fn with_home(root: impl Into<PathBuf>, home: Option<PathBuf>) -> Self {
        let root = absolute(root.into());
        let root_real = resolve(&root).unwrap_or_else(|_| root.clone());
        let home = home.map(absolute);
        let home_real = home
            .as_ref()
            .map(|h| resolve(h).unwrap_or_else(|_| h.clone()));
        Self {
            root,
            root_real,
            home,
            home_real,
        }
    }

    /// The project root, as given.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The project root with symlinks resolved.
    pub fn root_resolved(&self) -> &Path {
        &self.root_real
    }

    /// The home directory, if known.
    pub fn home(&self) -> Option<&Path> {
        self.home.as_deref()
    }

    /// The absolute, lexically normalised form of a path a call names: `~/` expands to the
    /// home directory and relative paths join the root.
    pub fn lexical(&self, path: &Path) -> PathBuf {
        let expanded = match (path.strip_prefix("~"), &self.home) {
            (Ok(rest), Some(home)) => home.join(rest),
            _ => self.root.join(path),
        };
        normalize(&expanded)
    }
}

fn absolute(path: PathBuf) -> PathBuf {
    if path.is_absolute() {
        normalize(&path)
    } else {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        normalize(&cwd.join(path))
    }
}

/// Removes `.` and resolves `..` lexically.
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Resolves every symlink along an absolute path, as the kernel would, also when the last
/// components do not exist yet. `..` applies after the symlink before it is resolved.
pub fn resolve(path: &Path) -> io::Result<PathBuf> {
    const MAX_HOPS: usize = 40;
    let mut pending: VecDeque<OsString> = VecDeque::new();
    let mut resolved = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::RootDir | Component::Prefix(_) => {}
            other => pending.push_back(other.as_os_str().to_owned()),
        }
    }
    let mut hops = 0;
    while let Some(part) = pending.pop_front() {
        if part == "." {
            continue;
        }
        if part == ".." {
            resolved.pop();
            continue;
        }
        let next = resolved.join(&part);
        match std::fs::symlink_metadata(&next) {
            Ok(meta) if meta.file_type().is_symlink() => {
                hops += 1;
                if hops > MAX_HOPS {
                    return Err(io::Error::other(format!(
                        "too many symlinks resolving {}",
                        path.display()
                    )));
                }
                let target = std::fs::read_link(&next)?;
                if target.is_absolute() {
                    resolved = PathBuf::from("/");
                }
                for component in target.components().rev() {
                    match component {
                        Component::RootDir | Component::Prefix(_) => {}
                        other => pending.push_front(other.as_os_str().to_owned()),
                    }
                }
            }
            Ok(_) => resolved = next,
            Err(err) if err.kind() == io::ErrorKind::NotFound => resolved = next,
            Err(err) => return Err(err),
        }
    }
    Ok(resolved)
}

/// What a path specifier is anchored at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Anchor {
    /// `/abs/**` or `//abs/**`.
    Absolute,
    /// `./src/**` or `src/*.rs`.
    Root,
    /// `~/notes/*`.
    Home,
    /// `*.env`: a name at any depth under the root.
    Anywhere,
}

/// A compiled path specifier. A pattern also matches everything beneath what it names, as a
/// gitignore pattern naming a directory does.
#[derive(Clone, Debug)]
pub struct PathPattern {
    anchor: Anchor,
    exact_case: GlobSet,
    any_case: GlobSet,
}

/// Why a path specifier cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PathPatternError {
    /// Nothing to match.
    #[error("the path pattern is empty")]
    Empty,
    /// `..` would escape the anchor.
    #[error("the path pattern contains `..`; write an absolute pattern instead")]
    ParentDir,
    /// The glob does not compile.
    #[error("invalid glob: {0}")]
    Glob(String),
}

impl PathPattern {
    /// Compiles a specifier.
    pub fn parse(specifier: &str) -> Result<Self, PathPatternError> {
        let spec = specifier.trim();
        if spec.is_empty() {
            return Err(PathPatternError::Empty);
        }
        if spec.split('/').any(|part| part == "..") {
            return Err(PathPatternError::ParentDir);
        }
        let (anchor, body) = if spec.starts_with('/') {
            (
                Anchor::Absolute,
                format!("/{}", spec.trim_start_matches('/')),
            )
        } else if spec == "~" {
            (Anchor::Home, String::new())
        } else if let Some(rest) = spec.strip_prefix("~/") {
            (Anchor::Home, rest.to_owned())
        } else if let Some(rest) = spec.strip_prefix("./") {
            (Anchor::Root, rest.to_owned())
        } else if spec.trim_end_matches('/').contains('/') {
            (Anchor::Root, spec.to_owned())
        } else {
            (Anchor::Anywhere, format!("**/{spec}"))
        };
        let body = body.trim_end_matches('/');
        let body = if body.is_empty() && anchor != Anchor::Absolute {
            "**"
        } else if body.is_empty() {
            "/"
        } else {
            body
        };
        let (mut exact, mut any) = variants(body);
        // An absolute pattern through a symlink (`/var/run/…` on a system where it points to
        // `/run`) also matches the resolved location, so a deny rule cannot be sidestepped by
        // naming the real path.
        if anchor == Anchor::Absolute
            && let Some(real_body) = resolved_body(body)
        {
            let (more_exact, more_any) = variants(&real_body);
            exact.extend(more_exact);
            any.extend(more_any);
        }
        Ok(Self {
            anchor,
            exact_case: glob_set(&exact, false)?,
            any_case: glob_set(&any, true)?,
        })
    }

    /// Whether `path` (absolute) matches, anchored at `root` and `home`. Deny and ask rules
    /// match case-insensitively, so a case-insensitive file system cannot dodge them.
    pub(crate) fn matches(
        &self,
        path: &Path,
        root: &Path,
        home: Option<&Path>,
        any_case: bool,
    ) -> bool {
        let set = if any_case {
            &self.any_case
        } else {
            &self.exact_case
        };
        let candidate = match self.anchor {
            Anchor::Absolute => path,
            Anchor::Root | Anchor::Anywhere => match path.strip_prefix(root) {
                Ok(rest) => rest,
                Err(_) => return false,
            },
            Anchor::Home => match home.and_then(|h| path.strip_prefix(h).ok()) {
                Some(rest) => rest,
                None => return false,
            },
        };
        if candidate.as_os_str().is_empty() {
            return set.is_match(".");
        }
        set.is_match(candidate)
    }

    /// Matches a path against both the context's given and resolved anchors.
    pub(crate) fn matches_in(
        &self,
        path: &Path,
        context: &PathContext,
        resolved: bool,
        any_case: bool,
    ) -> bool {
        if resolved {
            self.matches(
                path,
                &context.root_real,
                context.home_real.as_deref(),
                any_case,
            )
        } else {
            self.matches(path, &context.root, context.home.as_deref(), any_case)
        }
    }
}

/// The globs an allow rule (first) and a deny or ask rule (second) compile to: what the
/// pattern names, everything beneath it, and for `dir/**` the directory too. Allow rules reach
/// beneath only a literal name (`./src`), not a glob (`notes/*`); deny and ask rules always do,
/// as gitignore would.
fn variants(body: &str) -> (Vec<String>, Vec<String>) {
    let beneath = if body.ends_with('/') {
        format!("{body}**")
    } else {
        format!("{body}/**")
    };
    let mut exact = vec![body.to_owned()];
    let mut any = vec![body.to_owned(), beneath.clone()];
    if let Some(dir) = body.strip_suffix("/**").filter(|d| !d.is_empty()) {
        exact.push(dir.to_owned());
        any.push(dir.to_owned());
    }
    let last = body.rsplit('/').next().unwrap_or(body);
    if !last.contains(['*', '?', '[', '{']) {
        exact.push(beneath);
    }
    (exact, any)
}

/// The pattern with its literal leading directories resolved through symlinks, when that
/// changes anything.
fn resolved_body(body: &str) -> Option<String> {
    let parts: Vec<&str> = body.split('/').collect();
    let literal = parts
        .iter()
        .position(|part| part.contains(['*', '?', '[', '{', '\\']))
        .unwrap_or(parts.len());
    if literal <= 1 {
        return None;
    }
    let prefix = parts[..literal].join("/");
    let real = resolve(Path::new(&prefix)).ok()?;
    let real = real.to_str()?;
    if real == prefix {
        return None;
    }
    let mut out = globset::escape(real);
    for part in &parts[literal..] {
        out.push('/');
        out.push_str(part);
    }
    Some(out)
}

fn glob_set(patterns: &[String], any_case: bool) -> Result<GlobSet, PathPatternError> {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        builder.add(glob(pattern, any_case)?);
    }
    builder
        .build()
        .map_err(|err| PathPatternError::Glob(err.to_string()))
}

fn glob(pattern: &str, any_case: bool) -> Result<Glob, PathPatternError> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .case_insensitive(any_case)
        .build()
        .map_err(|err| PathPatternError::Glob(err.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> PathContext {
        PathContext::with_home("/nonexistent/project", Some("/nonexistent/home".into()))
    }

    fn m(pattern: &str, path: &str) -> bool {
        let pattern = PathPattern::parse(pattern);
        let context = ctx();
        pattern
            .is_ok_and(|p| p.matches_in(&context.lexical(Path::new(path)), &context, false, false))
    }

    #[test]
    fn anchors() {
        assert!(m("./src/**", "src/main.rs"));
        assert!(m("./src/**", "/nonexistent/project/src/a/b.rs"));
        assert!(!m("./src/**", "other/src/main.rs"));
        assert!(m("src/*.rs", "src/main.rs"));
        assert!(!m("src/*.rs", "src/a/main.rs"));
        assert!(m(".env", "deep/down/.env"));
        assert!(m("*.pem", "keys/a.pem"));
        assert!(m("/etc/**", "/etc/passwd"));
        assert!(m("//etc/**", "/etc/passwd"));
        assert!(m("~/notes/*", "~/notes/a.md"));
        assert!(!m("~/notes/*", "notes/a.md"));
        assert!(m("./secrets", "secrets/inner/file"));
    }

    #[test]
    fn dot_dot_is_resolved_before_matching() {
        assert!(!m("./src/**", "src/../etc/passwd"));
        assert!(m("/etc/**", "../../../etc/passwd"));
    }

    #[test]
    fn bad_patterns() {
        assert_eq!(PathPattern::parse("").err(), Some(PathPatternError::Empty));
        assert_eq!(
            PathPattern::parse("../x").err(),
            Some(PathPatternError::ParentDir)
        );
        assert!(matches!(
            PathPattern::parse("./a[").err(),
            Some(PathPatternError::Glob(_))
        ));
    }
}
