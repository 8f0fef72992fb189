//! Two servers on one run store and one session store (as two processes on one database
//! would be), over real HTTP: a task paused on one is got, listed and answered on the other,
//! a paused task is cancelled from the other, ListTasks filters and pages over both servers'
//! tasks, and a task whose server stopped mid-command is taken over by the other without
//! running the command again.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use mux_a2a::{A2aConfig, A2aServer, Running};
use mux_llm::testing::ScriptedClient;
use mux_orchestrator::runs::{MemoryRunStore, RunStore};
use mux_orchestrator::session::{MemorySessionStore, SessionStore};
use serde_json::{Value, json};

mod support;

use support::{agent, rpc, user};

struct Stores {
    sessions: Arc<dyn SessionStore>,
    runs: Arc<dyn RunStore>,
}

impl Stores {
    fn new() -> Self {
        Self {
            sessions: Arc::new(MemorySessionStore::new()),
            runs: Arc::new(MemoryRunStore::new()),
        }
    }

    async fn serve(&self, model: ScriptedClient, root: &std::path::Path) -> Running {
        self.serve_with(model, root, A2aConfig::default()).await
    }

    async fn serve_with(
        &self,
        model: ScriptedClient,
        root: &std::path::Path,
        config: A2aConfig,
    ) -> Running {
        A2aServer::new(agent(model, root))
            .config(config)
            .session_store(Arc::clone(&self.sessions))
            .run_store(Arc::clone(&self.runs))
            .serve(([127, 0, 0, 1], 0).into())
            .await
            .unwrap()
    }
}

fn state(task: &Value) -> &str {
    task["status"]["state"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn a_task_paused_on_one_server_is_got_listed_answered_and_cancelled_on_the_other() {
    let dir = tempfile::tempdir().unwrap();
    let stores = Stores::new();
    let a = stores
        .serve(
            ScriptedClient::new()
                .reply_tool_call("c1", "bash", json!({"command": "echo one >> log.txt"}))
                .reply_tool_call("c2", "bash", json!({"command": "echo two >> log.txt"})),
            dir.path(),
        )
        .await;
    // B continues what A started: its model answers after the approved call.
    let b = stores
        .serve(ScriptedClient::new().reply_text("Done."), dir.path())
        .await;

    let sent = rpc(&a, "SendMessage", user("write", None)).await;
    let task = &sent["result"]["task"];
    assert_eq!(state(task), "TASK_STATE_INPUT_REQUIRED", "{sent}");
    let id = task["id"].as_str().unwrap().to_owned();

    let got = rpc(&b, "GetTask", json!({"id": id})).await;
    assert_eq!(state(&got["result"]), "TASK_STATE_INPUT_REQUIRED", "{got}");
    assert_eq!(
        got["result"]["status"]["message"]["parts"][1]["data"]["approval"]["callId"],
        "c1"
    );
    let listed = rpc(
        &b,
        "ListTasks",
        json!({"status": "TASK_STATE_INPUT_REQUIRED"}),
    )
    .await;
    assert_eq!(listed["result"]["totalSize"], 1, "{listed}");

    let unclear = rpc(&b, "SendMessage", user("perhaps", Some(&id))).await;
    assert_eq!(unclear["error"]["code"], -32602, "{unclear}");
    let answered = rpc(&b, "SendMessage", user("approve", Some(&id))).await;
    let done = &answered["result"]["task"];
    assert_eq!(state(done), "TASK_STATE_COMPLETED", "{answered}");
    assert_eq!(done["artifacts"][0]["parts"][0]["text"], "Done.");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("log.txt")).unwrap(),
        "one\n"
    );
    let history: Vec<&str> = done["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["parts"][0]["text"].as_str())
        .collect();
    assert_eq!(history, ["write", "approve", "Done."], "{done}");
    // Seen the same from A; a second answer is refused on both.
    let from_a = rpc(&a, "GetTask", json!({"id": id})).await;
    assert_eq!(state(&from_a["result"]), "TASK_STATE_COMPLETED", "{from_a}");
    for server in [&a, &b] {
        let again = rpc(server, "SendMessage", user("approve", Some(&id))).await;
        assert_eq!(again["error"]["code"], -32004, "{again}");
    }

    // Paused on A, cancelled from B; the call never runs.
    let second = rpc(&a, "SendMessage", user("again", None)).await;
    let second_id = second["result"]["task"]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        state(&second["result"]["task"]),
        "TASK_STATE_INPUT_REQUIRED"
    );
    let cancelled = rpc(&b, "CancelTask", json!({"id": second_id})).await;
    assert_eq!(
        state(&cancelled["result"]),
        "TASK_STATE_CANCELED",
        "{cancelled}"
    );
    let twice = rpc(&a, "CancelTask", json!({"id": second_id})).await;
    assert_eq!(twice["error"]["code"], -32002, "{twice}");
    let late = rpc(&a, "SendMessage", user("approve", Some(&second_id))).await;
    assert_eq!(late["error"]["code"], -32004, "{late}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("log.txt")).unwrap(),
        "one\n"
    );

    // Filters and pages over both servers' tasks.
    let all = rpc(&a, "ListTasks", json!({"pageSize": 1, "historyLength": 0})).await;
    assert_eq!(all["result"]["totalSize"], 2, "{all}");
    assert_eq!(
        all["result"]["tasks"][0]["id"],
        second_id.as_str(),
        "newest first"
    );
    assert!(
        all["result"]["tasks"][0]["history"]
            .as_array()
            .is_none_or(Vec::is_empty)
    );
    let token = all["result"]["nextPageToken"].as_str().unwrap();
    let next = rpc(&b, "ListTasks", json!({"pageSize": 1, "pageToken": token})).await;
    assert_eq!(next["result"]["tasks"][0]["id"], id.as_str(), "{next}");
    assert_eq!(next["result"]["nextPageToken"], "");
    let context = rpc(&b, "ListTasks", json!({"contextId": done["contextId"]})).await;
    assert_eq!(context["result"]["totalSize"], 1, "{context}");
    let later = rpc(
        &b,
        "ListTasks",
        json!({"statusTimestampAfter": done["status"]["timestamp"]}),
    )
    .await;
    assert_eq!(later["result"]["totalSize"], 1, "{later}");
    assert_eq!(later["result"]["tasks"][0]["id"], second_id.as_str());
    for bad in [
        json!({"pageToken": "nonsense"}),
        json!({"pageSize": 101}),
        json!({"statusTimestampAfter": "yesterday"}),
    ] {
        let refused = rpc(&b, "ListTasks", bad.clone()).await;
        assert_eq!(refused["error"]["code"], -32602, "{bad}: {refused}");
    }
    let missing = rpc(&b, "GetTask", json!({"id": "x".repeat(10_000)})).await;
    assert_eq!(missing["error"]["code"], -32001, "{missing}");
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test]
async fn a_task_whose_server_stopped_mid_command_is_taken_over_without_a_second_run() {
    let dir = tempfile::tempdir().unwrap();
    let stores = Stores::new();
    let config = || A2aConfig::default().lease(std::time::Duration::from_millis(300));
    let a = stores
        .serve_with(
            ScriptedClient::new().reply_tool_call(
                "c1",
                "bash",
                json!({"command": "echo ran >> ran.txt && sleep 20"}),
            ),
            dir.path(),
            config(),
        )
        .await;
    let b = stores
        .serve_with(
            ScriptedClient::new().reply_text("Recovered."),
            dir.path(),
            config(),
        )
        .await;
    let sent = rpc(&a, "SendMessage", user("run", None)).await;
    let id = sent["result"]["task"]["id"].as_str().unwrap().to_owned();
    let mut approve = user("approve", Some(&id));
    approve["configuration"] = json!({"returnImmediately": true});
    let running = rpc(&a, "SendMessage", approve).await;
    assert_eq!(
        state(&running["result"]["task"]),
        "TASK_STATE_WORKING",
        "{running}"
    );
    let ran = dir.path().join("ran.txt");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    // Its line written, not only its file made: `>>` creates the file before echo writes.
    while std::fs::read_to_string(&ran).unwrap_or_default() != "ran\n" {
        assert!(
            std::time::Instant::now() < deadline,
            "the command never ran"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    // A stops where it is, as a process that ends; B takes the task over after the lease.
    a.shutdown().await;
    let done = loop {
        let got = rpc(&b, "GetTask", json!({"id": id})).await;
        let now = state(&got["result"]).to_owned();
        if now == "TASK_STATE_COMPLETED" || now == "TASK_STATE_FAILED" {
            break got["result"].clone();
        }
        assert!(std::time::Instant::now() < deadline, "still {now}: {got}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(state(&done), "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(
        done["artifacts"][0]["parts"][0]["text"], "Recovered.",
        "{done}"
    );
    assert_eq!(std::fs::read_to_string(&ran).unwrap(), "ran\n", "ran twice");
    b.shutdown().await;
}

#[tokio::test]
async fn a_question_asked_on_one_server_is_answered_on_the_other_after_it_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let stores = Stores::new();
    let a = stores
        .serve(
            ScriptedClient::new().reply_tool_call(
                "q1",
                "ask_user",
                json!({"question": "Which color?"}),
            ),
            dir.path(),
        )
        .await;
    let model_b = ScriptedClient::new().reply_text("You picked blue.");
    let b = stores.serve(model_b.clone(), dir.path()).await;

    let sent = rpc(&a, "SendMessage", user("pick a color", None)).await;
    let task = &sent["result"]["task"];
    assert_eq!(state(task), "TASK_STATE_INPUT_REQUIRED", "{sent}");
    let id = task["id"].as_str().unwrap().to_owned();
    // The question is stored, not held: A can go.
    a.shutdown().await;

    let got = rpc(&b, "GetTask", json!({"id": id})).await;
    assert_eq!(state(&got["result"]), "TASK_STATE_INPUT_REQUIRED", "{got}");
    let answered = rpc(&b, "SendMessage", user("blue", Some(&id))).await;
    let done = &answered["result"]["task"];
    assert_eq!(state(done), "TASK_STATE_COMPLETED", "{answered}");
    assert_eq!(done["artifacts"][0]["parts"][0]["text"], "You picked blue.");
    // The rebuilt loop asked again under the same call id and got the answer given: the
    // model read it as the question's result, and the client was not asked twice.
    let sent_to_model = format!("{:?}", model_b.requests()[0].messages.last().unwrap());
    assert!(sent_to_model.contains("q1"), "{sent_to_model}");
    assert!(sent_to_model.contains("blue"), "{sent_to_model}");
    let again = rpc(&b, "SendMessage", user("red", Some(&id))).await;
    assert_eq!(again["error"]["code"], -32004, "{again}");
    b.shutdown().await;
}
