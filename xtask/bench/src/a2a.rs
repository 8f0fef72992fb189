//! The A2A face against the official A2A Python SDK's server, with the same instant agent.
//!
//! Workload: A2A 1.0 `SendMessage` round trips (JSON-RPC over HTTP, blocking: the answer is
//! the completed task), each a new task on a new context, whose agent answers "ok" at once.
//! mux-a2a serves a mux agent on a model that replies "ok" without a tool call (the loop runs:
//! a session, a model turn, the task's updates); the baseline is `a2a-sdk`'s Starlette server
//! on uvicorn with an `AgentExecutor` that marks the task working, adds the artifact "ok" and
//! completes it (tests/a2a-peers/a2a_sdk_server.py, in the venv `target/a2a-peers-venv` that
//! `cargo xtask peers` makes from the pinned tests/a2a-peers/python/requirements.txt; made here
//! on first use otherwise). Every server runs in its own process; the load client is this
//! process (reqwest, keep-alive, one connection per worker). Every answer is checked for a
//! completed task with "ok". Target: mux ≥ 5× the SDK.

use std::io::{BufRead, BufReader};
use std::net::TcpListener as StdListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use std::time::Instant as Clock;

use crate::harness::Row;

/// The argument that turns this binary into the mux A2A server: `a2a-server`.
pub(crate) const A2A_SERVER_ARG: &str = "a2a-server";

const RUNS_C1: usize = 2_000;
const RUNS_C8: usize = 4_000;

/// Serves mux-a2a with the instant agent on 127.0.0.1 and prints `PORT <n>`; runs until
/// killed.
pub(crate) fn serve() -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let agent = mux_orchestrator::Agent::builder(Instant, "bench")
            .build()
            .map_err(|e| e.to_string())?;
        let server = mux_a2a::A2aServer::new(agent)
            .serve(([127, 0, 0, 1], 0).into())
            .await
            .map_err(|e| e.to_string())?;
        println!("PORT {}", server.local_addr().port());
        server.wait().await;
        Ok(())
    })
}

/// A model whose reply, "ok", is ready at once and that records nothing (the SDK's executor
/// records nothing either).
struct Instant;

impl mux_llm::LlmClient for Instant {
    fn provider(&self) -> &str {
        "instant"
    }

    fn stream(
        &self,
        _request: mux_llm::Request,
    ) -> mux_tool::BoxFuture<'_, Result<mux_llm::EventStream, mux_llm::LlmError>> {
        let events = mux_llm::testing::events_of(&mux_llm::Response::from_text("ok"));
        Box::pin(async move {
            let stream: mux_llm::EventStream =
                Box::pin(futures::stream::iter(events.into_iter().map(Ok)));
            Ok(stream)
        })
    }
}

/// A server process, killed on drop.
struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn mux(pinned: bool) -> Result<Self, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut child = command(&exe, pinned)
            .arg(A2A_SERVER_ARG)
            .stdout(Stdio::piped())
            .stdin(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting the mux A2A server: {e}"))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        let port = line
            .trim()
            .strip_prefix("PORT ")
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| format!("the mux A2A server said {line:?}"))?;
        Ok(Self { child, port })
    }

    fn python_sdk(python: &Path, pinned: bool) -> Result<Self, String> {
        let script = root().join("tests/a2a-peers/a2a_sdk_server.py");
        let port = StdListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let child = command(python, pinned)
            .arg(&script)
            .arg(port.to_string())
            .stdin(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting the a2a-sdk server: {e}"))?;
        let server = Self { child, port };
        let deadline = Clock::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Clock::now() > deadline {
                return Err("the a2a-sdk server did not listen within 30 s".into());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(server)
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/a2a", self.port)
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `program`, or `taskset -c 0 program` when pinned.
fn command(program: &Path, pinned: bool) -> Command {
    if pinned {
        let mut command = Command::new("taskset");
        command.args(["-c", "0"]).arg(program);
        command
    } else {
        Command::new(program)
    }
}

/// Round trips per second and p99 latency (ms).
struct Load {
    per_s: f64,
    p99_ms: f64,
}

fn body(n: usize) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{n},"method":"SendMessage","params":{{"message":{{"messageId":"m-{n}","role":"ROLE_USER","parts":[{{"text":"go"}}]}}}}}}"#
    )
}

async fn load(url: &str, runs: usize, concurrency: usize) -> Result<Load, String> {
    let client = reqwest::Client::builder()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(concurrency)
        .build()
        .map_err(|e| e.to_string())?;
    let next = Arc::new(AtomicUsize::new(0));
    let started = Clock::now();
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let (client, next, url) = (client.clone(), Arc::clone(&next), url.to_owned());
        workers.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= runs {
                    return Ok::<_, String>(latencies);
                }
                let t = Clock::now();
                let text = client
                    .post(&url)
                    .header("content-type", "application/json")
                    .header("a2a-version", "1.0")
                    .body(body(n))
                    .send()
                    .await
                    .map_err(|e| e.to_string())?
                    .text()
                    .await
                    .map_err(|e| e.to_string())?;
                if !(text.contains("TASK_STATE_COMPLETED") && text.contains("\"ok\"")) {
                    return Err(format!("round trip {n} did not complete with ok: {text}"));
                }
                latencies.push(t.elapsed());
            }
        }));
    }
    let mut latencies = Vec::new();
    for worker in workers {
        latencies.extend(worker.await.map_err(|e| e.to_string())??);
    }
    let elapsed = started.elapsed();
    latencies.sort();
    let p99 = latencies
        .get((latencies.len() * 99 / 100).min(latencies.len().saturating_sub(1)))
        .copied()
        .unwrap_or_default();
    Ok(Load {
        per_s: runs as f64 / elapsed.as_secs_f64(),
        p99_ms: p99.as_secs_f64() * 1000.0,
    })
}

fn measure(rt: &tokio::runtime::Runtime, url: &str, runs: usize, c: usize) -> Result<Load, String> {
    rt.block_on(async {
        load(url, runs / 10, c).await?;
        load(url, runs, c).await
    })
}

/// The A2A SDK's venv (made by `cargo xtask peers`; made here on first use otherwise).
fn sdk_python() -> Result<PathBuf, String> {
    let venv = root().join("target/a2a-peers-venv");
    let requirements = root().join("tests/a2a-peers/python/requirements.txt");
    let marker = venv.join("mux-requirements.txt");
    let wanted = std::fs::read_to_string(&requirements).map_err(|e| e.to_string())?;
    if std::fs::read_to_string(&marker).ok().as_deref() != Some(wanted.as_str()) {
        let ok = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .map_err(|e| e.to_string())?
            .success()
            && Command::new(venv.join("bin/pip"))
                .args(["install", "--quiet", "--disable-pip-version-check", "-r"])
                .arg(&requirements)
                .status()
                .map_err(|e| e.to_string())?
                .success();
        if !ok {
            return Err("installing a2a-sdk into target/a2a-peers-venv failed".into());
        }
        std::fs::write(&marker, wanted).map_err(|e| e.to_string())?;
    }
    Ok(venv.join("bin/python"))
}

fn rows(label: &str, mux: &Load, sdk: &Load) -> Vec<Row> {
    println!(
        "a2a {label}: mux-a2a {:.0} round trips/s p99 {:.2} ms; a2a-sdk {:.0} round trips/s p99 {:.2} ms; ratio {:.1}x",
        mux.per_s,
        mux.p99_ms,
        sdk.per_s,
        sdk.p99_ms,
        mux.per_s / sdk.per_s
    );
    vec![
        Row {
            name: format!("a2a: SendMessage round trip, {label} (1/s)"),
            value: mux.per_s,
            unit: "1/s",
            baseline: "a2a-sdk (Python) server".into(),
            baseline_value: sdk.per_s,
        },
        Row {
            name: format!("a2a: SendMessage p99, {label} (ms)"),
            value: mux.p99_ms,
            unit: "ms",
            baseline: "a2a-sdk (Python) server".into(),
            baseline_value: sdk.p99_ms,
        },
    ]
}

pub(crate) fn run() -> Result<Vec<Row>, String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let python = sdk_python()?;
    let mut out = Vec::new();
    for (c, runs) in [(1, RUNS_C1), (8, RUNS_C8)] {
        let mux = {
            let server = Server::mux(false)?;
            measure(&rt, &server.url(), runs, c)?
        };
        let sdk = {
            let server = Server::python_sdk(&python, false)?;
            measure(&rt, &server.url(), runs / 4, c)?
        };
        out.extend(rows(&format!("concurrency {c}"), &mux, &sdk));
    }
    // Concurrency 1 with the client and each server on CPU 0, where cross-core wake-ups no
    // longer dominate.
    crate::mcp::pin_self("0")?;
    let pinned = (|| {
        let mux = {
            let server = Server::mux(true)?;
            measure(&rt, &server.url(), RUNS_C1, 1)?
        };
        let sdk = {
            let server = Server::python_sdk(&python, true)?;
            measure(&rt, &server.url(), RUNS_C1 / 4, 1)?
        };
        Ok::<_, String>((mux, sdk))
    })();
    crate::mcp::pin_self("0-1")?;
    let (mux, sdk) = pinned?;
    out.extend(rows("concurrency 1, pinned to CPU 0", &mux, &sdk));
    Ok(out)
}
