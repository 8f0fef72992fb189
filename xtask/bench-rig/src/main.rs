//! mux's orchestrator loop against rig's agent loops on the same workload, in the same process
//! and run: the old loop (crate rig-core 0.40, its last release with the loop) and the new one
//! (crate rig-agent 0.46, where the loop has lived since 0.41). The workload is a two-call run
//! where an instant model answers the prompt with a call of the no-op tool `noop {"n":1}` and
//! the tool result with the text "ok". A turn is one model call, so a run is two turns.
//!
//! Usage: `cargo run --release --manifest-path xtask/bench-rig/Cargo.toml -- [REPORT.json]`
//! (default `target/bench-rig-report.json`). Prints a table and writes the rows as a JSON list
//! of `{"name", "value", "unit", "baseline", "baseline_value", "ratio"}`.
//!
//! This package has its own workspace so that the root workspace (and CI) never builds rig.

mod measure;
mod mux_loop;
/// The rows, table and JSON report, shared with `xtask/bench`.
#[path = "../../bench/src/report.rs"]
mod report;
mod rig_agent_loop;
mod rig_loop;

use std::future::Future;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use measure::{Subject, medians_per_iter};
use mux_loop::MuxLoop;
use report::Row;
use rig_agent_loop::RigAgentLoop;
use rig_loop::RigLoop;
use tokio::runtime::Runtime;

/// Samples per subject; the median is reported.
const SAMPLES: usize = 9;
/// Two-call runs per sample.
const RUNS: u32 = 2_000;
/// Model calls per run.
const TURNS_PER_RUN: f64 = 2.0;

/// The old rig loop this package locks (see Cargo.lock).
const RIG: &str = "rig-core 0.40";
/// The new rig loop this package locks (see Cargo.lock).
const RIG_AGENT: &str = "rig-agent 0.46";

fn main() -> ExitCode {
    if let Ok(count) = std::env::var("BENCH_RIG_PROFILE_MUX_RUNS") {
        return match MuxLoop::new() {
            Ok(mux) => profile(&count, Arc::new(mux)),
            Err(err) => {
                eprintln!("bench-rig failed: {err}");
                ExitCode::FAILURE
            }
        };
    }
    if let Ok(count) = std::env::var("BENCH_RIG_PROFILE_RIG_RUNS") {
        return profile(&count, Arc::new(RigLoop::new()));
    }
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "target/bench-rig-report.json".to_owned());
    let rows = match measure_all() {
        Ok(rows) => rows,
        Err(err) => {
            eprintln!("bench-rig failed: {err}");
            return ExitCode::FAILURE;
        }
    };
    println!("{}", report::table(&rows));
    match report::write_report(&path, &rows) {
        Ok(()) => {
            println!("report written to {path}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("could not write the report to {path}: {err}");
            ExitCode::FAILURE
        }
    }
}

/// A loop the profile mode can drive.
trait Profiled: Send + Sync + 'static {
    /// One two-call run.
    fn one(&self) -> impl Future<Output = Result<(), String>> + Send;
}

impl Profiled for MuxLoop {
    fn one(&self) -> impl Future<Output = Result<(), String>> + Send {
        self.run()
    }
}

impl Profiled for RigLoop {
    fn one(&self) -> impl Future<Output = Result<(), String>> + Send {
        self.run()
    }
}

/// Only one loop's runs, in a runtime task, for a profiler (`valgrind --tool=callgrind`
/// counts instructions, which the machine's load does not change):
/// `BENCH_RIG_PROFILE_MUX_RUNS=N` or `BENCH_RIG_PROFILE_RIG_RUNS=N` (rig-core 0.40's
/// `prompt()`).
fn profile<L: Profiled>(count: &str, subject: Arc<L>) -> ExitCode {
    let result = count
        .parse::<u32>()
        .map_err(|e| format!("run count {count:?}: {e}"))
        .and_then(|n| {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            let mut subject = runs(&rt, Driver::Task, move || {
                let subject = Arc::clone(&subject);
                async move { subject.one().await }
            });
            let start = std::time::Instant::now();
            subject(n)?;
            println!(
                "{:.2} µs per turn",
                start.elapsed().as_secs_f64() * 1e6 / f64::from(n) / TURNS_PER_RUN
            );
            Ok(())
        });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("bench-rig failed: {err}");
            ExitCode::FAILURE
        }
    }
}

/// Where the runs are driven from.
#[derive(Clone, Copy)]
enum Driver {
    /// `Runtime::block_on` on the main thread, outside the runtime's workers (what
    /// `xtask/bench`'s orchestrator benchmark does): whatever a loop spawns runs on a worker
    /// and every hand-off back to the caller crosses threads.
    BlockOn,
    /// One task spawned on the runtime, as an agent runs in a server.
    Task,
}

impl Driver {
    fn label(self) -> &'static str {
        match self {
            Driver::BlockOn => "from block_on",
            Driver::Task => "in a runtime task",
        }
    }
}

/// A subject that makes `n` sequential runs of `run`, driven as `driver`.
fn runs<'a, F, Fut>(rt: &'a Runtime, driver: Driver, run: F) -> Subject<'a>
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Result<(), String>> + Send + 'static,
{
    Box::new(move |n| {
        let run = run.clone();
        let all = async move {
            for _ in 0..n {
                run().await?;
            }
            Ok(())
        };
        match driver {
            Driver::BlockOn => rt.block_on(all),
            Driver::Task => rt
                .block_on(rt.spawn(all))
                .map_err(|e| format!("benchmark task failed: {e}"))?,
        }
    })
}

fn measure_all() -> Result<Vec<Row>, String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let mux = Arc::new(MuxLoop::new()?);
    let rig = Arc::new(RigLoop::new());
    let rig_agent = Arc::new(RigAgentLoop::new());
    let mut rows = Vec::new();
    for driver in [Driver::BlockOn, Driver::Task] {
        let (m, r, s) = (Arc::clone(&mux), Arc::clone(&rig), Arc::clone(&rig));
        let (a, t) = (Arc::clone(&rig_agent), Arc::clone(&rig_agent));
        let mut subjects = [
            runs(&rt, driver, move || {
                let mux = Arc::clone(&m);
                async move { mux.run().await }
            }),
            runs(&rt, driver, move || {
                let rig = Arc::clone(&r);
                async move { rig.run().await }
            }),
            runs(&rt, driver, move || {
                let rig = Arc::clone(&s);
                async move { rig.run_streaming().await }
            }),
            runs(&rt, driver, move || {
                let rig = Arc::clone(&a);
                async move { rig.run().await }
            }),
            runs(&rt, driver, move || {
                let rig = Arc::clone(&t);
                async move { rig.run_streaming().await }
            }),
        ];
        let times = medians_per_iter(SAMPLES, RUNS, &mut subjects)?;
        let [
            mux_run,
            rig_run,
            rig_stream_run,
            agent_run,
            agent_stream_run,
        ] = times[..]
        else {
            return Err(format!("expected 5 timings, got {}", times.len()));
        };
        let mux_name = format!("mux orchestrator loop, {}", driver.label());
        rows.extend(compare(
            &mux_name,
            mux_run,
            &format!("{RIG} agent prompt()"),
            rig_run,
        ));
        rows.extend(compare(
            &mux_name,
            mux_run,
            &format!("{RIG} agent stream_prompt()"),
            rig_stream_run,
        ));
        rows.extend(compare(
            &mux_name,
            mux_run,
            &format!("{RIG_AGENT} agent prompt() awaited"),
            agent_run,
        ));
        rows.extend(compare(
            &mux_name,
            mux_run,
            &format!("{RIG_AGENT} agent prompt().stream()"),
            agent_stream_run,
        ));
    }
    Ok(rows)
}

/// Two rows for one pair of run times: µs per turn and two-call runs per second.
fn compare(mux: &str, mux_run: Duration, rig: &str, rig_run: Duration) -> [Row; 2] {
    let us_per_turn = |run: Duration| run.as_secs_f64() * 1e6 / TURNS_PER_RUN;
    let runs_per_sec = |run: Duration| 1.0 / run.as_secs_f64();
    [
        Row {
            name: format!("{mux}, per turn"),
            value: us_per_turn(mux_run),
            unit: "µs",
            baseline: rig.to_owned(),
            baseline_value: us_per_turn(rig_run),
        },
        Row {
            name: format!("{mux}, two-call runs"),
            value: runs_per_sec(mux_run),
            unit: "runs/s",
            baseline: rig.to_owned(),
            baseline_value: runs_per_sec(rig_run),
        },
    ]
}
