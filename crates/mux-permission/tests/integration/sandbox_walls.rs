//! Every rule and `sandbox` setting compiled to the walls it concerns.

use std::path::{Path, PathBuf};

use mux_permission::sandbox::{SandboxSettings, WallDomain};
use mux_permission::{PathContext, Permissions, RuleKind, RuleSet, Scope, ScopeRules, Walls};
use mux_permission::{WallOrigin, WallPath};
use mux_tool::secrets::SECRET_LOCATIONS;

fn context() -> PathContext {
    PathContext::with_home("/nonexistent/project", Some("/nonexistent/home".into()))
}

fn walls(rules: RuleSet, settings: SandboxSettings) -> Walls {
    settings.walls(&rules, &context()).unwrap()
}

fn paths(list: &[WallPath]) -> Vec<(String, Option<String>)> {
    list.iter()
        .map(|w| (w.path.display().to_string(), w.glob.clone()))
        .collect()
}

fn has(list: &[WallPath], path: &str, glob: Option<&str>) -> bool {
    list.iter()
        .any(|w| w.path == Path::new(path) && w.glob.as_deref() == glob)
}

fn domains(list: &[WallDomain]) -> Vec<String> {
    list.iter().map(ToString::to_string).collect()
}

#[test]
fn read_deny_and_ask_rules_hide_their_paths() {
    let rules = RuleSet::new()
        .with_deny("Read(./.env)")
        .unwrap()
        .with_deny("Read(~/.config/tokens/**)")
        .unwrap()
        .with_deny("Read(//etc/shadow)")
        .unwrap()
        .with_deny("grep(*.pem)")
        .unwrap()
        .with_ask("Read(./private/*.key)")
        .unwrap()
        // An allow rule for reading opens nothing on the wall.
        .with_allow("Read(~/.ssh/**)")
        .unwrap();
    let w = walls(rules, SandboxSettings::new());
    assert!(has(&w.deny_read, "/nonexistent/project/.env", None));
    assert!(has(&w.deny_read, "/nonexistent/home/.config/tokens", None));
    assert!(has(&w.deny_read, "/etc/shadow", None));
    assert!(has(&w.deny_read, "/nonexistent/project", Some("**/*.pem")));
    assert!(has(
        &w.deny_read,
        "/nonexistent/project/private",
        Some("*.key")
    ));
    let origin = w
        .deny_read
        .iter()
        .find(|p| p.path == Path::new("/etc/shadow"))
        .map(|p| p.origin.clone());
    assert_eq!(
        origin,
        Some(WallOrigin::Rule {
            rule: "Read(//etc/shadow)".into(),
            kind: RuleKind::Deny
        })
    );
    // The default secrets are hidden, ~/.ssh among them, whatever an allow rule says.
    assert!(has(&w.deny_read, "/nonexistent/home/.ssh", None));
    assert!(w.allow_write.is_empty() && w.deny_write.is_empty());
}

#[test]
fn edit_rules_feed_the_write_lists() {
    let rules = RuleSet::new()
        .with_allow("Edit(~/.npm/**)")
        .unwrap()
        .with_allow("Write(//tmp/build)")
        .unwrap()
        // An allow rule naming one tool stays with that tool.
        .with_allow("edit_file(~/.cargo/**)")
        .unwrap()
        .with_deny("Edit(./dist/**)")
        .unwrap()
        .with_deny("write_file(./.envrc)")
        .unwrap()
        .with_ask("Edit(./Cargo.lock)")
        .unwrap();
    let w = walls(rules, SandboxSettings::new());
    assert_eq!(
        paths(&w.allow_write),
        [
            ("/nonexistent/home/.npm".to_owned(), None),
            ("/tmp/build".to_owned(), None)
        ]
    );
    assert!(has(&w.deny_write, "/nonexistent/project/dist", None));
    assert!(has(&w.deny_write, "/nonexistent/project/.envrc", None));
    assert!(has(&w.deny_write, "/nonexistent/project/Cargo.lock", None));
}

#[test]
fn settings_feed_every_list() {
    let mut settings = SandboxSettings::new();
    settings.filesystem.deny_read = vec!["./secrets".into()];
    settings.filesystem.allow_write = vec!["~/.cache/pip".into()];
    settings.filesystem.deny_write = vec!["./vendor/**".into()];
    settings.network.allowed_domains = vec!["crates.io".into(), "*.pypi.org:443".into()];
    settings.network.denied_domains = vec!["*".into()];
    settings.network.allow_unix_sockets = vec!["~/.docker.sock".into(), "/run/a.sock".into()];
    settings.network.allow_local_binding = Some(true);
    settings.network.http_proxy_port = Some(3128);
    settings.network.socks_proxy_port = Some(1080);
    let w = walls(RuleSet::new(), settings);
    assert!(has(&w.deny_read, "/nonexistent/project/secrets", None));
    assert!(has(&w.allow_write, "/nonexistent/home/.cache/pip", None));
    assert!(has(&w.deny_write, "/nonexistent/project/vendor", None));
    assert_eq!(domains(&w.allowed_domains), ["crates.io", "*.pypi.org:443"]);
    assert_eq!(domains(&w.denied_domains), ["*"]);
    assert_eq!(
        w.allow_unix_sockets,
        [
            PathBuf::from("/nonexistent/home/.docker.sock"),
            PathBuf::from("/run/a.sock")
        ]
    );
    assert!(w.allow_local_binding);
    assert_eq!(
        (w.http_proxy_port, w.socks_proxy_port),
        (Some(3128), Some(1080))
    );
}

#[test]
fn web_fetch_rules_feed_the_domains_unless_kept_apart() {
    let rules = || {
        RuleSet::new()
            .with_allow("WebFetch(domain:docs.rs)")
            .unwrap()
            .with_allow("WebFetch(domain:*.github.io)")
            .unwrap()
            // An allow rule naming the tool itself stays with it.
            .with_allow("web_fetch(domain:example.org)")
            .unwrap()
            .with_deny("WebFetch(domain:evil.example)")
            .unwrap()
            .with_deny("web_fetch(domain:tracker.example)")
            .unwrap()
            // A rule without a domain is about the tool, not a host.
            .with_allow("WebFetch")
            .unwrap()
    };
    let shared = walls(rules(), SandboxSettings::new());
    assert_eq!(domains(&shared.allowed_domains), ["docs.rs", "*.github.io"]);
    assert_eq!(
        domains(&shared.denied_domains),
        ["evil.example", "tracker.example"]
    );
    let mut apart = SandboxSettings::new();
    apart.network.allow_web_fetch_domains = Some(false);
    let apart = walls(rules(), apart);
    assert!(apart.allowed_domains.is_empty());
    assert_eq!(
        domains(&apart.denied_domains),
        ["evil.example", "tracker.example"]
    );
}

#[test]
fn default_secrets_are_hidden_unless_allowed() {
    let hidden = walls(RuleSet::new(), SandboxSettings::new());
    for secret in SECRET_LOCATIONS {
        let path = format!("/nonexistent/home/{}", secret.path);
        assert!(
            hidden.deny_read.iter().any(|w| w.path == Path::new(&path)
                && w.origin == WallOrigin::DefaultSecret(secret.path)),
            "{}",
            secret.path
        );
    }
    let mut allowed = SandboxSettings::new();
    allowed.filesystem.allow_default_secrets = Some(true);
    assert!(walls(RuleSet::new(), allowed).deny_read.is_empty());
    // Without a home directory there is nothing to hide there, and nothing fails.
    let homeless = PathContext::with_home("/nonexistent/project", None);
    let w = SandboxSettings::new()
        .walls(&RuleSet::new(), &homeless)
        .unwrap();
    assert!(w.deny_read.is_empty());
}

#[test]
fn a_denied_path_behind_a_symlink_is_hidden_where_it_leads() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real-secrets");
    std::fs::create_dir(&real).unwrap();
    std::os::unix::fs::symlink(&real, dir.path().join("link")).unwrap();
    let rules = RuleSet::new().with_deny("Read(./link/**)").unwrap();
    let context = PathContext::with_home(dir.path(), None);
    let w = SandboxSettings::new().walls(&rules, &context).unwrap();
    let real = mux_permission::resolve(&real).unwrap();
    assert!(w.deny_read.iter().any(|p| p.path == real), "{w:?}");
    assert!(
        w.deny_read
            .iter()
            .any(|p| p.path == dir.path().join("link"))
    );
    // An allow list never follows a link: the link's target is not made writable.
    let rules = RuleSet::new().with_allow("Edit(./link)").unwrap();
    let w = SandboxSettings::new().walls(&rules, &context).unwrap();
    assert_eq!(paths(&w.allow_write).len(), 1);
    assert_eq!(w.allow_write[0].path, dir.path().join("link"));
}

#[test]
fn the_policy_compiles_every_scope_and_a_managed_lock_keeps_other_allows_out() {
    let managed = ScopeRules::new(
        RuleSet::new()
            .with_allow("WebFetch(domain:corp.example)")
            .unwrap()
            .with_managed_rules_only(),
    );
    let mut project_sandbox = SandboxSettings::new();
    project_sandbox.filesystem.deny_read = vec!["./keys".into()];
    let project = ScopeRules::new(
        RuleSet::new()
            .with_allow("WebFetch(domain:crates.io)")
            .unwrap()
            .with_allow("Edit(~/.npm/**)")
            .unwrap()
            .with_deny("Read(./.env)")
            .unwrap()
            .with_sandbox(project_sandbox),
    );
    let permissions = Permissions::builder(context())
        .scope(Scope::Managed, managed)
        .scope(Scope::Project, project)
        .build();
    let w = permissions.walls().unwrap();
    assert_eq!(domains(&w.allowed_domains), ["corp.example"]);
    assert!(w.allow_write.is_empty());
    assert!(has(&w.deny_read, "/nonexistent/project/.env", None));
    assert!(has(&w.deny_read, "/nonexistent/project/keys", None));
}

#[test]
fn settings_built_in_code_are_checked() {
    let mut settings = SandboxSettings::new();
    settings.network.denied_domains = vec!["not a host".into()];
    assert!(settings.validate().is_err());
    assert!(settings.walls(&RuleSet::new(), &context()).is_err());
}
