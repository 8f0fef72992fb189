//! `builtin_tools()` with a permission policy: the `bash` tool runs under the policy's
//! declared OS sandbox, the same value that lets the policy skip the prompt.

use crate::common::*;

use mux_orchestrator::Agent;
use mux_permission::{PathContext, Permissions};
use mux_tool::builtin::SandboxPolicy;
use serde_json::json;

fn agent(root: &std::path::Path, wall: Option<SandboxPolicy>, command: &str) -> Agent {
    let model = scripted()
        .reply_tool_call("c1", "bash", json!({ "command": command }))
        .reply(text("done"));
    let builder = Permissions::builder(PathContext::with_home(root, None));
    let permissions = match wall {
        Some(policy) => builder.bash_wall(policy),
        None => builder,
    }
    .build();
    Agent::builder(model, "m")
        .builtin_tools()
        .permissions(permissions)
        .root(root)
        .build()
        .unwrap()
}

#[tokio::test]
async fn the_declared_wall_both_skips_the_prompt_and_bounds_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // Declared WorkspaceWrite: no one to ask, yet the command runs, and writes in the root.
    let summary = agent(root, Some(SandboxPolicy::WorkspaceWrite), "echo a > a.txt")
        .run("go")
        .await
        .unwrap();
    assert!(summary.unapproved.is_empty(), "{:?}", summary.unapproved);
    assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "a\n");
    // Declared ReadOnly: it runs unasked too, and the same value made the tool read-only.
    let summary = agent(root, Some(SandboxPolicy::ReadOnly), "echo b > b.txt")
        .run("go")
        .await
        .unwrap();
    assert!(summary.unapproved.is_empty(), "{:?}", summary.unapproved);
    assert!(!root.join("b.txt").exists());
    // No wall declared: the command asks, and with no face it does not run.
    let summary = agent(root, None, "echo c > c.txt").run("go").await.unwrap();
    assert_eq!(summary.unapproved.len(), 1);
    assert!(!root.join("c.txt").exists());
}
