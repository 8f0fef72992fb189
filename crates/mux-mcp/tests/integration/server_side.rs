//! mux-mcp's server side in process, over Streamable HTTP, called by mux-mcp's own client:
//! schemas and hints on the list, progress and partial output as notifications, JSON output
//! as `structuredContent`, `isError`, an unknown tool, and (at 2025-11-25) log messages.

use std::time::Duration;

use mux_mcp::{
    ConnectionOptions, Coordinator, CoordinatorConfig, HttpOptions, Lifecycle, McpEvent, McpServer,
    Received, ReconnectPolicy, ServerSpec,
};
use mux_tool::{
    Content, Executor, ProgressSender, Registry, ToolAnnotations, ToolContext, ToolError,
    ToolOutput, ToolUpdate, TypedTool,
};
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct StepsArgs {
    /// How many steps.
    steps: u32,
}

/// Reports progress and a line of output per step, then returns JSON.
struct Steps;

impl TypedTool for Steps {
    type Args = StepsArgs;
    const NAME: &'static str = "steps";

    fn description(&self) -> String {
        "Counts steps".into()
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only()
    }

    async fn call(&self, args: StepsArgs, cx: ToolContext) -> Result<ToolOutput, ToolError> {
        for step in 1..=args.steps {
            cx.progress(f64::from(step), Some(f64::from(args.steps)), None)
                .await;
            cx.output(format!("step {step} done")).await;
        }
        // rmcp's client handles each notification in a task of its own, and the result on
        // the request's own path: a notification sent right before the result may be handled
        // after it, when the call's progress route is gone (progress of a finished call is
        // dropped). A moment between them lets the client's tasks run, even on a loaded
        // machine.
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        Ok(ToolOutput::json(json!({"steps": args.steps})))
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

/// Always fails, as a result.
struct Fails;

impl TypedTool for Fails {
    type Args = NoArgs;
    const NAME: &'static str = "fails";

    fn description(&self) -> String {
        "Fails".into()
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only()
    }

    async fn call(&self, _args: NoArgs, _cx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::error("it failed on purpose"))
    }
}

async fn served() -> mux_mcp::HttpServer {
    let registry = Registry::new();
    registry.register_typed(Steps).unwrap();
    registry.register_typed(Fails).unwrap();
    McpServer::new(Executor::new(registry))
        .with_name("in-process", "1.0.0")
        .serve_http(HttpOptions::default())
        .await
        .unwrap()
}

fn client(lifecycle: Lifecycle) -> Coordinator {
    Coordinator::new(CoordinatorConfig {
        connection: ConnectionOptions {
            connect_timeout: Duration::from_secs(20),
            lifecycle,
            ..ConnectionOptions::default()
        },
        reconnect: ReconnectPolicy::None,
        health_interval: None,
        ..CoordinatorConfig::default()
    })
}

async fn round_trip(lifecycle: Lifecycle) -> Vec<String> {
    let http = served().await;
    let coordinator = client(lifecycle);
    let mut events = coordinator.subscribe();
    let report = coordinator
        .start_all_and_wait(vec![ServerSpec::http("local", http.url())])
        .await
        .unwrap();
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    let tools = coordinator.tools();
    let steps = tools
        .iter()
        .find(|t| t.spec().name.as_str() == "mcp__local__steps")
        .unwrap()
        .clone();
    assert!(steps.spec().annotations.read_only);
    assert_eq!(
        steps.spec().input_schema["properties"]["steps"]["type"],
        "integer"
    );

    let (tx, mut rx) = tokio::sync::mpsc::channel(16);
    let cx = ToolContext::new("p").with_progress(ProgressSender::new(tx));
    let out = steps.call(json!({"steps": 3}), cx).await.unwrap();
    assert!(!out.is_error, "{out:?}");
    assert!(
        out.content
            .iter()
            .any(|c| matches!(c, Content::Json { value } if value == &json!({"steps": 3}))),
        "structuredContent comes back as a JSON block: {out:?}"
    );
    // The server sends them in order, one awaited send after another, before the result;
    // rmcp's client handles each notification in its own task, so they may reach this
    // channel in another order, and (on a loaded machine) after the result.
    let mut progress = Vec::new();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while progress.len() < 3 {
        let Ok(Some(event)) = tokio::time::timeout_at(deadline, rx.recv()).await else {
            break;
        };
        if let ToolUpdate::Progress {
            progress: p, total, ..
        } = event.update
        {
            progress.push((p, total));
        }
    }
    progress.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert_eq!(
        progress,
        vec![(1.0, Some(3.0)), (2.0, Some(3.0)), (3.0, Some(3.0))]
    );

    let fails = tools
        .iter()
        .find(|t| t.spec().name.as_str() == "mcp__local__fails")
        .unwrap()
        .clone();
    let out = fails.call(json!({}), ToolContext::new("f")).await.unwrap();
    assert!(out.is_error);
    assert!(out.to_text().contains("it failed on purpose"), "{out:?}");

    // Arguments that do not fit the schema are an error result the model can read.
    let out = steps
        .call(json!({"steps": "many"}), ToolContext::new("b"))
        .await
        .unwrap();
    assert!(out.is_error, "{out:?}");

    let mut logs = Vec::new();
    while let Ok(Some(received)) =
        tokio::time::timeout(Duration::from_millis(300), events.recv()).await
    {
        if let Received::Event(McpEvent::Log { entry, .. }) = received {
            logs.push(entry.message);
        }
    }
    coordinator.stop_all().await;
    http.shutdown().await;
    logs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_output_structured_content_and_errors_at_2025_11_25() {
    let logs = round_trip(Lifecycle::Initialize).await;
    for step in 1..=3 {
        assert!(
            logs.iter()
                .any(|l| l.contains(&format!("step {step} done"))),
            "{logs:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_structured_content_and_errors_at_2026_07_28() {
    let logs = round_trip(Lifecycle::Stateless).await;
    // The client asked for no log level, so the server sends no log messages.
    assert!(!logs.iter().any(|l| l.contains("step 1 done")), "{logs:?}");
}

/// Waits for a `ToolsChanged` event of `local` whose list satisfies `wanted`.
async fn tools_changed(
    events: &mut mux_mcp::Events,
    wanted: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let received = tokio::time::timeout_at(deadline, events.recv())
            .await
            .expect("no tools/list_changed within 10 s")
            .expect("the event stream ended");
        if let Received::Event(McpEvent::ToolsChanged { server, tools }) = received {
            let names: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
            if server == "local" && wanted(&names) {
                return names;
            }
        }
    }
}

/// Tools registered or removed while the server runs reach a connected client through
/// `notifications/tools/list_changed` (over the session at 2025-11-25, on the
/// `subscriptions/listen` stream at 2026-07-28), and the client's tool list follows.
async fn list_changes(lifecycle: Lifecycle) {
    let registry = Registry::new();
    registry.register_typed(Steps).unwrap();
    let http = McpServer::new(Executor::new(registry.clone()))
        .serve_http(HttpOptions::default())
        .await
        .unwrap();
    let coordinator = client(lifecycle);
    let mut events = coordinator.subscribe();
    let report = coordinator
        .start_all_and_wait(vec![ServerSpec::http("local", http.url())])
        .await
        .unwrap();
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    let has = |name: &str| {
        coordinator
            .tools()
            .iter()
            .any(|t| t.spec().name.as_str() == format!("mcp__local__{name}"))
    };
    assert!(has("steps") && !has("fails"));
    // The client opens its listen stream after connecting; give it a moment, then change
    // the tools until the client has seen a change (a change before the stream is open is
    // not delivered, by design: the client lists again whenever it reconnects).
    let mut added = false;
    for _ in 0..50 {
        registry.register_typed(Fails).unwrap();
        if tokio::time::timeout(Duration::from_millis(200), async {
            tools_changed(&mut events, |names| names.iter().any(|n| n == "fails")).await
        })
        .await
        .is_ok()
        {
            added = true;
            break;
        }
        registry.remove("fails");
    }
    assert!(added, "the client never heard of the added tool");
    assert!(has("fails"));
    registry.remove("steps");
    tools_changed(&mut events, |names| !names.iter().any(|n| n == "steps")).await;
    assert!(!has("steps") && has("fails"));
    coordinator.stop_all().await;
    http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_list_changes_reach_the_client_at_2025_11_25() {
    list_changes(Lifecycle::Initialize).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_list_changes_reach_the_client_at_2026_07_28() {
    list_changes(Lifecycle::Stateless).await;
}
