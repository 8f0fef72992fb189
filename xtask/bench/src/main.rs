//! The home of every mux benchmark. Each benchmark measures a subject and a baseline in the
//! same run, prints a table, and the whole set is written to the JSON report whose path is the
//! first argument (default `target/bench-report.json`).

mod a2a;
mod acp;
mod builtin;
mod cold_build;
mod durable;
mod durable_peers;
mod evals;
mod executor;
mod harness;
mod heap;
mod llm_decode;
mod load;
mod mcp;
mod mcp_server;
mod orchestrator;
mod permission;
mod process;
mod report;
mod session_stores;
mod wall;
mod web;

use std::process::ExitCode;

use harness::Row;

#[global_allocator]
static ALLOCATOR: heap::Counting = heap::Counting;

/// A benchmark: measures subjects and their baselines, one row each.
type Benchmark = fn() -> Result<Vec<Row>, String>;

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some(mcp::ECHO_SERVER_ARG) {
        return match mcp::serve_echo() {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("echo server: {err}");
                ExitCode::FAILURE
            }
        };
    }
    if std::env::args().nth(1).as_deref() == Some(mcp_server::MUX_ECHO_SERVER_ARG) {
        return match mcp_server::serve_mux_echo() {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("mux echo server: {err}");
                ExitCode::FAILURE
            }
        };
    }
    if std::env::args().nth(1).as_deref() == Some(a2a::A2A_SERVER_ARG) {
        return match a2a::serve() {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("a2a server: {err}");
                ExitCode::FAILURE
            }
        };
    }
    if std::env::args().nth(1).as_deref() == Some(web::WEB_SERVER_ARG) {
        let kind = std::env::args().nth(2).unwrap_or_default();
        return match web::serve(&kind) {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("web server: {err}");
                ExitCode::FAILURE
            }
        };
    }
    if std::env::args().nth(1).as_deref() == Some(durable_peers::server::SERVER_ARG) {
        return match durable_peers::server::serve() {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("durable peers server: {err}");
                ExitCode::FAILURE
            }
        };
    }
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "target/bench-report.json".to_owned());
    let mut rows: Vec<Row> = Vec::new();
    let benchmarks: &[(&str, Benchmark)] = &[
        ("executor", executor::run),
        ("builtin", builtin::run),
        ("llm_decode", llm_decode::run),
        ("permission", permission::run),
        ("mcp", mcp::run),
        ("mcp_server", mcp_server::run),
        ("orchestrator", orchestrator::run),
        ("session_stores", session_stores::run),
        ("web", web::run),
        ("durable", durable::run),
        ("durable_peers", durable_peers::run),
        ("acp", acp::run),
        ("a2a", a2a::run),
        ("wall", wall::run),
        ("evals", evals::run),
        ("cold_build", cold_build::run),
    ];
    // `BENCH_ONLY=mcp,orchestrator` runs only the named benchmarks.
    let only = std::env::var("BENCH_ONLY").ok();
    let selected = |name: &str| {
        only.as_deref()
            .is_none_or(|list| list.split(',').any(|n| n.trim() == name))
    };
    for &(name, run) in benchmarks.iter().filter(|(name, _)| selected(name)) {
        match run() {
            Ok(found) => rows.extend(found),
            Err(err) => {
                eprintln!("benchmark `{name}` failed: {err}");
                return ExitCode::FAILURE;
            }
        }
    }

    println!("{}", harness::table(&rows));
    match harness::write_report(&path, &rows) {
        Ok(()) => {
            println!("report written to {path}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("could not write the bench report to {path}: {err}");
            ExitCode::FAILURE
        }
    }
}
