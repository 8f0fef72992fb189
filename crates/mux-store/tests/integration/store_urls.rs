//! `Store::open` on every kind of URL: the sessions and the runs of one place, and what a
//! reopened store still has.

use std::time::Duration;

use mux_llm::Message;
use mux_store::Store;
use mux_store::runs::RunStatus;
use mux_store::session::{HistoryRecord, SessionMeta};
use serde_json::json;

const HELD: Duration = Duration::from_secs(60);

/// Writes a session and a paused run through one store, drops it, and reads both back
/// through a store opened again on the same URL.
async fn round_trip(url: &str, tag: &str) {
    let meta = SessionMeta::new();
    let run = format!("{tag}-paused");
    {
        let store = Store::open(url).await.unwrap();
        store.sessions().create(&meta).await.unwrap();
        store
            .sessions()
            .append(
                &meta.id,
                &[HistoryRecord::Message {
                    message: Message::user("pay"),
                }],
            )
            .await
            .unwrap();
        let runs = store.runs();
        runs.begin(&meta.id, &run, "a", HELD).await.unwrap();
        runs.append_events(&run, "a", &[json!({"ask": true})], Some(RunStatus::Paused))
            .await
            .unwrap();
    }
    let store = Store::open(url).await.unwrap();
    let session = store.sessions().load(&meta.id).await.unwrap();
    assert_eq!(session.messages[0].text(), "pay", "{tag}");
    let active = store.runs().active_run(&meta.id).await.unwrap().unwrap();
    assert_eq!(
        (active.run_id.as_str(), active.status),
        (run.as_str(), RunStatus::Paused)
    );
    assert_eq!(
        store
            .runs()
            .claim(&run, "b", HELD)
            .await
            .unwrap()
            .owner
            .as_deref(),
        Some("b")
    );
}

#[tokio::test]
async fn a_file_store_keeps_sessions_and_runs() {
    let dir = tempfile::tempdir().unwrap();
    round_trip(
        &format!("file://{}", dir.path().join("mux").display()),
        "file",
    )
    .await;
}

#[tokio::test]
async fn a_memory_store_opens_empty_each_time() {
    let store = Store::open("memory:").await.unwrap();
    store.sessions().create(&SessionMeta::new()).await.unwrap();
    assert!(
        Store::open("memory:")
            .await
            .unwrap()
            .sessions()
            .list()
            .await
            .unwrap()
            .is_empty()
    );
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn a_sqlite_store_keeps_sessions_and_runs_in_one_file_in_a_new_directory() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new/dir/mux.db");
    round_trip(&format!("sqlite://{}", path.display()), "sqlite").await;
    assert!(path.is_file());
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_store_keeps_sessions_and_runs() {
    let db = mux_testkit::postgres::TestDatabase::new().await;
    round_trip(&db.url, "pg").await;
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn a_postgres_store_out_of_reach_is_a_typed_error_without_its_password() {
    // A port nothing listens on (bound, then closed).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://me:s3cret@127.0.0.1:{port}/mux?connect_timeout=2");
    let err = tokio::time::timeout(Duration::from_secs(60), Store::open(&url))
        .await
        .expect("opening an unreachable database ends")
        .unwrap_err();
    assert!(
        matches!(err, mux_store::OpenError::Sessions { .. }),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains(&format!("127.0.0.1:{port}")) && !text.contains("s3cret"),
        "{text}"
    );
}
