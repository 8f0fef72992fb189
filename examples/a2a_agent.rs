//! The examples' coding agent served over A2A 1.0, for other agents to call.
//!
//! ```text
//! cargo run --example a2a_agent [-- --port 8788] [--token T] [--allowed-host HOST]...
//!     [--database-url sqlite://PATH | postgres://USER@HOST/DB] [--lease-ms N]
//! ```
//!
//! It prints `Serving on http://127.0.0.1:8788/`; the agent card is at
//! `/.well-known/agent-card.json` and the JSON-RPC endpoint at `/a2a`. The model is chosen as
//! the quickstart chooses it: a provider from `ANTHROPIC_API_KEY` / `OPENAI_API_KEY` /
//! `OPENAI_BASE_URL`, else the offline scripted model, which lists the directory, reads the
//! README and asks to run `git log`: the task goes `input-required` until the client answers
//! `approve` or `deny`. Contexts and tasks live in memory, or with `--database-url` in SQLite
//! or PostgreSQL: every process on the same database then serves every task, a restarted one
//! finds them all, and a paused task is answered on any of them. Binds 127.0.0.1 only and
//! answers only to its own Host names.

use std::net::SocketAddr;
use std::process::ExitCode;

use mux::a2a::A2aServer;
use mux_examples::a2a_agent::{Options, USAGE};

#[tokio::main]
async fn main() -> ExitCode {
    mux_examples::exit_code(run().await)
}

async fn run() -> Result<(), String> {
    let Some(options) = Options::parse(std::env::args().skip(1))? else {
        println!("{USAGE}");
        return Ok(());
    };
    let chosen = mux_examples::offline::choose_model()?;
    println!("{}", chosen.description);
    let agent = mux_examples::coding_agent::agent(chosen.client, &chosen.model)
        .map_err(|e| e.to_string())?;
    let mut server = A2aServer::new(agent).config(options.config());
    if let Some(store) = options.store().await? {
        server = server
            .session_store(store.sessions())
            .run_store(store.runs());
    }
    let server = server
        .serve(SocketAddr::from(([127, 0, 0, 1], options.port)))
        .await
        .map_err(|e| e.to_string())?;
    println!("Serving on {} (Ctrl+C to stop)", server.url());
    println!("Agent card: {}.well-known/agent-card.json", server.url());
    let _ = tokio::signal::ctrl_c().await;
    server.shutdown().await;
    Ok(())
}
