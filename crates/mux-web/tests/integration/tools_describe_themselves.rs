//! An application's own tools show on the web face as the built-in ones do, over HTTP and
//! SSE: the kind as `mux.tool_kind`, the diff as `mux.tool_presentation`, the todo list as the
//! `todos` state.

use mux_web::WebConfig;
use serde_json::{Value, json};

use crate::common::{self, events, input};

fn custom<'a>(events: &'a [Value], name: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["type"] == "CUSTOM" && e["name"] == name)
        .map(|e| &e["value"])
        .collect()
}

#[tokio::test]
async fn an_application_edit_tool_shows_its_kind_then_its_diff() {
    let server = common::start(WebConfig::default()).await;
    let http = reqwest::Client::new();
    let url = format!("{}/agui", server.url);
    let paused = events(
        http.post(&url)
            .json(&input("t-note", "r1", "save note"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    // The kind is known while the call waits for approval.
    let kinds = custom(&paused, "mux.tool_kind");
    assert_eq!(kinds.len(), 1, "{paused:?}");
    assert_eq!(kinds[0]["kind"], "edit");
    let call_id = kinds[0]["toolCallId"].clone();
    let interrupt = &paused.last().unwrap()["outcome"]["interrupts"][0];
    assert_eq!(interrupt["toolCallId"], call_id, "{interrupt}");
    // The diff the call would make is shown before the person answers.
    let previews = custom(&paused, "mux.tool_preview");
    assert_eq!(previews.len(), 1, "{paused:?}");
    assert_eq!(previews[0]["toolCallId"], call_id);
    assert_eq!(previews[0]["diffs"][0]["oldText"], "buy milk\n");
    assert_eq!(previews[0]["diffs"][0]["newText"], "buy milk\nbuy bread\n");

    let mut approve = input("t-note", "r2", "save note");
    approve["resume"] = json!([{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": true}}]);
    let run = events(http.post(&url).json(&approve).send().await.unwrap()).await;
    let result_at = run
        .iter()
        .position(|e| e["type"] == "TOOL_CALL_RESULT")
        .expect("a result");
    let shown = &run[result_at + 1];
    assert_eq!(shown["name"], "mux.tool_presentation", "{run:?}");
    assert_eq!(
        shown["value"],
        json!({
            "toolCallId": call_id,
            "locations": [{"path": "notes/todo.md", "line": 1}],
            "diffs": [{
                "path": "notes/todo.md",
                "oldText": "buy milk\n",
                "newText": "buy milk\nbuy bread\n",
                "line": 1
            }]
        })
    );
    assert_eq!(run.last().unwrap()["result"], "Result: saved");
}

#[tokio::test]
async fn an_application_todo_tool_drives_the_shared_state() {
    let server = common::start(WebConfig::default()).await;
    let run = events(
        reqwest::Client::new()
            .post(format!("{}/agui", server.url))
            .json(&input("t-steps", "r1", "plan steps"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(custom(&run, "mux.tool_kind")[0]["kind"], "think");
    let state: Vec<&Value> = run
        .iter()
        .filter(|e| e["type"] == "STATE_SNAPSHOT")
        .collect();
    assert_eq!(state.len(), 1, "{run:?}");
    assert_eq!(
        state[0]["snapshot"],
        json!({"todos": [
            {"content": "Read", "status": "in_progress", "priority": "high"},
            {"content": "Write", "status": "pending", "priority": "low"}
        ]})
    );
}
