//! Every built-in tool × every mode × (allow rule, deny rule, no rule) × (family name, mux
//! name), checked through each tool's own `subject`, as one table snapshotted with insta; and
//! the settings file from the permission-seam issue, row by row.

use std::fmt::Write as _;
use std::sync::Arc;

use mux_permission::{Mode, PathContext, Permissions, RuleSet, Scope, ScopeRules, Verdict};
use mux_tool::Tool;
use mux_tool::builtin::{self, Sandbox};
use serde_json::{Value, json};

/// A call to each built-in tool that touches the `secrets` folder (or, for the shell and
/// fetch, what their rules name), with the rule specifier and family it is checked against.
fn calls() -> Vec<(&'static str, Value, &'static str, &'static str)> {
    vec![
        (
            "read_file",
            json!({"path": "secrets/key"}),
            "Read",
            "./secrets/**",
        ),
        (
            "list_dir",
            json!({"path": "secrets"}),
            "Read",
            "./secrets/**",
        ),
        (
            "glob",
            json!({"pattern": "*", "path": "secrets"}),
            "Read",
            "./secrets/**",
        ),
        (
            "grep",
            json!({"pattern": "k", "path": "secrets"}),
            "Read",
            "./secrets/**",
        ),
        (
            "write_file",
            json!({"path": "secrets/key", "content": "x"}),
            "Edit",
            "./secrets/**",
        ),
        (
            "edit_file",
            json!({"path": "secrets/key", "old_string": "a", "new_string": "b"}),
            "Write",
            "./secrets/**",
        ),
        ("bash", json!({"command": "rm -rf secrets"}), "Bash", "rm:*"),
        (
            "web_fetch",
            json!({"url": "https://example.com/x"}),
            "WebFetch",
            "domain:example.com",
        ),
        ("todo_write", json!({"todos": []}), "todo_write", ""),
    ]
}

fn tools(root: &std::path::Path) -> Vec<Arc<dyn Tool>> {
    builtin::tools(&Sandbox::new(root).unwrap()).unwrap()
}

fn verdict(permissions: &Permissions, tool: &dyn Tool, input: &Value) -> Verdict {
    permissions.check(tool.spec(), &tool.subject(input)).verdict
}

fn policy(root: &std::path::Path, mode: Mode, kind: &str, rule: &str) -> Permissions {
    let rules = match kind {
        "allow" => RuleSet::new().with_allow(rule).unwrap(),
        "deny" => RuleSet::new().with_deny(rule).unwrap(),
        _ => RuleSet::new(),
    };
    Permissions::builder(PathContext::with_home(root, None))
        .scope(Scope::Project, ScopeRules::new(rules.with_mode(mode)))
        .build()
}

#[test]
fn every_builtin_tool_every_mode_every_rule_form() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("secrets")).unwrap();
    std::fs::write(root.join("secrets/key"), "a").unwrap();
    let tools = tools(&root);
    let mut table = String::new();
    let modes = Mode::ALL;
    let _ = write!(table, "{:<11} {:<5} {:<30}", "tool", "kind", "rule");
    for mode in modes {
        let _ = write!(table, " {:<17}", mode.as_str());
    }
    table.truncate(table.trim_end().len());
    table.push('\n');
    let mut cells = 0;
    for (name, input, family, spec) in calls() {
        let tool = tools
            .iter()
            .find(|t| t.spec().name.as_str() == name)
            .unwrap_or_else(|| panic!("no built-in tool `{name}`"));
        let with_spec = |tool_part: &str| {
            if spec.is_empty() {
                tool_part.to_owned()
            } else {
                format!("{tool_part}({spec})")
            }
        };
        // The mux name is a sibling's where the tool has one: a deny rule on `read_file`
        // reaches `grep`, an allow rule on it does not.
        let mux_name = match (family, name) {
            ("Read", "read_file") => "grep",
            ("Read", _) => "read_file",
            ("Edit" | "Write", "write_file") => "edit_file",
            ("Edit" | "Write", _) => "write_file",
            _ => name,
        };
        let mut rows = vec![("none", String::new())];
        for kind in ["allow", "deny"] {
            rows.push((kind, with_spec(family)));
            if family != mux_name {
                rows.push((kind, with_spec(mux_name)));
            }
        }
        for (kind, rule) in rows {
            let _ = write!(table, "{name:<11} {kind:<5} {rule:<30}");
            for mode in modes {
                let permissions = policy(&root, mode, kind, &rule);
                let _ = write!(
                    table,
                    " {:<17}",
                    verdict(&permissions, tool.as_ref(), &input).as_str()
                );
                cells += 1;
            }
            table.truncate(table.trim_end().len());
            table.push('\n');
        }
    }
    let _ = writeln!(table, "{cells} verdicts");
    insta::assert_snapshot!(table);
}

/// The settings file of the permission-seam issue: `Bash(git status)` allowed, `Bash(rm:*)`,
/// `Read(./secrets/**)` and `Edit(./secrets/**)` denied, checked against mux's own tools.
#[test]
fn a_claude_code_settings_file_reaches_muxs_own_tools() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("secrets")).unwrap();
    std::fs::write(root.join("secrets/key"), "k").unwrap();
    let tools = tools(&root);
    let tool = |name: &str| {
        tools
            .iter()
            .find(|t| t.spec().name.as_str() == name)
            .unwrap()
            .clone()
    };
    let rows: [(&str, &str, Value, Verdict); 9] = [
        (
            "bypassPermissions",
            "bash",
            json!({"command": "rm -rf secrets"}),
            Verdict::Deny,
        ),
        (
            "plan",
            "read_file",
            json!({"path": "secrets/key"}),
            Verdict::Deny,
        ),
        (
            "plan",
            "grep",
            json!({"pattern": "k", "path": "secrets"}),
            Verdict::Deny,
        ),
        (
            "bypassPermissions",
            "grep",
            json!({"pattern": "k", "path": "secrets"}),
            Verdict::Deny,
        ),
        (
            "acceptEdits",
            "write_file",
            json!({"path": "secrets/key", "content": "x"}),
            Verdict::Deny,
        ),
        (
            "acceptEdits",
            "edit_file",
            json!({"path": "secrets/key", "old_string": "k", "new_string": "x"}),
            Verdict::Deny,
        ),
        (
            "default",
            "bash",
            json!({"command": "git status"}),
            Verdict::Allow,
        ),
        (
            "bypassPermissions",
            "glob",
            json!({"pattern": "**", "path": "secrets"}),
            Verdict::Deny,
        ),
        (
            "plan",
            "list_dir",
            json!({"path": "secrets"}),
            Verdict::Deny,
        ),
    ];
    for (mode, name, input, expected) in rows {
        let file = dir.path().join(format!("settings-{mode}.json"));
        let settings = json!({"permissions": {
            "defaultMode": mode,
            "allow": ["Bash(git status)"],
            "deny": ["Bash(rm:*)", "Read(./secrets/**)", "Edit(./secrets/**)"],
        }});
        std::fs::write(&file, settings.to_string()).unwrap();
        let context = PathContext::with_home(&root, None);
        let permissions = Permissions::builder(context.clone())
            .scope(Scope::Project, ScopeRules::load(&file, &context).unwrap())
            .build();
        let got = verdict(&permissions, tool(name).as_ref(), &input);
        assert_eq!(got, expected, "{mode} {name} {input}");
    }
}

#[test]
fn a_typo_in_a_rule_is_reported_when_the_file_loads() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("settings.json");
    std::fs::write(&file, r#"{"permissions":{"deny":["Bsh(rm:*)"]}}"#).unwrap();
    let context = PathContext::with_home(dir.path(), None);
    let err = ScopeRules::load(&file, &context).unwrap_err().to_string();
    assert!(
        err.contains("`Bsh`") && err.contains("did you mean `Bash`"),
        "{err}"
    );
    // An application's own tool is accepted once named.
    std::fs::write(&file, r#"{"permissions":{"allow":["deploy"]}}"#).unwrap();
    assert!(ScopeRules::load(&file, &context).is_err());
    assert!(ScopeRules::load_for_tools(&file, &context, &["deploy"]).is_ok());
}

/// An application's tool joins a family through what it declares: a read-only tool with a
/// path subject is reached by `Read(…)`, a command tool by `Bash(…)`.
#[test]
fn an_applications_tool_joins_a_family_by_what_it_declares() {
    use mux_tool::{Subject, ToolAnnotations, ToolSpec};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let rules = RuleSet::new()
        .with_deny("Read(./secrets/**)")
        .unwrap()
        .with_deny("Bash(rm:*)")
        .unwrap()
        .with_mode(Mode::Bypass);
    let permissions = Permissions::builder(PathContext::with_home(&root, None))
        .scope(Scope::Project, ScopeRules::new(rules))
        .build();
    let schema = json!({"type": "object"});
    let viewer = ToolSpec::new("view_document", "Shows a document", schema.clone())
        .unwrap()
        .with_annotations(ToolAnnotations::read_only());
    let runner = ToolSpec::new("mcp__ops__run", "Runs a command", schema).unwrap();
    let check = |spec: &ToolSpec, subject: Subject| permissions.check(spec, &subject).verdict;
    assert_eq!(
        check(&viewer, Subject::path("secrets/plan.pdf")),
        Verdict::Deny
    );
    assert_eq!(
        check(&viewer, Subject::path("docs/plan.pdf")),
        Verdict::Allow
    );
    assert_eq!(
        check(&runner, Subject::command("rm -rf /tmp/x")),
        Verdict::Deny
    );
    assert_eq!(check(&runner, Subject::command("ls")), Verdict::Allow);
}
