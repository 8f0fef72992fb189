//! The gate in front of mux-tool's own built-in tools (`bash`, `read_file`, `write_file`):
//! their subjects get the same shell- and path-aware matching as the names in the issue.

use mux_permission::{PathContext, PermissionGate, Permissions, RuleSet, Scope, ScopeRules};
use mux_tool::builtin::{self, Sandbox};
use mux_tool::{CallScope, Executor, Registry, ToolCall};
use serde_json::{Value, json};

async fn run(executor: &Executor, tool: &str, input: Value) -> (bool, String) {
    let outcome = executor
        .execute(ToolCall::new("1", tool, input), &CallScope::default())
        .await;
    (outcome.is_error(), outcome.output().to_text())
}

/// mux's built-in tools in `root`, behind a gate over `rules` with no one to ask.
fn gated_executor(root: &std::path::Path, rules: RuleSet) -> Executor {
    let permissions = Permissions::builder(PathContext::with_home(root, None))
        .scope(Scope::Project, ScopeRules::new(rules))
        .build();
    let registry = Registry::new();
    builtin::register(&registry, &Sandbox::new(root).unwrap()).unwrap();
    Executor::builder(registry)
        .gate(PermissionGate::without_asker(permissions))
        .build()
}

#[tokio::test]
async fn builtin_tools_are_gated_by_their_subjects() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join("secrets")).unwrap();
    std::fs::write(root.join("src/lib.rs"), "pub fn f() {}\n").unwrap();
    std::fs::write(root.join("secrets/key"), "hunter2\n").unwrap();
    std::os::unix::fs::symlink("../secrets", root.join("src/escape")).unwrap();

    let rules = RuleSet::new()
        .with_allow("bash(echo:*)")
        .unwrap()
        .with_allow("read_file(./src/**)")
        .unwrap()
        .with_deny("bash(rm:*)")
        .unwrap()
        .with_deny("read_file(./secrets/**)")
        .unwrap();
    let executor = gated_executor(&root, rules);

    let (is_error, text) = run(&executor, "bash", json!({"command": "echo gated"})).await;
    assert!(!is_error && text.contains("gated"), "{text}");

    let (is_error, text) = run(
        &executor,
        "bash",
        json!({"command": "echo hi; rm secrets/key"}),
    )
    .await;
    assert!(is_error && text.contains("bash(rm:*)"), "{text}");
    assert!(root.join("secrets/key").exists());

    let (is_error, text) = run(&executor, "read_file", json!({"path": "src/lib.rs"})).await;
    assert!(!is_error && text.contains("pub fn f"), "{text}");

    // Through a symlink out of src into secrets: the deny rule sees the resolved path.
    let (is_error, text) = run(&executor, "read_file", json!({"path": "src/escape/key"})).await;
    assert!(
        is_error && text.contains("read_file(./secrets/**)"),
        "{text}"
    );
    assert!(!text.contains("hunter2"));

    // Unmatched: nobody to ask, so refused, and the file is not written.
    let (is_error, _) = run(
        &executor,
        "write_file",
        json!({"path": "src/new.rs", "content": "x"}),
    )
    .await;
    assert!(is_error);
    assert!(!root.join("src/new.rs").exists());
}

/// A search over a tree that holds denied files runs, leaves them out, and says so; a search
/// rooted in the denied folder is refused.
#[tokio::test]
async fn searches_withhold_what_read_rules_deny() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join("secrets")).unwrap();
    std::fs::write(root.join("src/lib.rs"), "token = public\n").unwrap();
    std::fs::write(root.join("secrets/key"), "token = hunter2\n").unwrap();
    std::fs::write(root.join(".env"), "token = dotenv\n").unwrap();
    let rules = RuleSet::new()
        .with_deny("Read(./secrets/**)")
        .unwrap()
        .with_deny("Read(.env)")
        .unwrap()
        .with_mode(mux_permission::Mode::Bypass);
    let executor = gated_executor(&root, rules);

    let (is_error, text) = run(&executor, "grep", json!({"pattern": "token"})).await;
    assert!(!is_error, "{text}");
    assert!(text.contains("src/lib.rs:1:token = public"), "{text}");
    assert!(
        !text.contains("hunter2") && !text.contains("dotenv"),
        "{text}"
    );
    assert!(text.contains("2 paths withheld"), "{text}");

    let (is_error, text) = run(&executor, "glob", json!({"pattern": "**/*"})).await;
    assert!(!is_error, "{text}");
    assert!(
        text.contains("src/lib.rs") && !text.contains("secrets/key"),
        "{text}"
    );
    assert!(
        !text.contains(".env") || text.contains("withheld"),
        "{text}"
    );

    let (is_error, text) = run(&executor, "list_dir", json!({"path": "."})).await;
    assert!(!is_error && text.contains("src/"), "{text}");
    assert!(text.contains("withheld"), "{text}");

    let (is_error, text) = run(
        &executor,
        "grep",
        json!({"pattern": "token", "path": "secrets"}),
    )
    .await;
    assert!(is_error && text.contains("Read(./secrets/**)"), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
}
