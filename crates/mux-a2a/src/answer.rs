//! The client's next message on an `input-required` task, read as the answer to what the
//! task waits for:
//!
//! - an approval: text starting with `approve` (or `yes`, `allow`, `ok`) runs the call once;
//!   text starting with `deny` (or `no`, `reject`) refuses it, the rest of the text being the
//!   reason the model reads; or a data part `{"approved": true|false, "reason": "..."}`;
//! - an `ask_user` question: the message's text is the answer.
//!
//! Anything else is refused with a message saying what to send; the task stays paused.

use mux_orchestrator::Answer;
use mux_orchestrator::LoopInput;
use serde_json::Value;

use crate::rpc::RpcError;
use crate::task::Ask;
use crate::wire::Message;

/// The loop input that answers `ask` with `message`.
pub(crate) fn read(ask: &Ask, message: &Message, text: &str) -> Result<LoopInput, RpcError> {
    match ask {
        Ask::Question { call_id, .. } => Ok(LoopInput::UserResponse {
            call_id: call_id.clone(),
            text: text.to_owned(),
        }),
        Ask::Approval { call_id, tool, .. } => {
            // Only a network destination offers "always" (for the rest of the conversation).
            let offers_always = tool == mux_orchestrator::NETWORK_APPROVAL;
            let answer = from_data(message, offers_always)
                .or_else(|| from_text(text, offers_always))
                .ok_or_else(|| {
                    let always = if offers_always { ", `always`" } else { "" };
                    RpcError::invalid_params(format!(
                        "the task waits for an approval of `{tool}`: send `approve`{always}, or \
                         `deny` and a reason (or a data part {{\"approved\": true|false, \
                         \"reason\": \"...\"}})"
                    ))
                })?;
            Ok(LoopInput::ToolApproval {
                call_id: call_id.clone(),
                answer,
            })
        }
    }
}

fn from_data(message: &Message, offers_always: bool) -> Option<Answer> {
    message.parts.iter().find_map(|part| {
        let data = part.data.as_ref()?.as_object()?;
        let approved = data.get("approved")?.as_bool()?;
        let reason = data.get("reason").and_then(Value::as_str);
        let always = data.get("always").and_then(Value::as_bool) == Some(true);
        Some(if approved && always && offers_always {
            allow_always()
        } else {
            decide(approved, reason)
        })
    })
}

/// Allowed for the rest of the conversation.
fn allow_always() -> Answer {
    Answer::allow_for_session()
}

fn from_text(text: &str, offers_always: bool) -> Option<Answer> {
    let text = text.trim();
    let word_end = text
        .find(|c: char| !c.is_alphanumeric())
        .unwrap_or(text.len());
    let (word, rest) = text.split_at(word_end);
    let rest = rest.trim_start_matches(|c: char| c.is_whitespace() || ",.:;!-".contains(c));
    let reason = (!rest.trim().is_empty()).then_some(rest.trim());
    match word.to_ascii_lowercase().as_str() {
        "always" if offers_always => Some(allow_always()),
        "approve" | "approved" | "yes" | "y" | "allow" | "ok" => Some(decide(true, None)),
        "deny" | "denied" | "no" | "n" | "reject" => Some(decide(false, reason)),
        _ => None,
    }
}

fn decide(approved: bool, reason: Option<&str>) -> Answer {
    if approved {
        Answer::AllowOnce
    } else {
        Answer::deny(reason.unwrap_or("denied by the A2A client"))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::wire::{Part, Role};
    use serde_json::json;

    fn approval() -> Ask {
        Ask::Approval {
            call_id: "c1".into(),
            tool: "bash".into(),
            input: json!({"command": "git log"}),
            reason: "commands ask".into(),
        }
    }

    fn message(parts: Vec<Part>) -> Message {
        Message {
            message_id: "m".into(),
            context_id: String::new(),
            task_id: "t".into(),
            role: Role::User,
            parts,
            metadata: None,
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
        }
    }

    fn answer_to(text: &str) -> Result<Answer, RpcError> {
        match read(&approval(), &message(vec![Part::text(text)]), text)? {
            LoopInput::ToolApproval { call_id, answer } => {
                assert_eq!(call_id, "c1");
                Ok(answer)
            }
            other => unreachable!("{other:?}"),
        }
    }

    #[test]
    fn words_and_data_answer_an_approval() {
        for yes in ["approve", "Approve.", " yes", "ok!", "allow it"] {
            assert_eq!(answer_to(yes).unwrap(), Answer::AllowOnce, "{yes}");
        }
        assert_eq!(
            answer_to("deny: not on a Friday").unwrap(),
            Answer::deny("not on a Friday")
        );
        assert_eq!(
            answer_to("no").unwrap(),
            Answer::deny("denied by the A2A client")
        );
        for unclear in ["", "maybe", "approvex", "yesterday", "¿sí?"] {
            assert_eq!(answer_to(unclear).unwrap_err().code, -32602, "{unclear}");
        }
        let data = message(vec![Part::data(json!({"approved": false, "reason": "r"}))]);
        let input = read(&approval(), &data, "").unwrap();
        assert_eq!(
            input,
            LoopInput::ToolApproval {
                call_id: "c1".into(),
                answer: Answer::deny("r")
            }
        );
    }

    #[test]
    fn always_answers_only_a_network_destination() {
        let network = Ask::Approval {
            call_id: "c1:network:pkgs.test:443:x".into(),
            tool: mux_orchestrator::NETWORK_APPROVAL.into(),
            input: json!({"host": "pkgs.test", "port": 443}),
            reason: "allow network access to `pkgs.test:443`?".into(),
        };
        let answer =
            |ask: &Ask, parts: Vec<Part>, text: &str| match read(ask, &message(parts), text) {
                Ok(LoopInput::ToolApproval { answer, .. }) => Ok(answer),
                Ok(other) => unreachable!("{other:?}"),
                Err(e) => Err(e),
            };
        for always in [
            (vec![Part::text("Always")], "Always"),
            (
                vec![Part::data(json!({"approved": true, "always": true}))],
                "",
            ),
        ] {
            assert!(matches!(
                answer(&network, always.0, always.1).unwrap(),
                Answer::AllowAlways { .. }
            ));
        }
        // Refused "always" is a refusal; "always" as a string is not a yes.
        let no = vec![Part::data(json!({"approved": false, "always": true}))];
        assert!(matches!(
            answer(&network, no, "").unwrap(),
            Answer::Deny { .. }
        ));
        let loose = vec![Part::data(json!({"approved": true, "always": "true"}))];
        assert_eq!(answer(&network, loose, "").unwrap(), Answer::AllowOnce);
        // A tool's approval does not offer it: the word is not an answer, and the data is once.
        assert_eq!(answer_to("always").unwrap_err().code, -32602);
        let data = vec![Part::data(json!({"approved": true, "always": true}))];
        assert_eq!(answer(&approval(), data, "").unwrap(), Answer::AllowOnce);
        let err = answer(&network, vec![Part::text("sometimes")], "sometimes").unwrap_err();
        assert!(err.message.contains("`always`"), "{}", err.message);
    }

    #[test]
    fn any_text_answers_a_question() {
        let ask = Ask::Question {
            call_id: "q".into(),
            question: "Which branch?".into(),
        };
        let input = read(&ask, &message(vec![Part::text("main")]), "main").unwrap();
        assert_eq!(
            input,
            LoopInput::UserResponse {
                call_id: "q".into(),
                text: "main".into()
            }
        );
    }
}
