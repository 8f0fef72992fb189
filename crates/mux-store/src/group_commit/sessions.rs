//! A commit's session writes (`SessionStore::append`, `save_and_append` and
//! `create_and_append`): their part of the commit's statement.

use super::part::{Part, Query};

/// Records appended to session `id`, and what becomes of the session's row.
#[derive(Debug)]
pub(crate) struct SessionWrite {
    pub(crate) id: String,
    /// The records' JSON texts, in order.
    pub(crate) records: Vec<String>,
    pub(crate) row: SessionRow,
    /// Names this write in the session's row (`last_write`), so that a commit whose answer
    /// was lost can be read back.
    pub(crate) token: String,
}

impl SessionWrite {
    /// `records` appended to session `id`, doing `row` to its row, under a fresh token.
    pub(crate) fn new(id: String, records: Vec<String>, row: SessionRow) -> Self {
        Self {
            id,
            records,
            row,
            token: super::token::token(),
        }
    }
}

/// What a [`SessionWrite`] does to its session's row.
#[derive(Debug)]
pub(crate) enum SessionRow {
    /// Keeps the metadata.
    Keep,
    /// Replaces the metadata.
    Save(SavedMeta),
    /// Creates the session with this metadata, the records starting its log (nothing is
    /// written when it exists).
    Create(SavedMeta),
}

impl SessionRow {
    /// The metadata stored with the records, if any.
    fn meta(&self) -> Option<&SavedMeta> {
        match self {
            Self::Keep => None,
            Self::Save(meta) | Self::Create(meta) => Some(meta),
        }
    }
}

/// A session's metadata as its row stores it.
#[derive(Debug)]
pub(crate) struct SavedMeta {
    pub(crate) updated_at_ms: i64,
    pub(crate) parent: Option<String>,
    /// The whole metadata as JSON text.
    pub(crate) json: String,
}

/// The session writes of a commit: a session to create is inserted with its numbers taken,
/// an existing one's row is locked and its numbers reserved (and its metadata replaced),
/// then the records go in under those numbers; the row keeps the write's token. A session
/// that does not exist (or, to create, exists) changes nothing and is missing from the answer.
pub(super) const WRITE: Part = Part {
    ctes: "\
session_batch AS (
    SELECT * FROM unnest($1::text[], $2::bigint[], $3::bool[], $4::bigint[], $5::text[], $6::text[],
        $10::bool[], $11::text[])
        AS b(id, count, save, updated_at_ms, parent, meta, fresh, token)),
created AS (
    INSERT INTO mux_sessions (id, updated_at_ms, parent, meta, next_seq, last_write)
    SELECT id, updated_at_ms, parent, meta, count, token FROM session_batch WHERE fresh
    ON CONFLICT (id) DO NOTHING
    RETURNING id, 0::bigint AS first),
reserved AS (
    UPDATE mux_sessions s SET next_seq = s.next_seq + b.count,
        updated_at_ms = CASE WHEN b.save THEN b.updated_at_ms ELSE s.updated_at_ms END,
        parent = CASE WHEN b.save THEN b.parent ELSE s.parent END,
        meta = CASE WHEN b.save THEN b.meta ELSE s.meta END,
        last_write = b.token
    FROM session_batch b WHERE s.id = b.id AND NOT b.fresh
    RETURNING s.id, s.next_seq - b.count AS first),
written AS (SELECT id, first FROM created UNION ALL SELECT id, first FROM reserved),
recorded AS (
    INSERT INTO mux_session_records (session_id, seq, record)
    SELECT written.id, written.first + r.ord, r.record
    FROM written
    JOIN unnest($7::text[], $8::bigint[], $9::text[]) AS r(id, ord, record) ON r.id = written.id)",
    answer: "SELECT 'session', id, NULL::text, NULL::bigint FROM written",
};

/// Binds `writes` (at most one per session) to [`WRITE`]'s parameters.
pub(super) fn bind_writes<'q>(query: Query<'q>, writes: &[&'q SessionWrite]) -> Query<'q> {
    let mut record_ids = Vec::new();
    let mut record_ords = Vec::new();
    let mut records = Vec::new();
    for write in writes {
        for (ord, record) in write.records.iter().enumerate() {
            record_ids.push(write.id.as_str());
            record_ords.push(i64::try_from(ord).unwrap_or(i64::MAX));
            records.push(record.as_str());
        }
    }
    let meta = |f: fn(&'q SavedMeta) -> Option<&'q str>| {
        writes
            .iter()
            .map(|w| w.row.meta().and_then(f))
            .collect::<Vec<_>>()
    };
    query
        .bind(writes.iter().map(|w| w.id.as_str()).collect::<Vec<_>>())
        .bind(
            writes
                .iter()
                .map(|w| i64::try_from(w.records.len()).unwrap_or(i64::MAX))
                .collect::<Vec<_>>(),
        )
        .bind(
            writes
                .iter()
                .map(|w| w.row.meta().is_some())
                .collect::<Vec<_>>(),
        )
        .bind(
            writes
                .iter()
                .map(|w| w.row.meta().map_or(0, |m| m.updated_at_ms))
                .collect::<Vec<_>>(),
        )
        .bind(meta(|m| m.parent.as_deref()))
        .bind(meta(|m| Some(m.json.as_str())))
        .bind(record_ids)
        .bind(record_ords)
        .bind(records)
        .bind(
            writes
                .iter()
                .map(|w| matches!(w.row, SessionRow::Create(_)))
                .collect::<Vec<_>>(),
        )
        .bind(writes.iter().map(|w| w.token.as_str()).collect::<Vec<_>>())
}
