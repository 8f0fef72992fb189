//! The rmcp client handler: routes progress to calls, turns server log messages and
//! list-changed notifications into mux events.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use mux_tool::ToolContext;

use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, LoggingLevel, LoggingMessageNotificationParam,
    ProgressNotificationParam, ProgressToken,
};
use rmcp::service::{NotificationContext, RoleClient};
use tokio::sync::Notify;

use crate::connection::Shared;
use crate::{LogLevel, LogSource};

/// Per-call progress routes: progress token to the calling tool's context.
pub(crate) type ProgressRoutes = Arc<Mutex<HashMap<ProgressToken, ToolContext>>>;

/// The handler rmcp calls for server-to-client messages on one connection.
pub(crate) struct Handler {
    pub(crate) shared: Arc<Shared>,
    pub(crate) progress: ProgressRoutes,
    pub(crate) tools_changed: Arc<Notify>,
}

fn level(level: LoggingLevel) -> LogLevel {
    match level {
        LoggingLevel::Debug => LogLevel::Debug,
        LoggingLevel::Info | LoggingLevel::Notice => LogLevel::Info,
        LoggingLevel::Warning => LogLevel::Warning,
        _ => LogLevel::Error,
    }
}

impl ClientHandler for Handler {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let cx = self
            .progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&params.progress_token)
            .cloned();
        if let Some(cx) = cx {
            cx.progress(params.progress, params.total, params.message)
                .await;
        }
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

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("mux", env!("CARGO_PKG_VERSION")),
        )
    }
}
