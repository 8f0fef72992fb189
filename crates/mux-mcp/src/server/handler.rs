//! The rmcp `ServerHandler` over a mux executor: tools, calls (progress, logging,
//! cancellation, `input_required` rounds), and the catalog's resources and prompts.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::future::Either;
use mux_tool::{CallOutcome, CallScope, Executor, ProgressSender, ToolCall, ToolUpdate};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, CustomRequest,
    CustomResult, ErrorData, GetPromptRequestParams, GetPromptResponse, Implementation,
    InputRequests, InputRequiredResult, InputResponses, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, LoggingLevel,
    LoggingMessageNotificationParam, PaginatedRequestParams, ProgressNotificationParam,
    ProgressToken, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, ServerCapabilities, ServerConfig, SetLevelRequestParams,
    SubscribeRequestParams, SubscriptionFilter, Tool, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{RoleServer, ServerHandler};
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::{CancellationToken, DropGuard};

use super::callers::{self, CALLER_TIMEOUT, CallGuard, CallerError, Callers, Declared, Route};
use super::catalog::{Catalog, CatalogError, PromptOutcome};
use super::convert;
use super::unreadable;

/// How long a call paused on an `input_required` result waits for the client to send it again.
pub const PAUSE_LIMIT: Duration = Duration::from_secs(300);
/// Calls parked on `input_required` at once, across clients; a question beyond it is refused.
pub const MAX_PAUSED: usize = 1024;
/// Progress and output updates buffered per call before the tool waits.
const PROGRESS_BUFFER: usize = 64;
/// Progress channels of finished calls kept for the next calls.
const SPARE_CHANNELS: usize = 16;
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
    /// The tool list as MCP tools, built once per change of the registry.
    tools: ToolList,
    /// Progress channels of finished calls, for the next calls that forward updates (rmcp
    /// clients send a progress token with every request): a new channel costs two
    /// allocations, one of them over 3 KB.
    spare: Mutex<Vec<Updates>>,
}

impl Shared {
    pub(crate) fn new(
        executor: Executor,
        callers: Callers,
        catalog: Option<Arc<dyn Catalog>>,
        info: Implementation,
        instructions: Option<String>,
    ) -> Self {
        let tools = ToolList::new(executor.tools().registry().changes());
        Self {
            executor,
            callers,
            catalog,
            info,
            instructions,
            paused: Mutex::new(HashMap::new()),
            tools,
            spare: Mutex::new(Vec::new()),
        }
    }

    fn spare(&self) -> std::sync::MutexGuard<'_, Vec<Updates>> {
        self.spare
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A progress channel: a spare one, or a new one.
    fn updates(&self) -> Updates {
        self.spare().pop().unwrap_or_else(|| {
            let (tx, rx) = mpsc::channel(PROGRESS_BUFFER);
            Updates { tx, rx }
        })
    }

    /// Keeps the channel of a finished call for another, when nothing can reach it any
    /// more: no other sender (a tool that kept a clone of its context could otherwise report
    /// into a later call, maybe another client's), nothing unread.
    fn recycle(&self, mut updates: Updates) {
        let unreachable = updates.tx.strong_count() == 1 && updates.tx.weak_count() == 0;
        if unreachable && updates.rx.try_recv().is_err() {
            let mut spare = self.spare();
            if spare.len() < SPARE_CHANNELS {
                spare.push(updates);
            }
        }
    }

    fn paused(&self) -> std::sync::MutexGuard<'_, HashMap<String, Paused>> {
        self.paused
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The executor's tools as MCP tools (schemas shared, not copied), rebuilt only when the
/// registry's generation moved since the last build.
struct ToolList {
    generation: tokio::sync::watch::Receiver<u64>,
    built: Mutex<Option<(u64, Arc<[Tool]>)>>,
}

impl ToolList {
    fn new(generation: tokio::sync::watch::Receiver<u64>) -> Self {
        Self {
            generation,
            built: Mutex::new(None),
        }
    }

    /// The current list, sorted by name.
    fn get(&self, executor: &Executor) -> Arc<[Tool]> {
        // Read the generation before listing: a change in between makes the next read
        // rebuild rather than keep a list older than its label.
        let generation = *self.generation.borrow();
        let mut built = self
            .built
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((at, tools)) = built.as_ref()
            && *at == generation
        {
            return Arc::clone(tools);
        }
        let mut specs = executor.tools().shared_specs();
        specs.sort_by(|a, b| a.name.as_str().cmp(b.name.as_str()));
        let tools: Arc<[Tool]> = specs.iter().map(|spec| convert::tool(spec)).collect();
        *built = Some((generation, Arc::clone(&tools)));
        tools
    }
}

/// A call in progress: the executor's future and what it reports.
struct Running {
    /// The tool, for its name (the logger of its output, the check on resumption).
    tool: Arc<dyn mux_tool::Tool>,
    /// Boxed so that a call asking its 2026-07-28 client can be parked and resumed by a
    /// later request; a box is also one copy of the executor's future, where inline it
    /// would be copied with every move of rmcp's request task.
    outcome: Pin<Box<dyn Future<Output = CallOutcome> + Send>>,
    /// Progress and output, when the call's first request wanted them forwarded.
    updates: Option<Updates>,
    /// The call's entry in [`Callers`]: its questions, the capability it found missing.
    entry: CallGuard,
    /// The call's cancellation: the token of the request that started it when the call
    /// cannot outlive that request (a session client's); its own when it can be parked
    /// (rmcp cancels a request's token once it has answered it).
    cancel: CancellationToken,
    // Cancels the call when the call is dropped unfinished (client gone, pause expired).
    _stop: DropGuard,
}

impl Running {
    fn tool_name(&self) -> &str {
        self.tool.spec().name.as_str()
    }
}

/// A call's progress channel; the sender is kept to tell when no one else holds one.
struct Updates {
    tx: mpsc::Sender<mux_tool::ProgressEvent>,
    rx: mpsc::Receiver<mux_tool::ProgressEvent>,
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

/// How one request of a call reports: its progress token, and the least severe log level
/// its client wants (`None`: no log messages).
struct Reporting {
    token: Option<ProgressToken>,
    log_floor: Option<u8>,
}

impl Reporting {
    /// Whether anything a tool reports would reach the client.
    fn wanted(&self) -> bool {
        self.token.is_some()
            || self
                .log_floor
                .is_some_and(|floor| level_rank(LoggingLevel::Info) >= floor)
    }
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

    /// Where a request's updates go: its progress token and, for output, the log level of
    /// its client. 2026-07-28 requests carry their log level (without one, no log messages
    /// at all); older sessions use the level `logging/setLevel` set (everything by default).
    fn reporting(&self, cx: &RequestContext<RoleServer>, rounds: bool) -> Reporting {
        let log_floor = if rounds {
            cx.meta.log_level().map(level_rank)
        } else {
            Some(self.level.load(Ordering::Relaxed))
        };
        Reporting {
            token: cx.meta.get_progress_token(),
            log_floor,
        }
    }

    /// Starts the call `name`, ready to be driven to a result or a pause.
    ///
    /// Per call this costs one entry in [`Callers`], the call id, the boxed executor future
    /// and, only when the request wants progress or log messages, one channel for them.
    /// Nothing is spawned. A session client's call is cancelled through its request's own
    /// token; a call that may be parked has its own, which each of its requests cancels.
    fn start(
        &self,
        params: CallToolRequestParams,
        cx: &mut RequestContext<RoleServer>,
    ) -> Result<(Running, Reporting), ErrorData> {
        let Some(tool) = self.shared.executor.tools().get(&params.name) else {
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{}`", params.name),
                Some(json!({"tool": params.name})),
            ));
        };
        let rounds = uses_rounds(cx.protocol_version().as_ref());
        let reporting = self.reporting(cx, rounds);
        // Decoded only if the call asks its client something; nothing reads `_meta` later.
        let capabilities = Declared::of_request(std::mem::take(&mut cx.meta), cx.peer.clone());
        let route = if rounds {
            Route::Rounds
        } else {
            Route::Peer(cx.peer.clone())
        };
        let (call_id, entry) = self.shared.callers.enter(route, capabilities);
        let (progress, updates) = if reporting.wanted() {
            let updates = self.shared.updates();
            (ProgressSender::new(updates.tx.clone()), Some(updates))
        } else {
            (ProgressSender::disconnected(), None)
        };
        let cancel = if rounds {
            CancellationToken::new()
        } else {
            cx.ct.clone()
        };
        // A caller's effect key is not taken over: it is the caller's, and another client
        // could send the same one. The tool's key names this server's call.
        let scope = CallScope {
            cancel: cancel.clone(),
            progress,
            effects: None,
        };
        let executor = self.shared.executor.clone();
        let input = Value::Object(params.arguments.unwrap_or_default());
        let call = ToolCall::new(call_id, params.name.into_owned(), input);
        let outcome = Box::pin(async move { executor.execute(call, &scope).await });
        let running = Running {
            tool,
            outcome,
            updates,
            entry,
            _stop: cancel.clone().drop_guard(),
            cancel,
        };
        Ok((running, reporting))
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
        if paused.running.tool_name() != params.name {
            return Err(ErrorData::invalid_params(
                format!(
                    "this requestState belongs to a call of `{}`, not `{}`",
                    paused.running.tool_name(),
                    params.name
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
        let reporting = self.reporting(&cx, true);
        self.drive(running, cx, reporting).await
    }

    /// Polls the call while forwarding its updates, until it ends, asks, or is cancelled.
    async fn drive(
        &self,
        mut running: Running,
        cx: RequestContext<RoleServer>,
        reporting: Reporting,
    ) -> Result<CallToolResponse, ErrorData> {
        // A call that can be parked has its own token: pass this request's cancellation on.
        let rounds = running.entry.call().asks_in_rounds();
        loop {
            tokio::select! {
                biased;
                outcome = &mut running.outcome => {
                    if let Some(mut updates) = running.updates.take() {
                        while let Ok(event) = updates.rx.try_recv() {
                            self.forward(&cx, &reporting, running.tool_name(), event.update).await;
                        }
                        // The executor's future has returned and dropped its scope.
                        self.shared.recycle(updates);
                    }
                    if let Some(capability) = running.entry.call().missing() {
                        return Err(missing_capability(capability));
                    }
                    return Ok(CallToolResponse::Complete(convert::result(outcome.into_output())));
                }
                Some(event) = next_update(&mut running.updates) => {
                    self.forward(&cx, &reporting, running.tool_name(), event.update).await;
                }
                round = running.entry.call().next_round(), if rounds => {
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
                () = cx.ct.cancelled(), if rounds && !running.cancel.is_cancelled() => {
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
    /// client's log level admits `info`). Boxed: the notification's future is large, and
    /// inline it would grow every request's task, updates or not.
    fn forward<'a>(
        &'a self,
        cx: &'a RequestContext<RoleServer>,
        reporting: &'a Reporting,
        tool: &'a str,
        update: ToolUpdate,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        Box::pin(async move {
            match update {
                ToolUpdate::Progress {
                    progress,
                    total,
                    message,
                } => {
                    if let Some(token) = &reporting.token {
                        let mut param = ProgressNotificationParam::new(token.clone(), progress);
                        param.total = total;
                        param.message = message;
                        let _ = cx.peer.notify_progress(param).await;
                    }
                }
                ToolUpdate::Output { text }
                    if reporting
                        .log_floor
                        .is_some_and(|floor| level_rank(LoggingLevel::Info) >= floor) =>
                {
                    let param =
                        LoggingMessageNotificationParam::new(LoggingLevel::Info, json!(text))
                            .with_logger(tool);
                    let _ = cx.peer.notify_logging_message(param).await;
                }
                _ => {}
            }
        })
    }

    /// `notifications/tools/list_changed` on one listen stream (when its filter asked for
    /// it) whenever the registry's tools change, until the client closes the stream.
    async fn listen_for_changes(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
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

    fn catalog(&self) -> Result<&Arc<dyn Catalog>, ErrorData> {
        self.shared
            .catalog
            .as_ref()
            .ok_or_else(ErrorData::method_not_found::<rmcp::model::ReadResourceRequestMethod>)
    }
}

/// The next update of a call whose updates are forwarded; never, when they are not.
async fn next_update(updates: &mut Option<Updates>) -> Option<mux_tool::ProgressEvent> {
    match updates {
        Some(updates) => updates.rx.recv().await,
        None => std::future::pending().await,
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
        // Boxed: one allocation per stream, where inline its future would grow the task of
        // every request this handler serves.
        Box::pin(self.listen_for_changes(subscription)).await
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self.shared.tools.get(&self.shared.executor);
        Ok(ListToolsResult::with_all_items(tools.to_vec()))
    }

    /// The tool `name` from the built list (rmcp asks on every HTTP `tools/call` at
    /// 2026-07-28, to check `Mcp-Param-*` headers against its schema).
    fn get_tool(&self, name: &str) -> Option<Tool> {
        let tools = self.shared.tools.get(&self.shared.executor);
        tools
            .binary_search_by(|tool| tool.name.as_ref().cmp(name))
            .ok()
            .and_then(|at| tools.get(at).cloned())
    }

    /// Not an `async fn`: the call starts here, and the future returned is the drive alone,
    /// so that the request and its context are not kept twice in rmcp's task for the
    /// request (which is moved several times per request).
    fn call_tool(
        &self,
        mut params: CallToolRequestParams,
        mut cx: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CallToolResponse, ErrorData>> + Send + '_ {
        match params.request_state.take() {
            // Rare and large: boxed, so that every request's task stays small.
            Some(state) => Either::Left(Box::pin(
                async move { self.resume(&state, params, cx).await },
            )),
            None => Either::Right(match self.start(params, &mut cx) {
                Ok((running, reporting)) => Either::Left(self.drive(running, cx, reporting)),
                Err(err) => Either::Right(std::future::ready(Err(err))),
            }),
        }
    }

    /// A request rmcp read as no method it knows: -32602 when MCP defines its method (its
    /// params did not fit), -32601 otherwise.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        cx: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let stateless = cx.meta.protocol_version().is_some();
        Err(unreadable::answer(&request, stateless))
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
            // Boxed: the session requests' futures are large, and inline they would grow
            // the task of every request this handler serves.
            inputs.extend(Box::pin(ask_session(&cx, requests)).await?);
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use rmcp::ServiceExt;
    use rmcp::model::{CallToolRequest, CallToolResult, ClientRequest};
    use rmcp::service::Service;

    /// A handler with rmcp's defaults and an instant tool, as a bare rmcp server has.
    struct Bare;

    impl ServerHandler for Bare {
        async fn call_tool(
            &self,
            _params: CallToolRequestParams,
            _cx: RequestContext<RoleServer>,
        ) -> Result<CallToolResponse, ErrorData> {
            Ok(CallToolResult::success(vec![]).into())
        }
    }

    /// Measures, from inside a live request (the only place a `RequestContext` comes from),
    /// the future rmcp spawns for a request to mux's handler and to [`Bare`].
    struct Measure;

    impl ServerHandler for Measure {
        async fn call_tool(
            &self,
            _params: CallToolRequestParams,
            cx: RequestContext<RoleServer>,
        ) -> Result<CallToolResponse, ErrorData> {
            let request = || {
                ClientRequest::CallToolRequest(CallToolRequest::new(CallToolRequestParams::new(
                    "echo",
                )))
            };
            let handler = Handler::new(Arc::new(Shared::new(
                Executor::new(mux_tool::Registry::new()),
                Callers::new(),
                None,
                Implementation::new("mux", "0"),
                None,
            )));
            let mux = std::mem::size_of_val(&Service::<RoleServer>::handle_request(
                &handler,
                request(),
                cx.clone(),
            ));
            let bare =
                std::mem::size_of_val(&Service::<RoleServer>::handle_request(&Bare, request(), cx));
            let sizes = json!({"mux": mux, "bare": bare});
            Ok(
                CallToolResult::success(vec![rmcp::model::ContentBlock::text(sizes.to_string())])
                    .into(),
            )
        }
    }

    fn shared() -> Shared {
        Shared::new(
            Executor::new(mux_tool::Registry::new()),
            Callers::new(),
            None,
            Implementation::new("mux", "0"),
            None,
        )
    }

    /// A finished call's progress channel serves the next call only when nothing else can
    /// send into it and nothing is left unread in it.
    #[tokio::test]
    async fn only_an_unreachable_empty_progress_channel_is_reused() {
        let shared = shared();
        let updates = shared.updates();
        let kept = updates.tx.clone();
        shared.recycle(updates);
        assert!(shared.spare().is_empty(), "a tool still holds a sender");

        let updates = shared.updates();
        let _weak = updates.tx.downgrade();
        shared.recycle(updates);
        assert!(shared.spare().is_empty(), "a weak sender could come back");

        let updates = shared.updates();
        updates
            .tx
            .send(mux_tool::ProgressEvent {
                call_id: "mcp-1".into(),
                tool: "t".into(),
                update: ToolUpdate::Output { text: "x".into() },
            })
            .await
            .unwrap();
        shared.recycle(updates);
        assert!(shared.spare().is_empty(), "an update was left unread");

        let updates = shared.updates();
        let first = updates.tx.clone();
        drop(first);
        shared.recycle(updates);
        assert_eq!(shared.spare().len(), 1);
        let again = shared.updates();
        assert!(shared.spare().is_empty());
        assert_eq!(again.tx.strong_count(), 1);
        drop(kept);
    }

    /// rmcp runs every request in a task of its own and moves that future several times
    /// (into the task, its cell, its output): a future larger than a bare handler's costs
    /// every request, tool call or not, a copy of the difference each time. The rare, large
    /// paths (resumption, session questions, listen streams, notifications) are boxed.
    #[tokio::test]
    async fn a_request_task_is_no_larger_than_a_bare_handlers() {
        let (server_end, client_end) = tokio::io::duplex(1 << 16);
        let server = tokio::spawn(async move {
            let running = Measure.serve(tokio::io::split(server_end)).await.unwrap();
            let _ = running.waiting().await;
        });
        let client = ().serve(tokio::io::split(client_end)).await.unwrap();
        let result = client
            .peer()
            .call_tool(CallToolRequestParams::new("measure"))
            .await
            .unwrap();
        let text = result.content[0].as_text().unwrap().text.clone();
        let sizes: Value = serde_json::from_str(&text).unwrap();
        assert!(
            sizes["mux"].as_u64().unwrap() <= sizes["bare"].as_u64().unwrap(),
            "{sizes}"
        );
        let _ = client.cancel().await;
        server.abort();
    }
}
