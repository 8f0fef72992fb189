//! Sessions on disk (resume, torn records, fork) and compaction.

use crate::common;

use std::sync::Arc;

use common::*;
use mux_llm::{ContentBlock, Message, Role};
use mux_orchestrator::session::{FileSessionStore, SessionStore};
use mux_orchestrator::{
    CompactionConfig, LoopEvent, Orchestrator, OrchestratorConfig, TitleConfig,
};
use serde_json::json;

fn agent(
    model: mux_llm::testing::ScriptedClient,
    store: Arc<FileSessionStore>,
    config: OrchestratorConfig,
) -> Orchestrator {
    loop_agent(model, config)
        .tools(registry().list())
        .session_store(store)
        .conversation()
}

#[tokio::test]
async fn a_session_resumes_and_continues() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FileSessionStore::new(dir.path()));
    let model = scripted()
        .reply(tool_calls(&[("c1", "echo", json!({"text": "x"}))]))
        .reply(text("first"));
    let first = agent(model, Arc::clone(&store), OrchestratorConfig::new("m"));
    first.run_to_completion("hello").await.unwrap();
    let id = first.session().id;
    assert_eq!(first.messages().len(), 4);

    let model = scripted().reply(text("second"));
    let resumed = loop_agent(model.clone(), OrchestratorConfig::new("m"))
        .tools(registry().list())
        .session_store(store.clone())
        .open()
        .resume(&id)
        .await
        .unwrap();
    assert_eq!(resumed.messages(), first.messages());
    resumed.run_to_completion("again").await.unwrap();
    assert_eq!(
        model.requests()[0].messages.len(),
        5,
        "the model sees the whole resumed conversation"
    );
    assert_eq!(store.load(&id).await.unwrap().messages.len(), 6);
    assert_eq!(store.list().await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_history_torn_at_every_byte_of_its_last_record_loads_everything_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileSessionStore::new(dir.path());
    let model = scripted()
        .reply(text("answer one"))
        .reply(text("answer two"));
    let agent = agent(model, Arc::new(store.clone()), OrchestratorConfig::new("m"));
    agent.run_to_completion("one").await.unwrap();
    agent.run_to_completion("two").await.unwrap();
    let id = agent.session().id;
    let path = store.session_dir(&id).unwrap().join("history.jsonl");
    let full = std::fs::read(&path).unwrap();
    let last_start = full[..full.len() - 1]
        .iter()
        .rposition(|&b| b == b'\n')
        .unwrap()
        + 1;
    let next = mux_orchestrator::session::HistoryRecord::Message {
        message: Message::user("three"),
    };
    // `last_start` itself is a clean end; every later cut tears the last record.
    for cut in last_start..full.len() {
        std::fs::write(&path, &full[..cut]).unwrap();
        let session = store.load(&id).await.unwrap();
        assert_eq!(session.messages.len(), 3, "cut at byte {cut}");
        // Loading only reads: a writer's record in flight is never cut.
        assert!(
            std::fs::read(&path).unwrap() == full[..cut],
            "load changed the file (cut at {cut})"
        );
        // The next append drops the torn tail first and starts on a clean line.
        store
            .append(&id, std::slice::from_ref(&next))
            .await
            .unwrap();
        let session = store.load(&id).await.unwrap();
        assert_eq!(session.messages.len(), 4, "cut at byte {cut}");
        assert_eq!(session.messages[3].text(), "three");
    }
    // A complete last line that is not a record (a damaged block) is dropped the same way.
    let mut damaged = full[..last_start].to_vec();
    damaged.extend_from_slice(b"\0\0\0\0\n");
    std::fs::write(&path, &damaged).unwrap();
    assert_eq!(store.load(&id).await.unwrap().messages.len(), 3);
    store
        .append(&id, std::slice::from_ref(&next))
        .await
        .unwrap();
    assert_eq!(store.load(&id).await.unwrap().messages.len(), 4);
}

/// `Orchestrator::fork` copies the conversation into a new session that goes its own way;
/// without a store, resume and fork say so with a typed error.
#[tokio::test]
async fn an_orchestrator_forks_its_conversation_and_without_a_store_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FileSessionStore::new(dir.path()));
    let model = scripted().reply(text("hi")).reply(text("on the fork"));
    let original = agent(model, Arc::clone(&store), OrchestratorConfig::new("m"));
    original.run_to_completion("hello").await.unwrap();
    let fork = original.fork().await.unwrap();
    assert_ne!(fork.session().id, original.session().id);
    assert_eq!(fork.session().parent, Some(original.session().id));
    assert_eq!(fork.messages(), original.messages());
    fork.run_to_completion("go on").await.unwrap();
    assert_eq!(fork.messages().len(), 4);
    assert_eq!(
        original.messages().len(),
        2,
        "the original goes on unchanged"
    );
    assert_eq!(
        store.load(&fork.session().id).await.unwrap().messages.len(),
        4
    );
    assert_eq!(
        store
            .load(&original.session().id)
            .await
            .unwrap()
            .messages
            .len(),
        2
    );

    let storeless = loop_agent(scripted(), OrchestratorConfig::new("m")).conversation();
    let err = storeless.fork().await.err().unwrap();
    assert_eq!(err.kind(), "no_session_store", "{err}");
    let err = loop_agent(scripted(), OrchestratorConfig::new("m"))
        .open()
        .resume("some-id")
        .await
        .err()
        .unwrap();
    assert!(err.to_string().contains("no session store is set"), "{err}");
}

#[tokio::test]
async fn fork_and_delete() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FileSessionStore::new(dir.path()));
    let agent = agent(
        scripted().reply(text("hi")),
        Arc::clone(&store),
        OrchestratorConfig::new("m"),
    );
    agent.run_to_completion("hello").await.unwrap();
    let id = agent.session().id;
    let fork = store.fork(&id).await.unwrap();
    assert_eq!(fork.parent.as_deref(), Some(id.as_str()));
    assert_eq!(
        store.load(&fork.id).await.unwrap().messages,
        agent.messages()
    );
    store.delete(&id).await.unwrap();
    assert!(store.load(&id).await.is_err());
    assert_eq!(store.list().await.unwrap().len(), 1);
}

#[tokio::test]
async fn compaction_summarizes_old_turns_and_keeps_pairs_whole() {
    // Turn "one" calls a tool; the summaries are numbered so each compaction is visible.
    let summaries = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = Arc::clone(&summaries);
    let model = scripted().respond_with(move |request| {
        let last = request
            .messages
            .last()
            .and_then(|m| m.content.last())
            .and_then(ContentBlock::as_text)
            .unwrap_or_default()
            .to_owned();
        if request
            .system
            .as_deref()
            .is_some_and(|s| s.contains("summaries"))
        {
            let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            return Ok(text(&format!("SUMMARY {n}")));
        }
        if last == "one" {
            return Ok(tool_calls(&[(
                "c1",
                "echo",
                json!({"text": "a".repeat(400)}),
            )]));
        }
        Ok(text(&format!("answer to {last}")))
    });
    // Every reply reports 20+ tokens, past the budget of 20: each new run compacts first.
    let config = OrchestratorConfig::new("m").compaction(CompactionConfig {
        token_budget: 20,
        keep_last_turns: 1,
        ..Default::default()
    });
    let agent = loop_agent(model.clone(), config)
        .tools(registry().list())
        .conversation();
    let mut subscription = agent.subscribe();
    agent.run_to_completion("one").await.unwrap();
    agent.run_to_completion("two").await.unwrap();
    agent.run_to_completion("three").await.unwrap();

    let messages = agent.messages();
    assert_eq!(messages.len(), 2, "{messages:#?}");
    assert_eq!(messages[0].role, Role::User);
    assert_eq!(
        messages[0].content[0].as_text(),
        Some("Summary of the earlier conversation:\nSUMMARY 2")
    );
    assert_eq!(messages[0].content[1].as_text(), Some("three"));
    assert_eq!(messages[1].text(), "answer to three");
    // The first summary request carried turn one whole: its tool_use and its tool_result.
    let first_summary = model
        .requests()
        .into_iter()
        .find(|r| r.system.as_deref().is_some_and(|s| s.contains("summaries")))
        .unwrap();
    let blocks: Vec<&ContentBlock> = first_summary
        .messages
        .iter()
        .flat_map(|m| &m.content)
        .collect();
    assert!(
        blocks
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolUse { id, .. } if id == "c1"))
    );
    assert!(
        blocks.iter().any(
            |b| matches!(b, ContentBlock::ToolResult { tool_use_id, .. } if tool_use_id == "c1")
        )
    );
    let mut compactions = Vec::new();
    while let Ok(Some(event)) =
        tokio::time::timeout(std::time::Duration::from_millis(50), subscription.recv()).await
    {
        if let LoopEvent::Compacted {
            tokens_before,
            tokens_after,
        } = event
        {
            compactions.push((tokens_before, tokens_after));
        }
    }
    assert_eq!(compactions.len(), 2);
    assert!(compactions[0].1 < compactions[0].0, "{compactions:?}");
}

#[tokio::test]
async fn manual_compaction_is_available() {
    let model = scripted()
        .reply(text("a1"))
        .reply(text("a2"))
        .reply(text("summary of one"));
    let agent = loop_agent(model, OrchestratorConfig::new("m")).conversation();
    agent.run_to_completion("one").await.unwrap();
    assert_eq!(
        agent.compact().await.unwrap(),
        None,
        "a single turn has nothing older to summarize"
    );
    agent.run_to_completion("two").await.unwrap();
    let (before, after) = agent.compact().await.unwrap().unwrap();
    assert!(before > 0 && after > 0);
    assert_eq!(
        agent.messages()[0].content[0]
            .as_text()
            .map(|t| t.contains("summary of one")),
        Some(true)
    );
    assert_eq!(agent.messages().len(), 2);
}

#[tokio::test]
async fn a_title_is_generated_after_the_first_reply_and_saved() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FileSessionStore::new(dir.path()));
    let model = scripted()
        .reply(text("Paris is the capital."))
        .respond_with(|request| {
            assert_eq!(request.model, "cheap-model");
            Ok(text("\"Capital of France.\""))
        });
    let config = OrchestratorConfig::new("m").title(TitleConfig {
        model: Some("cheap-model".into()),
    });
    let agent = agent(model, Arc::clone(&store), config);
    let mut subscription = agent.subscribe();
    agent
        .run_to_completion("What is the capital of France?")
        .await
        .unwrap();
    let title = loop {
        match tokio::time::timeout(std::time::Duration::from_secs(5), subscription.recv())
            .await
            .unwrap()
            .unwrap()
        {
            LoopEvent::TitleGenerated { title } => break title,
            _ => continue,
        }
    };
    assert_eq!(title, "Capital of France");
    let id = agent.session().id;
    // Saving happens just before the event.
    assert_eq!(
        store.load(&id).await.unwrap().meta.title.as_deref(),
        Some("Capital of France")
    );
    let _ = Message::user("unused");
}

/// Continues the run once with "more".
struct ContinueOnce;

impl mux_orchestrator::hooks::Hook for ContinueOnce {
    fn name(&self) -> &str {
        "continue_once"
    }
    fn stop<'a>(
        &'a self,
        _: &'a str,
    ) -> mux_tool::BoxFuture<
        'a,
        Result<mux_orchestrator::hooks::StopAction, mux_orchestrator::hooks::HookError>,
    > {
        Box::pin(async { Ok(mux_orchestrator::hooks::StopAction::Continue("more".into())) })
    }
}

/// Answers summary requests with "SUMMARY" and everything else with "answer to LAST".
fn summarizing_model() -> mux_llm::testing::ScriptedClient {
    scripted().respond_with(|request| {
        if request
            .system
            .as_deref()
            .is_some_and(|s| s.contains("summaries"))
        {
            return Ok(text("SUMMARY"));
        }
        let last = request
            .messages
            .last()
            .map(Message::text)
            .unwrap_or_default();
        Ok(text(&format!("answer to {last}")))
    })
}

fn states_and_errors(events: &[LoopEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            LoopEvent::StateChanged { to, .. } => Some(to.to_string()),
            LoopEvent::Error { kind, message } => Some(format!("error {kind}: {message}")),
            LoopEvent::Compacted { .. } => Some("compacted".into()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn compaction_on_a_continued_turn_is_a_valid_state_change() {
    // The first reply reports 23 tokens, past the budget: the turn the stop hook continues
    // compacts first, from `streaming`.
    let config = OrchestratorConfig::new("m").compaction(CompactionConfig {
        token_budget: 20,
        keep_last_turns: 1,
        ..Default::default()
    });
    let agent = loop_agent(summarizing_model(), config)
        .hook(ContinueOnce)
        .conversation();
    let (events, outcome) = drain(agent.run("one").unwrap()).await;
    let answer = outcome.unwrap().text;
    assert!(answer.ends_with("more"), "{answer}");
    assert_eq!(
        states_and_errors(&events),
        [
            "streaming",
            "compacting",
            "compacted",
            "streaming",
            "complete"
        ]
    );
}

#[tokio::test]
async fn compaction_before_the_first_turn_does_not_go_back_to_idle() {
    let config = OrchestratorConfig::new("m").compaction(CompactionConfig {
        token_budget: 1,
        keep_last_turns: 1,
        ..Default::default()
    });
    let agent = loop_agent(summarizing_model(), config)
        .conversation()
        .new_session_from(vec![Message::user("earlier"), Message::assistant("ok")]);
    let (events, outcome) = drain(agent.run("now").unwrap()).await;
    let answer = outcome.unwrap().text;
    assert!(
        answer.starts_with("answer to Summary") && answer.ends_with("now"),
        "{answer}"
    );
    assert_eq!(
        states_and_errors(&events),
        ["compacting", "compacted", "streaming", "complete"]
    );
}

#[tokio::test]
async fn a_new_session_of_a_chosen_id_is_created_by_its_first_run_and_never_writes_into_anothers() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FileSessionStore::new(dir.path()));
    let mut meta = mux_orchestrator::session::SessionMeta::new();
    meta.id = "chosen-thread".into();
    meta.extra.insert("owner".into(), json!("alice"));
    let first = loop_agent(
        scripted().reply(text("hi alice")),
        OrchestratorConfig::new("m"),
    )
    .session_store(store.clone())
    .open()
    .build_session(meta.clone());
    assert!(
        store.load("chosen-thread").await.is_err(),
        "nothing is stored before the first run"
    );
    first.run_to_completion("hello").await.unwrap();
    let stored = store.load("chosen-thread").await.unwrap();
    assert_eq!(texts(&stored.messages), ["hello", "hi alice"]);

    // Another conversation that chose the same id is refused, and writes nothing there.
    let mut other = mux_orchestrator::session::SessionMeta::new();
    other.id = "chosen-thread".into();
    other.extra.insert("owner".into(), json!("mallory"));
    let intruder = loop_agent(
        scripted().reply(text("never")),
        OrchestratorConfig::new("m"),
    )
    .session_store(store.clone())
    .open()
    .build_session(other);
    let err = intruder.run_to_completion("let me in").await.unwrap_err();
    // At once, as the session's own error: not held and retried as if the store were down.
    assert!(
        matches!(
            &err,
            mux_orchestrator::LoopError::Session(
                mux_orchestrator::session::SessionError::AlreadyExists(id)
            ) if id == "chosen-thread"
        ),
        "{err:?}"
    );
    let stored = store.load("chosen-thread").await.unwrap();
    assert_eq!(stored.meta.extra["owner"], json!("alice"));
    assert_eq!(texts(&stored.messages), ["hello", "hi alice"]);
}

/// A session deleted under a conversation fails its next run at once with `NotFound`: no
/// retry can bring it back, so its records are not held as for an unreachable store.
#[tokio::test]
async fn a_run_on_a_session_deleted_meanwhile_fails_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FileSessionStore::new(dir.path()));
    let orchestrator = loop_agent(
        scripted().reply(text("one")).reply(text("two")),
        OrchestratorConfig::new("m"),
    )
    .session_store(store.clone())
    .conversation();
    orchestrator.run_to_completion("first").await.unwrap();
    let id = orchestrator.session().id;
    store.delete(&id).await.unwrap();
    let err = orchestrator.run_to_completion("second").await.unwrap_err();
    assert!(
        matches!(
            &err,
            mux_orchestrator::LoopError::Session(
                mux_orchestrator::session::SessionError::NotFound(gone)
            ) if *gone == id
        ),
        "{err:?}"
    );
    assert!(store.load(&id).await.is_err(), "nothing wrote it back");
}

fn texts(messages: &[Message]) -> Vec<String> {
    messages.iter().map(Message::text).collect()
}
