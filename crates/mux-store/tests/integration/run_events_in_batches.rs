//! How the run stores keep events; the SQL stores keep a row per appended batch. Every store
//! reads any window of events the same way: in the middle of a batch, across batches, with a
//! small limit. Any JSON round-trips. On SQLite and PostgreSQL, a damaged batch row is a typed
//! error, `forget_ended` deletes the batches of the runs it deletes, and a database of the
//! earlier schema (an event a row) keeps its events.

use std::time::Duration;

#[cfg(any(feature = "sqlite", feature = "postgres"))]
use mux_store::runs::RunStoreError;
use mux_store::runs::{MemoryRunStore, RunStatus, RunStore};
use serde_json::{Value, json};

const HELD: Duration = Duration::from_secs(60);

/// A closure that runs a statement on a clone of `pool` (an SQLite or a PostgreSQL pool).
#[cfg(any(feature = "sqlite", feature = "postgres"))]
macro_rules! executor {
    ($pool:expr) => {
        |sql: String| {
            let pool = $pool.clone();
            async move {
                sqlx::query(&sql).execute(&pool).await.unwrap();
            }
        }
    };
}

/// A closure that counts the batch rows of a run on a clone of `pool`.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
macro_rules! batch_counter {
    ($pool:expr) => {
        |run| {
            let pool = $pool.clone();
            async move {
                sqlx::query_scalar("SELECT COUNT(*) FROM mux_run_event_batches WHERE run_id = $1")
                    .bind(run)
                    .fetch_one(&pool)
                    .await
                    .unwrap()
            }
        }
    };
}

/// Batches of 3, 1, 4 and 2 events (`{"n": seq}`, numbers 1 to 10), and an append of none.
const BATCHES: [u64; 4] = [3, 1, 4, 2];

/// A run `{tag}-{name}`, begun on a session of its own and held by `a`.
async fn begun(store: &dyn RunStore, tag: &str, name: &str) -> String {
    let run = format!("{tag}-{name}");
    store
        .begin(&format!("{run}-s"), &run, "a", HELD)
        .await
        .unwrap();
    run
}

/// Appends `BATCHES` to a new run of `tag`, then reads every window of its events.
async fn windows(store: &dyn RunStore, tag: &str) {
    let run = begun(store, tag, "windows").await;
    let mut last = 0;
    for size in BATCHES {
        let events: Vec<Value> = (last + 1..=last + size).map(|n| json!({"n": n})).collect();
        last += size;
        let stored = store.append_events(&run, "a", &events, None).await.unwrap();
        assert_eq!(stored, last);
    }
    // An append of no events (a status change) stores nothing and takes no number.
    assert_eq!(store.append_events(&run, "a", &[], None).await.unwrap(), 10);
    assert_eq!(store.get(&run).await.unwrap().last_seq, 10);

    for after in 0..=12u64 {
        for limit in 0..=12usize {
            let read = store.events_after(&run, after, limit).await.unwrap();
            let seqs: Vec<u64> = read.iter().map(|e| e.seq).collect();
            let want: Vec<u64> = (after + 1..=10).take(limit).collect();
            assert_eq!(seqs, want, "{tag}: after {after}, limit {limit}");
            for event in &read {
                assert_eq!(event.event, json!({"n": event.seq}), "{tag}");
            }
        }
    }
    // Bounds at the ends of their types neither overflow nor lose events.
    assert!(
        store
            .events_after(&run, u64::MAX, usize::MAX)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store.events_after(&run, 0, usize::MAX).await.unwrap().len(),
        10
    );
    assert_eq!(
        store.events_after(&run, 9, usize::MAX).await.unwrap()[0].seq,
        10
    );

    // The next batch goes on after the last, and ends the run; a listing shows its last event.
    let end = [json!({"n": 11}), json!({"n": 12, "end": true})];
    let stored = store
        .append_events(&run, "a", &end, Some(RunStatus::Finished))
        .await
        .unwrap();
    assert_eq!(stored, 12);
    let listed = store.list_runs(&run, "", 10).await.unwrap();
    let (record, last) = &listed[0];
    assert_eq!(record.status, RunStatus::Finished);
    let last = last.as_ref().unwrap();
    assert_eq!((last.seq, &last.event), (12, &end[1]));
    let tail = store.events_after(&run, 10, 1).await.unwrap();
    assert_eq!((tail.len(), tail[0].seq), (1, 11));
}

/// Events whose JSON is awkward to store (a NUL, which PostgreSQL's `jsonb` refuses; lone
/// escapes; the ends of the number types) read back equal.
async fn any_json_round_trips(store: &dyn RunStore, tag: &str) {
    let run = begun(store, tag, "json").await;
    let events = [
        json!({"text": "a\u{0}b", "quote": "\"'\\", "line": "\u{2028}\u{1F600}"}),
        json!({"max": u64::MAX, "min": i64::MIN, "float": 0.1, "small": 5e-324}),
        json!([]),
        json!({}),
        json!("a string"),
        json!(null),
        json!({"nested": {"keys ]\" [": [1, [2, [3]]]}}),
    ];
    store.append_events(&run, "a", &events, None).await.unwrap();
    let read = store.events_after(&run, 0, 100).await.unwrap();
    let read: Vec<Value> = read.into_iter().map(|e| e.event).collect();
    assert_eq!(read, events, "{tag}");
}

#[tokio::test]
async fn the_file_run_store_reads_any_window_of_events_before_and_after_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let store = mux_store::runs::FileRunStore::open(dir.path())
        .await
        .unwrap();
    windows(&store, "file").await;
    any_json_round_trips(&store, "file").await;
    drop(store);
    let reopened = mux_store::runs::FileRunStore::open(dir.path())
        .await
        .unwrap();
    let read = reopened.events_after("file-windows", 0, 100).await.unwrap();
    assert_eq!(
        read.iter().map(|e| e.seq).collect::<Vec<_>>(),
        (1..=12).collect::<Vec<_>>()
    );
    assert_eq!(read[11].event, json!({"n": 12, "end": true}));
    assert_eq!(
        reopened.get("file-windows").await.unwrap().status,
        RunStatus::Finished
    );
    let json = reopened.events_after("file-json", 0, 100).await.unwrap();
    assert_eq!(json[0].event["text"], json!("a\u{0}b"));
}

#[tokio::test]
async fn the_memory_run_store_reads_any_window_of_events() {
    let store = MemoryRunStore::new();
    windows(&store, "memory").await;
    any_json_round_trips(&store, "memory").await;
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
/// A run of `tag` with batches of 2 and 1 events, numbers 1 to 3.
async fn three_events(store: &dyn RunStore, tag: &str) -> String {
    let run = begun(store, tag, "damaged").await;
    store
        .append_events(&run, "a", &[json!(1), json!(2)], None)
        .await
        .unwrap();
    store
        .append_events(&run, "a", &[json!(3)], None)
        .await
        .unwrap();
    run
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
/// `result` is the store's typed error naming `run` and the numbers `numbers`.
fn names_the_batch<T: std::fmt::Debug>(result: Result<T, RunStoreError>, run: &str, numbers: &str) {
    match result {
        Err(RunStoreError::Store { reason, .. }) => {
            assert!(reason.contains(run), "{reason}");
            assert!(reason.contains(numbers), "{reason}");
        }
        other => panic!("not a typed store error: {other:?}"),
    }
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
/// Damages the batch rows of a run through `exec` (SQL both dialects take): every damaged
/// row is a typed error of the reads that need it, and the reads that do not still work.
async fn damaged_rows_are_typed_errors<F, Fut>(store: &dyn RunStore, tag: &str, exec: F)
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let run = three_events(store, tag).await;
    let first_batch = format!("WHERE run_id = '{run}' AND last_seq = 2");
    for (events, first_seq) in [
        ("not json", 1),
        ("{\"n\": 1}", 1),
        ("null", 1),
        ("", 1),
        ("[1]", 1),
        ("[1, 2, 3]", 1),
        ("[1, 2", 1),
        // Numbers that do not match the count, or are not numbers of events at all, or a
        // batch of no events (a reader's `limit` rows would then hold fewer events).
        ("[1, 2]", 5),
        ("[1, 2, 3, 4]", -1),
        ("[]", 3),
    ] {
        exec(format!(
            "UPDATE mux_run_event_batches SET events = '{events}', first_seq = {first_seq} \
             {first_batch}"
        ))
        .await;
        let numbers = format!("{first_seq} to 2");
        names_the_batch(store.events_after(&run, 0, 10).await, &run, &numbers);
        if first_seq <= 2 {
            // A read from the middle of the row.
            names_the_batch(store.events_after(&run, 1, 1).await, &run, &numbers);
        }
        // The reads past the damaged row do not read it.
        let tail = store.events_after(&run, 2, 10).await.unwrap();
        assert_eq!((tail.len(), &tail[0].event), (1, &json!(3)), "{events}");
        assert_eq!(store.list_runs(&run, "", 10).await.unwrap().len(), 1);
    }
    // The last batch, which a listing reads.
    exec(format!(
        "UPDATE mux_run_event_batches SET events = 'garbage' WHERE run_id = '{run}' \
         AND last_seq = 3"
    ))
    .await;
    names_the_batch(store.list_runs(&run, "", 10).await, &run, "3 to 3");
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
/// `forget_ended` deletes an ended run's batch rows with it and keeps an active run's;
/// `count` counts the batch rows of a run id.
async fn forgetting_deletes_the_batches<F, Fut>(store: &dyn RunStore, count: F)
where
    F: Fn(&'static str) -> Fut,
    Fut: std::future::Future<Output = i64>,
{
    store.begin("s1", "ended", "a", HELD).await.unwrap();
    store.begin("s2", "active", "a", HELD).await.unwrap();
    for run in ["ended", "active"] {
        for n in 0..3 {
            store
                .append_events(run, "a", &[json!(n), json!(n)], None)
                .await
                .unwrap();
        }
    }
    store
        .append_events("ended", "a", &[json!("end")], Some(RunStatus::Finished))
        .await
        .unwrap();
    assert_eq!((count("ended").await, count("active").await), (4, 3));
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(
        store.forget_ended(Duration::from_millis(10)).await.unwrap(),
        1
    );
    assert_eq!((count("ended").await, count("active").await), (0, 3));
    // A run begun again under the forgotten id starts with no events.
    store.begin("s1", "ended", "a", HELD).await.unwrap();
    assert!(store.events_after("ended", 0, 10).await.unwrap().is_empty());
    store
        .append_events("ended", "a", &[json!("again")], None)
        .await
        .unwrap();
    let read = store.events_after("ended", 0, 10).await.unwrap();
    assert_eq!((read.len(), read[0].seq), (1, 1));
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
/// `store`, opened on a database of the earlier schema, reads the old run's three events.
async fn has_the_old_events(store: &dyn RunStore) {
    let read = store.events_after("old", 0, 10).await.unwrap();
    let events: Vec<(u64, Value)> = read.into_iter().map(|e| (e.seq, e.event)).collect();
    let want = [(1, json!({"n": 1})), (2, json!([2])), (3, json!("three"))];
    assert_eq!(events, want);
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
/// The old run goes on after its old events, on either store: `other` appends the fourth,
/// and `store` reads it.
async fn goes_on_after_the_old_events(store: &dyn RunStore, other: &dyn RunStore) {
    let stored = other
        .append_events("old", "a", &[json!(4)], None)
        .await
        .unwrap();
    assert_eq!(stored, 4);
    assert_eq!(store.events_after("old", 2, 10).await.unwrap().len(), 2);
}

#[cfg(feature = "sqlite")]
mod sqlite {
    use mux_store::runs::SqliteRunStore;

    use super::*;

    async fn open(dir: &tempfile::TempDir) -> SqliteRunStore {
        SqliteRunStore::open(dir.path().join("runs.db"))
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn the_sqlite_run_store_reads_any_window_of_events() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir).await;
        windows(&store, "sqlite").await;
        any_json_round_trips(&store, "sqlite").await;
    }

    #[tokio::test]
    async fn a_damaged_batch_row_is_a_typed_error_on_sqlite() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir).await;
        let pool = store.pool().clone();
        damaged_rows_are_typed_errors(&store, "sqlite", executor!(pool)).await;
    }

    #[tokio::test]
    async fn forget_ended_deletes_the_batches_of_the_runs_on_sqlite() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir).await;
        let pool = store.pool().clone();
        forgetting_deletes_the_batches(&store, batch_counter!(pool)).await;
    }

    /// The schema of the builds that kept an event a row.
    const EARLIER: &str = "
        CREATE TABLE mux_runs (
            run_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, status TEXT NOT NULL,
            owner TEXT, lease_until_ms INTEGER, cancel_requested INTEGER NOT NULL DEFAULT 0,
            last_seq INTEGER NOT NULL DEFAULT 0, updated_at_ms INTEGER NOT NULL);
        CREATE UNIQUE INDEX mux_runs_one_active_per_session
            ON mux_runs (session_id) WHERE status IN ('running', 'paused');
        CREATE TABLE mux_run_events (
            run_id TEXT NOT NULL REFERENCES mux_runs (run_id) ON DELETE CASCADE,
            seq INTEGER NOT NULL, event TEXT NOT NULL, PRIMARY KEY (run_id, seq)) WITHOUT ROWID;
        INSERT INTO mux_runs VALUES ('old', 's', 'running', 'a', 9999999999999, 0, 3, 0);
        INSERT INTO mux_run_events VALUES ('old', 1, '{\"n\":1}'), ('old', 2, '[2]'),
            ('old', 3, '\"three\"');
    ";

    #[tokio::test]
    async fn a_database_of_the_earlier_schema_keeps_its_events_on_sqlite() {
        let dir = tempfile::tempdir().unwrap();
        // A WAL file, as the earlier builds made.
        let options = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(dir.path().join("runs.db"))
            .create_if_missing(true)
            .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal);
        let earlier = sqlx::SqlitePool::connect_with(options).await.unwrap();
        sqlx::raw_sql(EARLIER).execute(&earlier).await.unwrap();
        earlier.close().await;

        // Two stores opening the file at once: one moves the events, the other finds them moved.
        let (store, other) = tokio::join!(open(&dir), open(&dir));
        has_the_old_events(&store).await;
        let old_tables: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM sqlite_master WHERE name = 'mux_run_events'")
                .fetch_one(store.pool())
                .await
                .unwrap();
        assert_eq!(old_tables, 0);
        goes_on_after_the_old_events(&store, &other).await;
        store.pool().close().await;
        other.pool().close().await;
        let reopened = open(&dir).await;
        assert_eq!(reopened.events_after("old", 0, 10).await.unwrap().len(), 4);
    }
}

#[cfg(feature = "postgres")]
mod postgres {
    use mux_store::runs::PostgresRunStore;
    use mux_testkit::postgres::TestDatabase;

    use super::*;

    #[tokio::test]
    async fn the_postgres_run_store_reads_any_window_of_events() {
        let db = TestDatabase::new().await;
        let store = PostgresRunStore::connect(&db.url).await.unwrap();
        windows(&store, "pg").await;
        any_json_round_trips(&store, "pg").await;
    }

    #[tokio::test]
    async fn a_damaged_batch_row_is_a_typed_error_on_postgres() {
        let db = TestDatabase::new().await;
        let store = PostgresRunStore::connect(&db.url).await.unwrap();
        let pool = store.pool().clone();
        damaged_rows_are_typed_errors(&store, "pg", executor!(pool)).await;
    }

    #[tokio::test]
    async fn forget_ended_deletes_the_batches_of_the_runs_on_postgres() {
        let db = TestDatabase::new().await;
        let store = PostgresRunStore::connect(&db.url).await.unwrap();
        let pool = store.pool().clone();
        forgetting_deletes_the_batches(&store, batch_counter!(pool)).await;
    }

    /// The schema of the builds that kept an event a row.
    const EARLIER: &str = "
        CREATE TABLE mux_runs (
            run_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, status TEXT NOT NULL,
            owner TEXT, lease_until TIMESTAMPTZ,
            cancel_requested BOOLEAN NOT NULL DEFAULT FALSE, last_seq BIGINT NOT NULL DEFAULT 0,
            created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            updated_at TIMESTAMPTZ NOT NULL DEFAULT now());
        CREATE TABLE mux_run_events (
            run_id TEXT NOT NULL REFERENCES mux_runs (run_id) ON DELETE CASCADE,
            seq BIGINT NOT NULL, event JSONB NOT NULL, PRIMARY KEY (run_id, seq));
        INSERT INTO mux_runs (run_id, session_id, status, owner, lease_until, last_seq)
            VALUES ('old', 's', 'running', 'a', now() + interval '1 hour', 3);
        INSERT INTO mux_run_events VALUES ('old', 1, '{\"n\":1}'), ('old', 2, '[2]'),
            ('old', 3, '\"three\"');
    ";

    #[tokio::test]
    async fn a_database_of_the_earlier_schema_keeps_its_events_on_postgres() {
        let db = TestDatabase::new().await;
        let earlier = sqlx::PgPool::connect(&db.url).await.unwrap();
        sqlx::raw_sql(EARLIER).execute(&earlier).await.unwrap();
        earlier.close().await;

        let (store, other) = tokio::join!(
            PostgresRunStore::connect(&db.url),
            PostgresRunStore::connect(&db.url)
        );
        let (store, other) = (store.unwrap(), other.unwrap());
        has_the_old_events(&store).await;
        let old_table: Option<String> =
            sqlx::query_scalar("SELECT to_regclass('mux_run_events')::text")
                .fetch_one(store.pool())
                .await
                .unwrap();
        assert_eq!(old_table, None);
        goes_on_after_the_old_events(&store, &other).await;
        let again = PostgresRunStore::connect(&db.url).await.unwrap();
        assert_eq!(again.events_after("old", 0, 10).await.unwrap().len(), 4);
    }
}
