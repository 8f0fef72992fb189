//! `ask_user` is offered where someone can answer it: in the conversations a face opens, not
//! in the agent's own (`prompt`, `run`, `stream`), unless `AgentBuilder::ask_user` says
//! otherwise. The model sees what it is sent, so the check is on the request.

use mux_llm::testing::ScriptedClient;
use mux_orchestrator::{ASK_USER, Agent, AgentBuilder};

/// The tool names of the model's first request in a run of `conversation`.
async fn offered(
    conversation: &mux_orchestrator::Orchestrator,
    model: &ScriptedClient,
) -> Vec<String> {
    conversation.run_to_completion("hi").await.unwrap();
    let requests = model.requests();
    let last = requests.last().expect("the model was called");
    last.tools.iter().map(|t| t.name.to_string()).collect()
}

fn build(model: &ScriptedClient, change: impl FnOnce(AgentBuilder) -> AgentBuilder) -> Agent {
    change(Agent::builder(model.clone(), "scripted").tool(crate::common::Echo))
        .build()
        .unwrap()
}

#[tokio::test]
async fn by_default_only_a_face_offers_ask_user() {
    let model = ScriptedClient::new().reply_text("a").reply_text("b");
    let agent = build(&model, |b| b);
    assert_eq!(offered(agent.orchestrator(), &model).await, ["echo"]);
    let face = agent.conversation_at(agent.root()).unwrap().build();
    assert_eq!(offered(&face, &model).await, [ASK_USER, "echo"]);
}

#[tokio::test]
async fn asked_for_it_is_everywhere_and_refused_it_is_nowhere() {
    let model = ScriptedClient::new().reply_text("a").reply_text("b");
    let agent = build(&model, |b| b.ask_user(true));
    assert_eq!(
        offered(agent.orchestrator(), &model).await,
        [ASK_USER, "echo"]
    );

    let model = ScriptedClient::new().reply_text("a").reply_text("b");
    let agent = build(&model, |b| b.ask_user(false));
    assert_eq!(offered(agent.orchestrator(), &model).await, ["echo"]);
    let face = agent.conversation_at(agent.root()).unwrap().build();
    assert_eq!(offered(&face, &model).await, ["echo"]);
}
