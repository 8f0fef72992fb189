//! The console in a real terminal: the test binary re-runs itself under `script` (a pty), so
//! the console reads a terminal line discipline and Ctrl+C arrives as a real SIGINT.

use crate::common;

use std::process::Stdio;
use std::time::Duration;

use common::Stalls;
use mux_agents::{
    AgentDefinition, AgentRuntime, AgentSession, Console, ConsoleExit, ConsoleRenderer, LineInput,
};
use mux_llm::testing::ScriptedClient;
use mux_llm::{BoxFuture, EventStream, LlmClient, LlmError, Request};
use mux_orchestrator::Agent;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Stalls when asked "slow", says "hi there" otherwise.
struct Model;

impl LlmClient for Model {
    fn provider(&self) -> &str {
        "tty"
    }
    fn stream(&self, request: Request) -> BoxFuture<'_, Result<EventStream, LlmError>> {
        let slow = request
            .messages
            .last()
            .map(|m| m.text())
            .unwrap_or_default()
            == "slow";
        Box::pin(async move {
            if slow {
                Stalls.stream(request).await
            } else {
                ScriptedClient::new()
                    .reply_text("hi there")
                    .stream(request)
                    .await
            }
        })
    }
}

/// The console side; run only by the test below, inside the pty.
#[tokio::test]
#[ignore = "run inside a pty by console_runs_in_a_real_terminal"]
async fn console_child() {
    let runtime = AgentRuntime::builder(Agent::builder(Model, "m").build().unwrap()).build();
    let agent = runtime
        .spawn(AgentDefinition::new("tty"), AgentSession::New)
        .await
        .unwrap();
    let mut console = Console::new(LineInput::stdin(), ConsoleRenderer::new(std::io::stdout()));
    let exit = console.run(&runtime, &agent).await.unwrap();
    assert_eq!(exit, ConsoleExit::Quit);
    println!("CHILD-DONE");
}

async fn wait_for(
    out: &mut tokio::process::ChildStdout,
    seen: &mut String,
    needle: &str,
) -> Result<(), String> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let mut buf = [0u8; 4096];
    while !seen.contains(needle) {
        let read = tokio::time::timeout_at(deadline, out.read(&mut buf))
            .await
            .map_err(|_| format!("timed out waiting for {needle:?}; saw:\n{seen}"))?
            .map_err(|e| e.to_string())?;
        if read == 0 {
            return Err(format!("output ended before {needle:?}; saw:\n{seen}"));
        }
        seen.push_str(&String::from_utf8_lossy(&buf[..read]));
    }
    Ok(())
}

#[tokio::test]
async fn console_runs_in_a_real_terminal() {
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        panic!("this test needs `script` (util-linux) to provide a pty");
    }
    let exe = std::env::current_exe().unwrap();
    // `exec`: no shell stays between `script` and the console. A waiting shell (dash, when
    // SHELL is unset) would get the same SIGINT and re-raise it on itself after the child ends.
    let command = format!(
        "exec '{}' --ignored --exact console_in_a_terminal::console_child --nocapture --test-threads 1",
        exe.display()
    );
    let mut child = tokio::process::Command::new("script")
        .args(["-qfec", &command, "/dev/null"])
        .env("SHELL", "/bin/sh")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut seen = String::new();

    wait_for(&mut out, &mut seen, "> ").await.unwrap();
    input.write_all(b"hello\r").await.unwrap();
    wait_for(&mut out, &mut seen, "hi there").await.unwrap();
    input.write_all(b"slow\r").await.unwrap();
    wait_for(&mut out, &mut seen, "working").await.unwrap();
    // Ctrl+C through the terminal: a SIGINT to the console, which cancels the run.
    input.write_all(b"\x03").await.unwrap();
    wait_for(&mut out, &mut seen, "(cancelled)").await.unwrap();
    input.write_all(b"QuIt\r").await.unwrap();
    wait_for(&mut out, &mut seen, "CHILD-DONE").await.unwrap();
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status:?}\n{seen}");
    assert!(seen.contains("bye"), "{seen}");
}
