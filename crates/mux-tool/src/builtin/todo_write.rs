//! `todo_write`: the agent's todo list, kept in the call's shared [`Resources`](crate::Resources).

use std::fmt;
use std::sync::{PoisonError, RwLock};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::{ToolAnnotations, ToolContext, ToolError, ToolOutput, TypedTool};

/// Where a todo item stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on now.
    InProgress,
    /// Done.
    Completed,
}

impl TodoStatus {
    fn marker(self) -> &'static str {
        match self {
            Self::Pending => "[ ]",
            Self::InProgress => "[>]",
            Self::Completed => "[x]",
        }
    }
}

/// One item of the todo list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TodoItem {
    /// What is to be done, in the imperative ("Run the tests").
    pub content: String,
    /// Where it stands.
    pub status: TodoStatus,
    /// The same in the present continuous ("Running the tests"), shown while in progress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_form: Option<String>,
}

impl TodoItem {
    /// A pending item.
    pub fn new(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            status: TodoStatus::Pending,
            active_form: None,
        }
    }

    /// The item with `status`.
    pub fn with_status(mut self, status: TodoStatus) -> Self {
        self.status = status;
        self
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
            write!(f, "\n{} {}", item.status.marker(), item.content)?;
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
    /// environment, so a plan-only mode can still use it.
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only()
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
        list.replace(args.todos);
        let counts = list.counts();
        Ok(ToolOutput::text(list.to_string()).with_metadata("counts", json!(counts)))
    }
}
