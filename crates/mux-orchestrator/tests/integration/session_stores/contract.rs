//! The store contract: one suite of cases that every [`SessionStore`] runs unchanged.

use futures::future::BoxFuture;
use mux_llm::{ContentBlock, Message, Role};
use mux_orchestrator::session::{
    CallProgress, HistoryRecord, PageCursor, SessionError, SessionMeta, SessionStore,
};
use serde_json::json;

/// Damages the second record of a session's log, for stores that can hold a damaged record.
pub(super) type Tamper<'a> = &'a (dyn Fn(String) -> BoxFuture<'static, ()> + Send + Sync);

/// Runs every case against `store`, which starts empty. `tamper`, where the store can hold a
/// damaged record, damages one for the corruption case.
pub(super) async fn run(store: &dyn SessionStore, tamper: Option<Tamper<'_>>) {
    create_and_load(store).await;
    create_and_append_is_one_step(store).await;
    append_in_order(store).await;
    a_missing_session_is_a_typed_error(store).await;
    metadata_title_and_usage(store).await;
    fork_links_the_parent_and_copies(store).await;
    delete_removes_only_that_session(store).await;
    ten_thousand_messages(store).await;
    unicode_and_a_megabyte_tool_output(store).await;
    if let Some(tamper) = tamper {
        a_damaged_record_is_corruption(store, tamper).await;
    }
    // Last: it counts every session the cases above left.
    list_order_and_pages(store).await;
}

fn message(text: &str) -> HistoryRecord {
    HistoryRecord::Message {
        message: Message::user(text),
    }
}

fn texts(messages: &[Message]) -> Vec<String> {
    messages.iter().map(Message::text).collect()
}

async fn new_session(store: &dyn SessionStore) -> SessionMeta {
    let meta = SessionMeta::new();
    store.create(&meta).await.unwrap();
    meta
}

async fn create_and_load(store: &dyn SessionStore) {
    let meta = new_session(store).await;
    let loaded = store.load(&meta.id).await.unwrap();
    assert_eq!(loaded.meta, meta, "create/load: metadata round-trips");
    assert!(
        loaded.messages.is_empty(),
        "create/load: a new session is empty"
    );
    assert!(
        matches!(store.create(&meta).await, Err(SessionError::AlreadyExists(id)) if id == meta.id),
        "create: a taken id is AlreadyExists"
    );
    let mut bad = SessionMeta::new();
    bad.id = "../escape".into();
    assert!(
        matches!(store.create(&bad).await, Err(SessionError::InvalidId(_))),
        "create: an unsafe id is InvalidId"
    );
}

async fn create_and_append_is_one_step(store: &dyn SessionStore) {
    let meta = SessionMeta::new();
    store
        .create_and_append(&meta, &[message("a"), message("b")])
        .await
        .unwrap();
    let loaded = store.load(&meta.id).await.unwrap();
    assert_eq!(
        loaded.meta, meta,
        "create_and_append: the metadata is stored"
    );
    assert_eq!(
        texts(&loaded.messages),
        ["a", "b"],
        "create_and_append: the records"
    );
    store.append(&meta.id, &[message("c")]).await.unwrap();
    assert_eq!(
        texts(&store.load(&meta.id).await.unwrap().messages),
        ["a", "b", "c"],
        "create_and_append: an append follows its records"
    );

    // A taken id: refused, and nothing of it written.
    let mut other = SessionMeta::new();
    other.id = meta.id.clone();
    other.title = Some("someone else's".into());
    assert!(
        matches!(
            store.create_and_append(&other, &[message("x")]).await,
            Err(SessionError::AlreadyExists(id)) if id == meta.id
        ),
        "create_and_append: a taken id is AlreadyExists"
    );
    let loaded = store.load(&meta.id).await.unwrap();
    assert_eq!(
        loaded.meta, meta,
        "create_and_append: the taken session's metadata stays"
    );
    assert_eq!(
        texts(&loaded.messages),
        ["a", "b", "c"],
        "create_and_append: nothing appended"
    );

    let empty = SessionMeta::new();
    store.create_and_append(&empty, &[]).await.unwrap();
    assert!(store.load(&empty.id).await.unwrap().messages.is_empty());
    let mut bad = SessionMeta::new();
    bad.id = "../escape".into();
    assert!(
        matches!(
            store.create_and_append(&bad, &[message("x")]).await,
            Err(SessionError::InvalidId(_))
        ),
        "create_and_append: an unsafe id is InvalidId"
    );
}

async fn append_in_order(store: &dyn SessionStore) {
    let meta = new_session(store).await;
    store.append(&meta.id, &[message("one")]).await.unwrap();
    store
        .append(&meta.id, &[message("two"), message("three")])
        .await
        .unwrap();
    store.append(&meta.id, &[]).await.unwrap();
    assert_eq!(
        texts(&store.load(&meta.id).await.unwrap().messages),
        ["one", "two", "three"],
        "append: records load in append order"
    );
    let replace = HistoryRecord::Replace {
        messages: vec![Message::user("summary")],
    };
    store
        .append(&meta.id, &[replace, message("four")])
        .await
        .unwrap();
    assert_eq!(
        texts(&store.load(&meta.id).await.unwrap().messages),
        ["summary", "four"],
        "append: a replacement replays"
    );
}

async fn a_missing_session_is_a_typed_error(store: &dyn SessionStore) {
    let missing = "no-such-session";
    let not_found = |result: Result<(), SessionError>, what: &str| {
        assert!(
            matches!(&result, Err(SessionError::NotFound(id)) if id == missing),
            "{what} of a missing session: {result:?}"
        );
    };
    not_found(store.load(missing).await.map(|_| ()), "load");
    not_found(store.load_meta(missing).await.map(|_| ()), "load_meta");
    not_found(store.append(missing, &[message("x")]).await, "append");
    not_found(store.append(missing, &[]).await, "empty append");
    not_found(store.delete(missing).await, "delete");
    not_found(store.fork(missing).await.map(|_| ()), "fork");
    let mut meta = SessionMeta::new();
    meta.id = missing.into();
    not_found(store.save_meta(&meta).await, "save_meta");
    not_found(
        store.save_and_append(&meta, &[message("x")]).await,
        "save_and_append",
    );
    not_found(
        store.save_and_append(&meta, &[]).await,
        "empty save_and_append",
    );
}

async fn metadata_title_and_usage(store: &dyn SessionStore) {
    let mut meta = new_session(store).await;
    meta.title = Some("Refactor the parser".into());
    meta.extra.insert(
        "usage".into(),
        json!({"input_tokens": 1234, "output_tokens": 56, "cache_read_input_tokens": 7}),
    );
    meta.extra.insert("agent".into(), json!("reviewer"));
    meta.updated_at_ms += 1;
    store.save_meta(&meta).await.unwrap();
    assert_eq!(
        store.load(&meta.id).await.unwrap().meta,
        meta,
        "save_meta: title and usage load back"
    );
    let listed = store.list().await.unwrap();
    assert_eq!(
        listed.iter().find(|m| m.id == meta.id),
        Some(&meta),
        "save_meta: the list shows the new metadata"
    );

    // The metadata and records in one step.
    store.append(&meta.id, &[message("a")]).await.unwrap();
    meta.title = Some("Parser refactored".into());
    meta.updated_at_ms += 1;
    store
        .save_and_append(&meta, &[message("b"), message("c")])
        .await
        .unwrap();
    let loaded = store.load(&meta.id).await.unwrap();
    assert_eq!(loaded.meta, meta, "save_and_append: the metadata is saved");
    assert_eq!(
        texts(&loaded.messages),
        ["a", "b", "c"],
        "save_and_append: the records follow the earlier ones"
    );
    meta.updated_at_ms += 1;
    store.save_and_append(&meta, &[]).await.unwrap();
    assert_eq!(store.load(&meta.id).await.unwrap().meta, meta);
    assert_eq!(
        store.load_meta(&meta.id).await.unwrap(),
        meta,
        "load_meta: the metadata a session with a log was saved with"
    );
}

async fn fork_links_the_parent_and_copies(store: &dyn SessionStore) {
    let mut meta = new_session(store).await;
    meta.title = Some("original".into());
    store.save_meta(&meta).await.unwrap();
    store
        .append(&meta.id, &[message("a"), message("b")])
        .await
        .unwrap();
    let fork = store.fork(&meta.id).await.unwrap();
    assert_ne!(fork.id, meta.id);
    assert_eq!(
        fork.parent.as_deref(),
        Some(meta.id.as_str()),
        "fork: parent link"
    );
    assert_eq!(fork.title.as_deref(), Some("original"), "fork: title kept");
    let loaded = store.load(&fork.id).await.unwrap();
    assert_eq!(loaded.meta, fork, "fork: the returned metadata is stored");
    assert_eq!(texts(&loaded.messages), ["a", "b"], "fork: messages copied");
    store.append(&fork.id, &[message("fork")]).await.unwrap();
    store.append(&meta.id, &[message("orig")]).await.unwrap();
    assert_eq!(
        texts(&store.load(&fork.id).await.unwrap().messages),
        ["a", "b", "fork"],
        "fork: the fork diverges"
    );
    assert_eq!(
        texts(&store.load(&meta.id).await.unwrap().messages),
        ["a", "b", "orig"],
        "fork: the original is untouched"
    );
}

async fn delete_removes_only_that_session(store: &dyn SessionStore) {
    let keep = new_session(store).await;
    let gone = new_session(store).await;
    store.append(&keep.id, &[message("kept")]).await.unwrap();
    store.append(&gone.id, &[message("gone")]).await.unwrap();
    store.delete(&gone.id).await.unwrap();
    assert!(matches!(
        store.load(&gone.id).await,
        Err(SessionError::NotFound(_))
    ));
    let listed = store.list().await.unwrap();
    assert!(listed.iter().all(|m| m.id != gone.id), "delete: unlisted");
    assert_eq!(
        texts(&store.load(&keep.id).await.unwrap().messages),
        ["kept"],
        "delete: others untouched"
    );
    // The id can be used again, and starts empty.
    store.create(&gone).await.unwrap();
    assert!(store.load(&gone.id).await.unwrap().messages.is_empty());
    store.delete(&gone.id).await.unwrap();
}

async fn ten_thousand_messages(store: &dyn SessionStore) {
    const COUNT: usize = 10_000;
    let meta = new_session(store).await;
    let mut appended = 0;
    // Single appends at the start, then batches.
    while appended < 100 {
        store
            .append(&meta.id, &[message(&format!("m{appended}"))])
            .await
            .unwrap();
        appended += 1;
    }
    while appended < COUNT {
        let batch: Vec<HistoryRecord> = (appended..(appended + 990).min(COUNT))
            .map(|i| message(&format!("m{i}")))
            .collect();
        appended += batch.len();
        store.append(&meta.id, &batch).await.unwrap();
    }
    let loaded = store.load(&meta.id).await.unwrap();
    assert_eq!(loaded.messages.len(), COUNT, "10,000 messages: all kept");
    for (i, m) in loaded.messages.iter().enumerate() {
        assert_eq!(m.text(), format!("m{i}"), "10,000 messages: in order");
    }
}

async fn unicode_and_a_megabyte_tool_output(store: &dyn SessionStore) {
    let meta = new_session(store).await;
    let unicode = "héllo 世界 🦀👩‍👩‍👧 مرحبا e\u{301} \u{0} \u{1b}[31m \"quoted\" \\ \n\t line";
    let big: String = "0123456789abcdef🦀\n".repeat(1024 * 1024 / 20);
    assert!(big.len() >= 1_000_000);
    let records = vec![
        message(unicode),
        HistoryRecord::Message {
            message: Message::new(
                Role::Assistant,
                vec![ContentBlock::tool_use(
                    "call_1",
                    "read_file",
                    json!({"path": "ü/ß.txt"}),
                )],
            ),
        },
        HistoryRecord::Message {
            message: Message::new(
                Role::User,
                vec![ContentBlock::tool_result("call_1", big.clone(), false)],
            ),
        },
    ];
    store.append(&meta.id, &records).await.unwrap();
    let loaded = store.load(&meta.id).await.unwrap();
    let expected: Vec<Message> = records
        .into_iter()
        .map(|r| match r {
            HistoryRecord::Message { message } => message,
            HistoryRecord::Replace { .. } | HistoryRecord::Call { .. } => unreachable!(),
        })
        .collect();
    assert_eq!(loaded.messages, expected, "unicode and 1 MB: byte-exact");
    assert!(loaded.calls.is_empty());

    // How far each call of an open turn got is kept until the turn's results are written.
    let progress = [
        HistoryRecord::Call {
            call_id: "c1".into(),
            progress: CallProgress::AwaitingApproval {
                reason: "asks".into(),
            },
        },
        HistoryRecord::Call {
            call_id: "c2".into(),
            progress: CallProgress::Started,
        },
        HistoryRecord::Call {
            call_id: "c2".into(),
            progress: CallProgress::Finished {
                output: mux_tool::ToolOutput::text("done ✓"),
            },
        },
    ];
    store.append(&meta.id, &progress).await.unwrap();
    let open = store.load(&meta.id).await.unwrap().calls;
    assert_eq!(open.len(), 2);
    assert!(matches!(open["c1"], CallProgress::AwaitingApproval { .. }));
    assert!(
        matches!(&open["c2"], CallProgress::Finished { output } if output.to_text() == "done ✓")
    );
    let results = HistoryRecord::Message {
        message: Message::user("results"),
    };
    store.append(&meta.id, &[results]).await.unwrap();
    assert!(store.load(&meta.id).await.unwrap().calls.is_empty());
    let mut titled = meta.clone();
    titled.title = Some(unicode.into());
    store.save_meta(&titled).await.unwrap();
    assert_eq!(
        store.load(&meta.id).await.unwrap().meta,
        titled,
        "unicode title"
    );
}

async fn a_damaged_record_is_corruption(store: &dyn SessionStore, tamper: Tamper<'_>) {
    let meta = new_session(store).await;
    store
        .append(
            &meta.id,
            &[message("one"), message("two"), message("three")],
        )
        .await
        .unwrap();
    tamper(meta.id.clone()).await;
    let result = store.load(&meta.id).await;
    assert!(
        matches!(&result, Err(SessionError::Corrupt { id, line: 2, .. }) if *id == meta.id),
        "a damaged second record is Corrupt at line 2: {result:?}"
    );
    store.delete(&meta.id).await.unwrap();
}

async fn list_order_and_pages(store: &dyn SessionStore) {
    // Sessions with equal and distinct update times, created out of order.
    for (i, updated) in [5u64, 3, 9, 3, 7, 3, 1].into_iter().enumerate() {
        let mut meta = SessionMeta::new();
        meta.id = format!("list-{i}");
        meta.updated_at_ms = updated;
        store.create(&meta).await.unwrap();
    }
    let all = store.list().await.unwrap();
    for pair in all.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert!(
            a.updated_at_ms > b.updated_at_ms
                || (a.updated_at_ms == b.updated_at_ms && a.id < b.id),
            "list: newest first, then by id: {} then {}",
            a.id,
            b.id
        );
    }
    for limit in [1, 3, all.len(), all.len() + 5] {
        let mut paged = Vec::new();
        let mut after: Option<PageCursor> = None;
        loop {
            let page = store.list_page(after.as_ref(), limit).await.unwrap();
            assert!(page.sessions.len() <= limit);
            paged.extend(page.sessions);
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        assert_eq!(paged, all, "list_page({limit}): the pages make up the list");
    }
    assert!(store.list_page(None, 0).await.unwrap().sessions.is_empty());
}

/// Creates `count` sessions and pages through all of them (for the 10,000-session list).
pub(super) async fn many_sessions_page_through(store: &dyn SessionStore, count: usize) {
    for i in 0..count {
        let mut meta = SessionMeta::new();
        meta.id = format!("many-{i:05}");
        meta.updated_at_ms = (i % 97) as u64;
        store.create(&meta).await.unwrap();
    }
    let all = store.list().await.unwrap();
    assert_eq!(all.len(), count);
    let mut seen = 0;
    let mut after: Option<PageCursor> = None;
    loop {
        // Large pages: the file store's `list_page` reads every session's metadata per page.
        let page = store.list_page(after.as_ref(), 2_000).await.unwrap();
        assert_eq!(page.sessions[..], all[seen..seen + page.sessions.len()]);
        seen += page.sessions.len();
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, count, "10,000 sessions: every one paged once");
}
