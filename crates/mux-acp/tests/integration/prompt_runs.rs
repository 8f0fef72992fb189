//! session/prompt: updates, tool kinds and diffs, approvals, modes, stop reasons, cancel.

use std::time::{Duration, Instant};

use mux_llm::testing::ScriptedClient;
use mux_llm::{ContentBlock, Response, StopReason};
use serde_json::json;

use crate::harness::{Peer, agent, for_call, kinds};

async fn session_in(peer: &mut Peer, dir: &std::path::Path) -> String {
    peer.initialize().await;
    peer.new_session(dir).await
}

#[tokio::test]
async fn an_approved_write_shows_a_diff_and_its_lifecycle() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedClient::new()
        .reply_tool_call(
            "w1",
            "write_file",
            json!({"path": "hello.txt", "content": "hi\n"}),
        )
        .reply_text("Wrote it.");
    let mut peer = Peer::start(agent(model));
    let session = session_in(&mut peer, dir.path()).await;
    let (done, notes) = peer.prompt(&session, "write hello").await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("hello.txt")).unwrap(),
        "hi\n"
    );

    let call = for_call(&notes, "w1");
    assert_eq!(call[0]["sessionUpdate"], "tool_call");
    assert_eq!(call[0]["kind"], "edit");
    assert_eq!(call[0]["rawInput"]["path"], "hello.txt");
    let file = dir.path().join("hello.txt").display().to_string();
    assert_eq!(call[0]["locations"][0]["path"], file);
    let statuses: Vec<_> = call[1..].iter().map(|u| u["status"].clone()).collect();
    assert_eq!(statuses, [json!("in_progress"), json!("completed")]);
    // The diff is what the tool presents once it has written.
    let diff = &call[2]["content"][0];
    assert_eq!(diff["type"], "diff");
    assert_eq!(diff["path"], file);
    assert_eq!(diff["oldText"], serde_json::Value::Null, "a new file");
    assert_eq!(diff["newText"], "hi\n");

    let asked = &peer.asked[0]["params"];
    assert_eq!(asked["toolCall"]["toolCallId"], "w1");
    let options: Vec<_> = asked["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].clone())
        .collect();
    assert_eq!(
        options,
        [
            json!("allow_once"),
            json!("allow_always"),
            json!("reject_once"),
            json!("reject_always")
        ]
    );
    assert!(kinds(&notes).contains(&"agent_message_chunk".to_owned()));
}

#[tokio::test]
async fn a_rejected_call_fails_and_the_model_hears_it_was_refused() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedClient::new()
        .reply_tool_call("b1", "bash", json!({"command": "touch made"}))
        .reply_text("ok");
    let mut peer = Peer::start(agent(model.clone()));
    peer.answer = Some("reject_once");
    let session = session_in(&mut peer, dir.path()).await;
    let (done, notes) = peer.prompt(&session, "make a file").await;
    assert_eq!(done["result"]["stopReason"], "end_turn");
    assert!(!dir.path().join("made").exists());
    let call = for_call(&notes, "b1");
    assert_eq!(call[0]["kind"], "execute");
    assert_eq!(call.last().unwrap()["status"], "failed");
    let second = &model.requests()[1];
    let fed_back = serde_json::to_string(&second.messages).unwrap();
    assert!(
        fed_back.contains("the user refused this call"),
        "{fed_back}"
    );
}

#[tokio::test]
async fn allow_always_is_remembered_for_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let write = json!({"path": "a.txt", "content": "1"});
    let model = ScriptedClient::new()
        .reply_tool_call("c1", "write_file", write.clone())
        .reply_text("once")
        .reply_tool_call("c2", "write_file", write)
        .reply_text("twice");
    let mut peer = Peer::start(agent(model));
    peer.answer = Some("allow_always");
    let session = session_in(&mut peer, dir.path()).await;
    peer.prompt(&session, "write").await;
    let (done, notes) = peer.prompt(&session, "write again").await;
    assert_eq!(done["result"]["stopReason"], "end_turn");
    assert_eq!(peer.asked.len(), 1, "the second call ran without asking");
    assert_eq!(
        for_call(&notes, "c2").last().unwrap()["status"],
        "completed"
    );
}

#[tokio::test]
async fn in_plan_mode_a_write_is_refused_without_asking() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedClient::new()
        .reply_tool_call(
            "p1",
            "write_file",
            json!({"path": "plan.txt", "content": "x"}),
        )
        .reply_text("I may not write in plan mode.");
    let mut peer = Peer::start(agent(model));
    let session = session_in(&mut peer, dir.path()).await;
    peer.request(
        "session/set_mode",
        json!({"sessionId": session, "modeId": "plan"}),
    )
    .await;
    let (done, notes) = peer.prompt(&session, "write a plan file").await;
    assert_eq!(done["result"]["stopReason"], "end_turn");
    assert!(peer.asked.is_empty());
    assert!(!dir.path().join("plan.txt").exists());
    assert_eq!(for_call(&notes, "p1").last().unwrap()["status"], "failed");
}

#[tokio::test]
async fn todo_write_is_think_and_sends_a_plan() {
    let dir = tempfile::tempdir().unwrap();
    let todos = json!({"todos": [
        {"content": "Read the code", "status": "completed"},
        {"content": "Fix the bug", "status": "in_progress"}
    ]});
    let model = ScriptedClient::new()
        .reply_tool_call("t1", "todo_write", todos)
        .reply_text("Planned.");
    let mut peer = Peer::start(agent(model));
    peer.answer = Some("allow_once");
    let session = session_in(&mut peer, dir.path()).await;
    let (_, notes) = peer.prompt(&session, "plan").await;
    assert_eq!(for_call(&notes, "t1")[0]["kind"], "think");
    let plan = notes
        .iter()
        .map(|n| &n["params"]["update"])
        .find(|u| u["sessionUpdate"] == "plan")
        .expect("a plan update");
    assert_eq!(
        plan["entries"][1],
        json!({"content": "Fix the bug", "priority": "medium", "status": "in_progress"})
    );
}

fn reply(stop_reason: StopReason) -> Response {
    Response::new(vec![ContentBlock::text("cut")], stop_reason)
}

#[tokio::test]
async fn stop_reasons_follow_the_model_and_the_loop() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = ScriptedClient::new()
        .reply(reply(StopReason::MaxTokens))
        .reply(reply(StopReason::Refusal));
    // max_iterations is 4: a model that only calls tools runs out of turns.
    for i in 0..4 {
        model = model.reply_tool_call(
            format!("r{i}"),
            "read_file",
            json!({"path": format!("missing-{i}.txt")}),
        );
    }
    let mut peer = Peer::start(agent(model));
    let session = session_in(&mut peer, dir.path()).await;
    let cases = ["max_tokens", "refusal", "max_turn_requests"];
    for expected in cases {
        let (done, _) = peer.prompt(&session, "go").await;
        assert_eq!(done["result"]["stopReason"], expected, "{done}");
    }
}

#[tokio::test]
async fn cancel_mid_turn_stops_the_command_and_ends_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedClient::new()
        .reply_tool_call("s1", "bash", json!({"command": "sleep 30"}))
        .reply_text("never");
    let mut peer = Peer::start(agent(model));
    let session = session_in(&mut peer, dir.path()).await;
    let id = peer.start_request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "sleep"}]}),
    );
    // Approve, then wait until the command runs.
    loop {
        let message = peer.next_message().await;
        if message["method"] == "session/request_permission" {
            let reply = json!({"jsonrpc": "2.0", "id": message["id"],
                "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}}});
            peer.send_raw(&reply.to_string());
        }
        if message["params"]["update"]["status"] == "in_progress" {
            break;
        }
    }
    let started = Instant::now();
    peer.notify("session/cancel", json!({"sessionId": session}));
    let (done, _) = peer.finish(id).await;
    assert_eq!(done["result"]["stopReason"], "cancelled", "{done}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

/// A session in `dir` whose prompt "go" calls `bash`, read until the editor is asked for
/// permission: the peer, the session id and the prompt's request id.
async fn asked_for_permission(dir: &std::path::Path) -> (Peer, String, u64) {
    let model = ScriptedClient::new()
        .reply_tool_call("q1", "bash", json!({"command": "true"}))
        .reply_text("never");
    let mut peer = Peer::start(agent(model));
    let session = session_in(&mut peer, dir).await;
    let id = peer.start_request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}),
    );
    loop {
        if peer.next_message().await["method"] == "session/request_permission" {
            break;
        }
    }
    (peer, session, id)
}

#[tokio::test]
async fn cancel_while_a_permission_request_is_pending_ends_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let (mut peer, session, id) = asked_for_permission(dir.path()).await;
    peer.answer = None;
    peer.notify("session/cancel", json!({"sessionId": session}));
    let (done, notes) = peer.finish(id).await;
    assert_eq!(done["result"]["stopReason"], "cancelled", "{done}");
    // The pending request is withdrawn.
    assert!(
        notes.iter().any(|n| n["method"] == "$/cancel_request"),
        "{notes:?}"
    );
}

#[tokio::test]
async fn prompts_take_resources_and_images_and_refuse_audio() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedClient::new()
        .reply_text("seen")
        .reply_text("a picture");
    let mut peer = Peer::start(agent(model.clone()));
    let session = session_in(&mut peer, dir.path()).await;
    let (done, _) = peer
        .request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [
                {"type": "text", "text": "Explain"},
                {"type": "resource_link", "name": "main.rs", "uri": "file:///p/main.rs"},
                {"type": "resource", "resource": {"uri": "file:///p/a.rs", "text": "fn a() {}"}}
            ]}),
        )
        .await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let sent = serde_json::to_string(&model.requests()[0].messages).unwrap();
    assert!(
        sent.contains("file:///p/main.rs") && sent.contains("fn a() {}"),
        "{sent}"
    );
    let (image, _) = peer
        .request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [
                {"type": "text", "text": "What is this?"},
                {"type": "image", "data": "AA==", "mimeType": "image/png"}
            ]}),
        )
        .await;
    assert_eq!(image["result"]["stopReason"], "end_turn", "{image}");
    let asked = model.requests()[1].messages.last().unwrap().clone();
    assert_eq!(asked.text(), "What is this?");
    assert!(
        asked.content.iter().any(|block| matches!(
            block,
            mux_llm::ContentBlock::Image {
                source: mux_llm::ImageSource::Base64 { media_type, data }
            } if media_type == "image/png" && data == "AA=="
        )),
        "{asked:?}"
    );
    let (audio, _) = peer
        .request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "audio", "data": "AA==", "mimeType": "audio/wav"}]}),
        )
        .await;
    assert_eq!(audio["error"]["code"], -32602, "{audio}");
}

#[tokio::test]
async fn file_tools_go_through_the_editor_when_it_offers_fs() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("main.rs"), "fn main() {} // saved\n").unwrap();
    let model = ScriptedClient::new()
        .reply_tool_call("r1", "read_file", json!({"path": "main.rs"}))
        .reply_tool_call(
            "w1",
            "write_file",
            json!({"path": "new.rs", "content": "// new"}),
        )
        .reply_text("done");
    let mut peer = Peer::start(agent(model.clone()));
    peer.buffers.insert(
        root.join("main.rs").display().to_string(),
        "fn main() {} // unsaved\n".into(),
    );
    let (init, _) = peer
        .request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}}}),
        )
        .await;
    assert!(init.get("result").is_some());
    let session = peer.new_session(&root).await;
    let (done, notes) = peer.prompt(&session, "go").await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let asked_editor: Vec<_> = notes
        .iter()
        .filter_map(|n| n["method"].as_str())
        .filter(|m| m.starts_with("fs/"))
        .collect();
    // read_file's read, write_file asking for the old text (for its diff), the write.
    assert_eq!(
        asked_editor,
        [
            "fs/read_text_file",
            "fs/read_text_file",
            "fs/write_text_file"
        ]
    );
    let read_back = serde_json::to_string(&model.requests()[1].messages).unwrap();
    assert!(
        read_back.contains("unsaved") && !read_back.contains("// saved"),
        "{read_back}"
    );
    assert_eq!(
        peer.buffers[&root.join("new.rs").display().to_string()],
        "// new"
    );
    assert!(!root.join("new.rs").exists());
}

#[tokio::test]
async fn allow_always_can_record_in_the_project_scope() {
    use mux_acp::AcpAgent;
    use mux_orchestrator::Agent;
    use mux_permission::{
        PathContext, Permissions, Remember, RuleKind, RuleSet, Scope, ScopeRules,
    };
    use mux_tool::Typed;
    use mux_tool::builtin::{Sandbox, WriteFile};
    use std::sync::Arc;

    let dir = tempfile::tempdir().unwrap();
    let project = ScopeRules::new(RuleSet::new());
    let model = ScriptedClient::new()
        .reply_tool_call("a1", "write_file", json!({"path": "a.txt", "content": "1"}))
        .reply_text("done");
    let permissions = Permissions::builder(PathContext::new(dir.path()))
        .scope(Scope::Project, project.clone())
        .build();
    let agent = Agent::builder(model, "scripted")
        .tools_at(|root| {
            let tool = Typed::new(WriteFile::new(Sandbox::new(root)?))?;
            Ok(vec![Arc::new(tool) as Arc<dyn mux_tool::Tool>])
        })
        .permissions(permissions)
        .build()
        .unwrap();
    let agent = AcpAgent::new(agent).always_allow_in(Remember::exact(Scope::Project));
    let mut peer = Peer::start(agent);
    peer.answer = Some("allow_always");
    let session = session_in(&mut peer, dir.path()).await;
    let (done, _) = peer.prompt(&session, "write").await;
    assert_eq!(done["result"]["stopReason"], "end_turn");
    let rules: Vec<String> = project
        .read()
        .list(RuleKind::Allow)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(rules.len(), 1, "{rules:?}");
    assert!(
        rules[0].starts_with("write_file") || rules[0].starts_with("Edit"),
        "{rules:?}"
    );
}

#[tokio::test]
async fn a_second_prompt_on_a_busy_session_is_the_clients_error_not_an_internal_one() {
    let dir = tempfile::tempdir().unwrap();
    let (mut peer, session, first) = asked_for_permission(dir.path()).await;
    let second = peer.start_request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "again"}]}),
    );
    let busy = loop {
        let message = peer.next_message().await;
        if message["id"] == json!(second) && message.get("method").is_none() {
            break message;
        }
    };
    // -32602 invalid params: ACP defines no "busy" code, and the request is the client's
    // mistake (a session runs one prompt at a time), not the agent's failure (-32603).
    assert_eq!(busy["error"]["code"], -32602, "{busy}");
    let data = busy["error"]["data"].to_string();
    assert!(data.contains("already in progress"), "{busy}");
    peer.answer = None;
    peer.notify("session/cancel", json!({"sessionId": session}));
    let (done, _) = peer.finish(first).await;
    assert_eq!(done["result"]["stopReason"], "cancelled", "{done}");
}
