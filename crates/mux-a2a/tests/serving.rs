//! The server over real HTTP (reqwest): the card, each method, an approval answered by the
//! next message, cancel stopping a running command, reattach after a dropped stream, and
//! garbage, wrong versions and refused hosts getting errors while the server stays up.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use futures::StreamExt as _;
use mux_a2a::{A2aConfig, A2aServer, Running};
use mux_llm::testing::ScriptedClient;
use serde_json::{Value, json};

mod support;

use support::{agent, client, rpc, user};

async fn serve(model: ScriptedClient, root: &std::path::Path, config: A2aConfig) -> Running {
    A2aServer::new(agent(model, root))
        .config(config)
        .serve(([127, 0, 0, 1], 0).into())
        .await
        .unwrap()
}

/// The items of an SSE answer, read until it ends or `stop` says so.
async fn stream_items(
    response: reqwest::Response,
    mut stop: impl FnMut(&Value) -> bool,
) -> Vec<Value> {
    let mut items = Vec::new();
    let mut buffer = String::new();
    let mut body = response.bytes_stream();
    while let Some(chunk) = tokio::time::timeout(Duration::from_secs(20), body.next())
        .await
        .expect("the stream stalled")
    {
        buffer.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        while let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            for line in event.lines() {
                if let Some(data) = line.strip_prefix("data: ") {
                    let item: Value = serde_json::from_str(data).unwrap();
                    assert_eq!(item["id"], 7, "{item}");
                    let result = item["result"].clone();
                    let done = stop(&result);
                    items.push(result);
                    if done {
                        return items;
                    }
                }
            }
        }
    }
    items
}

#[tokio::test]
async fn the_card_and_a_send_that_completes() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(
        ScriptedClient::new().reply_text("Hello!"),
        dir.path(),
        A2aConfig::default(),
    )
    .await;
    let card: Value = client()
        .get(format!("{}.well-known/agent-card.json", server.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(card["supportedInterfaces"][0]["protocolVersion"], "1.0");
    assert_eq!(card["supportedInterfaces"][0]["protocolBinding"], "JSONRPC");
    assert_eq!(card["supportedInterfaces"][0]["url"], server.rpc_url());
    assert_eq!(card["capabilities"]["streaming"], true);
    assert_eq!(card["capabilities"]["pushNotifications"], false);
    assert_eq!(card["skills"][0]["description"], "A test agent.");
    assert!(
        card["skills"][0]["tags"]
            .as_array()
            .unwrap()
            .contains(&json!("bash"))
    );

    let sent = rpc(&server, "SendMessage", user("hi", None)).await;
    let task = &sent["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "Hello!");
    assert_eq!(task["history"][0]["parts"][0]["text"], "hi");
    assert_eq!(task["history"][1]["role"], "ROLE_AGENT");
    let id = task["id"].as_str().unwrap();
    let got = rpc(&server, "GetTask", json!({"id": id, "historyLength": 1})).await;
    assert_eq!(got["result"]["history"].as_array().unwrap().len(), 1);
    let listed = rpc(
        &server,
        "ListTasks",
        json!({"contextId": task["contextId"]}),
    )
    .await;
    assert_eq!(listed["result"]["totalSize"], 1);
    assert_eq!(listed["result"]["tasks"][0]["id"], id);
    let done = rpc(&server, "CancelTask", json!({"id": id})).await;
    assert_eq!(done["error"]["code"], -32002, "{done}");
    server.shutdown().await;
}

#[tokio::test]
async fn an_approval_is_input_required_and_the_next_message_answers_it() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedClient::new()
        .reply_tool_call("c1", "bash", json!({"command": "echo approved > out.txt"}))
        .reply_text("Wrote it.");
    let server = serve(model, dir.path(), A2aConfig::default()).await;
    let sent = rpc(&server, "SendMessage", user("write", None)).await;
    let task = &sent["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{sent}"
    );
    let question = &task["status"]["message"]["parts"];
    assert_eq!(question[1]["data"]["approval"]["tool"], "bash");
    let id = task["id"].as_str().unwrap().to_owned();

    let unclear = rpc(&server, "SendMessage", user("perhaps", Some(&id))).await;
    assert_eq!(unclear["error"]["code"], -32602, "{unclear}");
    let answered = rpc(&server, "SendMessage", user("approve", Some(&id))).await;
    assert_eq!(
        answered["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{answered}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out.txt"))
            .unwrap()
            .trim(),
        "approved"
    );
    let again = rpc(&server, "SendMessage", user("approve", Some(&id))).await;
    assert_eq!(again["error"]["code"], -32004, "{again}");
    server.shutdown().await;
}

#[tokio::test]
async fn cancel_stops_the_running_command() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("still-running");
    let command = format!("sleep 30 && touch {}", marker.display());
    let model = ScriptedClient::new()
        .reply_tool_call("c1", "bash", json!({"command": command}))
        .reply_text("unreachable");
    let server = serve(model, dir.path(), A2aConfig::default()).await;
    let sent = rpc(&server, "SendMessage", user("sleep", None)).await;
    let id = sent["result"]["task"]["id"].as_str().unwrap().to_owned();
    let mut answer = user("yes", Some(&id));
    answer["configuration"] = json!({"returnImmediately": true});
    let working = rpc(&server, "SendMessage", answer).await;
    assert_eq!(
        working["result"]["task"]["status"]["state"], "TASK_STATE_WORKING",
        "{working}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let cancelled = rpc(&server, "CancelTask", json!({"id": id})).await;
    assert_eq!(
        cancelled["result"]["status"]["state"], "TASK_STATE_CANCELED",
        "{cancelled}"
    );
    let subscribe = rpc(&server, "SubscribeToTask", json!({"id": id})).await;
    assert_eq!(subscribe["error"]["code"], -32004, "{subscribe}");
    server.shutdown().await;
    assert!(!marker.exists());
}

#[tokio::test]
async fn a_dropped_stream_is_picked_up_by_subscribe() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedClient::new()
        .reply_text("one two three four five six seven eight")
        .stream_words(Duration::from_millis(60));
    let server = serve(model, dir.path(), A2aConfig::default()).await;
    let response = client()
        .post(server.rpc_url())
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 7, "method": "SendStreamingMessage", "params": user("count", None)}))
        .send()
        .await
        .unwrap();
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let first = stream_items(response, |item| item.get("artifactUpdate").is_some()).await;
    assert_eq!(first[0]["task"]["status"]["state"], "TASK_STATE_SUBMITTED");
    let id = first[0]["task"]["id"].as_str().unwrap().to_owned();

    let response = client()
        .post(server.rpc_url())
        .header("A2A-Version", "1.0")
        .json(
            &json!({"jsonrpc": "2.0", "id": 7, "method": "SubscribeToTask", "params": {"id": id}}),
        )
        .send()
        .await
        .unwrap();
    let rest = stream_items(response, |_| false).await;
    assert!(rest[0].get("task").is_some(), "{}", rest[0]);
    let last = rest.last().unwrap();
    assert_eq!(
        last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{last}"
    );
    let answer = rest
        .iter()
        .rev()
        .find_map(|item| item["artifactUpdate"]["artifact"]["parts"][0]["text"].as_str())
        .unwrap();
    assert_eq!(answer, "one two three four five six seven eight");
    server.shutdown().await;
}

#[tokio::test]
async fn garbage_gets_json_rpc_errors_and_the_server_stays_up() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(
        ScriptedClient::new().reply_text("still here"),
        dir.path(),
        A2aConfig::default(),
    )
    .await;
    let post = |body: &'static str, version: Option<&'static str>| {
        let mut request = client()
            .post(server.rpc_url())
            .header("content-type", "application/json")
            .body(body);
        if let Some(version) = version {
            request = request.header("A2A-Version", version);
        }
        async move { request.send().await.unwrap().json::<Value>().await.unwrap() }
    };
    let cases: [(&str, Option<&str>, i64); 9] = [
        ("{not json", Some("1.0"), -32700),
        ("[]", Some("1.0"), -32600),
        ("{\"jsonrpc\":\"2.0\",\"id\":1}", Some("1.0"), -32600),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"Nope\"}",
            Some("1.0"),
            -32601,
        ),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"message/send\"}",
            Some("1.0"),
            -32601,
        ),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"GetTask\",\"params\":{\"id\":5}}",
            Some("1.0"),
            -32602,
        ),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"GetTask\",\"params\":{\"id\":\"x\"}}",
            Some("1.0"),
            -32001,
        ),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"GetTask\",\"params\":{\"id\":\"x\"}}",
            None,
            -32009,
        ),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"GetTask\",\"params\":{\"id\":\"x\"}}",
            Some("0.3"),
            -32009,
        ),
    ];
    for (body, version, code) in cases {
        let answer = post(body, version).await;
        assert_eq!(
            answer["error"]["code"], code,
            "{body} {version:?}: {answer}"
        );
        assert_eq!(answer["jsonrpc"], "2.0");
    }
    let foreign = client()
        .post(server.rpc_url())
        .header("host", "evil.example")
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks"}))
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), 403);
    let form = client()
        .post(server.rpc_url())
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(form.status(), 415);
    let big = client()
        .post(server.rpc_url())
        .header("content-type", "application/json")
        .body(vec![b' '; 2 * 1024 * 1024])
        .send()
        .await
        .unwrap();
    assert_eq!(big.status(), 413);
    let sent = rpc(&server, "SendMessage", user("hi", None)).await;
    assert_eq!(
        sent["result"]["task"]["artifacts"][0]["parts"][0]["text"],
        "still here"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_token_guards_the_methods_but_not_the_card() {
    let dir = tempfile::tempdir().unwrap();
    let config = A2aConfig::default().bearer_token("s3cret");
    let server = serve(ScriptedClient::new().reply_text("ok"), dir.path(), config).await;
    let card: Value = client()
        .get(format!("{}.well-known/agent-card.json", server.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
        "Bearer"
    );
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks"});
    let refused = client()
        .post(server.rpc_url())
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let allowed: Value = client()
        .post(server.rpc_url())
        .header("A2A-Version", "1.0")
        .bearer_auth("s3cret")
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(allowed["result"]["totalSize"], 0, "{allowed}");
    server.shutdown().await;
    let open = A2aServer::new(
        mux_orchestrator::Agent::builder(ScriptedClient::new(), "m")
            .build()
            .unwrap(),
    )
    .serve(([0, 0, 0, 0], 0).into())
    .await;
    assert!(matches!(open, Err(mux_a2a::A2aError::Unprotected { .. })));
}

#[tokio::test]
async fn silent_and_slow_connections_are_closed() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let dir = tempfile::tempdir().unwrap();
    let mut config = A2aConfig::default();
    config.idle_timeout = Duration::from_millis(200);
    config.header_timeout = Duration::from_millis(200);
    let server = serve(ScriptedClient::new(), dir.path(), config).await;
    // One connection says nothing; another sends half a request line and stops.
    let mut silent = tokio::net::TcpStream::connect(server.local_addr())
        .await
        .unwrap();
    let mut slow = tokio::net::TcpStream::connect(server.local_addr())
        .await
        .unwrap();
    slow.write_all(b"POST /a2a HTTP/1.1\r\nHost: local")
        .await
        .unwrap();
    for stream in [&mut silent, &mut slow] {
        let mut buffer = Vec::new();
        // Ends (EOF, or a reset) only when the server closes the connection.
        let _closed =
            tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut buffer))
                .await
                .expect("the server kept the connection open");
    }
    // The server still answers.
    let listed = rpc(&server, "ListTasks", json!({})).await;
    assert_eq!(listed["result"]["totalSize"], 0, "{listed}");
    server.shutdown().await;
}
