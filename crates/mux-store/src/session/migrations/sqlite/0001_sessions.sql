-- Schema 1: sessions and their append-only logs.
CREATE TABLE mux_sessions (
    id TEXT PRIMARY KEY NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    parent TEXT,
    -- The whole SessionMeta as JSON (title, extra, ...); the columns above are copies for
    -- ordering and lookups.
    meta TEXT NOT NULL
) STRICT;
CREATE INDEX mux_sessions_by_update ON mux_sessions (updated_at_ms DESC, id);
CREATE TABLE mux_session_records (
    session_id TEXT NOT NULL,
    -- Per session 0, 1, 2, ...: an append takes MAX(seq) + 1 under the database's write lock.
    seq INTEGER NOT NULL,
    -- One HistoryRecord as JSON.
    record TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) STRICT, WITHOUT ROWID;
