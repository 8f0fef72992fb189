//! MCP server overhead: the same echo tool served by mux's `McpServer` (a mux tool run by an
//! `Executor`) and by a bare rmcp `ServerHandler`, each in its own process over stdio (this
//! binary as `xtask-bench mcp-mux-echo-server` and `mcp-echo-server`), called by the same
//! bare rmcp client, sequentially. Unpinned and with all processes on CPU 0.

use std::sync::atomic::{AtomicU32, Ordering};

use mux_mcp::McpServer;
use mux_tool::{Executor, Registry};
use rmcp::service::{ClientServiceExt, RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use tokio::runtime::Builder;

use crate::harness::Row;
use crate::mcp::{ECHO_SERVER_ARG, echo_calls, lifecycle, micros, paired, pin_self, runtime};

/// The argument that turns this binary into mux's echo server.
pub(crate) const MUX_ECHO_SERVER_ARG: &str = "mcp-mux-echo-server";

const CALLS: u32 = 10_000;
const SAMPLES: usize = 5;

/// The echo tool, as a mux typed tool: the one the tests share.
#[path = "../../../crates/mux-tool/tests/support/tools.rs"]
#[allow(dead_code, unreachable_pub, clippy::unwrap_used)]
mod tools;
use tools::Echo;

/// Runs mux's echo server on stdin/stdout until the client goes away.
pub(crate) fn serve_mux_echo() -> Result<(), String> {
    let runtime = Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| err.to_string())?;
    runtime.block_on(async {
        let registry = Registry::new();
        registry
            .register_typed(Echo)
            .map_err(|err| err.to_string())?;
        McpServer::new(Executor::new(registry))
            .serve_stdio()
            .await
            .map_err(|err| err.to_string())
    })
}

/// A client of this binary run as the server `arg`: on CPU 0 when `pinned`, under the
/// command `wrap` (a profiler) when it is not empty.
async fn client(
    arg: &str,
    pinned: bool,
    wrap: &[String],
) -> Result<RunningService<RoleClient, ()>, String> {
    let exe = std::env::current_exe().map_err(|err| err.to_string())?;
    let mut argv: Vec<std::ffi::OsString> = Vec::new();
    if pinned {
        argv.extend(["taskset".into(), "-c".into(), "0".into()]);
    }
    argv.extend(wrap.iter().map(Into::into));
    argv.push(exe.into_os_string());
    argv.push(arg.into());
    let mut command = tokio::process::Command::new(&argv[0]);
    command.args(&argv[1..]);
    let transport = TokioChildProcess::new(command).map_err(|err| err.to_string())?;
    ().serve_with_lifecycle(transport, lifecycle())
        .await
        .map_err(|err| format!("handshake with `{arg}`: {err}"))
}

fn calls(pinned: bool, label: &str) -> Result<Row, String> {
    let runtime = runtime()?;
    let mux = runtime.block_on(client(MUX_ECHO_SERVER_ARG, pinned, &[]))?;
    let bare = runtime.block_on(client(ECHO_SERVER_ARG, pinned, &[]))?;
    let failures = AtomicU32::new(0);
    let (through_mux, through_bare) = paired(
        SAMPLES,
        CALLS,
        |iters| runtime.block_on(echo_calls(mux.peer(), iters, &failures)),
        |iters| runtime.block_on(echo_calls(bare.peer(), iters, &failures)),
    );
    runtime.block_on(async {
        let _ = mux.cancel().await;
        let _ = bare.cancel().await;
    });
    let failed = failures.load(Ordering::Relaxed);
    if failed > 0 {
        return Err(format!("{failed} echo calls failed ({label})"));
    }
    Ok(Row {
        name: format!("mcp tool call served by mux McpServer ({label})"),
        value: micros(through_mux),
        unit: "µs",
        baseline: "bare rmcp server".into(),
        baseline_value: micros(through_bare),
    })
}

/// Only one server's sequential calls, pinned to CPU 0, for a profiler:
/// `BENCH_MCP_SERVER_PROFILE=mux` or `bare`, `BENCH_MCP_SERVER_PROFILE_CALLS=N` (default
/// 10,000), and the server run under `BENCH_MCP_SERVER_WRAP` (words split at spaces), such
/// as `valgrind --tool=callgrind`.
fn profile(subject: &str) -> Result<Vec<Row>, String> {
    let arg = match subject {
        "mux" => MUX_ECHO_SERVER_ARG,
        "bare" => ECHO_SERVER_ARG,
        other => {
            return Err(format!(
                "BENCH_MCP_SERVER_PROFILE={other:?}: expected mux or bare"
            ));
        }
    };
    let calls: u32 = match std::env::var("BENCH_MCP_SERVER_PROFILE_CALLS") {
        Ok(text) => text
            .parse()
            .map_err(|e| format!("BENCH_MCP_SERVER_PROFILE_CALLS={text:?}: {e}"))?,
        Err(_) => CALLS,
    };
    let wrap: Vec<String> = std::env::var("BENCH_MCP_SERVER_WRAP")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    pin_self("0")?;
    let runtime = runtime()?;
    let service = runtime.block_on(client(arg, true, &wrap))?;
    let failures = AtomicU32::new(0);
    let started = std::time::Instant::now();
    runtime.block_on(echo_calls(service.peer(), calls, &failures));
    let elapsed = started.elapsed();
    runtime.block_on(async {
        let _ = service.cancel().await;
    });
    eprintln!(
        "profiled {subject}: {:.1} µs per call",
        micros(elapsed) / f64::from(calls.max(1))
    );
    match failures.load(Ordering::Relaxed) {
        0 => Ok(Vec::new()),
        failed => Err(format!("{failed} echo calls failed (profile {subject})")),
    }
}

/// Runs the benchmark unpinned, then with every process on CPU 0.
pub(crate) fn run() -> Result<Vec<Row>, String> {
    if let Ok(subject) = std::env::var("BENCH_MCP_SERVER_PROFILE") {
        return profile(&subject);
    }
    let mut rows = vec![calls(false, "unpinned")?];
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    pin_self("0")?;
    let pinned = calls(true, "taskset -c 0");
    pin_self(&format!("0-{}", cpus.saturating_sub(1)))?;
    rows.push(pinned?);
    Ok(rows)
}
