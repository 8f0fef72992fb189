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

use std::path::{Path, PathBuf};

use crate::harness::Row;
use crate::load::{self, Load};
use crate::process;

/// The argument that turns this binary into the mux A2A server: `a2a-server`.
pub(crate) const A2A_SERVER_ARG: &str = "a2a-server";

const RUNS_C1: usize = 2_000;
const RUNS_C8: usize = 4_000;

/// Serves mux-a2a with the instant agent on 127.0.0.1 and prints `PORT <n>`; runs until
/// killed.
pub(crate) fn serve() -> Result<(), String> {
    let runtime = load::runtime()?;
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
struct Server(process::Server);

impl Server {
    fn mux(pinned: bool) -> Result<Self, String> {
        process::Server::own(&[A2A_SERVER_ARG], &[], pinned, "the mux A2A server").map(Self)
    }

    fn python_sdk(python: &Path, pinned: bool) -> Result<Self, String> {
        let script = process::root().join("tests/a2a-peers/a2a_sdk_server.py");
        process::Server::python(python, &script, pinned, "the a2a-sdk server").map(Self)
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/a2a", self.0.port())
    }
}

fn body(n: usize) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{n},"method":"SendMessage","params":{{"message":{{"messageId":"m-{n}","role":"ROLE_USER","parts":[{{"text":"go"}}]}}}}}}"#
    )
}

/// One `SendMessage` a round trip, each checked for a completed task with "ok".
async fn load(url: &str, runs: usize, concurrency: usize) -> Result<Load, String> {
    load::posts(url, runs, concurrency, |post, n| async move {
        let text = load::text(post.header("a2a-version", "1.0").body(body(n))).await?;
        if !(text.contains("TASK_STATE_COMPLETED") && text.contains("\"ok\"")) {
            return Err(format!("round trip {n} did not complete with ok: {text}"));
        }
        Ok(())
    })
    .await
}

fn measure(rt: &tokio::runtime::Runtime, url: &str, runs: usize, c: usize) -> Result<Load, String> {
    rt.block_on(async {
        load(url, runs / 10, c).await?;
        load(url, runs, c).await
    })
}

/// The A2A SDK's venv (made by `cargo xtask peers`; made here on first use otherwise).
fn sdk_python() -> Result<PathBuf, String> {
    process::venv_python(
        "target/a2a-peers-venv",
        "tests/a2a-peers/python/requirements.txt",
        "a2a-sdk",
    )
}

fn rows(label: &str, mux: &Load, sdk: &Load) -> Vec<Row> {
    println!(
        "a2a {label}: mux-a2a {:.0} round trips/s p99 {:.2} ms; a2a-sdk {:.0} round trips/s p99 {:.2} ms; ratio {:.1}x",
        mux.runs_per_s,
        mux.p99_ms,
        sdk.runs_per_s,
        sdk.p99_ms,
        mux.runs_per_s / sdk.runs_per_s
    );
    vec![
        Row {
            name: format!("a2a: SendMessage round trip, {label} (1/s)"),
            value: mux.runs_per_s,
            unit: "1/s",
            baseline: "a2a-sdk (Python) server".into(),
            baseline_value: sdk.runs_per_s,
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
    let rt = load::runtime()?;
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
