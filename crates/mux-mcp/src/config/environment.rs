//! A stdio server's environment, as the official MCP SDKs build it (TypeScript's
//! `getDefaultEnvironment`, Python's `get_default_environment`): a small default set taken
//! from the agent's environment, plus what the server's config names. The agent's API keys
//! and tokens never reach a server unless its config names them.

use std::ffi::OsString;

use super::spec::StdioSpec;

/// The variables a stdio server gets from the agent's environment, as the official SDKs
/// choose them on this platform. A value that starts with `()` (a shell function, the form
/// Shellshock used) is left out.
#[cfg(not(windows))]
pub const DEFAULT_INHERITED_ENV: &[&str] = &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// The variables a stdio server gets from the agent's environment, as the official SDKs
/// choose them on this platform. A value that starts with `()` (a shell function, the form
/// Shellshock used) is left out.
#[cfg(windows)]
pub const DEFAULT_INHERITED_ENV: &[&str] = &[
    "APPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATH",
    "PROCESSOR_ARCHITECTURE",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "USERNAME",
    "USERPROFILE",
    "PROGRAMFILES",
];

/// The environment of `spec`'s server, given the agent's `agent` environment: the default
/// set found there (see [`DEFAULT_INHERITED_ENV`]), then `spec.env`, which wins.
pub(crate) fn server_environment(
    spec: &StdioSpec,
    agent: impl IntoIterator<Item = (OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = agent
        .into_iter()
        .filter(|(name, value)| {
            name.to_str().is_some_and(is_default) && !value.as_encoded_bytes().starts_with(b"()")
        })
        .collect();
    env.retain(|(name, _)| {
        name.to_str()
            .is_none_or(|name| !spec.env.keys().any(|key| key_matches(key, name)))
    });
    env.extend(
        spec.env
            .iter()
            .map(|(key, value)| (key.into(), value.expose().into())),
    );
    env
}

/// Whether `name` is one of the default set (case-insensitively on Windows, as its
/// environment is).
fn is_default(name: &str) -> bool {
    DEFAULT_INHERITED_ENV
        .iter()
        .any(|default| key_matches(default, name))
}

fn key_matches(a: &str, b: &str) -> bool {
    if cfg!(windows) {
        a.eq_ignore_ascii_case(b)
    } else {
        a == b
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ServerSpec;
    use crate::config::TransportSpec;

    fn stdio(spec: ServerSpec) -> StdioSpec {
        match spec.transport {
            TransportSpec::Stdio(stdio) => stdio,
            TransportSpec::Http(_) => unreachable!("a stdio spec"),
        }
    }

    fn agent() -> Vec<(OsString, OsString)> {
        [
            ("PATH", "/usr/bin"),
            ("HOME", "/home/a"),
            ("SHELL", "() { :; }; echo pwned"),
            ("ANTHROPIC_API_KEY", "sk-ant"),
            ("GITHUB_TOKEN", "ghp"),
            ("Path", "mixed-case"),
            ("USER", "a"),
        ]
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect()
    }

    fn names(env: &[(OsString, OsString)]) -> Vec<String> {
        let mut names: Vec<String> = env
            .iter()
            .map(|(name, value)| format!("{}={}", name.to_string_lossy(), value.to_string_lossy()))
            .collect();
        names.sort();
        names
    }

    #[cfg(not(windows))]
    #[test]
    fn only_the_default_set_and_the_config_pass() {
        let spec = stdio(
            ServerSpec::stdio("s", "x", Vec::<String>::new())
                .with_env("API_KEY", "for-this-server")
                .with_env("HOME", "/srv/home"),
        );
        let env = server_environment(&spec, agent());
        assert_eq!(
            names(&env),
            [
                "API_KEY=for-this-server",
                "HOME=/srv/home",
                "PATH=/usr/bin",
                "USER=a"
            ]
        );
    }
}
