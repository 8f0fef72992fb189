//! A progress line on standard error, only when it is a terminal.

use std::io::{IsTerminal, Write};

/// Counts finished attempts and redraws one line.
pub(crate) struct Progress {
    enabled: bool,
    total: usize,
    done: usize,
    failed: usize,
}

impl Progress {
    /// A line for `total` attempts, drawn when `wanted` (`None`: when stderr is a terminal).
    pub(crate) fn new(total: usize, wanted: Option<bool>) -> Self {
        let enabled = wanted.unwrap_or_else(|| std::io::stderr().is_terminal());
        Self {
            enabled,
            total,
            done: 0,
            failed: 0,
        }
    }

    /// One attempt finished.
    pub(crate) fn tick(&mut self, passed: bool) {
        self.done += 1;
        if !passed {
            self.failed += 1;
        }
        if self.enabled {
            let width = 30;
            let filled = (self.done * width).checked_div(self.total).unwrap_or(width);
            let bar: String = "#".repeat(filled) + &".".repeat(width - filled.min(width));
            let mut err = std::io::stderr().lock();
            let _ = write!(
                err,
                "\r[{bar}] {}/{} attempts, {} failed",
                self.done, self.total, self.failed
            );
            let _ = err.flush();
        }
    }

    /// Ends the line.
    pub(crate) fn finish(&self) {
        if self.enabled {
            let _ = writeln!(std::io::stderr());
        }
    }
}
