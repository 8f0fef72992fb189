//! A walled command's network destination that no rule covers, asked about in the editor
//! through `session/request_permission`: announced first as a tool call of kind `fetch`
//! titled "Network access to host:port", then answered allow once, reject once or allow
//! always (not asked again in the session). curl goes through the proxy to a local site.
#![cfg(target_os = "linux")]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mux_acp::AcpAgent;
use mux_llm::testing::ScriptedClient;
use mux_llm::{ContentBlock, Request, Response, StopReason};
use mux_orchestrator::Agent;
use mux_testkit::site::{Site, namespaces};
use mux_tool::builtin::Sandbox;
use mux_tool::{Tool, Typed};
use serde_json::{Value, json};

use crate::harness::{Peer, for_call};

/// A walled `bash` reaching one test host.
#[path = "../../../mux-tool/tests/support/walled.rs"]
#[allow(dead_code)]
mod walled;
use walled::walled_bash;

/// The test name the policy maps to the local site.
const HOST: &str = "pkgs.test";

/// The model: each prompt runs curl once in a call of a new id, then reports.
fn model(port: u16) -> ScriptedClient {
    let next = AtomicU64::new(1);
    ScriptedClient::new().respond_with(move |request: &Request| {
        let (_, since) = crate::models::latest_prompt(&request.messages);
        let answered = crate::models::tool_result_count(since) > 0;
        Ok(if answered {
            Response::new(vec![ContentBlock::text("Fetched.")], StopReason::EndTurn)
        } else {
            let id = format!("fetch-{}", next.fetch_add(1, Ordering::Relaxed));
            let command = format!("curl -sS http://{HOST}:{port}/hello");
            Response::from_tool_use(id, "bash", json!({"command": command}))
        })
    })
}

/// An agent whose walled `bash` reaches `pkgs.test` only when asked, and whose commands run
/// unasked (only the network question is asked).
fn agent(site: &Site) -> AcpAgent {
    let port = site.port();
    let agent = Agent::builder(model(port), "scripted")
        .tools_at(move |root| {
            let bash = walled_bash(Sandbox::new(root)?, HOST, port);
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
    let id = asked_about_the_destination(&once, site.port());
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
    let id = asked_about_the_destination(&rejected, site.port());
    let reason = format!(
        "network access to {HOST}:{} denied by the user's answer",
        site.port()
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
    asked_about_the_destination(&always, site.port());
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
