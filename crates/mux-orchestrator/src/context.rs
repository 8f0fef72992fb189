//! Context providers: text injected as system content at the start of every turn. Built in:
//! [`ProjectInstructions`], [`SkillsList`], `TodoContext` (feature `builtin`) and
//! [`FnContext`] for state the application keeps.

use std::path::PathBuf;
use std::sync::Arc;

use mux_tool::BoxFuture;

/// Supplies system content for each turn (project instructions, plan state, skills).
pub trait ContextProvider: Send + Sync + 'static {
    /// A name for logs.
    fn name(&self) -> &str;

    /// The content to inject this turn, or `None` for nothing.
    fn provide(&self) -> BoxFuture<'_, Option<String>>;
}

/// Files an agent reads as project instructions, in the order they are looked for.
pub const INSTRUCTION_FILES: [&str; 3] = ["AGENTS.md", "CLAUDE.md", ".cursorrules"];

/// The project's instructions: the first of `AGENTS.md`, `CLAUDE.md` and `.cursorrules` found
/// in a directory, read on every turn so edits take effect. Large files are cut at 64 KiB.
#[derive(Clone, Debug)]
pub struct ProjectInstructions {
    dir: PathBuf,
}

impl ProjectInstructions {
    /// Reads instructions from `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }
}

const MAX_INSTRUCTIONS: usize = 64 * 1024;

impl ContextProvider for ProjectInstructions {
    fn name(&self) -> &str {
        "project_instructions"
    }

    fn provide(&self) -> BoxFuture<'_, Option<String>> {
        Box::pin(async move {
            for name in INSTRUCTION_FILES {
                let Ok(text) = tokio::fs::read_to_string(self.dir.join(name)).await else {
                    continue;
                };
                let cut = mux_tool::truncate::truncate_str(&text, MAX_INSTRUCTIONS);
                return Some(format!("Project instructions from {name}:\n{cut}"));
            }
            None
        })
    }
}

/// A list of skills the agent can use, each a name and a one-line description.
#[derive(Clone, Debug, Default)]
pub struct SkillsList {
    skills: Vec<(String, String)>,
}

impl SkillsList {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a skill.
    pub fn skill(mut self, name: impl Into<String>, description: impl Into<String>) -> Self {
        self.skills.push((name.into(), description.into()));
        self
    }
}

impl ContextProvider for SkillsList {
    fn name(&self) -> &str {
        "skills"
    }

    fn provide(&self) -> BoxFuture<'_, Option<String>> {
        let text = (!self.skills.is_empty()).then(|| {
            let lines: Vec<String> = self
                .skills
                .iter()
                .map(|(n, d)| format!("- {n}: {d}"))
                .collect();
            format!("Skills you can use:\n{}", lines.join("\n"))
        });
        Box::pin(std::future::ready(text))
    }
}

/// A provider from a closure, for state the application owns (a todo list, a plan).
///
/// ```
/// use mux_orchestrator::context::{ContextProvider, FnContext};
/// use std::sync::{Arc, Mutex};
///
/// let plan = Arc::new(Mutex::new(vec!["read the code".to_string()]));
/// let shared = Arc::clone(&plan);
/// let provider = FnContext::new("plan", move || {
///     let steps = shared.lock().ok()?;
///     (!steps.is_empty()).then(|| format!("Current plan:\n- {}", steps.join("\n- ")))
/// });
/// # let text = futures::executor::block_on(provider.provide());
/// # assert_eq!(text.as_deref(), Some("Current plan:\n- read the code"));
/// ```
#[derive(Clone)]
pub struct FnContext {
    name: String,
    f: Arc<dyn Fn() -> Option<String> + Send + Sync>,
}

impl FnContext {
    /// A provider named `name` that calls `f` each turn.
    pub fn new(
        name: impl Into<String>,
        f: impl Fn() -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            f: Arc::new(f),
        }
    }
}

impl std::fmt::Debug for FnContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnContext")
            .field("name", &self.name)
            .finish()
    }
}

impl ContextProvider for FnContext {
    fn name(&self) -> &str {
        &self.name
    }

    fn provide(&self) -> BoxFuture<'_, Option<String>> {
        Box::pin(std::future::ready((self.f)()))
    }
}

/// The agent's todo list (mux-tool's `todo_write`) as context, so the plan stays in view every
/// turn, also after compaction. Nothing is injected while the list is empty.
///
/// Share the list with `todo_write` through the orchestrator's resources:
///
/// ```
/// use mux_orchestrator::context::{ContextProvider, TodoContext};
/// use mux_tool::Resources;
/// use mux_tool::builtin::TodoItem;
///
/// let resources = Resources::new(); // pass to `AgentBuilder::resources`
/// let todos = TodoContext::from_resources(&resources);
/// # let list = resources.get::<mux_tool::builtin::TodoList>().unwrap();
/// # list.replace(vec![TodoItem::new("Read the code")]);
/// # let text = futures::executor::block_on(todos.provide());
/// # assert_eq!(text.as_deref(), Some("Todo list (0/1 completed):\n[ ] Read the code"));
/// ```
#[cfg(feature = "builtin")]
#[derive(Clone, Debug)]
pub struct TodoContext {
    list: Arc<mux_tool::builtin::TodoList>,
}

#[cfg(feature = "builtin")]
impl TodoContext {
    /// Shows `list`.
    pub fn new(list: Arc<mux_tool::builtin::TodoList>) -> Self {
        Self { list }
    }

    /// Shows the list held in `resources`, inserting an empty one if there is none. With the
    /// orchestrator's resources, it is the list `todo_write` updates in every run.
    pub fn from_resources(resources: &mux_tool::Resources) -> Self {
        Self::new(resources.get_or_insert_with(mux_tool::builtin::TodoList::new))
    }
}

#[cfg(feature = "builtin")]
impl ContextProvider for TodoContext {
    fn name(&self) -> &str {
        "todo_list"
    }

    fn provide(&self) -> BoxFuture<'_, Option<String>> {
        let text = (!self.list.is_empty()).then(|| self.list.to_string());
        Box::pin(std::future::ready(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn instructions_come_from_the_first_file_found() {
        let dir = tempfile::tempdir().unwrap();
        let provider = ProjectInstructions::new(dir.path());
        assert_eq!(provider.provide().await, None);
        std::fs::write(dir.path().join(".cursorrules"), "cursor rules").unwrap();
        std::fs::write(dir.path().join("CLAUDE.md"), "claude rules").unwrap();
        assert_eq!(
            provider.provide().await.unwrap(),
            "Project instructions from CLAUDE.md:\nclaude rules"
        );
        std::fs::write(dir.path().join("AGENTS.md"), "agent rules").unwrap();
        assert!(provider.provide().await.unwrap().ends_with("agent rules"));
    }

    #[tokio::test]
    async fn skills_are_listed() {
        assert_eq!(SkillsList::new().provide().await, None);
        let skills = SkillsList::new()
            .skill("pdf", "read PDFs")
            .skill("sql", "query databases");
        assert_eq!(
            skills.provide().await.unwrap(),
            "Skills you can use:\n- pdf: read PDFs\n- sql: query databases"
        );
    }
}
