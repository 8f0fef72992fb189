//! A walled command's network destination that no rule covers, asked about on the A2A face:
//! the task is `input-required` with the question while curl waits inside its call; `approve`
//! lets it through to a local server, `deny` gets the proxy's refusal, and `always` is not
//! asked again on the task's conversation.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};

use mux_a2a::{A2aConfig, A2aServer, Running};
use mux_llm::testing::ScriptedClient;
use mux_llm::{ContentBlock, Request, Response, Role, StopReason};
use mux_orchestrator::Agent;
use mux_tool::ApprovalPolicy;
use mux_tool::builtin::{Bash, NetworkPolicy, Sandbox, SandboxPolicy};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

mod support;

use support::{rpc, user};

/// The test name the policy maps to the local server.
const HOST: &str = "pkgs.test";

/// A local HTTP server answering `hello from <Host>`; it counts the requests it saw.
struct Site {
    port: u16,
    seen: Arc<Mutex<usize>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Site {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Site {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen: Arc<Mutex<usize>> = Arc::default();
        let count = Arc::clone(&seen);
        let task = tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let count = Arc::clone(&count);
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match socket.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    *count.lock().unwrap() += 1;
                    let body = format!("hello from {HOST}\n");
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = socket.write_all(reply.as_bytes()).await;
                });
            }
        });
        Self { port, seen, task }
    }

    fn requests(&self) -> usize {
        *self.seen.lock().unwrap()
    }
}

/// Whether this machine lets an unprivileged process make user and network namespaces
/// (the wall needs them). `None` when it cannot tell (no `unshare`): the test then runs.
fn namespaces() -> Option<bool> {
    std::process::Command::new("unshare")
        .args(["--user", "--map-root-user", "--net", "true"])
        .stderr(std::process::Stdio::null())
        .status()
        .ok()
        .map(|s| s.success())
}

/// The texts of the tool results after the last user prompt.
fn results_since_prompt(request: &Request) -> (String, Vec<String>) {
    let at = request
        .messages
        .iter()
        .rposition(|m| m.role == Role::User && m.content.iter().any(|b| b.as_text().is_some()))
        .unwrap_or(0);
    let results = request.messages[at..]
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|b| match b {
            ContentBlock::ToolResult { content, .. } => Some(
                content
                    .iter()
                    .filter_map(|c| c.as_text())
                    .collect::<Vec<_>>()
                    .join(""),
            ),
            _ => None,
        })
        .collect();
    (request.messages[at].text(), results)
}

/// The model: each prompt runs curl once, then reports what it got.
fn respond(port: u16) -> impl Fn(&Request) -> Result<Response, mux_llm::LlmError> {
    move |request: &Request| {
        let (prompt, results) = results_since_prompt(request);
        Ok(if results.is_empty() {
            Response::new(
                vec![ContentBlock::tool_use(
                    format!("call-{}", prompt.replace(' ', "-")),
                    "bash",
                    json!({"command": format!("curl -sS http://{HOST}:{port}/hello")}),
                )],
                StopReason::ToolUse,
            )
        } else {
            Response::new(
                vec![ContentBlock::text(format!(
                    "Fetched: {}",
                    results.join(" | ")
                ))],
                StopReason::EndTurn,
            )
        })
    }
}

/// A server whose agent has a walled `bash` that reaches `pkgs.test` only when asked; its
/// commands run unasked (only the network question is asked).
async fn serve(site: &Site) -> (Running, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], site.port));
    let bash = Bash::new(Sandbox::new(dir.path()).unwrap())
        .sandbox_policy(SandboxPolicy::WorkspaceWrite)
        .network_policy(NetworkPolicy::new().resolve_for_tests(HOST, vec![addr]));
    let agent = Agent::builder(
        ScriptedClient::new().respond_with(respond(site.port)),
        "scripted",
    )
    .tool(bash)
    .approval(ApprovalPolicy::Never)
    .root(dir.path())
    .build()
    .unwrap();
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
    let task = asks_about_the_destination(&sent["result"]["task"], site.port);
    assert_eq!(site.requests(), 0, "nothing went out before the answer");
    let unclear = rpc(&server, "SendMessage", user("perhaps", Some(&task))).await;
    assert_eq!(unclear["error"]["code"], -32602, "{unclear}");
    let answered = rpc(&server, "SendMessage", user("approve", Some(&task))).await;
    let text = reply(&answered["result"]["task"]);
    assert!(text.contains("hello from pkgs.test"), "{text}");
    assert_eq!(site.requests(), 1);

    // Denied: curl gets the proxy's refusal, and the site sees nothing.
    let sent = rpc(&server, "SendMessage", user("fetch again", None)).await;
    let task = asks_about_the_destination(&sent["result"]["task"], site.port);
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
    let task = asks_about_the_destination(first, site.port);
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
