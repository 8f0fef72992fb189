//! Turning agent events into console text.

use std::io::{self, Write};

use mux_orchestrator::LoopEvent;
use mux_tool::{Subject, ToolOutput};
use serde_json::Value;

use crate::AgentEvent;

/// The most lines of a tool result shown.
const RESULT_LINES: usize = 8;

/// What the last write left open, so blocks start on a fresh line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Open {
    Nothing,
    Text,
    Thinking,
    /// A prompt waits for the user's line.
    Prompt,
}

/// Renders [`AgentEvent`]s as plain text on any writer: streamed text as it comes, thinking
/// (optionally), tool blocks with arguments and results, approval prompts, and subagent
/// events prefixed with the subagent's name and id.
///
/// ```
/// use mux_agents::{AgentEvent, ConsoleRenderer};
/// use mux_orchestrator::LoopEvent;
///
/// let mut renderer = ConsoleRenderer::new(Vec::new());
/// renderer.render(&AgentEvent::Loop(LoopEvent::TextDelta { text: "Hi".into() }))?;
/// renderer.render(&AgentEvent::Loop(LoopEvent::TextDelta { text: " there".into() }))?;
/// assert_eq!(String::from_utf8(renderer.into_inner()).unwrap(), "Hi there");
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct ConsoleRenderer<W: Write> {
    out: W,
    show_thinking: bool,
    open: Open,
}

impl<W: Write> ConsoleRenderer<W> {
    /// A renderer writing to `out`, thinking hidden.
    pub fn new(out: W) -> Self {
        Self {
            out,
            show_thinking: false,
            open: Open::Nothing,
        }
    }

    /// Shows (or hides) the model's thinking.
    pub fn show_thinking(mut self, show: bool) -> Self {
        self.show_thinking = show;
        self
    }

    /// The writer.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    /// The writer, back.
    pub fn into_inner(self) -> W {
        self.out
    }

    /// Writes `line` on a line of its own.
    pub fn line(&mut self, line: &str) -> io::Result<()> {
        self.fresh_line()?;
        writeln!(self.out, "{line}")?;
        self.out.flush()
    }

    /// Writes a prompt (no newline) and flushes.
    pub fn prompt(&mut self, prompt: &str) -> io::Result<()> {
        self.fresh_line()?;
        write!(self.out, "{prompt}")?;
        self.open = Open::Prompt;
        self.out.flush()
    }

    /// The user answered the prompt. A terminal has echoed the line and its newline already;
    /// otherwise pass the line as `echo` to write it.
    pub fn answered(&mut self, echo: Option<&str>) -> io::Result<()> {
        if let Some(line) = echo {
            writeln!(self.out, "{line}")?;
        }
        self.open = Open::Nothing;
        self.out.flush()
    }

    fn fresh_line(&mut self) -> io::Result<()> {
        if self.open != Open::Nothing {
            writeln!(self.out)?;
            self.open = Open::Nothing;
        }
        Ok(())
    }

    /// Renders one event.
    pub fn render(&mut self, event: &AgentEvent) -> io::Result<()> {
        match event {
            AgentEvent::Loop(event) => self.loop_event("", event),
            AgentEvent::SubagentSpawned { id, agent, depth } => {
                self.line(&format!("[subagent {agent} {id}] started (depth {depth})"))
            }
            AgentEvent::Subagent { id, agent, event } => {
                self.loop_event(&format!("[subagent {agent} {id}] "), event)
            }
            AgentEvent::SubagentComplete { id, agent, result } => match result {
                Ok(text) => self.line(&format!(
                    "[subagent {agent} {id}] done: {}",
                    first_line(text)
                )),
                Err(err) => self.line(&format!("[subagent {agent} {id}] failed: {err}")),
            },
            AgentEvent::Lagged { missed } => self.line(&format!("[missed {missed} events]")),
        }
    }

    fn loop_event(&mut self, prefix: &str, event: &LoopEvent) -> io::Result<()> {
        let sub = !prefix.is_empty();
        match event {
            // A subagent's streamed text is summed up by its completion line.
            LoopEvent::TextDelta { text } if !sub => {
                if self.open == Open::Thinking {
                    self.fresh_line()?;
                }
                write!(self.out, "{text}")?;
                self.open = Open::Text;
                self.out.flush()
            }
            LoopEvent::ThinkingDelta { thinking } if !sub && self.show_thinking => {
                if self.open != Open::Thinking {
                    self.fresh_line()?;
                    write!(self.out, "(thinking) ")?;
                }
                write!(self.out, "{thinking}")?;
                self.open = Open::Thinking;
                self.out.flush()
            }
            LoopEvent::ToolCallArguments { name, input, .. } => {
                self.line(&format!("{prefix}* {name} {}", arguments(input)))
            }
            LoopEvent::ApprovalRequired {
                name,
                subject,
                reason,
                ..
            } => {
                let what = match subject {
                    Subject::None => String::new(),
                    other => format!(" {}", describe(other)),
                };
                self.line(&format!("{prefix}? {name}{what} needs approval: {reason}"))?;
                self.prompt("  allow (o)nce, allow (a)lways, (d)eny? ")
            }
            LoopEvent::ToolDenied { reason, .. } => {
                self.line(&format!("{prefix}x denied: {reason}"))
            }
            LoopEvent::ToolResult { name, output, .. } => self.result(prefix, name, output),
            LoopEvent::AwaitingInput { question, .. } => {
                self.line(&format!("{prefix}? {question}"))?;
                self.prompt("  answer: ")
            }
            LoopEvent::Error { kind, message } => {
                self.line(&format!("{prefix}! {kind}: {message}"))
            }
            LoopEvent::Finished { .. } if !sub => self.fresh_line(),
            _ => Ok(()),
        }
    }

    fn result(&mut self, prefix: &str, name: &str, output: &ToolOutput) -> io::Result<()> {
        let text = output.to_text();
        let lines: Vec<&str> = text.lines().collect();
        let mark = if output.is_error { "!" } else { "<" };
        self.line(&format!(
            "{prefix}{mark} {name}: {}",
            lines.first().copied().unwrap_or("")
        ))?;
        for line in lines.iter().skip(1).take(RESULT_LINES - 1) {
            self.line(&format!("{prefix}  {line}"))?;
        }
        if lines.len() > RESULT_LINES {
            self.line(&format!(
                "{prefix}  ... {} more lines",
                lines.len() - RESULT_LINES
            ))?;
        }
        Ok(())
    }
}

fn arguments(input: &Value) -> String {
    let text = input.to_string();
    if text.chars().count() > 200 {
        let cut: String = text.chars().take(200).collect();
        format!("{cut}...")
    } else {
        text
    }
}

fn describe(subject: &Subject) -> String {
    match subject {
        Subject::Command(command) => format!("`{command}`"),
        Subject::Path(path) => path.display().to_string(),
        Subject::Url(url) => url.clone(),
        _ => String::new(),
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}
