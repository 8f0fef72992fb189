//! Voting and decomposition with mux-agents.
//!
//! ```text
//! cargo run --example multiagent
//! ```
//!
//! With `ANTHROPIC_API_KEY` it uses Anthropic, with `OPENAI_API_KEY` or `OPENAI_BASE_URL` an
//! OpenAI-compatible server (`MUX_MODEL` picks the model); with neither it runs offline on a
//! scripted model. It prints the vote's tally and the plan's execution.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mux::agents::{AgentDefinition, AgentRuntime, Decomposition, StepOutcome, Voting, presets};
use mux::llm::anthropic::AnthropicClient;
use mux::llm::openai::OpenAiClient;
use mux::llm::testing::ScriptedClient;
use mux::llm::{LlmClient, Request, Response};
use mux::orchestrator::Agent;
use mux::tool::ToolFilter;
use serde_json::json;

const QUESTION: &str = "What is 17 * 3? Reply with the number only.";
const TASK: &str = "Add a `--version` flag to a small command-line tool, with a test and a \
                    changelog entry.";

#[tokio::main]
async fn main() -> ExitCode {
    mux_examples::exit_code(run().await)
}

async fn run() -> Result<(), String> {
    let (client, model) = choose_model()?;
    let agent = Agent::builder_shared(client, model)
        .build()
        .map_err(|e| e.to_string())?;
    let runtime = AgentRuntime::builder(agent).build();

    println!("== Voting: five agents answer \"{QUESTION}\"");
    let voter = AgentDefinition::new("solver")
        .system_prompt("You solve arithmetic. Reply with the number only.")
        .tools(ToolFilter::None)
        .can_delegate(false)
        .max_iterations(2);
    let vote = Voting::same(voter, 5)
        .run(&runtime, QUESTION)
        .await
        .map_err(|e| e.to_string())?;
    for (answer, votes) in &vote.tally {
        println!("  {votes} x {answer}");
    }
    match &vote.winner {
        Some(winner) => println!("  winner: {winner}"),
        None if vote.tie => println!("  tie: no winner"),
        None => println!("  no winner"),
    }
    for ballot in &vote.dissent {
        println!(
            "  dissent: {} ({}) said {:?}",
            ballot.voter, ballot.agent, ballot.answer
        );
    }
    if !vote.cancelled.is_empty() {
        println!("  cancelled once decided: {}", vote.cancelled.join(", "));
    }

    println!("\n== Decomposition: an architect plans, coders execute\n   task: {TASK}");
    let root = std::env::current_dir().map_err(|e| e.to_string())?;
    let coder = presets::coder_in(&root)
        .tools(ToolFilter::None)
        .max_iterations(4);
    let outcome = Decomposition::new(presets::architect(&root).max_iterations(4), coder)
        .run(&runtime, TASK)
        .await
        .map_err(|e| e.to_string())?;
    println!("  goal: {}", outcome.plan.goal);
    for (index, wave) in outcome.waves.iter().enumerate() {
        let parallel = if wave.len() > 1 { " (in parallel)" } else { "" };
        println!("  wave {}: {}{parallel}", index + 1, wave.join(", "));
    }
    for result in &outcome.results {
        let text = match &result.outcome {
            StepOutcome::Done(text) => text.lines().next().unwrap_or("").to_owned(),
            StepOutcome::Failed(err) => format!("FAILED: {err}"),
            StepOutcome::Skipped { because } => format!("skipped (needs {because})"),
            other => format!("{other:?}"),
        };
        println!("  [{}] {text}", result.id);
    }
    println!(
        "\n{} steps, {}",
        outcome.results.len(),
        if outcome.succeeded() {
            "all done"
        } else {
            "not all done"
        }
    );
    Ok(())
}

/// The provider from the environment, or the offline scripted model.
fn choose_model() -> Result<(Arc<dyn LlmClient>, String), String> {
    let model = std::env::var("MUX_MODEL").ok();
    if std::env::var_os("ANTHROPIC_API_KEY").is_some() {
        let client = AnthropicClient::from_env().map_err(|e| e.to_string())?;
        let model = model.unwrap_or_else(|| "claude-sonnet-4-5".into());
        println!("Using Anthropic ({model}).\n");
        return Ok((Arc::new(client), model));
    }
    if std::env::var_os("OPENAI_API_KEY").is_some() || std::env::var_os("OPENAI_BASE_URL").is_some()
    {
        let client = OpenAiClient::from_env().map_err(|e| e.to_string())?;
        let model = model.unwrap_or_else(|| "gpt-4o-mini".into());
        println!("Using an OpenAI-compatible server ({model}).\n");
        return Ok((Arc::new(client), model));
    }
    println!("No provider key set: running offline on a scripted model.\n");
    Ok((Arc::new(offline_model()), "scripted".into()))
}

/// Voters mostly agree (one writes "51." and one is wrong); the planner plans a diamond;
/// workers report their step.
fn offline_model() -> ScriptedClient {
    let votes = AtomicUsize::new(0);
    ScriptedClient::new().respond_with(move |request: &Request| {
        let system = request.system.clone().unwrap_or_default();
        let last = request.messages.last().map(|m| m.text()).unwrap_or_default();
        if system.contains("arithmetic") {
            let answer = ["51", "51.", "52", " 51", "51"][votes.fetch_add(1, Ordering::SeqCst) % 5];
            return Ok(text(answer));
        }
        if request.tools.iter().any(|t| t.name.as_str() == "finish_plan") {
            if request.messages.len() > 1 {
                return Ok(text("Plan handed over."));
            }
            return Ok(call(
                "finish_plan",
                json!({
                    "goal": "Ship a --version flag",
                    "steps": [
                        {"id": "flag", "description": "Parse --version and print the version"},
                        {"id": "test", "description": "Test that --version prints it", "depends_on": ["flag"]},
                        {"id": "changelog", "description": "Add a changelog entry", "depends_on": ["flag"]},
                        {"id": "review", "description": "Check everything together", "depends_on": ["test", "changelog"]}
                    ]
                }),
            ));
        }
        let step = last
            .split("Your step (")
            .nth(1)
            .and_then(|rest| rest.split(')').next())
            .unwrap_or("?");
        Ok(text(&format!("(offline) step `{step}` done.")))
    })
}

fn text(text: &str) -> Response {
    Response::from_text(text)
}

fn call(name: &str, input: serde_json::Value) -> Response {
    Response::from_tool_use("call_1", name, input)
}
