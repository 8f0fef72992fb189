//! Appending to a history, after cutting a torn last line.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::session::HistoryRecord;

const CHUNK: u64 = 8 * 1024;

/// Appends `bytes` (whole lines) to the history at `path` in one write, syncing it when
/// `sync` is set, after cutting a torn last line. The file is opened once, in append mode, so
/// the whole append is one trip to the blocking pool. An error names the step that failed.
pub(super) fn append(
    path: &Path,
    bytes: &[u8],
    sync: bool,
) -> Result<(), (&'static str, std::io::Error)> {
    let mut file = OpenOptions::new()
        .read(true)
        .append(true)
        .open(path)
        .map_err(|err| ("opening the history", err))?;
    cut_torn_last_line(&mut file, path).map_err(|err| ("repairing the history", err))?;
    file.write_all(bytes)
        .map_err(|err| ("appending to the history", err))?;
    if sync {
        file.sync_data()
            .map_err(|err| ("syncing the history", err))?;
    }
    Ok(())
}

/// Cuts the last line off `file` unless it is a whole record ending in a newline, so the next
/// append starts on a clean line. A crash tears at most the last line; `load` ignores such a
/// line, and this keeps it from ending up in the middle of the log.
fn cut_torn_last_line(file: &mut File, path: &Path) -> std::io::Result<()> {
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(());
    }
    let start = last_line_start(file, len)?;
    file.seek(SeekFrom::Start(start))?;
    let mut line = Vec::new();
    file.read_to_end(&mut line)?;
    let whole = match line.split_last() {
        Some((b'\n', record)) => serde_json::from_slice::<HistoryRecord>(record).is_ok(),
        _ => false,
    };
    if !whole {
        tracing::warn!(
            path = %path.display(),
            cut_bytes = len - start,
            "cutting a torn last line off the session history before appending"
        );
        file.set_len(start)?;
    }
    Ok(())
}

/// Where the last line starts: just after the last newline before the final byte.
fn last_line_start(file: &mut File, len: u64) -> std::io::Result<u64> {
    let mut end = len - 1;
    let mut buf = vec![0; CHUNK as usize];
    while end > 0 {
        let from = end.saturating_sub(CHUNK);
        let chunk = &mut buf[..(end - from) as usize];
        file.seek(SeekFrom::Start(from))?;
        file.read_exact(chunk)?;
        if let Some(i) = chunk.iter().rposition(|&b| b == b'\n') {
            return Ok(from + i as u64 + 1);
        }
        end = from;
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mux_llm::Message;

    fn record(text: &str) -> String {
        let record = HistoryRecord::Message {
            message: Message::user(text),
        };
        format!("{}\n", serde_json::to_string(&record).unwrap())
    }

    #[test]
    fn only_a_torn_or_unreadable_last_line_is_cut_before_the_append() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.jsonl");
        // A long record, so the backward search crosses several chunks.
        let head = format!("{}{}", record("one"), record(&"x".repeat(20_000)));
        for (content, kept) in [
            (head.clone(), head.len()),
            (format!("{head}{{\"record\":\"mes"), head.len()),
            (format!("{head}garbage\n"), head.len()),
            (format!("{head}\n"), head.len()),
            ("{\"rec".to_owned(), 0),
            (String::new(), 0),
        ] {
            std::fs::write(&path, &content).unwrap();
            append(&path, b"{}\n", false).unwrap();
            let after = std::fs::read(&path).unwrap();
            assert_eq!(after.len(), kept + 3, "{content:.40}");
            assert_eq!(&after[kept..], b"{}\n", "{content:.40}");
        }
    }
}
