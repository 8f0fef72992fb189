//! mux's built-in tools as an MCP server: file and shell tools confined to a root, gated by
//! Claude-style settings, over stdio (default) or Streamable HTTP.
//!
//! ```text
//! cargo run --example mcp_tools_server -- --root DIR [--settings FILE]... [--http PORT]
//! ```
//!
//! Calls the settings allow run; denied ones are refused with the rule's reason; the rest ask
//! the calling client (elicitation, or `input_required` at 2026-07-28) and are refused when it
//! can do neither. Over HTTP it listens on 127.0.0.1 only; with `MUX_MCP_TOKEN` set, every
//! request needs `Authorization: Bearer $MUX_MCP_TOKEN`.

use std::process::ExitCode;

use mux::mcp::HttpOptions;
use mux_examples::mcp_tools_server::{Args, server};

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("mcp_tools_server: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), String> {
    let args = Args::parse(std::env::args().skip(1))?;
    let server = server(&args)?;
    let Some(port) = args.http else {
        return server.serve_stdio().await.map_err(|err| err.to_string());
    };
    let mut options = HttpOptions::loopback(port);
    if let Ok(token) = std::env::var("MUX_MCP_TOKEN") {
        options = options.with_bearer_token(token);
    }
    let http = server
        .serve_http(options)
        .await
        .map_err(|err| err.to_string())?;
    // The first line on stdout is the URL, so a script (or a test) can wait for it.
    println!("{}", http.url());
    let _ = tokio::signal::ctrl_c().await;
    http.shutdown().await;
    Ok(())
}
