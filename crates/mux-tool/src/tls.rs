//! TLS for mux's reqwest 0.13 clients (feature `tls`; mux-mcp's and the OTLP exporter's):
//! rustls with the `ring` provider, passed to each client (no process-wide provider is
//! installed, and no aws-lc-rs is built), trusting the platform's roots plus any extra CA
//! certificates.
//!
//! reqwest 0.13 offers rustls only with aws-lc-rs or with no provider at all; mux takes "no
//! provider" and passes this config, so an application's own `reqwest::Client::new()` never
//! depends on mux having installed a process-wide provider.
//!
//! Roots come from `rustls-platform-verifier`, the verifier reqwest itself uses: on Linux it
//! reads the system store (`/etc/ssl/certs` on Debian) with no network access, on macOS and
//! Windows it asks the OS. Extra CAs are added next to the platform's roots, never instead of
//! them. On a machine with no roots at all, plain `http://` still works and every HTTPS
//! handshake fails saying why.

use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};

pub use rustls;

/// The rustls config for HTTPS: `ring`, TLS 1.2 and 1.3, HTTP/1.1 over ALPN, and the
/// platform's roots plus `extra_roots`. Pass it to reqwest's `tls_backend_preconfigured`.
pub fn client_config(extra_roots: Vec<CertificateDer<'static>>) -> Result<ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = if extra_roots.is_empty() {
        // Reading the system store takes tens of milliseconds; without extra roots it is
        // done once per process.
        static PLATFORM: OnceLock<Arc<dyn ServerCertVerifier>> = OnceLock::new();
        PLATFORM
            .get_or_init(|| verifier(Vec::new(), provider.clone()))
            .clone()
    } else {
        verifier(extra_roots, provider.clone())
    };
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| format!("cannot set up TLS: {err}"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// The platform's verifier with `extra_roots` added.
fn verifier(
    extra_roots: Vec<CertificateDer<'static>>,
    provider: Arc<CryptoProvider>,
) -> Arc<dyn ServerCertVerifier> {
    let algorithms = provider.signature_verification_algorithms;
    match rustls_platform_verifier::Verifier::new_with_extra_roots(extra_roots, provider) {
        Ok(verifier) => Arc::new(verifier),
        Err(err) => Arc::new(NoRoots {
            reason: err.to_string(),
            algorithms,
        }),
    }
}

/// A verifier for a machine without trust roots: every certificate is refused, saying why.
#[derive(Debug)]
struct NoRoots {
    reason: String,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for NoRoots {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Err(rustls::Error::General(format!(
            "no trusted CA certificates: {}",
            self.reason
        )))
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
