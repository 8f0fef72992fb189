//! Effects happen once: each tool call carries a key stable across attempts and workers, and
//! a call whose earlier attempt started without returning (its worker died, or it outlived
//! its timeout) runs again only when its tool says that is safe.

use std::collections::BTreeMap;

use mux_tool::{ToolCall, ToolOutput, ToolSpec};

/// The stable part of a call's effect key: `{workflow id}:{turn}:{call id}`. The attempt
/// (from 1) travels beside it.
pub fn key(workflow_id: &str, turn: u32, call_id: &str) -> String {
    format!("{workflow_id}:{turn}:{call_id}")
}

/// What a tool-call activity does on attempt `attempt` (from 1) of a call to `spec`.
#[derive(Clone, Debug, PartialEq)]
pub enum Attempt {
    /// Run the call (the first attempt, or a tool that may run twice).
    Run,
    /// Do not run it: an earlier attempt started and may have taken effect.
    Unknown(ToolOutput),
}

/// The rule: the first attempt runs; a later one (an earlier attempt started and never
/// returned, since a tool's own failure is an output, not a failed activity) runs again only
/// when the tool is read-only or idempotent, and otherwise gives the model a typed
/// "outcome unknown" result (the orchestrator's, as after a takeover of its own runs).
pub fn attempt(call: &ToolCall, spec: Option<&ToolSpec>, attempt: u32) -> Attempt {
    if attempt <= 1 || mux_orchestrator::may_rerun(spec) {
        Attempt::Run
    } else {
        Attempt::Unknown(mux_orchestrator::outcome_unknown(call))
    }
}

/// The results of a cancelled turn's calls, in call order: the output of each that returned,
/// "outcome unknown" for the one that was running, "not run" for the rest.
pub(crate) fn settled<'a>(
    calls: &'a [ToolCall],
    done: &BTreeMap<String, ToolOutput>,
    running: Option<&str>,
) -> Vec<(&'a ToolCall, ToolOutput)> {
    calls
        .iter()
        .map(|call| {
            let output = match done.get(&call.id) {
                Some(output) => output.clone(),
                None => {
                    mux_orchestrator::cancelled_call_result(call, running == Some(call.id.as_str()))
                }
            };
            (call, output)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mux_tool::ToolAnnotations;
    use serde_json::json;

    fn spec(annotations: ToolAnnotations) -> ToolSpec {
        ToolSpec::new("t", "t", json!({"type": "object"}))
            .unwrap()
            .with_annotations(annotations)
    }

    #[test]
    fn a_retried_call_runs_again_only_when_its_tool_allows() {
        let call = ToolCall::new("c1", "t", json!({}));
        let plain = spec(ToolAnnotations::default());
        let idempotent = spec(ToolAnnotations::default().with_idempotent(true));
        let read_only = spec(ToolAnnotations::read_only());
        for s in [&plain, &idempotent, &read_only] {
            assert_eq!(attempt(&call, Some(s), 1), Attempt::Run);
        }
        assert_eq!(attempt(&call, Some(&idempotent), 2), Attempt::Run);
        assert_eq!(attempt(&call, Some(&read_only), 3), Attempt::Run);
        for (s, n) in [(Some(&plain), 2), (None, 2), (Some(&plain), 7)] {
            let Attempt::Unknown(output) = attempt(&call, s, n) else {
                panic!("attempt {n} of {s:?} ran again");
            };
            assert!(output.is_error);
            assert!(
                output.to_text().starts_with("outcome unknown"),
                "{output:?}"
            );
        }
    }

    #[test]
    fn the_key_is_stable_and_names_run_turn_and_call() {
        assert_eq!(key("wf-1", 3, "call_9"), "wf-1:3:call_9");
        assert_eq!(key("wf-1", 3, "call_9"), key("wf-1", 3, "call_9"));
        assert_ne!(key("wf-1", 3, "call_9"), key("wf-1", 4, "call_9"));
    }

    #[test]
    fn a_cancelled_turn_answers_every_call() {
        let calls = vec![
            ToolCall::new("a", "t", json!({})),
            ToolCall::new("b", "t", json!({})),
            ToolCall::new("c", "t", json!({})),
        ];
        let done = BTreeMap::from([("a".to_owned(), ToolOutput::text("ok"))]);
        let settled = settled(&calls, &done, Some("b"));
        assert_eq!(settled.len(), 3);
        assert_eq!(settled[0].1, ToolOutput::text("ok"));
        assert!(settled[1].1.to_text().starts_with("outcome unknown"));
        assert!(settled[2].1.to_text().starts_with("not run"));
    }
}
