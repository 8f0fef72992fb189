//! Server-to-client requests (roots, sampling, elicitation) reach the application's
//! `ClientHandlers`, tested with server-everything, which offers the tools that trigger them
//! only to clients that declare the capability.
#![allow(deprecated)]

use crate::common;

use std::sync::{Arc, Mutex};

use mux_mcp::rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ElicitationAction, Role, Root, SamplingMessage,
};
use mux_mcp::{ClientFeatures, ClientHandlers, HandlerError};
use mux_tool::{BoxFuture, Tool, ToolContext};
use serde_json::json;

#[derive(Default)]
struct Recorder {
    calls: Mutex<Vec<String>>,
}

impl ClientHandlers for Recorder {
    fn features(&self) -> ClientFeatures {
        ClientFeatures {
            roots: true,
            sampling: true,
            elicitation_form: true,
            elicitation_url: false,
        }
    }

    fn list_roots(&self, server: &str) -> BoxFuture<'_, Result<Vec<Root>, HandlerError>> {
        self.calls
            .lock()
            .unwrap()
            .push(format!("roots from {server}"));
        Box::pin(async { Ok(vec![Root::new("file:///workspace/project")]) })
    }

    fn create_message(
        &self,
        server: &str,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, HandlerError>> {
        let prompt = params.messages[0]
            .content
            .first()
            .and_then(|c| c.as_text())
            .map(|t| t.text.clone())
            .unwrap_or_default();
        self.calls
            .lock()
            .unwrap()
            .push(format!("sampling from {server}: {prompt}"));
        Box::pin(async move {
            Ok(CreateMessageResult::new(
                SamplingMessage::new(
                    Role::Assistant,
                    mux_mcp::rmcp::model::SamplingMessageContentBlock::text("forty-two"),
                ),
                "mux-test-model".to_string(),
            ))
        })
    }

    fn elicit(
        &self,
        server: &str,
        params: ElicitRequestParams,
    ) -> BoxFuture<'_, Result<ElicitResult, HandlerError>> {
        let message = match &params {
            ElicitRequestParams::FormElicitationParams { message, .. } => message.clone(),
            _ => "other".to_string(),
        };
        self.calls
            .lock()
            .unwrap()
            .push(format!("elicitation from {server}: {message}"));
        Box::pin(async {
            Ok(ElicitResult::new(ElicitationAction::Accept)
                .with_content(json!({"name": "Ada Lovelace"})))
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_elicitation_and_roots_reach_the_handlers() {
    let recorder = Arc::new(Recorder::default());
    let coordinator = common::coordinator().with_client_handlers(recorder.clone());
    let mut events = coordinator.subscribe();
    coordinator
        .start_all_and_wait(vec![common::everything("ev")])
        .await
        .unwrap();
    // The capability-dependent tools arrive with list_changed.
    common::wait_for(&mut events, std::time::Duration::from_secs(10), |e| {
        matches!(e, mux_mcp::McpEvent::ToolsChanged { tools, .. } if tools.iter().any(|t| t.name == "trigger-sampling-request"))
    })
    .await
    .expect("the sampling tool is offered");
    let tools = coordinator.tools();

    let out = common::find(&tools, "mcp__ev__trigger-sampling-request")
        .call(json!({"prompt": "the answer?"}), ToolContext::new("s"))
        .await
        .unwrap();
    assert!(out.to_text().contains("forty-two"), "{out:?}");

    let out = common::find(&tools, "mcp__ev__trigger-elicitation-request")
        .call(json!({}), ToolContext::new("e"))
        .await
        .unwrap();
    assert!(out.to_text().contains("Ada Lovelace"), "{out:?}");

    let out = common::find(&tools, "mcp__ev__get-roots-list")
        .call(json!({}), ToolContext::new("r"))
        .await
        .unwrap();
    assert!(
        out.to_text().contains("file:///workspace/project"),
        "{out:?}"
    );

    let calls = recorder.calls.lock().unwrap().clone();
    assert!(
        calls
            .iter()
            .any(|c| c.starts_with("sampling from ev: ") && c.contains("the answer?")),
        "{calls:?}"
    );
    assert!(
        calls.iter().any(|c| c.starts_with("elicitation from ev")),
        "{calls:?}"
    );
    assert!(calls.iter().any(|c| c == "roots from ev"), "{calls:?}");
    coordinator.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_handlers_the_capability_tools_are_not_offered() {
    let coordinator = common::running(common::everything("ev")).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let names: Vec<String> = coordinator
        .tools()
        .iter()
        .map(|t| t.spec().name.to_string())
        .collect();
    assert!(
        !names
            .iter()
            .any(|n| n.contains("sampling") || n.contains("elicitation")),
        "{names:?}"
    );
    coordinator.stop_all().await;
}
