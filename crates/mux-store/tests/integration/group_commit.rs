//! The PostgreSQL stores' group commit, through the public stores on a real PostgreSQL: many
//! runs and sessions written at once land whole and in order per run, and a crash of the
//! database in the middle of it loses nothing that was acknowledged.

use crate::runtime;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mux_llm::Message;
use mux_store::runs::{PostgresRunStore, RunStatus, RunStore, RunStoreError};
use mux_store::session::{HistoryRecord, PostgresSessionStore, SessionMeta, SessionStore};
use mux_testkit::postgres::TestDatabase;
use serde_json::{Value, json};
use tokio::sync::Barrier;

const HELD: Duration = Duration::from_secs(120);

fn said(text: String) -> HistoryRecord {
    HistoryRecord::Message {
        message: Message::user(text),
    }
}

/// Runs `run-{i}` on `session-{i}` held by `owner`, and the sessions, for `i` in `0..n`.
async fn begin(
    runs: &PostgresRunStore,
    sessions: &PostgresSessionStore,
    n: usize,
) -> Vec<SessionMeta> {
    let mut metas = Vec::new();
    for i in 0..n {
        let mut meta = SessionMeta::new();
        meta.id = format!("session-{i}");
        sessions.create(&meta).await.unwrap();
        runs.begin(&meta.id, &format!("run-{i}"), "owner", HELD)
            .await
            .unwrap();
        metas.push(meta);
    }
    metas
}

/// Both stores on the database at `url`, shared.
async fn connect(url: &str) -> (Arc<PostgresRunStore>, Arc<PostgresSessionStore>) {
    let runs = PostgresRunStore::connect(url).await.unwrap();
    let sessions = PostgresSessionStore::connect(url).await.unwrap();
    (Arc::new(runs), Arc::new(sessions))
}

/// Spawns `task(i, meta)` for each session, returning the tasks in order.
fn spawn_each<F, Fut>(metas: Vec<SessionMeta>, task: F) -> Vec<tokio::task::JoinHandle<Fut::Output>>
where
    F: Fn(usize, SessionMeta) -> Fut,
    Fut: std::future::Future + Send + 'static,
    Fut::Output: Send + 'static,
{
    metas
        .into_iter()
        .enumerate()
        .map(|(i, meta)| tokio::spawn(task(i, meta)))
        .collect()
}

/// The `n` of each stored event of `run`, after checking they are numbered 1, 2, 3…
async fn stored_numbers(runs: &PostgresRunStore, run: &str) -> Vec<u64> {
    let stored = runs.events_after(run, 0, 10_000).await.unwrap();
    for (i, event) in stored.iter().enumerate() {
        assert_eq!(event.seq, i as u64 + 1, "{run}: ids are not contiguous");
    }
    stored
        .iter()
        .map(|event| event.event["n"].as_u64().unwrap())
        .collect()
}

/// The texts of a session's messages.
/// Sessions created under `ids`.
async fn created<const N: usize>(
    sessions: &PostgresSessionStore,
    ids: [&str; N],
) -> [SessionMeta; N] {
    let metas = ids.map(|id| {
        let mut meta = SessionMeta::new();
        meta.id = id.into();
        meta
    });
    for meta in &metas {
        sessions.create(meta).await.unwrap();
    }
    metas
}

async fn stored_texts(sessions: &PostgresSessionStore, id: &str) -> Vec<String> {
    let session = sessions.load(id).await.unwrap();
    session.messages.iter().map(Message::text).collect()
}

#[test]
fn concurrent_appends_of_many_runs_land_in_order_per_run_with_contiguous_ids() {
    const RUNS: usize = 40;
    const APPENDS: u64 = 12;
    runtime().block_on(async {
        let db = TestDatabase::new().await;
        let (runs, sessions) = connect(&db.url).await;
        let metas = begin(&runs, &sessions, RUNS).await;
        let tasks = spawn_each(metas, |i, meta| {
            let runs = Arc::clone(&runs);
            let sessions = Arc::clone(&sessions);
            async move {
                let run = format!("run-{i}");
                for k in 0..APPENDS {
                    // Two events per append, the run's end with the last.
                    let events = [json!({"n": 2 * k}), json!({"n": 2 * k + 1})];
                    let end = (k + 1 == APPENDS).then_some(RunStatus::Finished);
                    let last = runs.append_events(&run, "owner", &events, end).await;
                    assert_eq!(last.unwrap(), 2 * (k + 1), "{run}");
                    sessions
                        .save_and_append(&meta, &[said(format!("{i}.{k}"))])
                        .await
                        .unwrap();
                }
            }
        });
        for task in tasks {
            task.await.unwrap();
        }
        for i in 0..RUNS {
            let run = format!("run-{i}");
            let numbers = stored_numbers(&runs, &run).await;
            assert_eq!(numbers, (0..2 * APPENDS).collect::<Vec<_>>(), "{run}");
            let record = runs.get(&run).await.unwrap();
            assert_eq!(record.status, RunStatus::Finished);
            assert_eq!(record.last_seq, 2 * APPENDS);
            let texts = stored_texts(&sessions, &format!("session-{i}")).await;
            let expected: Vec<String> = (0..APPENDS).map(|k| format!("{i}.{k}")).collect();
            assert_eq!(texts, expected, "session-{i}");
        }
        // The run's end freed its session.
        runs.begin("session-0", "run-next", "owner", HELD)
            .await
            .unwrap();
    });
}

/// Appends until the store takes it, as a run's writer does, counting refusals; panics after
/// a minute.
async fn until_stored<F, Fut, T, E>(failures: &AtomicUsize, mut write: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
    E: std::fmt::Debug,
{
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match write().await {
            Ok(done) => return done,
            Err(err) => {
                assert!(
                    Instant::now() < deadline,
                    "the store never came back: {err:?}"
                );
                failures.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

#[test]
fn a_database_crash_mid_batch_loses_nothing_acknowledged() {
    const RUNS: usize = 12;
    const APPENDS: u64 = 20;
    /// Each writer waits here after this many appends until the database is down.
    const BEFORE_CRASH: u64 = 6;
    runtime().block_on(async {
        let db = Arc::new(TestDatabase::new().await);
        let (runs, sessions) = connect(&db.url).await;
        let metas = begin(&runs, &sessions, RUNS).await;
        let failures = Arc::new(AtomicUsize::new(0));
        // Every writer and the crash.
        let crashed = Arc::new(Barrier::new(RUNS + 1));
        let tasks = spawn_each(metas, |i, meta| {
            let runs = Arc::clone(&runs);
            let sessions = Arc::clone(&sessions);
            let failures = Arc::clone(&failures);
            let crashed = Arc::clone(&crashed);
            async move {
                let run = format!("run-{i}");
                let mut acknowledged = Vec::new();
                for k in 0..APPENDS {
                    if k == BEFORE_CRASH {
                        crashed.wait().await;
                    }
                    let events: Vec<Value> = vec![json!({"n": k})];
                    let end = (k + 1 == APPENDS).then_some(RunStatus::Finished);
                    until_stored(&failures, || {
                        runs.append_events(&run, "owner", &events, end)
                    })
                    .await;
                    acknowledged.push(k);
                    let record = [said(format!("{i}.{k}"))];
                    until_stored(&failures, || sessions.save_and_append(&meta, &record)).await;
                }
                acknowledged
            }
        });
        // Down at once, with the writers about to write; up again after 1.5 s.
        crashed.wait().await;
        let restart = {
            let db = Arc::clone(&db);
            tokio::task::spawn_blocking(move || db.outage(Duration::from_millis(1_500)))
                .await
                .unwrap()
        };
        let mut acknowledged = Vec::new();
        for task in tasks {
            acknowledged.push(task.await.unwrap());
        }
        tokio::task::spawn_blocking(move || restart.join().unwrap())
            .await
            .unwrap();
        assert!(
            failures.load(Ordering::SeqCst) > 0,
            "no write met the outage: the test did not test it"
        );
        for (i, acknowledged) in acknowledged.iter().enumerate() {
            let run = format!("run-{i}");
            let mut numbers = stored_numbers(&runs, &run).await;
            // An append whose answer was lost with the connection may be stored and then
            // retried: a repeat, never a loss.
            numbers.dedup();
            assert_eq!(
                &numbers, acknowledged,
                "{run}: an acknowledged event is missing"
            );
            // A session's write whose answer was lost is read back, never stored twice.
            let texts = stored_texts(&sessions, &format!("session-{i}")).await;
            let expected: Vec<String> = acknowledged.iter().map(|k| format!("{i}.{k}")).collect();
            assert_eq!(texts, expected, "session-{i}");
            assert_eq!(runs.get(&run).await.unwrap().status, RunStatus::Finished);
        }
        // A run that lost its lease during the outage would have been refused, never written
        // twice by two owners.
        let lost = runs
            .append_events("run-0", "someone-else", &[json!({"n": 99})], None)
            .await
            .unwrap_err();
        assert!(matches!(lost, RunStoreError::LeaseLost { .. }), "{lost:?}");
    });
}

/// A commit kept waiting by a lock held elsewhere (an operator's open transaction) gives up
/// after the group commit's lock timeout (5 s; the URL sets none), rolled back, instead of
/// holding the process's writes; once the lock is gone the write goes through, stored once.
#[test]
fn a_commit_kept_waiting_by_a_lock_gives_up_and_stores_nothing() {
    runtime().block_on(async {
        let db = TestDatabase::new().await;
        let sessions = PostgresSessionStore::connect(&db.url).await.unwrap();
        let [locked, free] = created(&sessions, ["locked", "free"]).await;

        let mut holder = <sqlx::PgConnection as sqlx::Connection>::connect(&db.url)
            .await
            .unwrap();
        sqlx::query("BEGIN").execute(&mut holder).await.unwrap();
        sqlx::query("SELECT id FROM mux_sessions WHERE id = 'locked' FOR UPDATE")
            .execute(&mut holder)
            .await
            .unwrap();

        let kept = [said("kept waiting".into())];
        let write = sessions.save_and_append(&locked, &kept);
        // While it waits, an operator sees who waits for the lock. (Asked outside the holder's
        // transaction: one transaction sees one snapshot of `pg_stat_activity`.)
        let seen = async {
            loop {
                let waiting: i64 = sqlx::query_scalar(
                    "SELECT count(*) FROM pg_stat_activity \
                     WHERE application_name = 'mux group commit' AND wait_event_type = 'Lock'",
                )
                .fetch_one(sessions.pool())
                .await
                .unwrap();
                if waiting == 1 {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        let (waited, seen) = tokio::join!(
            tokio::time::timeout(Duration::from_secs(20), write),
            tokio::time::timeout(Duration::from_secs(4), seen),
        );
        seen.expect("the waiting commit shows as `mux group commit` in pg_stat_activity");
        let err = waited
            .expect("the commit gave up instead of waiting for the lock")
            .unwrap_err();
        assert!(
            matches!(err, mux_store::session::SessionError::Database { .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains("lock"), "{err}");
        // Another session's write goes through meanwhile.
        tokio::time::timeout(
            Duration::from_secs(20),
            sessions.save_and_append(&free, &[said("free".into())]),
        )
        .await
        .unwrap()
        .unwrap();

        sqlx::query("ROLLBACK").execute(&mut holder).await.unwrap();
        sessions
            .save_and_append(&locked, &[said("after".into())])
            .await
            .unwrap();
        assert_eq!(stored_texts(&sessions, "locked").await, ["after"]);
        assert_eq!(stored_texts(&sessions, "free").await, ["free"]);
    });
}

/// A commit whose statement runs past `statement_timeout` (here a trigger that sleeps, set to
/// 300 ms by the URL, which wins over the writer's own bound) is given up and stores nothing;
/// another session's write goes through, and the write stores once when it is retried.
#[test]
fn a_commit_that_runs_too_long_gives_up_and_stores_nothing() {
    runtime().block_on(async {
        let db = TestDatabase::new().await;
        let joined = if db.url.contains('?') { '&' } else { '?' };
        let url = format!("{}{joined}options=-c%20statement_timeout%3D300ms", db.url);
        let sessions = PostgresSessionStore::connect(&url).await.unwrap();
        let [slow, fast] = created(&sessions, ["slow", "fast"]).await;
        for statement in [
            "CREATE FUNCTION mux_test_sleep() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN PERFORM pg_sleep(3); RETURN NEW; END $$",
            "CREATE TRIGGER mux_test_slow BEFORE INSERT ON mux_session_records FOR EACH ROW \
             WHEN (NEW.session_id = 'slow') EXECUTE FUNCTION mux_test_sleep()",
        ] {
            sqlx::query(statement)
                .execute(sessions.pool())
                .await
                .unwrap();
        }

        let err = tokio::time::timeout(
            Duration::from_secs(20),
            sessions.save_and_append(&slow, &[said("too slow".into())]),
        )
        .await
        .expect("the commit gave up instead of running on")
        .unwrap_err();
        assert!(err.to_string().contains("statement timeout"), "{err}");
        sessions
            .save_and_append(&fast, &[said("fast".into())])
            .await
            .unwrap();

        sqlx::query("DROP TRIGGER mux_test_slow ON mux_session_records")
            .execute(sessions.pool())
            .await
            .unwrap();
        sessions
            .save_and_append(&slow, &[said("after".into())])
            .await
            .unwrap();
        assert_eq!(stored_texts(&sessions, "slow").await, ["after"]);
        assert_eq!(stored_texts(&sessions, "fast").await, ["fast"]);
    });
}
