//! Where the console reads from: any line source plus a Ctrl+C signal.

use std::collections::VecDeque;
use std::io;
use std::sync::{Mutex, PoisonError};

use mux_tool::BoxFuture;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, Lines};

/// What the console reads: lines, and interrupts (Ctrl+C).
pub trait ConsoleInput: Send {
    /// The next line without its newline; `None` at end of input. Must be cancel-safe.
    fn read_line(&self) -> BoxFuture<'_, io::Result<Option<String>>>;

    /// Resolves when the user interrupts (Ctrl+C). Must be cancel-safe.
    fn interrupted(&self) -> BoxFuture<'_, ()>;
}

/// Lines from any async reader (stdin, a pipe, a pty), Ctrl+C from the process's SIGINT.
#[derive(Debug)]
pub struct LineInput<R> {
    lines: tokio::sync::Mutex<Lines<R>>,
}

impl<R: AsyncBufRead + Unpin + Send> LineInput<R> {
    /// Reads lines from `reader`.
    pub fn new(reader: R) -> Self {
        Self {
            lines: tokio::sync::Mutex::new(reader.lines()),
        }
    }
}

impl LineInput<tokio::io::BufReader<tokio::io::Stdin>> {
    /// Reads the process's standard input.
    pub fn stdin() -> Self {
        Self::new(tokio::io::BufReader::new(tokio::io::stdin()))
    }
}

impl<R: AsyncBufRead + Unpin + Send> ConsoleInput for LineInput<R> {
    fn read_line(&self) -> BoxFuture<'_, io::Result<Option<String>>> {
        // `next_line` is cancel-safe, and dropping the future releases the lock.
        Box::pin(async move { self.lines.lock().await.next_line().await })
    }

    fn interrupted(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {
            if tokio::signal::ctrl_c().await.is_err() {
                // No signal handling here: never report an interrupt.
                std::future::pending::<()>().await;
            }
        })
    }
}

/// One step of a [`ScriptedInput`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Keys {
    /// A line typed and entered.
    Line(String),
    /// Ctrl+C.
    CtrlC,
}

/// Input played from a script, for tests and demos. After the script: end of input.
#[derive(Debug, Default)]
pub struct ScriptedInput {
    script: Mutex<VecDeque<Keys>>,
}

impl ScriptedInput {
    /// Plays `script`.
    pub fn new(script: impl IntoIterator<Item = Keys>) -> Self {
        Self {
            script: Mutex::new(script.into_iter().collect()),
        }
    }

    /// Plays these lines.
    pub fn lines<S: Into<String>>(lines: impl IntoIterator<Item = S>) -> Self {
        Self::new(lines.into_iter().map(|l| Keys::Line(l.into())))
    }
}

impl ScriptedInput {
    fn script(&self) -> std::sync::MutexGuard<'_, VecDeque<Keys>> {
        self.script.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ConsoleInput for ScriptedInput {
    fn read_line(&self) -> BoxFuture<'_, io::Result<Option<String>>> {
        Box::pin(async move {
            let next = {
                let mut script = self.script();
                match script.front() {
                    // A Ctrl+C is next: only `interrupted` consumes it.
                    Some(Keys::CtrlC) => None,
                    _ => Some(script.pop_front()),
                }
            };
            match next {
                None => std::future::pending().await,
                Some(Some(Keys::Line(line))) => Ok(Some(line)),
                Some(_) => Ok(None),
            }
        })
    }

    fn interrupted(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let interrupt = {
                let mut script = self.script();
                let next = script.front() == Some(&Keys::CtrlC);
                if next {
                    script.pop_front();
                }
                next
            };
            if !interrupt {
                std::future::pending::<()>().await;
            }
        })
    }
}
