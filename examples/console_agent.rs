//! An interactive agent on the console, with permission prompts.
//!
//! ```text
//! cargo run --example console_agent
//! ```
//!
//! Type a request; `exit` or `quit` (any case) leaves, Ctrl+C cancels the answer in progress,
//! end of input (Ctrl+D) ends the session. The agent can list the current directory (allowed
//! by rule) and write notes to a scratch file (it asks you first: allow once, allow always,
//! or deny). With `ANTHROPIC_API_KEY`, `OPENAI_API_KEY` or `OPENAI_BASE_URL` it uses that
//! provider (`MUX_MODEL` picks the model); otherwise a scripted model that lists the
//! directory, or writes a note when asked to.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use mux::agents::{
    AgentDefinition, AgentRuntime, AgentSession, Console, ConsoleExit, ConsoleRenderer, LineInput,
};
use mux::llm::anthropic::AnthropicClient;
use mux::llm::openai::OpenAiClient;
use mux::llm::testing::ScriptedClient;
use mux::llm::{ContentBlock, LlmClient, Request, Response};
use mux::orchestrator::Agent;
use mux::permission::{PathContext, Permissions, RuleSet, Scope, ScopeRules};
use mux::tool::{ToolAnnotations, ToolContext, ToolError, ToolOutput, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[tokio::main]
async fn main() -> ExitCode {
    mux_examples::exit_code(run().await)
}

async fn run() -> Result<(), String> {
    let (client, model) = choose_model()?;
    let root = std::env::current_dir().map_err(|e| e.to_string())?;
    let notes = std::env::temp_dir().join("mux-console-agent-notes.txt");

    let rules = RuleSet::new()
        .with_allow("list_dir")
        .map_err(|e| e.to_string())?;
    let permissions = Permissions::builder(PathContext::new(&root))
        .scope(Scope::Project, ScopeRules::new(rules))
        .build();
    let described = Agent::builder_shared(client, model)
        .tool(ListDir { root: root.clone() })
        .tool(WriteNote {
            file: notes.clone(),
        })
        .permissions(permissions)
        .build()
        .map_err(|e| e.to_string())?;
    let runtime = AgentRuntime::builder(described).build();
    let agent = runtime
        .spawn(
            AgentDefinition::new("assistant")
                .system_prompt("You are a concise assistant. Look before you answer.")
                .can_delegate(false),
            AgentSession::New,
        )
        .await
        .map_err(|e| e.to_string())?;

    println!(
        "Notes go to {}. Type exit or quit to leave.",
        notes.display()
    );
    let terminal = std::io::stdin().is_terminal();
    let mut console =
        Console::new(LineInput::stdin(), ConsoleRenderer::new(std::io::stdout())).echo(!terminal);
    let exit = console
        .run(&runtime, &agent)
        .await
        .map_err(|e| e.to_string())?;
    if exit == ConsoleExit::EndOfInput {
        println!("(end of input)");
    }
    agent.shutdown();
    agent.wait().await;
    Ok(())
}

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

/// Lists the names in the current directory.
struct ListDir {
    root: PathBuf,
}

impl TypedTool for ListDir {
    type Args = NoArgs;
    const NAME: &'static str = "list_dir";
    fn description(&self) -> String {
        "Lists the names in the current directory.".into()
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only()
    }
    async fn call(&self, _: NoArgs, _: ToolContext) -> Result<ToolOutput, ToolError> {
        let mut names: Vec<String> = std::fs::read_dir(&self.root)
            .map_err(ToolError::other)?
            .filter_map(|entry| entry.ok())
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        Ok(ToolOutput::text(names.join("\n")))
    }
}

#[derive(Deserialize, JsonSchema)]
struct NoteArgs {
    /// The note.
    text: String,
}

/// Appends a note to the scratch file; not read-only, so it asks.
struct WriteNote {
    file: PathBuf,
}

impl TypedTool for WriteNote {
    type Args = NoteArgs;
    const NAME: &'static str = "write_note";
    fn description(&self) -> String {
        "Appends a note to the user's scratch file.".into()
    }
    async fn call(&self, args: NoteArgs, _: ToolContext) -> Result<ToolOutput, ToolError> {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.file)
            .map_err(ToolError::other)?;
        writeln!(file, "{}", args.text).map_err(ToolError::other)?;
        Ok(ToolOutput::text("noted"))
    }
}

/// The provider from the environment, or the offline scripted model.
fn choose_model() -> Result<(Arc<dyn LlmClient>, String), String> {
    let model = std::env::var("MUX_MODEL").ok();
    if std::env::var_os("ANTHROPIC_API_KEY").is_some() {
        let client = AnthropicClient::from_env().map_err(|e| e.to_string())?;
        return Ok((
            Arc::new(client),
            model.unwrap_or_else(|| "claude-sonnet-4-5".into()),
        ));
    }
    if std::env::var_os("OPENAI_API_KEY").is_some() || std::env::var_os("OPENAI_BASE_URL").is_some()
    {
        let client = OpenAiClient::from_env().map_err(|e| e.to_string())?;
        return Ok((
            Arc::new(client),
            model.unwrap_or_else(|| "gpt-4o-mini".into()),
        ));
    }
    println!("No provider key set: running offline on a scripted model.");
    Ok((Arc::new(offline_model()), "scripted".into()))
}

/// Calls `write_note` when asked for a note, `list_dir` otherwise, then sums up the result.
fn offline_model() -> ScriptedClient {
    ScriptedClient::new().respond_with(|request: &Request| {
        let last = request.messages.last();
        let result = last.and_then(|m| {
            m.content.iter().find_map(|block| match block {
                ContentBlock::ToolResult { content, .. } => Some(
                    content
                        .iter()
                        .filter_map(ContentBlock::as_text)
                        .collect::<String>(),
                ),
                _ => None,
            })
        });
        if let Some(result) = result {
            let lines = result.lines().count();
            return Ok(text(&format!(
                "(offline) The tool said: {} ({lines} lines).",
                first(&result)
            )));
        }
        let prompt = last.map(|m| m.text()).unwrap_or_default();
        let (name, input) = if prompt.to_lowercase().contains("note") {
            ("write_note", json!({"text": prompt}))
        } else {
            ("list_dir", json!({}))
        };
        Ok(Response::from_tool_use("call_1", name, input))
    })
}

fn first(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

fn text(text: &str) -> Response {
    Response::from_text(text)
}
