//! What a running tool call can reach: its id, cancellation, progress reporting and resources.

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use std::sync::Arc;

use crate::effect::EffectSource;
use crate::{EffectKey, EffectScope, PathFilter, Resources, ToolSpec};

/// Something a running tool reports before it returns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolUpdate {
    /// How far along the call is.
    Progress {
        /// Work done so far.
        progress: f64,
        /// Total work, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        total: Option<f64>,
        /// A human-readable note.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// A piece of output produced so far (a line of a command's stdout, say).
    Output {
        /// The new text.
        text: String,
    },
    /// An event of a run the call delegated to (a subagent's loop event, as its JSON), so a
    /// face can show the subagent's work under this call.
    Subagent {
        /// The subagent's name.
        agent: String,
        /// The event, as the subagent's loop serialized it (`{"type": "tool_result", ..}`).
        event: serde_json::Value,
    },
}

/// A [`ToolUpdate`] tagged with the call it belongs to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProgressEvent {
    /// The call id.
    pub call_id: String,
    /// The tool name.
    pub tool: String,
    /// The update.
    pub update: ToolUpdate,
}

/// The sending half a tool reports progress through. Sends wait when the receiver is behind
/// (backpressure), so nothing is dropped; with no receiver, updates go nowhere.
#[derive(Clone, Debug, Default)]
pub struct ProgressSender {
    tx: Option<Tx>,
}

/// The channel a [`ProgressSender`] forwards to.
#[derive(Clone, Debug)]
enum Tx {
    Plain(mpsc::Sender<ProgressEvent>),
    Boxed(mpsc::Sender<Box<ProgressEvent>>),
}

impl ProgressSender {
    /// A sender that forwards to `tx`.
    pub fn new(tx: mpsc::Sender<ProgressEvent>) -> Self {
        Self {
            tx: Some(Tx::Plain(tx)),
        }
    }

    /// A sender that forwards boxed events to `tx`: a channel of boxes allocates a pointer
    /// per slot, so one made for every tool step of an idle run costs little.
    pub fn boxed(tx: mpsc::Sender<Box<ProgressEvent>>) -> Self {
        Self {
            tx: Some(Tx::Boxed(tx)),
        }
    }

    /// A sender with no receiver.
    pub fn disconnected() -> Self {
        Self { tx: None }
    }

    /// Whether anyone is listening.
    pub fn is_connected(&self) -> bool {
        match &self.tx {
            Some(Tx::Plain(tx)) => !tx.is_closed(),
            Some(Tx::Boxed(tx)) => !tx.is_closed(),
            None => false,
        }
    }

    pub(crate) async fn send(&self, event: ProgressEvent) {
        // A closed receiver means nobody listens any more; that is not the tool's failure.
        match &self.tx {
            Some(Tx::Plain(tx)) => {
                let _ = tx.send(event).await;
            }
            Some(Tx::Boxed(tx)) => {
                let _ = tx.send(Box::new(event)).await;
            }
            None => {}
        }
    }
}

/// Everything a tool call can reach besides its arguments.
///
/// The executor builds one per call. Tests and direct callers use [`ToolContext::new`].
#[derive(Clone, Debug)]
pub struct ToolContext {
    call_id: String,
    /// The spec of the tool called (shared with the registry); none for a context made by
    /// [`ToolContext::new`].
    spec: Option<Arc<ToolSpec>>,
    cancel: CancellationToken,
    progress: ProgressSender,
    resources: Resources,
    path_filter: Option<Arc<dyn PathFilter>>,
    effect: EffectSource,
}

impl ToolContext {
    /// A context for call `call_id` with a fresh cancellation token, no progress receiver and
    /// no resources.
    pub fn new(call_id: impl Into<String>) -> Self {
        Self {
            call_id: call_id.into(),
            spec: None,
            cancel: CancellationToken::new(),
            progress: ProgressSender::disconnected(),
            resources: Resources::new(),
            path_filter: None,
            effect: EffectSource::CallId,
        }
    }

    /// Keys the call `key` (see [`ToolContext::effect_key`]).
    pub fn with_effect_key(mut self, key: EffectKey) -> Self {
        self.effect = EffectSource::Key(key);
        self
    }

    /// Uses `cancel` as the call's cancellation token.
    pub fn with_cancellation(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// Sends progress to `progress`.
    pub fn with_progress(mut self, progress: ProgressSender) -> Self {
        self.progress = progress;
        self
    }

    /// Shares `resources` with the call.
    pub fn with_resources(mut self, resources: Resources) -> Self {
        self.resources = resources;
        self
    }

    /// Leaves out of the call's results what `filter` withholds.
    pub fn with_path_filter(mut self, filter: Option<Arc<dyn PathFilter>>) -> Self {
        self.path_filter = filter;
        self
    }

    /// Whether the call must leave `path` (absolute, symlinks resolved) out of its results.
    pub fn withholds(&self, path: &std::path::Path) -> bool {
        self.path_filter.as_ref().is_some_and(|f| f.withholds(path))
    }

    /// The filter of paths to leave out, if the gate set one.
    pub fn path_filter(&self) -> Option<&Arc<dyn PathFilter>> {
        self.path_filter.as_ref()
    }

    /// The executor's context for one call: everything given, nothing made only to be
    /// replaced (a fresh token and resource map cost two allocations per call).
    pub(crate) fn for_call(
        call_id: String,
        spec: Arc<ToolSpec>,
        cancel: CancellationToken,
        progress: ProgressSender,
        resources: Resources,
        path_filter: Option<Arc<dyn PathFilter>>,
        effects: Option<&Arc<EffectScope>>,
    ) -> Self {
        Self {
            call_id,
            spec: Some(spec),
            cancel,
            progress,
            resources,
            path_filter,
            effect: effects.map_or(EffectSource::CallId, |scope| {
                EffectSource::Scope(Arc::clone(scope))
            }),
        }
    }

    /// The id of this call, unique within a conversation.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The call's effect key: the same on every attempt of this call, including one after
    /// the run was taken over or replayed, with the attempt's number. Hand it to whatever
    /// the call changes (an idempotency key, a row's key) so the change happens once.
    ///
    /// Run by an agent, the key names the conversation, the turn and the call; a context
    /// made by [`ToolContext::new`] is keyed by its call id.
    pub fn effect_key(&self) -> EffectKey {
        self.effect.key(&self.call_id)
    }

    /// The token that is cancelled when the call should stop (user cancel or timeout).
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Whether the call has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Shared resources.
    pub fn resources(&self) -> &Resources {
        &self.resources
    }

    /// Reports a partial piece of output.
    pub async fn output(&self, text: impl Into<String>) {
        self.update(ToolUpdate::Output { text: text.into() }).await;
    }

    /// Reports progress.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        self.update(ToolUpdate::Progress {
            progress,
            total,
            message,
        })
        .await;
    }

    /// Sends any update.
    pub async fn update(&self, update: ToolUpdate) {
        if self.progress.tx.is_none() {
            // Nobody listens: not even the event's strings are built.
            return;
        }
        let event = ProgressEvent {
            call_id: self.call_id.clone(),
            tool: self
                .spec
                .as_ref()
                .map(|spec| spec.name.to_string())
                .unwrap_or_default(),
            update,
        };
        self.progress.send(event).await;
    }
}
