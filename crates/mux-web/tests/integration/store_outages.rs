//! A store outage (PostgreSQL stopped with `pg_ctl stop -m immediate`) is answered 503
//! `run_store_unavailable` with `Retry-After` on every request path (a prompt on a known
//! thread and on a new one, a resume, the history, a cancel), no body shows an OS error, a
//! socket or a path, and once PostgreSQL is back the next request succeeds.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mux_llm::testing::ScriptedClient;
use mux_orchestrator::Agent;
use mux_orchestrator::runs::PostgresRunStore;
use mux_orchestrator::session::PostgresSessionStore;
use mux_testkit::postgres::{OUTAGE_LEAKS, TestDatabase};
use mux_web::AguiRouter;
use serde_json::{Value, json};

use crate::common::{events, input, types};

fn assert_no_leak(what: &str, body: &str) {
    for leak in OUTAGE_LEAKS {
        assert!(
            !body.contains(leak),
            "{what}: `{leak}` shown to the client: {body}"
        );
    }
}

/// One request; its status, `Retry-After` and body (text). The client's own timeout is a
/// hang detector.
async fn send(request: reqwest::RequestBuilder) -> (u16, Option<String>, String) {
    let response = request
        .timeout(Duration::from_secs(20))
        .send()
        .await
        .expect("the server answers");
    let status = response.status().as_u16();
    let retry = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    let body = response.text().await.unwrap_or_default();
    (status, retry, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_outage_is_503_with_a_retry_hint_on_every_path_and_then_passes() {
    let db = TestDatabase::new().await;
    let sessions = PostgresSessionStore::connect(&db.url).await.unwrap();
    let runs = PostgresRunStore::connect(&db.url).await.unwrap();
    let model = ScriptedClient::new().respond_with(|_| Ok(mux_llm::Response::from_text("Hello.")));
    let agent = Agent::builder(model, "scripted").build().unwrap();
    let router = AguiRouter::new(agent)
        .session_store(Arc::new(sessions))
        .run_store(Arc::new(runs))
        .build();
    let listener = mux_web::bind(0).await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(mux_web::serve(listener, router));
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let post = |body: Value| http.post(format!("{url}/agui")).json(&body);

    let first = events(post(input("t", "r1", "hello")).send().await.unwrap()).await;
    assert_eq!(types(&first).last(), Some(&"RUN_FINISHED"), "{first:?}");

    // Down long enough for every request below (each store call gives up within seconds).
    let restart = db.outage(Duration::from_secs(12));
    let mut resume = input("t", "r4", "answer");
    resume["resume"] =
        json!([{"interruptId": "i-none", "status": "resolved", "payload": {"approved": true}}]);
    let down: [(&str, reqwest::RequestBuilder); 5] = [
        (
            "a prompt on a known thread",
            post(input("t", "r2", "again")),
        ),
        (
            "a prompt on a new thread",
            post(input("t-new", "r3", "new")),
        ),
        ("a resume", post(resume)),
        (
            "the history",
            http.get(format!("{url}/agui/threads/t/messages")),
        ),
        (
            "a cancel",
            http.post(format!("{url}/agui/runs/r-unknown/cancel"))
                .json(&json!({})),
        ),
    ];
    for (what, request) in down {
        let (status, retry, body) = send(request).await;
        assert_no_leak(what, &body);
        assert_eq!(status, 503, "{what}: {body}");
        let retry = retry.unwrap_or_else(|| panic!("{what}: no Retry-After"));
        assert!(retry.parse::<u64>().is_ok_and(|s| s > 0), "{retry}");
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["error"], "run_store_unavailable", "{what}: {body}");
    }
    restart.join().unwrap();

    // Back: the next requests pass (the pools reconnect on their own).
    let back = Instant::now();
    loop {
        let (status, _, body) = send(http.get(format!("{url}/agui/threads/t/messages"))).await;
        if status == 200 {
            assert!(body.contains("Hello."), "{body}");
            break;
        }
        assert_no_leak("the history, coming back", &body);
        assert!(
            back.elapsed() < Duration::from_secs(30),
            "the store came back but requests still fail: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let after = events(post(input("t", "r5", "after")).send().await.unwrap()).await;
    assert_eq!(types(&after).last(), Some(&"RUN_FINISHED"), "{after:?}");
    server.abort();
}
