//! What a paused loop waits for: raising an interrupt for an approval or a question,
//! registering frontend tool calls, ending the attached run on them, expiring them, and
//! mapping the answers of a resume (AG-UI resume entries) to loop inputs.

use std::collections::{BTreeMap, HashSet};

use mux_orchestrator::{Answer, LoopInput};
use mux_tool::ToolOutput;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::state::{Frontend, Pending, State, Thread, Waits};
use crate::error::ErrorCode;
use crate::types::{Event, Interrupt, Outcome, ResumeEntry, ResumeStatus};

impl Thread {
    /// Raises an interrupt for `call_id`, answered by a resume before the time limit.
    pub(super) fn interrupt(&self, call_id: String, waits: Waits, message: String, schema: Value) {
        let id = format!("{}-{call_id}-{}", self.id, crate::security::unguessable());
        let reason = match waits {
            Waits::Approval => "tool_call",
            Waits::Answer => "input",
        };
        let mut state = self.state();
        if let Some(live) = state.live.as_mut() {
            let interrupt = Interrupt {
                id: id.clone(),
                reason: reason.into(),
                message: Some(message),
                tool_call_id: Some(call_id.clone()),
                response_schema: Some(schema),
                expires_at: crate::expiry::deadline_after(self.timeout),
            };
            live.interrupts.insert(
                id,
                Pending {
                    call_id,
                    waits,
                    interrupt,
                    deadline: Instant::now() + self.timeout,
                    announced: false,
                },
            );
        }
    }

    /// Checks `resume` against what this thread can take an answer for (see
    /// [`check_resume`]), changing nothing.
    pub(crate) fn check(&self, resume: &[ResumeEntry]) -> Result<(), (ErrorCode, String)> {
        let state = self.state();
        let open = state.live.as_ref().map(|live| &live.interrupts);
        check_resume(&self.id, resume, open, &state.answered, &state.expired)
    }

    /// Whether `tool_results` answer a frontend call the live loop waits for.
    pub(crate) fn delivers(&self, tool_results: &[(String, String)]) -> bool {
        let state = self.state();
        state.live.as_ref().is_some_and(|live| {
            tool_results
                .iter()
                .any(|(id, _)| live.frontend.contains_key(id))
        })
    }

    /// Records interrupts answered through the run store (a second answer is refused here).
    pub(crate) fn answered(&self, ids: impl IntoIterator<Item = String>) {
        self.state().answered.extend(ids);
    }

    /// Registers a frontend call waiting for its result.
    pub(crate) fn await_frontend(&self, call_id: &str, tx: oneshot::Sender<ToolOutput>) {
        if let Some(super::state::Prefill::Result(content)) = self.take_prefill(call_id) {
            // Delivered while the loop was evicted.
            let _ = tx.send(ToolOutput::text(content));
            return;
        }
        if let Some(live) = self.state().live.as_mut() {
            live.frontend.insert(
                call_id.to_owned(),
                Frontend {
                    tx,
                    announced: false,
                },
            );
        }
        self.wake.notify_one();
    }

    /// Forgets a frontend call (answered, timed out or cancelled).
    pub(crate) fn forget_frontend(&self, call_id: &str) {
        if let Some(live) = self.state().live.as_mut() {
            live.frontend.remove(call_id);
        }
    }

    /// Ends the attached run: interrupts if approvals or answers are pending, else success
    /// with the frontend calls that wait for results. A loop that waits only for approvals
    /// is then evicted (its task stopped, its state in the session and the run store) and
    /// true returned.
    pub(super) fn pause(&self) -> bool {
        let mut state = self.state();
        let State {
            current,
            live: slot,
            ..
        } = &mut *state;
        let (Some(run), Some(live)) = (current.take(), slot.as_mut()) else {
            return false;
        };
        let mut events = live.translator.detach();
        let interrupts: Vec<Interrupt> = live
            .interrupts
            .values_mut()
            .map(|p| {
                p.announced = true;
                p.interrupt.clone()
            })
            .collect();
        let pending_tool_call_ids: Vec<String> = live
            .frontend
            .iter_mut()
            .map(|(id, f)| {
                f.announced = true;
                id.clone()
            })
            .collect();
        let outcome = if interrupts.is_empty() {
            Outcome::Success {
                pending_tool_call_ids,
            }
        } else {
            Outcome::Interrupt { interrupts }
        };
        events.push(Event::RunFinished {
            thread_id: run.thread_id.clone(),
            run_id: run.run_id.clone(),
            result: None,
            outcome,
            usage: Vec::new(),
        });
        let evict = live.is_evictable();
        if evict && let Some(live) = slot.take() {
            live.handle.abort();
        }
        state.evicted = evict;
        run.push(events);
        evict
    }

    /// Denies (or answers) the interrupts whose time is up; the reason says they expired.
    pub(super) async fn expire(&self) {
        let now = Instant::now();
        let (input, answers) = {
            let mut state = self.state();
            let State { live, expired, .. } = &mut *state;
            let Some(live) = live.as_mut() else { return };
            let due: Vec<String> = live
                .interrupts
                .iter()
                .filter(|(_, p)| p.deadline <= now)
                .map(|(id, _)| id.clone())
                .collect();
            let after = format!("{:?}", self.timeout);
            let mut answers = Vec::new();
            for id in due {
                if let Some(p) = live.interrupts.remove(&id) {
                    expired.insert(id);
                    let reason = format!("the approval expired: nobody answered within {after}");
                    answers.push(match p.waits {
                        Waits::Approval => LoopInput::ToolApproval {
                            call_id: p.call_id,
                            answer: Answer::Deny { reason },
                        },
                        Waits::Answer => LoopInput::UserResponse {
                            call_id: p.call_id,
                            text: format!("(no answer: the question expired after {after})"),
                        },
                    });
                }
            }
            (live.input.clone(), answers)
        };
        for answer in answers {
            input.send(answer).await;
        }
    }
}

/// Checks every entry of a resume names an interrupt this thread can take an answer for:
/// one still open (`open`, `None` when no loop is live), or one that expired (its late
/// answer is ignored). An interrupt answered before, or an id the thread never issued, is
/// refused with its error code, and nothing of the resume is applied.
pub(super) fn check_resume(
    thread_id: &str,
    resume: &[ResumeEntry],
    open: Option<&BTreeMap<String, Pending>>,
    answered: &HashSet<String>,
    expired: &HashSet<String>,
) -> Result<(), (ErrorCode, String)> {
    for entry in resume {
        let id = &entry.interrupt_id;
        let known = open.is_some_and(|open| open.contains_key(id));
        if known || expired.contains(id) {
            continue;
        }
        if answered.contains(id) {
            return Err((
                ErrorCode::InterruptAlreadyAnswered,
                format!("interrupt `{id}` was answered already"),
            ));
        }
        return Err((
            ErrorCode::UnknownInterrupt,
            format!("thread `{thread_id}` has no interrupt `{id}`"),
        ));
    }
    Ok(())
}

/// The loop input that answers `pending` with `entry`. Only a resolved entry whose payload
/// says `"approved": true` (a JSON boolean) approves, and only without edited arguments;
/// anything else, malformed payloads included, is a denial (or, for a question, no answer).
pub(super) fn answer(pending: &Pending, entry: &ResumeEntry) -> LoopInput {
    let payload = entry.payload.clone().unwrap_or(Value::Null);
    match pending.waits {
        Waits::Approval => approval(
            &pending.call_id,
            entry,
            crate::types::offers_always(&pending.interrupt),
        ),
        Waits::Answer => LoopInput::UserResponse {
            call_id: pending.call_id.clone(),
            text: reply(&entry.status, &payload),
        },
    }
}

/// The text that answers a question with a resume entry of `status` and `payload`: only a
/// resolved entry with a string `answer` answers; anything else declines.
pub(crate) fn reply(status: &ResumeStatus, payload: &Value) -> String {
    match (status, payload["answer"].as_str()) {
        (ResumeStatus::Resolved, Some(text)) => text.to_owned(),
        _ => "(the user declined to answer)".to_owned(),
    }
}

/// The loop input that answers the approval of `call_id` with `entry` (see [`answer`]).
/// Where the interrupt offered it (`offers_always`), `"always": true` with the approval
/// allows for the rest of the conversation.
pub(crate) fn approval(call_id: &str, entry: &ResumeEntry, offers_always: bool) -> LoopInput {
    let payload = entry.payload.clone().unwrap_or(Value::Null);
    {
        {
            let approved = entry.status == ResumeStatus::Resolved
                && payload["approved"].as_bool() == Some(true);
            let edited = payload.get("editedArgs").is_some_and(|v| !v.is_null());
            let decision = if approved && edited {
                // The loop has no "run with other arguments" answer: never run the original
                // arguments when the person approved different ones.
                Answer::Deny {
                    reason: "the user approved edited arguments, which this server cannot apply; \
                             call the tool again with the arguments the user wants"
                        .to_owned(),
                }
            } else if approved && offers_always && payload["always"].as_bool() == Some(true) {
                Answer::allow_for_session()
            } else if approved {
                Answer::AllowOnce
            } else {
                let reason = payload["reason"]
                    .as_str()
                    .filter(|r| !r.trim().is_empty())
                    .map(|r| format!("the user denied this call: {r}"))
                    .unwrap_or_else(|| "the user denied this call".to_owned());
                Answer::Deny { reason }
            };
            LoopInput::ToolApproval {
                call_id: call_id.to_owned(),
                answer: decision,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pending(waits: Waits) -> Pending {
        Pending {
            call_id: "c1".into(),
            waits: waits.clone(),
            interrupt: Interrupt {
                id: "t-c1-x".into(),
                reason: match waits {
                    Waits::Approval => "tool_call".into(),
                    Waits::Answer => "input".into(),
                },
                message: None,
                tool_call_id: Some("c1".into()),
                response_schema: None,
                expires_at: None,
            },
            deadline: Instant::now(),
            announced: false,
        }
    }

    fn entry(id: &str, status: ResumeStatus, payload: Option<Value>) -> ResumeEntry {
        ResumeEntry {
            interrupt_id: id.into(),
            status,
            payload,
        }
    }

    fn approval(decision: Answer) -> LoopInput {
        LoopInput::ToolApproval {
            call_id: "c1".into(),
            answer: decision,
        }
    }

    fn deny(reason: &str) -> LoopInput {
        approval(Answer::Deny {
            reason: reason.into(),
        })
    }

    fn reply(text: &str) -> LoopInput {
        LoopInput::UserResponse {
            call_id: "c1".into(),
            text: text.into(),
        }
    }

    #[test]
    fn every_resume_entry_maps_to_one_loop_input() {
        use ResumeStatus::{Cancelled, Resolved};
        const DENIED: &str = "the user denied this call";
        const DECLINED: &str = "(the user declined to answer)";
        let edited = "the user approved edited arguments, which this server cannot apply; \
                      call the tool again with the arguments the user wants";
        let table: Vec<(Waits, ResumeStatus, Option<Value>, LoopInput)> = vec![
            // Approvals: only a resolved `"approved": true` without edited arguments runs.
            (
                Waits::Approval,
                Resolved,
                Some(json!({"approved": true})),
                approval(Answer::AllowOnce),
            ),
            (
                Waits::Approval,
                Resolved,
                Some(json!({"approved": true, "editedArgs": null})),
                approval(Answer::AllowOnce),
            ),
            (
                Waits::Approval,
                Resolved,
                Some(json!({"approved": true, "editedArgs": {"path": "other"}})),
                deny(edited),
            ),
            (
                Waits::Approval,
                Resolved,
                Some(json!({"approved": false, "reason": "too risky"})),
                deny("the user denied this call: too risky"),
            ),
            (
                Waits::Approval,
                Resolved,
                Some(json!({"approved": false, "reason": "  "})),
                deny(DENIED),
            ),
            (
                Waits::Approval,
                Resolved,
                Some(json!({"approved": false, "reason": 42})),
                deny(DENIED),
            ),
            (
                Waits::Approval,
                Resolved,
                Some(json!({"approved": false})),
                deny(DENIED),
            ),
            // Malformed payloads deny: a string or a number is not `true`, nor is a
            // payload that is not an object, nor no payload at all.
            (
                Waits::Approval,
                Resolved,
                Some(json!({"approved": "true"})),
                deny(DENIED),
            ),
            (
                Waits::Approval,
                Resolved,
                Some(json!({"approved": 1})),
                deny(DENIED),
            ),
            (
                Waits::Approval,
                Resolved,
                Some(json!({"Approved": true})),
                deny(DENIED),
            ),
            (Waits::Approval, Resolved, Some(json!([true])), deny(DENIED)),
            (
                Waits::Approval,
                Resolved,
                Some(json!("approved")),
                deny(DENIED),
            ),
            (Waits::Approval, Resolved, Some(Value::Null), deny(DENIED)),
            (Waits::Approval, Resolved, None, deny(DENIED)),
            // A withdrawn approval denies, whatever its payload says.
            (
                Waits::Approval,
                Cancelled,
                Some(json!({"approved": true})),
                deny(DENIED),
            ),
            (
                Waits::Approval,
                Cancelled,
                Some(json!({"approved": false, "reason": "changed my mind"})),
                deny("the user denied this call: changed my mind"),
            ),
            (Waits::Approval, Cancelled, None, deny(DENIED)),
            // Questions: a resolved string answer is the reply; anything else declines.
            (
                Waits::Answer,
                Resolved,
                Some(json!({"answer": "blue"})),
                reply("blue"),
            ),
            (
                Waits::Answer,
                Resolved,
                Some(json!({"answer": ""})),
                reply(""),
            ),
            (
                Waits::Answer,
                Resolved,
                Some(json!({"answer": 7})),
                reply(DECLINED),
            ),
            (
                Waits::Answer,
                Resolved,
                Some(json!({"approved": true})),
                reply(DECLINED),
            ),
            (
                Waits::Answer,
                Resolved,
                Some(json!("blue")),
                reply(DECLINED),
            ),
            (Waits::Answer, Resolved, None, reply(DECLINED)),
            (
                Waits::Answer,
                Cancelled,
                Some(json!({"answer": "blue"})),
                reply(DECLINED),
            ),
            (Waits::Answer, Cancelled, None, reply(DECLINED)),
        ];
        for (waits, status, payload, expected) in table {
            let case = format!("{waits:?} {status:?} {payload:?}");
            let got = answer(&pending(waits), &entry("t-c1-x", status, payload));
            assert_eq!(got, expected, "{case}");
        }
    }

    #[test]
    fn always_allows_for_the_conversation_only_where_the_interrupt_offered_it() {
        use mux_permission::{Remember, Scope};
        let always = Some(json!({"approved": true, "always": true}));
        let mut network = pending(Waits::Approval);
        network.interrupt.response_schema = Some(crate::types::network_approval_response_schema());
        let table = [
            (
                &network,
                always.clone(),
                approval(Answer::AllowAlways {
                    remember: Remember::exact(Scope::Session),
                }),
            ),
            // Only a JSON `true` with the approval; a denial stays a denial.
            (
                &network,
                Some(json!({"approved": true, "always": "true"})),
                approval(Answer::AllowOnce),
            ),
            (
                &network,
                Some(json!({"approved": false, "always": true})),
                deny("the user denied this call"),
            ),
        ];
        for (pending, payload, expected) in table {
            let case = format!("{payload:?}");
            let got = answer(pending, &entry("t-c1-x", ResumeStatus::Resolved, payload));
            assert_eq!(got, expected, "{case}");
        }
        // A tool's approval never takes it: the agent's policy is every thread's.
        let tool = pending(Waits::Approval);
        let mut schema = tool;
        schema.interrupt.response_schema = Some(crate::types::approval_response_schema());
        for pending in [&pending(Waits::Approval), &schema] {
            let got = answer(
                pending,
                &entry("t-c1-x", ResumeStatus::Resolved, always.clone()),
            );
            assert_eq!(got, approval(Answer::AllowOnce));
        }
    }

    #[test]
    fn a_resume_names_only_interrupts_the_thread_can_answer() {
        let open: BTreeMap<String, Pending> =
            [("t-c1-x".to_owned(), pending(Waits::Approval))].into();
        let answered: HashSet<String> = ["t-c0-y".to_owned()].into();
        let expired: HashSet<String> = ["t-c2-z".to_owned()].into();
        let long = "t".repeat(10_000);
        let unknown = Err(ErrorCode::UnknownInterrupt);
        let table: Vec<(bool, Vec<&str>, Result<(), ErrorCode>)> = vec![
            (true, vec![], Ok(())),
            (true, vec!["t-c1-x"], Ok(())),
            // A late answer to an expired interrupt is ignored, not refused.
            (true, vec!["t-c2-z"], Ok(())),
            (true, vec!["t-c1-x", "t-c2-z"], Ok(())),
            (
                true,
                vec!["t-c0-y"],
                Err(ErrorCode::InterruptAlreadyAnswered),
            ),
            (
                true,
                vec!["t-c1-x", "t-c0-y"],
                Err(ErrorCode::InterruptAlreadyAnswered),
            ),
            // Ids the thread never issued, however they are spelled; one bad id refuses
            // the whole resume.
            (true, vec!["nope"], unknown.clone()),
            (true, vec![""], unknown.clone()),
            (true, vec!["T-C1-X"], unknown.clone()),
            (true, vec!["t-c1-x "], unknown.clone()),
            (true, vec!["../t-c1-x"], unknown.clone()),
            (true, vec!["t-c1-x\0"], unknown.clone()),
            (true, vec![long.as_str()], unknown.clone()),
            (true, vec!["t-c1-x", "nope"], unknown.clone()),
            // No live loop: nothing is open; expired and answered ids keep their meaning.
            (false, vec!["t-c1-x"], unknown.clone()),
            (false, vec!["t-c2-z"], Ok(())),
            (
                false,
                vec!["t-c0-y"],
                Err(ErrorCode::InterruptAlreadyAnswered),
            ),
        ];
        for (live, ids, expected) in table {
            let resume: Vec<ResumeEntry> = ids
                .iter()
                .map(|id| entry(id, ResumeStatus::Resolved, Some(json!({"approved": true}))))
                .collect();
            let got = check_resume("t", &resume, live.then_some(&open), &answered, &expired)
                .map_err(|(code, message)| {
                    assert!(!message.is_empty());
                    code
                });
            let case: Vec<String> = ids.iter().map(|id| id.chars().take(20).collect()).collect();
            assert_eq!(got, expected, "live: {live}, ids: {case:?}");
        }
    }
}
