//! An application's own tools show on the ACP face as the built-in ones do: the kind from
//! their annotations, the diff and the plan from their output's presentation.

use mux_acp::AcpAgent;
use mux_llm::testing::ScriptedClient;
use mux_orchestrator::Agent;
use serde_json::{Value, json};

use crate::harness::{Peer, for_call};

use crate::tools::{PlanSteps, SaveNote};

fn agent(model: ScriptedClient) -> AcpAgent {
    let notes = SaveNote::default();
    notes
        .notes
        .lock()
        .unwrap()
        .insert("todo.md".into(), "buy milk\n".into());
    let agent = Agent::builder(model, "scripted")
        .tool(notes)
        .tool(PlanSteps)
        .configure(|config| config.max_iterations(4))
        .build()
        .unwrap();
    AcpAgent::new(agent)
}

#[tokio::test]
async fn an_application_edit_tool_shows_its_kind_and_its_diff() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedClient::new()
        .reply_tool_call(
            "n1",
            "save_note",
            json!({"name": "todo.md", "text": "buy milk\nbuy bread\n"}),
        )
        .reply_text("Saved.");
    let mut peer = Peer::start(agent(model));
    peer.initialize().await;
    let session = peer.new_session(dir.path()).await;
    let (done, notes) = peer.prompt(&session, "add bread").await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");

    let call = for_call(&notes, "n1");
    let note = dir.path().join("notes/todo.md").display().to_string();
    assert_eq!(call[0]["sessionUpdate"], "tool_call");
    assert_eq!(call[0]["kind"], "edit");
    assert_eq!(call[0]["title"], "save_note: notes/todo.md");
    assert_eq!(call[0]["locations"][0]["path"], note);
    // The permission request says the same kind, and shows the diff before the answer.
    let asked = &peer.asked[0]["params"]["toolCall"];
    assert_eq!(asked["kind"], "edit");
    let diff = json!({
        "type": "diff",
        "path": note,
        "oldText": "buy milk\n",
        "newText": "buy milk\nbuy bread\n"
    });
    assert!(
        asked["content"].as_array().unwrap().contains(&diff),
        "the request shows the diff: {asked}"
    );

    let last = call.last().unwrap();
    assert_eq!(last["status"], "completed");
    assert_eq!(
        last["content"],
        json!([{
            "type": "diff",
            "path": note,
            "oldText": "buy milk\n",
            "newText": "buy milk\nbuy bread\n"
        }])
    );
    assert_eq!(last["locations"], json!([{"path": note, "line": 1}]));
}

#[tokio::test]
async fn an_application_todo_tool_drives_the_plan() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedClient::new()
        .reply_tool_call("p1", "plan_steps", json!({"steps": ["Read", "Write"]}))
        .reply_text("Planned.");
    let mut peer = Peer::start(agent(model));
    peer.initialize().await;
    let session = peer.new_session(dir.path()).await;
    let (_, notes) = peer.prompt(&session, "plan").await;
    assert_eq!(for_call(&notes, "p1")[0]["kind"], "think");
    let plans: Vec<&Value> = notes
        .iter()
        .map(|n| &n["params"]["update"])
        .filter(|u| u["sessionUpdate"] == "plan")
        .collect();
    assert_eq!(plans.len(), 1, "{notes:?}");
    assert_eq!(
        plans[0]["entries"],
        json!([
            {"content": "Read", "priority": "high", "status": "in_progress"},
            {"content": "Write", "priority": "low", "status": "pending"}
        ])
    );
}
