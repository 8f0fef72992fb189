//! The HTTP surface without a client library: status codes, typed bodies, auth, RUN_ERROR codes.

use std::time::Duration;

use mux_web::WebConfig;
use serde_json::{Value, json};

use crate::common::{self, events, events_of, input, types};

#[tokio::test]
async fn malformed_json_is_a_400_that_says_what_is_wrong() {
    let server = common::start(WebConfig::default()).await;
    let http = reqwest::Client::new();
    let response = http
        .post(format!("{}/agui", server.url))
        .header("content-type", "application/json")
        .body(r#"{"threadId": "t", "runId": "#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"], "bad_request");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .starts_with("malformed RunAgentInput: EOF"),
        "{body}"
    );

    let response = http
        .post(format!("{}/agui", server.url))
        .json(&json!({"threadId": "t", "runId": "r"}))
        .send()
        .await
        .unwrap();
    let body: Value = response.json().await.unwrap();
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("missing field `messages`"),
        "{body}"
    );
}

#[tokio::test]
async fn a_bearer_token_is_required_when_configured_and_never_echoed() {
    let server = common::start(WebConfig::default().bearer_token("s3cret-token")).await;
    let http = reqwest::Client::new();
    let url = format!("{}/agui", server.url);
    for header in [None, Some("Bearer wrong"), Some("s3cret-token")] {
        let mut request = http.post(&url).json(&input("t1", "r1", "hello"));
        if let Some(header) = header {
            request = request.header("authorization", header);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 401, "{header:?}");
        let body = response.text().await.unwrap();
        assert!(!body.contains("s3cret"), "{body}");
    }
    let response = http
        .post(&url)
        .bearer_auth("s3cret-token")
        .json(&input("t1", "r1", "hello"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    assert_eq!(types(&events(response).await).last(), Some(&"RUN_FINISHED"));
}

#[tokio::test]
async fn a_body_over_the_limit_is_refused() {
    let server = common::start(WebConfig::default().body_limit(1024)).await;
    let response = reqwest::Client::new()
        .post(format!("{}/agui", server.url))
        .json(&input("t", "r", &"x".repeat(4096)))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
}

#[tokio::test]
async fn a_second_run_on_a_busy_thread_is_a_409_with_a_typed_body() {
    let server = common::start(WebConfig::default()).await;
    let http = reqwest::Client::new();
    let url = format!("{}/agui", server.url);
    let first = http
        .post(&url)
        .json(&input("busy", "r1", "slow"))
        .send()
        .await
        .unwrap();
    assert_eq!(first.status(), 200);
    let second = http
        .post(&url)
        .json(&input("busy", "r2", "hello"))
        .send()
        .await
        .unwrap();
    assert_eq!(second.status(), 409);
    let body: Value = second.json().await.unwrap();
    assert_eq!(body["error"], "thread_busy");
    assert_eq!(body["runId"], "r1");
    assert_eq!(types(&events(first).await).last(), Some(&"RUN_FINISHED"));
    let reused = http
        .post(&url)
        .json(&input("busy", "r1", "hello"))
        .send()
        .await
        .unwrap();
    assert_eq!(reused.status(), 409);
    let body: Value = reused.json().await.unwrap();
    assert_eq!(body["error"], "run_exists");
}

#[tokio::test]
async fn unknown_and_already_answered_interrupts_are_run_errors() {
    let server = common::start(WebConfig::default()).await;
    let http = reqwest::Client::new();
    let url = format!("{}/agui", server.url);
    let mut unknown = input("t-int", "r0", "hello");
    unknown["resume"] =
        json!([{"interruptId": "nope", "status": "resolved", "payload": {"approved": true}}]);
    let run = events_of(http.post(&url).json(&unknown)).await;
    assert_eq!(types(&run), ["RUN_STARTED", "RUN_ERROR"]);
    assert_eq!(run[1]["code"], "unknown_interrupt");

    let paused = events_of(http.post(&url).json(&input("t-int", "r1", "run echo"))).await;
    let end = paused.last().unwrap();
    assert_eq!(end["outcome"]["type"], "interrupt", "{paused:?}");
    let id = end["outcome"]["interrupts"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let pending = http
        .post(&url)
        .json(&input("t-int", "r2", "hello"))
        .send()
        .await
        .unwrap();
    assert_eq!(pending.status(), 409);
    let body: Value = pending.json().await.unwrap();
    assert_eq!(body["error"], "interrupt_pending");
    assert_eq!(body["interruptIds"][0], id.as_str());

    let mut answer = input("t-int", "r3", "run echo");
    answer["resume"] =
        json!([{"interruptId": id, "status": "resolved", "payload": {"approved": true}}]);
    let resumed = events_of(http.post(&url).json(&answer)).await;
    assert_eq!(resumed.last().unwrap()["outcome"]["type"], "success");

    answer["runId"] = json!("r4");
    let again = events_of(http.post(&url).json(&answer)).await;
    assert_eq!(types(&again), ["RUN_STARTED", "RUN_ERROR"]);
    assert_eq!(again[1]["code"], "interrupt_already_answered");
}

#[tokio::test]
async fn an_approval_nobody_answers_expires_as_a_denial_that_says_so() {
    let config = WebConfig::default().interrupt_timeout(Duration::from_millis(300));
    let server = common::start(config).await;
    let http = reqwest::Client::new();
    let url = format!("{}/agui", server.url);
    let paused = events_of(http.post(&url).json(&input("t-exp", "r1", "run echo"))).await;
    let id = paused.last().unwrap()["outcome"]["interrupts"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    tokio::time::sleep(Duration::from_millis(600)).await;
    let mut late = input("t-exp", "r2", "run echo");
    late["resume"] =
        json!([{"interruptId": id, "status": "resolved", "payload": {"approved": true}}]);
    let response = http.post(&url).json(&late).send().await.unwrap();
    let run = events(response).await;
    // The paused run waited in the store (evicted, costing no memory); the late answer is
    // ignored: the call is denied as expired, and the loop goes on with the denial.
    let kinds = types(&run);
    assert_eq!(kinds.first().copied(), Some("RUN_STARTED"), "{kinds:?}");
    assert_eq!(run[1]["name"], "mux.interrupt_expired", "{run:?}");
    assert_eq!(run[1]["value"]["interruptIds"][0], json!(id));
    let tool = run
        .iter()
        .find(|e| e["type"] == "TOOL_CALL_RESULT")
        .unwrap_or_else(|| panic!("no tool result in {run:?}"));
    let content = tool["content"].as_str().unwrap();
    assert!(content.contains("the approval expired"), "{tool}");
    assert_eq!(run.last().unwrap()["outcome"]["type"], "success");
    let interrupt = &paused.last().unwrap()["outcome"]["interrupts"][0];
    assert!(
        interrupt["expiresAt"]
            .as_str()
            .is_some_and(|at| at.ends_with('Z')),
        "{interrupt}"
    );
}

#[tokio::test]
async fn a_reattach_to_an_unknown_run_is_a_404_and_a_missing_user_message_a_run_error() {
    let server = common::start(WebConfig::default()).await;
    let http = reqwest::Client::new();
    let response = http
        .get(format!("{}/agui/runs/nope/events", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"], "run_not_found");

    let run = events_of(
        http.post(format!("{}/agui", server.url))
            .json(&json!({"threadId": "t", "runId": "r", "messages": []})),
    )
    .await;
    assert_eq!(run[1]["code"], "no_user_message");
}

#[tokio::test]
async fn an_ask_user_question_is_an_input_interrupt_answered_by_resume() {
    let server = common::start(WebConfig::default()).await;
    let http = reqwest::Client::new();
    let url = format!("{}/agui", server.url);
    let paused = events_of(http.post(&url).json(&input("t-ask", "r1", "ask me"))).await;
    let interrupt = &paused.last().unwrap()["outcome"]["interrupts"][0];
    assert_eq!(interrupt["reason"], "input", "{paused:?}");
    assert_eq!(interrupt["message"], "Which color?");
    let mut answer = input("t-ask", "r2", "ask me");
    answer["resume"] = json!([{"interruptId": interrupt["id"], "status": "resolved", "payload": {"answer": "green"}}]);
    let run = events_of(http.post(&url).json(&answer)).await;
    let end = run.last().unwrap();
    assert_eq!(end["outcome"]["type"], "success", "{run:?}");
    assert_eq!(end["result"], "You said green");
}

#[tokio::test]
async fn the_todo_list_is_shared_state_a_snapshot_then_a_delta() {
    let server = common::start(WebConfig::default()).await;
    let run = events_of(
        reqwest::Client::new()
            .post(format!("{}/agui", server.url))
            .json(&input("t-todo", "r1", "plan")),
    )
    .await;
    let state: Vec<&Value> = run
        .iter()
        .filter(|e| e["type"].as_str().unwrap().starts_with("STATE_"))
        .collect();
    assert_eq!(state.len(), 2, "{run:?}");
    assert_eq!(state[0]["type"], "STATE_SNAPSHOT");
    assert_eq!(state[0]["snapshot"]["todos"][0]["status"], "in_progress");
    assert_eq!(state[1]["type"], "STATE_DELTA");
    assert_eq!(
        state[1]["delta"][0],
        json!({"op": "replace", "path": "/todos", "value": [{"content": "look", "status": "completed"}]})
    );
}

#[tokio::test]
async fn cors_answers_preflights_for_configured_origins_only() {
    let server = common::start(WebConfig::default().cors_origin("https://app.example")).await;
    let http = reqwest::Client::new();
    for (origin, allowed) in [
        ("https://app.example", true),
        ("https://evil.example", false),
    ] {
        let response = http
            .request(reqwest::Method::OPTIONS, format!("{}/agui", server.url))
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header("access-control-request-headers", "content-type")
            .send()
            .await
            .unwrap();
        let header = response.headers().get("access-control-allow-origin");
        assert_eq!(
            header.is_some(),
            allowed,
            "{origin}: {:?}",
            response.headers()
        );
    }
}

#[tokio::test]
async fn a_dropped_connection_cancels_the_run_only_when_configured() {
    for cancel in [false, true] {
        let server = common::start(WebConfig::default().cancel_on_disconnect(cancel)).await;
        let http = reqwest::Client::new();
        let thread = format!("t-drop-{cancel}");
        let response = http
            .post(format!("{}/agui", server.url))
            .json(&input(&thread, "r1", "slow"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        drop(response);
        tokio::time::sleep(Duration::from_millis(300)).await;
        let replay = events_of(http.get(format!("{}/agui/runs/r1/events", server.url))).await;
        let outcome = replay.last().unwrap()["outcome"]["type"].clone();
        let expected = if cancel { "cancelled" } else { "success" };
        assert_eq!(
            outcome, expected,
            "cancel_on_disconnect({cancel}): {replay:?}"
        );
    }
}

#[tokio::test]
async fn finished_runs_are_replayable_until_the_retention_passes() {
    let server =
        common::start(WebConfig::default().replay_retention(Duration::from_millis(200))).await;
    let http = reqwest::Client::new();
    let url = format!("{}/agui", server.url);
    let first = events_of(http.post(&url).json(&input("t-ret", "r1", "hello"))).await;
    let replay = |run: &'static str| {
        http.get(format!("{}/agui/runs/{run}/events", server.url))
            .send()
    };
    let again = events(replay("r1").await.unwrap()).await;
    assert_eq!(again, first, "a replay repeats the run's events exactly");
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Any new run sweeps what is past its retention.
    events_of(http.post(&url).json(&input("t-ret", "r2", "hello"))).await;
    assert_eq!(replay("r1").await.unwrap().status(), 404);
}
