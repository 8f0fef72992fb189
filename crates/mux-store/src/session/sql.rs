//! What the SQLite and PostgreSQL stores share: the schema versions, encoding metadata and
//! records as JSON text, and turning driver errors into [`SessionError`]s. The store body
//! itself is in `sql_store.rs`.

use super::{HistoryRecord, SessionError, SessionMeta};

/// The table that records which migrations ran (one row per version).
pub(crate) const VERSION_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS mux_schema_versions (version BIGINT PRIMARY KEY NOT NULL)";

/// The migrations still to run on a database at `current` (0: empty), in order; an error when
/// the database is newer than this build (its last migration's number).
pub(crate) fn pending(
    migrations: &'static [(i64, &'static str)],
    current: i64,
) -> Result<impl Iterator<Item = &'static (i64, &'static str)>, SessionError> {
    let supported = migrations.last().map_or(0, |(version, _)| *version);
    if current > supported {
        return Err(SessionError::SchemaTooNew {
            found: current,
            supported,
        });
    }
    Ok(migrations
        .iter()
        .filter(move |(version, _)| *version > current))
}

/// Maps a driver error to a [`SessionError`] naming the session and the operation.
pub(crate) fn db_error(
    id: &str,
    operation: &'static str,
) -> impl FnOnce(sqlx::Error) -> SessionError {
    move |err| SessionError::Database {
        id: Some(id.to_owned()),
        operation,
        source: Box::new(err),
    }
}

/// Maps a driver error of an operation on the whole store (opening, migrating, listing).
pub(crate) fn store_error(operation: &'static str) -> impl FnOnce(sqlx::Error) -> SessionError {
    move |err| SessionError::Database {
        id: None,
        operation,
        source: Box::new(err),
    }
}

/// Maps a driver error of inserting session `id`'s row: a unique violation (the database's
/// own error kind) means the id is taken, [`SessionError::AlreadyExists`].
pub(crate) fn creating(id: &str) -> impl FnOnce(sqlx::Error) -> SessionError {
    move |err| {
        let taken = err
            .as_database_error()
            .is_some_and(|db| db.is_unique_violation());
        if taken {
            SessionError::AlreadyExists(id.to_owned())
        } else {
            db_error(id, "creating the session")(err)
        }
    }
}

/// A `u64` as the database's signed 64-bit integer (saturating; times fit for 292 million years).
pub(crate) fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// Metadata as the JSON text of the `meta` column.
pub(crate) fn encode_meta(meta: &SessionMeta) -> Result<String, SessionError> {
    serde_json::to_string(meta).map_err(SessionError::serialize(&meta.id, "serializing metadata"))
}

/// The `meta` column's JSON text as metadata.
pub(crate) fn decode_meta(id: &str, text: &str) -> Result<SessionMeta, SessionError> {
    serde_json::from_str(text).map_err(|err| SessionError::Corrupt {
        id: id.to_owned(),
        line: 0,
        reason: format!("metadata: {err}"),
    })
}

/// Records as JSON texts, one per row.
pub(crate) fn encode_records(
    id: &str,
    records: &[HistoryRecord],
) -> Result<Vec<String>, SessionError> {
    records
        .iter()
        .map(|record| {
            serde_json::to_string(record)
                .map_err(SessionError::serialize(id, "serializing a record"))
        })
        .collect()
}

/// One row's record; an unreadable row is [`SessionError::Corrupt`] with `line` = its
/// sequence number + 1.
pub(crate) fn decode_record(id: &str, seq: i64, text: &str) -> Result<HistoryRecord, SessionError> {
    serde_json::from_str(text).map_err(|err| SessionError::Corrupt {
        id: id.to_owned(),
        line: usize::try_from(seq).map_or(usize::MAX, |seq| seq.saturating_add(1)),
        reason: err.to_string(),
    })
}

/// The metadata of a fork of `id`: a new id, the same title and extra data, `parent` = `id`.
pub(crate) fn forked_meta(id: &str, original: &SessionMeta) -> SessionMeta {
    let mut meta = SessionMeta::new();
    meta.title = original.title.clone();
    meta.parent = Some(id.to_owned());
    meta.extra = original.extra.clone();
    meta
}

/// Decodes listed `(id, meta)` rows, skipping (with a warning) metadata that does not parse,
/// as the file store skips an unreadable `metadata.json`.
pub(crate) fn decode_list(rows: Vec<(String, String)>) -> Vec<SessionMeta> {
    rows.into_iter()
        .filter_map(|(id, text)| match decode_meta(&id, &text) {
            Ok(meta) => Some(meta),
            Err(err) => {
                tracing::warn!(session = id, %err, "skipping unreadable session metadata");
                None
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIGRATIONS: &[(i64, &str)] = &[(1, "one")];

    #[test]
    fn a_newer_schema_is_refused_and_an_older_one_migrates() {
        assert_eq!(pending(MIGRATIONS, 0).map(Iterator::count).ok(), Some(1));
        assert_eq!(pending(MIGRATIONS, 1).map(Iterator::count).ok(), Some(0));
        assert!(matches!(
            pending(MIGRATIONS, 2).map(|_| ()),
            Err(SessionError::SchemaTooNew {
                found: 2,
                supported: 1
            })
        ));
    }

    #[test]
    fn a_bad_record_names_its_position() {
        assert!(matches!(
            decode_record("s", 4, "{"),
            Err(SessionError::Corrupt { line: 5, .. })
        ));
    }
}
