//! Running cargo from the workspace root.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::crate_env::is_set_for_a_crate;

/// The workspace root (the parent of this crate).
pub(crate) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// A cargo invocation.
pub(crate) struct Cmd {
    command: Command,
    quiet: bool,
}

impl Cmd {
    /// `cargo ARGS…`, run from the workspace root.
    pub(crate) fn cargo<I, S>(args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut command = Command::new(cargo);
        command.args(args).current_dir(workspace_root());
        for (key, _) in std::env::vars_os() {
            if key.to_str().is_some_and(is_set_for_a_crate) {
                command.env_remove(&key);
            }
        }
        // Each check builds once: incremental state would only cost disk (gigabytes in CI).
        if std::env::var_os("CARGO_INCREMENTAL").is_none() {
            command.env("CARGO_INCREMENTAL", "0");
        }
        Self {
            command,
            quiet: false,
        }
    }

    /// Adds an argument.
    pub(crate) fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.command.arg(arg);
        self
    }

    /// Adds arguments.
    pub(crate) fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.command.args(args);
        self
    }

    /// Sets an environment variable.
    pub(crate) fn env(mut self, key: &str, value: &str) -> Self {
        self.command.env(key, value);
        self
    }

    /// Discards the command's output.
    pub(crate) fn quiet(mut self) -> Self {
        self.quiet = true;
        self
    }

    fn describe(&self) -> String {
        let args: Vec<_> = self
            .command
            .get_args()
            .map(|a| a.to_string_lossy())
            .collect();
        format!("cargo {}", args.join(" "))
    }

    /// Runs the command; a failure to start or a non-zero exit is an error naming it.
    pub(crate) fn run(mut self) -> Result<(), String> {
        let shown = self.describe();
        if self.quiet {
            self.command.stdout(Stdio::null()).stderr(Stdio::null());
        } else {
            eprintln!("$ {shown}");
        }
        let status = self
            .command
            .status()
            .map_err(|err| format!("`{shown}` did not start: {err}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("`{shown}` exited with {status}"))
        }
    }

    /// Runs the command and returns its standard output.
    pub(crate) fn output(mut self) -> Result<String, String> {
        let shown = self.describe();
        let out = self
            .command
            .stderr(Stdio::inherit())
            .output()
            .map_err(|err| format!("`{shown}` did not start: {err}"))?;
        if !out.status.success() {
            return Err(format!("`{shown}` exited with {}", out.status));
        }
        String::from_utf8(out.stdout).map_err(|err| format!("`{shown}` printed non-UTF-8: {err}"))
    }
}

#[cfg(test)]
mod tests {
    use crate::crate_env::is_set_for_a_crate;

    #[test]
    fn only_the_variables_cargo_sets_for_a_crate_are_dropped() {
        for key in [
            "CARGO_MANIFEST_DIR",
            "CARGO_MANIFEST_PATH",
            "CARGO_PKG_NAME",
            "CARGO_BIN_EXE_xtask",
            "CARGO_CRATE_NAME",
            "CARGO_PRIMARY_PACKAGE",
        ] {
            assert!(is_set_for_a_crate(key), "{key}");
        }
        for key in [
            "CARGO",
            "CARGO_HOME",
            "CARGO_TARGET_DIR",
            "CARGO_INCREMENTAL",
            "CARGO_BUILD_JOBS",
            "CARGO_PROFILE_DEV_DEBUG",
        ] {
            assert!(!is_set_for_a_crate(key), "{key}");
        }
    }
}
