//! Cancelling a run mid-stream and mid-tool leaves a consistent conversation, fast.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use futures::StreamExt;
use mux_llm::{BoxFuture, ContentBlock, EventStream, LlmClient, LlmError, Request, StreamEvent};
use mux_orchestrator::{
    Answer, LoopError, LoopEvent, LoopInput, LoopState, Orchestrator, OrchestratorConfig, Run,
    Subscription,
};
use serde_json::json;

#[tokio::test]
async fn cancel_mid_stream_ends_the_run_promptly() {
    let agent = loop_agent(Stalls, OrchestratorConfig::new("m")).conversation();
    let Run {
        mut events,
        input,
        handle,
    } = agent.run("go").unwrap();
    let mut seen = Vec::new();
    let mut cancelled_at = None;
    while let Some(event) = events.recv().await {
        if matches!(event, LoopEvent::TextDelta { .. }) {
            cancelled_at = Some(Instant::now());
            input.send(LoopInput::Cancel).await;
        }
        seen.push(event);
    }
    let outcome = handle.wait().await;
    assert!(matches!(outcome, Err(LoopError::Cancelled)));
    // A generous bound, so it cannot flake; the benchmark measures the real latency.
    let elapsed = cancelled_at.expect("a text delta arrived").elapsed();
    assert!(
        elapsed < Duration::from_secs(1),
        "cancelled after {elapsed:?}"
    );
    let labels = labels(&seen);
    assert_eq!(
        labels[labels.len() - 2..],
        ["state cancelled", "error cancelled"]
    );
    // The prompt stays; no half-streamed assistant message is recorded.
    assert_eq!(agent.messages().len(), 1);
}

#[tokio::test]
async fn cancel_mid_tool_answers_every_tool_use() {
    let model = scripted().reply(tool_calls(&[
        ("c1", "sleep", json!({"ms": 60_000})),
        ("c2", "sleep", json!({"ms": 60_000})),
    ]));
    let agent = orchestrator(model);
    let Run {
        mut events,
        input: _input,
        handle,
    } = agent.run("go").unwrap();
    let cancel = handle.cancellation().clone();
    let mut executing = 0;
    let mut seen = Vec::new();
    while let Some(event) = events.recv().await {
        if matches!(event, LoopEvent::ToolOutputDelta { .. }) {
            executing += 1;
            if executing == 2 {
                cancel.cancel();
            }
        }
        seen.push(event);
    }
    assert!(matches!(handle.wait().await, Err(LoopError::Cancelled)));
    let messages = agent.messages();
    let results: Vec<(String, bool)> = messages
        .last()
        .unwrap()
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolResult {
                tool_use_id,
                is_error,
                ..
            } => Some((tool_use_id.clone(), *is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(results, [("c1".to_owned(), true), ("c2".to_owned(), true)]);
    assert!(seen.iter().any(|e| matches!(
        e,
        LoopEvent::StateChanged {
            to: LoopState::Cancelled,
            ..
        }
    )));
}

#[tokio::test]
async fn cancelling_the_orchestrator_token_cancels_its_runs() {
    let token = tokio_util::sync::CancellationToken::new();
    let agent = loop_agent(Stalls, OrchestratorConfig::new("m"))
        .open()
        .cancellation(token.clone())
        .build();
    let run = agent.run("go").unwrap();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        token.cancel();
    });
    let (_, outcome) = drain(run).await;
    assert!(matches!(outcome, Err(LoopError::Cancelled)));
}

/// A model whose stream never waits: text deltas without end.
struct Floods;

impl LlmClient for Floods {
    fn provider(&self) -> &str {
        "floods"
    }
    fn stream(&self, _request: Request) -> BoxFuture<'_, Result<EventStream, LlmError>> {
        Box::pin(async {
            let start = futures::stream::iter(text_block_start());
            let deltas = futures::stream::repeat_with(|| {
                Ok(StreamEvent::TextDelta {
                    index: 0,
                    text: "x".into(),
                })
            });
            let stream: EventStream = Box::pin(start.chain(deltas));
            Ok(stream)
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_stream_that_never_waits_is_still_cancelled() {
    let agent = loop_agent(Floods, OrchestratorConfig::new("m")).conversation();
    // With a face reading.
    let Run {
        mut events,
        input: _input,
        handle,
    } = agent.run("go").unwrap();
    while !matches!(events.recv().await, Some(LoopEvent::TextDelta { .. })) {}
    handle.cancel();
    let outcome = tokio::time::timeout(Duration::from_secs(5), handle.wait())
        .await
        .expect("a stream that never waits kept the run alive");
    assert!(matches!(outcome, Err(LoopError::Cancelled)));
    // And without one: the loop takes events in a tight loop, and still sees the cancel.
    let cancel = tokio_util::sync::CancellationToken::new();
    let quiet = loop_agent(Floods, OrchestratorConfig::new("m"))
        .open()
        .cancellation(cancel.clone())
        .build();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        cancel.cancel();
    });
    let outcome = tokio::time::timeout(Duration::from_secs(5), quiet.run_to_completion("go"))
        .await
        .expect("a face-less run on a stream that never waits ignored the cancel");
    assert!(matches!(outcome, Err(LoopError::Cancelled)), "{outcome:?}");
    canceller.await.unwrap();
}

/// A run of [`Stalls`] whose face has room for one event and has stopped reading, with a
/// subscription that has seen its text delta. Subscribers get each event before the
/// receiver: once the delta is out, the loop is waiting for room in the receiver nobody
/// reads. The conversation is returned too, so that it lives as long as the test.
async fn a_face_that_stopped_reading() -> (Orchestrator, Subscription, Run) {
    let mut config = OrchestratorConfig::new("m");
    config.event_capacity = 1;
    let agent = loop_agent(Stalls, config).conversation();
    let mut subscription = agent.subscribe();
    let run = agent.run("go").unwrap();
    while !matches!(subscription.recv().await, Some(LoopEvent::TextDelta { .. })) {}
    (agent, subscription, run)
}

#[tokio::test]
async fn a_cancel_input_is_not_held_up_by_inputs_waiting_for_a_face_that_stopped_reading() {
    let (_agent, mut subscription, run) = a_face_that_stopped_reading().await;
    let Run {
        mut events,
        input,
        handle,
    } = run;
    // An answer nobody asked for: its rejection waits for room in the full receiver, and so
    // does the input router that emits it.
    let stray = LoopInput::ToolApproval {
        call_id: "nobody".into(),
        answer: Answer::AllowOnce,
    };
    assert!(input.send(stray).await);
    while !matches!(
        subscription.recv().await,
        Some(LoopEvent::InputRejected { .. })
    ) {}
    assert!(input.send(LoopInput::Cancel).await);
    let outcome = tokio::time::timeout(Duration::from_secs(1), handle.wait())
        .await
        .expect("the cancel input ended the run although the router was waiting");
    assert!(matches!(outcome, Err(LoopError::Cancelled)));
    // The rejection was not lost either.
    let seen = rest(&mut events).await;
    assert!(
        seen.iter().any(
            |e| matches!(e, LoopEvent::InputRejected { message } if message.contains("nobody"))
        ),
        "{seen:?}"
    );
}

#[tokio::test]
async fn a_face_that_stops_reading_cannot_keep_a_cancelled_run_alive() {
    let (_agent, _subscription, run) = a_face_that_stopped_reading().await;
    let Run {
        mut events,
        input: _input,
        handle,
    } = run;
    handle.cancel();
    let outcome = tokio::time::timeout(Duration::from_secs(1), handle.wait())
        .await
        .expect("the run ended although the face never read");
    assert!(matches!(outcome, Err(LoopError::Cancelled)));
    // Nothing was dropped: the face reads every event, in order, when it comes back.
    let seen = rest(&mut events).await;
    assert_eq!(
        labels(&seen),
        [
            "state streaming",
            "text \"working\"",
            "state cancelled",
            "error cancelled"
        ]
    );
}
