//! Every tool call carries an effect key: `{session}:{turn}:{call id}`, the same when a run
//! that stopped mid-call is continued (in this process or another), with the attempt number
//! saying whether the call may have run before.

use std::sync::{Arc, Mutex};

use mux_llm::testing::ScriptedClient;
use mux_llm::{ContentBlock, Message, Role};
use mux_orchestrator::OrchestratorConfig;
use mux_orchestrator::session::{HistoryRecord, MemorySessionStore, SessionMeta, SessionStore};
use mux_tool::{
    ApprovalPolicy, EffectKey, ToolAnnotations, ToolContext, ToolError, ToolOutput, TypedTool,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::common::{Conversation, drain, loop_agent, text, tool_calls};

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

/// Records the effect key of each of its calls; idempotent, so it may run again.
#[derive(Clone, Default)]
struct Charge(Arc<Mutex<Vec<EffectKey>>>);

impl TypedTool for Charge {
    type Args = NoArgs;
    const NAME: &'static str = "charge";
    fn description(&self) -> String {
        "Charges the card once per key".into()
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::default().with_idempotent(true)
    }
    async fn call(&self, _: NoArgs, cx: ToolContext) -> Result<ToolOutput, ToolError> {
        self.0.lock().unwrap().push(cx.effect_key());
        Ok(ToolOutput::text("charged"))
    }
}

fn agent(
    model: ScriptedClient,
    charge: &Charge,
    store: &Arc<dyn SessionStore>,
) -> mux_orchestrator::AgentBuilder {
    loop_agent(
        model,
        OrchestratorConfig::new("test-model").approval(ApprovalPolicy::Never),
    )
    .tool(charge.clone())
    .session_store(Arc::clone(store))
}

#[tokio::test]
async fn each_call_is_keyed_by_session_turn_and_call_id() {
    // The scripted model reuses one call id in two turns: the turn tells them apart.
    let model = ScriptedClient::new()
        .reply(tool_calls(&[("c1", "charge", json!({}))]))
        .reply(tool_calls(&[("c1", "charge", json!({}))]))
        .reply(text("done"));
    let charge = Charge::default();
    let store: Arc<dyn SessionStore> = Arc::new(MemorySessionStore::new());
    let conversation = agent(model, &charge, &store).conversation();
    let id = conversation.session().id;
    conversation.run_to_completion("pay").await.unwrap();
    let keys = charge.0.lock().unwrap().clone();
    assert_eq!(
        keys,
        vec![
            EffectKey::new(format!("{id}:1:c1"), 1),
            EffectKey::new(format!("{id}:2:c1"), 1),
        ]
    );
}

#[tokio::test]
async fn a_call_run_again_after_its_process_stopped_keeps_its_key() {
    // The stored session of a process that stopped while `charge` ran: the turn's calls,
    // no results.
    let store: Arc<dyn SessionStore> = Arc::new(MemorySessionStore::new());
    let meta = SessionMeta::new();
    let id = meta.id.clone();
    let call = ContentBlock::ToolUse {
        id: "toolu_9".into(),
        name: "charge".into(),
        input: json!({}),
    };
    store
        .create_and_append(
            &meta,
            &[
                HistoryRecord::Message {
                    message: Message::user("pay"),
                },
                HistoryRecord::Message {
                    message: Message::new(Role::Assistant, vec![call]),
                },
            ],
        )
        .await
        .unwrap();

    let charge = Charge::default();
    let model = ScriptedClient::new().reply(text("paid"));
    let conversation = agent(model, &charge, &store)
        .open()
        .resume(&id)
        .await
        .unwrap();
    let (_, outcome) = drain(conversation.resume_run([]).unwrap()).await;
    let summary = outcome.unwrap();
    assert_eq!(summary.text, "paid");
    // Idempotent, so run again: the key it had, at a second attempt (it may have run).
    assert_eq!(
        charge.0.lock().unwrap().clone(),
        vec![EffectKey::new(format!("{id}:1:toolu_9"), 2)]
    );
}
