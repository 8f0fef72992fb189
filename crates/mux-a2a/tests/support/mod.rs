//! What the A2A server tests share: the test agent, a JSON-RPC call and a user message.

#![allow(dead_code)]

use mux_a2a::Running;
use mux_llm::testing::ScriptedClient;
use mux_orchestrator::Agent;
use serde_json::{Value, json};

/// Test models the orchestrator's, the agents' and the faces' tests share.
#[path = "../../../mux-llm/tests/support/models.rs"]
#[allow(dead_code, unreachable_pub)]
pub(crate) mod models;

/// The agent the tests serve: `model`, the built-in tools in `root`.
pub(crate) fn agent(model: ScriptedClient, root: &std::path::Path) -> Agent {
    Agent::builder(model, "m")
        .builtin_tools()
        .root(root)
        .instructions("A test agent.")
        .build()
        .unwrap()
}

/// A client that never goes through a proxy.
pub(crate) fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

/// One JSON-RPC call (id 7) with the right `A2A-Version`; the parsed answer.
pub(crate) async fn rpc(server: &Running, method: &str, params: Value) -> Value {
    client()
        .post(server.rpc_url())
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// `SendMessage` params: a user message saying `text`, on `task` when given.
pub(crate) fn user(text: &str, task: Option<&str>) -> Value {
    let mut message = json!({
        "messageId": format!("m-{text}-{}", task.unwrap_or("new")),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    });
    if let Some(task) = task {
        message["taskId"] = json!(task);
    }
    json!({"message": message})
}

/// Asserts that `answer`'s error details say `UNAVAILABLE` first and carry a
/// `google.rpc.RetryInfo` hint.
pub(crate) fn assert_unavailable_with_retry(answer: &Value) {
    let details = answer["error"]["data"].as_array().unwrap();
    assert_eq!(details[0]["reason"], "UNAVAILABLE", "{answer}");
    assert!(
        details
            .iter()
            .any(|d| d["@type"] == "type.googleapis.com/google.rpc.RetryInfo"),
        "{answer}"
    );
}
