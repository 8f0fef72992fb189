//! The A2A 1.0 objects as they travel in the JSON-RPC binding: the protobuf messages of
//! `a2a.proto` in ProtoJSON form (camelCase fields, enums by name, oneofs as one present
//! field). Requests accept the snake_case spellings ProtoJSON parsers accept too; unknown
//! fields are ignored.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Who sent a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    /// Not set (refused in requests).
    #[serde(rename = "ROLE_UNSPECIFIED")]
    Unspecified,
    /// The client.
    #[serde(rename = "ROLE_USER")]
    User,
    /// The agent.
    #[serde(rename = "ROLE_AGENT")]
    Agent,
}

/// Where a task is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TaskState {
    /// Not set (a filter that matches nothing).
    #[serde(rename = "TASK_STATE_UNSPECIFIED")]
    Unspecified,
    /// Received, not started.
    #[serde(rename = "TASK_STATE_SUBMITTED")]
    Submitted,
    /// The agent's loop is running.
    #[serde(rename = "TASK_STATE_WORKING")]
    Working,
    /// Finished with an answer.
    #[serde(rename = "TASK_STATE_COMPLETED")]
    Completed,
    /// Ended by an error.
    #[serde(rename = "TASK_STATE_FAILED")]
    Failed,
    /// Cancelled by the client.
    #[serde(rename = "TASK_STATE_CANCELED")]
    Canceled,
    /// Waits for the client's next message (an approval, or an answer to a question).
    #[serde(rename = "TASK_STATE_INPUT_REQUIRED")]
    InputRequired,
    /// Refused by the agent.
    #[serde(rename = "TASK_STATE_REJECTED")]
    Rejected,
    /// Waits for credentials.
    #[serde(rename = "TASK_STATE_AUTH_REQUIRED")]
    AuthRequired,
}

impl TaskState {
    /// Completed, failed, canceled or rejected: nothing more happens to the task.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Completed | Self::Failed | Self::Canceled | Self::Rejected
        )
    }

    /// Input- or auth-required: the task waits for the client.
    pub fn is_interrupted(self) -> bool {
        matches!(self, Self::InputRequired | Self::AuthRequired)
    }
}

/// One piece of a message or artifact: exactly one of `text`, `raw`, `url` or `data`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    /// Text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Bytes, base64-encoded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// A file by URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Structured data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// Extra data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// A file name, for `raw` and `url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// The media type of the content.
    #[serde(default, alias = "media_type", skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::default()
        }
    }

    /// A data part.
    pub fn data(data: Value) -> Self {
        Self {
            data: Some(data),
            ..Self::default()
        }
    }
}

/// A message between client and agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// The sender's id for the message (required).
    #[serde(default, alias = "message_id")]
    pub message_id: String,
    /// The context (conversation) it belongs to.
    #[serde(
        default,
        alias = "context_id",
        skip_serializing_if = "String::is_empty"
    )]
    pub context_id: String,
    /// The task it continues or belongs to.
    #[serde(default, alias = "task_id", skip_serializing_if = "String::is_empty")]
    pub task_id: String,
    /// The sender.
    #[serde(default = "unspecified_role")]
    pub role: Role,
    /// The content.
    #[serde(default)]
    pub parts: Vec<Part>,
    /// Extra data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Extension URIs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    /// Tasks the message refers to.
    #[serde(
        default,
        alias = "reference_task_ids",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub reference_task_ids: Vec<String>,
}

fn unspecified_role() -> Role {
    Role::Unspecified
}

impl Message {
    /// A message from the agent with `parts`, in `task` of `context`.
    pub fn agent(id: String, context: &str, task: &str, parts: Vec<Part>) -> Self {
        Self {
            message_id: id,
            context_id: context.to_owned(),
            task_id: task.to_owned(),
            role: Role::Agent,
            parts,
            metadata: None,
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
        }
    }
}

/// A task's state, with the message that goes with it and when it was set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    /// The state.
    pub state: TaskState,
    /// What the agent says with it (the question of an `input-required` state).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// When, as RFC 3339 in UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

/// An output of a task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Its id, unique in the task.
    pub artifact_id: String,
    /// A name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The content.
    pub parts: Vec<Part>,
    /// Extra data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// A unit of work: one request to the agent, through its approvals, to its answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// The task id (the server's).
    pub id: String,
    /// The context: a mux session.
    pub context_id: String,
    /// The current status.
    pub status: TaskStatus,
    /// The outputs so far.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    /// The messages of the task, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Message>,
    /// Extra data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// A status change, streamed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    /// The task.
    pub task_id: String,
    /// Its context.
    pub context_id: String,
    /// The new status.
    pub status: TaskStatus,
}

/// An artifact or a chunk of one, streamed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    /// The task.
    pub task_id: String,
    /// Its context.
    pub context_id: String,
    /// The artifact, or the chunk.
    pub artifact: Artifact,
    /// Whether the parts extend the artifact of the same id (else they replace it).
    #[serde(default)]
    pub append: bool,
    /// Whether this is the artifact's last chunk.
    #[serde(default)]
    pub last_chunk: bool,
}

/// One item of a stream (and of `SendMessage`'s answer, which is a task or a message).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamResponse {
    /// The whole task.
    Task(Task),
    /// A message outside any task.
    Message(Message),
    /// A status change.
    StatusUpdate(TaskStatusUpdateEvent),
    /// An artifact chunk.
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

/// `SendMessage` and `SendStreamingMessage` parameters.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    /// The tenant (unused: one agent per server).
    #[serde(default)]
    pub tenant: String,
    /// The message (required).
    #[serde(default)]
    pub message: Option<Message>,
    /// How to answer.
    #[serde(default)]
    pub configuration: Option<SendMessageConfiguration>,
    /// Extra data.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
}

/// How `SendMessage` answers.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    /// Output media types the client accepts.
    #[serde(default, alias = "accepted_output_modes")]
    pub accepted_output_modes: Vec<String>,
    /// A push notification target (refused: this server sends none).
    #[serde(default, alias = "task_push_notification_config")]
    pub task_push_notification_config: Option<Value>,
    /// At most this many messages of history in the answer.
    #[serde(default, alias = "history_length")]
    pub history_length: Option<i64>,
    /// Answer at once with the submitted task instead of waiting for it to end or pause.
    #[serde(default, alias = "return_immediately")]
    pub return_immediately: bool,
}

/// `GetTask` parameters.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskRequest {
    /// The tenant (unused).
    #[serde(default)]
    pub tenant: String,
    /// The task id.
    #[serde(default)]
    pub id: String,
    /// At most this many messages of history.
    #[serde(default, alias = "history_length")]
    pub history_length: Option<i64>,
}

/// `ListTasks` parameters.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksRequest {
    /// The tenant (unused).
    #[serde(default)]
    pub tenant: String,
    /// Only tasks of this context.
    #[serde(default, alias = "context_id")]
    pub context_id: String,
    /// Only tasks in this state. As the reference server reads it, an enum value it does
    /// not know (`@a2a-js/sdk` sends `UNRECOGNIZED` for an unset filter) is no filter.
    #[serde(default, deserialize_with = "lenient_state")]
    pub status: Option<TaskState>,
    /// Tasks per page (1 to 100; 50 when unset).
    #[serde(default, alias = "page_size")]
    pub page_size: Option<i64>,
    /// Where the page starts: a previous answer's `nextPageToken`.
    #[serde(default, alias = "page_token")]
    pub page_token: String,
    /// At most this many messages of history per task.
    #[serde(default, alias = "history_length")]
    pub history_length: Option<i64>,
    /// Only tasks whose status changed after this time (RFC 3339).
    #[serde(default, alias = "status_timestamp_after")]
    pub status_timestamp_after: Option<String>,
    /// Whether to include the artifacts.
    #[serde(default, alias = "include_artifacts")]
    pub include_artifacts: bool,
}

/// A task state by name or number; an unknown name or number is unspecified.
fn lenient_state<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<TaskState>, D::Error> {
    const BY_NUMBER: [TaskState; 9] = [
        TaskState::Unspecified,
        TaskState::Submitted,
        TaskState::Working,
        TaskState::Completed,
        TaskState::Failed,
        TaskState::Canceled,
        TaskState::InputRequired,
        TaskState::Rejected,
        TaskState::AuthRequired,
    ];
    Ok(match Option::<Value>::deserialize(deserializer)? {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) => {
            Some(serde_json::from_value(Value::String(name)).unwrap_or(TaskState::Unspecified))
        }
        Some(Value::Number(n)) => Some(
            n.as_u64()
                .and_then(|n| BY_NUMBER.get(usize::try_from(n).ok()?).copied())
                .unwrap_or(TaskState::Unspecified),
        ),
        Some(other) => {
            return Err(serde::de::Error::custom(format!(
                "status must be a task state name, not {other}"
            )));
        }
    })
}

/// `ListTasks` answer.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResponse {
    /// The page.
    pub tasks: Vec<Task>,
    /// The next page's token; empty on the last page.
    pub next_page_token: String,
    /// The page size used.
    pub page_size: i64,
    /// How many tasks match in all.
    pub total_size: i64,
}

/// `CancelTask` and `SubscribeToTask` parameters.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdRequest {
    /// The tenant (unused).
    #[serde(default)]
    pub tenant: String,
    /// The task id.
    #[serde(default)]
    pub id: String,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn a_stream_item_is_one_camel_case_field() {
        let item = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus {
                state: TaskState::InputRequired,
                message: None,
                timestamp: None,
            },
        });
        assert_eq!(
            serde_json::to_value(&item).unwrap(),
            json!({"statusUpdate": {"taskId": "t", "contextId": "c",
                "status": {"state": "TASK_STATE_INPUT_REQUIRED"}}})
        );
    }

    #[test]
    fn a_message_reads_as_the_sdks_send_it() {
        let sent = json!({"messageId": "m", "role": "ROLE_USER",
            "parts": [{"text": "hi"}, {"data": {"a": 1}, "mediaType": "application/json"}],
            "unknownField": true});
        let message: Message = serde_json::from_value(sent).unwrap();
        assert_eq!(message.role, Role::User);
        assert_eq!(message.parts[0].text.as_deref(), Some("hi"));
        assert_eq!(message.parts[1].data, Some(json!({"a": 1})));
        let snake: Message =
            serde_json::from_value(json!({"message_id": "m", "task_id": "t", "role": "ROLE_USER"}))
                .unwrap();
        assert_eq!(
            (snake.message_id.as_str(), snake.task_id.as_str()),
            ("m", "t")
        );
    }

    #[test]
    fn a_list_filter_reads_names_numbers_and_unknowns() {
        let status = |v: Value| {
            serde_json::from_value::<ListTasksRequest>(json!({"status": v})).map(|r| r.status)
        };
        assert_eq!(
            status(json!("TASK_STATE_WORKING")).unwrap(),
            Some(TaskState::Working)
        );
        assert_eq!(status(json!(3)).unwrap(), Some(TaskState::Completed));
        assert_eq!(
            status(json!("UNRECOGNIZED")).unwrap(),
            Some(TaskState::Unspecified)
        );
        assert_eq!(status(json!(99)).unwrap(), Some(TaskState::Unspecified));
        assert_eq!(status(Value::Null).unwrap(), None);
        assert!(status(json!({"a": 1})).is_err());
    }
}
