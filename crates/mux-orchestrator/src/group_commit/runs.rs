//! A batch of run appends (`RunStore::append_events` and `set_status`) as one statement.

use std::collections::HashMap;

use serde_json::Value;
use sqlx::PgConnection;

use crate::runs::RunStatus;

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
    pub(crate) fn new(run_id: &str, owner: &str, events: &[Value], status: RunStatus) -> Self {
        Self {
            run_id: run_id.to_owned(),
            owner: owner.to_owned(),
            count: i64::try_from(events.len()).unwrap_or(i64::MAX),
            status: status.as_str(),
            keep: status == RunStatus::Running,
            events: serde_json::to_string(events).unwrap_or_else(|_| "[]".to_owned()),
        }
    }
}

/// Every append of the batch in one statement: each held run's row is locked, moved on and
/// its numbers reserved; its events go in under those numbers as one row, their JSON array
/// as text (the database parses nothing, and a row has no foreign key to check); each
/// changed run is notified with the commit. A run not held changes nothing and is missing
/// from the answer.
const APPEND: &str = "\
WITH batch AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::bool[], $6::text[])
        AS b(run_id, owner, count, status, keep, events)),
held AS (
    UPDATE mux_runs r SET last_seq = r.last_seq + b.count, updated_at = now(), status = b.status,
        owner = CASE WHEN b.keep THEN r.owner END,
        lease_until = CASE WHEN b.keep THEN r.lease_until END
    FROM batch b
    WHERE r.run_id = b.run_id AND r.owner = b.owner AND r.status = 'running'
        AND r.lease_until > now()
    RETURNING r.run_id, r.last_seq - b.count AS first, r.last_seq AS last, b.count, b.events),
inserted AS (
    INSERT INTO mux_run_event_batches (run_id, first_seq, last_seq, events)
    SELECT run_id, first + 1, last, events FROM held WHERE count > 0)
SELECT run_id, first FROM held WHERE pg_notify('mux_runs', run_id) IS NOT NULL";

/// Writes `appends` (at most one per run) on `conn`: run id → the number before its first
/// event, for the runs that were held.
pub(super) async fn write(
    conn: &mut PgConnection,
    appends: &[&RunAppend],
) -> Result<HashMap<String, i64>, sqlx::Error> {
    if appends.is_empty() {
        return Ok(HashMap::new());
    }
    let text = |f: fn(&RunAppend) -> &str| appends.iter().map(|a| f(a)).collect::<Vec<&str>>();
    let rows: Vec<(String, i64)> = sqlx::query_as(APPEND)
        .bind(text(|a| &a.run_id))
        .bind(text(|a| &a.owner))
        .bind(appends.iter().map(|a| a.count).collect::<Vec<_>>())
        .bind(text(|a| a.status))
        .bind(appends.iter().map(|a| a.keep).collect::<Vec<_>>())
        .bind(text(|a| &a.events))
        .fetch_all(&mut *conn)
        .await?;
    Ok(rows.into_iter().collect())
}
