//! The session stores against the file store, measured in the same run: one-message append
//! (p50 and p99), loading a 1,000-message session, and listing 10,000 sessions (all of them,
//! and a first page of 50). SQLite is a WAL file with `synchronous = NORMAL`; PostgreSQL is a
//! throw-away local server over a unix socket with default durability (each commit waits for
//! its WAL flush, so the disk's fsync time is in the figure), and its appends again with
//! `synchronous_commit = off`, unpinned and with the benchmark and the server on one core.

use std::process::Command;
use std::time::{Duration, Instant};

use mux_llm::Message;
use mux_orchestrator::session::{
    FileSessionStore, HistoryRecord, PostgresSessionStore, SessionMeta, SessionStore,
    SqliteSessionStore,
};
use tokio::runtime::Runtime;

use crate::harness::Row;
use mux_testkit::postgres::{Durability, Server};

const APPENDS: usize = 2_000;
const LOADED: usize = 1_000;
const LISTED: usize = 10_000;
const PAGE: usize = 50;

/// What one store measured.
struct Measured {
    append_p50: Duration,
    append_p99: Duration,
    load: Duration,
    list: Duration,
    page: Duration,
}

fn runtime() -> Result<Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
}

fn message(i: usize) -> HistoryRecord {
    let text = format!(
        "message {i}: the parser now keeps a torn last line out of the history, and the \
         resume path reads everything before it; tests cover a cut at every byte."
    );
    HistoryRecord::Message {
        message: if i.is_multiple_of(2) {
            Message::user(text)
        } else {
            Message::assistant(text)
        },
    }
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// The median of `runs` timings of `f`, after one warm-up.
async fn median<F, Fut>(runs: usize, mut f: F) -> Result<Duration, String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    f().await?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        f().await?;
        times.push(start.elapsed());
    }
    times.sort();
    Ok(times[times.len() / 2])
}

/// Per-append latencies: p50 and p99 of `APPENDS` single-message appends after 100 warm-ups.
async fn appends(store: &dyn SessionStore) -> Result<(Duration, Duration), String> {
    let meta = SessionMeta::new();
    store.create(&meta).await.map_err(err)?;
    for i in 0..100 {
        store.append(&meta.id, &[message(i)]).await.map_err(err)?;
    }
    let mut times = Vec::with_capacity(APPENDS);
    for i in 0..APPENDS {
        let record = [message(i)];
        let start = Instant::now();
        store.append(&meta.id, &record).await.map_err(err)?;
        times.push(start.elapsed());
    }
    times.sort();
    Ok((times[APPENDS / 2], times[APPENDS * 99 / 100]))
}

async fn measure(store: &dyn SessionStore) -> Result<Measured, String> {
    let (append_p50, append_p99) = appends(store).await?;

    let meta = SessionMeta::new();
    store.create(&meta).await.map_err(err)?;
    let records: Vec<HistoryRecord> = (0..LOADED).map(message).collect();
    for chunk in records.chunks(100) {
        store.append(&meta.id, chunk).await.map_err(err)?;
    }
    let load = median(11, || async {
        let session = store.load(&meta.id).await.map_err(err)?;
        if session.messages.len() == LOADED {
            Ok(())
        } else {
            Err(format!("loaded {} messages", session.messages.len()))
        }
    })
    .await?;

    // The two sessions above plus enough to make `LISTED`.
    for i in 0..LISTED - 2 {
        let mut meta = SessionMeta::new();
        meta.updated_at_ms += (i % 1_000) as u64;
        store.create(&meta).await.map_err(err)?;
    }
    let list = median(5, || async {
        let all = store.list().await.map_err(err)?;
        if all.len() == LISTED {
            Ok(())
        } else {
            Err(format!("listed {} sessions", all.len()))
        }
    })
    .await?;
    let page = median(21, || async {
        let page = store.list_page(None, PAGE).await.map_err(err)?;
        if page.sessions.len() == PAGE {
            Ok(())
        } else {
            Err(format!("a page of {} sessions", page.sessions.len()))
        }
    })
    .await?;
    Ok(Measured {
        append_p50,
        append_p99,
        load,
        list,
        page,
    })
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The rows comparing `subject` (named `name`) with the file store.
fn rows(name: &str, subject: &Measured, file: &Measured) -> Vec<Row> {
    let row = |what: &str, value: f64, unit, base: &str, base_value: f64| Row {
        name: format!("{name}: {what}"),
        value,
        unit,
        baseline: format!("file store {base}"),
        baseline_value: base_value,
    };
    vec![
        row(
            "append p50",
            us(subject.append_p50),
            "µs",
            "append p50",
            us(file.append_p50),
        ),
        row(
            "append p99",
            us(subject.append_p99),
            "µs",
            "append p99",
            us(file.append_p99),
        ),
        row(
            "load 1,000 messages",
            ms(subject.load),
            "ms",
            "load",
            ms(file.load),
        ),
        row(
            "list 10,000 sessions",
            ms(subject.list),
            "ms",
            "list",
            ms(file.list),
        ),
        row(
            "list_page 50 of 10,000",
            ms(subject.page),
            "ms",
            "list_page",
            ms(file.page),
        ),
    ]
}

/// Pins the processes `pids` (all their threads) to `cpus`, e.g. "0".
fn pin(pids: &[u32], cpus: &str) -> Result<(), String> {
    for pid in pids {
        let status = Command::new("taskset")
            .args(["-a", "-c", "-p", cpus, &pid.to_string()])
            .stdout(std::process::Stdio::null())
            .status()
            .map_err(|e| format!("taskset: {e}"))?;
        if !status.success() {
            return Err(format!("taskset -p {cpus} {pid} failed"));
        }
    }
    Ok(())
}

pub(crate) fn run() -> Result<Vec<Row>, String> {
    let rt = runtime()?;
    let dir = tempfile::tempdir().map_err(err)?;
    let file_store = FileSessionStore::new(dir.path().join("sessions"));
    let file = rt.block_on(measure(&file_store))?;
    let mut out = Vec::new();

    let sqlite = rt.block_on(async {
        let store = SqliteSessionStore::open(dir.path().join("sessions.db"))
            .await
            .map_err(err)?;
        let measured = measure(&store).await;
        store.close().await;
        measured
    })?;
    out.extend(rows("SQLite session store", &sqlite, &file));

    let server = match Server::start(Durability::Default) {
        Ok(server) => server,
        Err(why) => {
            eprintln!("session_stores: no PostgreSQL rows: {why}");
            return Ok(out);
        }
    };
    let store = rt
        .block_on(PostgresSessionStore::connect(&server.url("postgres")))
        .map_err(err)?;
    let postgres = rt.block_on(measure(&store))?;
    rt.block_on(store.close());
    out.extend(rows(
        "PostgreSQL session store (unix socket)",
        &postgres,
        &file,
    ));
    // Durable against durable: the file store fsyncing each append, on the same disk.
    let synced_store = FileSessionStore::new(dir.path().join("synced")).with_sync(true);
    let (sync_p50, sync_p99) = rt.block_on(appends(&synced_store))?;
    out.extend(
        append_rows(
            "PostgreSQL session store (unix socket)",
            (postgres.append_p50, postgres.append_p99),
            &file,
        )
        .map(|row| Row {
            baseline: row.baseline.replace("file store", "file store with fsync"),
            baseline_value: if row.name.ends_with("p50") {
                us(sync_p50)
            } else {
                us(sync_p99)
            },
            ..row
        }),
    );

    // Commits that do not wait for their WAL flush: the disk's fsync time out of the picture
    // (a server crash may lose the last commits; a killed client still loses only its own).
    let url = format!("{}&options[synchronous_commit]=off", server.url("postgres"));
    let store = rt
        .block_on(PostgresSessionStore::connect(&url))
        .map_err(err)?;
    let unsynced = rt.block_on(appends(&store))?;
    out.extend(append_rows(
        "PostgreSQL session store (unix socket, synchronous_commit=off)",
        unsynced,
        &file,
    ));

    // The same with the benchmark and the server on one core: no cross-core wake-ups.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let all = format!("0-{}", cores.saturating_sub(1));
    let mut pids = server.pids();
    pids.push(std::process::id());
    pin(&pids, "0")?;
    let pinned = rt.block_on(appends(&store));
    pin(&pids, &all)?;
    out.extend(append_rows(
        "PostgreSQL session store (unix socket, synchronous_commit=off, taskset -c 0)",
        pinned?,
        &file,
    ));
    rt.block_on(store.close());
    drop(server);
    Ok(out)
}

/// Append p50 and p99 rows for `name` against the file store's.
fn append_rows(name: &str, (p50, p99): (Duration, Duration), file: &Measured) -> [Row; 2] {
    [
        Row {
            name: format!("{name}: append p50"),
            value: us(p50),
            unit: "µs",
            baseline: "file store append p50".into(),
            baseline_value: us(file.append_p50),
        },
        Row {
            name: format!("{name}: append p99"),
            value: us(p99),
            unit: "µs",
            baseline: "file store append p99".into(),
            baseline_value: us(file.append_p99),
        },
    ]
}
