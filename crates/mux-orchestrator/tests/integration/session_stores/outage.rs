//! A real PostgreSQL stopped mid-run (`pg_ctl stop -m immediate`, as a crash would): the run
//! holds what it could not write and writes it when the server is back, so no message is
//! lost; a server down for longer than the run waits fails the run with a typed error, and
//! the held records go out with the conversation's next write.

use std::sync::Arc;
use std::time::Duration;

use mux_llm::testing::ScriptedClient;
use mux_llm::{ContentBlock, Message, Role};
use mux_orchestrator::session::{PostgresSessionStore, SessionStore};
use mux_orchestrator::{LoopError, Orchestrator, OrchestratorConfig};
use mux_tool::{ApprovalPolicy, Registry, ToolContext, ToolError, ToolOutput, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::runtime;
use crate::common::{Conversation, loop_agent, tool_calls};
use mux_testkit::postgres::TestDatabase;

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

/// Crashes the database and has it restarted after `down`.
struct Crash {
    db: Arc<TestDatabase>,
    down: Duration,
    restart: Arc<std::sync::Mutex<Option<std::thread::JoinHandle<()>>>>,
}

impl TypedTool for Crash {
    type Args = NoArgs;
    const NAME: &'static str = "crash_database";
    fn description(&self) -> String {
        "Stops the database".into()
    }
    async fn call(&self, _: NoArgs, _: ToolContext) -> Result<ToolOutput, ToolError> {
        let restart = self.db.outage(self.down);
        *self.restart.lock().unwrap() = Some(restart);
        Ok(ToolOutput::text("the database is down"))
    }
}

struct Setup {
    db: Arc<TestDatabase>,
    store: Arc<PostgresSessionStore>,
    restart: Arc<std::sync::Mutex<Option<std::thread::JoinHandle<()>>>>,
}

async fn setup() -> Setup {
    let db = Arc::new(TestDatabase::new().await);
    let store = Arc::new(PostgresSessionStore::connect(&db.url).await.unwrap());
    Setup {
        db,
        store,
        restart: Arc::default(),
    }
}

fn orchestrator(
    setup: &Setup,
    down: Duration,
    wait: Duration,
    model: ScriptedClient,
) -> Orchestrator {
    let tools = Registry::new();
    tools
        .register_typed(Crash {
            db: Arc::clone(&setup.db),
            down,
            restart: Arc::clone(&setup.restart),
        })
        .unwrap();
    let store: Arc<dyn SessionStore> = setup.store.clone();
    loop_agent(model, OrchestratorConfig::new("test-model"))
        .tools(tools.list())
        .session_store(store)
        .configure(|config| config.approval(ApprovalPolicy::Never).store_outage(wait))
        .conversation()
}

fn model() -> ScriptedClient {
    ScriptedClient::new()
        .reply(tool_calls(&[("call-1", "crash_database", json!({}))]))
        .reply_text("It went down and came back.")
}

/// The stored conversation, read by a fresh connection.
async fn stored(url: &str, id: &str) -> Vec<Message> {
    let store = PostgresSessionStore::connect(url).await.unwrap();
    let messages = store.load(id).await.unwrap().messages;
    store.close().await;
    messages
}

fn expected_roles(messages: &[Message]) -> Vec<Role> {
    messages.iter().map(|m| m.role).collect()
}

#[test]
fn a_run_outlives_a_database_crash_and_loses_no_message() {
    runtime().block_on(async {
        let setup = setup().await;
        let orch = orchestrator(
            &setup,
            Duration::from_millis(1500),
            Duration::from_secs(60),
            model(),
        );
        let summary = orch.run_to_completion("Crash it").await.unwrap();
        assert_eq!(summary.text, "It went down and came back.");
        setup
            .restart
            .lock()
            .unwrap()
            .take()
            .unwrap()
            .join()
            .unwrap();

        let id = orch.session().id;
        let messages = stored(&setup.db.url, &id).await;
        assert_eq!(
            expected_roles(&messages),
            [Role::User, Role::Assistant, Role::User, Role::Assistant],
            "{messages:#?}"
        );
        assert!(matches!(
            &messages[2].content[0],
            ContentBlock::ToolResult { tool_use_id, .. } if tool_use_id == "call-1"
        ));
        assert_eq!(messages, orch.messages());
    });
}

#[test]
fn a_database_down_too_long_fails_the_run_typed_and_the_next_write_catches_up() {
    runtime().block_on(async {
        let setup = setup().await;
        let model = model().reply_text("Back again.");
        let orch = orchestrator(
            &setup,
            Duration::from_secs(4),
            Duration::from_millis(300),
            model,
        );
        let err = orch.run_to_completion("Crash it").await.unwrap_err();
        let LoopError::Unwritten { records, .. } = &err else {
            panic!("expected Unwritten, got {err:?}");
        };
        assert_eq!(
            *records, 3,
            "held: the call's recorded output, the turn's results and the answer"
        );
        assert_eq!(err.kind(), "unwritten");
        setup
            .restart
            .lock()
            .unwrap()
            .take()
            .unwrap()
            .join()
            .unwrap();

        // The next run writes the held records first, then its own.
        let summary = orch.run_to_completion("Still there?").await.unwrap();
        assert_eq!(summary.text, "Back again.");
        let messages = stored(&setup.db.url, &orch.session().id).await;
        assert_eq!(messages, orch.messages());
        assert_eq!(messages.len(), 6, "{messages:#?}");
    });
}
