//! A walled command's network destination that no rule covers, asked about in the editor
//! through `session/request_permission`: announced first as a tool call of kind `fetch`
//! titled "Network access to host:port", then answered allow once, reject once or allow
//! always (not asked again in the session). curl goes through the proxy to a local site.
#![cfg(target_os = "linux")]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use mux_acp::AcpAgent;
use mux_llm::testing::ScriptedClient;
use mux_llm::{ContentBlock, Request, Response, Role, StopReason};
use mux_orchestrator::Agent;
use mux_tool::builtin::{Bash, NetworkPolicy, Sandbox, SandboxPolicy};
use mux_tool::{Tool, Typed};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::harness::{Peer, for_call};

/// The test name the policy maps to the local site.
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
                    let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
                    let host = head
                        .lines()
                        .find_map(|l| l.strip_prefix("host: "))
                        .and_then(|h| h.split(':').next())
                        .unwrap_or("-")
                        .to_owned();
                    *count.lock().unwrap() += 1;
                    let body = format!("hello from {host}\n");
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

/// The model: each prompt runs curl once in a call of a new id, then reports.
fn model(port: u16) -> ScriptedClient {
    let next = AtomicU64::new(1);
    ScriptedClient::new().respond_with(move |request: &Request| {
        let prompt_at = request
            .messages
            .iter()
            .rposition(|m| m.role == Role::User && m.content.iter().any(|b| b.as_text().is_some()))
            .unwrap_or(0);
        let answered = request.messages[prompt_at..]
            .iter()
            .flat_map(|m| m.content.iter())
            .any(|b| matches!(b, ContentBlock::ToolResult { .. }));
        Ok(if answered {
            Response::new(vec![ContentBlock::text("Fetched.")], StopReason::EndTurn)
        } else {
            let id = format!("fetch-{}", next.fetch_add(1, Ordering::Relaxed));
            let command = format!("curl -sS http://{HOST}:{port}/hello");
            Response::new(
                vec![ContentBlock::tool_use(
                    id,
                    "bash",
                    json!({"command": command}),
                )],
                StopReason::ToolUse,
            )
        })
    })
}

/// An agent whose walled `bash` reaches `pkgs.test` only when asked, and whose commands run
/// unasked (only the network question is asked).
fn agent(site: &Site) -> AcpAgent {
    let addr = SocketAddr::from(([127, 0, 0, 1], site.port));
    let agent = Agent::builder(model(site.port), "scripted")
        .tools_at(move |root| {
            let bash = Bash::new(Sandbox::new(root)?)
                .sandbox_policy(SandboxPolicy::WorkspaceWrite)
                .network_policy(NetworkPolicy::new().resolve_for_tests(HOST, vec![addr]));
            Ok(vec![Arc::new(Typed::new(bash)?) as Arc<dyn Tool>])
        })
        .needs_approval("bash", |_| false)
        .build()
        .unwrap();
    AcpAgent::new(agent)
}

/// What one prompt showed: the network question's tool call id (if it asked), the bash
/// call's id, and the text of the bash call's updates.
struct Fetched {
    asked: Option<Value>,
    bash: String,
    shown: String,
    notes: Vec<Value>,
}

async fn fetch(peer: &mut Peer, session: &str, answer: &'static str) -> Fetched {
    peer.answer = Some(answer);
    let before = peer.asked.len();
    let (done, notes) = peer.prompt(session, "fetch").await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert!(peer.asked.len() <= before + 1, "{:#?}", peer.asked);
    let asked = peer.asked.get(before).map(|m| m["params"].clone());
    let bash = notes
        .iter()
        .map(|n| &n["params"]["update"])
        .find(|u| u["sessionUpdate"] == "tool_call" && u["kind"] == "execute")
        .map(|u| u["toolCallId"].as_str().unwrap().to_owned())
        .unwrap_or_else(|| panic!("no bash call in {notes:#?}"));
    let shown = for_call(&notes, &bash)
        .iter()
        .map(|u| u.to_string())
        .collect::<Vec<_>>()
        .join("\n");
    Fetched {
        asked,
        bash,
        shown,
        notes,
    }
}

/// Checks the editor was asked about `pkgs.test:port` for `fetched`'s bash call, under an
/// id of its own that it was told of first as a `fetch` call; returns that id.
fn asked_about_the_destination(fetched: &Fetched, port: u16) -> String {
    let asked = fetched.asked.as_ref().expect("the editor was asked");
    let destination = format!("{HOST}:{port}");
    let id = asked["toolCall"]["toolCallId"].as_str().unwrap().to_owned();
    // The question's own id, ending in a part no call of the model can name.
    let prefix = format!("{}:network:{destination}:", fetched.bash);
    assert!(id.starts_with(&prefix), "{id}");
    let title = format!("Network access to {destination}");
    assert_eq!(asked["toolCall"]["title"], json!(title), "{asked:#}");
    assert_eq!(asked["toolCall"]["kind"], "fetch", "{asked:#}");
    assert_eq!(asked["toolCall"]["rawInput"]["host"], HOST);
    assert_eq!(asked["toolCall"]["rawInput"]["port"], json!(port));
    let options: Vec<&str> = asked["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["optionId"].as_str().unwrap())
        .collect();
    assert_eq!(options, ["allow_once", "allow_always", "reject_once"]);
    // Announced before it was asked about, as a call the editor can show.
    let announced = for_call(&fetched.notes, &id);
    assert_eq!(announced[0]["sessionUpdate"], "tool_call", "{announced:#?}");
    assert_eq!(announced[0]["kind"], "fetch");
    assert_eq!(announced[0]["title"], json!(title));
    // Pending (ACP's default status, which the wire may leave out).
    assert!(
        [Value::Null, json!("pending")].contains(&announced[0]["status"]),
        "{announced:#?}"
    );
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_editor_allows_once_rejects_once_and_allows_always() {
    if namespaces() == Some(false) {
        eprintln!(
            "SKIPPED: this machine cannot make unprivileged user and network namespaces, \
             which the wall around `bash` needs; CI can"
        );
        return;
    }
    let site = Site::start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut peer = Peer::start(agent(&site));
    peer.initialize().await;
    let session = peer.new_session(dir.path()).await;

    // Allow once: curl prints the site's body; the question's call completes.
    let once = fetch(&mut peer, &session, "allow_once").await;
    let id = asked_about_the_destination(&once, site.port);
    assert!(
        once.shown.contains("hello from pkgs.test"),
        "{}",
        once.shown
    );
    let last = for_call(&once.notes, &id).last().unwrap()["status"].clone();
    assert_eq!(last, "completed");
    assert_eq!(site.requests(), 1);

    // Reject once: the proxy refuses with the reason; the question's call fails.
    let rejected = fetch(&mut peer, &session, "reject_once").await;
    let id = asked_about_the_destination(&rejected, site.port);
    let reason = format!(
        "network access to {HOST}:{} denied by the user's answer",
        site.port
    );
    assert!(rejected.shown.contains(&reason), "{}", rejected.shown);
    let last = for_call(&rejected.notes, &id).last().unwrap()["status"].clone();
    assert_eq!(last, "failed");
    assert_eq!(
        site.requests(),
        1,
        "the refused request never reached the site"
    );

    // Allow always: not asked again in this session (the next answer would refuse).
    let always = fetch(&mut peer, &session, "allow_always").await;
    asked_about_the_destination(&always, site.port);
    assert!(
        always.shown.contains("hello from pkgs.test"),
        "{}",
        always.shown
    );
    let again = fetch(&mut peer, &session, "reject_once").await;
    assert!(again.asked.is_none(), "{:#?}", again.asked);
    assert!(
        again.shown.contains("hello from pkgs.test"),
        "{}",
        again.shown
    );
    assert_eq!(site.requests(), 3);
    peer.close().await;
}
