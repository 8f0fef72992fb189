//! A process that died during a model call leaves the session ending with the user's turn
//! (the prompt, or the results of the last calls): `resume_run` issues that model call again,
//! with nothing added, and a session that ends with an answer has nothing to resume.

use std::sync::Arc;

use mux_llm::testing::ScriptedClient;
use mux_llm::{ContentBlock, Message, Role};
use mux_orchestrator::session::{FileSessionStore, HistoryRecord, SessionMeta, SessionStore};
use mux_orchestrator::{LoopError, OrchestratorConfig};

use crate::common::{Conversation, drain, loop_agent};

#[tokio::test]
async fn a_model_call_cut_short_by_its_process_dying_is_issued_again_on_resume() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FileSessionStore::new(dir.path()));
    // What a process left when it died while the model answered the prompt.
    let meta = SessionMeta::new();
    store.create(&meta).await.unwrap();
    store
        .append(
            &meta.id,
            &[HistoryRecord::Message {
                message: Message::user("Say hi"),
            }],
        )
        .await
        .unwrap();

    let model = ScriptedClient::new().reply_text("Hi.");
    let orchestrator = loop_agent(model.clone(), OrchestratorConfig::new("m"))
        .session_store(store.clone())
        .open()
        .resume(&meta.id)
        .await
        .unwrap();
    let (_, outcome) = drain(orchestrator.resume_run([]).unwrap()).await;
    assert_eq!(outcome.unwrap().text, "Hi.");
    // The model read the prompt once: nothing was added before the call.
    let sent = &model.requests()[0].messages;
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].role, Role::User);
    let stored = store.load(&meta.id).await.unwrap();
    let roles: Vec<Role> = stored.messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant]);
    assert!(matches!(
        stored.messages[1].content.first(),
        Some(ContentBlock::Text { .. })
    ));

    // Answered: nothing is left to resume.
    let (_, again) = drain(orchestrator.resume_run([]).unwrap()).await;
    assert!(
        matches!(again, Err(LoopError::NothingToResume)),
        "{again:?}"
    );
}
