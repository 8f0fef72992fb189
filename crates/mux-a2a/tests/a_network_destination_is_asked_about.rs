//! A walled command's network destination that no rule covers, asked about on the A2A face:
//! the task is `input-required` with the question while curl waits inside its call; `approve`
//! lets it through to a local server, `deny` gets the proxy's refusal, and `always` is not
//! asked again on the task's conversation.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use mux_a2a::{A2aConfig, A2aServer, Running};
use mux_llm::testing::ScriptedClient;
use mux_llm::{Request, Response};
use mux_testkit::site::{Site, namespaces};
use mux_tool::ApprovalPolicy;
use serde_json::{Value, json};

mod support;

use support::{rpc, user};

/// A walled `bash` reaching one test host.
#[path = "../../mux-tool/tests/support/walled.rs"]
mod walled;
use walled::walled_agent;

/// The test name the policy maps to the local server.
const HOST: &str = "pkgs.test";

/// The latest prompt and the texts of the tool results since it.
fn results_since_prompt(request: &Request) -> (String, Vec<String>) {
    let (prompt, since) = support::models::latest_prompt(&request.messages);
    (prompt, support::models::tool_result_texts(since))
}

/// The model: each prompt runs curl once, then reports what it got.
fn respond(port: u16) -> impl Fn(&Request) -> Result<Response, mux_llm::LlmError> {
    move |request: &Request| {
        let (prompt, results) = results_since_prompt(request);
        Ok(if results.is_empty() {
            Response::from_tool_use(
                format!("call-{}", prompt.replace(' ', "-")),
                "bash",
                json!({"command": format!("curl -sS http://{HOST}:{port}/hello")}),
            )
        } else {
            Response::from_text(format!("Fetched: {}", results.join(" | ")))
        })
    }
}

/// A server whose agent has a walled `bash` that reaches `pkgs.test` only when asked; its
/// commands run unasked (only the network question is asked).
async fn serve(site: &Site) -> (Running, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedClient::new().respond_with(respond(site.port()));
    let agent = walled_agent(model, dir.path(), HOST, site.port(), ApprovalPolicy::Never);
    let running = A2aServer::new(agent)
        .config(A2aConfig::default())
        .serve(([127, 0, 0, 1], 0).into())
        .await
        .unwrap();
    (running, dir)
}

/// Checks `task` waits on the network question about `pkgs.test:port`; its id.
fn asks_about_the_destination(task: &Value, port: u16) -> String {
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{task:#}"
    );
    let parts = &task["status"]["message"]["parts"];
    let text = parts[0]["text"].as_str().unwrap();
    assert!(
        text.contains(&format!("network access to `{HOST}:{port}`")) && text.contains("`always`"),
        "{text}"
    );
    let approval = &parts[1]["data"]["approval"];
    assert_eq!(approval["tool"], "network", "{approval:#}");
    assert_eq!(approval["input"]["host"], HOST, "{approval:#}");
    assert_eq!(approval["always"], true, "{approval:#}");
    task["id"].as_str().unwrap().to_owned()
}

/// The agent's last words on a completed task.
fn reply(task: &Value) -> String {
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task:#}");
    task["artifacts"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|a| a["parts"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p["text"].as_str().map(str::to_owned))
        .collect::<Vec<_>>()
        .join("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_lets_curl_through_deny_refuses_and_always_is_not_asked_again() {
    if namespaces() == Some(false) {
        eprintln!("SKIPPED: no unprivileged user and network namespaces here; CI has them");
        return;
    }
    let site = Site::start().await;
    let (server, _dir) = serve(&site).await;

    // Approved once: the command was waiting in its call; it goes on and prints the body.
    let sent = rpc(&server, "SendMessage", user("fetch", None)).await;
    let task = asks_about_the_destination(&sent["result"]["task"], site.port());
    assert_eq!(site.requests(), 0, "nothing went out before the answer");
    let unclear = rpc(&server, "SendMessage", user("perhaps", Some(&task))).await;
    assert_eq!(unclear["error"]["code"], -32602, "{unclear}");
    let answered = rpc(&server, "SendMessage", user("approve", Some(&task))).await;
    let text = reply(&answered["result"]["task"]);
    assert!(text.contains("hello from pkgs.test"), "{text}");
    assert_eq!(site.requests(), 1);

    // Denied: curl gets the proxy's refusal, and the site sees nothing.
    let sent = rpc(&server, "SendMessage", user("fetch again", None)).await;
    let task = asks_about_the_destination(&sent["result"]["task"], site.port());
    let answered = rpc(
        &server,
        "SendMessage",
        user("deny: not this site", Some(&task)),
    )
    .await;
    let text = reply(&answered["result"]["task"]);
    assert!(!text.contains("hello from"), "{text}");
    assert!(
        text.contains(HOST),
        "the refusal names the destination: {text}"
    );
    assert_eq!(site.requests(), 1);

    // Always: allowed for the rest of the task's conversation, so its next prompt is not asked.
    let sent = rpc(&server, "SendMessage", user("fetch once more", None)).await;
    let first = &sent["result"]["task"];
    let task = asks_about_the_destination(first, site.port());
    let context = first["contextId"].as_str().unwrap().to_owned();
    let answered = rpc(&server, "SendMessage", user("always", Some(&task))).await;
    assert!(reply(&answered["result"]["task"]).contains("hello from pkgs.test"));
    let mut next = user("fetch in the same conversation", None);
    next["message"]["contextId"] = json!(context);
    let again = rpc(&server, "SendMessage", next).await;
    let text = reply(&again["result"]["task"]);
    assert!(text.contains("hello from pkgs.test"), "{again:#}");
    assert_eq!(site.requests(), 3);
    server.shutdown().await;
}
