//! Protected paths: the files that govern the agent, which no mode may let it change.
//!
//! An edit of one of these asks in every mode, `acceptEdits` and `bypassPermissions`
//! included, unless an allow rule that names it explicitly covers the call:
//! - the settings files in force;
//! - anything under a `.mux/`, `.claude/` or `.git/` folder (git's hooks and config run
//!   code);
//! - shell startup files (`.bashrc`, `.profile`, `.zshrc`, …) and `.envrc`, which run code the
//!   next time a shell starts.

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

/// Folders whose whole content governs the agent or runs code.
const FOLDERS: [&str; 3] = [".git", ".mux", ".claude"];

/// Files that run code when a shell (or direnv) starts.
const STARTUP_FILES: [&str; 13] = [
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".kshrc",
    ".envrc",
    "config.fish",
];

/// Why a path is protected: the name an allow rule must mention to open it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Protected {
    /// The path that is protected, as matched.
    pub(crate) path: PathBuf,
    /// The folder, file name or settings file name that makes the path protected.
    pub(crate) name: String,
    /// What it is, for the reason a person reads.
    pub(crate) what: &'static str,
}

impl Protected {
    /// Whether an allow rule names what is protected explicitly (`Edit(./.git/hooks/**)`
    /// does, `Edit(./**)` does not).
    pub(crate) fn named_by(&self, rule: &crate::Rule) -> bool {
        rule.specifier().is_some_and(|spec| {
            spec.to_ascii_lowercase()
                .contains(&self.name.to_ascii_lowercase())
        })
    }
}

/// Whether `path` (absolute) is protected, given the settings files in force.
pub(crate) fn protected<'a>(
    path: &Path,
    settings_files: impl IntoIterator<Item = &'a Path>,
) -> Option<Protected> {
    for component in path.components() {
        if let Component::Normal(name) = component
            && let Some(folder) = FOLDERS.iter().find(|f| eq_ignore_case(name, f))
        {
            return Some(Protected {
                path: path.to_path_buf(),
                name: (*folder).to_owned(),
                what: "a folder that governs the agent or runs code",
            });
        }
    }
    let file_name = path.file_name()?;
    if let Some(startup) = STARTUP_FILES.iter().find(|f| eq_ignore_case(file_name, f)) {
        return Some(Protected {
            path: path.to_path_buf(),
            name: (*startup).to_owned(),
            what: "a file that runs code when a shell starts",
        });
    }
    settings_files
        .into_iter()
        .find(|file| same_file(file, path))
        .map(|_| Protected {
            path: path.to_path_buf(),
            name: file_name.to_string_lossy().into_owned(),
            what: "a permission settings file in force",
        })
}

fn eq_ignore_case(name: &OsStr, wanted: &str) -> bool {
    name.to_str()
        .is_some_and(|n| n.eq_ignore_ascii_case(wanted))
}

fn same_file(settings: &Path, path: &Path) -> bool {
    let settings_real = crate::path::resolve(settings).ok();
    settings == path || settings_real.as_deref() == Some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_startup_files_and_settings() {
        let none: [&Path; 0] = [];
        assert!(protected(Path::new("/p/.git/hooks/pre-commit"), none).is_some());
        assert!(protected(Path::new("/p/sub/.GIT/config"), none).is_some());
        assert!(protected(Path::new("/home/u/.bashrc"), none).is_some());
        assert!(protected(Path::new("/p/src/main.rs"), none).is_none());
        let settings = Path::new("/p/conf/perms.json");
        let found = protected(settings, [settings]);
        assert_eq!(found.map(|p| p.name), Some("perms.json".to_owned()));
    }
}
