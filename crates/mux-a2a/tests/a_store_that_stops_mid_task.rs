//! PostgreSQL stopped (`pg_ctl stop -m immediate`) while a task streams: the run store takes
//! none of the task's changes, and within the writer's bound the task ends `failed` with a
//! message naming the cause (no OS error, socket or path) on every stream that follows it
//! (`SendStreamingMessage`, `SubscribeToTask`); once PostgreSQL is back the store has that end,
//! and `GetTask` reads it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use mux_a2a::{A2aConfig, A2aServer};
use mux_llm::testing::ScriptedClient;
use mux_orchestrator::runs::{PostgresRunStore, RunStatus, RunStore as _};
use mux_orchestrator::session::PostgresSessionStore;
use mux_testkit::postgres::{OUTAGE_LEAKS, TestDatabase};
use serde_json::{Value, json};

mod support;

use support::{agent, client, rpc, user};

/// How long a stream may take to end before the test calls it hung: a hang detector far
/// above the writer's bound (10 s) and the outage; a task left `working` never ends (its
/// stream sends keep-alives only).
const HANG: Duration = Duration::from_secs(90);

/// Opens a stream of `method` with `params`.
async fn open(url: &str, method: &str, params: Value) -> reqwest::Response {
    let response = client()
        .post(url)
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}))
        .send()
        .await
        .unwrap();
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream"),
        "{response:?}"
    );
    response
}

/// Reads a stream's items until it ends, calling `seen` after each; panics when it has not
/// ended within [`HANG`].
async fn read_all(response: reqwest::Response, mut seen: impl FnMut(&Value)) -> Vec<Value> {
    let mut items = Vec::new();
    let mut buffer = String::new();
    let mut body = response.bytes_stream();
    let deadline = tokio::time::Instant::now() + HANG;
    loop {
        let chunk = tokio::time::timeout_at(deadline, body.next())
            .await
            .unwrap_or_else(|_| {
                let last = items.last().map(Value::to_string).unwrap_or_default();
                panic!(
                    "the stream hung after {} items; the last: {last}",
                    items.len()
                )
            });
        let Some(chunk) = chunk else { return items };
        buffer.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        while let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            for line in event.lines() {
                if let Some(data) = line.strip_prefix("data: ") {
                    let item: Value = serde_json::from_str(data).unwrap();
                    let result = item["result"].clone();
                    assert!(!result.is_null(), "an error on the stream: {item}");
                    seen(&result);
                    items.push(result);
                }
            }
        }
    }
}

/// Checks that a stream ended `failed`, naming the store, showing no OS text.
fn ends_failed_naming_the_store(what: &str, items: &[Value]) {
    let text = Value::Array(items.to_vec()).to_string();
    for leak in OUTAGE_LEAKS {
        assert!(!text.contains(leak), "{what}: `{leak}` shown: {text}");
    }
    let last = items.last().unwrap();
    let status = &last["statusUpdate"]["status"];
    assert_eq!(status["state"], "TASK_STATE_FAILED", "{what}: {last}");
    let said = status["message"]["parts"][0]["text"].as_str().unwrap();
    // The cause, in a client's words (`the store cannot be reached`, `the store failed`).
    assert!(
        said.contains("run store did not take") && said.contains("(the store "),
        "{what}: {said}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_stopped_mid_task_ends_it_failed_naming_the_cause() {
    let db = TestDatabase::new().await;
    let dir = tempfile::tempdir().unwrap();
    // A long answer, a word every 60 ms: the run outlasts the outage and the bound.
    let words = (0..700).map(|n| format!("w{n}")).collect::<Vec<_>>();
    let model = ScriptedClient::new()
        .reply_text(words.join(" "))
        .stream_words(Duration::from_millis(60));
    let runs = Arc::new(PostgresRunStore::connect(&db.url).await.unwrap());
    let server = A2aServer::new(agent(model, dir.path()))
        .config(A2aConfig::default())
        .session_store(Arc::new(
            PostgresSessionStore::connect(&db.url).await.unwrap(),
        ))
        .run_store(runs.clone())
        .serve(([127, 0, 0, 1], 0).into())
        .await
        .unwrap();
    let url = server.rpc_url();

    let streamed = open(&url, "SendStreamingMessage", user("talk", None)).await;
    let (id_tx, id_rx) = tokio::sync::oneshot::channel();
    let streamed = tokio::spawn(async move {
        let mut id_tx = Some(id_tx);
        read_all(streamed, |item| {
            if let Some(tx) = id_tx.take() {
                tx.send(item["task"]["id"].as_str().unwrap().to_owned())
                    .unwrap();
            }
        })
        .await
    });
    let task_id = id_rx.await.unwrap();
    let subscribed = open(&url, "SubscribeToTask", json!({"id": task_id})).await;
    // Stopped once the answer is streaming, for longer than the bound.
    let mut outage = None;
    let items = read_all(subscribed, |item| {
        if outage.is_none() && item.get("artifactUpdate").is_some() {
            outage = Some(tokio::task::block_in_place(|| {
                db.outage(Duration::from_secs(25))
            }));
        }
    })
    .await;
    let outage = outage.expect("the task streamed no answer");
    ends_failed_naming_the_store("SubscribeToTask", &items);
    let items = streamed.await.unwrap();
    ends_failed_naming_the_store("SendStreamingMessage", &items);

    // PostgreSQL back: the store has the task's end, and GetTask reads it.
    tokio::task::spawn_blocking(move || outage.join().unwrap())
        .await
        .unwrap();
    let run_id = format!("a2a.{task_id}");
    let back = Instant::now();
    loop {
        match runs.get(&run_id).await {
            Ok(record) if record.status == RunStatus::Failed => break,
            other => assert!(
                back.elapsed() < Duration::from_secs(60),
                "the task's end was not stored once PostgreSQL was back: {other:?}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let got = rpc(&server, "GetTask", json!({"id": task_id})).await;
    let status = &got["result"]["status"];
    assert_eq!(status["state"], "TASK_STATE_FAILED", "{got}");
    let said = status["message"]["parts"][0]["text"].as_str().unwrap();
    assert!(said.contains("run store"), "{got}");
    server.shutdown().await;
}
