//! Sessions as files: a directory per session with `metadata.json` (written atomically) and an
//! append-only `history.jsonl`.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use tokio::io::AsyncWriteExt;

use super::{
    HistoryRecord, Session, SessionError, SessionFuture, SessionMeta, SessionStore, check_id,
};

mod tail;

const META: &str = "metadata.json";
const HISTORY: &str = "history.jsonl";

/// Stores each session in `ROOT/<id>/`.
///
/// A crash mid-append leaves at most a torn last line. [`load`](SessionStore::load) ignores it
/// and keeps everything before it, without writing (another writer's record may be in
/// flight); the next [`append`](SessionStore::append) cuts it off first, so new records start
/// on a clean line.
///
/// ```
/// use mux_store::session::{FileSessionStore, HistoryRecord, SessionMeta, SessionStore};
/// use mux_llm::Message;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// let dir = std::env::temp_dir().join(format!("mux-doc-{}", mux_store::session::new_session_id()));
/// let store = FileSessionStore::new(&dir);
/// let meta = SessionMeta::new();
/// store.create(&meta).await?;
/// store.append(&meta.id, &[HistoryRecord::Message { message: Message::user("hi") }]).await?;
/// assert_eq!(store.load(&meta.id).await?.messages[0].text(), "hi");
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct FileSessionStore {
    root: PathBuf,
    sync: bool,
}

impl FileSessionStore {
    /// A store under `root` (created on first use).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            sync: false,
        }
    }

    /// Also `fsync` every append and metadata write (slower; survives power loss).
    pub fn with_sync(mut self, sync: bool) -> Self {
        self.sync = sync;
        self
    }

    /// The directory of session `id`.
    pub fn session_dir(&self, id: &str) -> Result<PathBuf, SessionError> {
        check_id(id)?;
        Ok(self.root.join(id))
    }

    async fn write_meta(&self, meta: &SessionMeta) -> Result<(), SessionError> {
        let dir = self.session_dir(&meta.id)?;
        let io = |operation| SessionError::io(&meta.id, operation);
        let json = serde_json::to_vec_pretty(meta)
            .map_err(SessionError::serialize(&meta.id, "serializing metadata"))?;
        let temp = dir.join(format!(".{META}.tmp"));
        let mut file = tokio::fs::File::create(&temp)
            .await
            .map_err(io("writing metadata"))?;
        file.write_all(&json)
            .await
            .map_err(io("writing metadata"))?;
        // tokio hands writes to a background thread; flush waits for them to land.
        file.flush().await.map_err(io("writing metadata"))?;
        if self.sync {
            file.sync_all().await.map_err(io("syncing metadata"))?;
        }
        drop(file);
        tokio::fs::rename(&temp, dir.join(META))
            .await
            .map_err(io("renaming metadata"))
    }
}

impl SessionStore for FileSessionStore {
    fn create<'a>(&'a self, meta: &'a SessionMeta) -> SessionFuture<'a, ()> {
        Box::pin(async move {
            let dir = self.session_dir(&meta.id)?;
            tokio::fs::create_dir_all(&self.root)
                .await
                .map_err(|source| SessionError::Io {
                    id: None,
                    operation: "creating the store directory",
                    source,
                })?;
            match tokio::fs::create_dir(&dir).await {
                Ok(()) => {}
                Err(err) if err.kind() == ErrorKind::AlreadyExists => {
                    return Err(SessionError::AlreadyExists(meta.id.clone()));
                }
                Err(source) => {
                    return Err(
                        SessionError::io(&meta.id, "creating the session directory")(source),
                    );
                }
            }
            tokio::fs::File::create(dir.join(HISTORY))
                .await
                .map_err(SessionError::io(&meta.id, "creating the history"))?;
            self.write_meta(meta).await
        })
    }

    fn save_meta<'a>(&'a self, meta: &'a SessionMeta) -> SessionFuture<'a, ()> {
        Box::pin(async move {
            let dir = self.session_dir(&meta.id)?;
            if !is_dir(&dir).await {
                return Err(SessionError::NotFound(meta.id.clone()));
            }
            self.write_meta(meta).await
        })
    }

    fn append<'a>(&'a self, id: &'a str, records: &'a [HistoryRecord]) -> SessionFuture<'a, ()> {
        Box::pin(async move {
            let dir = self.session_dir(id)?;
            let io = |operation| SessionError::io(id, operation);
            let mut buf = Vec::new();
            for record in records {
                serde_json::to_writer(&mut buf, record)
                    .map_err(SessionError::serialize(id, "serializing a record"))?;
                buf.push(b'\n');
            }
            let path = dir.join(HISTORY);
            let not_found = |err: std::io::Error, operation| match err.kind() {
                ErrorKind::NotFound => SessionError::NotFound(id.to_owned()),
                _ => io(operation)(err),
            };
            // One write per append, so a crash tears at most this batch's last line.
            let sync = self.sync;
            tokio::task::spawn_blocking(move || tail::append(&path, &buf, sync))
                .await
                .map_err(|err| io("appending to the history")(std::io::Error::other(err)))?
                .map_err(|(operation, err)| not_found(err, operation))
        })
    }

    fn load_meta<'a>(&'a self, id: &'a str) -> SessionFuture<'a, SessionMeta> {
        Box::pin(async move { read_meta(&self.session_dir(id)?, id).await })
    }

    fn load<'a>(&'a self, id: &'a str) -> SessionFuture<'a, Session> {
        Box::pin(async move {
            let dir = self.session_dir(id)?;
            let io = |operation| SessionError::io(id, operation);
            let meta = read_meta(&dir, id).await?;
            let history_path = dir.join(HISTORY);
            let bytes = tokio::fs::read(&history_path)
                .await
                .map_err(io("reading the history"))?;
            // Read only: a torn last line may be another writer's record in flight.
            let (records, good_len) = parse_history(id, &bytes)?;
            if good_len < bytes.len() {
                tracing::warn!(
                    session = id,
                    ignored_bytes = bytes.len() - good_len,
                    "ignoring a torn last line in the session history"
                );
            }
            Ok(Session::replay(meta, records))
        })
    }

    fn list(&self) -> SessionFuture<'_, Vec<SessionMeta>> {
        Box::pin(async move {
            let mut metas = Vec::new();
            let mut entries = match tokio::fs::read_dir(&self.root).await {
                Ok(entries) => entries,
                Err(err) if err.kind() == ErrorKind::NotFound => return Ok(metas),
                Err(source) => {
                    return Err(SessionError::Io {
                        id: None,
                        operation: "listing sessions",
                        source,
                    });
                }
            };
            while let Ok(Some(entry)) = entries.next_entry().await {
                let Ok(bytes) = tokio::fs::read(entry.path().join(META)).await else {
                    continue;
                };
                if let Ok(meta) = serde_json::from_slice::<SessionMeta>(&bytes) {
                    metas.push(meta);
                }
            }
            super::page::sort(&mut metas);
            Ok(metas)
        })
    }

    fn delete<'a>(&'a self, id: &'a str) -> SessionFuture<'a, ()> {
        Box::pin(async move {
            let dir = self.session_dir(id)?;
            tokio::fs::remove_dir_all(&dir)
                .await
                .map_err(|err| match err.kind() {
                    ErrorKind::NotFound => SessionError::NotFound(id.to_owned()),
                    _ => SessionError::io(id, "deleting")(err),
                })
        })
    }
}

async fn is_dir(path: &Path) -> bool {
    tokio::fs::metadata(path)
        .await
        .map(|m| m.is_dir())
        .unwrap_or(false)
}

/// Parses complete lines. An unreadable or unterminated last line is a torn write and is
/// dropped; an unreadable line before it is corruption. Returns the records and the length of
/// the good prefix.
fn parse_history(id: &str, bytes: &[u8]) -> Result<(Vec<HistoryRecord>, usize), SessionError> {
    let mut records = Vec::new();
    let mut good_len = 0;
    let mut start = 0;
    let mut line_no = 0;
    while start < bytes.len() {
        line_no += 1;
        let end = bytes[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map(|i| start + i);
        let line = &bytes[start..end.unwrap_or(bytes.len())];
        let parsed = serde_json::from_slice::<HistoryRecord>(line);
        let is_last = end.is_none_or(|e| e + 1 >= bytes.len());
        match (parsed, end) {
            (Ok(record), Some(end)) => {
                records.push(record);
                start = end + 1;
                good_len = start;
            }
            // A line without its newline was cut mid-write, even if it happens to parse.
            (_, None) => break,
            (Err(_), Some(_)) if is_last => break,
            (Err(err), Some(_)) => {
                return Err(SessionError::Corrupt {
                    id: id.to_owned(),
                    line: line_no,
                    reason: err.to_string(),
                });
            }
        }
    }
    Ok((records, good_len))
}

/// The metadata of session `id`, stored in `dir`.
async fn read_meta(dir: &Path, id: &str) -> Result<SessionMeta, SessionError> {
    let bytes = tokio::fs::read(dir.join(META))
        .await
        .map_err(|err| match err.kind() {
            ErrorKind::NotFound => SessionError::NotFound(id.to_owned()),
            _ => SessionError::io(id, "reading metadata")(err),
        })?;
    serde_json::from_slice(&bytes).map_err(|err| SessionError::Corrupt {
        id: id.to_owned(),
        line: 0,
        reason: format!("metadata.json: {err}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mux_llm::Message;

    fn line(text: &str) -> String {
        let record = HistoryRecord::Message {
            message: Message::user(text),
        };
        format!("{}\n", serde_json::to_string(&record).unwrap())
    }

    #[test]
    fn a_history_torn_at_every_byte_of_its_last_record_keeps_the_rest() {
        let head = format!("{}{}", line("one"), line("two"));
        let last = line("three");
        for cut in 0..last.len() {
            let bytes = format!("{head}{}", &last[..cut]);
            let (records, good_len) = parse_history("s", bytes.as_bytes()).unwrap();
            assert_eq!(records.len(), 2, "cut at {cut}");
            assert_eq!(good_len, head.len(), "cut at {cut}");
        }
        let (records, _) = parse_history("s", format!("{head}{last}").as_bytes()).unwrap();
        assert_eq!(records.len(), 3);
    }

    #[test]
    fn a_bad_line_in_the_middle_is_corruption() {
        let bytes = format!("{}garbage\n{}", line("one"), line("two"));
        assert!(matches!(
            parse_history("s", bytes.as_bytes()),
            Err(SessionError::Corrupt { line: 2, .. })
        ));
    }
}
