//! One agent, two faces, one process: the examples' coding agent described once and served
//! at the same time on the web face (AG-UI over HTTP/SSE, on 127.0.0.1) and on the editor
//! face (ACP on stdin and stdout).
//!
//! ```text
//! cargo run --example one_agent [-- --root DIR]
//! ```
//!
//! It runs offline on the examples' scripted model: a prompt `call TOOL {json}` calls that
//! tool, so `call edit_file {"path": "notes.txt", "old_string": "world", "new_string": "mux"}`
//! edits a file through either face. Without `--root` it works in a fresh directory under the
//! temporary directory holding `notes.txt` (an editor session works in its own `cwd`). Edits
//! inside the root run unasked (accept-edits mode); commands ask. The web face's address goes
//! to stderr; stdout carries only the editor protocol. It stops when stdin closes.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use mux::acp::AcpAgent;
use mux::permission::{Mode, PathContext, Permissions, RuleSet, Scope, ScopeRules};
use mux::web::AguiRouter;

#[tokio::main]
async fn main() -> ExitCode {
    mux_examples::exit_code(run().await)
}

async fn run() -> Result<(), String> {
    let root = root()?;
    let agent = mux_examples::coding_agent::builder(
        Arc::new(mux_examples::offline::offline_model()),
        "scripted",
    )
    .permissions(accept_edits(&root))
    .root(&root)
    .build()
    .map_err(|e| e.to_string())?;

    // The web face, on a port of 127.0.0.1.
    let listener = mux::web::bind(0).await.map_err(|e| e.to_string())?;
    let address = listener.local_addr().map_err(|e| e.to_string())?;
    let web = tokio::spawn(mux::web::serve(
        listener,
        AguiRouter::new(agent.clone()).build(),
    ));
    eprintln!(
        "one_agent: web face on http://{address}/agui, working in {}",
        root.display()
    );

    // The editor face, on stdio, until the editor closes it.
    let served = AcpAgent::new(agent).serve_stdio().await;
    web.abort();
    served.map_err(|e| e.to_string())
}

/// `--root DIR`, or a fresh directory with `notes.txt` in it.
fn root() -> Result<PathBuf, String> {
    let mut args = std::env::args().skip(1);
    match (args.next().as_deref(), args.next()) {
        (Some("--root"), Some(dir)) => {
            std::fs::canonicalize(&dir).map_err(|e| format!("--root {dir}: {e}"))
        }
        (None, _) => {
            let dir = std::env::temp_dir().join(format!("mux-one-agent-{}", std::process::id()));
            std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
            std::fs::write(dir.join("notes.txt"), "hello world\n").map_err(|e| e.to_string())?;
            std::fs::canonicalize(&dir).map_err(|e| e.to_string())
        }
        _ => Err("usage: cargo run --example one_agent [-- --root DIR]".into()),
    }
}

/// A policy whose mode lets edits inside the root run unasked.
fn accept_edits(root: &std::path::Path) -> Permissions {
    let project = ScopeRules::new(RuleSet::new());
    project.set_mode(Some(Mode::AcceptEdits));
    Permissions::builder(PathContext::new(root))
        .scope(Scope::Project, project)
        .build()
}
