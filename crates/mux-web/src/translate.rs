//! LoopEvent → AG-UI events: the whole adapter, one stateful translator per loop run.
//!
//! The translator keeps AG-UI's nesting valid: a text message, a reasoning span and a step are
//! closed before anything that cannot sit inside them, and [`Translator::detach`] closes them
//! all when a run pauses, so the `RUN_FINISHED` that ends the AG-UI run is well formed.
//! [`Translator::attach`] reopens the step in the run that continues.
//!
//! Tools are shown from what they say about themselves, never from their names: the kind in
//! their annotations (`mux.tool_kind`), the locations and diffs of their output's
//! presentation (`mux.tool_presentation`), and its todo list (the `todos` state).

use mux_llm::Usage;
use mux_orchestrator::{LoopEvent, LoopState};
use mux_tool::{Registry, ToolOutput};
use serde_json::{Value, json};

use crate::types::{Event, TokenUsage};

/// The name of the shared state key that holds the todo list.
pub(crate) const TODOS: &str = "todos";

/// What the pump must do besides forwarding events.
#[derive(Debug, PartialEq)]
pub(crate) enum Signal {
    /// Nothing special.
    None,
    /// A call waits for approval.
    Approval {
        call_id: String,
        name: String,
        input: Value,
        reason: String,
    },
    /// `ask_user` waits for an answer.
    Question { call_id: String, question: String },
    /// The loop finished; `text` is its answer.
    Finished { text: String, usage: Usage },
    /// The loop was cancelled.
    Cancelled,
    /// The loop failed.
    Failed { kind: String, message: String },
}

/// Translates one loop run's events.
#[derive(Debug)]
pub(crate) struct Translator {
    prefix: String,
    counter: u64,
    turn: u32,
    step: Option<String>,
    in_turn: bool,
    text: Option<String>,
    reasoning: Option<String>,
    assistant: Option<String>,
    started_calls: Vec<String>,
    todos: Option<Value>,
    tools: Registry,
}

impl Translator {
    /// A translator whose message ids start with `prefix`, continuing the todo state `todos`,
    /// whose calls' kinds come from `tools`.
    pub(crate) fn new(prefix: impl Into<String>, todos: Option<Value>, tools: Registry) -> Self {
        Self {
            prefix: prefix.into(),
            counter: 0,
            turn: 0,
            step: None,
            in_turn: false,
            text: None,
            reasoning: None,
            assistant: None,
            started_calls: Vec::new(),
            todos,
            tools,
        }
    }

    fn next_id(&mut self, kind: &str) -> String {
        self.counter += 1;
        format!("{}-{kind}{}", self.prefix, self.counter)
    }

    /// The assistant message of the current turn (tool calls hang under it).
    fn assistant_id(&mut self) -> String {
        if let Some(id) = &self.assistant {
            return id.clone();
        }
        let id = self.next_id("a");
        self.assistant = Some(id.clone());
        id
    }

    fn close_text(&mut self, out: &mut Vec<Event>) {
        if let Some(message_id) = self.text.take() {
            out.push(Event::TextMessageEnd { message_id });
        }
    }

    fn close_reasoning(&mut self, out: &mut Vec<Event>) {
        if let Some(message_id) = self.reasoning.take() {
            out.push(Event::ReasoningMessageEnd {
                message_id: message_id.clone(),
            });
            out.push(Event::ReasoningEnd { message_id });
        }
    }

    fn open_step(&mut self, out: &mut Vec<Event>) {
        if self.step.is_none() {
            let step_name = format!("turn {}", self.turn + 1);
            self.step = Some(step_name.clone());
            out.push(Event::StepStarted { step_name });
        }
    }

    fn close_step(&mut self, out: &mut Vec<Event>) {
        if let Some(step_name) = self.step.take() {
            out.push(Event::StepFinished { step_name });
        }
    }

    /// Closes everything open, for a run that ends here (paused, finished or failed).
    pub(crate) fn detach(&mut self) -> Vec<Event> {
        let mut out = Vec::new();
        self.close_text(&mut out);
        self.close_reasoning(&mut out);
        self.close_step(&mut out);
        out
    }

    /// Reopens the step of a turn in progress, for a run that continues this loop.
    pub(crate) fn attach(&mut self) -> Vec<Event> {
        let mut out = Vec::new();
        if self.in_turn {
            self.open_step(&mut out);
        }
        out
    }

    /// The current todo list state, if the model wrote one.
    pub(crate) fn todos(&self) -> Option<&Value> {
        self.todos.as_ref()
    }

    /// Translates one event; the signal tells the pump about pauses and endings.
    pub(crate) fn translate(&mut self, event: LoopEvent) -> (Vec<Event>, Signal) {
        let mut out = Vec::new();
        let signal = self.translate_into(event, &mut out);
        (out, signal)
    }

    fn translate_into(&mut self, event: LoopEvent, out: &mut Vec<Event>) -> Signal {
        match event {
            LoopEvent::StateChanged { from, to } => {
                if to == LoopState::Streaming && !self.in_turn {
                    self.in_turn = true;
                    self.assistant = None;
                    self.open_step(out);
                }
                out.push(custom("state_changed", json!({"from": from, "to": to})));
            }
            LoopEvent::TextDelta { text } => {
                self.close_reasoning(out);
                if !text.is_empty() {
                    self.open_step(out);
                    let message_id = match &self.text {
                        Some(id) => id.clone(),
                        None => {
                            let id = self.assistant_id();
                            out.push(Event::TextMessageStart {
                                message_id: id.clone(),
                                role: "assistant".into(),
                            });
                            self.text = Some(id.clone());
                            id
                        }
                    };
                    out.push(Event::TextMessageContent {
                        message_id,
                        delta: text,
                    });
                }
            }
            LoopEvent::ThinkingDelta { thinking } => {
                self.close_text(out);
                if !thinking.is_empty() {
                    self.open_step(out);
                    let message_id = match &self.reasoning {
                        Some(id) => id.clone(),
                        None => {
                            let id = self.next_id("r");
                            out.push(Event::ReasoningStart {
                                message_id: id.clone(),
                            });
                            out.push(Event::ReasoningMessageStart {
                                message_id: id.clone(),
                                role: "reasoning".into(),
                            });
                            self.reasoning = Some(id.clone());
                            id
                        }
                    };
                    out.push(Event::ReasoningMessageContent {
                        message_id,
                        delta: thinking,
                    });
                }
            }
            LoopEvent::ToolCallStarted { call_id, name } => {
                self.start_call(call_id, name, out);
            }
            LoopEvent::ToolCallArguments {
                call_id,
                name,
                input,
            } => {
                if !self.started_calls.contains(&call_id) {
                    self.start_call(call_id.clone(), name.clone(), out);
                }
                self.started_calls.retain(|id| id != &call_id);
                out.push(Event::ToolCallArgs {
                    tool_call_id: call_id.clone(),
                    delta: input.to_string(),
                });
                out.push(Event::ToolCallEnd {
                    tool_call_id: call_id.clone(),
                });
                let kind = self
                    .tools
                    .get(&name)
                    .map(|tool| tool.spec().annotations.kind)
                    .unwrap_or_default();
                out.push(custom(
                    "tool_kind",
                    json!({"toolCallId": call_id, "kind": kind.as_str()}),
                ));
            }
            LoopEvent::ApprovalRequired {
                call_id,
                name,
                input,
                reason,
                preview,
                ..
            } => {
                // What the call would do (the diff of an edit), shown before the interrupt.
                if let Some(shown) =
                    preview.filter(|p| !p.locations().is_empty() || !p.diffs().is_empty())
                {
                    out.push(custom(
                        "tool_preview",
                        json!({
                            "toolCallId": call_id,
                            "locations": shown.locations(),
                            "diffs": shown.diffs(),
                        }),
                    ));
                }
                return Signal::Approval {
                    call_id,
                    name,
                    input,
                    reason,
                };
            }
            LoopEvent::AwaitingInput { call_id, question } => {
                return Signal::Question { call_id, question };
            }
            LoopEvent::ToolResult {
                call_id, output, ..
            } => {
                self.close_text(out);
                self.close_reasoning(out);
                let message_id = self.next_id("t");
                out.push(Event::ToolCallResult {
                    message_id,
                    tool_call_id: call_id.clone(),
                    content: output.to_text(),
                    role: Some("tool".into()),
                });
                self.present(&call_id, &output, out);
            }
            LoopEvent::TurnComplete {
                iteration,
                has_more,
            } => {
                self.close_text(out);
                self.close_reasoning(out);
                self.close_step(out);
                self.in_turn = false;
                self.turn += 1;
                out.push(custom(
                    "turn_complete",
                    json!({"iteration": iteration, "hasMore": has_more}),
                ));
            }
            LoopEvent::Finished {
                text, usage, limit, ..
            } => {
                out.extend(self.detach());
                if let Some(limit) = limit {
                    // The run stopped on a budget: say which before RUN_FINISHED.
                    let mut value = serde_json::to_value(&limit).unwrap_or(Value::Null);
                    if let Value::Object(map) = &mut value {
                        map.insert("kind".to_owned(), json!(limit.kind()));
                        map.insert("message".to_owned(), json!(limit.to_string()));
                    }
                    out.push(custom("limit_reached", value));
                }
                return Signal::Finished { text, usage };
            }
            LoopEvent::Error { kind, message } => {
                out.extend(self.detach());
                if kind == "cancelled" {
                    return Signal::Cancelled;
                }
                return Signal::Failed { kind, message };
            }
            LoopEvent::ToolOutputDelta {
                call_id,
                update: mux_tool::ToolUpdate::Subagent { agent, event },
            } => {
                // AG-UI has no subagent events: a CUSTOM event under the delegating call.
                out.push(custom(
                    "subagent_event",
                    json!({"parentToolCallId": call_id, "agent": agent, "event": event}),
                ));
            }
            other => {
                let name = match serde_json::to_value(&other) {
                    Ok(value) => value,
                    Err(err) => json!({"type": "unserializable", "message": err.to_string()}),
                };
                let kind = name
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("event")
                    .to_owned();
                out.push(custom(&kind, name));
            }
        }
        Signal::None
    }

    fn start_call(&mut self, call_id: String, name: String, out: &mut Vec<Event>) {
        self.close_text(out);
        self.close_reasoning(out);
        self.open_step(out);
        let parent = self.assistant_id();
        self.started_calls.push(call_id.clone());
        out.push(Event::ToolCallStart {
            tool_call_id: call_id,
            tool_call_name: name,
            parent_message_id: Some(parent),
        });
    }

    /// What the call's output presents: its locations and diffs as `mux.tool_presentation`,
    /// and, after a success, its todo list as the `todos` state.
    fn present(&mut self, call_id: &str, output: &ToolOutput, out: &mut Vec<Event>) {
        let Some(shown) = output.presentation() else {
            return;
        };
        if !shown.locations().is_empty() || !shown.diffs().is_empty() {
            out.push(custom(
                "tool_presentation",
                json!({
                    "toolCallId": call_id,
                    "locations": shown.locations(),
                    "diffs": shown.diffs(),
                }),
            ));
        }
        if let (false, Some(todos)) = (output.is_error, shown.todos()) {
            match serde_json::to_value(todos) {
                Ok(todos) => out.push(self.todo_state(todos)),
                Err(err) => {
                    tracing::debug!(target: "mux_web", error = %err, "a todo list did not serialize");
                }
            }
        }
    }

    /// A snapshot the first time, then a replace of `/todos`.
    fn todo_state(&mut self, todos: Value) -> Event {
        let event = if self.todos.is_some() {
            Event::StateDelta {
                delta: vec![json!({"op": "replace", "path": format!("/{TODOS}"), "value": todos})],
            }
        } else {
            Event::StateSnapshot {
                snapshot: json!({ TODOS: todos }),
            }
        };
        self.todos = Some(todos);
        event
    }
}

/// A `CUSTOM` event named `mux.<kind>`.
pub(crate) fn custom(kind: &str, value: Value) -> Event {
    Event::Custom {
        name: format!("mux.{kind}"),
        value,
    }
}

/// mux usage in AG-UI's accounting: inputs include the cached tokens.
pub(crate) fn token_usage(usage: &Usage, model: &str) -> TokenUsage {
    let input = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens;
    TokenUsage {
        provider: None,
        model: Some(model.to_owned()),
        input_tokens: input,
        output_tokens: usage.output_tokens,
        total_tokens: input + usage.output_tokens,
        cached_input_tokens: usage.cache_read_tokens,
        cache_write_input_tokens: usage.cache_write_tokens,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mux_tool::ToolOutput;

    fn kinds(events: &[Event]) -> Vec<&'static str> {
        events.iter().map(Event::kind).collect()
    }

    #[test]
    fn a_turn_with_text_and_a_tool_call_nests_validly() {
        let mut t = Translator::new("x", None, Registry::new());
        let mut all = Vec::new();
        for event in [
            LoopEvent::StateChanged {
                from: LoopState::Idle,
                to: LoopState::Streaming,
            },
            LoopEvent::TextDelta { text: "Hi".into() },
            LoopEvent::ToolCallStarted {
                call_id: "c".into(),
                name: "ls".into(),
            },
            LoopEvent::ToolCallArguments {
                call_id: "c".into(),
                name: "ls".into(),
                input: json!({}),
            },
            LoopEvent::ToolResult {
                call_id: "c".into(),
                name: "ls".into(),
                output: ToolOutput::text("a b"),
            },
            LoopEvent::TurnComplete {
                iteration: 1,
                has_more: true,
            },
        ] {
            all.extend(t.translate(event).0);
        }
        assert_eq!(
            kinds(&all),
            [
                "STEP_STARTED",
                "CUSTOM",
                "TEXT_MESSAGE_START",
                "TEXT_MESSAGE_CONTENT",
                "TEXT_MESSAGE_END",
                "TOOL_CALL_START",
                "TOOL_CALL_ARGS",
                "TOOL_CALL_END",
                "CUSTOM",
                "TOOL_CALL_RESULT",
                "STEP_FINISHED",
                "CUSTOM"
            ]
        );
    }

    /// A tool whose spec says `kind`.
    struct Described(mux_tool::ToolSpec);

    impl mux_tool::Tool for Described {
        fn spec(&self) -> &mux_tool::ToolSpec {
            &self.0
        }

        fn call(
            &self,
            _input: Value,
            _cx: mux_tool::ToolContext,
        ) -> mux_tool::BoxFuture<'_, Result<ToolOutput, mux_tool::ToolError>> {
            Box::pin(async { Ok(ToolOutput::text("ok")) })
        }
    }

    fn tools(described: &[(&str, mux_tool::ToolKind)]) -> Registry {
        let tools = Registry::new();
        for (name, kind) in described {
            let spec = mux_tool::ToolSpec::new(*name, "", json!({"type": "object"}))
                .unwrap()
                .with_annotations(mux_tool::ToolAnnotations::default().with_kind(*kind));
            tools.register(Described(spec)).unwrap();
        }
        tools
    }

    fn custom_value<'a>(events: &'a [Event], wanted: &str) -> Option<&'a Value> {
        events.iter().find_map(|event| match event {
            Event::Custom { name, value } if name == wanted => Some(value),
            _ => None,
        })
    }

    #[test]
    fn the_kind_comes_from_the_annotations_not_the_name() {
        use mux_tool::ToolKind;
        let mut t = Translator::new(
            "x",
            None,
            tools(&[("save", ToolKind::Edit), ("bash", ToolKind::Other)]),
        );
        for (name, kind) in [("save", "edit"), ("bash", "other"), ("gone", "other")] {
            let (events, _) = t.translate(LoopEvent::ToolCallArguments {
                call_id: format!("c-{name}"),
                name: name.into(),
                input: json!({}),
            });
            let value = custom_value(&events, "mux.tool_kind").unwrap();
            assert_eq!(
                value,
                &json!({"toolCallId": format!("c-{name}"), "kind": kind})
            );
        }
    }

    #[test]
    fn a_presented_diff_is_a_tool_presentation_event_after_the_result() {
        use mux_tool::{Diff, Location, Presentation};
        let mut t = Translator::new("x", None, Registry::new());
        let output = ToolOutput::text("saved").with_presentation(
            Presentation::new()
                .with_location(Location::new("a.txt").with_line(1))
                .with_diff(Diff::new("a.txt", Some("a\n"), "b\n")),
        );
        let (events, _) = t.translate(LoopEvent::ToolResult {
            call_id: "c".into(),
            name: "anything".into(),
            output,
        });
        assert_eq!(kinds(&events), ["TOOL_CALL_RESULT", "CUSTOM"]);
        assert_eq!(
            custom_value(&events, "mux.tool_presentation").unwrap(),
            &json!({
                "toolCallId": "c",
                "locations": [{"path": "a.txt", "line": 1}],
                "diffs": [{"path": "a.txt", "oldText": "a\n", "newText": "b\n", "line": 1}]
            })
        );
        // Nothing presented: no event.
        let (events, _) = t.translate(LoopEvent::ToolResult {
            call_id: "d".into(),
            name: "anything".into(),
            output: ToolOutput::text("plain"),
        });
        assert_eq!(kinds(&events), ["TOOL_CALL_RESULT"]);
    }

    #[test]
    fn thinking_is_a_reasoning_span_closed_before_the_text() {
        let mut t = Translator::new("x", None, Registry::new());
        let mut all = Vec::new();
        for event in [
            LoopEvent::ThinkingDelta {
                thinking: "Let me see".into(),
            },
            LoopEvent::ThinkingDelta {
                thinking: " the files.".into(),
            },
            LoopEvent::TextDelta {
                text: "Done.".into(),
            },
        ] {
            all.extend(t.translate(event).0);
        }
        all.extend(t.detach());
        assert_eq!(
            kinds(&all),
            [
                "STEP_STARTED",
                "REASONING_START",
                "REASONING_MESSAGE_START",
                "REASONING_MESSAGE_CONTENT",
                "REASONING_MESSAGE_CONTENT",
                "REASONING_MESSAGE_END",
                "REASONING_END",
                "TEXT_MESSAGE_START",
                "TEXT_MESSAGE_CONTENT",
                "TEXT_MESSAGE_END",
                "STEP_FINISHED"
            ]
        );
        let Event::ReasoningMessageStart { role, .. } = &all[2] else {
            panic!("not a reasoning message start")
        };
        assert_eq!(role, "reasoning");
    }

    #[test]
    fn presented_todos_become_a_snapshot_then_deltas() {
        use mux_tool::{Presentation, TodoItem};
        let mut t = Translator::new("x", None, Registry::new());
        let mut all = Vec::new();
        for round in 0..2 {
            let todos = [TodoItem::new(format!("step {round}"))];
            for event in [
                LoopEvent::ToolCallArguments {
                    call_id: format!("c{round}"),
                    name: "any_plan_tool".into(),
                    input: json!({}),
                },
                LoopEvent::ToolResult {
                    call_id: format!("c{round}"),
                    name: "any_plan_tool".into(),
                    output: ToolOutput::text("ok")
                        .with_presentation(Presentation::new().with_todos(todos)),
                },
            ] {
                all.extend(t.translate(event).0);
            }
        }
        let state: Vec<_> = kinds(&all)
            .into_iter()
            .filter(|k| k.starts_with("STATE"))
            .collect();
        assert_eq!(state, ["STATE_SNAPSHOT", "STATE_DELTA"]);
        assert_eq!(t.todos().unwrap()[0]["content"], "step 1");
    }

    #[test]
    fn cancel_and_errors_are_signals_after_closing_what_is_open() {
        let mut t = Translator::new("x", None, Registry::new());
        t.translate(LoopEvent::TextDelta { text: "a".into() });
        let (events, signal) = t.translate(LoopEvent::Error {
            kind: "cancelled".into(),
            message: "stop".into(),
        });
        assert_eq!(kinds(&events), ["TEXT_MESSAGE_END", "STEP_FINISHED"]);
        assert_eq!(signal, Signal::Cancelled);
        let (_, signal) = t.translate(LoopEvent::Error {
            kind: "llm".into(),
            message: "boom".into(),
        });
        assert!(matches!(signal, Signal::Failed { kind, .. } if kind == "llm"));
    }

    #[test]
    fn a_run_stopped_by_its_budget_says_which_limit_before_it_finishes() {
        let mut t = Translator::new("x", None, Registry::new());
        t.translate(LoopEvent::TextDelta { text: "a".into() });
        let (events, signal) = t.translate(LoopEvent::Finished {
            text: "a".into(),
            iterations: 1,
            usage: Usage::default(),
            limit: Some(mux_orchestrator::LimitReached::ToolCalls { max: 2 }),
        });
        assert_eq!(
            kinds(&events),
            ["TEXT_MESSAGE_END", "STEP_FINISHED", "CUSTOM"]
        );
        let Event::Custom { name, value } = &events[2] else {
            panic!("{events:?}");
        };
        assert_eq!(name, "mux.limit_reached");
        assert_eq!(value["kind"], "max_tool_calls");
        assert_eq!(value["max"], 2);
        assert!(matches!(signal, Signal::Finished { .. }));
    }

    #[test]
    fn a_subagents_event_is_a_custom_event_under_the_delegating_call() {
        let mut t = Translator::new("x", None, Registry::new());
        let (events, _) = t.translate(LoopEvent::ToolOutputDelta {
            call_id: "task_1".into(),
            update: mux_tool::ToolUpdate::Subagent {
                agent: "worker".into(),
                event: json!({"type": "tool_result", "call_id": "c9", "name": "echo"}),
            },
        });
        let [Event::Custom { name, value }] = events.as_slice() else {
            panic!("{events:?}");
        };
        assert_eq!(name, "mux.subagent_event");
        assert_eq!(value["parentToolCallId"], "task_1");
        assert_eq!(value["agent"], "worker");
        assert_eq!(value["event"]["call_id"], "c9");
    }
}
