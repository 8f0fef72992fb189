//! Real web_agent processes on one PostgreSQL (a throw-away server from mux-testkit): a run
//! paused on A survives A's SIGKILL and is answered on B; B replays it and serves the whole
//! history. And the same on one SQLite file.

use std::time::Duration;

use mux_testkit::postgres::TestDatabase;
use serde_json::{Value, json};

use crate::common::Example;

fn runtime() -> tokio::runtime::Runtime {
    // reqwest's TLS needs a provider, though these requests are plain HTTP.
    let _ = rustls::crypto::ring::default_provider().install_default();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The data of each SSE event of `response` (the stream must end within 30 s).
async fn events(response: reqwest::Response) -> Vec<(Option<u64>, Value)> {
    assert_eq!(response.status(), 200, "{:?}", response.headers());
    let body = tokio::time::timeout(Duration::from_secs(30), response.text())
        .await
        .expect("the stream did not end")
        .unwrap();
    let mut id = None;
    let mut out = Vec::new();
    for line in body.lines() {
        if let Some(value) = line.strip_prefix("id:") {
            id = value.trim().parse().ok();
        } else if let Some(data) = line.strip_prefix("data:") {
            out.push((id.take(), serde_json::from_str(data.trim()).unwrap()));
        }
    }
    out
}

async fn post(http: &reqwest::Client, server: &Example, body: Value) -> reqwest::Response {
    http.post(format!("{}/agui", server.url))
        .json(&body)
        .send()
        .await
        .unwrap()
}

fn prompt(thread: &str, run: &str, text: &str) -> Value {
    json!({"threadId": thread, "runId": run,
           "messages": [{"id": format!("{run}-u"), "role": "user", "content": text}]})
}

fn approve(thread: &str, run: &str, interrupt: &str) -> Value {
    json!({"threadId": thread, "runId": run, "messages": [],
           "resume": [{"interruptId": interrupt, "status": "resolved", "payload": {"approved": true}}]})
}

fn interrupt_of(events: &[(Option<u64>, Value)]) -> String {
    let last = &events.last().expect("no events").1;
    assert_eq!(last["outcome"]["type"], "interrupt", "{events:?}");
    last["outcome"]["interrupts"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Pauses a run on `a` (the offline model asks to run a command), kills `a` with SIGKILL,
/// answers on `b`, and checks the command ran once and the history is whole on `b`.
async fn pause_kill_answer(a: &mut Example, b: &Example) {
    let http = reqwest::Client::new();
    let paused = events(
        post(
            &http,
            a,
            prompt(
                "t-kill",
                "r1",
                "call bash {\"command\": \"echo durable-ok\"}",
            ),
        )
        .await,
    )
    .await;
    let interrupt = interrupt_of(&paused);
    let ids: Vec<u64> = paused.iter().map(|(id, _)| id.unwrap()).collect();
    assert_eq!(ids, (1..=paused.len() as u64).collect::<Vec<_>>());
    a.child.kill().unwrap(); // SIGKILL
    a.child.wait().unwrap();

    let resumed = events(post(&http, b, approve("t-kill", "r2", &interrupt)).await).await;
    let last = &resumed.last().unwrap().1;
    assert_eq!(last["type"], "RUN_FINISHED", "{resumed:?}");
    assert_eq!(last["outcome"]["type"], "success", "{last}");
    let result = resumed
        .iter()
        .find(|(_, e)| e["type"] == "TOOL_CALL_RESULT")
        .unwrap_or_else(|| panic!("no tool result: {resumed:?}"));
    assert!(
        result.1["content"].as_str().unwrap().contains("durable-ok"),
        "{result:?}"
    );
    // The paused run replays on B, from the store, with A's event ids.
    let replay = events(
        http.get(format!("{}/agui/runs/r1/events", b.url))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(replay, paused);
    let history: Value = http
        .get(format!("{}/agui/threads/t-kill/messages", b.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let roles: Vec<&str> = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant", "tool", "assistant"],
        "{history}"
    );
    assert_eq!(history["interrupts"], json!([]));
}

#[test]
fn a_run_paused_on_a_killed_process_is_answered_on_another_on_postgres() {
    let rt = runtime();
    let db = rt.block_on(TestDatabase::new());
    let args = [
        "--no-token",
        "--database-url",
        db.url.as_str(),
        "--lease-ms",
        "1000",
        "--model-delay-ms",
        "2",
    ];
    let mut a = Example::start(&args);
    let b = Example::start(&args);
    rt.block_on(pause_kill_answer(&mut a, &b));
}

#[test]
fn a_run_paused_on_a_killed_process_is_answered_on_another_on_sqlite() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("web.db").display());
    let args = ["--no-token", "--database-url", url.as_str()];
    let mut a = Example::start(&args);
    let b = Example::start(&args);
    // Two processes on one file; A is gone before B answers.
    rt.block_on(pause_kill_answer(&mut a, &b));
}
