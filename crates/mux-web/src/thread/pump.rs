//! The pump: the task that reads a loop's events until it ends, translates them, writes them
//! to the attached run, raises interrupts for the loop's questions, and ends the run when the
//! loop finishes, fails or is cancelled.

use std::sync::Arc;

use mux_orchestrator::{EventReceiver, LoopEvent, LoopInput};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::state::{LiveLoop, Prefill, Thread, Waits};
use crate::translate::{Signal, token_usage};
use crate::types::{Event, Outcome, approval_response_schema, network_approval_response_schema};

/// How a loop ended.
enum Ending {
    Finished { text: String, usage: mux_llm::Usage },
    Cancelled,
    Failed { kind: String, message: String },
}

impl Thread {
    /// Installs a new loop and starts its pump.
    pub(crate) fn start_loop(self: &Arc<Self>, live: LiveLoop, events: EventReceiver) {
        {
            let mut state = self.state();
            state.live = Some(live);
            state.evicted = false;
        }
        let thread = Arc::clone(self);
        tokio::spawn(async move { thread.pump(events).await });
    }

    /// Reads the loop's events until it ends.
    async fn pump(self: Arc<Self>, mut events: EventReceiver) {
        loop {
            let (pause_at, expire_at) = self.timers();
            let event = tokio::select! {
                event = events.recv() => event,
                () = self.wake.notified() => continue,
                () = sleep_until(pause_at), if pause_at.is_some() => {
                    if self.pause() {
                        // Evicted: the store holds the pause; a resume rebuilds the loop.
                        return;
                    }
                    continue;
                }
                () = sleep_until(expire_at), if expire_at.is_some() => {
                    self.expire().await;
                    continue;
                }
            };
            let Some(event) = event else {
                self.end(Ending::Failed {
                    kind: "loop_ended".into(),
                    message: "the loop ended without a final event".into(),
                });
                return;
            };
            let (out, signal) = {
                let mut state = self.state();
                match state.live.as_mut() {
                    Some(live) => {
                        match &event {
                            LoopEvent::ToolCallArguments { call_id, .. } => {
                                live.open_calls.insert(call_id.clone());
                            }
                            LoopEvent::ToolResult { call_id, .. } => {
                                live.open_calls.remove(call_id);
                            }
                            _ => {}
                        }
                        live.translator.translate(event)
                    }
                    None => return,
                }
            };
            self.emit(out);
            match signal {
                Signal::None => {}
                Signal::Approval {
                    call_id,
                    name,
                    input,
                    reason,
                } => {
                    // A walled command's network destination: the question is the reason.
                    let (message, schema) = if name == mux_orchestrator::NETWORK_APPROVAL {
                        let question = reason.strip_prefix("allow ").unwrap_or(&reason);
                        (
                            format!("Allow {question}"),
                            network_approval_response_schema(),
                        )
                    } else {
                        (
                            format!("Allow `{name}` with {input}? ({reason})"),
                            approval_response_schema(),
                        )
                    };
                    self.interrupt(call_id, Waits::Approval, message, schema);
                }
                Signal::Question { call_id, question } => {
                    if let Some(Prefill::Answer(text)) = self.take_prefill(&call_id) {
                        // Answered while the loop was evicted: the rebuilt loop asked again.
                        let input = self.state().live.as_ref().map(|l| l.input.clone());
                        if let Some(input) = input {
                            input.send(LoopInput::UserResponse { call_id, text }).await;
                        }
                        continue;
                    }
                    let schema = json!({"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]});
                    self.interrupt(call_id, Waits::Answer, question, schema);
                }
                Signal::Finished { text, usage } => {
                    return self.end(Ending::Finished { text, usage });
                }
                Signal::Cancelled => return self.end(Ending::Cancelled),
                Signal::Failed { kind, message } => {
                    return self.end(Ending::Failed { kind, message });
                }
            }
        }
    }

    /// When to end the attached run on pending calls, and when the next one expires.
    fn timers(&self) -> (Option<Instant>, Option<Instant>) {
        let state = self.state();
        let Some(live) = state.live.as_ref() else {
            return (None, None);
        };
        let attached = state.current.as_ref().is_some_and(|run| !run.is_done());
        let unannounced = live.interrupts.values().any(|p| !p.announced)
            || live.frontend.values().any(|f| !f.announced);
        let pause = (attached && unannounced).then(|| Instant::now() + self.grace);
        let expire = live.interrupts.values().map(|p| p.deadline).min();
        (pause, expire)
    }

    /// Forgets the loop and ends the attached run as the loop ended.
    fn end(&self, ending: Ending) {
        let mut state = self.state();
        state.last_active = Some(Instant::now());
        let live = state.live.take();
        if let Some(todos) = live.as_ref().and_then(|l| l.translator.todos()) {
            state.todos = Some(todos.clone());
        }
        let Some(run) = state.current.take() else {
            return;
        };
        if run.is_done() {
            return;
        }
        let event = match ending {
            Ending::Finished { text, usage } => Event::RunFinished {
                thread_id: run.thread_id.clone(),
                run_id: run.run_id.clone(),
                result: Some(Value::String(text)),
                outcome: Outcome::Success {
                    pending_tool_call_ids: Vec::new(),
                },
                usage: live
                    .as_ref()
                    .map(|l| vec![token_usage(&usage, &l.model)])
                    .unwrap_or_default(),
            },
            Ending::Cancelled => Event::RunFinished {
                thread_id: run.thread_id.clone(),
                run_id: run.run_id.clone(),
                result: None,
                outcome: Outcome::Cancelled,
                usage: Vec::new(),
            },
            Ending::Failed { kind, message } => Event::RunError {
                message,
                code: Some(kind),
            },
        };
        run.push([event]);
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => futures::future::pending().await,
    }
}
