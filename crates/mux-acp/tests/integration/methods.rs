//! initialize, authenticate, session/new, set_mode, list, load, and bad input.

use std::sync::Arc;

use mux_llm::testing::ScriptedClient;
use mux_orchestrator::session::FileSessionStore;
use serde_json::json;

use crate::harness::{Peer, agent, kinds};

#[tokio::test]
async fn initialize_advertises_only_what_works() {
    let mut peer = Peer::start(agent(ScriptedClient::new()));
    let result = peer.initialize().await;
    assert_eq!(result["protocolVersion"], 1);
    let caps = &result["agentCapabilities"];
    // No session store: nothing to load or list.
    assert_eq!(caps["loadSession"], false);
    assert!(caps["sessionCapabilities"].get("list").is_none(), "{caps}");
    assert_eq!(caps["promptCapabilities"]["image"], true);
    assert_eq!(caps["promptCapabilities"]["embeddedContext"], true);
    assert_eq!(caps["mcpCapabilities"]["http"], true);

    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FileSessionStore::new(dir.path()));
    let mut peer = Peer::start(agent(ScriptedClient::new()).session_store(store));
    let caps = peer.initialize().await["agentCapabilities"].clone();
    assert_eq!(caps["loadSession"], true);
    assert_eq!(caps["sessionCapabilities"]["list"], json!({}));
}

#[tokio::test]
async fn authenticate_succeeds_only_when_the_variable_is_set() {
    let variable = "MUX_ACP_TEST_KEY_THAT_IS_NOT_SET";
    let agent = agent(ScriptedClient::new())
        .env_key_auth("missing", "Missing key", variable)
        .env_key_auth("path", "PATH as a key", "PATH");
    let mut peer = Peer::start(agent);
    let methods = peer.initialize().await["authMethods"].clone();
    assert_eq!(methods[0]["id"], "missing");
    let (ok, _) = peer
        .request("authenticate", json!({"methodId": "path"}))
        .await;
    assert_eq!(ok["result"], json!({}), "{ok}");
    let (missing, _) = peer
        .request("authenticate", json!({"methodId": "missing"}))
        .await;
    assert_eq!(missing["error"]["code"], -32000, "{missing}");
    assert!(
        missing["error"]["data"]
            .as_str()
            .unwrap()
            .contains(variable)
    );
    let (unknown, _) = peer
        .request("authenticate", json!({"methodId": "nope"}))
        .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
}

#[tokio::test]
async fn set_mode_reports_the_new_mode() {
    let dir = tempfile::tempdir().unwrap();
    let mut peer = Peer::start(agent(ScriptedClient::new()));
    peer.initialize().await;
    let (created, _) = peer
        .request("session/new", json!({"cwd": dir.path(), "mcpServers": []}))
        .await;
    let modes = &created["result"]["modes"];
    assert_eq!(modes["currentModeId"], "default");
    let ids: Vec<_> = modes["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].clone())
        .collect();
    assert_eq!(
        ids,
        [
            json!("default"),
            json!("acceptEdits"),
            json!("plan"),
            json!("bypassPermissions")
        ]
    );
    let session = created["result"]["sessionId"].as_str().unwrap();

    let (set, notes) = peer
        .request(
            "session/set_mode",
            json!({"sessionId": session, "modeId": "plan"}),
        )
        .await;
    assert_eq!(set["result"], json!({}), "{set}");
    assert_eq!(kinds(&notes), ["current_mode_update"]);
    assert_eq!(notes[0]["params"]["update"]["currentModeId"], "plan");

    let (bad, _) = peer
        .request(
            "session/set_mode",
            json!({"sessionId": session, "modeId": "yolo"}),
        )
        .await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
}

#[tokio::test]
async fn bad_input_gets_json_rpc_errors_and_the_agent_goes_on() {
    let mut peer = Peer::start(agent(ScriptedClient::new()));
    let (early, _) = peer.request("session/list", json!({})).await;
    assert_eq!(early["error"]["code"], -32600, "before initialize: {early}");
    peer.initialize().await;
    peer.send_raw("this is not json");
    assert_eq!(peer.next_message().await["error"]["code"], -32700);
    peer.send_raw("[1, 2, 3]");
    assert!(
        peer.next_message().await["error"]["code"]
            .as_i64()
            .is_some()
    );
    let (unknown, _) = peer.request("session/teleport", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    let (wrong, _) = peer.request("session/prompt", json!({"prompt": 7})).await;
    assert_eq!(wrong["error"]["code"], -32602, "{wrong}");
    let (relative, _) = peer
        .request(
            "session/new",
            json!({"cwd": "relative/dir", "mcpServers": []}),
        )
        .await;
    assert_eq!(relative["error"]["code"], -32602, "{relative}");
    let (no_session, _) = peer.prompt("no-such-session", "hi").await;
    assert_eq!(no_session["error"]["code"], -32602, "{no_session}");
    let (no_store, _) = peer.request("session/list", json!({})).await;
    assert!(no_store.get("error").is_some(), "{no_store}");
    // Still serving.
    assert_eq!(peer.initialize().await["protocolVersion"], 1);
}

#[tokio::test]
async fn load_replays_the_conversation_before_answering_and_list_shows_it() {
    let store_dir = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("notes.txt"), "remember the milk\n").unwrap();
    let model = ScriptedClient::new()
        .reply_tool_call("call_1", "read_file", json!({"path": "notes.txt"}))
        .reply_text("It says to remember the milk.");
    let store = Arc::new(FileSessionStore::new(store_dir.path()));
    let mut peer = Peer::start(agent(model).session_store(store.clone()));
    peer.initialize().await;
    let session = peer.new_session(cwd.path()).await;
    let (done, _) = peer.prompt(&session, "What do my notes say?").await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    peer.close().await;

    // A new connection, as after an editor restart.
    let mut peer = Peer::start(agent(ScriptedClient::new()).session_store(store));
    peer.initialize().await;
    let (listed, _) = peer
        .request("session/list", json!({"cwd": cwd.path()}))
        .await;
    let sessions = listed["result"]["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{listed}");
    assert_eq!(sessions[0]["sessionId"], session.as_str());
    assert!(sessions[0]["updatedAt"].as_str().unwrap().ends_with('Z'));
    assert!(
        listed["result"]
            .get("nextCursor")
            .is_none_or(|c| c.is_null()),
        "one page"
    );
    let (bad_cursor, _) = peer
        .request("session/list", json!({"cursor": "not-a-cursor"}))
        .await;
    assert_eq!(bad_cursor["error"]["code"], -32602, "{bad_cursor}");
    let (past_the_end, _) = peer
        .request("session/list", json!({"cursor": format!("0:{session}")}))
        .await;
    assert_eq!(
        past_the_end["result"]["sessions"],
        json!([]),
        "{past_the_end}"
    );

    let (loaded, notes) = peer
        .request(
            "session/load",
            json!({"sessionId": session, "cwd": cwd.path(), "mcpServers": []}),
        )
        .await;
    assert!(loaded.get("result").is_some(), "{loaded}");
    assert_eq!(
        kinds(&notes),
        ["user_message_chunk", "tool_call", "agent_message_chunk"]
    );
    let call = &notes[1]["params"]["update"];
    assert_eq!(
        (call["toolCallId"].as_str(), call["status"].as_str()),
        (Some("call_1"), Some("completed"))
    );
    assert!(
        call["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("remember the milk")
    );
    assert_eq!(
        notes[2]["params"]["update"]["content"]["text"],
        "It says to remember the milk."
    );
}

#[tokio::test]
async fn a_client_that_disappears_ends_the_agent_quickly() {
    let mut peer = Peer::start(agent(ScriptedClient::new()));
    peer.initialize().await;
    let dir = tempfile::tempdir().unwrap();
    peer.new_session(dir.path()).await;
    let took = peer.close().await;
    assert!(took < std::time::Duration::from_secs(2), "{took:?}");
}

#[tokio::test]
async fn slash_commands_are_offered_after_session_new_and_expand() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedClient::new().reply_text("reviewed");
    let agent =
        agent(model.clone()).command("review", "Review a file", "Review $ARGUMENTS for bugs.");
    let mut peer = Peer::start(agent);
    peer.initialize().await;
    let (created, before) = peer
        .request("session/new", json!({"cwd": dir.path(), "mcpServers": []}))
        .await;
    assert!(
        before.is_empty(),
        "nothing for the session before its id is known"
    );
    let session = created["result"]["sessionId"].as_str().unwrap().to_owned();
    let (done, notes) = peer.prompt(&session, "/review src/lib.rs").await;
    assert_eq!(done["result"]["stopReason"], "end_turn");
    assert_eq!(kinds(&notes)[0], "available_commands_update");
    assert_eq!(notes[0]["params"]["sessionId"], session.as_str());
    assert_eq!(
        notes[0]["params"]["update"]["availableCommands"][0]["name"],
        "review"
    );
    let sent = serde_json::to_string(&model.requests()[0].messages).unwrap();
    assert!(sent.contains("Review src/lib.rs for bugs."), "{sent}");
}
