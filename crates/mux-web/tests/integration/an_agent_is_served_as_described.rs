//! `AguiRouter::new(agent)`: threads are conversations of the agent, kept in the agent's
//! session store, with its instructions; a closure factory still works.

use std::sync::Arc;
use std::time::Duration;

use mux_llm::testing::ScriptedClient;
use mux_orchestrator::Agent;
use mux_orchestrator::session::{MemorySessionStore, SessionStore};
use mux_web::AguiRouter;
use serde_json::{Value, json};

async fn run_once(router: axum::Router, thread: &str) -> Vec<Value> {
    let listener = mux_web::bind(0).await.unwrap();
    let url = format!("http://{}/agui", listener.local_addr().unwrap());
    let server = tokio::spawn(mux_web::serve(listener, router));
    let body = json!({"threadId": thread, "runId": "r1",
        "messages": [{"id": "u1", "role": "user", "content": "hello"}]});
    let response = reqwest::Client::new()
        .post(url)
        .json(&body)
        .send()
        .await
        .unwrap();
    let text = tokio::time::timeout(Duration::from_secs(20), response.text())
        .await
        .expect("the stream did not end")
        .unwrap();
    server.abort();
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| serde_json::from_str(d.trim()).unwrap())
        .collect()
}

#[tokio::test]
async fn threads_are_kept_in_the_agents_store_with_its_instructions() {
    let store = Arc::new(MemorySessionStore::new());
    let model = ScriptedClient::new().reply_text("hi there");
    let agent = Agent::builder(model.clone(), "scripted")
        .instructions("Be brief.")
        .session_store(store.clone())
        .build()
        .unwrap();
    let events = run_once(AguiRouter::new(agent).build(), "thread-1").await;
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED", "{events:?}");
    let stored = store.load("thread-1").await.unwrap();
    assert_eq!(stored.messages.len(), 2, "the prompt and the answer");
    assert_eq!(model.requests()[0].system.as_deref(), Some("Be brief."));
}

#[tokio::test]
async fn a_closure_factory_still_opens_each_thread() {
    let agent = Agent::builder(
        ScriptedClient::new().reply_text("from a closure"),
        "scripted",
    )
    .build()
    .unwrap();
    let router = AguiRouter::new(move |tools| agent.conversation_with(tools)).build();
    let events = run_once(router, "thread-2").await;
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .filter_map(|e| e["delta"].as_str())
        .collect();
    assert_eq!(text, "from a closure");
}
