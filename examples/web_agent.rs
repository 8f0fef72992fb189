//! The examples' coding agent as a web app: AG-UI over HTTP/SSE plus a chat page.
//!
//! ```text
//! cargo run --example web_agent [-- --port 8787] [--token T | --no-token]
//!     [--cors-origin ORIGIN]... [--allowed-host HOST]...
//!     [--database-url sqlite://PATH | postgres://USER@HOST/DB[?host=SOCKET_DIR]]
//!     [--model-delay-ms N] [--lease-ms N] [--double-texting reject|enqueue|interrupt]
//! ```
//!
//! It prints the URL to open, with a fresh random token (as Jupyter does):
//! `http://127.0.0.1:8787/?token=…`; the page sends the token on every request. The model is
//! chosen as the quickstart chooses it: a provider from `ANTHROPIC_API_KEY` / `OPENAI_API_KEY`
//! / `OPENAI_BASE_URL`, else an offline scripted model that lists the directory, reads the
//! README and asks to run `git log` (an approval the page shows with Approve and Deny
//! buttons). Threads and runs live in the database of `--database-url` (default: SQLite in
//! `.mux/web_agent.db` under the current directory), so a restart keeps every thread and every
//! pending approval, and several processes on one PostgreSQL serve every thread (see
//! docs/web.md). `--model-delay-ms` makes the offline model stream word by word, `--lease-ms`
//! sets the run lease, `--double-texting` what a prompt on a busy thread does. The page keeps
//! its thread across reloads. Binds 127.0.0.1 only, answers only to its own Host names and
//! origin, and refuses non-JSON POSTs.

use std::process::ExitCode;

use mux_examples::web_agent::Options;

#[tokio::main]
async fn main() -> ExitCode {
    mux_examples::exit_code(run().await)
}

async fn run() -> Result<(), String> {
    let options = match Options::parse(std::env::args().skip(1))? {
        Some(options) => options,
        None => {
            println!("{}", mux_examples::web_agent::USAGE);
            return Ok(());
        }
    };
    let mut chosen = mux_examples::offline::choose_model()?;
    println!("{}", chosen.description);
    if let Some(delay) = options.model_delay
        && chosen.model == "scripted"
    {
        chosen.client =
            std::sync::Arc::new(mux_examples::offline::offline_model().stream_words(delay));
    }
    // The agent, described once (examples/src/coding_agent.rs), at the current directory.
    let agent = mux_examples::coding_agent::agent(chosen.client, &chosen.model)
        .map_err(|e| e.to_string())?;
    let store = options.store().await?;
    let app = mux_examples::web_agent::app_on(
        agent,
        options.web_config(),
        store.sessions(),
        store.runs(),
    )?;
    let listener = mux::web::bind(options.port)
        .await
        .map_err(|e| format!("cannot listen on 127.0.0.1:{}: {e}", options.port))?;
    let address = listener.local_addr().map_err(|e| e.to_string())?;
    println!("Serving on http://{address}/ (Ctrl+C to stop)");
    match &options.token {
        Some(token) => println!("Open http://{address}/?token={token}"),
        None => eprintln!("{}", mux_examples::web_agent::NO_TOKEN_WARNING),
    }
    let server = mux::web::Server::new(listener, app)
        .limits(options.limits.clone())
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        });
    server
        .run()
        .await
        .map_err(|e| format!("the server failed: {e}"))
}
