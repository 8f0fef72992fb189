//! The web face against pydantic-ai's AG-UI adapter, on the same workload with the same load
//! client, plus the client's ceiling (a bare axum SSE endpoint) and the memory of 10,000 idle
//! open runs.
//!
//! Workload: one AG-UI run (`POST /agui`, a new thread each) whose model calls the tool `noop`
//! once and then answers "ok". mux-web runs it on a scripted model; pydantic-ai on a
//! `FunctionModel` (`xtask/bench/python/pydantic_agui_server.py`, in the venv
//! `target/bench-web-venv`, made from the pinned `xtask/bench/python/requirements.txt`). Every
//! server runs in its own process; the load client is this process (reqwest, keep-alive, one
//! connection per concurrent worker). Every run's body is checked for `RUN_FINISHED` and "ok".
//!
//! Idle memory: 10,000 runs whose model called a tool that waits until cancelled, each with
//! its SSE stream open, against the same number of bare axum SSE streams. The servers run the
//! default configuration; the lean variant turns `ask_user` off and sets `event_capacity` to
//! 16. `BENCH_WEB=idle` runs only this part.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::harness::Row;
pub(crate) use crate::load::Load;
use crate::{load, process};

/// The argument that turns this binary into a web server:
/// `web-server mux|mux-lean|bare|bare-hold`.
pub(crate) const WEB_SERVER_ARG: &str = "web-server";

const RUNS_C1: usize = 1_000;
const RUNS_C32: usize = 4_000;
const IDLE_RUNS: usize = 10_000;

/// Serves `kind` on 127.0.0.1 and prints `PORT <n>`; runs until killed.
pub(crate) fn serve(kind: &str) -> Result<(), String> {
    let runtime = load::runtime()?;
    runtime.block_on(async {
        let router = match kind {
            "mux" => server::mux(false)?,
            "mux-lean" => server::mux(true)?,
            "bare" => server::bare(),
            "bare-hold" => server::bare_hold(),
            "mux-pg" => server::durable().await?,
            other => return Err(format!("unknown web server `{other}`")),
        };
        serve_printing_port(router).await
    })
}

/// Serves `router` on a free port, printing `PORT <port>` for the bench to read, until the
/// server stops.
pub(crate) async fn serve_printing_port(router: axum::Router) -> Result<(), String> {
    let listener = mux_web::bind(0).await.map_err(|e| e.to_string())?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    println!("PORT {port}");
    mux_web::serve(listener, router)
        .await
        .map_err(|e| e.to_string())
}

mod server {
    use std::sync::Arc;

    use axum::Router;
    use axum::response::sse::{Event, Sse};
    use axum::routing::post;
    use futures::{StreamExt as _, stream};
    use mux_llm::testing::events_of;
    use mux_llm::{ContentBlock, EventStream, LlmClient, LlmError, Request, Response, StopReason};
    use mux_orchestrator::{Agent, OrchestratorConfig};
    use mux_tool::{
        BoxFuture, Tool, ToolAnnotations, ToolContext, ToolError, ToolOutput, ToolSpec,
    };
    use serde_json::{Value, json};

    /// mux-web on a model that calls `noop` (or `hold`, for the prompt "hold"; `act`, which
    /// the face asks about, for "pause"), then says "ok". `lean` turns `ask_user` off and
    /// makes the event channel small.
    pub(super) fn mux(lean: bool) -> Result<Router, String> {
        Ok(agui(lean)?.build())
    }

    /// The same on PostgreSQL (sessions and runs) at `MUX_BENCH_DATABASE_URL`, with the lease
    /// `MUX_BENCH_LEASE_MS`.
    pub(super) async fn durable() -> Result<Router, String> {
        let url = std::env::var(super::DATABASE_URL_VAR).map_err(|e| e.to_string())?;
        let lease = std::env::var(super::LEASE_VAR)
            .ok()
            .and_then(|ms| ms.parse().ok())
            .map_or(
                std::time::Duration::from_secs(10),
                std::time::Duration::from_millis,
            );
        let (sessions, runs) = crate::durable_peers::server::postgres_stores(&url).await?;
        Ok(agui(false)?
            .session_store(Arc::new(sessions))
            .run_store(Arc::new(runs))
            .config(
                mux_web::WebConfig::default()
                    .replay_retention(std::time::Duration::from_secs(1))
                    .lease(lease),
            )
            .build())
    }

    fn agui(lean: bool) -> Result<mux_web::AguiRouter, String> {
        let client = Arc::new(Instant);
        let mut config = OrchestratorConfig::new("bench");
        if lean {
            config.ask_user = false;
            config.event_capacity = 16;
        }
        // Made once, as an `Agent` makes its fixed tools: each conversation shares them.
        let fixed = mux_tool::Registry::new();
        for tool in [
            Named::new("noop", false),
            Named::new("hold", true),
            Named::new("act", false).map(Named::asked),
        ]
        .into_iter()
        .flatten()
        {
            let _ = fixed.register(tool);
        }
        // The agent holds no tools: the closure picks each conversation's, as before.
        let agent = Agent::builder_shared(client, "bench")
            .configure(|_| config)
            .build()
            .map_err(|e| e.to_string())?;
        Ok(mux_web::AguiRouter::new(move |tools: mux_tool::Registry| {
            // The page's tools replace the agent's of the same name, as on an `Agent`.
            let all = mux_tool::Registry::new();
            let _ = all.register_from(&fixed);
            all.replace_from(&tools);
            agent.conversation_with(all)
        })
        .config(mux_web::WebConfig::default().replay_retention(std::time::Duration::from_secs(1))))
    }

    /// A model whose replies are ready at once and that records nothing (pydantic-ai's
    /// FunctionModel records nothing either).
    struct Instant;

    impl LlmClient for Instant {
        fn provider(&self) -> &str {
            "instant"
        }

        fn stream(&self, request: Request) -> BoxFuture<'_, Result<EventStream, LlmError>> {
            let events = respond(&request).map(|r| events_of(&r));
            Box::pin(async move {
                let stream: EventStream = Box::pin(stream::iter(events?.into_iter().map(Ok)));
                Ok(stream)
            })
        }
    }

    fn respond(request: &Request) -> Result<Response, mux_llm::LlmError> {
        let answered = request.messages.last().is_some_and(|m| {
            m.content
                .iter()
                .any(|b| matches!(b, ContentBlock::ToolResult { .. }))
        });
        let prompt = request.messages.first().map(|m| m.text());
        let (content, stop_reason) = if answered {
            (vec![ContentBlock::text("ok")], StopReason::EndTurn)
        } else {
            let tool = match prompt.as_deref() {
                Some("hold") => "hold",
                Some("pause") => "act",
                _ => "noop",
            };
            (
                vec![ContentBlock::tool_use("call_1", tool, json!({"n": 1}))],
                StopReason::ToolUse,
            )
        };
        Ok(Response::new(content, stop_reason))
    }

    /// `noop` answers "ok"; `hold` waits until the run is cancelled.
    struct Named {
        spec: ToolSpec,
        hold: bool,
    }

    impl Named {
        fn new(name: &str, hold: bool) -> Option<Self> {
            let spec = ToolSpec::new(name, "A benchmark tool", json!({"type": "object"})).ok()?;
            Some(Self {
                spec: spec.with_annotations(ToolAnnotations::read_only()),
                hold,
            })
        }

        /// The same tool without the read-only annotation: the face asks before it runs.
        fn asked(mut self) -> Self {
            self.spec = self.spec.with_annotations(ToolAnnotations::default());
            self
        }
    }

    impl Tool for Named {
        fn spec(&self) -> &ToolSpec {
            &self.spec
        }

        fn call(
            &self,
            _input: Value,
            cx: ToolContext,
        ) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
            Box::pin(async move {
                if self.hold {
                    cx.cancellation().cancelled().await;
                }
                Ok(ToolOutput::text("ok"))
            })
        }
    }

    /// A bare SSE endpoint that sends one event and then holds the stream open.
    pub(super) fn bare_hold() -> Router {
        Router::new().route(
            "/agui",
            post(|_body: axum::body::Bytes| async {
                let first = stream::iter([Ok::<_, std::convert::Infallible>(
                    Event::default()
                        .id("0")
                        .data(r#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#),
                )]);
                Sse::new(first.chain(stream::pending()))
            }),
        )
    }

    /// A bare SSE endpoint: the same number of events as a mux-web run, no agent behind it.
    pub(super) fn bare() -> Router {
        Router::new().route(
            "/agui",
            post(|_body: axum::body::Bytes| async {
                let events = (0..24).map(|i| {
                    let data = if i == 23 {
                        r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"success"},"result":"ok"}"#.to_owned()
                    } else {
                        format!(r#"{{"type":"CUSTOM","name":"n","value":{i}}}"#)
                    };
                    Ok::<_, std::convert::Infallible>(Event::default().id(i.to_string()).data(data))
                });
                Sse::new(stream::iter(events))
            }),
        )
    }
}

/// The database of `web-server mux-pg`.
const DATABASE_URL_VAR: &str = "MUX_BENCH_DATABASE_URL";
/// The lease of `web-server mux-pg`, in ms.
const LEASE_VAR: &str = "MUX_BENCH_LEASE_MS";

/// A server process, killed on drop.
pub(crate) struct Server(process::Server);

impl Server {
    pub(crate) fn own(kind: &str, pinned: bool) -> Result<Self, String> {
        Self::spawn(kind, pinned, &[])
    }

    /// `web-server mux-pg` on `database_url` with `lease`.
    pub(crate) fn durable(database_url: &str, lease: Duration) -> Result<Self, String> {
        let lease = lease.as_millis().to_string();
        Self::spawn(
            "mux-pg",
            false,
            &[(DATABASE_URL_VAR, database_url), (LEASE_VAR, &lease)],
        )
    }

    fn spawn(kind: &str, pinned: bool, env: &[(&str, &str)]) -> Result<Self, String> {
        let what = format!("the {kind} server");
        process::Server::own(&[WEB_SERVER_ARG, kind], env, pinned, &what).map(Self)
    }

    /// Kills the server at once (SIGKILL), as a crash would.
    pub(crate) fn kill(&mut self) {
        self.0.kill();
    }

    pub(crate) fn pydantic(python: &Path, script: &Path, pinned: bool) -> Result<Self, String> {
        process::Server::python(python, script, pinned, "pydantic-ai's server").map(Self)
    }

    /// Its process id.
    pub(crate) fn pid(&self) -> u32 {
        self.0.pid()
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/agui", self.0.port())
    }

    pub(crate) fn rss_mb(&self) -> Result<f64, String> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.0.pid()))
            .map_err(|e| e.to_string())?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map(|kb| kb / 1024.0)
            .ok_or_else(|| "no VmRSS".to_owned())
    }
}

fn body(n: usize, prompt: &str) -> String {
    format!(
        r#"{{"threadId":"bench-{n}-{nonce}","runId":"run-{n}-{nonce}","messages":[{{"id":"u{n}","role":"user","content":"{prompt}"}}],"tools":[],"context":[],"state":{{}},"forwardedProps":{{}}}}"#,
        nonce = std::process::id()
    )
}

/// One AG-UI run a round trip (thread numbers from `offset`), each checked for `RUN_FINISHED`
/// and "ok".
pub(crate) async fn load(
    url: &str,
    runs: usize,
    concurrency: usize,
    offset: usize,
) -> Result<Load, String> {
    load::posts(url, runs, concurrency, move |post, n| async move {
        let response = post
            .header("accept", "text/event-stream")
            .body(body(offset + n, "go"))
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let text = response.text().await.map_err(|e| e.to_string())?;
        if !(text.contains("RUN_FINISHED") && text.contains("ok")) {
            return Err(format!("run {n} did not finish with ok: {text}"));
        }
        Ok(())
    })
    .await
}

pub(crate) fn measure(
    rt: &tokio::runtime::Runtime,
    url: &str,
    runs: usize,
    c: usize,
) -> Result<Load, String> {
    rt.block_on(async {
        load(url, runs / 10, c, 10_000_000).await?;
        load(url, runs, c, c * 1_000_000).await
    })
}

/// The same load on each of `urls` in turns: after a warm-up of each, `ROUNDS` rounds in
/// which each server serves `runs / ROUNDS` runs, one server after the other. This machine's
/// speed drifts by up to a third within minutes; in turns, each server meets the same drift,
/// so their ratios hold. Each server gets its own thread ids (servers may share a database).
/// A server's p99 is that of its worst round.
pub(crate) fn measure_in_turns(
    rt: &tokio::runtime::Runtime,
    urls: &[String],
    runs: usize,
    c: usize,
) -> Result<Vec<Load>, String> {
    const ROUNDS: usize = 4;
    rt.block_on(async {
        let offset = |server: usize, round: usize| (1 + server * (ROUNDS + 1) + round) * 1_000_000;
        for (server, url) in urls.iter().enumerate() {
            load(url, runs / 10, c, offset(server, ROUNDS)).await?;
        }
        let mut seconds = vec![0.0; urls.len()];
        let mut p99 = vec![0.0_f64; urls.len()];
        for round in 0..ROUNDS {
            for (server, url) in urls.iter().enumerate() {
                let load = load(url, runs / ROUNDS, c, offset(server, round)).await?;
                seconds[server] += (runs / ROUNDS) as f64 / load.runs_per_s;
                p99[server] = p99[server].max(load.p99_ms);
            }
        }
        Ok(seconds
            .iter()
            .zip(p99)
            .map(|(s, p99_ms)| Load {
                runs_per_s: (runs / ROUNDS * ROUNDS) as f64 / s,
                p99_ms,
            })
            .collect())
    })
}

/// Concurrency 1 with the load client and each server pinned to CPU 0 (`taskset -c 0`), where
/// cross-core wake-ups no longer dominate.
fn pinned(rt: &tokio::runtime::Runtime, python: &Path, script: &Path) -> Result<Vec<Row>, String> {
    crate::mcp::pin_self("0")?;
    let measured = (|| {
        let mux = {
            let server = Server::own("mux", true)?;
            measure(rt, &server.url(), RUNS_C1, 1)?
        };
        let pydantic = {
            let server = Server::pydantic(python, script, true)?;
            measure(rt, &server.url(), RUNS_C1 / 4, 1)?
        };
        Ok::<_, String>((mux, pydantic))
    })();
    crate::mcp::pin_self("0-1")?;
    let (mux, pydantic) = measured?;
    println!(
        "web c=1 pinned: mux-web {:.0} runs/s p99 {:.2} ms; pydantic-ai {:.0} runs/s p99 {:.2} ms",
        mux.runs_per_s, mux.p99_ms, pydantic.runs_per_s, pydantic.p99_ms
    );
    Ok(vec![
        Row {
            name: "web: AG-UI run, concurrency 1, pinned to CPU 0 (runs/s)".into(),
            value: mux.runs_per_s,
            unit: "1/s",
            baseline: "pydantic-ai AGUIAdapter".into(),
            baseline_value: pydantic.runs_per_s,
        },
        Row {
            name: "web: AG-UI run p99, concurrency 1, pinned to CPU 0 (ms)".into(),
            value: mux.p99_ms,
            unit: "ms",
            baseline: "pydantic-ai AGUIAdapter".into(),
            baseline_value: pydantic.p99_ms,
        },
    ])
}

/// pydantic-ai's AG-UI server script.
pub(crate) fn pydantic_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/pydantic_agui_server.py")
}

/// The pydantic-ai venv, made on first use from the pinned requirements.
pub(crate) fn pydantic_python() -> Result<PathBuf, String> {
    process::venv_python(
        "target/bench-web-venv",
        "xtask/bench/python/requirements.txt",
        "pydantic-ai",
    )
}

/// Opens `IDLE_RUNS` runs that wait in a tool, reads their first event, and returns the
/// server's RSS with them open.
fn idle_rss(rt: &tokio::runtime::Runtime, server: &Server) -> Result<f64, String> {
    rt.block_on(async {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .build()
            .map_err(|e| e.to_string())?;
        let mut open = Vec::with_capacity(IDLE_RUNS);
        for chunk in (0..IDLE_RUNS).collect::<Vec<_>>().chunks(500) {
            let mut batch = Vec::new();
            for &n in chunk {
                let request = client
                    .post(server.url())
                    .header("content-type", "application/json")
                    .body(body(50_000_000 + n, "hold"))
                    .send();
                batch.push(request);
            }
            for response in futures::future::join_all(batch).await {
                let mut response = response.map_err(|e| e.to_string())?;
                response.chunk().await.map_err(|e| e.to_string())?;
                open.push(response);
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let rss = server.rss_mb();
        drop(open);
        rss
    })
}

pub(crate) fn run() -> Result<Vec<Row>, String> {
    let rt = load::runtime()?;
    let mut rows = Vec::new();
    // `BENCH_WEB=idle` measures only the memory of idle runs.
    let throughput = std::env::var("BENCH_WEB").map_or(true, |only| only != "idle");
    let python = if throughput {
        Some(pydantic_python()?)
    } else {
        None
    };
    let script = pydantic_script();
    for (c, runs) in [(1, RUNS_C1), (32, RUNS_C32)] {
        let Some(python) = &python else { break };
        let mux = {
            let server = Server::own("mux", false)?;
            measure(&rt, &server.url(), runs, c)?
        };
        let pydantic = {
            let server = Server::pydantic(python, &script, false)?;
            measure(&rt, &server.url(), runs / 4, c)?
        };
        let bare = {
            let server = Server::own("bare", false)?;
            measure(&rt, &server.url(), runs, c)?
        };
        println!(
            "web c={c}: mux-web {:.0} runs/s p99 {:.2} ms; pydantic-ai {:.0} runs/s p99 {:.2} ms; bare axum SSE {:.0} runs/s",
            mux.runs_per_s, mux.p99_ms, pydantic.runs_per_s, pydantic.p99_ms, bare.runs_per_s
        );
        rows.push(Row {
            name: format!("web: AG-UI run, concurrency {c} (runs/s)"),
            value: mux.runs_per_s,
            unit: "1/s",
            baseline: "pydantic-ai AGUIAdapter".into(),
            baseline_value: pydantic.runs_per_s,
        });
        rows.push(Row {
            name: format!("web: AG-UI run p99, concurrency {c} (ms)"),
            value: mux.p99_ms,
            unit: "ms",
            baseline: "pydantic-ai AGUIAdapter".into(),
            baseline_value: pydantic.p99_ms,
        });
        rows.push(Row {
            name: format!("web: load client ceiling, concurrency {c} (runs/s)"),
            value: bare.runs_per_s,
            unit: "1/s",
            baseline: "mux-web AG-UI run".into(),
            baseline_value: mux.runs_per_s,
        });
    }
    if let Some(python) = &python {
        rows.extend(pinned(&rt, python, &script)?);
    }
    let (open, idle) = {
        let server = Server::own("mux", false)?;
        let idle = server.rss_mb()?;
        (idle_rss(&rt, &server)?, idle)
    };
    let lean = {
        let server = Server::own("mux-lean", false)?;
        idle_rss(&rt, &server)?
    };
    let bare = {
        let server = Server::own("bare-hold", false)?;
        idle_rss(&rt, &server)?
    };
    println!(
        "web: RSS {open:.0} MB with {IDLE_RUNS} idle open runs ({idle:.0} MB idle; {lean:.0} MB without ask_user and with a 16-event channel); bare axum SSE streams {bare:.0} MB"
    );
    rows.push(Row {
        name: format!("web: RSS with {IDLE_RUNS} idle open SSE runs (MB)"),
        value: open,
        unit: "MB",
        baseline: "the same server with none".into(),
        baseline_value: idle,
    });
    rows.push(Row {
        name: format!("web: RSS with {IDLE_RUNS} idle open SSE runs (MB)"),
        value: open,
        unit: "MB",
        baseline: format!("{IDLE_RUNS} bare axum SSE streams"),
        baseline_value: bare,
    });
    rows.push(Row {
        name: format!("web: RSS with {IDLE_RUNS} idle runs, lean config (MB)"),
        value: lean,
        unit: "MB",
        baseline: format!("{IDLE_RUNS} bare axum SSE streams"),
        baseline_value: bare,
    });
    Ok(rows)
}

/// Starts `count` runs (thread numbers from `offset`) whose model calls `act`, 32 at a time,
/// and reads each to its end: an interrupt, the stream closed, the run paused.
pub(crate) async fn pause_runs(url: &str, count: usize, offset: usize) -> Result<(), String> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(32)
        .build()
        .map_err(|e| e.to_string())?;
    let numbers: Vec<usize> = (0..count).collect();
    for chunk in numbers.chunks(32) {
        let runs = chunk.iter().map(|&n| {
            let client = client.clone();
            async move {
                let request = client
                    .post(url)
                    .header("content-type", "application/json")
                    .body(body(offset + n, "pause"));
                let text = load::text(request).await?;
                if text.contains(r#""type":"interrupt""#) {
                    Ok(())
                } else {
                    Err(format!("run {n} did not pause on an interrupt: {text}"))
                }
            }
        });
        for result in futures::future::join_all(runs).await {
            result?;
        }
    }
    Ok(())
}

/// Starts a run whose tool waits until cancelled, reads until its tool call started, and
/// returns the run's id (the stream is dropped; the run goes on).
pub(crate) async fn start_holding_run(url: &str) -> Result<String, String> {
    let n = 90_000_000;
    let mut response = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .body(body(n, "hold"))
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let mut seen = String::new();
    while !seen.contains("TOOL_CALL_END") {
        let chunk = tokio::time::timeout(Duration::from_secs(10), response.chunk())
            .await
            .map_err(|_| format!("the holding run did not call its tool: {seen}"))?
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("the holding run ended: {seen}"))?;
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    Ok(format!("run-{n}-{}", std::process::id()))
}

/// The events of `run` replayed by `server` (from the store) until it is quiet for 500 ms;
/// the last SSE id seen.
pub(crate) async fn last_event_id(server: &Server, run: &str) -> Result<u64, String> {
    let events = format!(
        "http://127.0.0.1:{}/agui/runs/{run}/events",
        server.0.port()
    );
    let mut response = reqwest::Client::new()
        .get(&events)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    if !response.status().is_success() {
        return Err(format!("replaying {run}: {}", response.status()));
    }
    let mut text = String::new();
    while let Ok(chunk) = tokio::time::timeout(Duration::from_millis(500), response.chunk()).await {
        match chunk.map_err(|e| e.to_string())? {
            Some(chunk) => text.push_str(&String::from_utf8_lossy(&chunk)),
            None => break,
        }
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("id:"))
        .filter_map(|id| id.trim().parse().ok())
        .max()
        .ok_or_else(|| format!("no event of {run} was replayed: {text}"))
}

/// Follows `run` on `server` after `after` and returns when the first later event arrives.
pub(crate) async fn wait_for_event_after(
    server: &Server,
    run: &str,
    after: u64,
    timeout: Duration,
) -> Result<Instant, String> {
    let events = format!(
        "http://127.0.0.1:{}/agui/runs/{run}/events",
        server.0.port()
    );
    let deadline = Instant::now() + timeout;
    let client = reqwest::Client::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!(
                "no event of {run} after {after} within {timeout:?}"
            ));
        }
        let mut response = client
            .get(&events)
            .header("last-event-id", after.to_string())
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if !response.status().is_success() {
            return Err(format!("following {run}: {}", response.status()));
        }
        // The stream ends when the replaying process sees the run's lease lost and no owner;
        // then ask again.
        while let Ok(Ok(Some(chunk))) = tokio::time::timeout(left, response.chunk()).await {
            if String::from_utf8_lossy(&chunk)
                .lines()
                .any(|l| l.starts_with("id:"))
            {
                return Ok(Instant::now());
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
