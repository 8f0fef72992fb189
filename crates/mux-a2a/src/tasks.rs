//! The tasks this process runs now (in memory, capped), and `ListTasks` over every task in
//! the run store.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use mux_orchestrator::runs::RunStoreError;

use crate::rpc::{RpcError, shown};
use crate::stored::{self, Durable};
use crate::task::{Record, TaskEntry};
use crate::time;
use crate::wire::{ListTasksRequest, ListTasksResponse, TaskState};

/// Tasks per page when the client sets none, and the most it may ask for.
const DEFAULT_PAGE: i64 = 50;
const MAX_PAGE: i64 = 100;
/// Runs read from the store at once while listing.
const SCAN: usize = 1000;

/// The tasks this process runs.
pub(crate) struct Tasks {
    map: Mutex<HashMap<String, Arc<TaskEntry>>>,
    max: usize,
}

impl Tasks {
    /// At most `max` tasks run here at once.
    pub(crate) fn new(max: usize) -> Self {
        Self {
            map: Mutex::default(),
            max: max.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<TaskEntry>>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Refuses a new task when `max` run here already.
    pub(crate) fn has_room(&self) -> Result<(), RpcError> {
        if self.lock().len() >= self.max {
            return Err(RpcError::unsupported(format!(
                "{} tasks are in progress here, the most this server runs at once; answer, \
                 cancel or wait for some",
                self.max
            )));
        }
        Ok(())
    }

    /// Keeps `task` while it runs here.
    pub(crate) fn insert(&self, task: Arc<TaskEntry>) {
        self.lock().insert(task.id.clone(), task);
    }

    /// Forgets `id` (it ended or paused, and the store has it).
    pub(crate) fn remove(&self, id: &str) {
        self.lock().remove(id);
    }

    /// The task `id`, if it runs here.
    pub(crate) fn get(&self, id: &str) -> Option<Arc<TaskEntry>> {
        self.lock().get(id).cloned()
    }
}

/// Where a page of a listing starts: after the task updated at `at` with id `id`, newest
/// first.
fn read_token(token: &str) -> Result<Option<(i64, String)>, RpcError> {
    if token.is_empty() {
        return Ok(None);
    }
    let bad = || RpcError::invalid_params("pageToken is not one this server gave");
    let (at, id) = token.split_once('.').ok_or_else(bad)?;
    Ok(Some((at.parse().map_err(|_| bad())?, id.to_owned())))
}

/// A page of tasks, newest status change first, from every task in the run store.
pub(crate) async fn list(
    durable: &Durable,
    running: &Tasks,
    request: &ListTasksRequest,
) -> Result<ListTasksResponse, RpcError> {
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
    let from = read_token(&request.page_token)?;
    let status = request.status.filter(|s| *s != TaskState::Unspecified);
    let failed = |e: RunStoreError| match e {
        e if e.fault().is_some() => RpcError::unavailable("task", &e),
        e => RpcError::internal(format!("the task store failed: {e}")),
    };

    // (updated, id): every task that matches.
    let mut matching: Vec<(i64, String)> = Vec::new();
    let mut cursor = String::new();
    loop {
        let runs = durable
            .owner
            .store()
            .list_runs(stored::PREFIX, &cursor, SCAN)
            .await
            .map_err(failed)?;
        for (record, last) in &runs {
            let Some(id) = stored::task_id(&record.run_id) else {
                continue;
            };
            if !request.context_id.is_empty() && record.session_id != request.context_id {
                continue;
            }
            let (state, updated) = match running.get(id) {
                Some(task) => (task.state(), task.updated_ms()),
                None => match last.as_ref().and_then(Record::of) {
                    Some(record) => (record.state, record.at),
                    None => (TaskState::Submitted, time::now_ms()),
                },
            };
            if status.is_none_or(|s| s == state) && after.is_none_or(|a| updated > a) {
                matching.push((updated, id.to_owned()));
            }
        }
        match runs.last() {
            Some((last, _)) if runs.len() == SCAN => cursor = last.run_id.clone(),
            _ => break,
        }
    }
    matching.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let total = matching.len();
    let start = match &from {
        None => 0,
        Some((at, id)) => matching
            .iter()
            .position(|(u, i)| u < at || (u == at && i > id))
            .unwrap_or(total),
    };
    let page = usize::try_from(page_size).unwrap_or(50);
    let mut tasks = Vec::with_capacity(page);
    for (_, id) in matching.iter().skip(start).take(page) {
        let task = match running.get(id) {
            Some(task) => task,
            None => match durable.load(id, 1).await {
                Ok((_, task)) => Arc::new(task),
                // Forgotten meanwhile.
                Err(_) => continue,
            },
        };
        tasks.push(task.snapshot(history, request.include_artifacts));
    }
    let end = start.saturating_add(page);
    let next_page_token = match matching.get(end.saturating_sub(1)) {
        Some((at, id)) if end < total => format!("{at}.{id}"),
        _ => String::new(),
    };
    Ok(ListTasksResponse {
        tasks,
        next_page_token,
        page_size,
        total_size: i64::try_from(total).unwrap_or(i64::MAX),
    })
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
