//! A prompt the session store cannot write (it refuses writes) is not acknowledged: `POST
//! /agui` is answered 503 `run_store_unavailable` before any stream, and once the store takes
//! writes again the next run on the thread is answered.
//!
//! Timeouts here are hang detectors, not timing assertions.

use std::sync::Arc;
use std::time::Duration;

use mux_llm::testing::ScriptedClient;
use mux_orchestrator::session::SessionStore;
use mux_web::AguiRouter;
use serde_json::{Value, json};

/// A session store that refuses writes on demand.
#[path = "../../../mux-orchestrator/tests/support/refusing_store.rs"]
mod refusing_store;
use refusing_store::Refusing;

fn input(run: &str) -> Value {
    json!({"threadId": "p1", "runId": run,
        "messages": [{"id": format!("{run}-u"), "role": "user", "content": format!("say {run}")}]})
}

/// Posts a run; its status and body.
async fn post(http: &reqwest::Client, url: &str, run: &str) -> (u16, String) {
    crate::common::post_run(http, url, &input(run), Duration::from_secs(60)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_the_session_store_refuses_is_answered_503_before_any_stream() {
    let model = ScriptedClient::new().respond_with(|_| Ok(mux_llm::Response::from_text("Hi.")));
    let agent = mux_orchestrator::Agent::builder(model, "scripted")
        .build()
        .unwrap();
    let store = Arc::new(Refusing::new());
    let router = AguiRouter::new(agent)
        .session_store(Arc::clone(&store) as Arc<dyn SessionStore>)
        .build();
    let (url, server) = crate::common::serve(router).await;
    let http = reqwest::Client::new();

    let (status, body) = post(&http, &url, "r1").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("RUN_FINISHED"), "{body}");

    store.refuse(true);
    let (status, body) = post(&http, &url, "r2").await;
    assert_eq!(
        status, 503,
        "the prompt was acknowledged though not stored: {body}"
    );
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["error"], "run_store_unavailable", "{body}");

    // The store takes writes again: the next run is answered, and the refused prompt is not
    // in the thread.
    store.refuse(false);
    let mut tries = 0;
    loop {
        let (status, body) = post(&http, &url, &format!("r3-{tries}")).await;
        if status == 200 && body.contains("RUN_FINISHED") {
            break;
        }
        tries += 1;
        assert!(
            tries < 50,
            "the store is back but runs fail: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let session = store.load("p1").await.unwrap();
    let said = serde_json::to_string(&session.messages).unwrap();
    assert!(said.contains("say r1") && said.contains("say r3"), "{said}");
    assert!(
        !said.contains("say r2"),
        "the refused prompt was stored: {said}"
    );
    server.abort();
}
