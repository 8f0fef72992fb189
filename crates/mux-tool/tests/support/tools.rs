//! Test tools that the integration tests of several crates share (mux-tool's, the
//! orchestrator's, the editor face's), included by path so that no crate below them needs a
//! dev-dependency on a crate above.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mux_tool::{Subject, ToolAnnotations, ToolContext, ToolError, ToolOutput, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
pub struct EchoArgs {
    /// Text to echo.
    pub text: String,
}

/// Echoes its text; read-only.
pub struct Echo;

impl TypedTool for Echo {
    type Args = EchoArgs;
    const NAME: &'static str = "echo";
    fn description(&self) -> String {
        "Echoes its text".into()
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only()
    }
    async fn call(&self, args: EchoArgs, _cx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(args.text))
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct FetchArgs {
    /// The URL.
    pub url: String,
}

/// Pretends to fetch a URL, annotated as the built-in `web_fetch` is (read-only, open world,
/// the URL as its subject). Counts its calls.
#[derive(Clone, Default)]
pub struct Fetch {
    pub calls: Arc<AtomicUsize>,
}

impl TypedTool for Fetch {
    type Args = FetchArgs;
    const NAME: &'static str = "web_fetch";
    fn description(&self) -> String {
        "Fetches a URL".into()
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only().with_open_world(true)
    }
    fn subject(&self, args: &FetchArgs) -> Subject {
        Subject::url(&args.url)
    }
    async fn call(&self, args: FetchArgs, _: ToolContext) -> Result<ToolOutput, ToolError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(ToolOutput::text(format!("fetched {}", args.url)))
    }
}
