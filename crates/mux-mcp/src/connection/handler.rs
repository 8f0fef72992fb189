//! The rmcp client handler: routes progress to calls, turns server log messages and
//! list-changed notifications into mux events.

use std::sync::{Arc, PoisonError};

use rmcp::ClientHandler;
use rmcp::model::{
    ClientConfig, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationAction, ErrorCode, ErrorData, Implementation, InputRequest,
    ListRootsResult, LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use tokio::sync::Notify;

use super::types::{PendingCalls, ProgressBarrier, Shared};
use crate::client::{ClientHandlers, HandlerError};
use crate::{LogLevel, LogSource};

/// The handler rmcp calls for server-to-client messages on one connection.
pub(crate) struct Handler {
    pub(crate) shared: Arc<Shared>,
    pub(crate) pending: PendingCalls,
    pub(crate) tools_changed: Arc<Notify>,
    pub(crate) barrier: Arc<ProgressBarrier>,
    pub(crate) client: Option<Arc<dyn ClientHandlers>>,
}

fn refused(error: HandlerError) -> ErrorData {
    ErrorData::internal_error(error.0, None)
}

fn not_offered(what: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("this client does not offer {what}"),
        None,
    )
}

fn level(level: LoggingLevel) -> LogLevel {
    match level {
        LoggingLevel::Debug => LogLevel::Debug,
        LoggingLevel::Info | LoggingLevel::Notice => LogLevel::Info,
        LoggingLevel::Warning => LogLevel::Warning,
        _ => LogLevel::Error,
    }
}

async fn list_roots(
    shared: &Shared,
    client: Option<&Arc<dyn ClientHandlers>>,
) -> Result<ListRootsResult, ErrorData> {
    match client {
        Some(client) if client.features().roots => {
            let roots = client.list_roots(&shared.server).await.map_err(refused)?;
            Ok(ListRootsResult::new(roots))
        }
        _ => Err(not_offered("roots")),
    }
}

/// Logs that the server asked for `what`.
fn asked_for(shared: &Shared, what: &str) {
    shared.log(
        LogLevel::Info,
        LogSource::Protocol,
        format!("server asked for {what}"),
    );
}

async fn create_message(
    shared: &Shared,
    client: Option<&Arc<dyn ClientHandlers>>,
    params: CreateMessageRequestParams,
) -> Result<CreateMessageResult, ErrorData> {
    asked_for(shared, "sampling");
    match client {
        Some(client) if client.features().sampling => client
            .create_message(&shared.server, params)
            .await
            .map_err(refused),
        _ => Err(not_offered("sampling")),
    }
}

async fn elicit(
    shared: &Shared,
    client: Option<&Arc<dyn ClientHandlers>>,
    params: ElicitRequestParams,
) -> Result<ElicitResult, ErrorData> {
    asked_for(shared, "elicitation");
    match client {
        Some(client) => client.elicit(&shared.server, params).await.map_err(refused),
        None => Ok(ElicitResult::new(ElicitationAction::Decline)),
    }
}

/// Answers one input request of a 2026-07-28 `input_required` result (SEP-2322) with the
/// same handlers that answer server-to-client requests; the answer is the wire JSON.
pub(crate) async fn answer_input(
    shared: &Shared,
    client: Option<&Arc<dyn ClientHandlers>>,
    request: InputRequest,
) -> Result<serde_json::Value, String> {
    let refusal = |error: ErrorData| error.message.to_string();
    let answer = match request {
        InputRequest::CreateMessage(request) => serde_json::to_value(
            create_message(shared, client, request.params)
                .await
                .map_err(refusal)?,
        ),
        InputRequest::Elicitation(request) => serde_json::to_value(
            elicit(shared, client, request.params)
                .await
                .map_err(refusal)?,
        ),
        InputRequest::ListRoots(_) => {
            serde_json::to_value(list_roots(shared, client).await.map_err(refusal)?)
        }
        other => {
            let method = serde_json::to_value(&other)
                .ok()
                .and_then(|v| v.get("method").and_then(|m| m.as_str()).map(str::to_string))
                .unwrap_or_else(|| "an unknown method".to_string());
            return Err(format!("input requests for {method} are not supported"));
        }
    };
    answer.map_err(|err| format!("cannot encode the answer: {err}"))
}

impl ClientHandler for Handler {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let cx = self
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&params.progress_token)
            .map(|entry| entry.cx.clone());
        if let Some(cx) = cx {
            cx.progress(params.progress, params.total, params.message)
                .await;
        }
        self.barrier.handled();
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let text = match &params.data {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let message = match &params.logger {
            Some(logger) => format!("[{logger}] {text}"),
            None => text,
        };
        self.shared
            .log(level(params.level), LogSource::Server, message);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.notify_one();
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        list_roots(&self.shared, self.client.as_ref()).await
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        create_message(&self.shared, self.client.as_ref(), params).await
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        elicit(&self.shared, self.client.as_ref(), params).await
    }

    fn get_info(&self) -> ClientConfig {
        let capabilities = self
            .client
            .as_ref()
            .map(|client| client.features().capabilities())
            .unwrap_or_default();
        ClientConfig::new(
            capabilities,
            Implementation::new("mux", env!("CARGO_PKG_VERSION")),
        )
    }
}
