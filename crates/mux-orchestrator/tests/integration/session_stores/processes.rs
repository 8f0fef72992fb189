//! Database stores shared by OS processes: the test binary re-runs itself with a child role
//! (`child_process_role`, selected by environment variables), so no extra binary is needed.
//!
//! - Two processes append to one session at once: every message is kept exactly once, and
//!   both then read the same total order.
//! - A process killed with SIGKILL while appending loses at most that append, readers never
//!   see part of an append, and the store opens cleanly afterwards.

use std::collections::HashSet;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mux_llm::Message;
use mux_orchestrator::session::{HistoryRecord, SessionMeta, SessionStore};

use super::runtime;

/// The child role to play; unset in a normal test run.
const ROLE: &str = "MUX_STORES_CHILD";
const KIND: &str = "MUX_STORES_KIND";
const TARGET: &str = "MUX_STORES_TARGET";
const SESSION: &str = "MUX_STORES_SESSION";
const TAG: &str = "MUX_STORES_TAG";
const COUNT: &str = "MUX_STORES_COUNT";
const TOTAL: &str = "MUX_STORES_TOTAL";
const OUT: &str = "MUX_STORES_OUT";

/// The full name of the child role's test, for `--exact`.
const CHILD_TEST: &str = "session_stores::processes::child_process_role";

/// Messages per append in the kill test, and the payload that makes each append take a while.
const BATCH: usize = 5;
const PAYLOAD: usize = 16 * 1024;

/// Opens the store of `kind` (`sqlite`: a file path; `postgres`: a URL).
async fn open(kind: &str, target: &str) -> Box<dyn SessionStore> {
    match kind {
        #[cfg(feature = "sqlite")]
        "sqlite" => Box::new(
            mux_orchestrator::session::SqliteSessionStore::open(target)
                .await
                .unwrap(),
        ),
        #[cfg(feature = "postgres")]
        "postgres" => Box::new(
            mux_orchestrator::session::PostgresSessionStore::connect(target)
                .await
                .unwrap(),
        ),
        other => panic!("no store kind {other}"),
    }
}

/// Not a test of its own: the role a child process plays, chosen by `MUX_STORES_CHILD`
/// (without it, this returns at once).
#[test]
fn child_process_role() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let var = |name| std::env::var(name).unwrap();
    runtime().block_on(async {
        let store = open(&var(KIND), &var(TARGET)).await;
        let id = var(SESSION);
        match role.as_str() {
            // Appends COUNT messages one by one, waits until the session holds TOTAL, and
            // writes the order it reads to OUT.
            "append" => {
                let tag = var(TAG);
                let count: usize = var(COUNT).parse().unwrap();
                let total: usize = var(TOTAL).parse().unwrap();
                for i in 0..count {
                    let record = HistoryRecord::Message {
                        message: Message::user(format!("{tag}-{i}")),
                    };
                    store.append(&id, &[record]).await.unwrap();
                }
                let deadline = Instant::now() + Duration::from_secs(120);
                let messages = loop {
                    let messages = store.load(&id).await.unwrap().messages;
                    if messages.len() >= total || Instant::now() > deadline {
                        break messages;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                };
                let order: Vec<String> = messages.iter().map(Message::text).collect();
                std::fs::write(var(OUT), order.join("\n")).unwrap();
            }
            // Appends batches of big messages until killed.
            "batches" => {
                for batch in 0usize.. {
                    let records: Vec<HistoryRecord> = (0..BATCH)
                        .map(|j| HistoryRecord::Message {
                            message: Message::user(big_text(batch, j)),
                        })
                        .collect();
                    store.append(&id, &records).await.unwrap();
                }
            }
            other => panic!("no child role {other}"),
        }
    });
}

/// Message `j` of batch `batch`: its name and a payload.
fn big_text(batch: usize, j: usize) -> String {
    format!("{batch}-{j}:{}", "x".repeat(PAYLOAD))
}

/// Starts this test binary as a child playing `role` on session `id`.
fn spawn(role: &str, kind: &str, target: &str, id: &str, vars: &[(&str, String)]) -> Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([CHILD_TEST, "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .env(KIND, kind)
        .env(TARGET, target)
        .env(SESSION, id)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, value) in vars {
        cmd.env(name, value);
    }
    cmd.spawn().unwrap()
}

/// Waits for a child (up to two minutes) and fails with its output if it failed.
fn finish(child: Child) {
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut child = child;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().ok();
            panic!("a child process did not finish in two minutes");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "child failed: {}\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Two processes append 300 messages each to one session at the same time.
fn two_processes_append_in_one_order(kind: &str, target: &str, dir: &Path) {
    const EACH: usize = 300;
    let rt = runtime();
    let store = rt.block_on(open(kind, target));
    let meta = SessionMeta::new();
    rt.block_on(store.create(&meta)).unwrap();
    let children: Vec<Child> = ["A", "B"]
        .into_iter()
        .map(|tag| {
            let vars = [
                (TAG, tag.to_owned()),
                (COUNT, EACH.to_string()),
                (TOTAL, (2 * EACH).to_string()),
                (OUT, dir.join(tag).to_string_lossy().into_owned()),
            ];
            spawn("append", kind, target, &meta.id, &vars)
        })
        .collect();
    children.into_iter().for_each(finish);

    let order: Vec<String> = rt
        .block_on(store.load(&meta.id))
        .unwrap()
        .messages
        .iter()
        .map(Message::text)
        .collect();
    assert_eq!(order.len(), 2 * EACH, "every message kept");
    let unique: HashSet<&String> = order.iter().collect();
    assert_eq!(unique.len(), 2 * EACH, "no message kept twice");
    for tag in ["A", "B"] {
        let own: Vec<String> = order
            .iter()
            .filter(|t| t.starts_with(tag))
            .cloned()
            .collect();
        let expected: Vec<String> = (0..EACH).map(|i| format!("{tag}-{i}")).collect();
        assert_eq!(
            own, expected,
            "{tag}'s messages in the order {tag} appended them"
        );
        let seen = std::fs::read_to_string(dir.join(tag)).unwrap();
        assert_eq!(seen, order.join("\n"), "{tag} read the same total order");
    }
    let switches = order
        .windows(2)
        .filter(|w| w[0].as_bytes()[0] != w[1].as_bytes()[0])
        .count();
    eprintln!("{kind}: the two processes' appends interleaved {switches} times");
}

/// A child appends batches until it is killed with SIGKILL; meanwhile every load sees whole
/// batches, and afterwards the store opens cleanly with whole batches only.
fn a_killed_appender_loses_at_most_its_append(kind: &str, target: &str) {
    let rt = runtime();
    let store = rt.block_on(open(kind, target));
    let meta = SessionMeta::new();
    rt.block_on(store.create(&meta)).unwrap();
    let mut child = spawn("batches", kind, target, &meta.id, &[]);
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut loads = 0;
    loop {
        let messages = rt.block_on(store.load(&meta.id)).unwrap().messages;
        check_whole_batches(&messages);
        loads += 1;
        if messages.len() >= 40 * BATCH {
            break;
        }
        if let Some(status) = child.try_wait().unwrap() {
            let output = child.wait_with_output().unwrap();
            panic!(
                "the appender ended early ({status}): {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        assert!(Instant::now() < deadline, "the appender made no progress");
    }
    // SIGKILL, most likely in the middle of an append: it appends without pause.
    child.kill().unwrap();
    child.wait().unwrap();
    drop(store);
    drop(rt);

    let rt = runtime();
    let store = rt.block_on(open(kind, target));
    let messages = rt.block_on(store.load(&meta.id)).unwrap().messages;
    check_whole_batches(&messages);
    let before = messages.len();
    rt.block_on(store.append(
        &meta.id,
        &[HistoryRecord::Message {
            message: Message::user("after the kill"),
        }],
    ))
    .unwrap();
    let after = rt.block_on(store.load(&meta.id)).unwrap().messages;
    assert_eq!(after.len(), before + 1);
    assert_eq!(after[before].text(), "after the kill");
    eprintln!("{kind}: {loads} loads while appending, {before} messages kept after SIGKILL");
}

/// Messages are whole batches, in order, each message intact.
fn check_whole_batches(messages: &[Message]) {
    assert_eq!(messages.len() % BATCH, 0, "a reader saw part of an append");
    for (i, message) in messages.iter().enumerate() {
        assert!(
            message.text() == big_text(i / BATCH, i % BATCH),
            "message {i} is not the one appended there, or not whole"
        );
    }
}

#[cfg(feature = "sqlite")]
#[test]
fn two_processes_append_to_one_sqlite_session_in_one_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    two_processes_append_in_one_order("sqlite", &path.to_string_lossy(), dir.path());
}

#[cfg(feature = "sqlite")]
#[test]
fn a_sqlite_appender_killed_mid_append_loses_at_most_that_append() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    a_killed_appender_loses_at_most_its_append("sqlite", &path.to_string_lossy());
    // And the file is sound.
    runtime().block_on(async {
        let store = mux_orchestrator::session::SqliteSessionStore::open(&path)
            .await
            .unwrap();
        let check: String = sqlx::query_scalar("PRAGMA integrity_check")
            .fetch_one(store.pool())
            .await
            .unwrap();
        assert_eq!(check, "ok");
    });
}

#[cfg(feature = "postgres")]
#[test]
fn two_processes_append_to_one_postgres_session_in_one_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = runtime().block_on(mux_testkit::postgres::TestDatabase::new());
    two_processes_append_in_one_order("postgres", &db.url, dir.path());
}

#[cfg(feature = "postgres")]
#[test]
fn a_postgres_appender_killed_mid_append_loses_at_most_that_append() {
    let db = runtime().block_on(mux_testkit::postgres::TestDatabase::new());
    a_killed_appender_loses_at_most_its_append("postgres", &db.url);
}
