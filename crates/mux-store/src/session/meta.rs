//! A session's metadata, and the ids and times it is made with.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a store keeps about a session besides its messages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionMeta {
    /// The id (`[A-Za-z0-9_-]`, at most 128 bytes).
    pub id: String,
    /// A title, once generated or set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// Milliseconds since the Unix epoch of the last change.
    pub updated_at_ms: u64,
    /// The session this one was forked from or spawned by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// Free-form data (subagent links, the agent type, ...), sorted by key.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Value>,
}

impl SessionMeta {
    /// Metadata for a new session with a fresh id.
    pub fn new() -> Self {
        let now = now_ms();
        Self {
            id: session_id_at(now),
            title: None,
            created_at_ms: now,
            updated_at_ms: now,
            parent: None,
            extra: BTreeMap::new(),
        }
    }

    /// Marks the metadata as changed now.
    pub fn touch(&mut self) {
        self.updated_at_ms = now_ms();
    }
}

impl Default for SessionMeta {
    fn default() -> Self {
        Self::new()
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// A new, unique, sortable session id: milliseconds, process id and a counter, in hex.
pub fn new_session_id() -> String {
    session_id_at(now_ms())
}

/// A session id for the time `now_ms`.
fn session_id_at(now_ms: u64) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    // The process id is read once: `getpid` is a system call on every Linux libc today.
    static PID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let pid = *PID.get_or_init(std::process::id);
    // Written by hand: `format!` cost as much as the rest of a new conversation.
    let mut id = String::with_capacity(12 + 1 + 8 + 1 + 16);
    push_hex(&mut id, now_ms, 12);
    id.push('-');
    push_hex(&mut id, u64::from(pid), 1);
    id.push('-');
    push_hex(&mut id, count, 1);
    id
}

/// Appends `value` in lower-case hex, zero-padded to at least `width` digits (at most 16).
pub(super) fn push_hex(out: &mut String, value: u64, width: usize) {
    let significant = (64 - value.leading_zeros() as usize).div_ceil(4);
    let digits = significant.max(width).clamp(1, 16);
    for position in (0..digits).rev() {
        let nibble = (value >> (position * 4)) & 0xf;
        out.push(char::from(b"0123456789abcdef"[nibble as usize]));
    }
}
