//! A group commit whose answer never comes, on a real PostgreSQL behind a proxy that can go
//! silent: the commit waits at most twice its `statement_timeout`, its server process is
//! stopped, and what it wrote is read back. No session write is lost or stored twice, and
//! no caller hangs.

use crate::runtime;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use mux_llm::Message;
use mux_store::session::{HistoryRecord, PostgresSessionStore, SessionMeta, SessionStore};
use mux_testkit::postgres::TestDatabase;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};

/// The longest a caller may wait here before the test calls it a hang.
const HANG: Duration = Duration::from_secs(30);

/// Which bytes a silenced connection drops.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Silence {
    /// The server's answers: the statement arrives and commits, the answer is lost.
    Answers,
    /// Both ways: the statement never arrives.
    Both,
}

/// A proxy on a unix socket of its own in front of the database's: connections it has opened
/// can be silenced (their bytes dropped, the sockets left open, like a network that drops
/// packets without a reset), and new ones refused.
struct Proxy {
    dir: tempfile::TempDir,
    /// Connections numbered below this are silent.
    silent_below: Arc<AtomicU64>,
    silence: Arc<std::sync::Mutex<Silence>>,
    refuse: Arc<AtomicBool>,
    opened: Arc<AtomicU64>,
}

impl Proxy {
    fn start(upstream: PathBuf, port: u16) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let listener = UnixListener::bind(dir.path().join(format!(".s.PGSQL.{port}"))).unwrap();
        let proxy = Self {
            dir,
            silent_below: Arc::new(AtomicU64::new(0)),
            silence: Arc::new(std::sync::Mutex::new(Silence::Answers)),
            refuse: Arc::new(AtomicBool::new(false)),
            opened: Arc::new(AtomicU64::new(0)),
        };
        let (silent_below, silence, refuse, opened) = (
            Arc::clone(&proxy.silent_below),
            Arc::clone(&proxy.silence),
            Arc::clone(&proxy.refuse),
            Arc::clone(&proxy.opened),
        );
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if refuse.load(Ordering::SeqCst) {
                    continue;
                }
                let number = opened.fetch_add(1, Ordering::SeqCst);
                let Ok(server) = UnixStream::connect(&upstream).await else {
                    continue;
                };
                let (client_read, client_write) = client.into_split();
                let (server_read, server_write) = server.into_split();
                let silent = {
                    let silent_below = Arc::clone(&silent_below);
                    let silence = Arc::clone(&silence);
                    move |answers: bool| {
                        number < silent_below.load(Ordering::SeqCst)
                            && (answers || *silence.lock().unwrap() == Silence::Both)
                    }
                };
                let to_server = silent.clone();
                tokio::spawn(pipe(client_read, server_write, move || to_server(false)));
                tokio::spawn(pipe(server_read, client_write, move || silent(true)));
            }
        });
        proxy
    }

    /// Silences every connection open now.
    fn silence_open(&self, silence: Silence) {
        *self.silence.lock().unwrap() = silence;
        self.silent_below
            .store(self.opened.load(Ordering::SeqCst), Ordering::SeqCst);
    }

    fn refuse_new(&self, refuse: bool) {
        self.refuse.store(refuse, Ordering::SeqCst);
    }

    fn dir(&self) -> &Path {
        self.dir.path()
    }
}

/// Copies `from` to `to`, dropping what is read while `silent()`.
async fn pipe(
    mut from: tokio::net::unix::OwnedReadHalf,
    mut to: tokio::net::unix::OwnedWriteHalf,
    silent: impl Fn() -> bool,
) {
    let mut buf = vec![0; 64 * 1024];
    while let Ok(n) = from.read(&mut buf).await {
        if n == 0 {
            return;
        }
        if !silent() && to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

fn said(text: &str) -> HistoryRecord {
    HistoryRecord::Message {
        message: Message::user(text),
    }
}

/// A store through `proxy` whose statements are bounded at 1 s (so a commit waits 2 s for
/// its answer), a store straight to the database to look with, and a session in both.
async fn stores(
    db: &TestDatabase,
    proxy: &Proxy,
) -> (PostgresSessionStore, PostgresSessionStore, SessionMeta) {
    let options: PgConnectOptions = db.url.parse().unwrap();
    let proxied = options
        .clone()
        .socket(proxy.dir())
        .options([("statement_timeout", "1s")]);
    let pool = PgPoolOptions::new()
        .max_connections(2)
        .connect_with(proxied)
        .await
        .unwrap();
    let store = PostgresSessionStore::with_pool(pool).await.unwrap();
    let direct = PostgresSessionStore::connect(&db.url).await.unwrap();
    let meta = SessionMeta::new();
    store.create(&meta).await.unwrap();
    (store, direct, meta)
}

/// A proxy in front of `db`'s server.
fn proxy(db: &TestDatabase) -> Proxy {
    let options: PgConnectOptions = db.url.parse().unwrap();
    let socket = options
        .get_socket()
        .expect("the test database listens on a unix socket")
        .join(format!(".s.PGSQL.{}", options.get_port()));
    Proxy::start(socket, options.get_port())
}

async fn texts(store: &PostgresSessionStore, id: &str) -> Vec<String> {
    let session = store.load(id).await.unwrap();
    session.messages.iter().map(Message::text).collect()
}

/// The group commit's server processes, as `pg_stat_activity` shows them.
async fn writers(direct: &PostgresSessionStore) -> Vec<i32> {
    sqlx::query_scalar(
        "SELECT pid FROM pg_stat_activity WHERE application_name = 'mux group commit'",
    )
    .fetch_all(direct.pool())
    .await
    .unwrap()
}

#[test]
fn a_commit_whose_answer_never_comes_is_read_back_and_stored_once() {
    for silence in [Silence::Answers, Silence::Both] {
        runtime().block_on(async {
            let db = TestDatabase::new().await;
            let proxy = proxy(&db);
            let (store, direct, meta) = stores(&db, &proxy).await;
            store.append(&meta.id, &[said("before")]).await.unwrap();
            let silenced = writers(&direct).await;
            assert_eq!(silenced.len(), 1, "one connection wrote so far");

            proxy.silence_open(silence);
            tokio::time::timeout(HANG, store.append(&meta.id, &[said("one"), said("two")]))
                .await
                .expect("a commit whose answer never comes hangs its caller")
                .expect("the write landed, or was written again on a new connection");

            assert_eq!(texts(&direct, &meta.id).await, ["before", "one", "two"]);
            let now = writers(&direct).await;
            assert!(
                !now.contains(&silenced[0]),
                "the silent connection's server process was stopped: {silenced:?} {now:?}"
            );
            store.append(&meta.id, &[said("after")]).await.unwrap();
            assert_eq!(
                texts(&direct, &meta.id).await,
                ["before", "one", "two", "after"]
            );
        });
    }
}

#[test]
fn a_write_not_known_to_have_landed_fails_and_its_retry_stores_it_once() {
    runtime().block_on(async {
        let db = TestDatabase::new().await;
        let proxy = proxy(&db);
        let (store, direct, meta) = stores(&db, &proxy).await;
        store.append(&meta.id, &[said("before")]).await.unwrap();

        // The answer is lost and the database cannot be reached to read what landed.
        proxy.silence_open(Silence::Answers);
        proxy.refuse_new(true);
        let records = [said("one"), said("two")];
        let err = tokio::time::timeout(HANG, store.append(&meta.id, &records))
            .await
            .expect("a commit whose answer never comes hangs its caller")
            .unwrap_err();
        assert!(err.to_string().contains("not known yet"), "{err}");
        // It did land: the statement reached the server.
        assert_eq!(texts(&direct, &meta.id).await, ["before", "one", "two"]);

        // The caller's retry settles the earlier write first, and does not store it again.
        proxy.refuse_new(false);
        tokio::time::timeout(HANG, store.append(&meta.id, &records))
            .await
            .expect("a retry hangs")
            .unwrap();
        store.append(&meta.id, &[said("three")]).await.unwrap();
        assert_eq!(
            texts(&direct, &meta.id).await,
            ["before", "one", "two", "three"]
        );
    });
}

/// Sends `signal` (`STOP`, `CONT`) to the server processes `pids`.
fn signal(pids: &[i32], signal: &str) {
    for pid in pids {
        let status = std::process::Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(pid.to_string())
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal} {pid}");
    }
}

#[test]
fn a_server_process_stopped_mid_commit_fails_the_write_and_the_retry_stores_it_once() {
    runtime().block_on(async {
        let db = TestDatabase::new().await;
        let joined = if db.url.contains('?') { '&' } else { '?' };
        let url = format!("{}{joined}options=-c%20statement_timeout%3D1s", db.url);
        let store = PostgresSessionStore::connect(&url).await.unwrap();
        let direct = PostgresSessionStore::connect(&db.url).await.unwrap();
        let meta = SessionMeta::new();
        store.create(&meta).await.unwrap();
        store.append(&meta.id, &[said("before")]).await.unwrap();
        let stopped = writers(&direct).await;
        if !stopped
            .iter()
            .all(|pid| Path::new(&format!("/proc/{pid}")).exists())
        {
            eprintln!("skipped: the database's server runs elsewhere");
            return;
        }

        // The writer's server process stops (SIGSTOP): the commit is never answered, and the
        // process cannot be made to stop while it is stopped itself.
        signal(&stopped, "STOP");
        let records = [said("one"), said("two")];
        let failed = tokio::time::timeout(HANG, store.append(&meta.id, &records)).await;
        signal(&stopped, "CONT");
        let err = failed
            .expect("a commit on a stopped server process hangs its caller")
            .unwrap_err();
        assert!(err.to_string().contains("not known yet"), "{err}");

        // Continued, it ends (it was asked to); the retry settles the earlier write first.
        tokio::time::timeout(HANG, store.append(&meta.id, &records))
            .await
            .expect("a retry hangs")
            .unwrap();
        assert_eq!(texts(&direct, &meta.id).await, ["before", "one", "two"]);
        let now = writers(&direct).await;
        assert!(
            stopped.iter().all(|pid| !now.contains(pid)),
            "the stopped process was made to end: {stopped:?} {now:?}"
        );
    });
}

#[test]
fn a_read_on_a_connection_that_never_answers_fails_in_time_and_the_next_one_goes_through() {
    use mux_store::runs::{PostgresRunStore, RunStore};
    runtime().block_on(async {
        let db = TestDatabase::new().await;
        let proxy = proxy(&db);
        let (sessions, _direct, meta) = stores(&db, &proxy).await;
        let runs = PostgresRunStore::with_pool(sessions.pool().clone())
            .await
            .unwrap();
        runs.begin(&meta.id, "run", "owner", Duration::from_secs(60))
            .await
            .unwrap();
        runs.get("run").await.unwrap();
        sessions.load_meta(&meta.id).await.unwrap();

        proxy.silence_open(Silence::Both);
        let err = tokio::time::timeout(HANG, runs.get("run"))
            .await
            .expect("a read on a silent connection hangs its caller")
            .unwrap_err();
        assert!(
            err.to_string().contains("did not answer within 2s"),
            "{err}"
        );

        // New connections answer: the silent ones are not handed out again.
        for _ in 0..3 {
            let run = tokio::time::timeout(HANG, runs.get("run"))
                .await
                .expect("a later read hangs")
                .unwrap();
            assert_eq!(run.owner.as_deref(), Some("owner"));
            tokio::time::timeout(HANG, sessions.load_meta(&meta.id))
                .await
                .expect("a later load hangs")
                .unwrap();
        }
    });
}
