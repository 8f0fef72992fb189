//! A SQLite file another process holds locked (`BEGIN EXCLUSIVE` in python3) when a run is
//! asked for: the request is answered 503 `run_store_unavailable` (the run could not begin)
//! while the lock is still held, within the bound the server keeps, not after SQLite's own
//! busy timeout; once the lock is let go, the next run on the thread succeeds.
//!
//! Timeouts here are hang detectors, not timing assertions.

use std::sync::Arc;
use std::time::Duration;

use mux_llm::testing::ScriptedClient;
use mux_orchestrator::runs::SqliteRunStore;
use mux_orchestrator::session::SqliteSessionStore;
use mux_web::AguiRouter;
use serde_json::{Value, json};

/// How long the lock is held: well past the bound (10 s), so that an answer within the bound
/// comes while it is held, and well short of SQLite's busy timeout before the fix (30 s),
/// which outwaited the lock and ran.
const HELD_SECS: &str = "20";
/// A hang detector for one request.
const HANG: Duration = Duration::from_secs(90);

fn input(run: &str) -> Value {
    json!({"threadId": "k1", "runId": run,
        "messages": [{"id": format!("{run}-u"), "role": "user", "content": "hello"}]})
}

/// Posts a run; its status and body (the SSE text, or the error).
async fn post(http: &reqwest::Client, url: &str, run: &str) -> (u16, String) {
    crate::common::post_run(http, url, &input(run), HANG).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_locked_before_a_run_is_answered_503_while_the_lock_is_held() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mux.db");
    let model = ScriptedClient::new().respond_with(|_| Ok(mux_llm::Response::from_text("Hi.")));
    let agent = mux_orchestrator::Agent::builder(model, "scripted")
        .build()
        .unwrap();
    let router = AguiRouter::new(agent)
        .session_store(Arc::new(SqliteSessionStore::open(&path).await.unwrap()))
        .run_store(Arc::new(SqliteRunStore::open(&path).await.unwrap()))
        .build();
    let (url, server) = crate::common::serve(router).await;
    let http = reqwest::Client::new();

    // The thread exists, with a run that ended.
    let (status, body) = post(&http, &url, "r1").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("RUN_FINISHED"), "{body}");

    let mut holder = crate::common::hold_sqlite_lock(&path, HELD_SECS);

    let (status, body) = post(&http, &url, "r2").await;
    let still_held = holder.try_wait().unwrap().is_none();
    assert_eq!(status, 503, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["error"], "run_store_unavailable", "{body}");
    assert!(
        !body.to_string().contains("os error") && !body.to_string().contains("mux.db"),
        "{body}"
    );
    assert!(
        still_held,
        "the answer came only once the lock was let go: {body}"
    );

    // The lock is let go (the holder ended early): the next run succeeds.
    holder.kill().unwrap();
    holder.wait().unwrap();
    let (status, body) = post(&http, &url, "r3").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("RUN_FINISHED"), "{body}");
    server.abort();
}
