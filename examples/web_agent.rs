//! The quickstart's agent as a web app: AG-UI over HTTP/SSE plus a chat page.
//!
//! ```text
//! cargo run --example web_agent [-- --port 8787]
//! ```
//!
//! Then open http://127.0.0.1:8787/. The model is chosen as the quickstart chooses it: a
//! provider from `ANTHROPIC_API_KEY` / `OPENAI_API_KEY` / `OPENAI_BASE_URL`, else an offline
//! scripted model that lists the directory, reads the README and asks to run `git log` (an
//! approval the page shows with Approve and Deny buttons). Threads live in memory; the page
//! keeps its thread across reloads. Binds 127.0.0.1 only.

use std::process::ExitCode;
use std::sync::Arc;

use mux::orchestrator::session::MemorySessionStore;
use mux::web::WebConfig;

#[tokio::main]
async fn main() -> ExitCode {
    mux_examples::exit_code(run().await)
}

async fn run() -> Result<(), String> {
    let port = port_from_args()?;
    let chosen = mux_examples::offline::choose_model()?;
    println!("{}", chosen.description);
    let (client, model) = (chosen.client, chosen.model);
    let root =
        std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
    let app = mux_examples::web_agent::app(
        &root,
        client,
        &model,
        Arc::new(MemorySessionStore::new()),
        WebConfig::default(),
    )?;
    let listener = mux::web::bind(port)
        .await
        .map_err(|e| format!("cannot listen on 127.0.0.1:{port}: {e}"))?;
    let address = listener.local_addr().map_err(|e| e.to_string())?;
    println!("Serving on http://{address}/ (Ctrl+C to stop)");
    tokio::select! {
        served = mux::web::serve(listener, app) => served.map_err(|e| format!("the server failed: {e}")),
        _ = tokio::signal::ctrl_c() => Ok(()),
    }
}

fn port_from_args() -> Result<u16, String> {
    let mut args = std::env::args().skip(1);
    let mut port = 8787;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => {
                let value = args.next().ok_or("--port needs a value")?;
                port = value
                    .parse()
                    .map_err(|_| format!("--port `{value}` is not a port number"))?;
            }
            "-h" | "--help" => {
                println!("usage: cargo run --example web_agent [-- --port N]");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument `{other}` (try --port N)")),
        }
    }
    Ok(port)
}
