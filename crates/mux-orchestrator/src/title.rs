//! Title generation: after the first reply, a background request names the session.

use std::time::Duration;

use mux_llm::{Message, Request};

use crate::core::Core;
use crate::emitter::Emitter;
use crate::event::LoopEvent;

/// How long a title request may take.
const TITLE_TIMEOUT: Duration = Duration::from_secs(30);

/// Starts title generation once per session, if configured and the session has no
/// title yet. Runs in the background; the title arrives as [`LoopEvent::TitleGenerated`] to
/// the run's receiver and subscribers, and is saved in the session metadata.
pub(crate) fn maybe_generate(orch: &Core, emitter: &Emitter) {
    let Some(config) = orch.services.config.title.clone() else {
        return;
    };
    let transcript = {
        let mut conversation = orch.lock();
        if conversation.title_requested || conversation.meta.title.is_some() {
            return;
        }
        conversation.title_requested = true;
        conversation
            .messages
            .iter()
            .take(2)
            .map(Message::text)
            .collect::<Vec<_>>()
            .join("\n\n")
    };
    let model = config
        .model
        .unwrap_or_else(|| orch.services.config.model.clone());
    let excerpt = mux_tool::truncate::truncate_str(&transcript, 4_000).into_owned();
    let request = Request::new(model, 32)
        .system("Reply with a short title (at most eight words) for this conversation. No quotes, no punctuation at the end.")
        .user(excerpt);
    let orch = orch.clone();
    let emitter = emitter.clone();
    let cancel = orch.services.cancel.clone();
    tokio::spawn(async move {
        let reply = tokio::select! {
            () = cancel.cancelled() => return,
            reply = tokio::time::timeout(TITLE_TIMEOUT, orch.services.client.complete(request)) => reply,
        };
        let title = match reply {
            Ok(Ok(response)) => clean(&response.text()),
            Ok(Err(err)) => return tracing::warn!("title generation failed: {err}"),
            Err(_) => return tracing::warn!("title generation timed out after {TITLE_TIMEOUT:?}"),
        };
        if title.is_empty() {
            return;
        }
        orch.lock().meta.title = Some(title.clone());
        if let Err(err) = orch.persist(&[]).await {
            tracing::warn!("saving the title failed: {err}");
        }
        // The run may be over and its receiver unread: do not wait on it for long.
        let _ = tokio::time::timeout(
            Duration::from_secs(5),
            emitter.emit(LoopEvent::TitleGenerated { title }),
        )
        .await;
    });
}

fn clean(raw: &str) -> String {
    let line = raw
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default();
    line.trim()
        .trim_matches(|c| c == '"' || c == '\'' || c == '*' || c == '#')
        .trim_end_matches('.')
        .trim()
        .to_owned()
}

#[cfg(test)]
mod tests {
    #[test]
    fn titles_are_cleaned() {
        assert_eq!(
            super::clean("\n\"Fixing the parser.\"\nmore"),
            "Fixing the parser"
        );
        assert_eq!(super::clean("# Plan"), "Plan");
    }
}
