//! A walled command's network destination that no rule covers, asked about on the web face:
//! the run ends on an interrupt for `pkgs.test:PORT` while the command waits inside its call,
//! and the resume's answer lets curl through to a local server, or refuses it with the
//! proxy's reason. "Always" is not asked again in the conversation's run.
#![cfg(target_os = "linux")]

use std::sync::Arc;

use mux_llm::testing::ScriptedClient;
use mux_llm::{Request, Response};
use mux_orchestrator::Agent;
use mux_orchestrator::session::MemorySessionStore;
use mux_testkit::site::{Site, namespaces};
use mux_tool::ApprovalPolicy;
use mux_tool::builtin::{Bash, Sandbox, SandboxPolicy};
use mux_web::{AguiRouter, WebConfig};
use serde_json::{Value, json};

use crate::common::{events, input, latest_prompt, tool_result_texts, types};

/// A walled `bash` reaching one test host.
#[path = "../../../mux-tool/tests/support/walled.rs"]
mod walled;
use walled::walled_agent;

/// The test name the policy maps to the local server.
const HOST: &str = "pkgs.test";

/// Skips (saying so) where the machine cannot make namespaces.
macro_rules! needs_namespaces {
    () => {
        if namespaces() == Some(false) {
            eprintln!(
                "SKIPPED: this machine cannot make unprivileged user and network namespaces, \
                 which the wall around `bash` needs; CI can"
            );
            return;
        }
    };
}

/// The model: `fetch` runs curl once, `fetch twice` runs it in two calls, then it reports.
fn respond(port: u16) -> impl Fn(&Request) -> Result<Response, mux_llm::LlmError> {
    move |request: &Request| {
        let (prompt, since) = latest_prompt(&request.messages);
        let results = tool_result_texts(since);
        let calls = if prompt == "fetch twice" { 2 } else { 1 };
        let command = format!("curl -sS http://{HOST}:{port}/hello");
        Ok(if results.len() < calls {
            let id = format!("call-{}-{}", prompt.len(), results.len());
            Response::from_tool_use(id, "bash", json!({"command": command}))
        } else {
            Response::from_text(format!("Fetched: {}", results.join(" | ")))
        })
    }
}

/// A server whose agent has a walled `bash` that reaches `pkgs.test` only when asked; with
/// `ApprovalPolicy::Never` it runs its commands unasked (only the network question is asked).
async fn server(
    site: &Site,
    approval: ApprovalPolicy,
) -> (
    String,
    tokio::task::JoinHandle<std::io::Result<()>>,
    tempfile::TempDir,
) {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedClient::new().respond_with(respond(site.port()));
    let agent = walled_agent(model, dir.path(), HOST, site.port(), approval);
    let router = AguiRouter::new(agent)
        .session_store(Arc::new(MemorySessionStore::new()))
        .config(WebConfig::default())
        .build();
    let listener = mux_web::bind(0).await.unwrap();
    let url = format!("http://{}/agui", listener.local_addr().unwrap());
    (url, tokio::spawn(mux_web::serve(listener, router)), dir)
}

/// Posts `body` and reads the run's events (the answer must be a stream).
async fn post(http: &reqwest::Client, url: &str, body: &Value) -> Vec<Value> {
    let response = http.post(url).json(body).send().await.unwrap();
    let status = response.status();
    assert_eq!(status, 200, "{body}: {}", response.text().await.unwrap());
    events(response).await
}

/// The interrupts a run ended on (it must end on some).
fn interrupts(run: &[Value]) -> Vec<Value> {
    let end = run.last().expect("the run has events");
    assert_eq!(end["type"], "RUN_FINISHED", "{run:#?}");
    assert_eq!(end["outcome"]["type"], "interrupt", "{run:#?}");
    end["outcome"]["interrupts"].as_array().unwrap().clone()
}

/// The contents of the run's tool results.
fn results(run: &[Value]) -> Vec<String> {
    run.iter()
        .filter(|e| e["type"] == "TOOL_CALL_RESULT")
        .map(|e| e["content"].as_str().unwrap().to_owned())
        .collect()
}

/// Posts `resume`, which approves the network question: the run ends in success with the
/// site's one answer as the tool result, the site having been asked once.
async fn approve_and_fetch_once(http: &reqwest::Client, url: &str, resume: &Value, site: &Site) {
    let resumed = post(http, url, resume).await;
    assert_eq!(
        resumed.last().unwrap()["outcome"]["type"],
        "success",
        "{resumed:#?}"
    );
    assert_eq!(
        results(&resumed),
        ["hello from pkgs.test\n"],
        "{resumed:#?}"
    );
    assert_eq!(site.requests(), 1);
}

/// A resume answering `interrupt` with `payload`.
fn resume(thread: &str, run: &str, interrupt: &Value, payload: Value) -> Value {
    let mut body = input(thread, run, "fetch");
    body["resume"] =
        json!([{"interruptId": interrupt["id"], "status": "resolved", "payload": payload}]);
    body
}

/// Checks `interrupt` asks about `pkgs.test:port` for the bash call `call` (its own id).
fn is_network_question(interrupt: &Value, port: u16, call: &str) {
    let destination = format!("{HOST}:{port}");
    // The question's own id, ending in a part no call of the model can name.
    let id = interrupt["toolCallId"].as_str().unwrap();
    assert!(
        id.starts_with(&format!("{call}:network:{destination}:")),
        "{interrupt:#}"
    );
    let message = interrupt["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("network access to `{destination}`")),
        "{message}"
    );
    // The person may allow it for the rest of the conversation.
    assert_eq!(
        interrupt["responseSchema"]["properties"]["always"]["type"], "boolean",
        "{interrupt:#}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_destination_lets_curl_through_and_a_denied_one_gets_the_proxys_reason() {
    needs_namespaces!();
    let site = Site::start().await;
    let (url, _server, _dir) = server(&site, ApprovalPolicy::Never).await;
    let http = reqwest::Client::new();

    // Allowed once: the command was waiting in its call; it goes on and prints the body.
    let paused = post(&http, &url, &input("net-allow", "r1", "fetch")).await;
    let asked = interrupts(&paused);
    assert_eq!(asked.len(), 1, "{asked:#?}");
    is_network_question(&asked[0], site.port(), "call-5-0");
    // The bash call started and has no result yet: it is waiting for the answer.
    assert!(types(&paused).contains(&"TOOL_CALL_START"), "{paused:#?}");
    assert!(results(&paused).is_empty(), "{paused:#?}");
    assert_eq!(site.requests(), 0);
    approve_and_fetch_once(
        &http,
        &url,
        &resume("net-allow", "r2", &asked[0], json!({"approved": true})),
        &site,
    )
    .await;

    // Denied: the proxy refuses, and curl prints its reason into the tool result.
    let paused = post(&http, &url, &input("net-deny", "d1", "fetch")).await;
    let asked = interrupts(&paused);
    is_network_question(&asked[0], site.port(), "call-5-0");
    let resumed = post(
        &http,
        &url,
        &resume(
            "net-deny",
            "d2",
            &asked[0],
            json!({"approved": false, "reason": "not this one"}),
        ),
    )
    .await;
    assert_eq!(resumed.last().unwrap()["outcome"]["type"], "success");
    let denied = results(&resumed);
    assert_eq!(denied.len(), 1, "{resumed:#?}");
    assert!(
        denied[0].contains(&format!(
            "network access to {HOST}:{} denied by the user's answer",
            site.port()
        )),
        "{denied:?}"
    );
    assert_eq!(
        site.requests(),
        1,
        "the denied request never reached the site"
    );

    // The same answer twice is refused: the interrupt was answered.
    let again = post(
        &http,
        &url,
        &resume("net-deny", "d3", &asked[0], json!({"approved": true})),
    )
    .await;
    assert_eq!(types(&again), ["RUN_STARTED", "RUN_ERROR"], "{again:#?}");
    assert_eq!(again[1]["code"], "interrupt_already_answered");
    assert_eq!(site.requests(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_destination_allowed_always_is_not_asked_about_again() {
    needs_namespaces!();
    let site = Site::start().await;
    let (url, _server, _dir) = server(&site, ApprovalPolicy::Never).await;
    let http = reqwest::Client::new();
    let paused = post(&http, &url, &input("net-always", "r1", "fetch twice")).await;
    let asked = interrupts(&paused);
    assert_eq!(asked.len(), 1, "{asked:#?}");
    is_network_question(&asked[0], site.port(), "call-11-0");
    let resumed = post(
        &http,
        &url,
        &resume(
            "net-always",
            "r2",
            &asked[0],
            json!({"approved": true, "always": true}),
        ),
    )
    .await;
    // The second command reaches the site unasked: the run ends in success, not on an
    // interrupt for `call-11-1`.
    let end = resumed.last().unwrap();
    assert_eq!(end["outcome"]["type"], "success", "{resumed:#?}");
    assert_eq!(
        results(&resumed),
        ["hello from pkgs.test\n", "hello from pkgs.test\n"],
        "{resumed:#?}"
    );
    assert_eq!(site.requests(), 2);

    // The next run on the thread (a loop built anew from the session) does not ask either.
    let next = post(&http, &url, &input("net-always", "r3", "fetch")).await;
    assert_eq!(
        next.last().unwrap()["outcome"]["type"],
        "success",
        "{next:#?}"
    );
    assert_eq!(results(&next), ["hello from pkgs.test\n"], "{next:#?}");
    assert_eq!(site.requests(), 3);
    // Another thread is another conversation: it asks.
    let other = post(&http, &url, &input("net-other", "r4", "fetch")).await;
    is_network_question(&interrupts(&other)[0], site.port(), "call-5-0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn always_is_not_offered_for_a_tool_call_and_is_ignored_there() {
    // A tool approval's "always" would become a rule in the agent's policy, which every
    // thread of the server shares: the web face never offers it, and a client that sends it
    // anyway approves this one call only.
    let site = Site::start().await;
    let dir = tempfile::tempdir().unwrap();
    let agent = Agent::builder(
        ScriptedClient::new().respond_with(respond(site.port())),
        "scripted",
    )
    .tool(
        Bash::new(Sandbox::new(dir.path()).unwrap()).sandbox_policy(SandboxPolicy::WorkspaceWrite),
    )
    .approval(ApprovalPolicy::Always)
    .root(dir.path())
    .build()
    .unwrap();
    let router = AguiRouter::new(agent)
        .session_store(Arc::new(MemorySessionStore::new()))
        .build();
    let listener = mux_web::bind(0).await.unwrap();
    let url = format!("http://{}/agui", listener.local_addr().unwrap());
    let _server = tokio::spawn(mux_web::serve(listener, router));
    let http = reqwest::Client::new();
    let paused = post(&http, &url, &input("tool-always", "r1", "fetch twice")).await;
    let asked = interrupts(&paused);
    assert_eq!(asked[0]["toolCallId"], "call-11-0");
    assert!(
        asked[0]["responseSchema"]["properties"]
            .get("always")
            .is_none()
    );
    let resumed = post(
        &http,
        &url,
        &resume(
            "tool-always",
            "r2",
            &asked[0],
            json!({"approved": true, "always": true}),
        ),
    )
    .await;
    // The second call is asked about again.
    let asked = interrupts(&resumed);
    assert_eq!(asked[0]["toolCallId"], "call-11-1", "{resumed:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_network_question_after_the_calls_own_approval_keeps_the_call_running() {
    needs_namespaces!();
    // The command is asked about first: the run pauses at a step boundary, and the loop is
    // evicted to the store. The resume rebuilds it, the command runs and asks about its
    // destination in the middle of the call: that pause must keep the loop (and the
    // command) alive, and the answer must reach it, not a rebuilt loop.
    let site = Site::start().await;
    let (url, _server, _dir) = server(&site, ApprovalPolicy::Always).await;
    let http = reqwest::Client::new();
    let paused = post(&http, &url, &input("net-both", "b1", "fetch")).await;
    let asked = interrupts(&paused);
    assert_eq!(asked[0]["toolCallId"], "call-5-0", "{asked:#?}");
    assert!(
        asked[0]["responseSchema"]["properties"]
            .get("always")
            .is_none()
    );
    let approved = post(
        &http,
        &url,
        &resume("net-both", "b2", &asked[0], json!({"approved": true})),
    )
    .await;
    let asked = interrupts(&approved);
    assert_eq!(asked.len(), 1, "{asked:#?}");
    is_network_question(&asked[0], site.port(), "call-5-0");
    approve_and_fetch_once(
        &http,
        &url,
        &resume("net-both", "b3", &asked[0], json!({"approved": true})),
        &site,
    )
    .await;
}
