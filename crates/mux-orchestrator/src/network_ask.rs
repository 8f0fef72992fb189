//! A walled command's network destination that no rule covers, asked about on the run's face
//! like a tool call: "allow network access to `crates.io:443`?", once or always.

use std::sync::Arc;

use mux_permission::Answer;
use mux_tool::builtin::{DomainAnswer, DomainAsker, DomainAskers, DomainRequest};
use mux_tool::{BoxFuture, Subject, ToolCall};
use serde_json::{Value, json};

use crate::NETWORK_APPROVAL;
use crate::approval::LoopAsker;
use crate::core::Core;

/// The run's askers: one per call, sharing the destinations allowed "always", which the
/// conversation keeps in its session metadata ([`ALWAYS_KEY`]): a face that builds a new
/// loop per run (the web) or a process that takes the conversation over does not ask again.
pub(crate) struct RunDomainAskers {
    pub(crate) asker: Arc<LoopAsker>,
    pub(crate) conversation: Core,
}

/// The key of the session metadata's `extra` that lists the `host:port` destinations the
/// person allowed "always" in the conversation, sorted.
const ALWAYS_KEY: &str = "network_always";

/// Whether the conversation allowed `destination` "always".
fn allowed_always(conversation: &Core, destination: &str) -> bool {
    conversation
        .lock()
        .meta
        .extra
        .get(ALWAYS_KEY)
        .and_then(Value::as_array)
        .is_some_and(|allowed| allowed.iter().any(|d| d.as_str() == Some(destination)))
}

/// Remembers `destination` as allowed "always" in the conversation (saved with its next
/// write).
fn allow_always(conversation: &Core, destination: String) {
    let mut conversation = conversation.lock();
    let mut allowed: Vec<String> = conversation
        .meta
        .extra
        .get(ALWAYS_KEY)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    allowed.push(destination);
    allowed.sort();
    allowed.dedup();
    conversation
        .meta
        .extra
        .insert(ALWAYS_KEY.to_owned(), json!(allowed));
}

impl std::fmt::Debug for RunDomainAskers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunDomainAskers").finish_non_exhaustive()
    }
}

impl std::fmt::Debug for CallDomainAsker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallDomainAsker")
            .field("call_id", &self.call_id)
            .finish_non_exhaustive()
    }
}

impl DomainAskers for RunDomainAskers {
    fn for_call(&self, call_id: &str) -> Arc<dyn DomainAsker> {
        Arc::new(CallDomainAsker {
            asker: Arc::clone(&self.asker),
            conversation: self.conversation.clone(),
            call_id: call_id.to_owned(),
        })
    }
}

/// Asks about the destinations of one call.
struct CallDomainAsker {
    asker: Arc<LoopAsker>,
    conversation: Core,
    call_id: String,
}

impl DomainAsker for CallDomainAsker {
    fn ask(&self, request: DomainRequest) -> BoxFuture<'_, DomainAnswer> {
        Box::pin(async move {
            let destination = request.to_string();
            if allowed_always(&self.conversation, &destination) {
                return DomainAnswer::AllowOnce;
            }
            // An id of its own, so the question cannot take or give the answer of the call,
            // ending in a part the model cannot guess: a call the model names with the same
            // id would otherwise take this answer (or give it its own).
            let call = ToolCall::new(
                format!("{}:network:{destination}:{}", self.call_id, unguessable()),
                NETWORK_APPROVAL,
                json!({"host": request.host, "port": request.port, "call_id": self.call_id}),
            );
            let subject = Subject::url(format!("https://{destination}/"));
            let reason = format!("allow network access to `{destination}`?");
            match self.asker.ask_now(&call, &subject, &reason, false).await {
                Answer::AllowOnce => DomainAnswer::AllowOnce,
                Answer::AllowAlways { .. } => {
                    allow_always(&self.conversation, destination);
                    DomainAnswer::AllowAlways
                }
                _ => DomainAnswer::Deny,
            }
        })
    }
}

/// 64 bits the model cannot guess, as 16 hex digits: the standard library's hasher keys are
/// drawn from the operating system's random source once per thread.
fn unguessable() -> String {
    use std::hash::BuildHasher;
    let state = std::collections::hash_map::RandomState::new();
    format!("{:016x}", state.hash_one(std::time::Instant::now()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use std::time::Duration;

    use mux_llm::testing::ScriptedClient;
    use mux_tool::builtin::{CallDomainAskers, DomainRequest};
    use mux_tool::{Tool, ToolAnnotations, ToolContext, ToolError, ToolOutput, ToolSpec};
    use serde_json::Value;

    use super::*;
    use crate::{Agent, LoopEvent, LoopInput, LoopState, Run};

    /// A read-only tool that asks about `a.test:80` and gives up on it (as a command that
    /// ends before the answer), then asks about `b.test:80` and reports that answer.
    struct TwoDestinations(ToolSpec);

    impl Tool for TwoDestinations {
        fn spec(&self) -> &ToolSpec {
            &self.0
        }

        fn call(&self, _: Value, cx: ToolContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
            Box::pin(async move {
                let askers = cx.resources().get::<CallDomainAskers>().unwrap();
                let asker = askers.0.for_call(cx.call_id());
                let first = asker.ask(DomainRequest::new("a.test", 80));
                let gave_up = tokio::time::timeout(Duration::from_millis(100), first).await;
                assert!(gave_up.is_err(), "nobody answers a.test");
                let second = asker.ask(DomainRequest::new("b.test", 80)).await;
                Ok(ToolOutput::text(format!("b.test: {second:?}")))
            })
        }
    }

    #[tokio::test]
    async fn a_question_given_up_before_its_answer_leaves_no_wait_behind() {
        let spec = ToolSpec::new("two", "asks twice", json!({"type": "object"}))
            .unwrap()
            .with_annotations(ToolAnnotations::read_only());
        let model = ScriptedClient::new()
            .reply_tool_call("c1", "two", json!({}))
            .reply_text("done");
        let agent = Agent::builder(model, "m")
            .tools([Arc::new(TwoDestinations(spec)) as Arc<dyn Tool>])
            .build()
            .unwrap();
        let Run {
            mut events,
            input,
            handle,
        } = agent.stream("go").unwrap();
        let mut asked = Vec::new();
        let mut states = Vec::new();
        let mut result = None;
        while let Some(event) = events.recv().await {
            match event {
                LoopEvent::ApprovalRequired {
                    call_id,
                    name,
                    input: args,
                    reason,
                    ..
                } => {
                    assert_eq!(name, NETWORK_APPROVAL);
                    assert_eq!(args["call_id"], "c1");
                    if call_id.starts_with("c1:network:b.test:80:") {
                        assert_eq!(reason, "allow network access to `b.test:80`?");
                        let answer = Answer::AllowOnce;
                        input
                            .send(LoopInput::ToolApproval {
                                call_id: call_id.clone(),
                                answer,
                            })
                            .await;
                    }
                    asked.push(call_id);
                }
                LoopEvent::StateChanged { to, .. } if result.is_none() => states.push(to),
                LoopEvent::ToolResult { output, .. } => result = Some(output.to_text()),
                _ => {}
            }
        }
        handle.wait().await.unwrap();
        // Each question has an id of its own that no call of the model can name.
        assert_eq!(asked.len(), 2, "{asked:?}");
        for (id, destination) in asked.iter().zip(["a.test:80", "b.test:80"]) {
            let prefix = format!("c1:network:{destination}:");
            let suffix = id.strip_prefix(&prefix).unwrap_or_else(|| panic!("{id}"));
            assert_eq!(suffix.len(), 16, "{id}");
            assert!(suffix.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
        }
        assert_eq!(result.as_deref(), Some("b.test: AllowOnce"));
        // The tool went on executing once its last question was answered: the abandoned
        // one did not keep the run awaiting approval.
        assert_eq!(
            states.last(),
            Some(&LoopState::ExecutingTools),
            "{states:?}"
        );
    }
}
