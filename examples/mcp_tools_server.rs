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

use mux_examples::mcp_serving::serve;
use mux_examples::mcp_tools_server::{Args, server};

#[tokio::main]
async fn main() -> ExitCode {
    mux_examples::exit_code_as("mcp_tools_server", run().await)
}

async fn run() -> Result<(), String> {
    let args = Args::parse(std::env::args().skip(1))?;
    let server = server(&args)?;
    serve(server, args.http).await
}
