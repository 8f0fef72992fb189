//! The journal of a [`FileRunStore`](super::FileRunStore) on disk: `runs.jsonl`, one [`Op`]
//! a line, each appended and synced before it counts; a compaction writes the live runs to a
//! new file, syncs it and renames it over the old one. A lock file keeps a second opener out.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

use super::state::Op;
use crate::runs::{RunStoreError, StoreFault};

/// The journal's file name.
const JOURNAL: &str = "runs.jsonl";
/// A compaction's file before its rename.
const COMPACTING: &str = ".runs.jsonl.tmp";
/// The file whose lock marks the store open.
const LOCK: &str = "lock";

/// The journal file, open for appending, and the lock that makes it this store's alone.
#[derive(Debug)]
pub(super) struct Journal {
    dir: PathBuf,
    file: File,
    /// The length of the whole records in the file: a failed write is cut back to it.
    good_len: u64,
    /// Bytes written since the last compaction (or opening).
    pub(super) written: u64,
    /// Held while the store is open (an advisory lock, released when the process ends).
    _lock: File,
}

/// A run store error for an I/O failure while doing `operation`.
pub(super) fn io_error(operation: &'static str, err: &std::io::Error) -> RunStoreError {
    RunStoreError::Unavailable {
        operation,
        fault: StoreFault::of_io(err),
        reason: err.to_string(),
    }
}

impl Journal {
    /// Opens (creating) the journal in `dir` and reads its ops. A torn last line (a write cut
    /// short by a crash) is cut off; a damaged line before it is an error naming the line.
    pub(super) fn open(dir: &Path) -> Result<(Self, Vec<Op>), RunStoreError> {
        std::fs::create_dir_all(dir).map_err(|e| io_error("creating the run directory", &e))?;
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(LOCK))
            .map_err(|e| io_error("opening the run store's lock file", &e))?;
        match rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(errno) if errno == rustix::io::Errno::WOULDBLOCK => {
                return Err(RunStoreError::Unavailable {
                    operation: "opening the run store",
                    fault: StoreFault::Locked,
                    reason: format!(
                        "{} is open in another store (a file run store serves one process)",
                        dir.display()
                    ),
                });
            }
            Err(errno) => {
                return Err(io_error(
                    "locking the run store",
                    &std::io::Error::from(errno),
                ));
            }
        }
        let path = dir.join(JOURNAL);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == ErrorKind::NotFound => Vec::new(),
            Err(err) => return Err(io_error("reading the run journal", &err)),
        };
        let (ops, good_len) = parse(&bytes)?;
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| io_error("opening the run journal", &e))?;
        if good_len < bytes.len() {
            tracing::warn!(
                path = %path.display(),
                cut_bytes = bytes.len() - good_len,
                "cutting a torn last line off the run journal"
            );
            file.set_len(good_len as u64)
                .map_err(|e| io_error("repairing the run journal", &e))?;
        }
        // A journal created just now survives a crash only with its directory entry synced.
        sync_dir(dir).map_err(|e| io_error("syncing the run directory", &e))?;
        let journal = Self {
            dir: dir.to_owned(),
            file,
            good_len: good_len as u64,
            written: good_len as u64,
            _lock: lock,
        };
        Ok((journal, ops))
    }

    /// Appends `ops` in one write and syncs them. On failure nothing counts: the file is cut
    /// back to its last whole record (now, or before the next append if that fails too).
    pub(super) fn append(&mut self, ops: &[Op]) -> Result<(), RunStoreError> {
        let mut buf = Vec::new();
        for op in ops {
            serde_json::to_writer(&mut buf, op).map_err(|e| RunStoreError::Store {
                operation: "writing the run journal",
                reason: e.to_string(),
            })?;
            buf.push(b'\n');
        }
        let result = self.cut_back().and_then(|()| {
            self.file.write_all(&buf)?;
            self.file.sync_data()
        });
        match result {
            Ok(()) => {
                self.good_len += buf.len() as u64;
                self.written += buf.len() as u64;
                Ok(())
            }
            Err(err) => {
                // The next append cuts it back if this cannot.
                let _ = self.file.set_len(self.good_len);
                Err(io_error("writing the run journal", &err))
            }
        }
    }

    /// Cuts anything after the last whole record off (a write that failed half-way).
    fn cut_back(&mut self) -> std::io::Result<()> {
        if self.file.metadata()?.len() != self.good_len {
            self.file.set_len(self.good_len)?;
        }
        Ok(())
    }

    /// Replaces the journal by `ops` (the live runs): written to a new file, synced, renamed
    /// over the journal, the directory synced. On failure the old journal stays as it was.
    pub(super) fn compact(&mut self, ops: &[Op]) -> Result<(), RunStoreError> {
        let temp = self.dir.join(COMPACTING);
        let path = self.dir.join(JOURNAL);
        let written = (|| -> std::io::Result<(File, u64)> {
            let mut file = File::create(&temp)?;
            let mut len = 0u64;
            let mut buf = Vec::new();
            for op in ops {
                buf.clear();
                serde_json::to_writer(&mut buf, op)?;
                buf.push(b'\n');
                file.write_all(&buf)?;
                len += buf.len() as u64;
            }
            file.sync_all()?;
            drop(file);
            std::fs::rename(&temp, &path)?;
            sync_dir(&self.dir)?;
            let file = OpenOptions::new().append(true).open(&path)?;
            Ok((file, len))
        })();
        match written {
            Ok((file, len)) => {
                self.file = file;
                self.good_len = len;
                self.written = len;
                Ok(())
            }
            Err(err) => {
                let _ = std::fs::remove_file(&temp);
                Err(io_error("compacting the run journal", &err))
            }
        }
    }
}

/// Syncs a directory, so the entries created or renamed in it survive a crash.
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

/// The ops of whole lines and the length of that prefix. An unterminated or unreadable last
/// line is a torn write and is left out; an unreadable line before it is damage.
fn parse(bytes: &[u8]) -> Result<(Vec<Op>, usize), RunStoreError> {
    let mut ops = Vec::new();
    let mut start = 0;
    let mut line_no = 0;
    while start < bytes.len() {
        line_no += 1;
        let Some(end) = bytes[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map(|i| start + i)
        else {
            break;
        };
        match serde_json::from_slice::<Op>(&bytes[start..end]) {
            Ok(op) => {
                ops.push(op);
                start = end + 1;
            }
            Err(_) if end + 1 >= bytes.len() => break,
            Err(err) => {
                return Err(RunStoreError::Store {
                    operation: "reading the run journal",
                    reason: format!("{JOURNAL} line {line_no} is damaged: {err}"),
                });
            }
        }
    }
    Ok((ops, start))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn line(n: u64) -> String {
        let op = Op::Cancel {
            run: format!("r{n}"),
        };
        format!("{}\n", serde_json::to_string(&op).unwrap())
    }

    #[test]
    fn a_journal_torn_at_every_byte_of_its_last_line_keeps_the_rest() {
        let head = format!("{}{}", line(1), line(2));
        let last = line(3);
        for cut in 0..last.len() {
            let bytes = format!("{head}{}", &last[..cut]);
            let (ops, good) = parse(bytes.as_bytes()).unwrap();
            assert_eq!((ops.len(), good), (2, head.len()), "cut at {cut}");
        }
        let (ops, good) = parse(format!("{head}{last}").as_bytes()).unwrap();
        assert_eq!((ops.len(), good), (3, head.len() + last.len()));
    }

    #[test]
    fn a_damaged_line_in_the_middle_is_named() {
        let bytes = format!("{}{{\"op\":\"nope\"}}\n{}", line(1), line(2));
        let err = parse(bytes.as_bytes()).unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
    }

    #[test]
    fn a_second_opener_is_refused_as_locked_and_the_first_keeps_writing() {
        let dir = tempfile::tempdir().unwrap();
        let (mut first, ops) = Journal::open(dir.path()).unwrap();
        assert!(ops.is_empty());
        let second = Journal::open(dir.path()).unwrap_err();
        assert_eq!(second.fault(), Some(StoreFault::Locked), "{second}");
        first.append(&[Op::Cancel { run: "r".into() }]).unwrap();
        drop(first);
        let (_, ops) = Journal::open(dir.path()).unwrap();
        assert_eq!(ops, [Op::Cancel { run: "r".into() }]);
    }

    #[test]
    fn a_torn_tail_is_cut_at_opening_and_the_next_append_starts_clean() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(JOURNAL), format!("{}{{\"op\":", line(1))).unwrap();
        let (mut journal, ops) = Journal::open(dir.path()).unwrap();
        assert_eq!(ops.len(), 1);
        journal.append(&[Op::Cancel { run: "r2".into() }]).unwrap();
        drop(journal);
        let (_, ops) = Journal::open(dir.path()).unwrap();
        assert_eq!(ops.len(), 2);
    }
}
