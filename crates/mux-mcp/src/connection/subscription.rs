//! `subscriptions/listen` (2026-07-28, SEP-2575): the stream on which a modern server sends
//! `notifications/tools/list_changed`. Its notifications wake the same refresh as unscoped ones.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{ErrorCode, ServerNotification, SubscriptionFilter};
use rmcp::service::{Peer, RoleClient, ServiceError, Subscription, SubscriptionEnd};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::types::Shared;
use crate::{LogLevel, LogSource};

/// How long the server gets to acknowledge a listen request.
const ACK_TIMEOUT: Duration = Duration::from_secs(5);
/// How long sending the cancellation of a stream may take.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(1);
/// The pause before opening again a stream that ended while the session lives.
const REOPEN_DELAY: Duration = Duration::from_millis(500);
/// The most re-openings in a row without a notification in between.
const MAX_REOPENS: u32 = 3;

/// Whether a session should listen: the server speaks 2026-07-28 or newer (no `initialize`)
/// and advertises `tools.listChanged`.
pub(super) fn wanted(peer: &Peer<RoleClient>) -> bool {
    peer.peer_info().is_some_and(|info| {
        !info.protocol_version.has_initialize()
            && info
                .capabilities
                .tools
                .as_ref()
                .and_then(|tools| tools.list_changed)
                == Some(true)
    })
}

/// Opens a listen stream for tool list changes and waits (at most [`ACK_TIMEOUT`]) for its
/// acknowledgment. `None`, logged, when the server refuses it or does not acknowledge it:
/// then only unscoped notifications refresh the list.
pub(super) async fn open(peer: &Peer<RoleClient>, shared: &Shared) -> Option<Subscription> {
    let filter = SubscriptionFilter::builder().tools_list_changed().build();
    // Dropping the pending request on timeout sends `notifications/cancelled` for it.
    let (level, message) = match tokio::time::timeout(ACK_TIMEOUT, peer.listen(filter)).await {
        Ok(Ok(subscription)) if subscription.acknowledged().tools_list_changed == Some(true) => {
            shared.log(
                LogLevel::Info,
                LogSource::Protocol,
                "listening for tool list changes (subscriptions/listen)".to_string(),
            );
            return Some(subscription);
        }
        Ok(Ok(_)) => (
            LogLevel::Info,
            "subscriptions/listen acknowledged without tool list changes".to_string(),
        ),
        Ok(Err(ServiceError::McpError(error))) if error.code == ErrorCode::METHOD_NOT_FOUND => (
            LogLevel::Info,
            "the server does not serve subscriptions/listen".to_string(),
        ),
        Ok(Err(err)) => (
            LogLevel::Warning,
            format!("subscriptions/listen failed: {err}"),
        ),
        Err(_) => (
            LogLevel::Warning,
            format!("subscriptions/listen not acknowledged within {ACK_TIMEOUT:?}"),
        ),
    };
    shared.log(
        level,
        LogSource::Protocol,
        format!("{message}; relying on unscoped list_changed notifications"),
    );
    None
}

/// A listen stream's task and the token that ends it.
pub(super) struct Listener {
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl Listener {
    /// Reads `subscription` in a task that wakes `changed` on each tool list change. The task
    /// ends when `closed` (the session's end) or [`Listener::stop`] fires; a stream the server
    /// ends meanwhile is opened again (at most [`MAX_REOPENS`] times in a row), followed by a
    /// refresh, since changes may have been missed while it was closed.
    pub(super) fn spawn(
        subscription: Subscription,
        peer: Peer<RoleClient>,
        shared: Arc<Shared>,
        changed: Arc<Notify>,
        closed: &CancellationToken,
    ) -> Self {
        let stop = closed.child_token();
        let task = tokio::spawn(run(subscription, peer, shared, changed, stop.clone()));
        Self { stop, task }
    }

    /// Cancels the listen request (the server gets `notifications/cancelled`) and waits for
    /// the task, at most `limit`; then aborts it.
    pub(super) async fn stop(self, limit: Duration) {
        self.stop.cancel();
        let mut task = self.task;
        if tokio::time::timeout(limit, &mut task).await.is_err() {
            task.abort();
        }
    }

    /// Ends the task at once, for a session whose peer is gone.
    pub(super) fn abort(&self) {
        self.stop.cancel();
        self.task.abort();
    }
}

async fn run(
    mut subscription: Subscription,
    peer: Peer<RoleClient>,
    shared: Arc<Shared>,
    changed: Arc<Notify>,
    stop: CancellationToken,
) {
    let mut reopens = 0;
    loop {
        let next = tokio::select! {
            next = subscription.next() => next,
            () = stop.cancelled() => {
                let reason = Some("the client is disconnecting".to_string());
                let _ = tokio::time::timeout(
                    CANCEL_TIMEOUT,
                    subscription.cancel_with_reason(reason),
                )
                .await;
                return;
            }
        };
        let ended = match next {
            Ok(Some(ServerNotification::ToolListChangedNotification(_))) => {
                reopens = 0;
                changed.notify_one();
                continue;
            }
            Ok(Some(_)) => continue,
            Ok(None) => match subscription.end() {
                Some(SubscriptionEnd::Graceful(_)) => "the server closed it".to_string(),
                Some(SubscriptionEnd::Lagged { capacity }) => {
                    format!("more than {capacity} notifications were left unread")
                }
                Some(SubscriptionEnd::Cancelled) => "the server cancelled it".to_string(),
                _ => "it closed without a result".to_string(),
            },
            Err(err) => err.to_string(),
        };
        // A stream ending with the session is no news.
        if stop.is_cancelled() {
            return;
        }
        if reopens == MAX_REOPENS {
            shared.log(
                LogLevel::Warning,
                LogSource::Protocol,
                format!(
                    "the tool list listen stream ended ({ended}) {MAX_REOPENS} times in a row; \
                     relying on unscoped list_changed notifications"
                ),
            );
            return;
        }
        reopens += 1;
        shared.log(
            LogLevel::Info,
            LogSource::Protocol,
            format!("the tool list listen stream ended ({ended}); opening it again"),
        );
        let reopened = tokio::select! {
            reopened = async {
                tokio::time::sleep(REOPEN_DELAY).await;
                open(&peer, &shared).await
            } => reopened,
            () = stop.cancelled() => return,
        };
        let Some(reopened) = reopened else { return };
        subscription = reopened;
        changed.notify_one();
    }
}
