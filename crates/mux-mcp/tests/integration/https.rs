//! Streamable HTTP over TLS: an in-process rmcp server behind rustls, with a CA and a server
//! certificate generated for the test. Trusting the CA (by builder or by `caCertificates`)
//! connects; not trusting it fails fast with a TLS error; a bad CA file is a config error.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use mux_mcp::{
    ConfigError, ConnectError, ConnectionOptions, Coordinator, CoordinatorConfig, ReconnectPolicy,
    ServerConnection, ServerSpec,
};
use mux_testkit::mcp::Echo;
use mux_tool::{Tool, ToolContext};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

/// Every wait in these tests ends within this.
const LIMIT: Duration = Duration::from_secs(20);

/// A test CA (its PEM in a temporary file) and a server certificate it signed for
/// `127.0.0.1` and `localhost`.
struct Pki {
    _dir: tempfile::TempDir,
    ca_file: PathBuf,
    server: Arc<rustls::ServerConfig>,
}

fn pki() -> Pki {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "mux test CA");
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();

    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
        .unwrap()
        .signed_by(&leaf_key, &ca)
        .unwrap();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
    let server = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![leaf.der().clone()], key)
    .unwrap();

    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    Pki {
        _dir: dir,
        ca_file,
        server: Arc::new(server),
    }
}

/// A running HTTPS MCP server.
struct Server {
    url: String,
    /// TLS handshakes the server saw fail.
    refused: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(tls: Arc<rustls::ServerConfig>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let acceptor = TlsAcceptor::from(tls);
    let service = StreamableHttpService::new(
        || Ok(Echo::prefixed("tls: ")),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let refused = Arc::new(AtomicUsize::new(0));
    let counter = refused.clone();
    let task = tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let service = service.clone();
            let counter = counter.clone();
            tokio::spawn(async move {
                let stream = match tokio::time::timeout(LIMIT, acceptor.accept(tcp)).await {
                    Ok(Ok(stream)) => stream,
                    _ => {
                        counter.fetch_add(1, Ordering::SeqCst);
                        return;
                    }
                };
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), TowerToHyperService::new(service))
                    .await;
            });
        }
    });
    Server {
        url: format!("https://127.0.0.1:{port}/mcp"),
        refused,
        task,
    }
}

fn options() -> ConnectionOptions {
    ConnectionOptions {
        connect_timeout: LIMIT,
        shutdown_grace: Duration::from_secs(1),
        ..ConnectionOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trusting_the_ca_lists_tools_and_calls_one() {
    let pki = pki();
    let server = serve(pki.server.clone()).await;
    let coordinator = Coordinator::new(CoordinatorConfig {
        connection: options(),
        reconnect: ReconnectPolicy::None,
        health_interval: None,
        ..CoordinatorConfig::default()
    });
    let spec = ServerSpec::http("secure", &server.url).with_ca_certificate(&pki.ca_file);
    let report = tokio::time::timeout(LIMIT, coordinator.start_all_and_wait(vec![spec]))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(report.connected, ["secure"], "{report:?}");
    let tools = coordinator.tools();
    let echo = tools
        .iter()
        .find(|tool| tool.spec().name.as_str() == "mcp__secure__echo")
        .unwrap();
    let out = tokio::time::timeout(
        LIMIT,
        echo.call(json!({"text": "over https"}), ToolContext::new("c1")),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(out.to_text(), "tls: over https");
    assert_eq!(server.refused.load(Ordering::SeqCst), 0);
    coordinator.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ca_certificates_in_the_config_are_expanded_and_trusted() {
    let pki = pki();
    let server = serve(pki.server.clone()).await;
    let config = format!(
        r#"{{"mcpServers": {{"secure": {{"url": "{}", "caCertificates": ["${{TEST_CA}}"]}}}}}}"#,
        server.url
    );
    let ca = pki.ca_file.display().to_string();
    let specs =
        mux_mcp::parse_config_with(&config, &|name| (name == "TEST_CA").then(|| ca.clone()))
            .unwrap();
    let connection = ServerConnection::new(specs.into_iter().next().unwrap(), options());
    let tools = tokio::time::timeout(LIMIT, connection.connect())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].name, "echo");
    connection.disconnect().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_certificate_fails_fast_with_a_tls_error() {
    let pki = pki();
    let server = serve(pki.server.clone()).await;
    let connection = ServerConnection::new(ServerSpec::http("secure", &server.url), options());
    let started = std::time::Instant::now();
    let err = tokio::time::timeout(LIMIT, connection.connect())
        .await
        .expect("a refused certificate must not hang")
        .unwrap_err();
    match &err {
        ConnectError::Tls { server, reason } => {
            assert_eq!(server, "secure");
            assert!(reason.contains("certificate"), "{reason}");
            assert!(reason.contains("caCertificates"), "{reason}");
        }
        other => panic!("expected a TLS error, got {other:?}"),
    }
    assert!(err.to_string().contains("TLS handshake failed"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10), "{err}");
    // The client gives up as it sends its alert; the server notices a moment later.
    let seen = async {
        while server.refused.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(LIMIT, seen)
        .await
        .expect("the server saw no refused handshake");
}

fn assert_ca_field(err: &ConfigError, expected_server: &str, fragment: &str) {
    match err {
        ConfigError::Field {
            server,
            field,
            problem,
        } => {
            assert_eq!(server, expected_server);
            assert_eq!(field, "caCertificates[0]");
            assert!(problem.contains(fragment), "{problem}");
        }
        other => panic!("expected a field error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_bad_ca_file_is_a_config_error_naming_server_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.pem");
    let not_pem = dir.path().join("not.pem");
    std::fs::write(&not_pem, "hello\n").unwrap();

    // From the builder: the file is read when connecting.
    for (path, fragment) in [(&missing, "cannot read"), (&not_pem, "no PEM")] {
        let spec = ServerSpec::http("corp", "https://127.0.0.1:9/mcp").with_ca_certificate(path);
        let connection = ServerConnection::new(spec, options());
        let err = tokio::time::timeout(LIMIT, connection.connect())
            .await
            .unwrap()
            .unwrap_err();
        match &err {
            ConnectError::Config(config) => assert_ca_field(config, "corp", fragment),
            other => panic!("expected a config error, got {other:?}"),
        }
        assert!(
            err.to_string()
                .contains("MCP server `corp`: field `caCertificates[0]`"),
            "{err}"
        );
    }

    // From the config: the file is checked while parsing.
    for (path, fragment) in [(&missing, "cannot read"), (&not_pem, "no PEM")] {
        let config = json!({"mcpServers": {"corp": {
            "url": "https://127.0.0.1:9/mcp", "caCertificates": [path_text(path)]}}});
        let err = mux_mcp::parse_config_with(&config.to_string(), &|_| None).unwrap_err();
        assert_ca_field(&err, "corp", fragment);
    }
    let config =
        r#"{"mcpServers": {"corp": {"url": "https://h/mcp", "caCertificates": "ca.pem"}}}"#;
    let err = mux_mcp::parse_config_with(config, &|_| None).unwrap_err();
    assert!(
        err.to_string()
            .contains("field `caCertificates` must be an array"),
        "{err}"
    );
}

fn path_text(path: &Path) -> String {
    path.display().to_string()
}
