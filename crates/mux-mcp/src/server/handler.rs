//! The rmcp `ServerHandler` over a mux executor: tools, calls (progress, logging,
//! cancellation, `input_required` rounds), and the catalog's resources and prompts.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use mux_tool::{CallOutcome, CallScope, Executor, ProgressSender, ToolCall, ToolUpdate};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, ErrorData,
    GetPromptRequestParams, GetPromptResponse, Implementation, InputRequests, InputRequiredResult,
    InputResponses, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, LoggingLevel, LoggingMessageNotificationParam, PaginatedRequestParams,
    ProgressNotificationParam, ProgressToken, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, ServerCapabilities, ServerConfig,
    SetLevelRequestParams, SubscribeRequestParams, SubscriptionFilter, Tool,
    UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{RoleServer, ServerHandler};
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::{CancellationToken, DropGuard};

use super::callers::{self, CALLER_TIMEOUT, CallerError, Callers, Missing, Round, Route};
use super::catalog::{Catalog, CatalogError, PromptOutcome};
use super::convert;

/// How long a call paused on an `input_required` result waits for the client to send it again.
pub const PAUSE_LIMIT: Duration = Duration::from_secs(300);
/// Calls parked on `input_required` at once, across clients; a question beyond it is refused.
pub const MAX_PAUSED: usize = 1024;
/// Progress and output updates buffered per call before the tool waits.
const PROGRESS_BUFFER: usize = 64;
/// Rounds of questions one `prompts/get` may ask a session client before it is refused.
const PROMPT_ROUNDS: usize = 8;

/// What every session of one server shares.
pub(crate) struct Shared {
    pub(crate) executor: Executor,
    pub(crate) callers: Callers,
    pub(crate) catalog: Option<Arc<dyn Catalog>>,
    pub(crate) info: Implementation,
    pub(crate) instructions: Option<String>,
    paused: Mutex<HashMap<String, Paused>>,
    next_call: AtomicU64,
}

impl Shared {
    pub(crate) fn new(
        executor: Executor,
        callers: Callers,
        catalog: Option<Arc<dyn Catalog>>,
        info: Implementation,
        instructions: Option<String>,
    ) -> Self {
        Self {
            executor,
            callers,
            catalog,
            info,
            instructions,
            paused: Mutex::new(HashMap::new()),
            next_call: AtomicU64::new(1),
        }
    }

    fn paused(&self) -> std::sync::MutexGuard<'_, HashMap<String, Paused>> {
        self.paused
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A call in progress: the executor's future and what it reports.
struct Running {
    tool: String,
    outcome: Pin<Box<dyn Future<Output = CallOutcome> + Send>>,
    asks: mpsc::Receiver<Round>,
    updates: mpsc::Receiver<mux_tool::ProgressEvent>,
    /// Set when the tool found the client lacks a capability it requires.
    missing: Missing,
    cancel: CancellationToken,
    // Cancels the call when the call is dropped unfinished (client gone, pause expired).
    _stop: DropGuard,
}

/// A call waiting for its client to send it again with answers.
struct Paused {
    running: Running,
    requests: InputRequests,
    reply: oneshot::Sender<InputResponses>,
}

/// The `ServerHandler` of one session (over stdio, one per process; over HTTP, one per
/// session or stateless request).
#[derive(Clone)]
pub(crate) struct Handler {
    shared: Arc<Shared>,
    /// The least severe log level the client wants (`logging/setLevel`), as `level_rank`.
    level: Arc<AtomicU8>,
    /// Cancelled when the session's last handler drops: stops its list-changed watcher.
    session: CancellationToken,
    _session_end: Arc<DropGuard>,
}

impl Handler {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        let session = CancellationToken::new();
        Self {
            shared,
            level: Arc::new(AtomicU8::new(0)),
            _session_end: Arc::new(session.clone().drop_guard()),
            session,
        }
    }

    /// A receiver of the tool set's changes that has seen the current one.
    fn tool_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        let mut changes = self.shared.executor.tools().registry().changes();
        changes.mark_unchanged();
        changes
    }

    /// Starts the call `name` and drives it to a result or a pause.
    async fn start(
        &self,
        params: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = params.name.to_string();
        if self.shared.executor.tools().get(&name).is_none() {
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{name}`"),
                Some(json!({"tool": name})),
            ));
        }
        let input = Value::Object(params.arguments.unwrap_or_default());
        let number = self.shared.next_call.fetch_add(1, Ordering::Relaxed);
        let call_id = format!("mcp-{number}");
        let capabilities = cx.client_capabilities().unwrap_or_default();
        let (asks_tx, asks) = mpsc::channel(1);
        let route = if uses_rounds(cx.protocol_version().as_ref()) {
            Route::Rounds {
                asks: asks_tx,
                capabilities,
            }
        } else {
            Route::Peer {
                peer: cx.peer.clone(),
                capabilities,
            }
        };
        let missing = Missing::default();
        let guard = self
            .shared
            .callers
            .enter(&call_id, route, Arc::clone(&missing));
        let (updates_tx, updates) = mpsc::channel(PROGRESS_BUFFER);
        let cancel = CancellationToken::new();
        let scope = CallScope {
            cancel: cancel.clone(),
            progress: ProgressSender::new(updates_tx),
        };
        let executor = self.shared.executor.clone();
        let call = ToolCall::new(call_id, name.clone(), input);
        let outcome = Box::pin(async move {
            let outcome = executor.execute(call, &scope).await;
            drop(guard);
            outcome
        });
        let running = Running {
            tool: name,
            outcome,
            asks,
            updates,
            missing,
            _stop: cancel.clone().drop_guard(),
            cancel,
        };
        self.drive(running, cx).await
    }

    /// Sends a paused call its answers and drives it on.
    async fn resume(
        &self,
        state: &str,
        params: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(paused) = self.shared.paused().remove(state) else {
            return Err(ErrorData::invalid_params(
                "unknown, expired or already used requestState",
                None,
            ));
        };
        if paused.running.tool != params.name {
            return Err(ErrorData::invalid_params(
                format!(
                    "this requestState belongs to a call of `{}`, not `{}`",
                    paused.running.tool, params.name
                ),
                None,
            ));
        }
        let mut responses = params.input_responses.unwrap_or_default();
        let answered: InputResponses = paused
            .requests
            .keys()
            .filter_map(|key| {
                responses
                    .remove(key)
                    .filter(Value::is_object)
                    .map(|value| (key.clone(), value))
            })
            .collect();
        if answered.len() < paused.requests.len() {
            // Some answer is missing or not an object: ask the same questions again.
            let requests = paused.requests.clone();
            let token = self.pause(paused);
            return Ok(CallToolResponse::InputRequired(InputRequiredResult::new(
                Some(requests),
                Some(token),
            )));
        }
        let Paused { running, reply, .. } = paused;
        // The asker waits on this; if it has gone (the call ended meanwhile), drive sees the end.
        let _ = reply.send(answered);
        self.drive(running, cx).await
    }

    /// Polls the call while forwarding its updates, until it ends, asks, or is cancelled.
    async fn drive(
        &self,
        mut running: Running,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let token = cx.meta.get_progress_token();
        // 2026-07-28 requests carry their log level; without one, no log messages at all.
        // Older sessions use the level `logging/setLevel` set (everything by default).
        let log_floor = if uses_rounds(cx.protocol_version().as_ref()) {
            cx.meta.log_level().map(level_rank)
        } else {
            Some(self.level.load(Ordering::Relaxed))
        };
        loop {
            tokio::select! {
                biased;
                outcome = &mut running.outcome => {
                    while let Ok(event) = running.updates.try_recv() {
                        self.forward(&cx, token.as_ref(), log_floor, &running.tool, event.update).await;
                    }
                    if let Some(capability) = running.missing.get() {
                        return Err(missing_capability(capability));
                    }
                    return Ok(CallToolResponse::Complete(convert::result(outcome.into_output())));
                }
                Some(event) = running.updates.recv() => {
                    self.forward(&cx, token.as_ref(), log_floor, &running.tool, event.update).await;
                }
                Some(round) = running.asks.recv() => {
                    if self.shared.paused().len() >= MAX_PAUSED {
                        // Too many calls parked: refuse this question (the asker hears no
                        // answer) rather than hold unbounded state for clients.
                        drop(round);
                        continue;
                    }
                    let requests = round.requests.clone();
                    let token = self.pause(Paused { running, requests: round.requests, reply: round.reply });
                    return Ok(CallToolResponse::InputRequired(InputRequiredResult::new(
                        Some(requests),
                        Some(token),
                    )));
                }
                () = cx.ct.cancelled(), if !running.cancel.is_cancelled() => {
                    // notifications/cancelled: stop the tool, then let the executor finish
                    // within its cancel grace (it aborts the tool's task after that).
                    running.cancel.cancel();
                }
            }
        }
    }

    /// Parks a call under a fresh `requestState` for [`PAUSE_LIMIT`].
    fn pause(&self, paused: Paused) -> String {
        let token = request_state();
        self.shared.paused().insert(token.clone(), paused);
        let shared: Weak<Shared> = Arc::downgrade(&self.shared);
        let key = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(PAUSE_LIMIT).await;
            if let Some(shared) = shared.upgrade() {
                // Dropping it cancels the call and tells the asker no answer came.
                let expired = shared.paused().remove(&key);
                drop(expired);
            }
        });
        token
    }

    /// One update as the client sees it: progress as `notifications/progress` (when the call
    /// carried a progress token), output as `notifications/message` at `info` (when the
    /// client's log level admits `info`).
    async fn forward(
        &self,
        cx: &RequestContext<RoleServer>,
        token: Option<&ProgressToken>,
        log_floor: Option<u8>,
        tool: &str,
        update: ToolUpdate,
    ) {
        match update {
            ToolUpdate::Progress {
                progress,
                total,
                message,
            } => {
                if let Some(token) = token {
                    let mut param = ProgressNotificationParam::new(token.clone(), progress);
                    param.total = total;
                    param.message = message;
                    let _ = cx.peer.notify_progress(param).await;
                }
            }
            ToolUpdate::Output { text }
                if log_floor.is_some_and(|floor| level_rank(LoggingLevel::Info) >= floor) =>
            {
                let param = LoggingMessageNotificationParam::new(LoggingLevel::Info, json!(text))
                    .with_logger(tool);
                let _ = cx.peer.notify_logging_message(param).await;
            }
            _ => {}
        }
    }

    fn catalog(&self) -> Result<&Arc<dyn Catalog>, ErrorData> {
        self.shared
            .catalog
            .as_ref()
            .ok_or_else(ErrorData::method_not_found::<rmcp::model::ReadResourceRequestMethod>)
    }
}

/// Whether the request's version has `input_required` rounds (2026-07-28 and later).
fn uses_rounds(version: Option<&ProtocolVersion>) -> bool {
    version.is_some_and(|v| *v >= ProtocolVersion::V_2026_07_28)
}

/// 128 random bits, hex: the handle of a paused call. Unguessable, so one client cannot
/// answer another's call.
fn request_state() -> String {
    mux_http::unguessable()
}

/// Severity order of MCP log levels, least severe first.
fn level_rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// `-32021` naming the capability (`{"elicitation": {}}`, say).
fn missing_capability(capability: &str) -> ErrorData {
    let required = serde_json::from_value(json!({ capability: {} })).unwrap_or_default();
    ErrorData::missing_required_client_capability(required)
}

/// Asks a session client `requests` over its session, each within [`CALLER_TIMEOUT`].
async fn ask_session(
    cx: &RequestContext<RoleServer>,
    requests: InputRequests,
) -> Result<InputResponses, ErrorData> {
    let mut answers = InputResponses::new();
    for (key, request) in requests {
        let asked = tokio::time::timeout(CALLER_TIMEOUT, callers::ask_peer(&cx.peer, request));
        let answer = match asked.await {
            Ok(Ok(answer)) => answer,
            Ok(Err(reason)) => {
                return Err(ErrorData::internal_error(
                    format!("the client did not answer `{key}`: {reason}"),
                    None,
                ));
            }
            Err(_) => {
                return Err(ErrorData::internal_error(
                    format!("the client did not answer `{key}` in time"),
                    None,
                ));
            }
        };
        answers.insert(key, answer);
    }
    Ok(answers)
}

fn catalog_error(err: CatalogError) -> ErrorData {
    match &err {
        CatalogError::ResourceNotFound { uri } => {
            ErrorData::invalid_params(err.to_string(), Some(json!({"uri": uri})))
        }
        CatalogError::PromptNotFound { name } => {
            ErrorData::invalid_params(err.to_string(), Some(json!({"name": name})))
        }
        CatalogError::InvalidArguments(_) => ErrorData::invalid_params(err.to_string(), None),
    }
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        let offers = self
            .shared
            .catalog
            .as_ref()
            .map(|catalog| catalog.offers())
            .unwrap_or_default();
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_logging()
            .build();
        if offers.resources {
            let resources = ServerCapabilities::builder()
                .enable_resources()
                .enable_resources_subscribe()
                .build();
            capabilities.resources = resources.resources;
        }
        if offers.prompts {
            capabilities.prompts = ServerCapabilities::builder()
                .enable_prompts()
                .build()
                .prompts;
        }
        if offers.completions {
            capabilities.completions = ServerCapabilities::builder()
                .enable_completions()
                .build()
                .completions;
        }
        let mut info = ServerConfig::new(capabilities).with_server_info(self.shared.info.clone());
        if let Some(instructions) = &self.shared.instructions {
            info = info.with_instructions(instructions.clone());
        }
        info
    }

    /// A 2025-11-25 session: `notifications/tools/list_changed` whenever the registry's
    /// tools change, until the session ends.
    async fn on_initialized(&self, cx: NotificationContext<RoleServer>) {
        let mut changes = self.tool_changes();
        let session = self.session.clone();
        let peer = cx.peer;
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = session.cancelled() => return,
                    changed = changes.changed() => {
                        if changed.is_err() || peer.is_transport_closed() {
                            return;
                        }
                        if peer.notify_tool_list_changed().await.is_err() {
                            return;
                        }
                    }
                }
            }
        });
    }

    /// `subscriptions/listen` (2026-07-28): any filter; rmcp keeps what the capabilities
    /// advertise.
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }

    /// One listen stream: `notifications/tools/list_changed` (when its filter asked for it)
    /// whenever the registry's tools change, until the client closes the stream. Resources
    /// and prompts here do not change, so nothing else is ever sent.
    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        let mut changes = self.tool_changes();
        let wants_tools = subscription.sink().accepted().tools_list_changed == Some(true);
        loop {
            tokio::select! {
                () = subscription.cancelled() => return Ok(()),
                changed = changes.changed() => {
                    if changed.is_err() {
                        return Ok(());
                    }
                    if wants_tools && subscription.sink().notify_tool_list_changed().await.is_err() {
                        return Ok(());
                    }
                }
            }
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut specs = self.shared.executor.tools().shared_specs();
        specs.sort_by(|a, b| a.name.as_str().cmp(b.name.as_str()));
        let tools: Vec<Tool> = specs.iter().map(|spec| convert::tool(spec)).collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.shared
            .executor
            .tools()
            .get(name)
            .map(|tool| convert::tool(tool.spec()))
    }

    async fn call_tool(
        &self,
        mut params: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        match params.request_state.take() {
            Some(state) => self.resume(&state, params, cx).await,
            None => self.start(params, cx).await,
        }
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.level
            .store(level_rank(request.level), Ordering::Relaxed);
        Ok(())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let resources = self
            .shared
            .catalog
            .as_ref()
            .map(|c| c.resources())
            .unwrap_or_default();
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let templates = self
            .shared
            .catalog
            .as_ref()
            .map(|c| c.resource_templates())
            .unwrap_or_default();
        Ok(ListResourceTemplatesResult::with_all_items(templates))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let contents = self.catalog()?.read(&request.uri).map_err(catalog_error)?;
        Ok(ReadResourceResponse::Complete(ReadResourceResult::new(
            contents,
        )))
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // Resources here do not change, so a subscription never fires; accept known ones.
        self.catalog()?.read(&request.uri).map_err(catalog_error)?;
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        _request: UnsubscribeRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let prompts = self
            .shared
            .catalog
            .as_ref()
            .map(|c| c.prompts())
            .unwrap_or_default();
        Ok(ListPromptsResult::with_all_items(prompts))
    }

    /// The catalog's prompt; its questions go to the client as `input_required` rounds
    /// (2026-07-28) or as requests over the session (older), then it is asked again.
    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let catalog = Arc::clone(self.catalog()?);
        let arguments: Map<String, Value> = request.arguments.unwrap_or_default();
        let mut inputs = request.input_responses.unwrap_or_default();
        let capabilities = cx.client_capabilities().unwrap_or_default();
        for _ in 0..PROMPT_ROUNDS {
            let requests = match catalog
                .prompt_with_inputs(&request.name, &arguments, &inputs)
                .map_err(catalog_error)?
            {
                PromptOutcome::Ready(prompt) => return Ok(GetPromptResponse::Complete(prompt)),
                PromptOutcome::NeedsInput(requests) => requests,
            };
            for question in requests.values() {
                if let Err(CallerError::Unsupported { capability }) =
                    callers::check(&capabilities, question)
                {
                    return Err(missing_capability(capability));
                }
            }
            if uses_rounds(cx.protocol_version().as_ref()) {
                // Stateless: the answers come back in the next request, and the catalog
                // reads them from there; no state to keep or to trust.
                return Ok(GetPromptResponse::InputRequired(InputRequiredResult::new(
                    Some(requests),
                    None,
                )));
            }
            inputs.extend(ask_session(&cx, requests).await?);
        }
        Err(ErrorData::internal_error(
            format!(
                "prompt `{}` asked for input more than {PROMPT_ROUNDS} times",
                request.name
            ),
            None,
        ))
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        Ok(self
            .shared
            .catalog
            .as_ref()
            .map(|c| c.complete(&request))
            .unwrap_or_default())
    }
}
