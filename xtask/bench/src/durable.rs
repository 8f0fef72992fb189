//! Durable runs (docs/web.md, "Runs in the store"): the web face with its sessions and runs on
//! PostgreSQL against the same server with both in memory, and against pydantic-ai, in one
//! run; the memory of paused runs with no open stream; and how long another process takes to
//! continue a run whose owner was killed.
//!
//! - **Throughput:** the web benchmark's workload (one AG-UI run per request on a new thread;
//!   the model calls `noop`, then answers "ok") on `web-server mux` (memory) and
//!   `web-server mux-pg` (`PostgresSessionStore` + `PostgresRunStore` on a throw-away
//!   PostgreSQL with its default, fsync-on-commit settings), the same on a throw-away
//!   PostgreSQL with fsync off (`-F`: what mux costs apart from the disk's flushes), the same
//!   on a third, fsync-on PostgreSQL with the opt-in relaxed durability
//!   (`options=-c synchronous_commit=off` in the URL: a commit does not wait for its WAL
//!   flush, so a PostgreSQL crash may lose the last acknowledged writes; a separate row, not
//!   the headline), then pydantic-ai's adapter. The four mux servers serve in turns, four
//!   rounds each (`web::measure_in_turns`), so the machine's drift meets them alike. The
//!   stores' writes of concurrent runs share commits (the group commit, docs/sessions.md).
//!   Targets: PostgreSQL ≥ 0.5× memory, and ≥ 5× pydantic-ai.
//! - **Paused runs:** 10,000 runs whose model calls `act` (not read-only, so the face asks),
//!   each ending with an interrupt and its stream closed; RSS against the same server before.
//!   Target: < 50 MB above the idle server.
//! - **Takeover:** two `mux-pg` servers with a 1 s lease; a run whose tool waits is started on
//!   one, which is then killed (SIGKILL); the time until the other process's replay of the run
//!   shows an event the dead owner never wrote. Target: at most the lease plus 1 s.
//!
//! - **CPU a run** (`BENCH_DURABLE=cpu` only, not in the default set): at concurrency 32, the
//!   CPU time per run of the server, of PostgreSQL's processes and of the load client, in memory
//!   and on PostgreSQL with fsync off: where a durable run's cost goes on a CPU-bound machine.
//!   `BENCH_DURABLE_URL` points it at another server instead (one with `pg_stat_statements`
//!   loaded, say; its CPU is then not counted).
//!
//! `BENCH_DURABLE=memory` runs only the paused-runs part; `BENCH_DURABLE=takeover` only the
//! takeover; `BENCH_DURABLE_CONCURRENCY=1` (or `32`, or any other) only that concurrency's
//! throughput rows.

use std::time::{Duration, Instant};

use mux_testkit::postgres::{Durability, Server as Postgres};

use crate::harness::Row;
use crate::web::{self, Server};

const RUNS_C1: usize = 500;
const RUNS_C32: usize = 2_000;
const PAUSED_RUNS: usize = 10_000;
/// The lease of the takeover servers.
pub(crate) const TAKEOVER_LEASE: Duration = Duration::from_secs(1);

pub(crate) fn run() -> Result<Vec<Row>, String> {
    let rt = crate::load::runtime()?;
    let postgres = Postgres::start(Durability::Default)?;
    let url = postgres.url("postgres");
    let only = std::env::var("BENCH_DURABLE").ok();
    let part = |name: &str| only.as_deref().is_none_or(|o| o == name);
    let mut rows = Vec::new();
    if part("throughput") {
        // The same on a server that does not wait for its disk: what mux itself costs.
        let unsynced = Postgres::start(Durability::Throwaway)?;
        // Each server on a PostgreSQL of its own: none hears another's notifications.
        let relaxed = Postgres::start(Durability::Default)?;
        rows.extend(throughput(
            &rt,
            &url,
            &unsynced.url("postgres"),
            &relaxed.url("postgres"),
        )?);
    }
    if part("memory") {
        rows.push(paused_memory(&rt, &url)?);
    }
    if part("takeover") {
        rows.push(takeover(&rt, &url)?);
    }
    if only.as_deref() == Some("cpu") {
        let unsynced = Postgres::start(Durability::Throwaway)?;
        cpu_split(&rt, &unsynced)?;
    }
    Ok(rows)
}

fn throughput(
    rt: &tokio::runtime::Runtime,
    url: &str,
    unsynced_url: &str,
    relaxed_url: &str,
) -> Result<Vec<Row>, String> {
    let python = web::pydantic_python()?;
    let script = web::pydantic_script();
    let mut rows = Vec::new();
    let only_c: Option<usize> = std::env::var("BENCH_DURABLE_CONCURRENCY")
        .ok()
        .and_then(|c| c.parse().ok());
    // Another concurrency, asked for by name, runs as many runs as 32 does.
    let levels = match only_c {
        Some(1) => vec![(1, RUNS_C1)],
        Some(c) => vec![(c, RUNS_C32)],
        None => vec![(1, RUNS_C1), (32, RUNS_C32)],
    };
    for (c, runs) in levels {
        // In turns, so that the machine's drift meets each alike.
        let memory = Server::own("mux", false)?;
        let durable = Server::durable(url, TAKEOVER_LEASE * 10)?;
        let unsynced = Server::durable(unsynced_url, TAKEOVER_LEASE * 10)?;
        let relaxed_url = format!("{relaxed_url}&options=-c%20synchronous_commit%3Doff");
        let relaxed = Server::durable(&relaxed_url, TAKEOVER_LEASE * 10)?;
        let urls = [&memory, &durable, &unsynced, &relaxed].map(Server::url);
        let [memory, durable, unsynced, relaxed]: [web::Load; 4] =
            web::measure_in_turns(rt, &urls, runs, c)?
                .try_into()
                .map_err(|_| "one load per server".to_owned())?;
        let pydantic = {
            let server = Server::pydantic(&python, &script, false)?;
            web::measure(rt, &server.url(), runs / 4, c)?
        };
        println!(
            "durable c={c}: on PostgreSQL {:.0} runs/s p99 {:.2} ms (fsync off: {:.0} runs/s p99 {:.2} ms; opt-in synchronous_commit=off: {:.0} runs/s p99 {:.2} ms); in memory {:.0} runs/s p99 {:.2} ms; pydantic-ai {:.0} runs/s",
            durable.runs_per_s,
            durable.p99_ms,
            unsynced.runs_per_s,
            unsynced.p99_ms,
            relaxed.runs_per_s,
            relaxed.p99_ms,
            memory.runs_per_s,
            memory.p99_ms,
            pydantic.runs_per_s
        );
        for (what, load) in [
            ("", &durable),
            (" with fsync off", &unsynced),
            (" with opt-in synchronous_commit=off", &relaxed),
        ] {
            rows.push(Row {
                name: format!("durable: AG-UI run on PostgreSQL{what}, concurrency {c} (runs/s)"),
                value: load.runs_per_s,
                unit: "1/s",
                baseline: "the same server in memory".into(),
                baseline_value: memory.runs_per_s,
            });
            rows.push(Row {
                name: format!("durable: AG-UI run on PostgreSQL{what}, concurrency {c} (runs/s)"),
                value: load.runs_per_s,
                unit: "1/s",
                baseline: "pydantic-ai AGUIAdapter".into(),
                baseline_value: pydantic.runs_per_s,
            });
        }
    }
    Ok(rows)
}

/// RSS of a server on PostgreSQL before and after `PAUSED_RUNS` runs paused on an approval,
/// every stream closed.
fn paused_memory(rt: &tokio::runtime::Runtime, url: &str) -> Result<Row, String> {
    let server = Server::durable(url, TAKEOVER_LEASE * 10)?;
    // Warm up: allocator arenas, the pools, the first compiled schemas.
    rt.block_on(web::pause_runs(&server.url(), 200, 60_000_000))?;
    std::thread::sleep(Duration::from_millis(300));
    let before = server.rss_mb()?;
    rt.block_on(web::pause_runs(&server.url(), PAUSED_RUNS, 70_000_000))?;
    std::thread::sleep(Duration::from_millis(500));
    let after = server.rss_mb()?;
    println!(
        "durable: RSS {after:.0} MB with {PAUSED_RUNS} paused runs and no open stream ({before:.0} MB before; +{:.0} MB)",
        after - before
    );
    Ok(Row {
        name: format!("durable: RSS with {PAUSED_RUNS} paused runs, no open stream (MB)"),
        value: after,
        unit: "MB",
        baseline: "the same server before them".into(),
        baseline_value: before,
    })
}

/// Seconds from killing a run's owner until another process has continued it.
fn takeover(rt: &tokio::runtime::Runtime, url: &str) -> Result<Row, String> {
    let mut owner = Server::durable(url, TAKEOVER_LEASE)?;
    let other = Server::durable(url, TAKEOVER_LEASE)?;
    let run = rt.block_on(web::start_holding_run(&owner.url()))?;
    let seen = rt.block_on(web::last_event_id(&other, &run))?;
    owner.kill();
    let killed = Instant::now();
    let continued = rt.block_on(web::wait_for_event_after(
        &other,
        &run,
        seen,
        Duration::from_secs(30),
    ))?;
    let elapsed = continued.duration_since(killed).as_secs_f64();
    println!(
        "durable: takeover {elapsed:.2} s after the owner was killed (lease {:.1} s)",
        TAKEOVER_LEASE.as_secs_f64()
    );
    Ok(Row {
        name: "durable: takeover after the owner's SIGKILL (s)".into(),
        value: elapsed,
        unit: "s",
        baseline: "the lease plus 1 s".into(),
        baseline_value: TAKEOVER_LEASE.as_secs_f64() + 1.0,
    })
}

/// Prints the CPU milliseconds per run of the server, PostgreSQL and the load client, in memory
/// and on `postgres` (concurrency 32).
fn cpu_split(rt: &tokio::runtime::Runtime, postgres: &Postgres) -> Result<(), String> {
    let ms = |pids: &[u32]| pids.iter().map(|&p| cpu_ms(&p.to_string())).sum::<f64>();
    let own = || cpu_ms("self");
    for durable in [false, true] {
        let server = if durable {
            let url = std::env::var("BENCH_DURABLE_URL").unwrap_or(postgres.url("postgres"));
            Server::durable(&url, TAKEOVER_LEASE * 10)?
        } else {
            Server::own("mux", false)?
        };
        rt.block_on(web::load(&server.url(), RUNS_C32 / 10, 32, 10_000_000))?;
        let pg = postgres.pids();
        let before = (ms(&[server.pid()]), ms(&pg), own());
        let load = rt.block_on(web::load(&server.url(), RUNS_C32, 32, 32_000_000))?;
        let after = (ms(&[server.pid()]), ms(&pg), own());
        let per = |a: f64, b: f64| (a - b) / RUNS_C32 as f64;
        println!(
            "durable cpu c=32 {}: {:.0} runs/s; CPU ms a run: server {:.3}, PostgreSQL {:.3}, client {:.3}",
            if durable {
                "on PostgreSQL, fsync off"
            } else {
                "in memory"
            },
            load.runs_per_s,
            per(after.0, before.0),
            per(after.1, before.1),
            per(after.2, before.2),
        );
    }
    Ok(())
}

/// User plus system CPU milliseconds of process `pid` (`self` for this one), 0 when gone.
fn cpu_ms(pid: &str) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i).and_then(|f| f.parse::<f64>().ok()))
        .sum();
    // The kernel's USER_HZ is 100 on Linux.
    ticks * 10.0
}
