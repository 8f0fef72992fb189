//! Secret locations: the one list of places in a home directory that hold credentials, keys
//! and browser profiles, which the OS wall around `bash` hides from every sandboxed process
//! unless the settings allow them (see [`crate::builtin::FilePolicy`]). The permission layer
//! shows the same list.
//!
//! Each location is relative to the home directory. A location that does not exist has
//! nothing to hide; one created while a command runs is not hidden from that command (the
//! wall is set up when it starts), only from the next.

use std::path::{Path, PathBuf};

/// One secret location, and what it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SecretLocation {
    /// The path relative to the home directory (`.ssh`, `.config/gcloud`).
    pub path: &'static str,
    /// What it holds, for the reason a person reads.
    pub what: &'static str,
}

const fn at(path: &'static str, what: &'static str) -> SecretLocation {
    SecretLocation { path, what }
}

const BROWSER: &str = "a browser profile (cookies, saved passwords, sessions)";

/// Every secret location hidden by default, relative to the home directory.
pub const SECRET_LOCATIONS: &[SecretLocation] = &[
    at(".ssh", "SSH keys"),
    at(".gnupg", "GnuPG keys"),
    at(".password-store", "pass's password store"),
    at(".aws", "AWS credentials"),
    at(".config/gcloud", "Google Cloud credentials"),
    at(".azure", "Azure credentials"),
    at(".kube", "Kubernetes credentials"),
    at(".docker/config.json", "Docker registry credentials"),
    at(".netrc", "logins for FTP, HTTP and git"),
    at(".git-credentials", "git's stored credentials"),
    at(".config/gh", "GitHub CLI tokens"),
    at(".pypirc", "PyPI upload credentials"),
    at(".cargo/credentials", "crates.io tokens"),
    at(".cargo/credentials.toml", "crates.io tokens"),
    at(".vault-token", "a HashiCorp Vault token"),
    at(".local/share/keyrings", "the GNOME keyring"),
    at(".mozilla", BROWSER),
    at(".config/google-chrome", BROWSER),
    at(".config/chromium", BROWSER),
    at(".config/BraveSoftware", BROWSER),
    at(".config/microsoft-edge", BROWSER),
    at(".config/vivaldi", BROWSER),
    at(".config/opera", BROWSER),
    at("snap/firefox", BROWSER),
    at("snap/chromium", BROWSER),
];

/// The secret locations under `home`, in the order of [`SECRET_LOCATIONS`].
///
/// ```
/// use std::path::Path;
/// use mux_tool::secrets::secret_paths;
///
/// let paths: Vec<_> = secret_paths(Path::new("/home/u")).collect();
/// assert!(paths.contains(&Path::new("/home/u/.aws").to_path_buf()));
/// ```
pub fn secret_paths(home: &Path) -> impl Iterator<Item = PathBuf> + '_ {
    SECRET_LOCATIONS
        .iter()
        .map(move |location| home.join(location.path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_locations_the_issue_names_are_there_once_and_relative() {
        for path in [
            ".ssh",
            ".aws",
            ".config/gcloud",
            ".azure",
            ".kube",
            ".docker/config.json",
            ".netrc",
            ".gnupg",
            ".password-store",
            ".mozilla",
            ".config/google-chrome",
            ".config/chromium",
            ".config/BraveSoftware",
        ] {
            assert_eq!(
                SECRET_LOCATIONS.iter().filter(|l| l.path == path).count(),
                1,
                "{path}"
            );
        }
        for location in SECRET_LOCATIONS {
            assert!(Path::new(location.path).is_relative(), "{}", location.path);
            assert!(!location.path.contains(".."), "{}", location.path);
        }
    }
}
