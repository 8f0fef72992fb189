//! The quickstart as a real process: offline, against a local server replaying a model that
//! asks the user a question, and against a provider that refuses the key.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use mux_llm::testing::{ReplayServer, Reply};
use serde_json::json;

/// Runs the quickstart in the repository root with stdin closed (not a terminal), no
/// provider keys except `env`, and a generous time limit.
fn run(env: &[(&str, String)]) -> (Output, String, String) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut command = Command::new(crate::common::example("quickstart"));
    command
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    crate::common::without_provider_keys(&mut command);
    for (key, value) in env {
        command.env(key, value);
    }
    let child = command.spawn().unwrap();
    crate::common::finish(child, "the quickstart", Duration::from_secs(60))
}

#[test]
fn offline_it_says_so_decides_automatically_and_calls_a_real_tool() {
    let (output, stdout, stderr) = run(&[]);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("running offline"), "{stdout}");
    assert!(
        stdout.contains("stdin is not a terminal: deciding automatically"),
        "{stdout}"
    );
    // The real list_dir tool ran on the repository root and its listing came back.
    assert!(stdout.contains("→ list_dir"), "{stdout}");
    assert!(stdout.contains("Its README begins: \"# mux\""), "{stdout}");
    assert!(
        stdout.contains("needs approval") && stdout.contains("denied automatically"),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_question_from_the_model_is_answered_when_no_one_can_answer() {
    let ask = json!({"type": "tool_use", "id": "toolu_1", "name": "ask_user",
        "input": {"question": "Which part interests you?"}});
    let server = ReplayServer::start(vec![
        Reply::sse(crate::common::anthropic_sse(&[ask], "tool_use")),
        Reply::sse(crate::common::anthropic_sse(
            &[json!({"type": "text", "text": "Fine, the whole project."})],
            "end_turn",
        )),
    ])
    .await
    .unwrap();
    let env = [
        ("ANTHROPIC_API_KEY", "test-key".to_owned()),
        ("ANTHROPIC_BASE_URL", server.url()),
    ];
    let (output, stdout, stderr) = tokio::task::spawn_blocking(move || run(&env))
        .await
        .unwrap();
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("Using Anthropic"), "{stdout}");
    assert!(stdout.contains("Which part interests you?"), "{stdout}");
    assert!(stdout.contains("Fine, the whole project."), "{stdout}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let answer = requests[1].json()["messages"].to_string();
    assert!(answer.contains("not available"), "{answer}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_provider_error_exits_non_zero_with_the_typed_error() {
    let body = json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}});
    let server = ReplayServer::start(vec![Reply::json(401, body.to_string())])
        .await
        .unwrap();
    let env = [
        ("ANTHROPIC_API_KEY", "bogus".to_owned()),
        ("ANTHROPIC_BASE_URL", server.url()),
    ];
    let (output, stdout, stderr) = tokio::task::spawn_blocking(move || run(&env))
        .await
        .unwrap();
    assert!(!output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("error: model call failed: anthropic: authentication failed (HTTP 401): invalid x-api-key"),
        "{stderr}"
    );
}
