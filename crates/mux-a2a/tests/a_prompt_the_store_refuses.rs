//! A prompt the session store cannot write (it refuses writes) is not acknowledged: a message
//! on a known context is answered JSON-RPC -32000 `UNAVAILABLE` with a retry hint, and once
//! the store takes writes again the next message is answered.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use mux_a2a::{A2aConfig, A2aServer};
use mux_llm::testing::ScriptedClient;
use mux_orchestrator::session::SessionStore;
use serde_json::json;

mod support;

use support::{agent, rpc, user};

/// A session store that refuses writes on demand.
#[path = "../../mux-orchestrator/tests/support/refusing_store.rs"]
mod refusing_store;
use refusing_store::Refusing;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_the_session_store_refuses_is_answered_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedClient::new().respond_with(|_| Ok(mux_llm::Response::from_text("Hi.")));
    let store = Arc::new(Refusing::new());
    let server = A2aServer::new(agent(model, dir.path()))
        .config(A2aConfig::default())
        .session_store(Arc::clone(&store) as Arc<dyn SessionStore>)
        .serve(([127, 0, 0, 1], 0).into())
        .await
        .unwrap();
    let sent = rpc(&server, "SendMessage", user("hi", None)).await;
    let task = &sent["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    let context = task["contextId"].as_str().unwrap().to_owned();
    let on_context = |text: &str| {
        let mut params = user(text, None);
        params["message"]["contextId"] = json!(context);
        params
    };

    store.refuse(true);
    for method in ["SendMessage", "SendStreamingMessage"] {
        let answer = tokio::time::timeout(
            Duration::from_secs(60),
            rpc(&server, method, on_context(&format!("refused {method}"))),
        )
        .await
        .unwrap_or_else(|_| panic!("{method} was not answered"));
        assert_eq!(
            answer["error"]["code"], -32000,
            "{method}: the prompt was acknowledged though not stored: {answer}"
        );
        support::assert_unavailable_with_retry(&answer);
    }

    store.refuse(false);
    let mut tries = 0;
    loop {
        let answer = rpc(
            &server,
            "SendMessage",
            on_context(&format!("again {tries}")),
        )
        .await;
        if answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED" {
            break;
        }
        tries += 1;
        assert!(tries < 50, "the store is back but messages fail: {answer}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let session = store.load(&context).await.unwrap();
    let said = serde_json::to_string(&session.messages).unwrap();
    assert!(
        !said.contains("refused"),
        "a refused prompt was stored: {said}"
    );
    server.shutdown().await;
}
