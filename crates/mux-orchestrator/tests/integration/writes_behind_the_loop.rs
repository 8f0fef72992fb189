//! A run's records go to the store behind its loop: the loop waits for the store only where
//! it must (a person's words, before a tool that may not run twice, before a question, at
//! the run's end). A store whose writes after the first are held at a gate shows each.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use mux_llm::Role;
use mux_llm::testing::ScriptedClient;
use mux_orchestrator::session::{
    HistoryRecord, MemorySessionStore, Session, SessionFuture, SessionMeta, SessionStore,
};
use mux_orchestrator::{LoopEvent, LoopInput, Orchestrator, OrchestratorConfig};
use mux_tool::ApprovalPolicy;
use serde_json::json;
use tokio::sync::watch;

use crate::common::{Conversation, Echo, Shell, Sleep, loop_agent, text, tool_calls};

/// How long a test waits for what must happen.
const PATIENCE: Duration = Duration::from_secs(10);

/// A memory store whose appends to an existing session wait while the gate is shut; how many
/// wait is watched.
struct Gate {
    inner: MemorySessionStore,
    open: watch::Sender<bool>,
    waiting: watch::Sender<usize>,
}

impl Gate {
    fn shut() -> Arc<Self> {
        Arc::new(Self {
            inner: MemorySessionStore::new(),
            open: watch::channel(false).0,
            waiting: watch::channel(0).0,
        })
    }

    fn open(&self) {
        self.open.send_replace(true);
    }

    /// Until a write waits at the gate.
    async fn a_write_waits(&self) {
        let mut waiting = self.waiting.subscribe();
        tokio::time::timeout(PATIENCE, waiting.wait_for(|n| *n > 0))
            .await
            .expect("a write reached the gate")
            .unwrap();
    }

    /// `write`, once the gate lets it pass.
    fn after_the_gate<'a, T: 'a>(&'a self, write: SessionFuture<'a, T>) -> SessionFuture<'a, T> {
        Box::pin(async move {
            self.pass().await;
            write.await
        })
    }

    async fn pass(&self) {
        let mut open = self.open.subscribe();
        if *open.borrow() {
            return;
        }
        self.waiting.send_modify(|n| *n += 1);
        let _ = open.wait_for(|open| *open).await;
        self.waiting.send_modify(|n| *n -= 1);
    }

    /// The messages the store has of session `id`.
    async fn stored(&self, id: &str) -> Vec<(Role, String)> {
        let session = self.inner.load(id).await.unwrap();
        session
            .messages
            .iter()
            .map(|m| (m.role, m.text()))
            .collect()
    }
}

impl SessionStore for Gate {
    fn create<'a>(&'a self, meta: &'a SessionMeta) -> SessionFuture<'a, ()> {
        self.inner.create(meta)
    }

    fn save_meta<'a>(&'a self, meta: &'a SessionMeta) -> SessionFuture<'a, ()> {
        self.after_the_gate(self.inner.save_meta(meta))
    }

    fn append<'a>(&'a self, id: &'a str, records: &'a [HistoryRecord]) -> SessionFuture<'a, ()> {
        self.after_the_gate(self.inner.append(id, records))
    }

    fn save_and_append<'a>(
        &'a self,
        meta: &'a SessionMeta,
        records: &'a [HistoryRecord],
    ) -> SessionFuture<'a, ()> {
        self.after_the_gate(self.inner.save_and_append(meta, records))
    }

    fn create_and_append<'a>(
        &'a self,
        meta: &'a SessionMeta,
        records: &'a [HistoryRecord],
    ) -> SessionFuture<'a, ()> {
        self.inner.create_and_append(meta, records)
    }

    fn load<'a>(&'a self, id: &'a str) -> SessionFuture<'a, Session> {
        self.inner.load(id)
    }

    fn list(&self) -> SessionFuture<'_, Vec<SessionMeta>> {
        self.inner.list()
    }

    fn delete<'a>(&'a self, id: &'a str) -> SessionFuture<'a, ()> {
        self.inner.delete(id)
    }
}

/// An orchestrator on `model` and `store` with `tool`, which runs without approval.
fn orchestrator<T: mux_tool::TypedTool>(
    model: &ScriptedClient,
    store: &Arc<Gate>,
    tool: T,
) -> Orchestrator {
    let tools = mux_tool::Registry::new();
    tools.register(mux_tool::Typed::new(tool).unwrap()).unwrap();
    loop_agent(
        model.clone(),
        OrchestratorConfig::new("m").approval(ApprovalPolicy::Never),
    )
    .tools(tools.list())
    .session_store(Arc::clone(store) as Arc<dyn SessionStore>)
    .conversation()
}

/// The model's reply and the tool's result do not hold the loop up: its next model call is
/// made while their write waits, and the run ends only once the store has everything.
#[tokio::test]
async fn a_step_is_written_behind_the_loop_and_the_run_ends_once_the_store_has_it() {
    let model = ScriptedClient::new()
        .reply(tool_calls(&[("c1", "echo", json!({"text": "seen"}))]))
        .reply(text("done"));
    let store = Gate::shut();
    let orchestrator = orchestrator(&model, &store, Echo);
    let id = orchestrator.session().id;
    let run = orchestrator.run("look").unwrap();
    store.a_write_waits().await;
    tokio::time::timeout(PATIENCE, async {
        while model.requests().len() < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the second model call is made while the first step's write waits");
    assert_eq!(
        store.stored(&id).await,
        [(Role::User, "look".to_owned())],
        "only the prompt is stored"
    );
    assert!(!run.handle.is_finished(), "the run waits for its records");
    store.open();
    let summary = tokio::time::timeout(PATIENCE, run.handle.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(summary.text, "done");
    let stored = store.stored(&id).await;
    let roles: Vec<&Role> = stored.iter().map(|(role, _)| role).collect();
    assert_eq!(
        roles,
        [&Role::User, &Role::Assistant, &Role::User, &Role::Assistant],
        "{stored:?}"
    );
    assert_eq!(stored[3].1, "done");
}

/// A tool that may not run twice starts only once its call is stored.
#[tokio::test]
async fn a_tool_that_may_not_run_twice_waits_until_its_call_is_stored() {
    let model = ScriptedClient::new()
        .reply(tool_calls(&[("c1", "Bash", json!({"command": "deploy"}))]))
        .reply(text("deployed"));
    let store = Gate::shut();
    let shell = Shell::default();
    let calls = Arc::clone(&shell.calls);
    let orchestrator = orchestrator(&model, &store, shell);
    let id = orchestrator.session().id;
    let run = orchestrator.run("go").unwrap();
    store.a_write_waits().await;
    // Time for a loop that did not wait to run the tool.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "the tool waits for the store"
    );
    store.open();
    let summary = tokio::time::timeout(PATIENCE, run.handle.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(summary.text, "deployed");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(store.stored(&id).await.len(), 4);
}

/// A question is asked only once the call that asks it is stored: whoever answers it, on any
/// process, finds it.
#[tokio::test]
async fn a_question_is_out_only_once_its_call_is_stored() {
    let model = ScriptedClient::new()
        .reply(tool_calls(&[(
            "ask-1",
            "ask_user",
            json!({"question": "Which color?"}),
        )]))
        .reply(text("blue it is"));
    let store = Gate::shut();
    let orchestrator = orchestrator(&model, &store, Echo);
    let id = orchestrator.session().id;
    let mut run = orchestrator.run("pick").unwrap();
    let opener = {
        let store = Arc::clone(&store);
        tokio::spawn(async move {
            store.a_write_waits().await;
            // Time for a loop that did not wait to ask.
            tokio::time::sleep(Duration::from_millis(200)).await;
            store.open();
        })
    };
    let mut asked = false;
    while let Some(event) = tokio::time::timeout(PATIENCE, run.events.recv())
        .await
        .unwrap()
    {
        if let LoopEvent::AwaitingInput { call_id, .. } = &event {
            let stored = store.stored(&id).await;
            assert_eq!(stored.len(), 2, "the asking call is stored: {stored:?}");
            assert_eq!(stored[1].0, Role::Assistant);
            asked = true;
            run.input
                .send(LoopInput::UserResponse {
                    call_id: call_id.clone(),
                    text: "blue".into(),
                })
                .await;
        }
    }
    assert!(asked);
    opener.await.unwrap();
    assert_eq!(run.handle.wait().await.unwrap().text, "blue it is");
}

/// A run stopped midway (its task aborted, as the web face does with a run another process
/// took over) writes nothing more: its write waiting at the gate is dropped. What it held goes
/// with the conversation's next write, and the next run writes behind its loop again.
#[tokio::test]
async fn a_run_stopped_midway_writes_nothing_more_and_the_next_writes_behind_again() {
    let model = ScriptedClient::new()
        // Run again (read-only) by the next run: short.
        .reply(tool_calls(&[("c1", "sleep", json!({"ms": 500}))]))
        .reply(tool_calls(&[("c2", "sleep", json!({"ms": 60_000}))]));
    let store = Gate::shut();
    let orchestrator = orchestrator(&model, &store, Sleep);
    let id = orchestrator.session().id;
    let first = orchestrator.run("go").unwrap();
    // The reply calling `sleep` waits at the gate while the tool sleeps.
    store.a_write_waits().await;
    first.handle.abort();
    tokio::time::timeout(PATIENCE, async {
        while !first.handle.is_finished() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the aborted run ended");
    store.open();
    // Time for a write that was not dropped to land.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        store.stored(&id).await,
        [(Role::User, "go".to_owned())],
        "the stopped run wrote nothing more"
    );

    // The next run stores the held reply with its prompt (which leads with the open call's
    // result, the read-only call run again), then its own reply while its tool sleeps:
    // written behind the loop, not held for the run's end.
    let second = orchestrator.run("again").unwrap();
    tokio::time::timeout(PATIENCE, async {
        while store.stored(&id).await.len() < 4 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the second run's reply was written while its tool slept");
    assert!(!second.handle.is_finished(), "its tool still sleeps");
    let stored = store.stored(&id).await;
    let roles: Vec<Role> = stored.iter().map(|(role, _)| *role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::User, Role::Assistant],
        "{stored:?}"
    );
    assert_eq!(stored[2].1, "again");
    second.handle.cancel();
    let _ = tokio::time::timeout(PATIENCE, second.handle.wait())
        .await
        .expect("the cancelled run ended");
}
