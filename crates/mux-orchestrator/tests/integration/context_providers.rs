//! Context providers in the loop: project instructions, the todo list `todo_write` keeps, and
//! a skills list reach every request's system content.
#![cfg(feature = "builtin")]

use crate::common;

use common::*;
use mux_orchestrator::OrchestratorConfig;
use mux_orchestrator::context::{ProjectInstructions, SkillsList, TodoContext};
use mux_tool::Resources;
use mux_tool::builtin::TodoWrite;
use serde_json::json;

#[tokio::test]
async fn providers_reach_the_system_content_of_every_turn() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("AGENTS.md"), "Run cargo fmt.").unwrap();
    let model = scripted()
        .reply(tool_calls(&[(
            "c1",
            "todo_write",
            json!({"todos": [
                {"content": "Read the code", "status": "in_progress"},
                {"content": "Fix the bug", "status": "pending"}
            ]}),
        )]))
        .reply(tool_calls(&[(
            "c2",
            "todo_write",
            json!({"todos": [
                {"content": "Read the code", "status": "completed"},
                {"content": "Fix the bug", "status": "in_progress"}
            ]}),
        )]))
        .reply(text("done"))
        .reply(text("next run"));
    let tools = registry();
    tools.register_typed(TodoWrite).unwrap();
    let resources = Resources::new();
    let agent = loop_agent(
        model.clone(),
        OrchestratorConfig::new("m").system_prompt("Be brief."),
    )
    .tools(tools.list())
    .resources(resources.clone())
    .context(ProjectInstructions::new(dir.path()))
    .context(TodoContext::from_resources(&resources))
    .context(SkillsList::new().skill("pdf", "read PDFs"))
    .conversation();
    agent.run_to_completion("fix it").await.unwrap();
    agent.run_to_completion("and then?").await.unwrap();

    let systems: Vec<String> = model
        .requests()
        .iter()
        .map(|r| r.system.clone().unwrap_or_default())
        .collect();
    assert_eq!(systems.len(), 4);
    for system in &systems {
        assert!(system.starts_with("Be brief.\n\n"), "{system}");
        assert!(
            system.contains("Project instructions from AGENTS.md:\nRun cargo fmt."),
            "{system}"
        );
        assert!(
            system.ends_with("Skills you can use:\n- pdf: read PDFs"),
            "{system}"
        );
    }
    // The todo list appears once written, and follows each update, across runs.
    assert!(!systems[0].contains("Todo list"), "{}", systems[0]);
    assert!(
        systems[1].contains("Todo list (0/2 completed):\n[>] Read the code\n[ ] Fix the bug"),
        "{}",
        systems[1]
    );
    for later in &systems[2..] {
        assert!(
            later.contains("Todo list (1/2 completed):\n[x] Read the code\n[>] Fix the bug"),
            "{later}"
        );
    }
}
