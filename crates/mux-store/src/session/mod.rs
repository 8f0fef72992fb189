//! Sessions: metadata plus an append-only message log, behind a [`SessionStore`] trait.

mod file;
mod memory;
mod meta;
mod page;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql_store;
#[cfg(feature = "sqlite")]
mod sqlite;

use std::collections::BTreeMap;

use mux_llm::Message;
use mux_tool::BoxFuture;
use serde::{Deserialize, Serialize};

pub use file::FileSessionStore;
pub use memory::MemorySessionStore;
pub use meta::{SessionMeta, new_session_id};
pub use page::{PageCursor, SessionPage};
#[cfg(feature = "postgres")]
pub use postgres::PostgresSessionStore;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteSessionStore;

/// A loaded session.
#[derive(Clone, Debug, PartialEq)]
pub struct Session {
    /// Its metadata.
    pub meta: SessionMeta,
    /// Its messages, oldest first.
    pub messages: Vec<Message>,
    /// How far each tool call of the last turn got, when the turn's results were never
    /// written (its run paused, or stopped mid-turn): call id → progress. Empty otherwise.
    pub calls: BTreeMap<String, CallProgress>,
}

impl Session {
    /// The session a log describes: its messages, and the progress of calls the log leaves
    /// open.
    pub fn replay(meta: SessionMeta, records: impl IntoIterator<Item = HistoryRecord>) -> Self {
        let mut messages = Vec::new();
        let mut calls = BTreeMap::new();
        for record in records {
            match record {
                HistoryRecord::Message { message } => {
                    // A turn's results (or anything after them) close its calls.
                    calls.clear();
                    messages.push(message);
                }
                HistoryRecord::Replace { messages: all } => {
                    calls.clear();
                    messages = all;
                }
                HistoryRecord::Call { call_id, progress } => {
                    calls.insert(call_id, progress);
                }
            }
        }
        Self {
            meta,
            messages,
            calls,
        }
    }
}

/// How far a tool call got before its turn's results were written. Recorded as it happens,
/// so another process can continue a run that paused or stopped mid-turn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "progress", rename_all = "snake_case")]
pub enum CallProgress {
    /// It waits for a person's approval.
    AwaitingApproval {
        /// Why the policy asks.
        reason: String,
    },
    /// It was approved and started; its outcome is not known yet.
    Started,
    /// It returned this output (what the model reads).
    Finished {
        /// The output.
        output: mux_tool::ToolOutput,
    },
}

/// One line of a session's log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case")]
pub enum HistoryRecord {
    /// A message appended to the conversation.
    Message {
        /// The message.
        message: Message,
    },
    /// The conversation replaced as a whole (after compaction).
    Replace {
        /// The new conversation.
        messages: Vec<Message>,
    },
    /// A tool call of the last turn moved on. The next message supersedes it.
    Call {
        /// The call id.
        call_id: String,
        /// How far it got.
        progress: CallProgress,
    },
}

/// Why a session operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// No session has this id.
    #[error("session `{0}` does not exist")]
    NotFound(String),
    /// A session with this id exists already.
    #[error("session `{0}` already exists")]
    AlreadyExists(String),
    /// The id is not usable as a session id.
    #[error("`{0}` is not a valid session id (use {ID_RULE})")]
    InvalidId(String),
    /// A record before the last one is unreadable: the log was damaged, not just torn.
    #[error("session `{id}` history line {line} is corrupt: {reason}")]
    Corrupt {
        /// The session.
        id: String,
        /// The 1-based line.
        line: usize,
        /// What the parser said.
        reason: String,
    },
    /// Reading or writing failed.
    #[error("{}: {operation} failed: {source}", subject(id))]
    Io {
        /// The session, or `None` for the whole store (creating its directory, listing).
        id: Option<String>,
        /// What was being done.
        operation: &'static str,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A session's metadata or a record could not be turned into JSON.
    #[error("session `{id}`: {operation} failed: {source}")]
    Serialize {
        /// The session.
        id: String,
        /// What was being serialized.
        operation: &'static str,
        /// The serializer's error.
        #[source]
        source: serde_json::Error,
    },
    /// A database refused or failed an operation.
    #[error("{}: {operation} failed: {source}", subject(id))]
    Database {
        /// The session, or `None` for the whole store (opening, migrating, listing).
        id: Option<String>,
        /// What was being done.
        operation: &'static str,
        /// The database driver's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The database was written by a newer mux whose schema this version does not know.
    #[error(
        "the session database has schema version {found}, newer than the {supported} this mux knows; upgrade mux"
    )]
    SchemaTooNew {
        /// The version found in the database.
        found: i64,
        /// The newest version this build can use.
        supported: i64,
    },
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
impl From<crate::store_bound::Unanswered> for SessionError {
    fn from(err: crate::store_bound::Unanswered) -> Self {
        Self::Database {
            id: None,
            operation: "waiting for the database's answer",
            source: Box::new(err),
        }
    }
}

/// The fault a database error's `source` shows: the driver's, the group commit's, an
/// unanswered statement's; a refused statement or another error is the store failing.
fn database_fault(source: &(dyn std::error::Error + 'static)) -> crate::fault::StoreFault {
    use crate::fault::StoreFault;
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    if let Some(err) = source.downcast_ref::<sqlx::Error>() {
        return StoreFault::of_sqlx(err).unwrap_or(StoreFault::Failed);
    }
    #[cfg(feature = "postgres")]
    if let Some(failure) = source.downcast_ref::<crate::group_commit::Failure>() {
        return failure.fault.unwrap_or(StoreFault::Failed);
    }
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    if source.is::<crate::store_bound::Unanswered>() {
        return StoreFault::Unanswered;
    }
    let _ = source;
    StoreFault::Failed
}

/// What an error is about: "session `id`", or "session store" for the whole store.
fn subject(id: &Option<String>) -> String {
    match id {
        Some(id) => format!("session `{id}`"),
        None => "session store".to_owned(),
    }
}

impl SessionError {
    /// Whether trying again may succeed: the store could not be reached or failed to answer
    /// (I/O, the database). The others (a session that exists or does not, an invalid id, a
    /// record that does not serialize, a corrupt log, a newer schema) stay as they are.
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Io { .. } | Self::Database { .. })
    }

    /// Why the store could not be used, when the store (not the request) is at fault: its
    /// disk is full, it is read-only, locked, down or not answering. A face answers these with
    /// its "store unavailable" status (a retry once the cause is gone succeeds); `None` for a
    /// session that exists or does not, an invalid id, a corrupt log or a newer schema.
    pub fn fault(&self) -> Option<crate::fault::StoreFault> {
        use crate::fault::StoreFault;
        match self {
            Self::Io { source, .. } => Some(StoreFault::of_io(source)),
            Self::Database { source, .. } => Some(database_fault(&**source)),
            _ => None,
        }
    }

    /// An I/O error of session `id`.
    pub(crate) fn io(id: &str, operation: &'static str) -> impl FnOnce(std::io::Error) -> Self {
        move |source| Self::Io {
            id: Some(id.to_owned()),
            operation,
            source,
        }
    }

    /// A serialization error of session `id`.
    pub(crate) fn serialize(
        id: &str,
        operation: &'static str,
    ) -> impl FnOnce(serde_json::Error) -> Self {
        move |source| Self::Serialize {
            id: id.to_owned(),
            operation,
            source,
        }
    }
}

/// What a session store's operations return: a boxed future of the result.
pub type SessionFuture<'a, T> = BoxFuture<'a, Result<T, SessionError>>;

/// Where sessions live. Every method may be called concurrently for different sessions.
pub trait SessionStore: Send + Sync + 'static {
    /// Creates a session with no messages.
    fn create<'a>(&'a self, meta: &'a SessionMeta) -> SessionFuture<'a, ()>;

    /// Replaces a session's metadata.
    fn save_meta<'a>(&'a self, meta: &'a SessionMeta) -> SessionFuture<'a, ()>;

    /// Appends records to a session's log.
    fn append<'a>(&'a self, id: &'a str, records: &'a [HistoryRecord]) -> SessionFuture<'a, ()>;

    /// Replaces a session's metadata and appends `records` to its log, in one step where the
    /// store can (the SQL stores: one transaction, so one commit). The default saves the
    /// metadata, then appends.
    fn save_and_append<'a>(
        &'a self,
        meta: &'a SessionMeta,
        records: &'a [HistoryRecord],
    ) -> SessionFuture<'a, ()> {
        Box::pin(async move {
            self.save_meta(meta).await?;
            if records.is_empty() {
                return Ok(());
            }
            self.append(&meta.id, records).await
        })
    }

    /// Creates a session whose log starts with `records`, in one step where the store can (the
    /// SQL stores: one transaction, so one commit). Fails with
    /// [`AlreadyExists`](SessionError::AlreadyExists) when the session exists. The default
    /// creates, then appends.
    fn create_and_append<'a>(
        &'a self,
        meta: &'a SessionMeta,
        records: &'a [HistoryRecord],
    ) -> SessionFuture<'a, ()> {
        Box::pin(async move {
            self.create(meta).await?;
            if records.is_empty() {
                return Ok(());
            }
            self.append(&meta.id, records).await
        })
    }

    /// Loads a session, replaying its log.
    fn load<'a>(&'a self, id: &'a str) -> SessionFuture<'a, Session>;

    /// A session's metadata, without its log (`NotFound` as [`load`](Self::load)): what a
    /// face reads to learn a thread's owner.
    ///
    /// The default loads the whole session; every store of this crate reads only the
    /// metadata.
    fn load_meta<'a>(&'a self, id: &'a str) -> SessionFuture<'a, SessionMeta> {
        Box::pin(async move { self.load(id).await.map(|session| session.meta) })
    }

    /// Every session's metadata, most recently updated first (ties: by id).
    fn list(&self) -> SessionFuture<'_, Vec<SessionMeta>>;

    /// At most `limit` sessions in [`list`](Self::list)'s order, starting after `after` (from
    /// the start when `None`). Pass the page's [`next`](SessionPage::next) to get the next page.
    ///
    /// The default filters [`list`](Self::list); database stores answer from an index.
    fn list_page<'a>(
        &'a self,
        after: Option<&'a PageCursor>,
        limit: usize,
    ) -> SessionFuture<'a, SessionPage> {
        Box::pin(async move {
            let all = self.list().await?;
            Ok(page::page_of(all, after, limit))
        })
    }

    /// Deletes a session.
    fn delete<'a>(&'a self, id: &'a str) -> SessionFuture<'a, ()>;

    /// Copies a session into a new one whose `parent` is the original; returns the new metadata.
    fn fork<'a>(&'a self, id: &'a str) -> SessionFuture<'a, SessionMeta> {
        Box::pin(async move {
            let original = self.load(id).await?;
            let mut meta = SessionMeta::new();
            meta.title = original.meta.title.clone();
            meta.parent = Some(id.to_owned());
            meta.extra = original.meta.extra.clone();
            self.create(&meta).await?;
            let record = HistoryRecord::Replace {
                messages: original.messages,
            };
            self.append(&meta.id, std::slice::from_ref(&record)).await?;
            Ok(meta)
        })
    }
}

/// The rule a session id follows, for messages: what [`valid_id`] accepts.
pub const ID_RULE: &str = "1 to 128 of A-Z a-z 0-9 _ -";

/// Whether `id` is usable as a session id: 1 to 128 bytes of `A-Z a-z 0-9 _ -`, so it is safe
/// as a directory name, a URL path segment and a database key. Every store checks ids with
/// it, and the faces check the ids they are sent (AG-UI thread and run ids) before any lookup.
///
/// ```
/// use mux_store::session::valid_id;
///
/// assert!(valid_id("0190a1b2c3d4-1f2e-0"));
/// assert!(!valid_id("../etc"));
/// assert!(!valid_id(""));
/// ```
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// [`valid_id`] as a result: [`SessionError::InvalidId`] when `id` is not usable.
pub(crate) fn check_id(id: &str) -> Result<(), SessionError> {
    if valid_id(id) {
        Ok(())
    } else {
        Err(SessionError::InvalidId(id.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::meta::push_hex;
    use super::*;

    #[test]
    fn hex_digits_match_the_formatter() {
        for value in [
            0,
            1,
            0xf,
            0x10,
            0xabc,
            u64::from(u32::MAX),
            0x1234_5678_9abc,
            u64::MAX,
        ] {
            for width in [1, 12] {
                let mut out = String::new();
                push_hex(&mut out, value, width);
                assert_eq!(out, format!("{value:0width$x}"));
            }
        }
    }

    #[test]
    fn ids_are_unique_and_valid() {
        let a = new_session_id();
        let b = new_session_id();
        assert_ne!(a, b);
        check_id(&a).unwrap();
    }

    #[test]
    fn unsafe_ids_are_refused() {
        assert!(valid_id(&"x".repeat(128)));
        for bad in ["", "../x", "a/b", "a b", ".", "a\0", "é", &"x".repeat(129)] {
            assert!(!valid_id(bad), "{bad}");
            assert!(
                matches!(check_id(bad), Err(SessionError::InvalidId(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn an_error_names_the_session_when_there_is_one() {
        let database = |id: Option<&str>| SessionError::Database {
            id: id.map(str::to_owned),
            operation: "appending",
            source: "disk full".into(),
        };
        assert_eq!(
            database(Some("s1")).to_string(),
            "session `s1`: appending failed: disk full"
        );
        assert_eq!(
            database(None).to_string(),
            "session store: appending failed: disk full"
        );
        let io = SessionError::io("s2", "writing metadata")(std::io::Error::other("no space"));
        assert_eq!(
            io.to_string(),
            "session `s2`: writing metadata failed: no space"
        );
        let store_io = SessionError::Io {
            id: None,
            operation: "creating the store directory",
            source: std::io::Error::other("read-only"),
        };
        assert_eq!(
            store_io.to_string(),
            "session store: creating the store directory failed: read-only"
        );
    }

    #[test]
    fn serialization_is_its_own_variant() {
        // A map with a non-string key cannot be JSON.
        let bad: std::collections::HashMap<(u8, u8), u8> = [((1, 2), 3)].into();
        let err = serde_json::to_string(&bad)
            .map_err(SessionError::serialize("s3", "serializing metadata"))
            .unwrap_err();
        assert!(
            matches!(&err, SessionError::Serialize { id, .. } if id == "s3"),
            "{err:?}"
        );
        assert!(
            err.to_string()
                .starts_with("session `s3`: serializing metadata failed: ")
        );
    }

    #[test]
    fn replay_applies_replacements() {
        let records = vec![
            HistoryRecord::Message {
                message: Message::user("a"),
            },
            HistoryRecord::Message {
                message: Message::assistant("b"),
            },
            HistoryRecord::Replace {
                messages: vec![Message::user("summary")],
            },
            HistoryRecord::Message {
                message: Message::assistant("c"),
            },
        ];
        let texts: Vec<String> = Session::replay(SessionMeta::new(), records)
            .messages
            .iter()
            .map(Message::text)
            .collect();
        assert_eq!(texts, ["summary", "c"]);
    }
}
