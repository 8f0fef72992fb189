//! MCP proxy overhead: echo calls through a mux `McpTool` proxy (coordinator, connection,
//! progress route, events) against the same calls on a bare rmcp client, both to the same
//! Rust echo server over stdio (this binary run as `xtask-bench mcp-echo-server`, on rmcp's
//! non-blocking `stdio_pipes()`). Also connect time (spawn + handshake + tools/list) and 32
//! calls in flight at once. Every figure is measured unpinned and with both processes pinned
//! to CPU 0 (`taskset -c 0`), where cross-core wake-ups no longer swamp the numbers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use mux_mcp::{
    ConnectionOptions, Coordinator, CoordinatorConfig, ReconnectPolicy, ServerConnection,
    ServerSpec,
};
use mux_tool::{Tool, ToolContext};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use rmcp::transport::TokioChildProcess;
use serde_json::{Map, Value, json};
use tokio::runtime::{Builder, Runtime};

use mux_testkit::mcp::Echo;

use crate::harness::Row;

/// The argument that turns this binary into the echo server.
pub(crate) const ECHO_SERVER_ARG: &str = "mcp-echo-server";

const CALLS: u32 = 20_000;
const SAMPLES: usize = 5;
const CONCURRENCY: usize = 32;
const CONNECTS: u32 = 10;

/// Runs the echo server on stdin/stdout until the client goes away.
pub(crate) fn serve_echo() -> Result<(), String> {
    let runtime = Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| err.to_string())?;
    runtime.block_on(async {
        let service = Echo::new()
            .serve(rmcp::transport::stdio_pipes())
            .await
            .map_err(|err| format!("echo server handshake: {err}"))?;
        service
            .waiting()
            .await
            .map(|_| ())
            .map_err(|err| err.to_string())
    })
}

fn echo_command(pinned: bool) -> Result<(String, Vec<String>), String> {
    let exe = std::env::current_exe().map_err(|err| err.to_string())?;
    let exe = exe.to_string_lossy().into_owned();
    Ok(if pinned {
        (
            "taskset".into(),
            vec!["-c".into(), "0".into(), exe, ECHO_SERVER_ARG.into()],
        )
    } else {
        (exe, vec![ECHO_SERVER_ARG.into()])
    })
}

pub(crate) fn lifecycle() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28, ProtocolVersion::V_2025_11_25],
        legacy_version: Some(ProtocolVersion::V_2025_11_25),
    }
}

pub(crate) fn args() -> Map<String, Value> {
    let mut args = Map::new();
    args.insert("text".into(), json!("hello"));
    args
}

async fn bare_client(
    pinned: bool,
) -> Result<rmcp::service::RunningService<rmcp::RoleClient, ()>, String> {
    let (program, argv) = echo_command(pinned)?;
    let mut command = tokio::process::Command::new(program);
    command.args(argv);
    let transport = TokioChildProcess::new(command).map_err(|err| err.to_string())?;
    ().serve_with_lifecycle(transport, lifecycle())
        .await
        .map_err(|err| format!("bare rmcp handshake: {err}"))
}

async fn mux_proxy(pinned: bool) -> Result<(Coordinator, Arc<dyn Tool>), String> {
    let (program, argv) = echo_command(pinned)?;
    let coordinator = Coordinator::new(CoordinatorConfig {
        reconnect: ReconnectPolicy::None,
        health_interval: None,
        ..CoordinatorConfig::default()
    });
    let report = coordinator
        .start_all_and_wait(vec![ServerSpec::stdio("bench", program, argv)])
        .await
        .map_err(|err| err.to_string())?;
    if !report.failed.is_empty() {
        return Err(format!("mux could not connect: {:?}", report.failed));
    }
    let tool = coordinator
        .tools()
        .into_iter()
        .next()
        .ok_or("the echo server offered no tool")?;
    Ok((coordinator, tool))
}

/// `iters` sequential echo calls over a bare rmcp client; each that does not answer `hello`
/// counts in `failures`.
pub(crate) async fn echo_calls(
    peer: &rmcp::Peer<rmcp::RoleClient>,
    iters: u32,
    failures: &std::sync::atomic::AtomicU32,
) {
    for _ in 0..iters {
        let params = CallToolRequestParams::new("echo").with_arguments(args());
        let result = peer.call_tool(params).await;
        let text = result.as_ref().ok().and_then(|r| r.content.first());
        if text
            .and_then(|block| block.as_text())
            .map(|t| t.text.as_str())
            != Some("hello")
        {
            failures.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

pub(crate) fn runtime() -> Result<Runtime, String> {
    Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|err| err.to_string())
}

/// Medians per iteration of `subject` and `baseline`, measured in alternating samples (after a
/// warm-up of each) so that load from other processes on this shared machine hits both alike.
pub(crate) fn paired(
    samples: usize,
    iters: u32,
    mut subject: impl FnMut(u32),
    mut baseline: impl FnMut(u32),
) -> (Duration, Duration) {
    subject(iters / 10);
    baseline(iters / 10);
    let mut a = Vec::with_capacity(samples);
    let mut b = Vec::with_capacity(samples);
    for _ in 0..samples {
        let start = Instant::now();
        subject(iters);
        a.push(start.elapsed() / iters);
        let start = Instant::now();
        baseline(iters);
        b.push(start.elapsed() / iters);
    }
    a.sort();
    b.sort();
    (a[a.len() / 2], b[b.len() / 2])
}

pub(crate) fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

/// Sequential and concurrent call cost, proxy against bare rmcp.
fn calls(pinned: bool, label: &str) -> Result<Vec<Row>, String> {
    let runtime = runtime()?;
    let (coordinator, proxy) = runtime.block_on(mux_proxy(pinned))?;
    let bare = runtime.block_on(bare_client(pinned))?;
    let peer = bare.peer().clone();
    let failures = Arc::new(std::sync::atomic::AtomicU32::new(0));

    let (sequential_mux, sequential_bare) = paired(
        SAMPLES,
        CALLS,
        |iters| {
            let proxy = Arc::clone(&proxy);
            let failures = Arc::clone(&failures);
            runtime.block_on(async move {
                for i in 0..iters {
                    let out = proxy
                        .call(json!({"text": "hello"}), ToolContext::new(i.to_string()))
                        .await;
                    let text = out.as_ref().ok().and_then(|out| out.content.first());
                    if text.and_then(mux_tool::Content::as_text) != Some("hello") {
                        failures.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            });
        },
        |iters| runtime.block_on(echo_calls(&peer, iters, &failures)),
    );
    let (concurrent_mux, concurrent_bare) = paired(
        SAMPLES,
        CALLS,
        |iters| {
            let proxy = Arc::clone(&proxy);
            runtime.block_on(async move {
                futures::stream::iter(0..iters)
                    .map(|i| {
                        let proxy = Arc::clone(&proxy);
                        async move {
                            proxy
                                .call(json!({"text": "hello"}), ToolContext::new(i.to_string()))
                                .await
                                .is_ok()
                        }
                    })
                    .buffer_unordered(CONCURRENCY)
                    .for_each(|_| async {})
                    .await;
            });
        },
        |iters| {
            let peer = peer.clone();
            runtime.block_on(async move {
                futures::stream::iter(0..iters)
                    .map(|_| {
                        let peer = peer.clone();
                        async move {
                            let params = CallToolRequestParams::new("echo").with_arguments(args());
                            peer.call_tool(params).await.is_ok()
                        }
                    })
                    .buffer_unordered(CONCURRENCY)
                    .for_each(|_| async {})
                    .await;
            });
        },
    );
    runtime.block_on(async {
        coordinator.stop_all().await;
        let _ = bare.cancel().await;
    });
    let failed = failures.load(std::sync::atomic::Ordering::Relaxed);
    if failed > 0 {
        return Err(format!("{failed} echo calls failed ({label})"));
    }
    Ok(vec![
        Row {
            name: format!("mcp echo call via mux proxy ({label})"),
            value: micros(sequential_mux),
            unit: "µs",
            baseline: "bare rmcp client".into(),
            baseline_value: micros(sequential_bare),
        },
        Row {
            name: format!("mcp echo, {CONCURRENCY} in flight, via mux ({label})"),
            value: micros(concurrent_mux),
            unit: "µs",
            baseline: format!("bare rmcp, {CONCURRENCY} in flight"),
            baseline_value: micros(concurrent_bare),
        },
    ])
}

/// Spawn + handshake + tools/list, then a clean close, mux against bare rmcp.
fn connects(pinned: bool, label: &str) -> Result<Row, String> {
    let runtime = runtime()?;
    let (program, argv) = echo_command(pinned)?;
    let spec = ServerSpec::stdio("bench", program, argv);
    let mut mux = Vec::new();
    let mut bare = Vec::new();
    for _ in 0..CONNECTS {
        let started = Instant::now();
        let connection = ServerConnection::new(spec.clone(), ConnectionOptions::default());
        runtime
            .block_on(connection.connect())
            .map_err(|err| err.to_string())?;
        mux.push(started.elapsed());
        runtime.block_on(connection.disconnect());

        let started = Instant::now();
        let client = runtime.block_on(bare_client(pinned))?;
        runtime
            .block_on(client.peer().list_all_tools())
            .map_err(|err| err.to_string())?;
        bare.push(started.elapsed());
        let _ = runtime.block_on(client.cancel());
    }
    mux.sort();
    bare.sort();
    Ok(Row {
        name: format!("mcp connect: spawn+handshake+list via mux ({label})"),
        value: micros(mux[mux.len() / 2]) / 1000.0,
        unit: "ms",
        baseline: "bare rmcp".into(),
        baseline_value: micros(bare[bare.len() / 2]) / 1000.0,
    })
}

/// Pins every thread of this process to `cpus` (a `taskset` list such as `0` or `0-1`).
pub(crate) fn pin_self(cpus: &str) -> Result<(), String> {
    let pid = std::process::id().to_string();
    let status = std::process::Command::new("taskset")
        .args(["-a", "-p", "-c", cpus, &pid])
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|err| format!("taskset did not start: {err}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("taskset -a -p -c {cpus} failed: {status}"))
    }
}

/// Only one subject's sequential calls, pinned to CPU 0, for a profiler:
/// `BENCH_MCP_PROFILE=mux` or `BENCH_MCP_PROFILE=bare`.
fn profile(subject: &str) -> Result<Vec<Row>, String> {
    pin_self("0")?;
    let runtime = runtime()?;
    let calls: u32 = match std::env::var("BENCH_MCP_PROFILE_CALLS") {
        Ok(text) => text
            .parse()
            .map_err(|e| format!("BENCH_MCP_PROFILE_CALLS={text:?}: {e}"))?,
        Err(_) => CALLS * 5,
    };
    let started = Instant::now();
    match subject {
        "mux" => {
            let (coordinator, proxy) = runtime.block_on(mux_proxy(true))?;
            let probe = proxy.call(json!({}), ToolContext::new("size"));
            eprintln!(
                "proxy call future: {} bytes",
                std::mem::size_of_val(&*probe)
            );
            drop(probe);
            runtime.block_on(async {
                for i in 0..calls {
                    let _ = proxy
                        .call(json!({"text": "hello"}), ToolContext::new(i.to_string()))
                        .await;
                }
                coordinator.stop_all().await;
            });
        }
        "bare" => {
            let bare = runtime.block_on(bare_client(true))?;
            runtime.block_on(async {
                for _ in 0..calls {
                    let params = CallToolRequestParams::new("echo").with_arguments(args());
                    let _ = bare.peer().call_tool(params).await;
                }
                let _ = bare.cancel().await;
            });
        }
        other => return Err(format!("BENCH_MCP_PROFILE={other:?}: expected mux or bare")),
    }
    eprintln!(
        "profiled {subject}: {:.1} µs per call",
        micros(started.elapsed()) / f64::from(calls)
    );
    Ok(Vec::new())
}

/// Runs the benchmark unpinned, then with both processes on CPU 0.
pub(crate) fn run() -> Result<Vec<Row>, String> {
    if let Ok(subject) = std::env::var("BENCH_MCP_PROFILE") {
        return profile(&subject);
    }
    let mut rows = calls(false, "unpinned")?;
    rows.push(connects(false, "unpinned")?);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    pin_self("0")?;
    let pinned = calls(true, "taskset -c 0").and_then(|mut rows| {
        rows.push(connects(true, "taskset -c 0")?);
        Ok(rows)
    });
    pin_self(&format!("0-{}", cpus.saturating_sub(1)))?;
    rows.extend(pinned?);
    Ok(rows)
}
