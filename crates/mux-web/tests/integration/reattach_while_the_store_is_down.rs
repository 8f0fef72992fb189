//! Reattaching to a run read from the run store (`GET /agui/runs/{id}/events` on a process
//! that does not run it) while PostgreSQL is stopped (`pg_ctl stop -m immediate`): an open
//! stream ends with `RUN_ERROR` code `run_store` naming the cause, within the bound; a reattach
//! while the store is down is answered 503 `run_store_unavailable` before any stream; once
//! PostgreSQL is back, a reattach reads the run to its end.
//!
//! Timeouts here are hang detectors, not timing assertions.

use std::sync::Arc;
use std::time::Duration;

use mux_llm::{ContentBlock, Request, Response, StopReason};
use mux_orchestrator::Agent;
use mux_orchestrator::runs::PostgresRunStore;
use mux_orchestrator::session::PostgresSessionStore;
use mux_testkit::postgres::TestDatabase;
use mux_web::AguiRouter;
use serde_json::{Value, json};

/// How long a stream may take to end, or a request to be answered, while the store is down:
/// a hang detector far above the bound the server keeps (10 s).
const HANG: Duration = Duration::from_secs(90);
/// How long PostgreSQL stays down: far longer than the bound (10 s), so that a stream that
/// ends within the bound ends while it is down.
const DOWN: Duration = Duration::from_secs(40);
/// What a client must never be shown.
const LEAKS: [&str; 6] = [
    "os error",
    "Broken pipe",
    "No such file",
    ".s.PGSQL",
    "/tmp",
    "mux-pg-",
];

/// The agent: a prompt `slow` ticks 80 times (250 ms each), any other is answered at once.
fn agent() -> Agent {
    crate::common::tick_agent(respond)
}

fn respond(request: &Request) -> Result<Response, mux_llm::LlmError> {
    let (prompt, since) = crate::common::latest_prompt(&request.messages);
    let results = crate::common::tool_result_count(since);
    if prompt == "slow" && results < 80 {
        let call = ContentBlock::tool_use(format!("call_{results}"), "tick", json!({}));
        return Ok(Response::new(vec![call], StopReason::ToolUse));
    }
    Ok(Response::new(
        vec![ContentBlock::text("Done.")],
        StopReason::EndTurn,
    ))
}

/// Serves a router on the shared stores; its URL.
async fn serve(db: &TestDatabase) -> String {
    let router = AguiRouter::new(agent())
        .session_store(Arc::new(
            PostgresSessionStore::connect(&db.url).await.unwrap(),
        ))
        .run_store(Arc::new(PostgresRunStore::connect(&db.url).await.unwrap()))
        .build();
    let listener = mux_web::bind(0).await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(mux_web::serve(listener, router));
    url
}

/// The events of an SSE text.
fn events(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| serde_json::from_str(d.trim()).unwrap())
        .collect()
}

/// Reads `response` to its end, calling `seen` with the text so far after each chunk;
/// panics when it has not ended within [`HANG`].
async fn read_to_end(mut response: reqwest::Response, mut seen: impl FnMut(&str)) -> Vec<Value> {
    let mut text = String::new();
    let read = async {
        while let Some(chunk) = response.chunk().await.unwrap() {
            text.push_str(&String::from_utf8_lossy(&chunk));
            seen(&text);
        }
    };
    tokio::time::timeout(HANG, read)
        .await
        .unwrap_or_else(|_| panic!("the stream did not end while PostgreSQL was down: {text}"));
    events(&text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reattached_stream_ends_with_a_run_error_while_postgres_is_down() {
    let db = TestDatabase::new().await;
    let runner = serve(&db).await;
    let reader = serve(&db).await;
    let http = reqwest::Client::new();

    let input = json!({"threadId": "t1", "runId": "r1",
        "messages": [{"id": "u1", "role": "user", "content": "slow"}]});
    let mut running = http
        .post(format!("{runner}/agui"))
        .json(&input)
        .send()
        .await
        .unwrap();
    assert_eq!(running.status(), 200);
    // The run is under way, and stored: the other process reads it from the store.
    let mut seen = String::new();
    while !seen.contains("TOOL_CALL_RESULT") {
        let chunk = tokio::time::timeout(HANG, running.chunk())
            .await
            .unwrap()
            .unwrap()
            .expect("the run ended before its first tool result");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    let running = tokio::spawn(read_to_end(running, |_| {}));
    let reattached = http
        .get(format!("{reader}/agui/runs/r1/events"))
        .send()
        .await
        .unwrap();
    assert_eq!(reattached.status(), 200);
    let mut outage = None;
    let read = read_to_end(reattached, |text| {
        if outage.is_none() && text.contains("RUN_STARTED") {
            outage = Some(tokio::task::block_in_place(|| db.outage(DOWN)));
        }
    })
    .await;
    let outage = outage.expect("the reattached stream showed no RUN_STARTED");
    // It ended while the store was down, not once it was back with the run's end.
    assert!(
        !outage.is_finished(),
        "the reattached stream ended only once PostgreSQL was back: {read:?}"
    );
    let last = read.last().unwrap();
    assert_eq!(last["type"], "RUN_ERROR", "{read:?}");
    assert_eq!(last["code"], "run_store", "{last}");
    let message = last["message"].as_str().unwrap();
    assert!(message.contains("run store"), "{last}");
    for leak in LEAKS {
        assert!(!message.contains(leak), "`{leak}` shown: {last}");
    }

    // While it is down, a reattach is refused before any stream.
    let refused = tokio::time::timeout(
        HANG,
        http.get(format!("{reader}/agui/runs/r1/events")).send(),
    )
    .await
    .expect("a reattach while PostgreSQL is down was not answered")
    .unwrap();
    assert_eq!(refused.status(), 503);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"], "run_store_unavailable", "{body}");

    // The run's own stream ended too.
    let ran = running.await.unwrap();
    assert_eq!(ran.last().unwrap()["type"], "RUN_ERROR", "{ran:?}");

    // Back: a reattach reads the run to its stored end.
    tokio::task::spawn_blocking(move || outage.join().unwrap())
        .await
        .unwrap();
    let back = std::time::Instant::now();
    loop {
        let answer = http
            .get(format!("{reader}/agui/runs/r1/events"))
            .send()
            .await
            .unwrap();
        if answer.status() == 200 {
            let read = read_to_end(answer, |_| {}).await;
            let last = read.last().unwrap();
            // The store answers again: the run's stored end, the error its runner showed.
            if !last["message"]
                .as_str()
                .is_some_and(|m| m.contains("could not be read"))
            {
                assert_eq!(last["type"], "RUN_ERROR", "{read:?}");
                assert!(
                    last["message"].as_str().unwrap().contains("did not take"),
                    "{last}"
                );
                break;
            }
        }
        assert!(
            back.elapsed() < HANG,
            "PostgreSQL is back but the run cannot be read"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
