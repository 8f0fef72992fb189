//! The loop's own cost: per turn against calling the model and the tool directly; memory of
//! idle sessions; event fan-out; cancellation latency; appending to a file session.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mux_llm::{
    BlockStart, BoxFuture, ContentBlock, EventStream, LlmClient, LlmError, Message, Request, Role,
    StreamEvent, Usage,
};
use mux_orchestrator::{Agent, LoopEvent, Orchestrator, OrchestratorConfig};
use mux_tool::{Tool, ToolAnnotations, ToolContext, ToolError, ToolOutput, Typed, TypedTool};
use serde_json::json;
use tokio::runtime::Runtime;

use crate::harness::{Row, per_iter};

/// A model that answers instantly: a tool call after a prompt, text after a tool result.
/// With `deltas`, the text answer streams that many one-word deltas.
pub(crate) struct InstantModel {
    pub(crate) deltas: usize,
}

impl InstantModel {
    fn events(&self, request: &Request) -> Vec<Result<StreamEvent, LlmError>> {
        let after_tool = request.messages.last().is_some_and(|m| {
            m.content
                .iter()
                .any(|b| matches!(b, ContentBlock::ToolResult { .. }))
        });
        let mut events = vec![Ok(StreamEvent::MessageStart {
            id: None,
            model: None,
            usage: Usage::default(),
        })];
        if after_tool || self.deltas > 0 {
            events.push(Ok(StreamEvent::BlockStart {
                index: 0,
                block: BlockStart::Text,
            }));
            for _ in 0..self.deltas.max(1) {
                events.push(Ok(StreamEvent::TextDelta {
                    index: 0,
                    text: "ok ".into(),
                }));
            }
            events.push(Ok(StreamEvent::BlockStop { index: 0 }));
            events.push(Ok(StreamEvent::MessageDelta {
                stop_reason: Some(mux_llm::StopReason::EndTurn),
                stop_sequence: None,
                usage: None,
            }));
        } else {
            events.push(Ok(StreamEvent::BlockStart {
                index: 0,
                block: BlockStart::ToolUse {
                    id: "call_1".into(),
                    name: "noop".into(),
                },
            }));
            events.push(Ok(StreamEvent::ToolInputDelta {
                index: 0,
                partial_json: r#"{"n":1}"#.into(),
            }));
            events.push(Ok(StreamEvent::BlockStop { index: 0 }));
            events.push(Ok(StreamEvent::MessageDelta {
                stop_reason: Some(mux_llm::StopReason::ToolUse),
                stop_sequence: None,
                usage: None,
            }));
        }
        events.push(Ok(StreamEvent::MessageStop));
        events
    }
}

impl LlmClient for InstantModel {
    fn provider(&self) -> &str {
        "instant"
    }
    fn stream(&self, request: Request) -> BoxFuture<'_, Result<EventStream, LlmError>> {
        let events = self.events(&request);
        Box::pin(async move {
            let stream: EventStream = Box::pin(futures::stream::iter(events));
            Ok(stream)
        })
    }
}

/// A model whose stream never ends, to measure cancellation.
struct Stalled;

impl LlmClient for Stalled {
    fn provider(&self) -> &str {
        "stalled"
    }
    fn stream(&self, _request: Request) -> BoxFuture<'_, Result<EventStream, LlmError>> {
        Box::pin(async {
            let stream: EventStream = Box::pin(futures::stream::pending());
            Ok(stream)
        })
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct NoopArgs {
    #[allow(dead_code)]
    n: u32,
}

pub(crate) struct Noop;

impl TypedTool for Noop {
    type Args = NoopArgs;
    const NAME: &'static str = "noop";
    fn description(&self) -> String {
        "Does nothing".into()
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only()
    }
    async fn call(&self, _: NoopArgs, _: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("ok"))
    }
}

pub(crate) fn runtime() -> Result<Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
}

pub(crate) fn agent(client: Arc<dyn LlmClient>) -> Result<Orchestrator, String> {
    let agent = Agent::builder_shared(client, "instant")
        .ask_user(false)
        .tool(Noop)
        .build()
        .map_err(|e| e.to_string())?;
    Ok(agent.orchestrator().clone())
}

/// µs per turn: a two-turn run (tool call, then answer) through the loop, against the same
/// two model calls and one tool call made directly. The loop runs twice: in the calling task
/// (`run_to_completion`), and spawned with every event delivered to a receiver (`run`).
fn per_turn(rt: &Runtime) -> Result<Vec<Row>, String> {
    const SAMPLES: usize = 9;
    const RUNS: u32 = 2_000;
    let model: Arc<dyn LlmClient> = Arc::new(InstantModel { deltas: 0 });
    let prototype = agent(Arc::clone(&model))?;
    let through_loop = per_iter(SAMPLES, RUNS, |runs| {
        rt.block_on(async {
            for _ in 0..runs {
                // A fresh conversation per run, so every run is the same two turns.
                let agent = prototype.new_session();
                let summary = agent.run_to_completion("go").await;
                assert!(summary.is_ok_and(|s| s.iterations == 2));
            }
        });
    });
    let receive_all = |prototype: Orchestrator, runs: u32| async move {
        for _ in 0..runs {
            let agent = prototype.new_session();
            let Ok(mut run) = agent.run("go") else { return };
            while run.events.recv().await.is_some() {}
            assert!(run.handle.wait().await.is_ok_and(|s| s.iterations == 2));
        }
    };
    // From `block_on`, every event crosses from a worker to the calling thread.
    let with_receiver = per_iter(SAMPLES, RUNS, |runs| {
        rt.block_on(receive_all(prototype.clone(), runs));
    });
    // In a runtime task, as a server reading the events would.
    let with_receiver_in_task = per_iter(SAMPLES, RUNS, |runs| {
        let task = rt.spawn(receive_all(prototype.clone(), runs));
        assert!(rt.block_on(task).is_ok());
    });
    let tool = Typed::new(Noop).map_err(|e| e.to_string())?;
    let direct = per_iter(SAMPLES, RUNS, |runs| {
        rt.block_on(async {
            for _ in 0..runs {
                let mut request = Request::new("instant", 4_096).user("go");
                let first = model.complete(request.clone()).await;
                let Ok(first) = first else { return };
                Arc::make_mut(&mut request.messages).push(first.to_message());
                let output = tool.call(json!({"n": 1}), ToolContext::new("call_1")).await;
                let text = output.map(|o| o.to_text()).unwrap_or_default();
                Arc::make_mut(&mut request.messages).push(Message::new(
                    Role::User,
                    vec![ContentBlock::tool_result("call_1", text, false)],
                ));
                let second = model.complete(request).await;
                assert!(second.is_ok());
            }
        });
    });
    let per_turn = |d: Duration| d.as_secs_f64() * 1e6 / 2.0;
    Ok(vec![
        Row {
            name: "loop per turn, run_to_completion (instant model)".into(),
            value: per_turn(through_loop),
            unit: "µs",
            baseline: "model + tool called directly".into(),
            baseline_value: per_turn(direct),
        },
        Row {
            name: "loop per turn, run() + event receiver, from block_on".into(),
            value: per_turn(with_receiver),
            unit: "µs",
            baseline: "model + tool called directly".into(),
            baseline_value: per_turn(direct),
        },
        Row {
            name: "loop per turn, run() + event receiver, in a runtime task".into(),
            value: per_turn(with_receiver_in_task),
            unit: "µs",
            baseline: "model + tool called directly".into(),
            baseline_value: per_turn(direct),
        },
    ])
}

/// RSS of 10,000 idle conversations of 10 messages each, against the same messages held in
/// plain vectors.
fn idle_sessions(rt: &Runtime) -> Result<Row, String> {
    const SESSIONS: usize = 10_000;
    let messages: Vec<Message> = (0..10)
        .map(|i| {
            if i % 2 == 0 {
                Message::user(format!("question {i}: what changed in the parser?"))
            } else {
                Message::assistant(format!("answer {i}: the tokenizer now keeps spans"))
            }
        })
        .collect();
    let model: Arc<dyn LlmClient> = Arc::new(InstantModel { deltas: 0 });
    let prototype = agent(model)?;
    // Measure the sessions first and keep them: nothing is freed before the second
    // measurement, so the allocator cannot hand freed memory from one to the other.
    let before = rss_kib();
    let sessions: Vec<Orchestrator> = (0..SESSIONS)
        .map(|_| prototype.new_session_from(messages.clone()))
        .collect();
    let sessions_kib = rss_kib().saturating_sub(before);
    let before = rss_kib();
    let plain: Vec<Vec<Message>> = (0..SESSIONS).map(|_| messages.clone()).collect();
    let plain_kib = rss_kib().saturating_sub(before);
    assert_eq!(sessions.len(), plain.len());
    let _ = rt;
    Ok(Row {
        name: "10,000 idle sessions x 10 messages, RSS".into(),
        value: sessions_kib as f64 / 1024.0,
        unit: "MiB",
        baseline: "the same messages in Vec<Vec<Message>>".into(),
        baseline_value: plain_kib as f64 / 1024.0,
    })
}

pub(crate) fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// 1M text deltas through a run to its receiver and 4 subscribers; none may be lost. Against
/// a bare tokio broadcast of 1M events to 4 receivers.
fn fan_out(rt: &Runtime) -> Result<Row, String> {
    const EVENTS: usize = 1_000_000;
    const SUBSCRIBERS: usize = 4;
    let model: Arc<dyn LlmClient> = Arc::new(InstantModel { deltas: EVENTS });
    let agent = Agent::builder_shared(model, "instant")
        .ask_user(false)
        .configure(|config| OrchestratorConfig {
            broadcast_capacity: 65_536,
            ..config
        })
        .build()
        .map_err(|e| e.to_string())?;
    let agent = agent.orchestrator();
    let started = Instant::now();
    let counts = rt.block_on(async {
        let subscribers: Vec<_> = (0..SUBSCRIBERS)
            .map(|_| {
                let mut subscription = agent.subscribe();
                tokio::spawn(async move {
                    let (mut deltas, mut lagged) = (0usize, 0u64);
                    while let Some(event) = subscription.recv().await {
                        match event {
                            LoopEvent::TextDelta { .. } => deltas += 1,
                            LoopEvent::Lagged { missed } => lagged += missed,
                            LoopEvent::Finished { .. } | LoopEvent::Error { .. } => break,
                            _ => {}
                        }
                    }
                    (deltas, lagged)
                })
            })
            .collect();
        let Ok(mut run) = agent.run("stream") else {
            return Vec::new();
        };
        let mut primary = 0usize;
        while let Some(event) = run.events.recv().await {
            if matches!(event, LoopEvent::TextDelta { .. }) {
                primary += 1;
            }
        }
        let mut counts = vec![(primary, 0u64)];
        for subscriber in subscribers {
            counts.push(subscriber.await.unwrap_or_default());
        }
        counts
    });
    let elapsed = started.elapsed();
    for (i, (deltas, lagged)) in counts.iter().enumerate() {
        if *deltas != EVENTS || *lagged != 0 {
            return Err(format!(
                "receiver {i} got {deltas} of {EVENTS} events ({lagged} reported lagged)"
            ));
        }
    }
    let baseline = rt.block_on(async {
        let (tx, _) = tokio::sync::broadcast::channel::<LoopEvent>(65_536);
        let receivers: Vec<_> = (0..SUBSCRIBERS)
            .map(|_| {
                let mut rx = tx.subscribe();
                tokio::spawn(async move {
                    let mut n = 0usize;
                    while let Ok(event) = rx.recv().await {
                        if matches!(event, LoopEvent::Finished { .. }) {
                            break;
                        }
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        let start = Instant::now();
        for _ in 0..EVENTS {
            while tx.len() >= 60_000 {
                tokio::task::yield_now().await;
            }
            let _ = tx.send(LoopEvent::TextDelta { text: "ok ".into() });
        }
        let _ = tx.send(LoopEvent::Finished {
            text: String::new(),
            iterations: 0,
            usage: Usage::default(),
            limit: None,
        });
        for receiver in receivers {
            let _ = receiver.await;
        }
        start.elapsed()
    });
    Ok(Row {
        name: "1M events to a receiver + 4 subscribers, none lost".into(),
        value: EVENTS as f64 / elapsed.as_secs_f64() / 1e6,
        unit: "M ev/s",
        baseline: "bare tokio broadcast to 4 receivers".into(),
        baseline_value: EVENTS as f64 / baseline.as_secs_f64() / 1e6,
    })
}

/// p99 time from cancel to the run's end, mid-stream, against a bare task cancelled through the
/// same kind of token.
fn cancellation(rt: &Runtime) -> Result<Vec<Row>, String> {
    const TRIALS: usize = 500;
    let prototype = agent(Arc::new(Stalled))?;
    let mut through_loop = Vec::with_capacity(TRIALS);
    let mut bare = Vec::with_capacity(TRIALS);
    rt.block_on(async {
        for _ in 0..TRIALS {
            let agent = prototype.new_session();
            let Ok(mut run) = agent.run("wait") else {
                continue;
            };
            // Wait until the model is streaming, then cancel.
            while let Some(event) = run.events.recv().await {
                if matches!(
                    event,
                    LoopEvent::StateChanged {
                        to: mux_orchestrator::LoopState::Streaming,
                        ..
                    }
                ) {
                    break;
                }
            }
            tokio::time::sleep(Duration::from_micros(200)).await;
            let drain = tokio::spawn(async move { while run.events.recv().await.is_some() {} });
            let start = Instant::now();
            run.handle.cancel();
            let _ = run.handle.wait().await;
            through_loop.push(start.elapsed());
            let _ = drain.await;

            let token = tokio_util::sync::CancellationToken::new();
            let child = token.clone();
            let task = tokio::spawn(async move { child.cancelled().await });
            tokio::time::sleep(Duration::from_micros(200)).await;
            let start = Instant::now();
            token.cancel();
            let _ = task.await;
            bare.push(start.elapsed());
        }
    });
    let p = |samples: &mut Vec<Duration>, q: f64| {
        samples.sort();
        samples
            .get(((samples.len() as f64 * q) as usize).min(samples.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    let (loop_p50, loop_p99) = (p(&mut through_loop, 0.5), p(&mut through_loop, 0.99));
    let (bare_p50, bare_p99) = (p(&mut bare, 0.5), p(&mut bare, 0.99));
    Ok(vec![
        Row {
            name: "cancel mid-stream to run end, p50".into(),
            value: loop_p50.as_secs_f64() * 1e6,
            unit: "µs",
            baseline: "bare task cancelled by token, p50".into(),
            baseline_value: bare_p50.as_secs_f64() * 1e6,
        },
        Row {
            name: "cancel mid-stream to run end, p99".into(),
            value: loop_p99.as_secs_f64() * 1e6,
            unit: "µs",
            baseline: "bare task cancelled by token, p99".into(),
            baseline_value: bare_p99.as_secs_f64() * 1e6,
        },
    ])
}

/// One message appended to a file session's history (no fsync), against the plain async
/// way to append the same serialized line: `tokio::fs` open in append mode and one write.
fn session_append(rt: &Runtime) -> Result<Row, String> {
    use mux_orchestrator::session::{FileSessionStore, HistoryRecord, SessionMeta, SessionStore};
    use tokio::io::AsyncWriteExt;

    const APPENDS: u32 = 2_000;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let store = FileSessionStore::new(dir.path().join("sessions"));
    let meta = SessionMeta::new();
    let record = [HistoryRecord::Message {
        message: Message::user("question: what changed in the parser?"),
    }];
    let mut line = serde_json::to_vec(&record[0]).map_err(|e| e.to_string())?;
    line.push(b'\n');
    let plain = dir.path().join("plain.jsonl");
    rt.block_on(store.create(&meta))
        .map_err(|e| e.to_string())?;
    let mut failure = None;
    let mux = per_iter(5, APPENDS, |n| {
        rt.block_on(async {
            for _ in 0..n {
                if let Err(err) = store.append(&meta.id, &record).await {
                    failure.get_or_insert(err.to_string());
                }
            }
        })
    });
    let bare = per_iter(5, APPENDS, |n| {
        rt.block_on(async {
            for _ in 0..n {
                let appended = async {
                    let mut file = tokio::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(&plain)
                        .await?;
                    file.write_all(&line).await?;
                    file.flush().await
                };
                if let Err(err) = appended.await {
                    failure.get_or_insert(err.to_string());
                }
            }
        })
    });
    if let Some(err) = failure {
        return Err(format!("session append failed: {err}"));
    }
    Ok(Row {
        name: "file session append, 1 message".into(),
        value: mux.as_secs_f64() * 1e6,
        unit: "µs",
        baseline: "tokio::fs append of the same line".into(),
        baseline_value: bare.as_secs_f64() * 1e6,
    })
}

pub(crate) fn run() -> Result<Vec<Row>, String> {
    let rt = runtime()?;
    let mut rows = per_turn(&rt)?;
    rows.extend([idle_sessions(&rt)?, fan_out(&rt)?, session_append(&rt)?]);
    rows.extend(cancellation(&rt)?);
    Ok(rows)
}
