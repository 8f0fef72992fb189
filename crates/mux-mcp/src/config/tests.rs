use std::time::Duration;

use super::expand::{ExpandProblem, expand_vars};
use super::*;
use crate::oauth::token_file::FileTokenStore;

fn env(name: &str) -> Option<String> {
    match name {
        "TOKEN" => Some("s3cret".into()),
        "EMPTY" => Some(String::new()),
        "ROOT" => Some("/data".into()),
        _ => None,
    }
}

#[test]
fn oauth_is_read_from_http_entries() {
    let config = r#"{"mcpServers": {"docs": {"url": "https://h/mcp", "oauth": {
        "redirectUri": "http://127.0.0.1:9/cb", "scopes": ["a", "b"],
        "clientId": "id", "clientSecret": "${TOKEN}", "clientName": "me",
        "clientMetadataUrl": "https://me.example/client.json"}}}}"#;
    let specs = parse_config_with(config, &env).unwrap();
    let TransportSpec::Http(http) = &specs[0].transport else {
        panic!("http")
    };
    let oauth = http.oauth.as_ref().unwrap();
    assert_eq!(oauth.redirect_uri, "http://127.0.0.1:9/cb");
    assert_eq!(oauth.scopes, ["a", "b"]);
    assert_eq!(oauth.client_id.as_deref(), Some("id"));
    assert_eq!(oauth.client_secret.as_ref().unwrap().expose(), "s3cret");
    assert_eq!(oauth.client_name, "me");
    assert_eq!(
        oauth.client_metadata_url.as_deref(),
        Some("https://me.example/client.json")
    );
    assert!(!format!("{oauth:?}").contains("s3cret"));
}

#[test]
fn client_credentials_need_no_redirect_uri() {
    let config = r#"{"mcpServers": {"bot": {"url": "https://h/mcp", "oauth": {
        "grant": "client_credentials", "clientId": "reports-bot",
        "clientSecret": "s3cret", "scopes": ["read"]}}}}"#;
    let specs = parse_config_with(config, &env).unwrap();
    let TransportSpec::Http(http) = &specs[0].transport else {
        panic!("not http")
    };
    let oauth = http.oauth.as_ref().unwrap();
    assert_eq!(oauth.grant, OAuthGrant::ClientCredentials);
    assert_eq!(oauth.client_id.as_deref(), Some("reports-bot"));
    assert_eq!(oauth.client_secret.as_ref().unwrap().expose(), "s3cret");
    assert_eq!(oauth.scopes, ["read"]);
    assert!(!format!("{oauth:?}").contains("s3cret"));
    let built =
        OAuthSpec::client_credentials("reports-bot", Secret::new("s3cret")).with_scopes(["read"]);
    assert_eq!(*oauth, built);
}

#[test]
fn a_private_key_file_selects_private_key_jwt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("key.pem");
    let pem = "-----BEGIN PRIVATE KEY-----\nsekrit\n-----END PRIVATE KEY-----\n";
    std::fs::write(&path, pem).unwrap();
    let entry = |extra: &str| {
        format!(
            r#"{{"mcpServers": {{"bot": {{"url": "https://h/mcp", "oauth": {{
            "grant": "client_credentials", "clientId": "bot",
            "privateKeyFile": "{}"{extra}}}}}}}}}"#,
            path.display()
        )
    };
    let specs = parse_config_with(&entry(r#", "signingAlgorithm": "ES384""#), &env).unwrap();
    let TransportSpec::Http(http) = &specs[0].transport else {
        panic!("not http")
    };
    let oauth = http.oauth.as_ref().unwrap();
    let key = oauth.client_key.as_ref().unwrap();
    assert_eq!(
        (key.key_pem.expose(), key.algorithm),
        (pem, JwtAlgorithm::ES384)
    );
    assert!(!format!("{oauth:?}").contains("sekrit"));

    match parse_config_with(&entry(r#", "clientSecret": "s""#), &env) {
        Err(ConfigError::Field { field, .. }) => assert_eq!(field, "oauth.privateKeyFile"),
        other => panic!("{other:?}"),
    }
    std::fs::write(&path, "sekrit").unwrap();
    match parse_config_with(&entry(""), &env) {
        Err(err @ ConfigError::Field { .. }) => {
            assert!(!err.to_string().contains("sekrit"), "{err}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn bad_oauth_entries_name_the_field() {
    for (oauth, field) in [
        (r#""yes""#, "oauth"),
        (r#"{}"#, "oauth.redirectUri"),
        (r#"{"redirectUri": "myapp:/cb"}"#, "oauth.redirectUri"),
        (
            r#"{"redirectUri": "http://h/cb", "scopes": "a"}"#,
            "oauth.scopes",
        ),
        (
            r#"{"redirectUri": "http://h/cb", "scopes": [1]}"#,
            "oauth.scopes[0]",
        ),
        (
            r#"{"redirectUri": "http://h/cb", "clientSecret": "s"}"#,
            "oauth.clientSecret",
        ),
        (
            r#"{"redirectUri": "http://h/cb", "clientId": 7}"#,
            "oauth.clientId",
        ),
        (r#"{"grant": "implicit"}"#, "oauth.grant"),
        (
            r#"{"grant": "client_credentials", "clientSecret": "s"}"#,
            "oauth.clientSecret",
        ),
        (r#"{"grant": "client_credentials"}"#, "oauth.clientId"),
        (
            r#"{"grant": "client_credentials", "clientId": "bot"}"#,
            "oauth.clientSecret",
        ),
        (
            r#"{"grant": "client_credentials", "clientId": "bot",
                "privateKeyFile": "/nonexistent/key.pem"}"#,
            "oauth.privateKeyFile",
        ),
        (
            r#"{"grant": "client_credentials", "clientId": "bot",
                "clientSecret": "s", "signingAlgorithm": "HS256"}"#,
            "oauth.signingAlgorithm",
        ),
    ] {
        let config =
            format!(r#"{{"mcpServers": {{"x": {{"url": "http://h", "oauth": {oauth}}}}}}}"#);
        match parse_config_with(&config, &env) {
            Err(ConfigError::Field {
                server, field: got, ..
            }) => {
                assert_eq!((server.as_str(), got.as_str()), ("x", field), "{oauth}");
            }
            other => panic!("{oauth}: {other:?}"),
        }
    }
}

#[test]
fn a_token_store_directory_is_read_with_variables() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().display().to_string();
    let lookup = |name: &str| (name == "TOKENS").then(|| root.clone());
    let entry = |store: &str| {
        format!(
            r#"{{"mcpServers": {{"x": {{"url": "http://h", "oauth":
                {{"redirectUri": "http://h/cb", "tokenStore": {store}}}}}}}}}"#
        )
    };
    let specs = parse_config_with(&entry(r#""${TOKENS}/mcp""#), &lookup).unwrap();
    let TransportSpec::Http(http) = &specs[0].transport else {
        panic!("not http: {:?}", specs[0]);
    };
    let store = http.oauth.as_ref().unwrap().token_store.as_ref().unwrap();
    let expected = FileTokenStore::new(dir.path().join("mcp"));
    assert_eq!(format!("{:?}", store.0), format!("{expected:?}"));

    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let file = serde_json::to_string(&file.display().to_string()).unwrap();
    for (value, problem) in [
        ("7", "must be a string"),
        (r#""  ""#, "must be a directory path, not empty"),
        (file.as_str(), "which is not a directory"),
    ] {
        match parse_config_with(&entry(value), &lookup) {
            Err(ConfigError::Field {
                server,
                field,
                problem: got,
            }) => {
                assert_eq!((server.as_str(), field.as_str()), ("x", "oauth.tokenStore"));
                assert!(got.contains(problem), "{value}: {got}");
            }
            other => panic!("{value}: {other:?}"),
        }
    }
    assert!(matches!(
        parse_config_with(&entry(r#""${NOPE}""#), &lookup),
        Err(ConfigError::UnsetVariable { field, .. }) if field == "oauth.tokenStore"
    ));
}

#[test]
fn variables_expand_with_defaults() {
    assert_eq!(expand_vars("a${ROOT}b", &env).unwrap(), "a/datab");
    assert_eq!(expand_vars("${NOPE:-x}", &env).unwrap(), "x");
    assert_eq!(expand_vars("${EMPTY:-x}", &env).unwrap(), "x");
    assert_eq!(expand_vars("${EMPTY}", &env).unwrap(), "");
    assert_eq!(expand_vars("no vars $HOME", &env).unwrap(), "no vars $HOME");
    assert_eq!(expand_vars("$${ROOT}", &env).unwrap(), "${ROOT}");
    assert_eq!(expand_vars("a$$b$", &env).unwrap(), "a$b$");
    assert_eq!(expand_vars("$$$${ROOT}", &env).unwrap(), "$${ROOT}");
    assert_eq!(expand_vars("$$${ROOT}", &env).unwrap(), "$/data");
    assert_eq!(
        expand_vars("${NOPE}", &env),
        Err(ExpandProblem::Unset("NOPE".into()))
    );
    assert_eq!(expand_vars("${ROOT", &env), Err(ExpandProblem::Unclosed));
    assert_eq!(
        expand_vars("${1X}", &env),
        Err(ExpandProblem::BadName("1X".into()))
    );
}

#[test]
fn a_full_config_parses() {
    let text = r#"{"mcpServers": {
        "remote": {"type": "http", "url": "https://example.com/mcp",
                   "headers": {"X-Key": "${TOKEN}"}, "bearerToken": "${TOKEN}",
                   "toolTimeoutMs": 1500},
        "fs": {"command": "node", "args": ["server.js", "${ROOT}"], "env": {"K": "v"}, "cwd": "/tmp"},
        "off": {"command": "x", "disabled": true}
    }}"#;
    let specs = parse_config_with(text, &env).unwrap();
    assert_eq!(specs.len(), 2);
    assert_eq!(specs[0].name, "fs");
    let TransportSpec::Stdio(stdio) = &specs[0].transport else {
        panic!("fs is stdio")
    };
    assert_eq!(stdio.args, ["server.js", "/data"]);
    assert_eq!(stdio.env["K"].expose(), "v");
    assert_eq!(stdio.cwd.as_deref(), Some(std::path::Path::new("/tmp")));
    let TransportSpec::Http(http) = &specs[1].transport else {
        panic!("remote is http")
    };
    assert_eq!(http.headers["X-Key"].expose(), "s3cret");
    assert_eq!(specs[1].tool_timeout, Some(Duration::from_millis(1500)));
    // Secrets never show in Debug output.
    assert!(!format!("{:?}", specs).contains("s3cret"));
}

#[test]
fn bad_configs_name_the_server_and_field() {
    let cases = [
        (
            r#"{"mcpServers": {"a": {"args": []}}}"#,
            "`a`: field `command`",
        ),
        (
            r#"{"mcpServers": {"a": {"command": 3}}}"#,
            "`a`: field `command` must be a string",
        ),
        (
            r#"{"mcpServers": {"b": {"command": "x", "args": ["ok", 1]}}}"#,
            "`b`: field `args[1]`",
        ),
        (
            r#"{"mcpServers": {"c": {"url": "ftp://x"}}}"#,
            "`c`: field `url`",
        ),
        (
            r#"{"mcpServers": {"d": {"type": "sse", "url": "http://x"}}}"#,
            "`d`: field `type`",
        ),
        (
            r#"{"mcpServers": {"e": {"command": "x", "env": {"K": "${MISSING}"}}}}"#,
            "`e`: field `env.K` uses `${MISSING}`",
        ),
        (
            r#"{"mcpServers": {"f": {"command": "x", "toolTimeoutMs": -1}}}"#,
            "`f`: field `toolTimeoutMs`",
        ),
        (
            r#"{"mcpServers": {"g": {"url": "http://x", "headers": {"bad header": "v"}}}}"#,
            "`g`: field `headers.bad header`",
        ),
        (
            r#"{"mcpServers": {"h": {"command": "x", "url": "http://x"}}}"#,
            "`h`: field `command`",
        ),
        (
            r#"{"mcpServers": {"i": []}}"#,
            "`i`: field `(entry)` must be an object",
        ),
        (
            r#"{"mcpServers": {"j": {"url": "http://x", "oauth": []}}}"#,
            "`j`: field `oauth` must be an object",
        ),
        (
            r#"{"mcpServers": {"k": {"command": "x", "env": {"A": 1}}}}"#,
            "`k`: field `env.A` must be a string",
        ),
        (
            r#"{"mcpServers": {"l": {"command": "x", "disabled": "yes"}}}"#,
            "`l`: field `disabled` must be true or false",
        ),
        (
            r#"{"mcpServers": {"m": {"url": "http://x", "caCertificates": [1]}}}"#,
            "`m`: field `caCertificates[0]` must be a string",
        ),
        (
            r#"{"mcpServers": {"n": {"command": "x", "connectTimeoutMs": 1.5}}}"#,
            "`n`: field `connectTimeoutMs` must be a positive whole number of milliseconds",
        ),
        (r#"{"servers": {}}"#, "mcpServers"),
        (r#"{"mcpServers": "#, "not valid JSON"),
    ];
    for (text, expected) in cases {
        let err = parse_config_with(text, &env).unwrap_err().to_string();
        assert!(err.contains(expected), "{text}: {err}");
    }
}

#[test]
fn null_is_absent_and_disabled_entries_are_not_checked() {
    let config = r#"{"mcpServers": {
        "a": {"command": "x", "url": null, "args": null, "env": null, "toolTimeoutMs": null},
        "b": {"disabled": true, "command": 3, "env": {"K": "${MISSING}"}}
    }}"#;
    let specs = parse_config_with(config, &env).unwrap();
    assert_eq!(specs.len(), 1, "{specs:?}");
    let TransportSpec::Stdio(stdio) = &specs[0].transport else {
        panic!("{specs:?}")
    };
    assert_eq!(stdio.command, "x");
    assert!(stdio.args.is_empty() && stdio.env.is_empty());
    assert_eq!(specs[0].tool_timeout, None);
}

fn sandbox_of(spec: &ServerSpec) -> Option<StdioSandbox> {
    match &spec.transport {
        TransportSpec::Stdio(stdio) => stdio.sandbox.clone(),
        TransportSpec::Http(_) => panic!("not stdio"),
    }
}

#[test]
fn sandbox_is_read_from_stdio_entries() {
    let config = r#"{"mcpServers": {
        "a": {"command": "x"},
        "b": {"command": "x", "sandbox": true},
        "c": {"command": "x", "sandbox": false},
        "d": {"command": "x", "sandbox": {"policy": "readOnly", "network": true, "root": "${ROOT}/d"}},
        "e": {"command": "x", "sandbox": {}}
    }}"#;
    let specs = parse_config_with(config, &env).unwrap();
    let walls: Vec<_> = specs.iter().map(sandbox_of).collect();
    assert_eq!(
        walls,
        [
            None,
            Some(StdioSandbox::default()),
            None,
            Some(StdioSandbox {
                policy: StdioSandboxPolicy::ReadOnly,
                network: true,
                root: Some("/data/d".into()),
            }),
            Some(StdioSandbox::new(StdioSandboxPolicy::WorkspaceWrite)),
        ]
    );
    assert_eq!(
        StdioSandbox::default(),
        StdioSandbox {
            policy: StdioSandboxPolicy::WorkspaceWrite,
            network: false,
            root: None
        }
    );
}

#[test]
fn a_top_level_sandbox_walls_every_stdio_server_whose_entry_has_none() {
    let config = r#"{"sandbox": {"policy": "readOnly", "root": "${ROOT}"}, "mcpServers": {
        "a": {"command": "x"},
        "b": {"command": "x", "sandbox": false},
        "c": {"command": "x", "sandbox": {"network": true}},
        "web": {"url": "http://h/mcp"}
    }}"#;
    let specs = parse_config_with(config, &env).unwrap();
    let default = StdioSandbox::new(StdioSandboxPolicy::ReadOnly).with_root("/data");
    assert_eq!(sandbox_of(&specs[0]), Some(default));
    assert_eq!(sandbox_of(&specs[1]), None);
    // An entry's own object replaces the default whole.
    assert_eq!(
        sandbox_of(&specs[2]),
        Some(StdioSandbox::default().with_network(true))
    );
    assert!(matches!(specs[3].transport, TransportSpec::Http(_)));
}

#[test]
fn bad_sandboxes_are_refused_naming_the_field() {
    let field = |entry: &str| {
        let config = format!(r#"{{"mcpServers": {{"s": {entry}}}}}"#);
        match parse_config_with(&config, &env).unwrap_err() {
            ConfigError::Field { field, problem, .. } => format!("{field}: {problem}"),
            other => panic!("{other:?}"),
        }
    };
    for (entry, expected) in [
        (
            r#"{"command": "x", "sandbox": "yes"}"#,
            "sandbox: must be true",
        ),
        (
            r#"{"command": "x", "sandbox": {"policy": "fullAccess"}}"#,
            "sandbox.policy: is `fullAccess`",
        ),
        (
            r#"{"command": "x", "sandbox": {"policy": "workspace"}}"#,
            "sandbox.policy: is `workspace`; expected",
        ),
        (
            r#"{"command": "x", "sandbox": {"policy": 1}}"#,
            "sandbox.policy: must be",
        ),
        (
            r#"{"command": "x", "sandbox": {"network": "off"}}"#,
            "sandbox.network: must be true or false",
        ),
        (
            r#"{"command": "x", "sandbox": {"netwrok": false}}"#,
            "sandbox.netwrok: is not a sandbox setting",
        ),
        (
            r#"{"command": "x", "sandbox": {"root": ""}}"#,
            "sandbox.root: must not be empty",
        ),
        (
            r#"{"command": "x", "sandbox": {"root": 3}}"#,
            "sandbox.root: must be a path",
        ),
        (
            r#"{"command": "x", "cwd": "/a", "sandbox": {"root": "/b"}}"#,
            "sandbox.root: is /b but `cwd` is /a",
        ),
        (
            r#"{"url": "http://h/mcp", "sandbox": true}"#,
            "sandbox: applies to stdio servers only",
        ),
    ] {
        let got = field(entry);
        assert!(got.starts_with(expected), "{entry}: {got}");
    }
    let config = r#"{"mcpServers": {"s": {"command": "x", "sandbox": {"root": "${NOPE}"}}}}"#;
    assert!(matches!(
        parse_config_with(config, &env).unwrap_err(),
        ConfigError::UnsetVariable { field, var, .. } if field == "sandbox.root" && var == "NOPE"
    ));
}

#[test]
fn a_bad_top_level_sandbox_is_refused_naming_it() {
    for (config, expected) in [
        (
            r#"{"sandbox": 1, "mcpServers": {}}"#,
            "MCP config: field `sandbox` must be true",
        ),
        (
            r#"{"sandbox": {"policy": "none"}, "mcpServers": {}}"#,
            "MCP config: field `sandbox.policy` is `none`",
        ),
        (
            r#"{"sandbox": {"root": "${NOPE}"}, "mcpServers": {}}"#,
            "MCP config: field `sandbox.root` uses `${NOPE}`, which is not set",
        ),
    ] {
        let error = parse_config_with(config, &env).unwrap_err();
        assert!(matches!(error, ConfigError::Setting { .. }), "{error:?}");
        assert!(error.to_string().starts_with(expected), "{error}");
    }
}

#[test]
fn a_sandbox_equal_to_cwd_is_accepted() {
    let config =
        r#"{"mcpServers": {"s": {"command": "x", "cwd": "/a", "sandbox": {"root": "/a"}}}}"#;
    let specs = parse_config_with(config, &env).unwrap();
    assert_eq!(
        sandbox_of(&specs[0]).and_then(|sandbox| sandbox.root),
        Some("/a".into())
    );
}
