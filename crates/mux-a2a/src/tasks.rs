//! The tasks a server keeps, in memory: found by id, listed newest first, and the oldest
//! ended ones forgotten past the cap.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::rpc::RpcError;
use crate::task::TaskEntry;
use crate::time;
use crate::wire::{ListTasksRequest, ListTasksResponse, TaskState};

/// Tasks per page when the client sets none, and the most it may ask for.
const DEFAULT_PAGE: i64 = 50;
const MAX_PAGE: i64 = 100;

/// The tasks.
pub(crate) struct Tasks {
    map: Mutex<HashMap<String, Arc<TaskEntry>>>,
    max: usize,
}

impl Tasks {
    /// At most `max` tasks are kept (running ones always are).
    pub(crate) fn new(max: usize) -> Self {
        Self {
            map: Mutex::default(),
            max: max.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<TaskEntry>>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps `task`, forgetting the oldest ended tasks beyond the cap; refuses it when every
    /// kept task is still in progress.
    pub(crate) fn insert(&self, task: Arc<TaskEntry>) -> Result<(), RpcError> {
        let mut map = self.lock();
        let id = task.id.clone();
        map.insert(id.clone(), task);
        if map.len() > self.max {
            let mut ended: Vec<(i64, String)> = map
                .values()
                .filter(|t| t.state().is_terminal())
                .map(|t| (t.updated_ms(), t.id.clone()))
                .collect();
            ended.sort();
            let excess = map.len() - self.max;
            for (_, id) in ended.into_iter().take(excess) {
                map.remove(&id);
            }
        }
        if map.len() > self.max {
            map.remove(&id);
            return Err(RpcError::unsupported(format!(
                "{} tasks are in progress, the most this server keeps; answer, cancel or wait for some",
                self.max
            )));
        }
        Ok(())
    }

    /// The task `id`, or task-not-found.
    pub(crate) fn get(&self, id: &str) -> Result<Arc<TaskEntry>, RpcError> {
        self.lock()
            .get(id)
            .cloned()
            .ok_or_else(|| RpcError::task_not_found(format!("no task `{}`", shown(id))))
    }

    /// A page of tasks, newest change first.
    pub(crate) fn list(&self, request: &ListTasksRequest) -> Result<ListTasksResponse, RpcError> {
        let page_size = match request.page_size {
            None | Some(0) => DEFAULT_PAGE,
            Some(n) if (1..=MAX_PAGE).contains(&n) => n,
            Some(n) => {
                return Err(RpcError::invalid_params(format!(
                    "pageSize {n} is out of range: 1 to {MAX_PAGE}"
                )));
            }
        };
        let history = history_length(request.history_length)?;
        let after = match request.status_timestamp_after.as_deref() {
            None | Some("") => None,
            Some(text) => Some(time::parse(text).ok_or_else(|| {
                RpcError::invalid_params(format!(
                    "statusTimestampAfter `{}` is not an RFC 3339 time",
                    shown(text)
                ))
            })?),
        };
        let offset = if request.page_token.is_empty() {
            0
        } else {
            request
                .page_token
                .parse::<usize>()
                .map_err(|_| RpcError::invalid_params("pageToken is not one this server gave"))?
        };
        let status = request.status.filter(|s| *s != TaskState::Unspecified);
        let mut matching: Vec<(i64, Arc<TaskEntry>)> = self
            .lock()
            .values()
            .filter(|t| request.context_id.is_empty() || t.context_id == request.context_id)
            .map(|t| (t.updated_ms(), Arc::clone(t)))
            .filter(|(updated, t)| {
                status.is_none_or(|s| t.state() == s) && after.is_none_or(|a| *updated > a)
            })
            .collect();
        matching.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.id.cmp(&b.1.id)));
        let total = matching.len();
        let page = usize::try_from(page_size).unwrap_or(50);
        let tasks = matching
            .iter()
            .skip(offset)
            .take(page)
            .map(|(_, t)| t.snapshot(history, request.include_artifacts))
            .collect();
        let next = offset.saturating_add(page);
        Ok(ListTasksResponse {
            tasks,
            next_page_token: if next < total {
                next.to_string()
            } else {
                String::new()
            },
            page_size,
            total_size: i64::try_from(total).unwrap_or(i64::MAX),
        })
    }
}

/// A `historyLength`: unset is the whole history; negative is refused.
pub(crate) fn history_length(value: Option<i64>) -> Result<Option<usize>, RpcError> {
    match value {
        None => Ok(None),
        Some(n) if n < 0 => Err(RpcError::invalid_params(format!(
            "historyLength {n} is negative"
        ))),
        Some(n) => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
    }
}

/// At most 100 characters of a client's string, for messages.
pub(crate) fn shown(text: &str) -> String {
    text.chars().take(100).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::wire::{Message, Part, Role};

    fn task(id: &str) -> Arc<TaskEntry> {
        let first = Message {
            message_id: "m".into(),
            context_id: "c".into(),
            task_id: id.into(),
            role: Role::User,
            parts: vec![Part::text("hi")],
            metadata: None,
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
        };
        Arc::new(TaskEntry::new(id.into(), "c".into(), first, 10))
    }

    #[test]
    fn ended_tasks_make_room_and_running_ones_do_not() {
        let tasks = Tasks::new(2);
        let (a, b) = (task("a"), task("b"));
        tasks.insert(Arc::clone(&a)).unwrap();
        tasks.insert(Arc::clone(&b)).unwrap();
        assert_eq!(tasks.insert(task("c")).unwrap_err().code, -32004);
        assert_eq!(tasks.get("c").unwrap_err().code, -32001);
        a.set_status(TaskState::Completed, None);
        tasks.insert(task("c")).unwrap();
        assert!(tasks.get("a").is_err(), "the ended task was forgotten");
        assert!(tasks.get("b").is_ok() && tasks.get("c").is_ok());
    }

    #[test]
    fn lists_page_and_filter() {
        let tasks = Tasks::new(100);
        for n in 0..5 {
            tasks.insert(task(&format!("t{n}"))).unwrap();
        }
        tasks
            .get("t3")
            .unwrap()
            .set_status(TaskState::Completed, None);
        let request =
            |json: serde_json::Value| -> ListTasksRequest { serde_json::from_value(json).unwrap() };
        let page = tasks
            .list(&request(serde_json::json!({"pageSize": 2})))
            .unwrap();
        assert_eq!((page.tasks.len(), page.total_size), (2, 5));
        let next = tasks
            .list(&request(
                serde_json::json!({"pageSize": 2, "pageToken": page.next_page_token}),
            ))
            .unwrap();
        assert!(
            next.tasks
                .iter()
                .all(|t| page.tasks.iter().all(|p| p.id != t.id))
        );
        let done = tasks
            .list(&request(
                serde_json::json!({"status": "TASK_STATE_COMPLETED"}),
            ))
            .unwrap();
        assert_eq!(done.tasks.len(), 1);
        assert_eq!(done.tasks[0].id, "t3");
        assert!(done.tasks[0].artifacts.is_empty());
        for bad in [
            serde_json::json!({"pageSize": 101}),
            serde_json::json!({"pageSize": -1}),
            serde_json::json!({"pageToken": "x"}),
            serde_json::json!({"historyLength": -1}),
            serde_json::json!({"statusTimestampAfter": "yesterday"}),
        ] {
            assert_eq!(
                tasks.list(&request(bad.clone())).unwrap_err().code,
                -32602,
                "{bad}"
            );
        }
        let other = tasks
            .list(&request(serde_json::json!({"contextId": "elsewhere"})))
            .unwrap();
        assert_eq!(other.total_size, 0);
    }
}
