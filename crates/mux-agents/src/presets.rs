//! Ready-made definitions: explorer, planner, reviewer, coder, researcher, and the
//! Architect/Coder pair. Each is an ordinary [`AgentDefinition`], so every field can be
//! changed fluently.
//!
//! ```
//! use mux_agents::presets;
//! use mux_tool::ToolFilter;
//!
//! let explorer = presets::explorer().max_iterations(5).model("small-model");
//! assert_eq!(explorer.tools, ToolFilter::ReadOnly);
//! assert!(!explorer.can_delegate);
//! ```

use std::path::Path;

use mux_tool::ToolFilter;

use crate::AgentDefinition;

/// Reads and searches to answer a question about the code or data; read-only tools only.
pub fn explorer() -> AgentDefinition {
    AgentDefinition::new("explorer")
        .description("Explores files and answers questions about them; changes nothing.")
        .system_prompt(
            "You are an explorer. Use your read-only tools to find what the question needs, \
             then answer concisely, citing the files and lines you relied on. Never guess: \
             say what you could not find.",
        )
        .tools(ToolFilter::ReadOnly)
        .can_delegate(false)
}

/// Breaks a task into steps (read-only tools; hands the plan over with `finish_plan`).
pub fn planner() -> AgentDefinition {
    AgentDefinition::new("planner")
        .description("Breaks a task into ordered steps with dependencies.")
        .system_prompt(
            "You are a planner. Study the task (read files if you need to), then call \
             `finish_plan` once with the goal and small, concrete steps. Give each step a short \
             id, a description a worker can follow without other context, and the ids of the \
             steps it depends on. Steps that do not depend on each other run in parallel.",
        )
        .tools(ToolFilter::ReadOnly)
        .can_delegate(false)
}

/// Reviews a change for bugs, risks and style; read-only tools only.
pub fn reviewer() -> AgentDefinition {
    AgentDefinition::new("reviewer")
        .description("Reviews a change for correctness, risks and readability.")
        .system_prompt(
            "You are a code reviewer. Read the change and what it touches. Report concrete \
             problems first (bugs, missing error handling, security), each with its location \
             and a fix, then smaller remarks. Say plainly when the change looks right.",
        )
        .tools(ToolFilter::ReadOnly)
        .can_delegate(false)
}

/// Writes and changes code with every tool (writes still go through the permission policy).
pub fn coder() -> AgentDefinition {
    AgentDefinition::new("coder")
        .description("Implements a change: edits files and runs commands.")
        .system_prompt(
            "You are a careful programmer. Make the smallest change that does the job, keep \
             the existing style, run the checks you can, and finish with a short summary of \
             what you changed and how you verified it.",
        )
        .tools(ToolFilter::All)
        .can_delegate(false)
}

/// Gathers information from read-only and open-world tools (search, fetch) and reports with
/// sources.
pub fn researcher() -> AgentDefinition {
    AgentDefinition::new("researcher")
        .description("Researches a question and reports findings with sources.")
        .system_prompt(
            "You are a researcher. Gather evidence with your tools, compare sources, and \
             report what you found with a source for each claim. Separate facts from guesses.",
        )
        .tools(ToolFilter::ReadOnly.or(ToolFilter::OpenWorld))
        .can_delegate(false)
}

/// The Architect of the Architect/Coder pair: a planner that designs the change for a coder
/// working in `root`.
pub fn architect(root: &Path) -> AgentDefinition {
    let root = root.display();
    planner()
        .description("Designs a change and plans it as steps for coders.")
        .system_prompt(format!(
            "You are a software architect for the project at {root}. Read what you need, decide \
             the design, then call `finish_plan` once: the goal, and steps a coder can carry out \
             one at a time (file paths relative to {root}, the exact behaviour wanted, how to \
             check it), with the ids of the steps each depends on."
        ))
        .with_name("architect")
}

/// The Coder of the Architect/Coder pair: carries out one step inside `root`. Confinement to
/// `root` comes from the tools (file tools rooted there) and the permission policy's path
/// context; the prompt tells the model where it works.
pub fn coder_in(root: &Path) -> AgentDefinition {
    let root = root.display();
    coder().system_prompt(format!(
        "You are a careful programmer working only inside {root}. Carry out the step you are \
         given, nothing more; keep the existing style; run the checks the step names; finish \
         with a short summary of what you changed and how you verified it."
    ))
}
