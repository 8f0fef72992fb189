//! `todo_write`: the agent's todo list, kept in the call's shared [`Resources`](crate::Resources).

use std::fmt;
use std::sync::{PoisonError, RwLock};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::{
    Presentation, TodoItem, TodoStatus, ToolAnnotations, ToolContext, ToolError, ToolKind,
    ToolOutput, TypedTool,
};

/// How a status is marked in the list the model reads.
fn marker(status: TodoStatus) -> &'static str {
    match status {
        TodoStatus::Pending => "[ ]",
        TodoStatus::InProgress => "[>]",
        TodoStatus::Completed => "[x]",
    }
}

/// How many items are in each state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TodoCounts {
    /// Not started.
    pub pending: usize,
    /// Being worked on.
    pub in_progress: usize,
    /// Done.
    pub completed: usize,
}

/// The todo list `todo_write` maintains. `todo_write` finds it in the call's
/// [`Resources`](crate::Resources) (inserting an empty one if there is none), so an
/// application that inserts its own can read the list as the agent works.
///
/// ```
/// use mux_tool::builtin::{TodoItem, TodoList, TodoStatus};
///
/// let list = TodoList::new();
/// list.replace(vec![
///     TodoItem::new("Write the parser").with_status(TodoStatus::Completed),
///     TodoItem::new("Test the parser").with_status(TodoStatus::InProgress),
///     TodoItem::new("Document it"),
/// ]);
/// assert_eq!(list.current().map(|item| item.content), Some("Test the parser".to_owned()));
/// assert_eq!(
///     list.to_string(),
///     "Todo list (1/3 completed):\n[x] Write the parser\n[>] Test the parser\n[ ] Document it"
/// );
/// ```
#[derive(Debug, Default)]
pub struct TodoList {
    items: RwLock<Vec<TodoItem>>,
}

impl TodoList {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// The items, in order.
    pub fn items(&self) -> Vec<TodoItem> {
        self.items
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Replaces the whole list and returns the previous items.
    pub fn replace(&self, items: Vec<TodoItem>) -> Vec<TodoItem> {
        let mut guard = self.items.write().unwrap_or_else(PoisonError::into_inner);
        std::mem::replace(&mut *guard, items)
    }

    /// How many items are in each state.
    pub fn counts(&self) -> TodoCounts {
        let items = self.items.read().unwrap_or_else(PoisonError::into_inner);
        let mut counts = TodoCounts::default();
        for item in items.iter() {
            match item.status {
                TodoStatus::Pending => counts.pending += 1,
                TodoStatus::InProgress => counts.in_progress += 1,
                TodoStatus::Completed => counts.completed += 1,
            }
        }
        counts
    }

    /// The first item in progress.
    pub fn current(&self) -> Option<TodoItem> {
        self.items
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|item| item.status == TodoStatus::InProgress)
            .cloned()
    }

    /// The number of items.
    pub fn len(&self) -> usize {
        self.items
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl fmt::Display for TodoList {
    /// One line per item: `[ ]` pending, `[>]` in progress (with its active form), `[x]` done.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let items = self.items.read().unwrap_or_else(PoisonError::into_inner);
        if items.is_empty() {
            return f.write_str("Todo list is empty");
        }
        let done = items
            .iter()
            .filter(|item| item.status == TodoStatus::Completed)
            .count();
        write!(f, "Todo list ({done}/{} completed):", items.len())?;
        for item in items.iter() {
            write!(f, "\n{} {}", marker(item.status), item.content)?;
            if let (TodoStatus::InProgress, Some(active)) = (item.status, &item.active_form) {
                write!(f, " ({active})")?;
            }
        }
        Ok(())
    }
}

/// The arguments of `todo_write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TodoWriteArgs {
    /// The complete updated list; it replaces the previous one.
    pub todos: Vec<TodoItem>,
}

/// Replaces the todo list held in the call's resources and returns it formatted.
#[derive(Clone, Copy, Debug, Default)]
pub struct TodoWrite;

impl TypedTool for TodoWrite {
    type Args = TodoWriteArgs;
    const NAME: &'static str = "todo_write";

    fn description(&self) -> String {
        "Replaces your todo list for the current task with the complete updated list. Use it to \
         plan multi-step work and track progress: keep one item in_progress at a time and mark \
         items completed as soon as they are done."
            .into()
    }

    /// Read-only in the MCP sense: it changes only the agent's own todo list, not the
    /// environment, so a plan-only mode can still use it. Shown as thinking.
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only().with_kind(ToolKind::Think)
    }

    async fn call(&self, args: TodoWriteArgs, cx: ToolContext) -> Result<ToolOutput, ToolError> {
        if let Some(index) = args
            .todos
            .iter()
            .position(|item| item.content.trim().is_empty())
        {
            return Err(ToolError::InvalidArguments(format!(
                "todo {} has empty content",
                index + 1
            )));
        }
        let list = cx.resources().get_or_insert_with(TodoList::new);
        let shown = Presentation::new().with_todos(args.todos.iter().cloned());
        list.replace(args.todos);
        let counts = list.counts();
        Ok(ToolOutput::text(list.to_string())
            .with_metadata("counts", json!(counts))
            .with_presentation(shown))
    }
}
