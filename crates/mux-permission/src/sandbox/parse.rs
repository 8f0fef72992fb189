//! Reading the `sandbox` object: every key checked, an unknown one named (with the closest
//! known key when one is close), every entry parsed.

use serde_json::{Map, Value};

use super::{FilesystemSettings, NetworkSettings, SandboxSettings, WallDomain};
use crate::PathPattern;

const TOP: [&str; 6] = [
    "enabled",
    "autoAllowBashIfSandboxed",
    "excludedCommands",
    "allowUnsandboxedCommands",
    "network",
    "filesystem",
];
const NETWORK: [&str; 7] = [
    "allowedDomains",
    "deniedDomains",
    "allowUnixSockets",
    "allowLocalBinding",
    "httpProxyPort",
    "socksProxyPort",
    "allowWebFetchDomains",
];
const FILESYSTEM: [&str; 4] = ["allowWrite", "denyWrite", "denyRead", "allowDefaultSecrets"];
/// Claude Code's other `sandbox` keys: mux has no wall for them, and says so.
const CLAUDE_ONLY: [&str; 17] = [
    "sandbox.ignoreViolations",
    "sandbox.enableWeakerNestedSandbox",
    "sandbox.enableWeakerNetworkIsolation",
    "sandbox.failIfUnavailable",
    "sandbox.enabledPlatforms",
    "sandbox.credentials",
    "sandbox.ripgrep",
    "sandbox.bwrapPath",
    "sandbox.socatPath",
    "sandbox.allowAppleEvents",
    "sandbox.allowNestedUserNamespaces",
    "sandbox.network.allowAllUnixSockets",
    "sandbox.network.allowManagedDomainsOnly",
    "sandbox.network.strictAllowlist",
    "sandbox.filesystem.allowRead",
    "sandbox.filesystem.disabled",
    "sandbox.filesystem.allowManagedReadPathsOnly",
];

/// A `sandbox` setting that cannot be used. Every variant names the key, as a dotted path
/// from `sandbox`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// A key mux does not read: a typo, or a Claude Code setting mux has no wall for.
    #[error(
        "unknown key `{key}`{}",
        suggestion.as_ref().map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default()
    )]
    UnknownKey {
        /// The key, such as `sandbox.network.alowedDomains`.
        key: String,
        /// The closest known key, if one is close.
        suggestion: Option<String>,
    },
    /// A Claude Code setting mux has no wall for: left in, it would promise what mux does
    /// not do.
    #[error("`{key}` is a Claude Code sandbox setting mux does not read; remove it")]
    Unsupported {
        /// The key.
        key: String,
    },
    /// A value of the wrong type.
    #[error("`{key}` must be {expected}, not {found}")]
    Type {
        /// The key.
        key: String,
        /// What it must be.
        expected: &'static str,
        /// What it is, as JSON.
        found: String,
    },
    /// An entry of a list that does not parse.
    #[error("`{key}`: `{entry}` {problem}")]
    Entry {
        /// The list's key.
        key: String,
        /// The entry as written.
        entry: String,
        /// What is wrong with it.
        problem: String,
    },
}

/// Reads a `sandbox` object.
pub(crate) fn parse(value: &Value) -> Result<SandboxSettings, SandboxError> {
    let top = object(value, "sandbox", &TOP)?;
    let mut settings = SandboxSettings {
        enabled: boolean(top, "sandbox", "enabled")?,
        auto_allow_bash_if_sandboxed: boolean(top, "sandbox", "autoAllowBashIfSandboxed")?,
        excluded_commands: strings(top, "sandbox", "excludedCommands")?,
        allow_unsandboxed_commands: boolean(top, "sandbox", "allowUnsandboxedCommands")?,
        network: NetworkSettings::default(),
        filesystem: FilesystemSettings::default(),
    };
    if let Some(network) = top.get("network") {
        let network = object(network, "sandbox.network", &NETWORK)?;
        let at = "sandbox.network";
        settings.network = NetworkSettings {
            allowed_domains: strings(network, at, "allowedDomains")?,
            denied_domains: strings(network, at, "deniedDomains")?,
            allow_unix_sockets: strings(network, at, "allowUnixSockets")?,
            allow_local_binding: boolean(network, at, "allowLocalBinding")?,
            http_proxy_port: port(network, at, "httpProxyPort")?,
            socks_proxy_port: port(network, at, "socksProxyPort")?,
            allow_web_fetch_domains: boolean(network, at, "allowWebFetchDomains")?,
        };
    }
    if let Some(filesystem) = top.get("filesystem") {
        let filesystem = object(filesystem, "sandbox.filesystem", &FILESYSTEM)?;
        let at = "sandbox.filesystem";
        settings.filesystem = FilesystemSettings {
            allow_write: strings(filesystem, at, "allowWrite")?,
            deny_write: strings(filesystem, at, "denyWrite")?,
            deny_read: strings(filesystem, at, "denyRead")?,
            allow_default_secrets: boolean(filesystem, at, "allowDefaultSecrets")?,
        };
    }
    validate(&settings)?;
    Ok(settings)
}

impl SandboxSettings {
    /// Checks every entry as loading a settings file does: domains, paths and command
    /// patterns must parse. Settings built in code can be checked with this.
    pub fn validate(&self) -> Result<(), SandboxError> {
        validate(self)
    }
}

/// Checks every entry: domains, paths, sockets and command patterns.
fn validate(settings: &SandboxSettings) -> Result<(), SandboxError> {
    let entry = |key: &str, entry: &str, problem: String| SandboxError::Entry {
        key: key.to_owned(),
        entry: entry.to_owned(),
        problem,
    };
    for pattern in &settings.excluded_commands {
        super::excluded_pattern(pattern).map_err(|err| {
            entry(
                "sandbox.excludedCommands",
                pattern,
                format!("is not a command pattern: {err}"),
            )
        })?;
    }
    let network = &settings.network;
    for (key, list) in [
        ("sandbox.network.allowedDomains", &network.allowed_domains),
        ("sandbox.network.deniedDomains", &network.denied_domains),
    ] {
        for domain in list {
            WallDomain::parse(domain).map_err(|err| entry(key, domain, err.to_string()))?;
        }
    }
    for socket in &network.allow_unix_sockets {
        if !socket.starts_with('/') && !socket.starts_with("~/") {
            return Err(entry(
                "sandbox.network.allowUnixSockets",
                socket,
                "must be an absolute path or start with `~/`".into(),
            ));
        }
    }
    let filesystem = &settings.filesystem;
    for (key, list) in [
        ("sandbox.filesystem.allowWrite", &filesystem.allow_write),
        ("sandbox.filesystem.denyWrite", &filesystem.deny_write),
        ("sandbox.filesystem.denyRead", &filesystem.deny_read),
    ] {
        for path in list {
            PathPattern::parse(path)
                .map_err(|err| entry(key, path, format!("is not a path pattern: {err}")))?;
        }
    }
    Ok(())
}

fn object<'a>(
    value: &'a Value,
    key: &str,
    known: &[&str],
) -> Result<&'a Map<String, Value>, SandboxError> {
    let Some(object) = value.as_object() else {
        return Err(type_error(key, "an object", value));
    };
    if let Some(unknown) = object.keys().find(|k| !known.contains(&k.as_str())) {
        let full = format!("{key}.{unknown}");
        if CLAUDE_ONLY.contains(&full.as_str()) {
            return Err(SandboxError::Unsupported { key: full });
        }
        return Err(SandboxError::UnknownKey {
            key: format!("{key}.{unknown}"),
            suggestion: closest(unknown, known).map(|s| format!("{key}.{s}")),
        });
    }
    Ok(object)
}

fn boolean(object: &Map<String, Value>, at: &str, key: &str) -> Result<Option<bool>, SandboxError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(type_error(&format!("{at}.{key}"), "a boolean", other)),
    }
}

fn port(object: &Map<String, Value>, at: &str, key: &str) -> Result<Option<u16>, SandboxError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_u64()
            .and_then(|n| u16::try_from(n).ok())
            .filter(|n| *n != 0)
            .map(Some)
            .ok_or_else(|| {
                type_error(
                    &format!("{at}.{key}"),
                    "a port number from 1 to 65535",
                    value,
                )
            }),
    }
}

fn strings(object: &Map<String, Value>, at: &str, key: &str) -> Result<Vec<String>, SandboxError> {
    let full = || format!("{at}.{key}");
    match object.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(text) if !text.trim().is_empty() => Ok(text.trim().to_owned()),
                other => Err(type_error(&full(), "an array of non-empty strings", other)),
            })
            .collect(),
        Some(other) => Err(type_error(&full(), "an array of strings", other)),
    }
}

fn type_error(key: &str, expected: &'static str, found: &Value) -> SandboxError {
    let mut found = found.to_string();
    if found.len() > 80 {
        let cut = (0..=80)
            .rev()
            .find(|i| found.is_char_boundary(*i))
            .unwrap_or(0);
        found.truncate(cut);
        found.push('…');
    }
    SandboxError::Type {
        key: key.to_owned(),
        expected,
        found,
    }
}

/// The known key closest to `key`, when it is close enough to be a typo of it.
fn closest<'a>(key: &str, known: &[&'a str]) -> Option<&'a str> {
    let lower = key.to_ascii_lowercase();
    known
        .iter()
        .map(|k| (strsim::jaro_winkler(&lower, &k.to_ascii_lowercase()), *k))
        .filter(|(score, _)| *score > 0.85)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_key() {
        let settings = parse(&json!({
            "enabled": true,
            "autoAllowBashIfSandboxed": false,
            "excludedCommands": ["docker:*", "git push"],
            "allowUnsandboxedCommands": false,
            "network": {
                "allowedDomains": ["crates.io", "*.npmjs.org:443"],
                "deniedDomains": ["evil.example"],
                "allowUnixSockets": ["/run/docker.sock", "~/.gnupg/S.gpg-agent"],
                "allowLocalBinding": true,
                "httpProxyPort": 8080,
                "socksProxyPort": 1080,
                "allowWebFetchDomains": false
            },
            "filesystem": {
                "allowWrite": ["~/.npm", "//tmp/build"],
                "denyWrite": ["./dist"],
                "denyRead": ["~/.config/secret/**"],
                "allowDefaultSecrets": true
            }
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(settings.enabled, Some(true));
        assert_eq!(settings.auto_allow_bash_if_sandboxed, Some(false));
        assert_eq!(settings.excluded_commands, ["docker:*", "git push"]);
        assert_eq!(settings.allow_unsandboxed_commands, Some(false));
        let n = &settings.network;
        assert_eq!(n.allowed_domains, ["crates.io", "*.npmjs.org:443"]);
        assert_eq!(n.denied_domains, ["evil.example"]);
        assert_eq!(
            n.allow_unix_sockets,
            ["/run/docker.sock", "~/.gnupg/S.gpg-agent"]
        );
        assert_eq!(n.allow_local_binding, Some(true));
        assert_eq!(n.http_proxy_port, Some(8080));
        assert_eq!(n.socks_proxy_port, Some(1080));
        assert_eq!(n.allow_web_fetch_domains, Some(false));
        let f = &settings.filesystem;
        assert_eq!(f.allow_write, ["~/.npm", "//tmp/build"]);
        assert_eq!(f.deny_write, ["./dist"]);
        assert_eq!(f.deny_read, ["~/.config/secret/**"]);
        assert_eq!(f.allow_default_secrets, Some(true));
        assert!(!settings.auto_allows_bash() && !settings.allows_unsandboxed());
        assert!(!settings.shares_web_fetch_domains() && !settings.hides_default_secrets());
    }

    #[test]
    fn defaults() {
        let settings = parse(&json!({})).unwrap_or_else(|e| panic!("{e}"));
        assert!(settings.is_empty());
        assert!(settings.auto_allows_bash() && settings.allows_unsandboxed());
        assert!(settings.shares_web_fetch_domains() && settings.hides_default_secrets());
    }

    #[test]
    fn unknown_keys_are_named_with_a_suggestion() {
        let err = |v: Value| parse(&v).err().map(|e| e.to_string()).unwrap_or_default();
        let text = err(json!({"network": {"alowedDomains": []}}));
        assert!(
            text.contains("`sandbox.network.alowedDomains`")
                && text.contains("did you mean `sandbox.network.allowedDomains`"),
            "{text}"
        );
        let text = err(json!({"autoAllowBashIfSandbox": true}));
        assert!(
            text.contains("did you mean `sandbox.autoAllowBashIfSandboxed`"),
            "{text}"
        );
        let text = err(json!({"filesystem": {"denyread": []}}));
        assert!(
            text.contains("did you mean `sandbox.filesystem.denyRead`"),
            "{text}"
        );
        let text = err(json!({"ignoreViolations": {}}));
        assert!(
            text.contains("`sandbox.ignoreViolations` is a Claude Code sandbox setting"),
            "{text}"
        );
        let text = err(json!({"filesystem": {"allowRead": ["."]}}));
        assert!(
            text.contains("`sandbox.filesystem.allowRead` is a Claude Code"),
            "{text}"
        );
        let text = err(json!({"colour": "red"}));
        assert!(
            text.contains("`sandbox.colour`") && !text.contains("did you mean"),
            "{text}"
        );
    }

    #[test]
    fn wrong_types_and_entries_name_the_key() {
        let err = |v: Value| parse(&v).err().map(|e| e.to_string()).unwrap_or_default();
        for (value, key) in [
            (json!([]), "`sandbox`"),
            (json!({"enabled": "yes"}), "`sandbox.enabled`"),
            (
                json!({"excludedCommands": "git"}),
                "`sandbox.excludedCommands`",
            ),
            (
                json!({"excludedCommands": [""]}),
                "`sandbox.excludedCommands`",
            ),
            (
                json!({"excludedCommands": ["git 'push"]}),
                "`sandbox.excludedCommands`",
            ),
            (
                json!({"network": {"httpProxyPort": 0}}),
                "`sandbox.network.httpProxyPort`",
            ),
            (
                json!({"network": {"socksProxyPort": 70000}}),
                "`sandbox.network.socksProxyPort`",
            ),
            (
                json!({"network": {"allowedDomains": ["http://x.io/"]}}),
                "`sandbox.network.allowedDomains`",
            ),
            (
                json!({"network": {"deniedDomains": ["a:b"]}}),
                "`sandbox.network.deniedDomains`",
            ),
            (
                json!({"network": {"allowUnixSockets": ["rel/sock"]}}),
                "`sandbox.network.allowUnixSockets`",
            ),
            (
                json!({"filesystem": {"denyRead": ["../up"]}}),
                "`sandbox.filesystem.denyRead`",
            ),
            (
                json!({"filesystem": {"allowWrite": ["./a["]}}),
                "`sandbox.filesystem.allowWrite`",
            ),
            (
                json!({"filesystem": {"allowDefaultSecrets": 1}}),
                "`sandbox.filesystem.allowDefaultSecrets`",
            ),
            (json!({"network": true}), "`sandbox.network`"),
        ] {
            let text = err(value.clone());
            assert!(text.contains(key), "{value}: {text}");
        }
    }
}
