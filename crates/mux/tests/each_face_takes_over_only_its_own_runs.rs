//! One run store shared by the web face and the A2A face (as two kinds of processes on one
//! database would share it): when a web run and an A2A task have both lost their owners,
//! each face takes over only its own. Before run ids were scoped per face, the web face's
//! takeover claimed any expired run and, finding no web run there, failed the A2A task.
#![cfg(all(feature = "web", feature = "a2a", feature = "testing"))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use mux::a2a::{A2aConfig, A2aServer};
use mux::llm::testing::ScriptedClient;
use mux::orchestrator::Agent;
use mux::orchestrator::runs::{MemoryRunStore, RunRecord, RunStatus, RunStore};
use mux::orchestrator::session::{MemorySessionStore, SessionStore};
use mux::web::{AguiRouter, WebConfig};

const LEASE: Duration = Duration::from_millis(300);
/// The run store ids the faces give: `web.<principal hex>.<run>` and `a2a.<task>`.
const WEB_RUN: &str = "web.6c6f63616c.run-1";
const A2A_TASK: &str = "a2a.task-1";

fn agent() -> Agent {
    Agent::builder(ScriptedClient::new(), "scripted")
        .build()
        .unwrap()
}

/// Polls `run` until `done` holds (10 s at most).
async fn until(store: &dyn RunStore, run: &str, done: impl Fn(&RunRecord) -> bool) -> RunRecord {
    for _ in 0..200 {
        let record = store.get(run).await.unwrap();
        if done(&record) {
            return record;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{run} never got there: {:?}", store.get(run).await);
}

fn is_dead_owners(record: &RunRecord) -> bool {
    record.status == RunStatus::Running && record.owner.as_deref() == Some("dead")
}

#[tokio::test]
async fn each_face_takes_over_only_its_own_expired_runs() {
    let runs: Arc<dyn RunStore> = Arc::new(MemoryRunStore::new());
    let sessions: Arc<dyn SessionStore> = Arc::new(MemorySessionStore::new());
    // Two owners die: the A2A task's lease runs out first, so a takeover that took any
    // expired run would take it before the web run.
    runs.begin("context-1", A2A_TASK, "dead", Duration::from_millis(1))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    runs.begin("thread-1", WEB_RUN, "dead", Duration::from_millis(1))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;

    // A web process comes up: it takes over the web run (whose thread's session is gone,
    // so the run fails at once), and leaves the task alone.
    let _web = AguiRouter::new(agent())
        .session_store(Arc::clone(&sessions))
        .run_store(Arc::clone(&runs))
        .config(WebConfig::default().lease(LEASE))
        .build();
    let web_run = until(&*runs, WEB_RUN, |r| r.status != RunStatus::Running).await;
    let events = runs.events_after(WEB_RUN, 0, 10).await.unwrap();
    assert!(
        events
            .iter()
            .any(|e| e.event["name"] == "mux.run_taken_over"),
        "{events:?}"
    );
    let task = runs.get(A2A_TASK).await.unwrap();
    assert!(
        is_dead_owners(&task),
        "the web face took an A2A task over: {task:?}"
    );

    // An A2A process comes up: it takes its task over (and writes the task's records).
    let (_a2a, stop) = A2aServer::new(agent())
        .session_store(Arc::clone(&sessions))
        .run_store(Arc::clone(&runs))
        .config(A2aConfig::default().lease(LEASE))
        .router()
        .unwrap();
    let task = until(&*runs, A2A_TASK, |r| r.status != RunStatus::Running).await;
    assert!(task.last_seq > 0, "{task:?}");
    let records = runs.events_after(A2A_TASK, 0, 10).await.unwrap();
    assert!(
        records.iter().all(|e| e.event.get("state").is_some()),
        "{task:?}: {records:?}"
    );
    assert_eq!(
        runs.get(WEB_RUN).await.unwrap().last_seq,
        web_run.last_seq,
        "the A2A face wrote to a web run"
    );
    stop.cancel();
}
