//! Every run store against one contract (memory, and a real PostgreSQL from the machine's
//! binaries), plus what only a shared database promises: OS processes racing to take over
//! expired runs each get different ones, and a wake-up crosses processes.

use crate::runtime;
use std::time::{Duration, Instant};

use mux_store::runs::{MemoryRunStore, RunStatus, RunStore, RunStoreError};
use serde_json::json;

/// Long enough never to run out during a test step; short enough to run out on purpose.
const HELD: Duration = Duration::from_secs(60);
const SHORT: Duration = Duration::from_millis(150);

/// Lets `SHORT` leases run out.
async fn expire() {
    tokio::time::sleep(SHORT * 3).await;
}

/// The contract; `tag` keeps the ids of one store's runs apart.
async fn contract(store: &dyn RunStore, tag: &str) {
    let session = format!("{tag}-session");
    let run = |n: u32| format!("{tag}-run-{n}");

    // One active run per session.
    let first = store.begin(&session, &run(1), "a", HELD).await.unwrap();
    assert_eq!(first.status, RunStatus::Running);
    assert_eq!(first.owner.as_deref(), Some("a"));
    let busy = store.begin(&session, &run(2), "b", HELD).await.unwrap_err();
    assert!(
        matches!(&busy, RunStoreError::Busy { run_id, .. } if *run_id == run(1)),
        "{busy:?}"
    );
    assert_eq!(
        store.active_run(&session).await.unwrap().unwrap().run_id,
        run(1)
    );
    let other = store
        .begin(&format!("{tag}-other"), &run(1), "b", HELD)
        .await
        .unwrap_err();
    assert!(matches!(other, RunStoreError::Exists(_)), "{other:?}");

    // Events are numbered by the store, contiguously, and read back in order.
    let events = [
        json!({"type": "RUN_STARTED"}),
        json!({"type": "TEXT", "delta": "hi"}),
    ];
    assert_eq!(
        store
            .append_events(&run(1), "a", &events, None)
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        store
            .append_events(&run(1), "a", &[json!({"type": "MORE"})], None)
            .await
            .unwrap(),
        3
    );
    let read = store.events_after(&run(1), 0, 100).await.unwrap();
    assert_eq!(read.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(read[1].event, events[1]);
    let tail = store.events_after(&run(1), 2, 100).await.unwrap();
    assert_eq!(tail.len(), 1);
    assert_eq!(tail[0].seq, 3);
    assert_eq!(store.events_after(&run(1), 0, 2).await.unwrap().len(), 2);
    assert!(store.events_after(&run(1), 3, 10).await.unwrap().is_empty());
    assert!(matches!(
        store.events_after(&run(99), 0, 10).await,
        Err(RunStoreError::NotFound(_))
    ));

    // Only the owner writes; a held lease cannot be claimed.
    let fenced = store
        .append_events(&run(1), "b", &[json!({})], None)
        .await
        .unwrap_err();
    assert!(
        matches!(fenced, RunStoreError::LeaseLost { .. }),
        "{fenced:?}"
    );
    assert!(matches!(
        store.claim(&run(1), "b", HELD).await,
        Err(RunStoreError::Held {
            status: RunStatus::Running,
            ..
        })
    ));
    assert!(store.claim_expired(tag, "b", HELD).await.unwrap().is_none());

    // A cancel request reaches the owner at its next renew, and wakes waiters.
    let first_run = run(1);
    let waiting = store.changed(&first_run, Duration::from_secs(30));
    let started = Instant::now();
    let (_, ()) = tokio::join!(
        async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            store.request_cancel(&run(1)).await.unwrap();
        },
        waiting
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the wake-up was lost"
    );
    assert!(
        store
            .renew(&run(1), "a", HELD)
            .await
            .unwrap()
            .cancel_requested
    );

    // Ending frees the session and the lease.
    store
        .set_status(&run(1), "a", RunStatus::Cancelled)
        .await
        .unwrap();
    assert!(store.active_run(&session).await.unwrap().is_none());
    assert!(matches!(
        store.renew(&run(1), "a", HELD).await,
        Err(RunStoreError::LeaseLost { .. })
    ));
    assert!(matches!(
        store.claim(&run(1), "b", HELD).await,
        Err(RunStoreError::Held {
            status: RunStatus::Cancelled,
            ..
        })
    ));

    // A paused run has no owner; whoever gets the answer claims it.
    store.begin(&session, &run(2), "a", HELD).await.unwrap();
    store
        .set_status(&run(2), "a", RunStatus::Paused)
        .await
        .unwrap();
    let paused = store.get(&run(2)).await.unwrap();
    assert_eq!((paused.status, paused.owner), (RunStatus::Paused, None));
    assert!(store.begin(&session, &run(3), "a", HELD).await.is_err());
    let resumed = store.claim(&run(2), "c", HELD).await.unwrap();
    assert_eq!(
        (resumed.status, resumed.owner.as_deref()),
        (RunStatus::Running, Some("c"))
    );
    assert!(matches!(
        store.append_events(&run(2), "a", &[json!({})], None).await,
        Err(RunStoreError::LeaseLost { .. })
    ));

    // An owner that stalls past its lease loses the run to a takeover, and is fenced out.
    store.renew(&run(2), "c", SHORT).await.unwrap();
    expire().await;
    // A takeover looks only among the runs of the caller's prefix (its face's).
    for elsewhere in [format!("{tag}."), format!("x{tag}"), "zzz".to_owned()] {
        assert!(
            store
                .claim_expired(&elsewhere, "d", HELD)
                .await
                .unwrap()
                .is_none(),
            "{elsewhere}"
        );
    }
    let taken = store.claim_expired(tag, "d", HELD).await.unwrap().unwrap();
    assert_eq!(taken.run_id, run(2));
    assert_eq!(taken.owner.as_deref(), Some("d"));
    assert!(store.claim_expired(tag, "e", HELD).await.unwrap().is_none());
    for refused in [
        store.renew(&run(2), "c", HELD).await.map(|_| ()),
        store
            .append_events(&run(2), "c", &[json!({})], None)
            .await
            .map(|_| ()),
        store.set_status(&run(2), "c", RunStatus::Finished).await,
    ] {
        assert!(
            matches!(refused, Err(RunStoreError::LeaseLost { .. })),
            "{refused:?}"
        );
    }
    assert_eq!(
        store
            .append_events(&run(2), "d", &[json!({})], None)
            .await
            .unwrap(),
        1
    );
    // The last events and the end in one step: a fenced owner's attempt writes neither.
    assert!(matches!(
        store
            .append_events(
                &run(2),
                "c",
                &[json!({"late": true})],
                Some(RunStatus::Failed)
            )
            .await,
        Err(RunStoreError::LeaseLost { .. })
    ));
    assert_eq!(
        store
            .append_events(
                &run(2),
                "d",
                &[json!({"last": true})],
                Some(RunStatus::Finished)
            )
            .await
            .unwrap(),
        2
    );
    let ended = store.get(&run(2)).await.unwrap();
    assert_eq!(
        (ended.status, ended.owner, ended.last_seq),
        (RunStatus::Finished, None, 2)
    );
    assert_eq!(
        store.events_after(&run(2), 1, 10).await.unwrap()[0].event,
        json!({"last": true})
    );
    assert!(store.active_run(&session).await.unwrap().is_none());
    store.begin(&session, &run(3), "a", HELD).await.unwrap();
    store
        .set_status(&run(3), "a", RunStatus::Failed)
        .await
        .unwrap();

    // A hand-over ends one run and begins the next on its session in one step.
    store.begin(&session, &run(4), "a", HELD).await.unwrap();
    store
        .set_status(&run(4), "a", RunStatus::Paused)
        .await
        .unwrap();
    let next = store.hand_over(&run(4), &run(5), "b", HELD).await.unwrap();
    assert_eq!(next.session_id, session);
    assert_eq!(next.status, RunStatus::Running);
    assert_eq!(next.owner.as_deref(), Some("b"));
    assert_eq!(
        store.get(&run(4)).await.unwrap().status,
        RunStatus::Finished
    );
    let active = store.active_run(&session).await.unwrap().unwrap();
    assert_eq!(active.run_id, run(5));
    // Only the holder (or a claimant after the lease) hands a running run over.
    assert!(matches!(
        store.hand_over(&run(5), &run(6), "c", HELD).await,
        Err(RunStoreError::Held { .. })
    ));
    assert!(matches!(
        store.hand_over(&run(5), &run(1), "b", HELD).await,
        Err(RunStoreError::Exists(_))
    ));
    assert_eq!(
        store.get(&run(5)).await.unwrap().status,
        RunStatus::Running,
        "a refused hand-over changes nothing"
    );
    store.hand_over(&run(5), &run(6), "b", HELD).await.unwrap();
    store.renew(&run(6), "b", SHORT).await.unwrap();
    expire().await;
    store.hand_over(&run(6), &run(7), "c", HELD).await.unwrap();
    assert!(matches!(
        store.hand_over(&run(6), &run(8), "c", HELD).await,
        Err(RunStoreError::Held { .. })
    ));
    store
        .set_status(&run(7), "c", RunStatus::Finished)
        .await
        .unwrap();

    // Ended runs are forgotten once old enough, with their events; active ones never.
    store.begin(&session, &run(9), "a", HELD).await.unwrap();
    assert_eq!(store.forget_ended(HELD).await.unwrap(), 0);
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(store.forget_ended(Duration::from_millis(10)).await.unwrap() >= 6);
    assert!(matches!(
        store.get(&run(2)).await,
        Err(RunStoreError::NotFound(_))
    ));
    assert!(store.events_after(&run(2), 0, 10).await.is_err());
    assert_eq!(store.get(&run(9)).await.unwrap().status, RunStatus::Running);
}

#[test]
fn the_memory_run_store_keeps_the_contract() {
    runtime().block_on(contract(&MemoryRunStore::new(), "memory"));
}

#[test]
fn the_file_run_store_keeps_the_contract_and_a_reopened_directory_keeps_the_runs() {
    use mux_store::runs::FileRunStore;
    let dir = tempfile::tempdir().unwrap();
    runtime().block_on(async {
        let store = FileRunStore::open(dir.path()).await.unwrap();
        contract(&store, "file").await;
        // A running run, a paused one asked to cancel, and their events.
        store.begin("kept", "kept-run", "a", HELD).await.unwrap();
        store
            .append_events("kept-run", "a", &[json!({"n": 1})], None)
            .await
            .unwrap();
        store
            .begin("paused", "paused-run", "a", HELD)
            .await
            .unwrap();
        store
            .append_events(
                "paused-run",
                "a",
                &[json!({"ask": "approve?"})],
                Some(RunStatus::Paused),
            )
            .await
            .unwrap();
        store.request_cancel("paused-run").await.unwrap();
        // One process at a time: a second store on the directory is refused, typed.
        let second = FileRunStore::open(dir.path()).await.unwrap_err();
        assert!(
            matches!(second, RunStoreError::Unavailable { .. }),
            "{second:?}"
        );
        drop(store);

        let reopened = FileRunStore::open(dir.path()).await.unwrap();
        let kept = reopened.get("kept-run").await.unwrap();
        assert_eq!((kept.status, kept.last_seq), (RunStatus::Running, 1));
        assert!(matches!(
            reopened.begin("kept", "other", "b", HELD).await,
            Err(RunStoreError::Busy { .. })
        ));
        // What the contract forgot stays forgotten.
        assert!(matches!(
            reopened.get("file-run-2").await,
            Err(RunStoreError::NotFound(_))
        ));
        assert_eq!(
            reopened.get("file-run-9").await.unwrap().status,
            RunStatus::Running
        );
        // The paused run waits for its answer: whoever gets it claims the run.
        let paused = reopened.get("paused-run").await.unwrap();
        assert_eq!(
            (paused.status, paused.owner, paused.cancel_requested),
            (RunStatus::Paused, None, true)
        );
        assert_eq!(
            reopened.events_after("paused-run", 0, 10).await.unwrap()[0].event,
            json!({"ask": "approve?"})
        );
        let claimed = reopened.claim("paused-run", "b", HELD).await.unwrap();
        assert_eq!(claimed.owner.as_deref(), Some("b"));
        // The running run's owner is gone with its process: its lease is over, and the
        // first takeover of its prefix gets it (and no other).
        let taken = reopened
            .claim_expired("kept", "c", HELD)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(taken.run_id, "kept-run");
        assert!(matches!(
            reopened
                .append_events("kept-run", "a", &[json!({})], None)
                .await,
            Err(RunStoreError::LeaseLost { .. })
        ));
        assert_eq!(
            reopened
                .append_events(
                    "kept-run",
                    "c",
                    &[json!({"n": 2})],
                    Some(RunStatus::Finished)
                )
                .await
                .unwrap(),
            2
        );
    });
}

#[cfg(feature = "sqlite")]
#[test]
fn the_sqlite_run_store_keeps_the_contract_and_a_reopened_file_keeps_the_runs() {
    use mux_store::runs::SqliteRunStore;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    runtime().block_on(async {
        let store = SqliteRunStore::open(&path).await.unwrap();
        contract(&store, "sqlite").await;
        store.begin("kept", "kept-run", "a", HELD).await.unwrap();
        store
            .append_events("kept-run", "a", &[json!({"n": 1})], None)
            .await
            .unwrap();
        store.pool().close().await;
        let reopened = SqliteRunStore::open(&path).await.unwrap();
        assert_eq!(reopened.get("kept-run").await.unwrap().last_seq, 1);
        assert!(matches!(
            reopened.begin("kept", "other", "b", HELD).await,
            Err(RunStoreError::Busy { .. })
        ));
    });
}

#[cfg(feature = "postgres")]
mod postgres {
    use mux_store::runs::PostgresRunStore;

    use super::*;
    use mux_testkit::postgres::TestDatabase;

    #[test]
    fn the_postgres_run_store_keeps_the_contract() {
        runtime().block_on(async {
            let db = TestDatabase::new().await;
            let store = PostgresRunStore::connect(&db.url).await.unwrap();
            contract(&store, "pg").await;
            // A second connection (another process, as far as the database knows) sees the
            // same runs and wakes on the first's changes.
            let other = PostgresRunStore::connect(&db.url).await.unwrap();
            store.begin("s", "r", "a", HELD).await.unwrap();
            assert!(matches!(
                other.begin("s", "r2", "b", HELD).await,
                Err(RunStoreError::Busy { .. })
            ));
            let started = Instant::now();
            let (_, ()) = tokio::join!(
                async {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    store
                        .append_events("r", "a", &[json!({"n": 1})], None)
                        .await
                        .unwrap();
                },
                other.changed("r", Duration::from_secs(30))
            );
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "no cross-connection wake-up"
            );
            assert_eq!(other.events_after("r", 0, 10).await.unwrap().len(), 1);
        });
    }

    /// A URL libpq takes, a user and no host (the socket named by `host=`), opens both
    /// stores (before: sqlx's `EmptyHost`, so docs/sessions.md's example failed).
    #[test]
    fn a_user_without_a_host_connects_through_the_socket() {
        runtime().block_on(async {
            let db = TestDatabase::new().await;
            assert!(db.url.contains("@localhost/"), "{}", db.url);
            let url = db.url.replace("@localhost/", "@/");
            let runs = PostgresRunStore::connect(&url).await.unwrap();
            runs.begin("s", "r", "a", HELD).await.unwrap();
            let sessions = mux_store::session::PostgresSessionStore::connect(&url)
                .await
                .unwrap();
            drop(sessions);
            let bad = PostgresRunStore::connect("postgres://app@/mux?host=/nonexistent/dir")
                .await
                .err()
                .unwrap();
            assert!(!bad.to_string().contains("EmptyHost"), "{bad}");
        });
    }

    #[test]
    fn processes_racing_to_take_over_expired_runs_each_get_different_ones() {
        let rt = runtime();
        let db = rt.block_on(TestDatabase::new());
        let store = rt.block_on(PostgresRunStore::connect(&db.url)).unwrap();
        super::race(&rt, &store, &db.url);
        drop(db);
    }
}

#[cfg(feature = "sqlite")]
#[test]
fn processes_racing_for_expired_runs_in_one_sqlite_file_each_get_different_ones() {
    use mux_store::runs::SqliteRunStore;
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("runs.db").display());
    let rt = runtime();
    let store = rt.block_on(SqliteRunStore::connect(&url)).unwrap();
    race(&rt, &store, &url);
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
const ROLE: &str = "MUX_RUNS_CHILD";
#[cfg(any(feature = "sqlite", feature = "postgres"))]
const URL: &str = "MUX_RUNS_URL";
#[cfg(any(feature = "sqlite", feature = "postgres"))]
const OUT: &str = "MUX_RUNS_OUT";
#[cfg(any(feature = "sqlite", feature = "postgres"))]
const GO: &str = "MUX_RUNS_GO";
#[cfg(any(feature = "sqlite", feature = "postgres"))]
const CHILD_TEST: &str = "runs::child_process_role";
#[cfg(any(feature = "sqlite", feature = "postgres"))]
const EXPIRED_RUNS: usize = 200;

/// Opens the run store at `url` (`sqlite://…` or `postgres://…`).
#[cfg(any(feature = "sqlite", feature = "postgres"))]
async fn open(url: &str) -> Box<dyn RunStore> {
    #[cfg(feature = "sqlite")]
    if url.starts_with("sqlite:") {
        return Box::new(mux_store::runs::SqliteRunStore::connect(url).await.unwrap());
    }
    #[cfg(feature = "postgres")]
    if url.starts_with("postgres:") {
        return Box::new(
            mux_store::runs::PostgresRunStore::connect(url)
                .await
                .unwrap(),
        );
    }
    panic!("no run store for {url}")
}

/// Not a test of its own: a child process that claims expired runs until none is left and
/// writes the ids it got to `MUX_RUNS_OUT` (without `MUX_RUNS_CHILD`, it returns at once).
#[cfg(any(feature = "sqlite", feature = "postgres"))]
#[test]
fn child_process_role() {
    let Ok(owner) = std::env::var(ROLE) else {
        return;
    };
    runtime().block_on(async {
        let store = open(&std::env::var(URL).unwrap()).await;
        // Start together with the others.
        let go = std::path::PathBuf::from(std::env::var(GO).unwrap());
        while !go.exists() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let mut got = Vec::new();
        while let Some(run) = store.claim_expired("r", &owner, HELD).await.unwrap() {
            assert_eq!(run.owner.as_deref(), Some(owner.as_str()));
            got.push(run.run_id);
        }
        std::fs::write(std::env::var(OUT).unwrap(), got.join("\n")).unwrap();
    });
}

/// Leaves `EXPIRED_RUNS` runs with expired leases in `store` (and ten of another prefix),
/// then has three OS processes take them over at once: each run of theirs goes to exactly
/// one, and none of the other prefix to any.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
fn race(rt: &tokio::runtime::Runtime, store: &dyn RunStore, url: &str) {
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    rt.block_on(async {
        for n in 0..EXPIRED_RUNS {
            store
                .begin(&format!("s{n}"), &format!("r{n}"), "dead", SHORT)
                .await
                .unwrap();
        }
        // Another face's runs, expired too: not theirs to take.
        for n in 0..10 {
            store
                .begin(&format!("t{n}"), &format!("q{n}"), "dead", SHORT)
                .await
                .unwrap();
        }
        expire().await;
    });
    let mut children = Vec::new();
    for n in 0..3 {
        let out = dir.path().join(format!("claimed-{n}"));
        let child = Command::new(std::env::current_exe().unwrap())
            .args([CHILD_TEST, "--exact", "--nocapture", "--test-threads=1"])
            .env(ROLE, format!("owner-{n}"))
            .env(URL, url)
            .env(OUT, &out)
            .env(GO, dir.path().join("go"))
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        children.push((child, out));
    }
    // Every child connects, then all start at once.
    std::thread::sleep(Duration::from_millis(500));
    std::fs::write(dir.path().join("go"), "").unwrap();
    let mut all = Vec::new();
    for (mut child, out) in children {
        assert!(child.wait().unwrap().success());
        let text = std::fs::read_to_string(&out).unwrap();
        let got: Vec<String> = text
            .lines()
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect();
        eprintln!("{} took {} runs", out.display(), got.len());
        all.extend(got);
    }
    all.sort();
    let mut unique = all.clone();
    unique.dedup();
    assert_eq!(unique.len(), all.len(), "a run was taken twice: {all:?}");
    assert_eq!(all.len(), EXPIRED_RUNS, "every expired run is taken once");
    rt.block_on(async {
        for n in 0..10 {
            let other = store.get(&format!("q{n}")).await.unwrap();
            assert_eq!(
                other.owner.as_deref(),
                Some("dead"),
                "another face's run was taken"
            );
        }
    });
}
