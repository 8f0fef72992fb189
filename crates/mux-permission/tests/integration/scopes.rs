//! Scopes: live global rules, isolated sessions, managed locks, settings files, remembering.

use crate::real_programs::verdict;
use std::sync::mpsc;
use std::time::Duration;

use mux_permission::{
    LoadError, Mode, PathContext, Permissions, Remember, RememberError, RuleKind, RuleSet, Scope,
    ScopeRules, Verdict, builtin,
};
use mux_tool::Subject;

fn context(dir: &std::path::Path) -> PathContext {
    PathContext::with_home(dir, None)
}

#[test]
fn a_global_rule_added_at_runtime_reaches_a_running_agent() {
    let global = ScopeRules::new(RuleSet::new());
    let permissions = Permissions::builder(PathContext::new("/"))
        .scope(Scope::Global, global.clone())
        .build();
    let (ask_tx, ask_rx) = mpsc::channel::<&'static str>();
    let (answer_tx, answer_rx) = mpsc::channel::<Verdict>();
    // The agent runs on its own thread with its own Permissions, built before the rule exists.
    let agent = std::thread::spawn(move || {
        while let Ok(command) = ask_rx.recv() {
            answer_tx.send(verdict(&permissions, command)).unwrap();
        }
    });
    let timeout = Duration::from_secs(10);
    ask_tx.send("cargo build").unwrap();
    assert_eq!(answer_rx.recv_timeout(timeout).unwrap(), Verdict::Ask);

    global.add(RuleKind::Allow, "Bash(cargo build:*)".parse().unwrap());
    ask_tx.send("cargo build").unwrap();
    assert_eq!(answer_rx.recv_timeout(timeout).unwrap(), Verdict::Allow);

    global.add(RuleKind::Deny, "Bash(cargo:*)".parse().unwrap());
    ask_tx.send("cargo build").unwrap();
    assert_eq!(answer_rx.recv_timeout(timeout).unwrap(), Verdict::Deny);
    drop(ask_tx);
    agent.join().unwrap();
}

#[test]
fn a_session_rule_does_not_leak_into_another_session() {
    let global = ScopeRules::new(RuleSet::new());
    let first = Permissions::builder(PathContext::new("/"))
        .scope(Scope::Global, global.clone())
        .build();
    let second = first.new_session();
    first
        .scope(Scope::Session)
        .unwrap()
        .add(RuleKind::Allow, "Bash(make)".parse().unwrap());
    assert_eq!(verdict(&first, "make"), Verdict::Allow);
    assert_eq!(verdict(&second, "make"), Verdict::Ask);
    // The global scope is still shared by both.
    global.add(RuleKind::Deny, "Bash(make)".parse().unwrap());
    assert_eq!(verdict(&first, "make"), Verdict::Deny);
    assert_eq!(verdict(&second, "make"), Verdict::Deny);
}

#[test]
fn a_managed_lock_wins() {
    let managed = ScopeRules::new(
        RuleSet::new()
            .with_allow("Bash(ls)")
            .unwrap()
            .with_deny("Bash(curl:*)")
            .unwrap()
            .with_managed_rules_only(),
    );
    let project = ScopeRules::new(
        RuleSet::new()
            .with_allow("Bash(git status)")
            .unwrap()
            .with_allow("Bash(curl:*)")
            .unwrap(),
    );
    let session = ScopeRules::new(RuleSet::new().with_allow("Bash(make)").unwrap());
    let permissions = Permissions::builder(PathContext::new("/"))
        .scope(Scope::Project, project)
        .scope(Scope::Session, session)
        .scope(Scope::Managed, managed.clone())
        .build();
    assert_eq!(verdict(&permissions, "ls"), Verdict::Allow);
    assert_eq!(verdict(&permissions, "git status"), Verdict::Ask);
    assert_eq!(verdict(&permissions, "make"), Verdict::Ask);
    let curl = permissions.check(&builtin::spec("Bash").unwrap(), &Subject::command("curl x"));
    assert_eq!(
        (curl.verdict, curl.scope),
        (Verdict::Deny, Some(Scope::Managed))
    );
    // Lifting the lock lets the other scopes allow again.
    managed.update(|rules| rules.managed_rules_only = false);
    assert_eq!(verdict(&permissions, "git status"), Verdict::Allow);
}

#[test]
fn the_mode_comes_from_the_highest_scope_that_sets_one() {
    let project = ScopeRules::new(RuleSet::new().with_mode(Mode::Plan));
    let session = ScopeRules::new(RuleSet::new().with_mode(Mode::Bypass));
    let permissions = Permissions::builder(PathContext::new("/"))
        .scope(Scope::Session, session)
        .scope(Scope::Project, project.clone())
        .build();
    assert_eq!(permissions.mode(), Mode::Plan);
    assert_eq!(verdict(&permissions, "ls"), Verdict::Deny);
    project.set_mode(None);
    assert_eq!(permissions.mode(), Mode::Bypass);
    assert_eq!(verdict(&permissions, "ls"), Verdict::Allow);
}

#[test]
fn project_settings_load_remember_and_save_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(".mux/settings.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(
        &file,
        r#"{"theme": "dark", "permissions": {"allow": [{"rule": "Bash(git diff:*)", "match": ["git diff"]}], "deny": ["Bash(rm:*)"], "defaultMode": "default"}}"#,
    )
    .unwrap();
    let project = ScopeRules::load(&file, &context(dir.path())).unwrap();
    let permissions = Permissions::builder(context(dir.path()))
        .scope(Scope::Project, project)
        .build();
    assert_eq!(verdict(&permissions, "git diff HEAD"), Verdict::Allow);
    assert_eq!(verdict(&permissions, "cargo test --all"), Verdict::Ask);

    let bash = builtin::spec("Bash").unwrap();
    let added = permissions
        .remember(
            &bash,
            &Subject::command("cargo test --all && cargo test -q"),
            &Remember::prefix(Scope::Project, "cargo test").persisted(),
        )
        .unwrap();
    assert_eq!(added.len(), 1);
    assert_eq!(added[0].as_str(), "Bash(cargo test:*)");
    assert_eq!(verdict(&permissions, "cargo test --all"), Verdict::Allow);

    // The file now holds the rule, kept its other keys and the rule's examples, and no
    // temporary file is left beside it.
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(saved["theme"], "dark");
    assert_eq!(saved["permissions"]["allow"][0]["rule"], "Bash(git diff:*)");
    assert_eq!(saved["permissions"]["allow"][1], "Bash(cargo test:*)");
    let names: Vec<_> = std::fs::read_dir(file.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["settings.json"]);

    // A fresh load sees it.
    let reloaded = Permissions::builder(context(dir.path()))
        .scope(
            Scope::Project,
            ScopeRules::load(&file, &context(dir.path())).unwrap(),
        )
        .build();
    assert_eq!(verdict(&reloaded, "cargo test --all"), Verdict::Allow);
}

#[test]
fn remembering_records_the_narrowest_rule() {
    let permissions = Permissions::builder(PathContext::new("/")).build();
    let bash = builtin::spec("Bash").unwrap();
    let exact = permissions
        .remember(
            &bash,
            &Subject::command("git log -n 3 'a b'"),
            &Remember::exact(Scope::Session),
        )
        .unwrap();
    assert_eq!(exact[0].as_str(), "Bash(git log -n 3 'a b')");
    assert_eq!(verdict(&permissions, "git log -n 3 'a b'"), Verdict::Allow);
    assert_eq!(verdict(&permissions, "git log -n 4 'a b'"), Verdict::Ask);

    let not_covered = permissions.remember(
        &bash,
        &Subject::command("git log && rm x"),
        &Remember::prefix(Scope::Session, "git"),
    );
    assert!(matches!(not_covered, Err(RememberError::NotCovered { .. })));
    let hazard = permissions.remember(
        &bash,
        &Subject::command("echo $(id)"),
        &Remember::exact(Scope::Session),
    );
    assert!(matches!(hazard, Err(RememberError::NotRepresentable(_))));
    let no_scope = permissions.remember(
        &bash,
        &Subject::command("ls"),
        &Remember::exact(Scope::Project),
    );
    assert!(matches!(
        no_scope,
        Err(RememberError::NoScope(Scope::Project))
    ));

    let fetch = builtin::spec("WebFetch").unwrap();
    let domain = permissions
        .remember(
            &fetch,
            &Subject::url("https://Docs.rs/x"),
            &Remember::exact(Scope::Session),
        )
        .unwrap();
    assert_eq!(domain[0].as_str(), "WebFetch(domain:docs.rs)");
}

#[test]
fn remembering_a_path_records_the_resolved_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("real")).unwrap();
    std::fs::write(root.join("real/[draft].md"), "x").unwrap();
    std::os::unix::fs::symlink("real", root.join("alias")).unwrap();
    let permissions = Permissions::builder(context(&root)).build();
    let edit = builtin::spec("Edit").unwrap();
    let rules = permissions
        .remember(
            &edit,
            &Subject::path("alias/[draft].md"),
            &Remember::exact(Scope::Session),
        )
        .unwrap();
    assert!(rules[0].as_str().contains("/real/"), "{}", rules[0]);
    let check = |p: &str| permissions.check(&edit, &Subject::path(p)).verdict;
    assert_eq!(check("real/[draft].md"), Verdict::Allow);
    assert_eq!(check("real/d.md"), Verdict::Ask);
}

#[test]
fn bad_settings_files_are_load_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("settings.json");
    for (text, expect) in [
        (r#"{"permissions": {"allow": ["Bash(ls"]}}"#, "Bash(ls"),
        (r#"{"permissions": {"deny": [42]}}"#, "42"),
        (
            r#"{"permissions": {"allow": [{"rule": "Bash(ls:*)", "not_match": ["ls -la"]}]}}"#,
            "ls -la",
        ),
        (r#"{"permissions": {"defaultMode": "auto"}}"#, "auto"),
        ("[1, 2]", "object"),
        ("{", "JSON"),
    ] {
        std::fs::write(&file, text).unwrap();
        let err: LoadError = ScopeRules::load(&file, &context(dir.path())).unwrap_err();
        let message = err.to_string();
        assert!(message.contains(file.to_str().unwrap()), "{message}");
        assert!(message.contains(expect), "{message}");
    }
}
