//! The A2A 1.0 methods, on the tasks and contexts of one server.

use std::sync::Arc;
use std::time::Duration;

use mux_orchestrator::LoopInput;

use crate::answer;
use crate::contexts::Contexts;
use crate::rpc::{Request, RpcError};
use crate::runner;
use crate::task::TaskEntry;
use crate::tasks::{Tasks, history_length, shown};
use crate::wire::{
    GetTaskRequest, ListTasksRequest, Message, Role, SendMessageRequest, StreamResponse,
    TaskIdRequest, TaskState,
};
use mux_http::unguessable as new_id;

/// How long `CancelTask` waits for the run to stop before answering with the task as it is.
const CANCEL_WAIT: Duration = Duration::from_secs(10);

/// What a method answers.
pub(crate) enum Reply {
    /// A result, as JSON text.
    Result(String),
    /// A stream: `first` (JSON text), then the task's updates from `cursor` on.
    Stream {
        task: Arc<TaskEntry>,
        cursor: u64,
        first: String,
    },
}

/// The methods' state.
pub(crate) struct Methods {
    pub(crate) tasks: Tasks,
    pub(crate) contexts: Contexts,
    pub(crate) max_log: usize,
}

/// The methods of A2A 0.3, named in the error a 0.3 client gets.
const LEGACY: [&str; 5] = [
    "message/send",
    "message/stream",
    "tasks/get",
    "tasks/cancel",
    "tasks/resubscribe",
];

impl Methods {
    /// Runs `request`'s method.
    pub(crate) async fn call(&self, request: &Request) -> Result<Reply, RpcError> {
        match request.method.as_str() {
            "SendMessage" => self.send(request.params()?, false).await,
            "SendStreamingMessage" => self.send(request.params()?, true).await,
            "GetTask" => self.get(request.params()?),
            "ListTasks" => self.list(request.params()?),
            "CancelTask" => self.cancel(request.params()?).await,
            "SubscribeToTask" => self.subscribe(request.params()?),
            "CreateTaskPushNotificationConfig"
            | "GetTaskPushNotificationConfig"
            | "ListTaskPushNotificationConfigs"
            | "DeleteTaskPushNotificationConfig" => Err(RpcError::push_not_supported(
                "this agent sends no push notifications (its card says pushNotifications: false)",
            )),
            "GetExtendedAgentCard" => Err(RpcError::no_extended_card(
                "this agent has no extended card",
            )),
            legacy if LEGACY.contains(&legacy) => Err(RpcError::method_not_found(format!(
                "`{legacy}` is an A2A 0.3 method; this server speaks A2A 1.0 (SendMessage, \
                 SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask)"
            ))),
            other => Err(RpcError::method_not_found(format!(
                "no method `{}`",
                shown(other)
            ))),
        }
    }

    async fn send(&self, request: SendMessageRequest, streaming: bool) -> Result<Reply, RpcError> {
        let Some(mut message) = request.message else {
            return Err(RpcError::invalid_params("`message` is required"));
        };
        if message.message_id.is_empty() {
            return Err(RpcError::invalid_params("`message.messageId` is required"));
        }
        if message.role != Role::User {
            return Err(RpcError::invalid_params("`message.role` must be ROLE_USER"));
        }
        let configuration = request.configuration.unwrap_or_default();
        if configuration.task_push_notification_config.is_some() {
            return Err(RpcError::push_not_supported(
                "this agent sends no push notifications; leave taskPushNotificationConfig out",
            ));
        }
        let history = history_length(configuration.history_length)?;
        let text = prompt_text(&message)?;

        let task = if message.task_id.is_empty() {
            self.start(&mut message, &text).await?
        } else {
            self.answer(message, &text).await?
        };
        if streaming {
            let (cursor, snapshot) = task.position_and_snapshot(history);
            return Ok(Reply::Stream {
                task,
                cursor,
                first: json_text(&StreamResponse::Task(snapshot)),
            });
        }
        if !configuration.return_immediately {
            task.settled().await;
        }
        let snapshot = task.snapshot(history, true);
        Ok(Reply::Result(json_text(&StreamResponse::Task(snapshot))))
    }

    /// A new task on the message's context (a new one when it names none).
    async fn start(&self, message: &mut Message, text: &str) -> Result<Arc<TaskEntry>, RpcError> {
        let wanted = (!message.context_id.is_empty()).then_some(message.context_id.as_str());
        let context = self.contexts.open(wanted).await?;
        message.context_id = context.id.clone();
        message.task_id = new_id();
        let task = Arc::new(TaskEntry::new(
            message.task_id.clone(),
            context.id.clone(),
            message.clone(),
            self.max_log,
        ));
        context.claim(&task)?;
        if let Err(full) = self.tasks.insert(Arc::clone(&task)) {
            // Releases the context.
            task.set_status(TaskState::Rejected, None);
            return Err(full);
        }
        match context.orchestrator.run(text) {
            Ok(run) => {
                task.set_input(run.input.clone());
                tokio::spawn(runner::follow(Arc::clone(&task), run));
                Ok(task)
            }
            Err(e) => {
                let reply = runner::agent_message(
                    &task,
                    vec![crate::wire::Part::text(format!(
                        "The run did not start: {e}"
                    ))],
                );
                task.set_status(TaskState::Failed, Some(reply));
                Err(RpcError::internal(format!(
                    "the run of task `{}` did not start: {e}",
                    task.id
                )))
            }
        }
    }

    /// The message answers what the task `message.taskId` waits for.
    async fn answer(&self, mut message: Message, text: &str) -> Result<Arc<TaskEntry>, RpcError> {
        let task = self.tasks.get(&message.task_id)?;
        if !message.context_id.is_empty() && message.context_id != task.context_id {
            return Err(RpcError::invalid_params(format!(
                "contextId `{}` is not the context of task `{}`",
                shown(&message.context_id),
                task.id
            )));
        }
        let state = task.state();
        if state.is_terminal() {
            return Err(RpcError::unsupported(format!(
                "task `{}` has ended ({state:?}); send a new message without taskId to start another",
                task.id
            )));
        }
        let (Some(ask), TaskState::InputRequired) = (task.first_ask(), state) else {
            return Err(RpcError::unsupported(format!(
                "task `{}` is {state:?}, not waiting for input; wait for it, or cancel it",
                task.id
            )));
        };
        let input = answer::read(&ask, &message, text)?;
        let Some(sender) = task.input() else {
            return Err(RpcError::internal(format!(
                "task `{}` has no run to answer",
                task.id
            )));
        };
        message.context_id = task.context_id.clone();
        task.record(message);
        let call_id = match &input {
            LoopInput::ToolApproval { call_id, .. } | LoopInput::UserResponse { call_id, .. } => {
                call_id.clone()
            }
            _ => String::new(),
        };
        task.remove_ask(&call_id);
        runner::resume(&task);
        if !sender.send(input).await {
            return Err(RpcError::internal(format!(
                "the run of task `{}` has ended",
                task.id
            )));
        }
        Ok(task)
    }

    fn get(&self, request: GetTaskRequest) -> Result<Reply, RpcError> {
        let task = self.tasks.get(required_id(&request.id)?)?;
        let history = history_length(request.history_length)?;
        Ok(Reply::Result(json_text(&task.snapshot(history, true))))
    }

    fn list(&self, request: ListTasksRequest) -> Result<Reply, RpcError> {
        Ok(Reply::Result(json_text(&self.tasks.list(&request)?)))
    }

    async fn cancel(&self, request: TaskIdRequest) -> Result<Reply, RpcError> {
        let task = self.tasks.get(required_id(&request.id)?)?;
        let not_cancelable = |state: TaskState| {
            RpcError::task_not_cancelable(format!("task `{}` has ended ({state:?})", request.id))
        };
        let state = task.state();
        if state.is_terminal() {
            return Err(not_cancelable(state));
        }
        if let Some(input) = task.input() {
            input.send(LoopInput::Cancel).await;
        }
        let _ = tokio::time::timeout(CANCEL_WAIT, task.ended()).await;
        match task.state() {
            state @ (TaskState::Completed | TaskState::Failed | TaskState::Rejected) => {
                Err(not_cancelable(state))
            }
            _ => Ok(Reply::Result(json_text(&task.snapshot(None, true)))),
        }
    }

    fn subscribe(&self, request: TaskIdRequest) -> Result<Reply, RpcError> {
        let task = self.tasks.get(required_id(&request.id)?)?;
        let state = task.state();
        if state.is_terminal() {
            return Err(RpcError::unsupported(format!(
                "task `{}` has ended ({state:?}); read it with GetTask",
                task.id
            )));
        }
        let (cursor, snapshot) = task.position_and_snapshot(None);
        Ok(Reply::Stream {
            task,
            cursor,
            first: json_text(&StreamResponse::Task(snapshot)),
        })
    }
}

fn required_id(id: &str) -> Result<&str, RpcError> {
    if id.is_empty() {
        Err(RpcError::invalid_params("`id` is required"))
    } else {
        Ok(id)
    }
}

/// The prompt: the text parts, and data parts as JSON, one per line. Files are refused.
fn prompt_text(message: &Message) -> Result<String, RpcError> {
    let mut lines = Vec::with_capacity(message.parts.len());
    for part in &message.parts {
        if let Some(text) = &part.text {
            lines.push(text.clone());
        } else if let Some(data) = &part.data {
            lines.push(data.to_string());
        } else {
            let what = if part.raw.is_some() {
                "raw bytes"
            } else {
                "a file URL"
            };
            return Err(RpcError::content_type(format!(
                "this agent reads text and data parts, not {what}"
            )));
        }
    }
    if lines.is_empty() {
        return Err(RpcError::invalid_params("the message has no parts"));
    }
    Ok(lines.join("\n"))
}

fn json_text(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "{}".into())
}
