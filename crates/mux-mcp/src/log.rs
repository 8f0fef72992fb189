//! The bounded per-server log of stderr lines and protocol events.

use std::collections::VecDeque;
use std::time::SystemTime;

use serde::Serialize;

/// How many entries a server's log keeps; older ones are dropped first.
pub const LOG_CAPACITY: usize = 1000;

/// Where a log entry came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum LogSource {
    /// A line the server wrote to stderr.
    Stderr,
    /// A `notifications/message` the server sent.
    Server,
    /// A lifecycle or protocol event seen by mux (state changes, calls, refreshes).
    Protocol,
}

/// How severe a log entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum LogLevel {
    /// Detail.
    Debug,
    /// Normal events.
    Info,
    /// Something odd.
    Warning,
    /// A failure.
    Error,
}

/// One log entry.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LogEntry {
    /// When it was recorded.
    pub at: SystemTime,
    /// Its severity.
    pub level: LogLevel,
    /// Where it came from.
    pub source: LogSource,
    /// The text.
    pub message: String,
}

/// A ring of the latest [`LOG_CAPACITY`] entries.
#[derive(Debug, Default)]
pub(crate) struct LogBuffer {
    entries: VecDeque<LogEntry>,
    dropped: u64,
}

impl LogBuffer {
    pub(crate) fn push(&mut self, entry: LogEntry) {
        if self.entries.len() == LOG_CAPACITY {
            self.entries.pop_front();
            self.dropped += 1;
        }
        self.entries.push_back(entry);
    }

    pub(crate) fn snapshot(&self) -> Vec<LogEntry> {
        self.entries.iter().cloned().collect()
    }

    pub(crate) fn dropped(&self) -> u64 {
        self.dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_keeps_the_latest_thousand() {
        let mut log = LogBuffer::default();
        for i in 0..1500 {
            log.push(LogEntry {
                at: SystemTime::now(),
                level: LogLevel::Info,
                source: LogSource::Stderr,
                message: i.to_string(),
            });
        }
        let entries = log.snapshot();
        assert_eq!(entries.len(), LOG_CAPACITY);
        assert_eq!(entries[0].message, "500");
        assert_eq!(entries[LOG_CAPACITY - 1].message, "1499");
        assert_eq!(log.dropped(), 500);
    }
}
