//! The examples' coding agent on Temporal: the loop runs as a workflow, each model call and
//! tool call as an activity, and approvals are the workflow's `approve` update, answered here
//! on the terminal (any other process could answer them: see `mux::temporal::AgentRun`).
//!
//! ```text
//! temporal server start-dev            # or any Temporal server
//! TEMPORAL_ADDRESS=localhost:7233 cargo run --example temporal_agent -- "look around"
//! ```
//!
//! Without `TEMPORAL_ADDRESS` it says so and exits (successfully): it needs a server. It
//! starts a worker in this process, runs the prompt as a workflow, and prints each approval
//! the run waits for: type `y` to allow the call, anything else (or end of input) to deny it.
//! Offline (no provider key) the scripted model lists the directory, reads the README and asks
//! to run `git log`.

use std::io::BufRead;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use mux::permission::Answer;
use mux::temporal::{AgentWorker, RunStatus, TemporalAgent, WorkerSettings, connect};

/// The task queue the example's worker serves.
const TASK_QUEUE: &str = "mux-temporal-example";

#[tokio::main]
async fn main() -> ExitCode {
    mux_examples::exit_code_as("temporal_agent", run().await)
}

async fn run() -> Result<(), String> {
    let Ok(address) = std::env::var("TEMPORAL_ADDRESS") else {
        println!(
            "temporal_agent needs a Temporal server: start one (`temporal server start-dev`) and \
             set TEMPORAL_ADDRESS=localhost:7233 (TEMPORAL_NAMESPACE defaults to `default`)."
        );
        return Ok(());
    };
    let namespace = std::env::var("TEMPORAL_NAMESPACE").unwrap_or_else(|_| "default".into());
    let prompt = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "Look around this project.".into());

    let chosen = mux_examples::offline::choose_model()?;
    eprintln!("{}", chosen.description);
    let agent = mux_examples::coding_agent::agent(Arc::clone(&chosen.client), &chosen.model)
        .map_err(|e| e.to_string())?;
    let client = connect(&address, &namespace)
        .await
        .map_err(|e| e.to_string())?;
    let worker = AgentWorker::spawn(
        agent.clone(),
        client.clone(),
        TASK_QUEUE,
        WorkerSettings::default(),
    )
    .map_err(|e| e.to_string())?;

    let workflow_id = format!("temporal-agent-{}", std::process::id());
    let run = TemporalAgent::new(client, TASK_QUEUE, &agent)
        .start(&workflow_id, prompt)
        .await
        .map_err(|e| e.to_string())?;
    eprintln!("started workflow {workflow_id} on {address}");

    // The face: answer each approval the run parks on, until it ends.
    let outcome = run.outcome();
    tokio::pin!(outcome);
    let outcome = loop {
        tokio::select! {
            outcome = &mut outcome => break outcome.map_err(|e| e.to_string())?,
            () = tokio::time::sleep(Duration::from_millis(200)) => {
                for pending in run.pending().await.map_err(|e| e.to_string())? {
                    println!(
                        "approve `{}` {}? ({}) [y/N]",
                        pending.call.name, pending.call.input, pending.reason
                    );
                    let answer = match read_line().await.as_deref().map(str::trim) {
                        Some("y" | "Y" | "yes") => Answer::AllowOnce,
                        _ => Answer::deny("the user said no"),
                    };
                    run.approve(&pending.call.id, answer).await.map_err(|e| e.to_string())?;
                }
            }
        }
    };
    match outcome.status {
        RunStatus::Complete => println!("{}", outcome.text),
        _ => println!("(stopped at the turn limit) {}", outcome.text),
    }
    eprintln!(
        "{} turns, {} messages in the history (query `history` of {workflow_id})",
        outcome.turns,
        outcome.messages.len()
    );
    worker.shutdown().map_err(|e| e.to_string())
}

/// One line of stdin, or `None` at its end.
async fn read_line() -> Option<String> {
    tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line),
        }
    })
    .await
    .ok()
    .flatten()
}
