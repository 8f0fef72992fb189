//! Defines typed tools, registers them, and runs calls through the executor with a pre-hook,
//! a post-hook and an approval gate, printing what happens at each step.
//!
//! Run: `cargo run --example tools`

use std::sync::Mutex;

use mux::prelude::*;
use mux::tool::{
    CallScope, Executor, GateVerdict, PostHookAction, PreHookAction, Subject, ToolCall,
    approval::gate_fn, hooks::post_hook_fn, hooks::pre_hook_fn,
};
use mux_examples::step;
use serde_json::json;

/// Counts words; only reads.
struct WordCount;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct WordCountArgs {
    /// The text to count words in.
    text: String,
}

impl TypedTool for WordCount {
    type Args = WordCountArgs;
    const NAME: &'static str = "word_count";
    fn description(&self) -> String {
        "Counts the words in a text".into()
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only()
    }
    async fn call(&self, args: WordCountArgs, _cx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(
            args.text.split_whitespace().count().to_string(),
        ))
    }
}

/// Saves a note in memory; changes state, so the gate is asked.
#[derive(Default)]
struct SaveNote {
    notes: Mutex<Vec<String>>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct SaveNoteArgs {
    /// The note's title.
    title: String,
    /// The note's body.
    body: String,
}

impl TypedTool for SaveNote {
    type Args = SaveNoteArgs;
    const NAME: &'static str = "save_note";
    fn description(&self) -> String {
        "Saves a note".into()
    }
    fn subject(&self, args: &SaveNoteArgs) -> Subject {
        Subject::path(format!("notes/{}", args.title))
    }
    async fn call(&self, args: SaveNoteArgs, _cx: ToolContext) -> Result<ToolOutput, ToolError> {
        let mut notes = self
            .notes
            .lock()
            .map_err(|_| ToolError::failed("note store is poisoned"))?;
        notes.push(format!("{}: {}", args.title, args.body));
        Ok(ToolOutput::text(format!(
            "saved note {} of {}",
            notes.len(),
            notes.len()
        )))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = Registry::new();
    registry.register_typed(WordCount)?;
    registry.register_typed(SaveNote::default())?;
    step("registered tools", registry.names().join(", "));
    let save_note = registry
        .get("save_note")
        .ok_or("save_note is registered above")?;
    let schema = serde_json::to_string_pretty(&save_note.spec().input_schema)?;
    step("schema of save_note, generated from SaveNoteArgs", schema);

    let executor = Executor::builder(registry)
        // Pre-hook: trims titles (a rewrite) and refuses empty bodies (a block).
        .pre_hook(pre_hook_fn("tidy-notes", |call, _spec| {
            if call.name != "save_note" {
                return PreHookAction::Continue;
            }
            if call.input["body"]
                .as_str()
                .is_some_and(|b| b.trim().is_empty())
            {
                return PreHookAction::deny("a note needs a body");
            }
            let mut input = call.input.clone();
            if let Some(title) = input["title"].as_str() {
                input["title"] = json!(title.trim());
            }
            PreHookAction::Rewrite(input)
        }))
        // Gate: approves everything except notes whose path mentions "secret".
        .gate(gate_fn(|request| async move {
            println!(
                "    gate: {} touching {:?}",
                request.spec.name, request.subject
            );
            match &request.subject {
                Subject::Path(path) if path.to_string_lossy().contains("secret") => {
                    GateVerdict::deny("notes about secrets need a human")
                }
                _ => GateVerdict::allow(),
            }
        }))
        // Post-hook: observes every result.
        .post_hook(post_hook_fn("log", |call, result| {
            let verdict = match result {
                Ok(output) if !output.is_error => "ok".to_owned(),
                Ok(_) => "tool reported an error".to_owned(),
                Err(err) => format!("refused ({})", err.kind()),
            };
            println!("    post-hook: {} -> {verdict}", call.name);
            PostHookAction::Keep
        }))
        .build();

    let scope = CallScope::default();
    let calls = [
        ToolCall::new("1", "word_count", json!({"text": "one brain, many faces"})),
        ToolCall::new(
            "2",
            "save_note",
            json!({"title": "  groceries ", "body": "milk"}),
        ),
        ToolCall::new(
            "3",
            "save_note",
            json!({"title": "secret plan", "body": "..."}),
        ),
        ToolCall::new("4", "save_note", json!({"title": "empty", "body": "  "})),
        ToolCall::new("5", "word_count", json!({"txt": "typo in the field name"})),
        ToolCall::new("6", "word_cont", json!({"text": "typo in the tool name"})),
    ];
    for call in calls {
        let header = format!("call {} {} {}", call.id, call.name, call.input);
        println!("==> {header}");
        let outcome = executor.execute(call, &scope).await;
        let output = outcome.output();
        let label = if output.is_error { "error" } else { "output" };
        println!("    {label}: {}", output.to_text());
    }

    println!("==> a batch of three runs concurrently; results come back in call order");
    let batch = (0..3)
        .map(|i| {
            ToolCall::new(
                format!("b{i}"),
                "word_count",
                json!({"text": "a ".repeat(i + 1)}),
            )
        })
        .collect();
    let outcomes = executor.execute_batch(batch, &scope).await;
    let counts: Vec<String> = outcomes.iter().map(|o| o.output().to_text()).collect();
    step(
        "a batch of three runs concurrently; results come back in call order",
        counts.join(", "),
    );
    Ok(())
}
