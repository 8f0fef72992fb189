//! The `sandbox` object of settings files: every key read, errors that name the key and the
//! file, and the scopes merged as permissions merge.

use std::path::Path;

use mux_permission::sandbox::SandboxError;
use mux_permission::{LoadError, PathContext, Permissions, Scope, ScopeRules};

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let file = dir.join(name);
    std::fs::write(&file, text).unwrap();
    file
}

fn load(dir: &Path, name: &str, text: &str) -> Result<ScopeRules, LoadError> {
    let file = write(dir, name, text);
    ScopeRules::load(file, &PathContext::with_home(dir, None))
}

#[test]
fn every_key_is_read_from_a_settings_file() {
    let dir = tempfile::tempdir().unwrap();
    let scope = load(
        dir.path(),
        "settings.json",
        r#"{
          "permissions": {"allow": ["Bash(git status)"]},
          "sandbox": {
            "enabled": true,
            "autoAllowBashIfSandboxed": false,
            "excludedCommands": ["docker:*"],
            "allowUnsandboxedCommands": false,
            "network": {
              "allowedDomains": ["crates.io", "*.npmjs.org:443"],
              "deniedDomains": ["evil.example"],
              "allowUnixSockets": ["/run/docker.sock"],
              "allowLocalBinding": true,
              "httpProxyPort": 3128,
              "socksProxyPort": 1080,
              "allowWebFetchDomains": false
            },
            "filesystem": {
              "allowWrite": ["~/.npm"],
              "denyWrite": ["./dist"],
              "denyRead": ["./private/**"],
              "allowDefaultSecrets": true
            }
          }
        }"#,
    )
    .unwrap();
    let rules = scope.read();
    let sandbox = &rules.sandbox;
    assert_eq!(rules.allow.len(), 1);
    assert_eq!(sandbox.enabled, Some(true));
    assert_eq!(sandbox.auto_allow_bash_if_sandboxed, Some(false));
    assert_eq!(sandbox.excluded_commands, ["docker:*"]);
    assert_eq!(sandbox.allow_unsandboxed_commands, Some(false));
    assert_eq!(
        sandbox.network.allowed_domains,
        ["crates.io", "*.npmjs.org:443"]
    );
    assert_eq!(sandbox.network.denied_domains, ["evil.example"]);
    assert_eq!(sandbox.network.allow_unix_sockets, ["/run/docker.sock"]);
    assert_eq!(sandbox.network.allow_local_binding, Some(true));
    assert_eq!(sandbox.network.http_proxy_port, Some(3128));
    assert_eq!(sandbox.network.socks_proxy_port, Some(1080));
    assert_eq!(sandbox.network.allow_web_fetch_domains, Some(false));
    assert_eq!(sandbox.filesystem.allow_write, ["~/.npm"]);
    assert_eq!(sandbox.filesystem.deny_write, ["./dist"]);
    assert_eq!(sandbox.filesystem.deny_read, ["./private/**"]);
    assert_eq!(sandbox.filesystem.allow_default_secrets, Some(true));
}

#[test]
fn a_file_without_sandbox_sets_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let scope = load(dir.path(), "s.json", r#"{"permissions": {}}"#).unwrap();
    assert!(scope.read().sandbox.is_empty());
}

#[test]
fn errors_name_the_file_and_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            r#"{"sandbox": {"enabeld": true}}"#,
            "`sandbox.enabeld` (did you mean `sandbox.enabled`?)",
        ),
        (
            r#"{"sandbox": {"network": {"deniedDomain": []}}}"#,
            "`sandbox.network.deniedDomain` (did you mean `sandbox.network.deniedDomains`?)",
        ),
        (
            r#"{"sandbox": {"filesystem": {"allow_write": []}}}"#,
            "did you mean `sandbox.filesystem.allowWrite`?",
        ),
        (
            r#"{"sandbox": {"network": {"httpProxyPort": "3128"}}}"#,
            "`sandbox.network.httpProxyPort` must be a port number",
        ),
        (
            r#"{"sandbox": {"network": {"allowedDomains": ["https://crates.io/"]}}}"#,
            "`sandbox.network.allowedDomains`: `https://crates.io/`",
        ),
        (
            r#"{"sandbox": {"filesystem": {"denyRead": ["~/../etc"]}}}"#,
            "`sandbox.filesystem.denyRead`: `~/../etc`",
        ),
        (
            r#"{"sandbox": {"excludedCommands": ["docker:* run"]}}"#,
            "`sandbox.excludedCommands`: `docker:* run`",
        ),
        (r#"{"sandbox": "on"}"#, "`sandbox` must be an object"),
    ];
    for (text, expected) in cases {
        let err = load(dir.path(), "bad.json", text).err().unwrap();
        assert!(matches!(err, LoadError::Sandbox { .. }), "{text}: {err:?}");
        let message = err.to_string();
        assert!(
            message.contains("bad.json") && message.contains(expected),
            "{text}: {message}"
        );
    }
    let typo = load(
        dir.path(),
        "t.json",
        r#"{"sandbox": {"autoAllowBash": true}}"#,
    );
    match typo.err().unwrap() {
        LoadError::Sandbox {
            source: SandboxError::UnknownKey { key, suggestion },
            ..
        } => {
            assert_eq!(key, "sandbox.autoAllowBash");
            assert_eq!(
                suggestion.as_deref(),
                Some("sandbox.autoAllowBashIfSandboxed")
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn scopes_merge_lists_and_take_single_values_from_the_highest() {
    let dir = tempfile::tempdir().unwrap();
    let user = load(
        dir.path(),
        "user.json",
        r#"{"sandbox": {"enabled": true, "autoAllowBashIfSandboxed": false,
            "network": {"allowedDomains": ["crates.io"], "httpProxyPort": 1},
            "filesystem": {"denyRead": ["~/.config/a"]}}}"#,
    )
    .unwrap();
    let project = load(
        dir.path(),
        "project.json",
        r#"{"sandbox": {"autoAllowBashIfSandboxed": true, "excludedCommands": ["docker"],
            "network": {"allowedDomains": ["pypi.org", "crates.io"], "httpProxyPort": 2},
            "filesystem": {"denyRead": ["./secret"]}}}"#,
    )
    .unwrap();
    let local = load(
        dir.path(),
        "local.json",
        r#"{"sandbox": {"allowUnsandboxedCommands": false, "network": {"socksProxyPort": 9}}}"#,
    )
    .unwrap();
    let permissions = Permissions::builder(PathContext::with_home(dir.path(), None))
        .scope(Scope::Session, local)
        .scope(Scope::Project, project)
        .scope(Scope::Global, user)
        .build();
    let merged = permissions.sandbox();
    // Global is higher than Project, which is higher than Session.
    assert_eq!(merged.enabled, Some(true));
    assert_eq!(merged.auto_allow_bash_if_sandboxed, Some(false));
    assert_eq!(merged.network.http_proxy_port, Some(1));
    assert_eq!(merged.network.socks_proxy_port, Some(9));
    assert_eq!(merged.allow_unsandboxed_commands, Some(false));
    assert_eq!(merged.network.allowed_domains, ["crates.io", "pypi.org"]);
    assert_eq!(merged.filesystem.deny_read, ["~/.config/a", "./secret"]);
    assert_eq!(merged.excluded_commands, ["docker"]);
}

#[test]
fn saving_rules_keeps_the_sandbox_object() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"{"sandbox": {"enabled": true, "network": {"allowedDomains": ["crates.io"]}}}"#;
    let scope = load(dir.path(), "keep.json", text).unwrap();
    scope.add(mux_permission::RuleKind::Allow, "Bash(ls)".parse().unwrap());
    scope.save().unwrap();
    let again = ScopeRules::load(
        dir.path().join("keep.json"),
        &PathContext::with_home(dir.path(), None),
    )
    .unwrap();
    assert_eq!(again.read().sandbox.network.allowed_domains, ["crates.io"]);
    assert_eq!(again.read().allow.len(), 1);
}

mod properties {
    use mux_permission::sandbox::WallDomain;
    use mux_permission::{PathContext, ScopeRules};
    use proptest::prelude::*;
    use serde_json::{Map, Value, json};

    const KEYS: &[&str] = &[
        "enabled",
        "autoAllowBashIfSandboxed",
        "excludedCommands",
        "allowUnsandboxedCommands",
        "network",
        "filesystem",
        "allowedDomains",
        "deniedDomains",
        "allowUnixSockets",
        "allowLocalBinding",
        "httpProxyPort",
        "socksProxyPort",
        "allowWebFetchDomains",
        "allowWrite",
        "denyWrite",
        "denyRead",
        "allowDefaultSecrets",
        "enable",
        "allowRead",
        "",
    ];

    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            (0u32..70_000).prop_map(|n| json!(n)),
            "[ -~]{0,12}".prop_map(Value::String),
            prop::collection::vec("[ -~]{0,12}", 0..3).prop_map(|v| json!(v)),
        ]
    }

    fn object() -> impl Strategy<Value = Value> {
        leaf().prop_recursive(3, 24, 6, |inner| {
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..6).prop_map(|pairs| {
                let mut map = Map::new();
                for (key, value) in pairs {
                    map.insert(key.to_owned(), value);
                }
                Value::Object(map)
            })
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Whatever the `sandbox` object holds, loading it gives settings or an error that
        /// names a key under `sandbox`; it never panics.
        #[test]
        fn any_sandbox_object_loads_or_names_its_key(sandbox in object()) {
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join("s.json");
            std::fs::write(&file, json!({"sandbox": sandbox}).to_string()).unwrap();
            match ScopeRules::load(&file, &PathContext::with_home(dir.path(), None)) {
                Ok(scope) => prop_assert!(scope.read().sandbox.validate().is_ok()),
                Err(err) => {
                    let text = err.to_string();
                    prop_assert!(text.contains("`sandbox"), "{}", text);
                }
            }
        }

        /// A domain entry that parses prints as an entry that parses to the same domain.
        #[test]
        fn domains_round_trip(text in "[*.]{0,2}[a-zA-Z0-9.:\\[\\]_-]{0,20}") {
            if let Ok(domain) = WallDomain::parse(&text) {
                let again = WallDomain::parse(&domain.to_string());
                prop_assert_eq!(again.as_ref(), Ok(&domain), "{}", text);
            }
        }
    }
}
