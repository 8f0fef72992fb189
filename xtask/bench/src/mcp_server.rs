//! MCP server overhead: the same echo tool served by mux's `McpServer` (a mux tool run by an
//! `Executor`) and by a bare rmcp `ServerHandler`, each in its own process over stdio (this
//! binary as `xtask-bench mcp-mux-echo-server` and `mcp-echo-server`), called by the same
//! bare rmcp client, sequentially. Unpinned and with all processes on CPU 0.
//!
//! Wall clock on a shared machine is noisy: a neighbour's burst can land on either side. So
//! the two servers run in many short rounds that alternate (mux, bare, bare, mux, mux, …),
//! each round's ratio is taken against the bare round beside it, and the row is the median
//! of those ratios, with their quartiles as its spread. Beside it, each server process's own
//! CPU time per call (from `/proc/PID/stat`), which a neighbour barely moves.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use mux_mcp::McpServer;
use mux_tool::{Executor, Registry};
use rmcp::service::{ClientServiceExt, RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use tokio::runtime::{Builder, Runtime};

use crate::harness::Row;
use crate::mcp::{ECHO_SERVER_ARG, echo_calls, lifecycle, micros, pin_self, runtime};

/// The argument that turns this binary into mux's echo server.
pub(crate) const MUX_ECHO_SERVER_ARG: &str = "mcp-mux-echo-server";

/// Calls of one round: at 50 to 150 µs a call, 50 to 150 ms. Shorter rounds (250 calls)
/// spread the ratios more: one time slice of another process is then a larger share of the
/// round it lands in.
const ROUND_CALLS: u32 = 1_000;
/// Rounds per server (odd, so that the median is one round's ratio): 41,000 calls each.
const ROUNDS: usize = 41;
/// Calls of the profile mode by default.
const PROFILE_CALLS: u32 = 10_000;

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
async fn client(arg: &str, pinned: bool, wrap: &[String]) -> Result<Server, String> {
    // `BENCH_MCP_SERVER_MUX_EXE`: mux's server from another build of this binary (an
    // earlier commit's, say), measured against the same bare server in the same run.
    let exe = match std::env::var_os("BENCH_MCP_SERVER_MUX_EXE") {
        Some(exe) if arg == MUX_ECHO_SERVER_ARG => std::path::PathBuf::from(exe),
        _ => std::env::current_exe().map_err(|err| err.to_string())?,
    };
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
    // `taskset` and the profilers exec the server: the pid is the server's.
    let pid = transport.id();
    let service =
        ().serve_with_lifecycle(transport, lifecycle())
            .await
            .map_err(|err| format!("handshake with `{arg}`: {err}"))?;
    Ok(Server { service, pid })
}

/// A server process and its client.
struct Server {
    service: RunningService<RoleClient, ()>,
    pid: Option<u32>,
}

impl Server {
    /// The CPU time (user and system, every thread, dead ones too) the server process has
    /// used so far, when the system says.
    fn cpu(&self) -> Option<Duration> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid?)).ok()?;
        // After the command name (in parentheses, which may hold anything): state is the
        // first field, utime the 12th and stime the 13th.
        let fields: Vec<&str> = stat
            .get(stat.rfind(')')? + 1..)?
            .split_whitespace()
            .collect();
        let ticks: u64 =
            fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
        // USER_HZ, 100 on every Linux architecture mux builds for.
        Some(Duration::from_millis(ticks * 10))
    }

    /// Runs `calls` echo calls; returns their wall time and the server's CPU time.
    fn round(
        &self,
        runtime: &Runtime,
        calls: u32,
        failures: &AtomicU32,
    ) -> (Duration, Option<Duration>) {
        let cpu_before = self.cpu();
        let started = Instant::now();
        runtime.block_on(echo_calls(self.service.peer(), calls, failures));
        let wall = started.elapsed();
        let cpu = self
            .cpu()
            .zip(cpu_before)
            .map(|(after, before)| after.saturating_sub(before));
        (wall, cpu)
    }

    fn stop(self, runtime: &Runtime) {
        runtime.block_on(async {
            let _ = self.service.cancel().await;
        });
    }
}

/// Rounds of one server: wall time per call of each round, CPU time per call over all.
#[derive(Default)]
struct Side {
    wall: Vec<Duration>,
    cpu: Option<Duration>,
    calls: u32,
}

impl Side {
    fn add(&mut self, (wall, cpu): (Duration, Option<Duration>), calls: u32) {
        self.wall.push(wall / calls);
        self.cpu = match (self.wall.len(), self.cpu, cpu) {
            (1, _, cpu) => cpu,
            (_, Some(sum), Some(cpu)) => Some(sum + cpu),
            _ => None,
        };
        self.calls += calls;
    }

    fn cpu_per_call(&self) -> Option<Duration> {
        Some(self.cpu? / self.calls.max(1))
    }
}

/// The value at `q` (0 to 1) of sorted `values`, nearest rank.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let last = sorted.len().saturating_sub(1);
    // A rank in 0..=last: rounding a product of small non-negative numbers.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let rank = ((last as f64) * q).round() as usize;
    sorted.get(rank.min(last)).copied().unwrap_or(f64::NAN)
}

fn calls(pinned: bool, label: &str) -> Result<Vec<Row>, String> {
    let runtime = runtime()?;
    let mux = runtime.block_on(client(MUX_ECHO_SERVER_ARG, pinned, &[]))?;
    let bare = runtime.block_on(client(ECHO_SERVER_ARG, pinned, &[]))?;
    let failures = AtomicU32::new(0);
    // Warm-up: both servers' first calls (allocator, caches) stay out of the figures.
    mux.round(&runtime, ROUND_CALLS, &failures);
    bare.round(&runtime, ROUND_CALLS, &failures);
    let (mut through_mux, mut through_bare) = (Side::default(), Side::default());
    for round in 0..ROUNDS {
        // mux, bare; bare, mux; …: neither side always goes first.
        if round % 2 == 0 {
            through_mux.add(mux.round(&runtime, ROUND_CALLS, &failures), ROUND_CALLS);
            through_bare.add(bare.round(&runtime, ROUND_CALLS, &failures), ROUND_CALLS);
        } else {
            through_bare.add(bare.round(&runtime, ROUND_CALLS, &failures), ROUND_CALLS);
            through_mux.add(mux.round(&runtime, ROUND_CALLS, &failures), ROUND_CALLS);
        }
    }
    mux.stop(&runtime);
    bare.stop(&runtime);
    let failed = failures.load(Ordering::Relaxed);
    if failed > 0 {
        return Err(format!("{failed} echo calls failed ({label})"));
    }
    let mut ratios: Vec<f64> = through_mux
        .wall
        .iter()
        .zip(&through_bare.wall)
        .map(|(mux, bare)| mux.as_secs_f64() / bare.as_secs_f64())
        .collect();
    ratios.sort_by(f64::total_cmp);
    let median = |side: &Side| {
        let mut wall = side.wall.clone();
        wall.sort();
        wall.get(wall.len() / 2).copied().unwrap_or_default()
    };
    let (p25, p50, p75) = (
        quantile(&ratios, 0.25),
        quantile(&ratios, 0.5),
        quantile(&ratios, 0.75),
    );
    eprintln!(
        "mcp_server ({label}): {ROUNDS} rounds of {ROUND_CALLS} calls each side; mux/bare per \
         round: median {p50:.3}, quartiles {p25:.3}–{p75:.3}, range {:.3}–{:.3}, {} of {} \
         rounds ≤ 1.2",
        quantile(&ratios, 0.0),
        quantile(&ratios, 1.0),
        ratios.iter().filter(|r| **r <= 1.2).count(),
        ratios.len(),
    );
    let ratio_row = |what: &str, value: f64| Row {
        name: format!("mcp server round ratio, {what} ({label})"),
        value,
        unit: "×",
        baseline: "bare rmcp server, same round".into(),
        baseline_value: 1.0,
    };
    let mut rows = vec![
        Row {
            name: format!("mcp tool call served by mux McpServer ({label})"),
            value: micros(median(&through_mux)),
            unit: "µs",
            baseline: "bare rmcp server".into(),
            baseline_value: micros(median(&through_bare)),
        },
        ratio_row("median", p50),
        ratio_row("1st quartile", p25),
        ratio_row("3rd quartile", p75),
    ];
    if let (Some(mux_cpu), Some(bare_cpu)) =
        (through_mux.cpu_per_call(), through_bare.cpu_per_call())
    {
        rows.push(Row {
            name: format!("mcp server process CPU per call ({label})"),
            value: micros(mux_cpu),
            unit: "µs",
            baseline: "bare rmcp server".into(),
            baseline_value: micros(bare_cpu),
        });
    }
    Ok(rows)
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
        Err(_) => PROFILE_CALLS,
    };
    let wrap: Vec<String> = std::env::var("BENCH_MCP_SERVER_WRAP")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    pin_self("0")?;
    let runtime = runtime()?;
    let server = runtime.block_on(client(arg, true, &wrap))?;
    let failures = AtomicU32::new(0);
    let (elapsed, cpu) = server.round(&runtime, calls, &failures);
    server.stop(&runtime);
    eprintln!(
        "profiled {subject}: {:.1} µs per call, server CPU {} per call",
        micros(elapsed) / f64::from(calls.max(1)),
        cpu.map_or("unknown".to_owned(), |cpu| format!(
            "{:.1} µs",
            micros(cpu) / f64::from(calls.max(1))
        )),
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
    let mut rows = calls(false, "unpinned")?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    pin_self("0")?;
    let pinned = calls(true, "taskset -c 0");
    pin_self(&format!("0-{}", cpus.saturating_sub(1)))?;
    rows.extend(pinned?);
    Ok(rows)
}
