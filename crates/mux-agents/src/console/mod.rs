//! The console face: a read-prompt-render loop over an agent, with approval prompts, Ctrl+C
//! to cancel a run, `exit` / `quit` to leave and a graceful end of input.

mod input;
mod render;

use std::io::{self, Write};

use mux_orchestrator::{Answer, LoopEvent, LoopInput};
use mux_permission::{Remember, Scope};

pub use input::{ConsoleInput, Keys, LineInput, ScriptedInput};
pub use render::ConsoleRenderer;

use crate::{AgentError, AgentEvent, AgentHandle, AgentId, AgentRuntime};

/// How a console session ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConsoleExit {
    /// The user typed `exit` or `quit`.
    Quit,
    /// The input ended.
    EndOfInput,
}

/// A console over one agent: reads a line, runs it, renders the events, asks for approvals
/// (its own and its subagents'), until `exit`, `quit` (any case) or end of input. Ctrl+C
/// cancels the run in progress.
pub struct Console<I, W: Write> {
    input: I,
    renderer: ConsoleRenderer<W>,
    prompt: String,
    echo: bool,
    ended: bool,
}

impl<I: ConsoleInput, W: Write> Console<I, W> {
    /// A console reading `input` and rendering with `renderer`.
    pub fn new(input: I, renderer: ConsoleRenderer<W>) -> Self {
        Self {
            input,
            renderer,
            prompt: "> ".into(),
            echo: false,
            ended: false,
        }
    }

    /// The prompt shown before each line (default `"> "`).
    pub fn prompt(mut self, prompt: impl Into<String>) -> Self {
        self.prompt = prompt.into();
        self
    }

    /// Writes each line read after its prompt: for input that is not a terminal (which echoes
    /// by itself), so the transcript reads like a session.
    pub fn echo(mut self, echo: bool) -> Self {
        self.echo = echo;
        self
    }

    /// The renderer, back (with its writer).
    pub fn into_renderer(self) -> ConsoleRenderer<W> {
        self.renderer
    }

    /// Runs the session until the user leaves or the input ends.
    pub async fn run(
        &mut self,
        runtime: &AgentRuntime,
        agent: &AgentHandle,
    ) -> io::Result<ConsoleExit> {
        loop {
            if self.ended {
                return Ok(ConsoleExit::EndOfInput);
            }
            self.renderer.prompt(&self.prompt)?;
            let line = tokio::select! {
                line = self.input.read_line() => line?,
                () = self.input.interrupted() => {
                    self.renderer.line("^C (type exit or quit to leave)")?;
                    continue;
                }
            };
            self.renderer
                .answered(self.echo.then_some(line.as_deref().unwrap_or("")))?;
            let Some(line) = line else {
                self.ended = true;
                continue;
            };
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            if line.eq_ignore_ascii_case("exit") || line.eq_ignore_ascii_case("quit") {
                self.renderer.line("bye")?;
                return Ok(ConsoleExit::Quit);
            }
            self.turn(runtime, agent, line).await?;
        }
    }

    /// Runs one prompt to its end.
    async fn turn(
        &mut self,
        runtime: &AgentRuntime,
        agent: &AgentHandle,
        text: &str,
    ) -> io::Result<()> {
        let mut events = agent.subscribe();
        let mut run = agent.prompt(text).map_err(io::Error::other)?;
        let outcome = loop {
            tokio::select! {
                outcome = run.wait() => break outcome,
                event = events.recv() => {
                    let Some(event) = event else { continue };
                    self.renderer.render(&event)?;
                    self.answer(runtime, agent, &event).await?;
                }
                () = self.input.interrupted() => {
                    run.cancel();
                    self.renderer.line("^C")?;
                }
            }
        };
        while let Some(event) = events.try_recv() {
            self.renderer.render(&event)?;
        }
        match outcome {
            Ok(_) => Ok(()),
            Err(AgentError::Cancelled) => self.renderer.line("(cancelled)"),
            // The loop's own error was rendered from its event.
            Err(AgentError::Loop(_)) => Ok(()),
            Err(err) => self.renderer.line(&format!("! {err}")),
        }
    }

    /// Answers an approval request or a question, from this agent or a subagent.
    async fn answer(
        &mut self,
        runtime: &AgentRuntime,
        agent: &AgentHandle,
        event: &AgentEvent,
    ) -> io::Result<()> {
        let (from, event) = match event {
            AgentEvent::Loop(event) => (agent.id().clone(), event),
            AgentEvent::Subagent { id, event, .. } => (id.clone(), event),
            _ => return Ok(()),
        };
        let input = match event {
            LoopEvent::ApprovalRequired { call_id, .. } => LoopInput::ToolApproval {
                call_id: call_id.clone(),
                answer: self.decision().await?,
            },
            LoopEvent::AwaitingInput { call_id, .. } => LoopInput::UserResponse {
                call_id: call_id.clone(),
                text: self.read_answer().await?.unwrap_or_default(),
            },
            _ => return Ok(()),
        };
        let delivered = self.send(runtime, agent, &from, input).await;
        if !delivered {
            self.renderer.line("(the run ended before the answer)")?;
        }
        Ok(())
    }

    async fn send(
        &self,
        runtime: &AgentRuntime,
        agent: &AgentHandle,
        to: &AgentId,
        input: LoopInput,
    ) -> bool {
        if to == agent.id() {
            agent.send(input).await
        } else {
            runtime.send(to.as_str(), input).await
        }
    }

    /// Reads allow once / allow always / deny; Ctrl+C or end of input deny.
    async fn decision(&mut self) -> io::Result<Answer> {
        loop {
            let Some(line) = self.read_answer().await? else {
                return Ok(Answer::Deny {
                    reason: "the user did not answer".into(),
                });
            };
            match line.trim().to_ascii_lowercase().as_str() {
                "o" | "once" | "y" | "yes" => return Ok(Answer::AllowOnce),
                "a" | "always" => {
                    return Ok(Answer::AllowAlways {
                        remember: Remember::exact(Scope::Session),
                    });
                }
                "d" | "deny" | "n" | "no" => {
                    return Ok(Answer::Deny {
                        reason: "denied by the user".into(),
                    });
                }
                _ => self.renderer.prompt("  please answer o, a or d: ")?,
            }
        }
    }

    /// A line, or `None` on Ctrl+C or end of input (which also ends the session).
    async fn read_answer(&mut self) -> io::Result<Option<String>> {
        let line = tokio::select! {
            line = self.input.read_line() => line?,
            () = self.input.interrupted() => {
                self.renderer.line("^C")?;
                return Ok(None);
            }
        };
        if line.is_none() {
            self.ended = true;
        }
        self.renderer
            .answered(self.echo.then_some(line.as_deref().unwrap_or("")))?;
        Ok(line)
    }
}

impl<I, W: Write> std::fmt::Debug for Console<I, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Console")
            .field("prompt", &self.prompt)
            .finish_non_exhaustive()
    }
}
