//! mux's orchestrator loop against rig's agent loop (crate rig-core) on the same workload, in
//! the same process and run: a two-call run where an instant model answers the prompt with a
//! call of the no-op tool `noop {"n":1}` and the tool result with the text "ok". A turn is one
//! model call, so a run is two turns.
//!
//! Usage: `cargo run --release --manifest-path xtask/bench-rig/Cargo.toml -- [REPORT.json]`
//! (default `target/bench-rig-report.json`). Prints a table and writes the rows as a JSON list
//! of `{"name", "value", "unit", "baseline", "baseline_value", "ratio"}`.
//!
//! This package has its own workspace so that the root workspace (and CI) never builds rig.

mod measure;
mod mux_loop;
mod rig_loop;

use std::future::Future;
use std::process::ExitCode;
use std::time::Duration;

use measure::{Row, per_iter};
use mux_loop::MuxLoop;
use rig_loop::RigLoop;
use tokio::runtime::Runtime;

/// Samples per subject; the median is reported.
const SAMPLES: usize = 9;
/// Two-call runs per sample.
const RUNS: u32 = 2_000;
/// Model calls per run.
const TURNS_PER_RUN: f64 = 2.0;

/// The rig-core version this package locks (see Cargo.lock).
const RIG: &str = "rig-core 0.40";

fn main() -> ExitCode {
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
    println!("{}", measure::table(&rows));
    match measure::write_report(&path, &rows) {
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

/// Median time per run of `run`, each sample being `RUNS` sequential runs on `rt`.
fn per_run<F, Fut>(rt: &Runtime, run: F) -> Result<Duration, String>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    per_iter(SAMPLES, RUNS, |runs| {
        rt.block_on(async {
            for _ in 0..runs {
                run().await?;
            }
            Ok(())
        })
    })
}

fn measure_all() -> Result<Vec<Row>, String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let mux = MuxLoop::new()?;
    let rig = RigLoop::new();

    let mux_run = per_run(&rt, || mux.run())?;
    let rig_run = per_run(&rt, || rig.run())?;
    let rig_stream_run = per_run(&rt, || rig.run_streaming())?;

    let us_per_turn = |run: Duration| run.as_secs_f64() * 1e6 / TURNS_PER_RUN;
    let runs_per_sec = |run: Duration| 1.0 / run.as_secs_f64();
    let mux_name = "mux orchestrator loop (streaming)";
    let rig_prompt = format!("{RIG} agent: prompt().max_turns(2)");
    let rig_stream = format!("{RIG} agent: stream_prompt().max_turns(2)");
    Ok(vec![
        Row {
            name: format!("{mux_name}, per turn"),
            value: us_per_turn(mux_run),
            unit: "µs",
            baseline: rig_prompt.clone(),
            baseline_value: us_per_turn(rig_run),
        },
        Row {
            name: format!("{mux_name}, two-call runs"),
            value: runs_per_sec(mux_run),
            unit: "runs/s",
            baseline: rig_prompt,
            baseline_value: runs_per_sec(rig_run),
        },
        Row {
            name: format!("{mux_name}, per turn"),
            value: us_per_turn(mux_run),
            unit: "µs",
            baseline: rig_stream.clone(),
            baseline_value: us_per_turn(rig_stream_run),
        },
        Row {
            name: format!("{mux_name}, two-call runs"),
            value: runs_per_sec(mux_run),
            unit: "runs/s",
            baseline: rig_stream,
            baseline_value: runs_per_sec(rig_stream_run),
        },
    ])
}
