//! Protected paths: the files that govern the agent or run code, which no mode may let it
//! change.
//!
//! An edit of one of these asks in every mode, `acceptEdits` and `bypassPermissions`
//! included, unless an allow rule that names it explicitly covers the call:
//! - the settings files in force;
//! - a path with a name of mux-tool's one list ([`mux_tool::protected`]: `.git`, `.vscode`,
//!   `.idea`, `.husky`, `.claude`, `.mux`, `.mcp.json`, `.gitconfig`, `.envrc`, the shell
//!   startup files, …) as any of its components, anywhere in the tree (`sub/.git/config` as
//!   much as `.git/config`). The OS wall around `bash` reads the same list.

use std::path::{Path, PathBuf};

use mux_tool::protected::protected_name;

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
    if let Some(found) = protected_name(path) {
        return Some(Protected {
            path: path.to_path_buf(),
            name: found.name.to_owned(),
            what: found.what,
        });
    }
    let file_name = path.file_name()?;
    settings_files
        .into_iter()
        .find(|file| same_file(file, path))
        .map(|_| Protected {
            path: path.to_path_buf(),
            name: file_name.to_string_lossy().into_owned(),
            what: "a permission settings file in force",
        })
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
        assert!(protected(Path::new("/p/.mcp.json"), none).is_some());
        assert!(protected(Path::new("/p/a/b/.vscode/settings.json"), none).is_some());
        assert!(protected(Path::new("/p/src/main.rs"), none).is_none());
        let settings = Path::new("/p/conf/perms.json");
        let found = protected(settings, [settings]);
        assert_eq!(found.map(|p| p.name), Some("perms.json".to_owned()));
    }
}
