//! Protected paths: the one list of names that govern the agent or run code, read by every
//! wall that keeps the agent from planting something for later.
//!
//! - The permission layer (mux-permission) makes an edit of a path with one of these names as
//!   any of its components ask in every mode, `acceptEdits` and `bypassPermissions` included,
//!   unless an allow rule names it: `sub/.vscode/settings.json` as much as `.mcp.json`.
//! - The OS wall around `bash` keeps each of them read-only at the top of the root (see
//!   [`crate::builtin::SandboxPolicy`]), and a name that does not exist yet cannot be created
//!   (for a name read only from the home directory, [`ProtectedName::home`], when the root is
//!   the home directory).
//!
//! The list is Claude Code's protected paths (directories `.git`, `.vscode`, `.idea`,
//! `.husky`, `.claude`; files `.gitconfig`, `.gitmodules`, the shell startup files,
//! `.ripgreprc`, `.mcp.json`, `.claude.json`) with mux's own settings (`.mux`) and direnv's
//! `.envrc`. Names compare ignoring ASCII case (case-insensitive file systems open `.GIT` as
//! `.git`).

use std::ffi::OsStr;
use std::path::{Component, Path};

/// One protected name, and why it is protected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProtectedName {
    /// The file or folder name, as it appears in a path.
    pub name: &'static str,
    /// What it is, for the reason a person reads.
    pub what: &'static str,
    /// Whether it is read only from the home directory (`.bashrc`, `.gitconfig`): the OS wall
    /// then holds an absent one only when the root is the home directory (an existing one it
    /// always keeps read-only). The permission layer asks for every name anywhere.
    pub home: bool,
}

const fn entry(name: &'static str, what: &'static str) -> ProtectedName {
    ProtectedName {
        name,
        what,
        home: false,
    }
}

const fn home(name: &'static str, what: &'static str) -> ProtectedName {
    ProtectedName {
        name,
        what,
        home: true,
    }
}

const SHELL: &str = "a file that runs code when a shell starts";

/// Every protected name, folders first.
pub const PROTECTED: &[ProtectedName] = &[
    entry(".git", "git's repository, whose hooks and config run code"),
    entry(".mux", "mux's settings, which govern the agent"),
    entry(".claude", "Claude Code's settings, which govern the agent"),
    entry(
        ".vscode",
        "VS Code's workspace settings and tasks, which run code",
    ),
    entry(
        ".idea",
        "a JetBrains project's settings and run configurations",
    ),
    entry(".husky", "husky's git hooks, which run code"),
    entry(".mcp.json", "the MCP servers file, which starts programs"),
    home(".claude.json", "Claude Code's user state and MCP servers"),
    home(
        ".gitconfig",
        "git's user configuration, which names programs",
    ),
    entry(
        ".gitmodules",
        "git's submodules file, which names repositories to fetch",
    ),
    home(".ripgreprc", "ripgrep's configuration"),
    entry(
        ".envrc",
        "direnv's script, which runs when a shell enters the folder",
    ),
    home(".bashrc", SHELL),
    home(".bash_profile", SHELL),
    home(".bash_login", SHELL),
    home(".bash_logout", SHELL),
    home(".profile", SHELL),
    home(".zshrc", SHELL),
    home(".zshenv", SHELL),
    home(".zprofile", SHELL),
    home(".zlogin", SHELL),
    home(".zlogout", SHELL),
    home(".kshrc", SHELL),
    home(".cshrc", SHELL),
    home(".tcshrc", SHELL),
    home("config.fish", SHELL),
];

/// The names of [`PROTECTED`], in its order.
pub const PROTECTED_NAMES: &[&str] = &names::<{ PROTECTED.len() }>();

const fn names<const N: usize>() -> [&'static str; N] {
    let mut out = [""; N];
    let mut i = 0;
    while i < N {
        out[i] = PROTECTED[i].name;
        i += 1;
    }
    out
}

/// The protected name `path` has as one of its components (a folder it is under, or its own
/// name), if any. `..` and `.` are not resolved: give a path that is already resolved, or
/// check it both before and after resolving.
///
/// ```
/// use std::path::Path;
/// use mux_tool::protected::protected_name;
///
/// assert_eq!(protected_name(Path::new("sub/.vscode/settings.json")).map(|p| p.name), Some(".vscode"));
/// assert_eq!(protected_name(Path::new("/p/.MCP.json")).map(|p| p.name), Some(".mcp.json"));
/// assert!(protected_name(Path::new("src/main.rs")).is_none());
/// ```
pub fn protected_name(path: &Path) -> Option<&'static ProtectedName> {
    path.components().find_map(|component| match component {
        Component::Normal(name) => protected(name),
        _ => None,
    })
}

/// The protected name `name` (one path component) is, if any.
pub fn protected(name: &OsStr) -> Option<&'static ProtectedName> {
    let name = name.to_str()?;
    PROTECTED
        .iter()
        .find(|entry| entry.name.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_codes_list_and_ours_are_all_there_once() {
        for name in [
            ".git",
            ".vscode",
            ".idea",
            ".husky",
            ".claude",
            ".mux",
            ".mcp.json",
            ".claude.json",
            ".envrc",
            ".gitconfig",
            ".gitmodules",
            ".ripgreprc",
            ".bashrc",
            ".bash_profile",
            ".profile",
            ".zshrc",
            ".zprofile",
        ] {
            assert_eq!(
                PROTECTED_NAMES.iter().filter(|n| **n == name).count(),
                1,
                "{name}"
            );
        }
        assert_eq!(PROTECTED_NAMES.len(), PROTECTED.len());
    }

    #[test]
    fn any_component_counts_in_any_case() {
        for (path, name) in [
            (".mcp.json", ".mcp.json"),
            ("a/b/.git/config", ".git"),
            ("sub/.GIT/hooks/pre-commit", ".git"),
            ("/home/u/.bashrc", ".bashrc"),
            ("x/.Vscode/tasks.json", ".vscode"),
            ("deep/er/.husky/pre-commit", ".husky"),
        ] {
            assert_eq!(
                protected_name(Path::new(path)).map(|p| p.name),
                Some(name),
                "{path}"
            );
        }
        for path in [
            "src/main.rs",
            ".github/workflows/ci.yml",
            "a/.gitignore",
            "x.git",
        ] {
            assert!(protected_name(Path::new(path)).is_none(), "{path}");
        }
    }
}
