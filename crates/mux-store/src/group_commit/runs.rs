//! A commit's run appends (`RunStore::append_events` and `set_status`) and runs begun
//! (`RunStore::begin`): their parts of the commit's statement.

use super::part::{Part, Query};

use crate::event_json::EventJson;
use crate::run_status::RunStatus;

/// The owner `owner` appends `events` to `run_id` and moves it to `status`, if it holds the
/// run (running, its owner, the lease not run out). `set_status` is an append of no events.
#[derive(Debug)]
pub(crate) struct RunAppend {
    pub(crate) run_id: String,
    owner: String,
    count: i64,
    status: &'static str,
    /// Whether the owner keeps the run (it stays running).
    keep: bool,
    /// The events as one JSON array.
    events: String,
}

impl RunAppend {
    /// The append of `events` to `run_id` by `owner`, ending at `status`.
    pub(crate) fn new(run_id: &str, owner: &str, events: &[EventJson], status: RunStatus) -> Self {
        Self {
            run_id: run_id.to_owned(),
            owner: owner.to_owned(),
            count: i64::try_from(events.len()).unwrap_or(i64::MAX),
            status: status.as_str(),
            keep: status == RunStatus::Running,
            events: EventJson::array(events),
        }
    }
}

/// The appends of a commit: each held run's row is locked, moved on and its numbers
/// reserved; its events go in under those numbers as one row, their JSON array as text (the
/// database parses nothing, and a row has no foreign key to check); each changed run is
/// notified with the commit. A run not held changes nothing and is missing from the answer,
/// which gives each held run the number before its first event.
pub(super) const APPEND: Part = Part {
    ctes: "\
append_batch AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::bool[], $6::text[])
        AS b(run_id, owner, count, status, keep, events)),
held AS (
    UPDATE mux_runs r SET last_seq = r.last_seq + b.count, updated_at = now(), status = b.status,
        owner = CASE WHEN b.keep THEN r.owner END,
        lease_until = CASE WHEN b.keep THEN r.lease_until END
    FROM append_batch b
    WHERE r.run_id = b.run_id AND r.owner = b.owner AND r.status = 'running'
        AND r.lease_until > now()
    RETURNING r.run_id, r.last_seq - b.count AS first, r.last_seq AS last, b.count, b.events),
appended AS (
    INSERT INTO mux_run_event_batches (run_id, first_seq, last_seq, events)
    SELECT run_id, first + 1, last, events FROM held WHERE count > 0)",
    answer: "SELECT 'run', run_id, NULL::text, first FROM held \
             WHERE pg_notify('mux_runs', run_id) IS NOT NULL",
};

/// Binds `appends` (at most one per run) to [`APPEND`]'s parameters.
pub(super) fn bind_appends<'q>(query: Query<'q>, appends: &[&'q RunAppend]) -> Query<'q> {
    let text =
        |f: fn(&'q RunAppend) -> &'q str| appends.iter().map(|a| f(a)).collect::<Vec<&str>>();
    query
        .bind(text(|a| &a.run_id))
        .bind(text(|a| &a.owner))
        .bind(appends.iter().map(|a| a.count).collect::<Vec<_>>())
        .bind(text(|a| a.status))
        .bind(appends.iter().map(|a| a.keep).collect::<Vec<_>>())
        .bind(text(|a| &a.events))
}

/// Run `run_id` begun on `session_id` by `owner`, holding it for `lease_ms`.
#[derive(Debug)]
pub(crate) struct RunBegin {
    pub(crate) run_id: String,
    pub(crate) session_id: String,
    owner: String,
    lease_ms: i64,
}

impl RunBegin {
    pub(crate) fn new(run_id: &str, session_id: &str, owner: &str, lease_ms: i64) -> Self {
        Self {
            run_id: run_id.to_owned(),
            session_id: session_id.to_owned(),
            owner: owner.to_owned(),
            lease_ms,
        }
    }
}

/// The begins of a commit. A run whose id is taken, or whose session has a run in progress,
/// is not inserted and is missing from the answer (its caller finds out which); the answer
/// names each inserted run with its session, since a batch may hold two begins of one id.
pub(super) const BEGIN: Part = Part {
    ctes: "\
begin_batch AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[])
        AS b(run_id, session_id, owner, lease_ms)),
begun AS (
    INSERT INTO mux_runs (run_id, session_id, status, owner, lease_until)
    SELECT run_id, session_id, 'running', owner, now() + lease_ms * interval '1 millisecond'
    FROM begin_batch
    ON CONFLICT DO NOTHING
    RETURNING run_id, session_id)",
    answer: "SELECT 'begin', run_id, session_id, NULL::bigint FROM begun",
};

/// Binds `begins` (at most one per session) to [`BEGIN`]'s parameters.
pub(super) fn bind_begins<'q>(query: Query<'q>, begins: &[&'q RunBegin]) -> Query<'q> {
    let text = |f: fn(&'q RunBegin) -> &'q str| begins.iter().map(|b| f(b)).collect::<Vec<&str>>();
    query
        .bind(text(|b| &b.run_id))
        .bind(text(|b| &b.session_id))
        .bind(text(|b| &b.owner))
        .bind(begins.iter().map(|b| b.lease_ms).collect::<Vec<_>>())
}
