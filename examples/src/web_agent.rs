//! The web_agent example's server: the quickstart's agent behind mux-web's AG-UI router,
//! plus the chat page at `/`.

use std::path::Path;
use std::sync::Arc;

use axum::Router;
use axum::http::header;
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use mux::llm::LlmClient;
use mux::orchestrator::context::ProjectInstructions;
use mux::orchestrator::session::SessionStore;
use mux::orchestrator::{Orchestrator, OrchestratorConfig};
use mux::tool::Registry;
use mux::tool::builtin::{Bash, Glob, Grep, ListDir, ReadFile, Sandbox};
use mux::web::{AguiRouter, WebConfig};

/// The page (committed with its source in `examples/web_page`).
const INDEX_HTML: &str = include_str!("../web_page/index.html");
/// The page's script: `examples/web_page/src/app.js` bundled by esbuild.
const APP_JS: &str = include_str!("../web_page/dist/app.js");

/// The app: `/` (the page), `/app.js`, and the AG-UI routes under `/agui`. The agent explores
/// `root` with read-only tools that run freely and `bash`, which asks (an AG-UI interrupt).
pub fn app(
    root: &Path,
    client: Arc<dyn LlmClient>,
    model: &str,
    store: Arc<dyn SessionStore>,
    config: WebConfig,
) -> Result<Router, String> {
    let sandbox = Sandbox::new(root).map_err(|e| e.to_string())?;
    let permissions = crate::allowing(root, &["list_dir", "read_file", "glob", "grep"])?;
    let instructions = ProjectInstructions::new(root);
    let config_for_loop = OrchestratorConfig::new(model).system_prompt(
        "You are a concise assistant exploring a software project with read-only tools. \
         Look before you answer; cite file names.",
    );
    let agui = AguiRouter::new(move |tools: Registry| {
        // A fresh registry per loop run: it holds that run's frontend tools.
        for result in [
            tools.register_typed(ListDir::new(sandbox.clone())),
            tools.register_typed(ReadFile::new(sandbox.clone())),
            tools.register_typed(Glob::new(sandbox.clone())),
            tools.register_typed(Grep::new(sandbox.clone())),
            tools.register_typed(Bash::new(sandbox.clone())),
        ] {
            if let Err(err) = result {
                report_skipped(&err.to_string());
            }
        }
        Orchestrator::builder(Arc::clone(&client), config_for_loop.clone())
            .tools(tools)
            .permissions(permissions.clone())
            .context(instructions.clone())
    })
    .session_store(store)
    .config(config)
    .build();
    Ok(Router::new()
        .route("/", get(|| async { Html(INDEX_HTML) }))
        .route(
            "/app.js",
            get(|| async { ([(header::CONTENT_TYPE, "text/javascript")], APP_JS).into_response() }),
        )
        .merge(agui))
}

/// A tool name clashing with a frontend tool is reported, not fatal: the frontend tool wins.
fn report_skipped(message: &str) {
    eprintln!("web_agent: {message}");
}
