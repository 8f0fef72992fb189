//! The OTLP/HTTP exporter's client.

use std::sync::Arc;
use std::time::Duration;

/// The exporter's client: TLS through rustls with `ring`, trusting the platform's roots
/// (without any, plain `http://` still works), TCP_NODELAY on every socket.
pub(super) fn build(timeout: Duration) -> Result<reqwest::blocking::Client, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|err| format!("cannot set up TLS: {err}"))?;
    let config = match rustls_platform_verifier::Verifier::new(provider) {
        Ok(verifier) => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth(),
        Err(_) => builder
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth(),
    };
    reqwest::blocking::Client::builder()
        .tcp_nodelay(true)
        .timeout(timeout)
        .tls_backend_preconfigured(config)
        .build()
        .map_err(|err| format!("cannot build the HTTP client: {err}"))
}
