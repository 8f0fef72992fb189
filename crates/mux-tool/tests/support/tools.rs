//! Test tools that the integration tests of several crates share (mux-tool's, the
//! orchestrator's, the editor face's, the web face's), included by path so that no crate below
//! them needs a dev-dependency on a crate above.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use mux_tool::{
    Diff, Location, Presentation, Subject, TodoItem, TodoPriority, TodoStatus, ToolAnnotations,
    ToolContext, ToolError, ToolKind, ToolOutput, TypedTool,
};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
pub struct EchoArgs {
    /// Text to echo.
    pub text: String,
}

/// Echoes its text; read-only.
pub struct Echo;

impl TypedTool for Echo {
    type Args = EchoArgs;
    const NAME: &'static str = "echo";
    fn description(&self) -> String {
        "Echoes its text".into()
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only()
    }
    async fn call(&self, args: EchoArgs, _cx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(args.text))
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct FetchArgs {
    /// The URL.
    pub url: String,
}

/// Pretends to fetch a URL, annotated as the built-in `web_fetch` is (read-only, open world,
/// the URL as its subject). Counts its calls.
#[derive(Clone, Default)]
pub struct Fetch {
    pub calls: Arc<AtomicUsize>,
}

impl TypedTool for Fetch {
    type Args = FetchArgs;
    const NAME: &'static str = "web_fetch";
    fn description(&self) -> String {
        "Fetches a URL".into()
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only().with_open_world(true)
    }
    fn subject(&self, args: &FetchArgs) -> Subject {
        Subject::url(&args.url)
    }
    async fn call(&self, args: FetchArgs, _: ToolContext) -> Result<ToolOutput, ToolError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(ToolOutput::text(format!("fetched {}", args.url)))
    }
}

/// An application's edit tool: notes kept in memory, nothing a face could know by name. Its
/// output and preview carry the diff, its annotations the kind.
#[derive(Clone, Default)]
pub struct SaveNote {
    pub notes: Arc<Mutex<HashMap<String, String>>>,
}

impl SaveNote {
    /// A tool whose store starts with the note `name` = `text`.
    pub fn with_note(name: &str, text: &str) -> Self {
        let notes = [(name.to_owned(), text.to_owned())];
        Self {
            notes: Arc::new(Mutex::new(notes.into_iter().collect())),
        }
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct SaveNoteArgs {
    /// The note's name.
    pub name: String,
    /// Its whole new text.
    pub text: String,
}

impl TypedTool for SaveNote {
    type Args = SaveNoteArgs;
    const NAME: &'static str = "save_note";

    fn description(&self) -> String {
        "Saves a note".into()
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::destructive().with_kind(ToolKind::Edit)
    }

    fn subject(&self, args: &SaveNoteArgs) -> Subject {
        Subject::path(format!("notes/{}", args.name))
    }

    /// The diff the save would make, shown before the person approves it.
    async fn preview(&self, args: SaveNoteArgs) -> Option<Presentation> {
        let path = format!("notes/{}", args.name);
        let old = self.notes.lock().unwrap().get(&args.name).cloned();
        Some(Presentation::new().with_diff(Diff::new(&path, old.as_deref(), &args.text)))
    }

    async fn call(&self, args: SaveNoteArgs, _cx: ToolContext) -> Result<ToolOutput, ToolError> {
        let path = format!("notes/{}", args.name);
        let old = self
            .notes
            .lock()
            .unwrap()
            .insert(args.name.clone(), args.text.clone());
        Ok(ToolOutput::text("saved").with_presentation(
            Presentation::new()
                .with_location(Location::new(&path).with_line(1))
                .with_diff(Diff::new(&path, old.as_deref(), &args.text)),
        ))
    }
}

/// A plan kept by the application, shown as the todo list.
pub struct PlanSteps;

#[derive(Deserialize, JsonSchema)]
pub struct PlanStepsArgs {
    /// The steps, in order; the first is under way.
    pub steps: Vec<String>,
}

impl TypedTool for PlanSteps {
    type Args = PlanStepsArgs;
    const NAME: &'static str = "plan_steps";

    fn description(&self) -> String {
        "Plans the work".into()
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only().with_kind(ToolKind::Think)
    }

    async fn call(&self, args: PlanStepsArgs, _cx: ToolContext) -> Result<ToolOutput, ToolError> {
        let todos = args.steps.iter().enumerate().map(|(i, step)| {
            let item = TodoItem::new(step.as_str());
            if i == 0 {
                item.with_status(TodoStatus::InProgress)
                    .with_priority(TodoPriority::High)
            } else {
                item.with_priority(TodoPriority::Low)
            }
        });
        Ok(ToolOutput::text("planned").with_presentation(Presentation::new().with_todos(todos)))
    }
}
