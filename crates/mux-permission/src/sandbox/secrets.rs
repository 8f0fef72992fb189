//! The secret locations mux hides from sandboxed commands unless the settings allow them.

/// Where credentials live by default, relative to the home directory: hidden from every
/// sandboxed command unless `sandbox.filesystem.allowDefaultSecrets` is `true`. Claude
/// Code's sandbox reads them; mux does not.
pub const DEFAULT_SECRETS: [&str; 16] = [
    "~/.ssh",
    "~/.aws",
    "~/.config/gcloud",
    "~/.azure",
    "~/.kube",
    "~/.docker/config.json",
    "~/.netrc",
    "~/.gnupg",
    "~/.password-store",
    "~/.mozilla",
    "~/.config/google-chrome",
    "~/.config/chromium",
    "~/.config/BraveSoftware",
    "~/.config/microsoft-edge",
    "~/Library/Application Support/Google/Chrome",
    "~/Library/Application Support/Firefox",
];
