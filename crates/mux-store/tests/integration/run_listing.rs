//! `RunStore::list_runs` on every store: the runs of one id prefix, in byte order, paged by
//! the last id seen, each with its last event.

use std::time::Duration;

use mux_store::runs::{MemoryRunStore, RunStatus, RunStore};
use serde_json::json;

const HELD: Duration = Duration::from_secs(60);

async fn lists(store: &dyn RunStore) {
    // Ids of two faces in one store, inserted out of order.
    for (n, id) in ["a2a.c", "a2a.a", "web.a", "a2a.b", "a2a", "a2a.%"]
        .into_iter()
        .enumerate()
    {
        store
            .begin(&format!("s{n}"), id, "owner", HELD)
            .await
            .unwrap();
    }
    store
        .append_events("a2a.b", "owner", &[json!({"n": 1}), json!({"n": 2})], None)
        .await
        .unwrap();
    store
        .set_status("a2a.c", "owner", RunStatus::Paused)
        .await
        .unwrap();

    let all = store.list_runs("a2a.", "", 100).await.unwrap();
    let ids: Vec<&str> = all.iter().map(|(r, _)| r.run_id.as_str()).collect();
    // A `%` is not a wildcard, and another prefix is left out.
    assert_eq!(ids, ["a2a.%", "a2a.a", "a2a.b", "a2a.c"]);
    let (b, last) = &all[2];
    assert_eq!(b.last_seq, 2);
    let last = last.as_ref().unwrap();
    assert_eq!((last.seq, &last.event), (2, &json!({"n": 2})));
    assert!(all[1].1.is_none(), "a run without events has no last event");
    assert_eq!(all[3].0.status, RunStatus::Paused);

    // Pages: up to `limit`, after the last id seen.
    let first = store.list_runs("a2a.", "", 2).await.unwrap();
    assert_eq!(first.len(), 2);
    let rest = store
        .list_runs("a2a.", &first[1].0.run_id, 10)
        .await
        .unwrap();
    let rest: Vec<&str> = rest.iter().map(|(r, _)| r.run_id.as_str()).collect();
    assert_eq!(rest, ["a2a.b", "a2a.c"]);
    assert!(store.list_runs("none.", "", 10).await.unwrap().is_empty());
}

#[tokio::test]
async fn the_memory_run_store_lists_runs_by_prefix() {
    lists(&MemoryRunStore::new()).await;
}

#[tokio::test]
async fn the_file_run_store_lists_runs_by_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let store = mux_store::runs::FileRunStore::open(dir.path())
        .await
        .unwrap();
    lists(&store).await;
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn the_sqlite_run_store_lists_runs_by_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let store = mux_store::runs::SqliteRunStore::open(dir.path().join("runs.db"))
        .await
        .unwrap();
    lists(&store).await;
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn the_postgres_run_store_lists_runs_by_prefix() {
    let db = mux_testkit::postgres::TestDatabase::new().await;
    let store = mux_store::runs::PostgresRunStore::connect(&db.url)
        .await
        .unwrap();
    lists(&store).await;
}
