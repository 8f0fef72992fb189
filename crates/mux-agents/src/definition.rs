//! What an agent is: a name, a prompt, the tools it may use, a model and an iteration budget.

use mux_tool::ToolFilter;

/// A reusable agent definition, built fluently.
///
/// ```
/// use mux_agents::AgentDefinition;
/// use mux_tool::ToolFilter;
///
/// let reviewer = AgentDefinition::new("reviewer")
///     .description("Reviews a change")
///     .system_prompt("You review code.")
///     .tools(ToolFilter::read_only())
///     .max_iterations(10);
/// assert_eq!(reviewer.name, "reviewer");
/// assert_eq!(reviewer.model, None);
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct AgentDefinition {
    /// A short identifier (`explorer`, `reviewer`); the `task` tool names definitions by it.
    pub name: String,
    /// What the agent is for; the `task` tool shows it to the delegating model.
    pub description: String,
    /// The system prompt.
    pub system_prompt: Option<String>,
    /// The tools it may use, out of the runtime's (or, for a subagent, its parent's) tools.
    pub tools: ToolFilter,
    /// The model; `None` uses the runtime's default model.
    pub model: Option<String>,
    /// The most model calls per run.
    pub max_iterations: u32,
    /// Whether the agent gets the `task` tool to delegate to other definitions.
    pub can_delegate: bool,
}

impl AgentDefinition {
    /// A definition named `name` with every tool, no prompt, the default model, 50 iterations,
    /// and delegation on.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: String::new(),
            system_prompt: None,
            tools: ToolFilter::All,
            model: None,
            max_iterations: 50,
            can_delegate: true,
        }
    }

    /// Renames the definition.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Sets the description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Sets the system prompt.
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Sets the tool filter.
    pub fn tools(mut self, filter: ToolFilter) -> Self {
        self.tools = filter;
        self
    }

    /// Sets the model.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Sets the iteration budget.
    pub fn max_iterations(mut self, max: u32) -> Self {
        self.max_iterations = max;
        self
    }

    /// Turns the `task` tool on or off.
    pub fn can_delegate(mut self, can: bool) -> Self {
        self.can_delegate = can;
        self
    }
}
