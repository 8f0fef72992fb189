//! How the MCP server examples serve: on stdio, or on Streamable HTTP at 127.0.0.1 until
//! Ctrl-C with the URL as the first line on stdout.

use mux::mcp::{HttpOptions, McpServer};

/// Serves `server` on stdio, or with `http` on Streamable HTTP at `127.0.0.1:PORT`; there,
/// with `MUX_MCP_TOKEN` set, every request needs `Authorization: Bearer $MUX_MCP_TOKEN`.
pub async fn serve(server: McpServer, http: Option<u16>) -> Result<(), String> {
    let Some(port) = http else {
        return server.serve_stdio().await.map_err(|err| err.to_string());
    };
    let mut options = HttpOptions::loopback(port);
    if let Ok(token) = std::env::var("MUX_MCP_TOKEN") {
        options = options.with_bearer_token(token);
    }
    serve_http(server, options).await
}

/// Serves `server` on Streamable HTTP with `options` until Ctrl-C. The first line on stdout
/// is the URL, so a script (or a test) can wait for it.
pub async fn serve_http(server: McpServer, options: HttpOptions) -> Result<(), String> {
    let http = server
        .serve_http(options)
        .await
        .map_err(|err| err.to_string())?;
    println!("{}", http.url());
    let _ = tokio::signal::ctrl_c().await;
    http.shutdown().await;
    Ok(())
}
