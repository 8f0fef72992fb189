-- Schema 1: sessions and their append-only logs.
CREATE TABLE mux_sessions (
    id TEXT PRIMARY KEY NOT NULL,
    updated_at_ms BIGINT NOT NULL,
    parent TEXT,
    -- The whole SessionMeta as JSON (title, extra, ...); the columns above are copies for
    -- ordering and lookups.
    meta TEXT NOT NULL,
    -- The sequence number the next appended record gets. Appends lock this row.
    next_seq BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX mux_sessions_by_update ON mux_sessions (updated_at_ms DESC, id);
CREATE TABLE mux_session_records (
    session_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    -- One HistoryRecord as JSON.
    record TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
