//! The files that govern the agent cannot be edited in any mode without a rule naming them,
//! and plan mode is the safest mode: reads outside the root and unallowed fetches ask.

use mux_permission::{Mode, PathContext, Permissions, RuleSet, Scope, ScopeRules, Verdict};
use mux_tool::Tool;
use mux_tool::builtin::{self, Sandbox};
use serde_json::json;

const ASK: Verdict = Verdict::Ask;
const ALLOW: Verdict = Verdict::Allow;
const DENY: Verdict = Verdict::Deny;

#[test]
fn protected_paths_and_plan_mode() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("project");
    let home = base.join("home");
    for sub in [".git/hooks", ".claude", ".mux", "src"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
    }
    std::fs::create_dir_all(&home).unwrap();
    let settings = root.join(".config-perms.json");
    std::fs::write(&settings, r#"{"permissions":{"allow":["Edit(./src/**)"]}}"#).unwrap();
    let tools = builtin::tools(&Sandbox::new(&root).unwrap()).unwrap();
    let tool = |name: &str| {
        tools
            .iter()
            .find(|t| t.spec().name.as_str() == name)
            .unwrap()
    };
    let context = PathContext::with_home(&root, Some(home.clone()));
    let bashrc = home.join(".bashrc").display().to_string();
    let outside = base.join("elsewhere.txt").display().to_string();
    let settings_path = settings.display().to_string();

    // (mode, extra allow rule, tool, path, expected)
    let rows: Vec<(Mode, Option<&str>, &str, &str, Verdict)> = vec![
        (
            Mode::Bypass,
            None,
            "write_file",
            ".git/hooks/pre-commit",
            ASK,
        ),
        (
            Mode::AcceptEdits,
            None,
            "write_file",
            ".git/hooks/pre-commit",
            ASK,
        ),
        (
            Mode::DontAsk,
            None,
            "write_file",
            ".git/hooks/pre-commit",
            DENY,
        ),
        (Mode::Default, None, "edit_file", ".git/config", ASK),
        (
            Mode::Bypass,
            None,
            "write_file",
            ".claude/settings.json",
            ASK,
        ),
        (Mode::Bypass, None, "write_file", ".mux/agent.toml", ASK),
        (Mode::AcceptEdits, None, "write_file", ".envrc", ASK),
        (Mode::Bypass, None, "write_file", &bashrc, ASK),
        (Mode::Bypass, None, "edit_file", &settings_path, ASK),
        (
            Mode::Bypass,
            Some("Edit(./**)"),
            "write_file",
            ".git/hooks/pre-commit",
            ASK,
        ),
        (
            Mode::Default,
            Some("Edit(./.git/hooks/**)"),
            "write_file",
            ".git/hooks/pre-commit",
            ALLOW,
        ),
        // The red team's attack: an MCP server planted through `.mcp.json`.
        (Mode::AcceptEdits, None, "write_file", ".mcp.json", ASK),
        (Mode::Bypass, None, "write_file", ".mcp.json", ASK),
        (Mode::Bypass, None, "edit_file", ".MCP.json", ASK),
        (
            Mode::Bypass,
            Some("Edit(./**)"),
            "write_file",
            ".mcp.json",
            ASK,
        ),
        (
            Mode::Default,
            Some("Edit(./.mcp.json)"),
            "write_file",
            ".mcp.json",
            ALLOW,
        ),
        // Nested: another repository's config, an editor's tasks, anywhere in the tree.
        (
            Mode::AcceptEdits,
            None,
            "write_file",
            "evil/.git/config",
            ASK,
        ),
        (Mode::Bypass, None, "write_file", "sub/.git/config", ASK),
        (
            Mode::Bypass,
            None,
            "write_file",
            "sub/.vscode/settings.json",
            ASK,
        ),
        (
            Mode::AcceptEdits,
            None,
            "write_file",
            "a/b/.vscode/tasks.json",
            ASK,
        ),
        (Mode::Bypass, None, "write_file", ".idea/workspace.xml", ASK),
        (Mode::Bypass, None, "write_file", ".husky/pre-commit", ASK),
        (Mode::AcceptEdits, None, "write_file", ".gitconfig", ASK),
        (Mode::AcceptEdits, None, "write_file", ".gitmodules", ASK),
        (Mode::Bypass, None, "write_file", "sub/.zshrc", ASK),
        (Mode::Bypass, None, "write_file", ".claude.json", ASK),
        // Names that only look alike stay ordinary files.
        (
            Mode::AcceptEdits,
            None,
            "write_file",
            ".github/workflows/ci.yml",
            ALLOW,
        ),
        (Mode::AcceptEdits, None, "write_file", ".gitignore", ALLOW),
        (Mode::AcceptEdits, None, "write_file", "src/new.rs", ALLOW),
        (Mode::Bypass, None, "write_file", "src/new.rs", ALLOW),
        // Reading the protected files is not an edit.
        (Mode::Bypass, None, "read_file", ".git/config", ALLOW),
        // Plan mode.
        (Mode::Plan, None, "read_file", "src/main.rs", ALLOW),
        (Mode::Plan, None, "read_file", &outside, ASK),
        (Mode::Plan, None, "read_file", "/etc/passwd", ASK),
        (Mode::Plan, None, "grep", "/etc", ASK),
        (Mode::Plan, None, "write_file", "src/new.rs", DENY),
    ];
    let mut failures = Vec::new();
    for (mode, extra, name, path, expected) in &rows {
        let mut rules = RuleSet::new().with_mode(*mode);
        if let Some(rule) = extra {
            rules = rules.with_allow(rule).unwrap();
        }
        let permissions = Permissions::builder(context.clone())
            .scope(
                Scope::Project,
                ScopeRules::load(&settings, &context).unwrap(),
            )
            .scope(Scope::Session, ScopeRules::new(rules))
            .build();
        let input = match *name {
            "grep" => json!({"pattern": "x", "path": path}),
            "edit_file" => json!({"path": path, "old_string": "a", "new_string": "b"}),
            "write_file" => json!({"path": path, "content": "x"}),
            _ => json!({"path": path}),
        };
        let t = tool(name);
        let decision = permissions.check(t.spec(), &t.subject(&input));
        if decision.verdict != *expected {
            failures.push(format!(
                "{name} {path} [{mode}, {extra:?}]: expected {expected}, got {} ({})",
                decision.verdict, decision.reason
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}
