//! The OTLP/HTTP exporter's client.

use std::time::Duration;

/// The exporter's client: TLS through rustls with `ring`, trusting the platform's roots
/// (without any, plain `http://` still works), TCP_NODELAY on every socket.
pub(super) fn build(timeout: Duration) -> Result<reqwest::blocking::Client, String> {
    let config = mux_tool::tls::client_config(Vec::new())?;
    reqwest::blocking::Client::builder()
        .tcp_nodelay(true)
        .timeout(timeout)
        .tls_backend_preconfigured(config)
        .build()
        .map_err(|err| format!("cannot build the HTTP client: {err}"))
}
