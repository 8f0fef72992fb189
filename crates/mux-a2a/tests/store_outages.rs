//! A PostgreSQL outage (`pg_ctl stop -m immediate`) under the A2A server: a request that needs
//! the store is answered with JSON-RPC -32000 `UNAVAILABLE` and a `google.rpc.RetryInfo`
//! hint, no error shows an OS error, a socket or a path, and once PostgreSQL is back the next
//! message is answered.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use mux_a2a::{A2aConfig, A2aServer};
use mux_llm::testing::ScriptedClient;
use mux_orchestrator::runs::PostgresRunStore;
use mux_orchestrator::session::PostgresSessionStore;
use mux_testkit::postgres::{OUTAGE_LEAKS, TestDatabase};
use serde_json::{Value, json};

mod support;

use support::{agent, client, user};

/// One JSON-RPC call (id 7); the parsed answer. The client's timeout is a hang detector.
async fn rpc(url: &str, method: &str, params: Value) -> Value {
    client()
        .post(url)
        .header("A2A-Version", "1.0")
        .timeout(Duration::from_secs(20))
        .json(&json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}))
        .send()
        .await
        .expect("the server answers")
        .json()
        .await
        .unwrap()
}

fn message_on(context: &str, text: &str) -> Value {
    let mut params = user(text, None);
    params["message"]["contextId"] = json!(context);
    params["message"]["messageId"] = json!(format!("m-{text}"));
    params
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_outage_is_unavailable_with_a_retry_hint_and_then_passes() {
    let db = TestDatabase::new().await;
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedClient::new().respond_with(|_| Ok(mux_llm::Response::from_text("Hello.")));
    let server = A2aServer::new(agent(model, dir.path()))
        .config(A2aConfig::default())
        .session_store(Arc::new(
            PostgresSessionStore::connect(&db.url).await.unwrap(),
        ))
        .run_store(Arc::new(PostgresRunStore::connect(&db.url).await.unwrap()))
        .serve(([127, 0, 0, 1], 0).into())
        .await
        .unwrap();
    let url = server.rpc_url();
    let sent = rpc(&url, "SendMessage", user("hi", None)).await;
    let task = sent["result"]["task"].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    let context = task["contextId"].as_str().unwrap().to_owned();
    let task_id = task["id"].as_str().unwrap().to_owned();

    let restart = db.outage(Duration::from_secs(12));
    let down = [
        (
            "a message on a known context",
            "SendMessage",
            message_on(&context, "again"),
        ),
        ("a task", "GetTask", json!({"id": task_id})),
        (
            "the tasks of a context",
            "ListTasks",
            json!({"contextId": context}),
        ),
    ];
    for (what, method, params) in down {
        let answer = rpc(&url, method, params).await;
        let text = answer.to_string();
        for leak in OUTAGE_LEAKS {
            assert!(!text.contains(leak), "{what}: `{leak}` shown: {text}");
        }
        assert_eq!(answer["error"]["code"], -32000, "{what}: {answer}");
        support::assert_unavailable_with_retry(&answer);
    }
    restart.join().unwrap();

    let back = Instant::now();
    loop {
        let answer = rpc(&url, "SendMessage", message_on(&context, "after")).await;
        if answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED" {
            break;
        }
        assert!(!answer.to_string().contains("os error"), "{answer}");
        assert!(
            back.elapsed() < Duration::from_secs(30),
            "the store came back but messages still fail: {answer}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    server.shutdown().await;
}
