//! Connects to MCP servers and prints their state and tools, or calls one tool, as JSON.
//!
//! ```text
//! cargo run --example mcp_inspect -- (--config FILE | --name NAME (--stdio CMD [ARGS...] | --url URL))
//!     [--call QUALIFIED_TOOL --args JSON] [--timeout-ms N] [--ca-cert FILE]...
//! ```
//!
//! `--stdio` takes the rest of the command line, so every other option goes before it.
//! `--timeout-ms` bounds both the connect and the call. `--ca-cert` trusts the CA certificates
//! of a PEM file for every `https://` server (as the `caCertificates` config field does), on
//! top of the system's roots; repeat it for more.
//!
//! Without `--call` it prints `{"servers": [{"name", "state", "protocol_version", "tools":
//! [{"name", "description", "input_schema"}]}]}` and exits 0; a server that failed while
//! others connected is listed with state `failed` and its `error`. With `--call` it prints the
//! call's `ToolOutput` (`{"content", "is_error", "metadata"}`) and exits 0, or exits 1 when
//! `is_error` is set (the server answered `isError`, or the call timed out), the output still
//! printed. Any other failure (bad command line, unreadable config, no server connected,
//! unknown tool, a lost connection) prints `{"error": "..."}` and exits 1.
//! The logic lives in `mux_examples::mcp_inspect`.

use std::process::ExitCode;

use mux_examples::mcp_inspect::run;

#[tokio::main]
async fn main() -> ExitCode {
    use std::io::Write;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (value, code) = run(&args).await;
    // A closed stdout is not worth a panic.
    let _ = writeln!(std::io::stdout(), "{value}");
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
