//! TLS for Streamable HTTP and OAuth requests: rustls with the `ring` provider, passed to
//! each client (no process-wide provider is installed), trusting the platform's roots plus
//! the CA certificates a server's spec names.
//!
//! Roots come from `rustls-platform-verifier`, the verifier reqwest itself uses: on Linux it
//! reads the system store (`/etc/ssl/certs` on Debian, via `rustls-native-certs`) with no
//! network access, on macOS and Windows it asks the OS. Extra CAs are added next to the
//! platform's roots, never instead of them.

use std::error::Error as StdError;
use std::path::{Path, PathBuf};

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use rustls::{ClientConfig, RootCertStore};

/// A CA certificate file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CaFileError {
    /// Its index in the spec's list.
    pub(crate) index: usize,
    /// What is wrong, naming the path.
    pub(crate) problem: String,
}

/// Reads PEM CA certificates from `path`: at least one, each usable as a trust anchor.
pub(crate) fn read_ca_file(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let shown = path.display();
    let bytes = std::fs::read(path).map_err(|err| format!("cannot read `{shown}`: {err}"))?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| format!("`{shown}` is not valid PEM: {err}"))?;
    if certs.is_empty() {
        return Err(format!("`{shown}` holds no PEM `CERTIFICATE` block"));
    }
    let mut store = RootCertStore::empty();
    for (n, cert) in certs.iter().enumerate() {
        store.add(cert.clone()).map_err(|err| {
            format!(
                "certificate {} in `{shown}` is not a usable CA certificate: {err}",
                n + 1
            )
        })?;
    }
    Ok(certs)
}

/// Reads every file of `paths` (see [`read_ca_file`]).
pub(crate) fn read_ca_files(
    paths: &[PathBuf],
) -> Result<Vec<CertificateDer<'static>>, CaFileError> {
    let mut certs = Vec::new();
    for (index, path) in paths.iter().enumerate() {
        certs.extend(read_ca_file(path).map_err(|problem| CaFileError { index, problem })?);
    }
    Ok(certs)
}

/// The rustls config for HTTPS: mux-tool's (`ring`, the platform's roots) plus `extra_roots`.
pub(crate) fn client_config(
    extra_roots: Vec<CertificateDer<'static>>,
) -> Result<ClientConfig, String> {
    mux_tool::tls::client_config(extra_roots)
}

/// A reqwest client builder with mux's TLS and TCP_NODELAY on every socket.
pub(crate) fn client_builder(
    extra_roots: Vec<CertificateDer<'static>>,
) -> Result<reqwest::ClientBuilder, String> {
    Ok(reqwest::Client::builder()
        .tcp_nodelay(true)
        .tls_backend_preconfigured(client_config(extra_roots)?))
}

/// The HTTP client mux dials servers and their OAuth endpoints with: TCP_NODELAY on every
/// socket, TLS through rustls trusting the platform's roots plus `extra_roots`.
pub(crate) fn http_client(
    extra_roots: Vec<CertificateDer<'static>>,
) -> Result<reqwest::Client, String> {
    client_builder(extra_roots)?
        .build()
        .map_err(|err| format!("cannot build the HTTP client: {err}"))
}

/// The TLS failure somewhere in `error`'s chain, described for a person: `None` when the
/// failure was not TLS.
pub(crate) fn tls_failure(error: &(dyn StdError + 'static)) -> Option<String> {
    let mut current = Some(error);
    while let Some(err) = current {
        if let Some(tls) = err.downcast_ref::<rustls::Error>() {
            return Some(describe(tls));
        }
        current = next_cause(err);
    }
    None
}

/// The next error in the chain, looking through wrappers that do not report theirs as a
/// source (rmcp's, and `io::Error`, whose `source` skips the error it wraps).
fn next_cause<'a>(err: &'a (dyn StdError + 'static)) -> Option<&'a (dyn StdError + 'static)> {
    use rmcp::service::ClientInitializeError;
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    if let Some(ClientInitializeError::TransportError { error, .. }) =
        err.downcast_ref::<ClientInitializeError>()
    {
        return Some(error.error.as_ref());
    }
    if let Some(StreamableHttpError::Client(inner)) =
        err.downcast_ref::<StreamableHttpError<reqwest::Error>>()
    {
        return Some(inner);
    }
    if let Some(inner) = err
        .downcast_ref::<std::io::Error>()
        .and_then(std::io::Error::get_ref)
    {
        return Some(inner);
    }
    err.source()
}

fn describe(error: &rustls::Error) -> String {
    match error {
        rustls::Error::InvalidCertificate(_) => format!(
            "{error} (to trust a private CA, add its PEM file with `caCertificates` or \
             `ServerSpec::with_ca_certificate`)"
        ),
        _ => error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_or_empty_file_is_refused_with_its_path() {
        let dir = std::env::temp_dir().join(format!("mux-mcp-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("missing.pem");
        let err = read_ca_file(&missing).unwrap_err();
        assert!(
            err.contains("cannot read") && err.contains("missing.pem"),
            "{err}"
        );

        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "no certificates here\n").unwrap();
        let err = read_ca_file(&empty).unwrap_err();
        assert!(err.contains("no PEM `CERTIFICATE`"), "{err}");

        let garbage = dir.join("garbage.pem");
        std::fs::write(
            &garbage,
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let err = read_ca_file(&garbage).unwrap_err();
        assert!(err.contains("not a usable CA certificate"), "{err}");

        let err = read_ca_files(&[missing]).unwrap_err();
        assert_eq!(err.index, 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_config_uses_http1_and_builds_without_a_default_provider() {
        assert!(rustls::crypto::CryptoProvider::get_default().is_none());
        let config = client_config(Vec::new()).unwrap();
        assert_eq!(config.alpn_protocols, [b"http/1.1".to_vec()]);
        client_builder(Vec::new()).unwrap().build().unwrap();
        assert!(rustls::crypto::CryptoProvider::get_default().is_none());
    }

    #[test]
    fn certificate_failures_are_found_through_io_errors() {
        let tls = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let io = std::io::Error::new(std::io::ErrorKind::InvalidData, tls);
        // As hyper-util reports it: wrapped once more.
        let io = std::io::Error::other(io);
        let found = tls_failure(&io).unwrap();
        assert!(found.contains("invalid peer certificate"), "{found}");
        assert!(found.contains("caCertificates"), "{found}");
        assert_eq!(tls_failure(&std::io::Error::other("refused")), None);
    }
}
