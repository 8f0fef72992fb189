//! A real agent on the current directory, in one command.
//!
//! ```text
//! cargo run --example quickstart [-- --prompt "What is this project?"]
//! ```
//!
//! - With `ANTHROPIC_API_KEY` it talks to Anthropic (honouring `ANTHROPIC_BASE_URL`); with
//!   `OPENAI_API_KEY` or `OPENAI_BASE_URL` to OpenAI or a compatible server (Ollama, vLLM, ...).
//!   `MUX_MODEL` picks the model.
//! - With neither it says so and runs offline on a scripted model, which still calls the real
//!   built-in tools.
//! - Read-only tools run; anything else asks you on a terminal, and is decided automatically
//!   (denied) when stdin is not a terminal. So are the model's questions (`ask_user`): read
//!   from the terminal, or answered "the user is not available".

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

use mux::orchestrator::{Agent, Answer, LoopEvent, LoopInput, Run};

const DEFAULT_PROMPT: &str =
    "Look around this directory and tell me in a few sentences what this project is.";

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("\nerror: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), String> {
    let prompt = prompt_from_args()?;
    let chosen = mux_examples::offline::choose_model()?;
    println!("{}", chosen.description);

    // An agent on the current directory (its root) with mux's built-in tools. As on every
    // face, the read-only ones (list, read, search) run unasked; the rest (bash, edits) ask.
    let agent = Agent::builder_shared(chosen.client, chosen.model)
        .instructions(
            "You are a concise assistant exploring a software project. \
             Look before you answer; cite file names.",
        )
        .builtin_tools()
        .project_instructions()
        // This terminal answers the model's questions, so offer it `ask_user`.
        .ask_user(true)
        .build()
        .map_err(|e| e.to_string())?;

    let interactive = std::io::stdin().is_terminal();
    if !interactive {
        println!(
            "(stdin is not a terminal: deciding automatically; calls that need approval are denied \
             and questions are answered that the user is not available)"
        );
    }
    println!("> {prompt}\n");
    let run = agent.stream(prompt).map_err(|e| e.to_string())?;
    let summary = show(run, interactive).await?;
    println!(
        "\n\n[{} model calls, {} tool calls, {} input + {} output tokens]",
        summary.iterations,
        summary.tool_calls.len(),
        summary.usage.input_tokens
            + summary.usage.cache_read_tokens
            + summary.usage.cache_write_tokens,
        summary.usage.output_tokens
    );
    Ok(())
}

fn prompt_from_args() -> Result<String, String> {
    let mut args = std::env::args().skip(1);
    let mut prompt = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--prompt" => prompt = Some(args.next().ok_or("--prompt needs a value")?),
            "-h" | "--help" => {
                println!("usage: cargo run --example quickstart [-- --prompt TEXT]");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument `{other}` (try --prompt TEXT)")),
        }
    }
    Ok(prompt.unwrap_or_else(|| DEFAULT_PROMPT.to_owned()))
}

/// Prints the run's events readably and answers approvals.
async fn show(run: Run, interactive: bool) -> Result<mux::orchestrator::RunSummary, String> {
    let Run {
        mut events,
        input,
        handle,
    } = run;
    while let Some(event) = events.recv().await {
        match event {
            LoopEvent::TextDelta { text } => {
                print!("{text}");
                let _ = std::io::stdout().flush();
            }
            LoopEvent::ToolCallArguments { name, input, .. } => println!("\n  → {name} {input}"),
            LoopEvent::ToolResult { output, .. } => {
                let text = output.to_text();
                let first = text.lines().next().unwrap_or_default();
                let mark = if output.is_error { "✗" } else { "←" };
                println!(
                    "  {mark} {} ({} lines)",
                    first.chars().take(100).collect::<String>(),
                    text.lines().count()
                );
            }
            LoopEvent::ApprovalRequired {
                call_id,
                name,
                input: args,
                reason,
                ..
            } => {
                let decision = if interactive {
                    ask(&name, &args, &reason)
                } else {
                    println!("  ? {name} {args} needs approval ({reason}): denied automatically");
                    Answer::Deny {
                        reason: "not approved (non-interactive run)".into(),
                    }
                };
                input
                    .send(LoopInput::ToolApproval {
                        call_id,
                        answer: decision,
                    })
                    .await;
            }
            LoopEvent::AwaitingInput { call_id, question } => {
                let text = if interactive {
                    answer_question(&question)
                } else {
                    println!(
                        "  ? {question}\n    (stdin is not a terminal: answered that the user is not available)"
                    );
                    "The user is not available to answer; continue with your best judgement.".into()
                };
                input.send(LoopInput::UserResponse { call_id, text }).await;
            }
            _ => {}
        }
    }
    handle.wait().await.map_err(|err| err.to_string())
}

/// Reads the user's answer to an `ask_user` question from the terminal.
fn answer_question(question: &str) -> String {
    print!("\n  ? {question}\n    > ");
    let _ = std::io::stdout().flush();
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(n) if n > 0 => line.trim_end().to_owned(),
        _ => "The user did not answer.".into(),
    }
}

fn ask(name: &str, args: &serde_json::Value, reason: &str) -> Answer {
    print!("\n  ? {name} {args}\n    {reason}. Allow? [y/N] ");
    let _ = std::io::stdout().flush();
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
    if line.trim().eq_ignore_ascii_case("y") {
        Answer::AllowOnce
    } else {
        Answer::Deny {
            reason: "the user said no".into(),
        }
    }
}
