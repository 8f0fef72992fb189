//! The lease-and-takeover component every face uses ([`RunOwner`]): two owners watch one
//! store (memory, and two connections to one real PostgreSQL), a third stops renewing its
//! run, and exactly one of the two takes it over; runs under another face's prefix stay
//! where they are.

use crate::runtime;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mux_store::runs::{
    MemoryRunStore, RunOwner, RunRecord, RunStatus, RunStore, RunWriter, Takeover, poll_interval,
};
use mux_tool::BoxFuture;
use tokio_util::sync::CancellationToken;

/// The dead owner's lease: it runs out at once.
const SHORT: Duration = Duration::from_millis(60);
/// The watchers' lease: never runs out during a test.
const HELD: Duration = Duration::from_secs(30);
/// How long the test waits for a takeover at most.
const PATIENCE: Duration = Duration::from_secs(30);

/// A face that records what it took over and holds it with a writer, as a face would.
struct Recorder {
    owner: RunOwner,
    taken: Arc<Mutex<Vec<(String, String)>>>,
    writers: Mutex<Vec<RunWriter>>,
}

impl Takeover for Recorder {
    fn continue_run(&self, record: RunRecord) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.taken
                .lock()
                .unwrap()
                .push((self.owner.id().to_owned(), record.run_id.clone()));
            let writer = self.owner.writer(record.run_id, record.last_seq);
            self.writers.lock().unwrap().push(writer);
        })
    }
}

fn owner(store: Arc<dyn RunStore>, name: &str, lease: Duration) -> RunOwner {
    RunOwner::new(store, name, "face.", lease, CancellationToken::new())
}

/// `dead` begins a run of the face and one of another face and stops; `first` and `second`
/// watch. Exactly one of them takes the face's run over, and nobody the other face's.
async fn exactly_one_takes_over(dead: RunOwner, first: RunOwner, second: RunOwner) {
    dead.begin("s1", "face.1").await.unwrap();
    dead.store()
        .begin("s2", "other.1", dead.id(), dead.lease())
        .await
        .unwrap();
    let taken = Arc::new(Mutex::new(Vec::new()));
    let faces: Vec<Arc<Recorder>> = [&first, &second]
        .into_iter()
        .map(|owner| {
            Arc::new(Recorder {
                owner: owner.clone(),
                taken: Arc::clone(&taken),
                writers: Mutex::default(),
            })
        })
        .collect();
    for face in &faces {
        face.owner.watch(Arc::downgrade(face));
    }
    tokio::time::timeout(PATIENCE, async {
        while taken.lock().unwrap().is_empty() {
            tokio::time::sleep(poll_interval(HELD)).await;
        }
    })
    .await
    .expect("nobody took the run over");

    let taken_now = taken.lock().unwrap().clone();
    assert_eq!(taken_now.len(), 1, "{taken_now:?}");
    let (winner, run) = &taken_now[0];
    assert_eq!(run, "face.1");
    let loser = if winner == first.id() {
        &second
    } else {
        &first
    };
    assert!(winner == first.id() || winner == second.id(), "{winner}");
    // The winner holds it under its lease: the other finds nothing to take.
    assert_eq!(loser.take_over_one().await.unwrap(), None);
    let record = first.store().get("face.1").await.unwrap();
    assert_eq!(record.status, RunStatus::Running);
    assert_eq!(record.owner.as_deref(), Some(winner.as_str()));
    assert!(
        faces.iter().any(|face| face.owner.holds("face.1")),
        "the winner's writer holds the run"
    );
    // Another face's run, expired as long, is nobody's here to take.
    let other = first.store().get("other.1").await.unwrap();
    assert_eq!(other.owner.as_deref(), Some(dead.id()));
    assert_eq!(taken.lock().unwrap().len(), 1);
    first.stop();
    second.stop();
}

#[test]
fn two_owners_on_a_memory_store_one_takes_over() {
    runtime().block_on(async {
        let store: Arc<dyn RunStore> = Arc::new(MemoryRunStore::new());
        exactly_one_takes_over(
            owner(Arc::clone(&store), "dead", SHORT),
            owner(Arc::clone(&store), "b", HELD),
            owner(store, "c", HELD),
        )
        .await;
    });
}

#[test]
fn a_run_its_writer_holds_is_not_taken_over_by_its_own_owner() {
    runtime().block_on(async {
        let store: Arc<dyn RunStore> = Arc::new(MemoryRunStore::new());
        let me = owner(store, "me", HELD);
        let record = me.begin("s", "face.mine").await.unwrap();
        let writer = me.writer(record.run_id, record.last_seq);
        assert!(me.holds("face.mine"));
        assert!(!me.holds("face.other"));
        writer.finish(RunStatus::Finished);
        tokio::time::timeout(PATIENCE, writer.done()).await.unwrap();
        assert!(!me.holds("face.mine"));
        assert_eq!(me.take_over_one().await.unwrap(), None);
    });
}

#[test]
fn the_polling_interval_is_a_third_of_the_lease_at_most_a_second() {
    assert_eq!(
        poll_interval(Duration::from_millis(300)),
        Duration::from_millis(100)
    );
    assert_eq!(
        poll_interval(Duration::from_secs(10)),
        Duration::from_secs(1)
    );
    assert_eq!(poll_interval(Duration::ZERO), Duration::from_millis(10));
}

#[test]
fn owners_have_ids_of_their_own() {
    let store: Arc<dyn RunStore> = Arc::new(MemoryRunStore::new());
    let a = owner(Arc::clone(&store), "web", HELD);
    let b = owner(store, "web", HELD);
    assert_ne!(a.id(), b.id());
    assert!(a.id().starts_with("web-"), "{}", a.id());
    assert_eq!(a.prefix(), "face.");
}

#[cfg(feature = "postgres")]
#[test]
fn two_owners_on_one_postgres_database_one_takes_over() {
    use mux_store::runs::PostgresRunStore;
    use mux_testkit::postgres::TestDatabase;

    runtime().block_on(async {
        let db = TestDatabase::new().await;
        let connect = || async {
            let store: Arc<dyn RunStore> =
                Arc::new(PostgresRunStore::connect(&db.url).await.unwrap());
            store
        };
        exactly_one_takes_over(
            owner(connect().await, "dead", SHORT),
            owner(connect().await, "b", HELD),
            owner(connect().await, "c", HELD),
        )
        .await;
    });
}
