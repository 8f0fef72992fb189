//! Durable runs against the systems users would otherwise run, on one throw-away PostgreSQL
//! (default, fsync-on-commit settings), each system in turn (issue 45, item 1).
//!
//! Workload: one agent run; a scripted model asks for the tool `count`, the tool runs once
//! (it appends the run's name to a file, so how often it ran is countable), the model answers
//! "ok": a model turn, a tool call, a model turn, each recorded before the next starts.
//!
//! - **mux:** the web face with `PostgresSessionStore` and `PostgresRunStore`
//!   (`durable-peers-server`, this binary in another process); one AG-UI run per request on a
//!   new thread, over HTTP with its SSE stream read to the end by this process's load client.
//! - **LangGraph 1.2:** a `StateGraph` over `MessagesState` (model node → tool node → model
//!   node) checkpointed by `langgraph-checkpoint-postgres` 3.2's `PostgresSaver` on a
//!   connection pool, `durability="sync"`; runs in threads of one process, no HTTP.
//! - **DBOS 3.4:** a workflow of steps (model, tool, model); threads of one process, no HTTP.
//!
//! The peers' threads are their faster form here: LangGraph's `AsyncPostgresSaver` under
//! asyncio and DBOS's async workflows measured no faster on this machine (2 cores).
//!
//! The peers run `xtask/bench/python/durable_peers/durable_peers.py` in the venv
//! `target/bench-durable-peers-venv`, made from the pinned requirements beside it. Each load
//! checks that every run answered "ok" and that the tool ran once per run.
//!
//! Rows: runs/s and p99 at concurrency 1 and 32, mux against each peer. The three systems
//! serve in turns, three rounds each (runs/s over all rounds, the worst round's p99), so the
//! machine's drift meets them alike. Targets: at c=32,
//! ≥ 5× LangGraph's runs/s and ≥ 2× DBOS's.
//!
//! **Crash check:** for each system a run whose second model turn waits; once it started (the
//! tool ran and the system recorded it), the process running it is killed (SIGKILL) and the
//! run is resumed (mux: another server takes it over when the 1 s lease runs out; LangGraph:
//! a new process invokes the thread again; DBOS: a new process's launch recovers it) to its
//! answer; the row is how often the tool ran. Target: exactly once.
//!
//! **Temporal (a figure, not a target):** the same workload as mux-temporal's agent workflow
//! on the Temporal CLI's dev server (in memory, not on the PostgreSQL above), its worker in
//! this process; runs/s and p99 at concurrency 1 and 32 beside mux's, measured in turns.
//!
//! `BENCH_DURABLE_PEERS=throughput`, `=crash` or `=temporal` runs only that part.

mod peers;
pub(crate) mod server;
mod temporal;

use std::path::Path;
use std::time::{Duration, Instant};

use mux_testkit::postgres::{Durability, Server as Postgres};
use serde_json::json;

use crate::harness::Row;
use crate::load::{self, Load};
use crate::process;
use peers::{Peers, System};

const MUX_RUNS_C1: usize = 500;
const MUX_RUNS_C32: usize = 4_000;
const PEER_RUNS_C1: usize = 200;
const PEER_RUNS_C32: usize = 1_000;
const TEMPORAL_RUNS_C1: usize = 150;
const TEMPORAL_RUNS_C32: usize = 600;
/// Each system's runs of a concurrency are measured in this many rounds, in turns.
const ROUNDS: usize = 3;
/// mux's lease in the crash check; the throughput servers hold theirs ten times as long.
const LEASE: Duration = Duration::from_secs(1);
/// The longest a crash run may take to reach its second model turn, or to finish after it.
const CRASH_WAIT: Duration = Duration::from_secs(60);

pub(crate) fn run() -> Result<Vec<Row>, String> {
    let rt = load::runtime()?;
    let postgres = Postgres::start(Durability::Default)?;
    let url = postgres.url("postgres");
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let counts = dir.path().join("counts");
    let only = std::env::var("BENCH_DURABLE_PEERS").ok();
    let part = |name: &str| only.as_deref().is_none_or(|o| o == name);
    let mut rows = Vec::new();
    if part("temporal") {
        let temporal = temporal::Temporal::start(&rt, &counts)?;
        for (c, mux_runs, temporal_runs) in [
            (1, MUX_RUNS_C1, TEMPORAL_RUNS_C1),
            (32, MUX_RUNS_C32, TEMPORAL_RUNS_C32),
        ] {
            rows.extend(on_temporal(
                &rt,
                &temporal,
                &url,
                &counts,
                c,
                mux_runs,
                temporal_runs,
            )?);
        }
    }
    if only.as_deref() == Some("temporal") {
        return Ok(rows);
    }
    let peers = Peers::install()?;
    if part("throughput") {
        for (c, mux_runs, peer_runs) in [
            (1, MUX_RUNS_C1, PEER_RUNS_C1),
            (32, MUX_RUNS_C32, PEER_RUNS_C32),
        ] {
            rows.extend(throughput(
                &rt, &peers, &url, &counts, c, mux_runs, peer_runs,
            )?);
        }
    }
    if part("crash") {
        let count = mux_crash(&rt, &url, dir.path())?;
        rows.push(crash_row("mux", count));
        for system in [System::LangGraph, System::Dbos] {
            let count = peer_crash(&peers, system, &url, dir.path())?;
            rows.push(crash_row(system.label(), count));
        }
    }
    Ok(rows)
}

/// The rows of one concurrency: mux, then LangGraph, then DBOS.
fn throughput(
    rt: &tokio::runtime::Runtime,
    peers: &Peers,
    url: &str,
    counts: &Path,
    c: usize,
    mux_runs: usize,
    peer_runs: usize,
) -> Result<Vec<Row>, String> {
    // In turns, so that the machine's drift (other load on it) meets each system alike.
    let server = mux_server(url, counts, LEASE * 10, None)?;
    let agui = format!("http://127.0.0.1:{}/agui", server.port());
    let prefix = format!("mux-c{c}-{}", std::process::id());
    rt.block_on(mux_load(&agui, &format!("{prefix}-warm"), mux_runs / 10, c))?;
    let mut loads: [Vec<(usize, Load)>; 3] = Default::default();
    for round in 0..ROUNDS {
        let (mux_n, peer_n) = (mux_runs / ROUNDS, peer_runs / ROUNDS);
        let run = format!("{prefix}-run{round}");
        let load = rt.block_on(mux_load(&agui, &run, mux_n, c))?;
        let ran = count_lines(counts, &format!("{run}-"))?;
        if ran != mux_n {
            return Err(format!("mux: the tool ran {ran} times in {mux_n} runs"));
        }
        loads[0].push((mux_n, load));
        for (i, system) in [(1, System::LangGraph), (2, System::Dbos)] {
            loads[i].push((peer_n, peers.bench(system, url, c, peer_n, counts)?));
        }
    }
    let [mux, langgraph, dbos] = loads.map(|rounds| combined(&rounds));
    println!(
        "durable_peers c={c}: mux {:.0} runs/s p99 {:.1} ms; LangGraph {:.0} runs/s p99 {:.1} ms; DBOS {:.0} runs/s p99 {:.1} ms",
        mux.runs_per_s,
        mux.p99_ms,
        langgraph.runs_per_s,
        langgraph.p99_ms,
        dbos.runs_per_s,
        dbos.p99_ms
    );
    let mut rows = Vec::new();
    for (system, peer) in [(System::LangGraph, &langgraph), (System::Dbos, &dbos)] {
        rows.push(Row {
            name: format!("durable_peers: agent run on PostgreSQL, concurrency {c} (runs/s)"),
            value: mux.runs_per_s,
            unit: "1/s",
            baseline: system.label().into(),
            baseline_value: peer.runs_per_s,
        });
        rows.push(Row {
            name: format!("durable_peers: agent run p99, concurrency {c} (ms)"),
            value: mux.p99_ms,
            unit: "ms",
            baseline: system.label().into(),
            baseline_value: peer.p99_ms,
        });
    }
    Ok(rows)
}

/// The Temporal rows of one concurrency: mux-temporal on the dev server beside mux's durable
/// runs on PostgreSQL, in turns (a figure: no target).
fn on_temporal(
    rt: &tokio::runtime::Runtime,
    temporal: &temporal::Temporal,
    url: &str,
    counts: &Path,
    c: usize,
    mux_runs: usize,
    temporal_runs: usize,
) -> Result<Vec<Row>, String> {
    let server = mux_server(url, counts, LEASE * 10, None)?;
    let agui = format!("http://127.0.0.1:{}/agui", server.port());
    let prefix = format!("temporal-c{c}-{}", std::process::id());
    rt.block_on(mux_load(
        &agui,
        &format!("{prefix}-mux-warm"),
        mux_runs / 10,
        c,
    ))?;
    rt.block_on(temporal.load(&format!("{prefix}-warm"), temporal_runs / 10, c))?;
    let mut loads: [Vec<(usize, Load)>; 2] = Default::default();
    for round in 0..ROUNDS {
        let (mux_n, temporal_n) = (mux_runs / ROUNDS, temporal_runs / ROUNDS);
        loads[0].push((
            mux_n,
            rt.block_on(mux_load(&agui, &format!("{prefix}-mux{round}"), mux_n, c))?,
        ));
        let run = format!("{prefix}-run{round}");
        let load = rt.block_on(temporal.load(&run, temporal_n, c))?;
        let ran = count_lines(counts, &format!("{run}-"))?;
        if ran != temporal_n {
            return Err(format!(
                "Temporal: the tool ran {ran} times in {temporal_n} runs"
            ));
        }
        loads[1].push((temporal_n, load));
    }
    let [mux, on_temporal] = loads.map(|rounds| combined(&rounds));
    println!(
        "durable_peers c={c}: Temporal (dev server) {:.0} runs/s p99 {:.1} ms; mux on PostgreSQL {:.0} runs/s p99 {:.1} ms",
        on_temporal.runs_per_s, on_temporal.p99_ms, mux.runs_per_s, mux.p99_ms
    );
    Ok(vec![
        Row {
            name: format!(
                "durable_peers: agent run on Temporal (dev server), concurrency {c} (runs/s)"
            ),
            value: on_temporal.runs_per_s,
            unit: "1/s",
            baseline: "mux on PostgreSQL".into(),
            baseline_value: mux.runs_per_s,
        },
        Row {
            name: format!("durable_peers: agent run on Temporal p99, concurrency {c} (ms)"),
            value: on_temporal.p99_ms,
            unit: "ms",
            baseline: "mux on PostgreSQL".into(),
            baseline_value: mux.p99_ms,
        },
    ])
}

/// Rounds measured one after the other: runs/s over all of them, the worst round's p99.
fn combined(rounds: &[(usize, Load)]) -> Load {
    let runs: usize = rounds.iter().map(|(n, _)| n).sum();
    let seconds: f64 = rounds.iter().map(|(n, l)| *n as f64 / l.runs_per_s).sum();
    Load {
        runs_per_s: runs as f64 / seconds,
        p99_ms: rounds.iter().map(|(_, l)| l.p99_ms).fold(0.0, f64::max),
    }
}

/// mux's durable server on `url` with `lease`, its tool counting into `counts`; with
/// `slow_marker`, each run's second model turn writes that file and waits to be killed.
fn mux_server(
    url: &str,
    counts: &Path,
    lease: Duration,
    slow_marker: Option<&Path>,
) -> Result<process::Server, String> {
    let lease_ms = lease.as_millis().to_string();
    let counts = counts.to_string_lossy();
    let mut env = vec![
        (server::DATABASE_URL_VAR, url),
        (server::LEASE_VAR, lease_ms.as_str()),
        (server::COUNTS_VAR, &*counts),
    ];
    let marker = slow_marker.map(|m| m.to_string_lossy().into_owned());
    if let Some(marker) = &marker {
        env.push((server::SLOW_MARKER_VAR, marker));
    }
    process::Server::own(&[server::SERVER_ARG], &env, false, "mux's durable server")
}

/// The AG-UI body of run `name` (its thread, its run id and its prompt).
fn body(name: &str) -> String {
    json!({
        "threadId": format!("thread-{name}"),
        "runId": name,
        "messages": [{"id": format!("u-{name}"), "role": "user", "content": name}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    })
    .to_string()
}

/// `runs` runs named `{prefix}-{n}`, `concurrency` at a time, each read to its `RUN_FINISHED`
/// and checked for "ok".
async fn mux_load(
    url: &str,
    prefix: &str,
    runs: usize,
    concurrency: usize,
) -> Result<Load, String> {
    let prefix = prefix.to_owned();
    load::posts(url, runs, concurrency, move |post, n| {
        let name = format!("{prefix}-{n}");
        async move {
            let request = post.header("accept", "text/event-stream").body(body(&name));
            let text = load::text(request).await?;
            if !(text.contains("RUN_FINISHED") && text.contains(r#""delta":"ok""#)) {
                return Err(format!("run {name} did not finish with ok: {text}"));
            }
            Ok(())
        }
    })
    .await
}

/// How many lines of `counts` start with `prefix` (0 when it does not exist yet).
fn count_lines(counts: &Path, prefix: &str) -> Result<usize, String> {
    match std::fs::read_to_string(counts) {
        Ok(text) => Ok(text.lines().filter(|l| l.starts_with(prefix)).count()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(format!("reading {}: {e}", counts.display())),
    }
}

/// Waits until `marker` exists, `CRASH_WAIT` at the most.
fn wait_for_marker(marker: &Path, what: &str) -> Result<(), String> {
    let deadline = Instant::now() + CRASH_WAIT;
    while !marker.exists() {
        if Instant::now() > deadline {
            return Err(format!(
                "{what}'s crash run did not reach its second model turn within {CRASH_WAIT:?}"
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// mux: a run on one server killed in its second model turn, taken over by another server
/// on the same database; how often its tool ran once it finished there.
fn mux_crash(rt: &tokio::runtime::Runtime, url: &str, dir: &Path) -> Result<usize, String> {
    let counts = dir.join("counts-crash-mux");
    let marker = dir.join("marker-mux");
    let name = format!("crash-mux-{}", std::process::id());
    let mut owner = mux_server(url, &counts, LEASE, Some(&marker))?;
    let other = mux_server(url, &counts, LEASE, None)?;
    let agui = format!("http://127.0.0.1:{}/agui", owner.port());
    let started = {
        let body = body(&name);
        rt.spawn(async move {
            // The stream breaks when the owner is killed; the run goes on elsewhere.
            let sent = reqwest::Client::new()
                .post(&agui)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await;
            if let Ok(response) = sent {
                let _ = response.text().await;
            }
        })
    };
    wait_for_marker(&marker, "mux")?;
    owner.kill();
    started.abort();
    rt.block_on(follow_to_end(other.port(), &name))?;
    count_lines(&counts, &name)
}

/// Follows run `run` on the server at `port` until its `RUN_FINISHED`, `CRASH_WAIT` at the
/// most (asking again whenever a stream ends before it).
async fn follow_to_end(port: u16, run: &str) -> Result<(), String> {
    let events = format!("http://127.0.0.1:{port}/agui/runs/{run}/events");
    let client = reqwest::Client::new();
    let deadline = tokio::time::Instant::now() + CRASH_WAIT;
    let mut seen = String::new();
    loop {
        if tokio::time::Instant::now() > deadline {
            return Err(format!(
                "mux's crash run {run} did not finish within {CRASH_WAIT:?} after the takeover: {seen}"
            ));
        }
        let response = tokio::time::timeout_at(deadline, client.get(&events).send()).await;
        if let Ok(Ok(mut response)) = response
            && response.status().is_success()
        {
            seen.clear();
            while let Ok(Ok(Some(chunk))) =
                tokio::time::timeout_at(deadline, response.chunk()).await
            {
                seen.push_str(&String::from_utf8_lossy(&chunk));
                if seen.contains("RUN_FINISHED") {
                    return if seen.contains(r#""delta":"ok""#) {
                        Ok(())
                    } else {
                        Err(format!("mux's crash run {run} finished without ok: {seen}"))
                    };
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A peer: a run whose process is killed in its second model turn, resumed in a new process;
/// how often its tool ran once it finished.
fn peer_crash(peers: &Peers, system: System, url: &str, dir: &Path) -> Result<usize, String> {
    let counts = dir.join(format!("counts-crash-{}", system.key()));
    let marker = dir.join(format!("marker-{}", system.key()));
    let name = format!("crash-{}-{}", system.key(), std::process::id());
    let mut child = peers.start_crash_run(system, url, &name, &counts, &marker)?;
    let reached = wait_for_marker(&marker, system.label());
    let _ = child.kill();
    let _ = child.wait();
    reached?;
    peers.resume(system, url, &name, &counts)?;
    count_lines(&counts, &name)
}

fn crash_row(system: &str, count: usize) -> Row {
    println!("durable_peers crash: {system}'s tool ran {count} time(s) after kill -9 and resume");
    Row {
        name: format!("durable_peers: tool runs after kill -9 and resume, {system} (count)"),
        value: count as f64,
        unit: "runs",
        baseline: "exactly once".into(),
        baseline_value: 1.0,
    }
}
