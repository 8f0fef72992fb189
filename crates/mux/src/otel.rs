//! OpenTelemetry export (feature `otel`): mux's trace spans, in the GenAI semantic
//! conventions, sent to an OTLP/HTTP receiver (a collector, Jaeger, Arize Phoenix, Langfuse…).
//!
//! ```no_run
//! # fn main() -> Result<(), mux::otel::OtelError> {
//! // Until `guard` is dropped, every run's spans go to the receiver.
//! let guard = mux::otel::Otel::http("http://127.0.0.1:6006/v1/traces")
//!     .service_name("my-agent")
//!     .init()?;
//! // ... run agents ...
//! drop(guard); // flushes what is left
//! # Ok(())
//! # }
//! ```
//!
//! The spans are `invoke_agent {name}` per run, `chat {model}` per model call and
//! `execute_tool {name}` per tool call, under the turn that made it; a subagent's run is an
//! `invoke_agent` under the `execute_tool task` call that delegated. Prompts, replies and tool
//! data are recorded only when
//! [`OrchestratorConfig::capture_content`](crate::orchestrator::OrchestratorConfig::capture_content)
//! is on.

use std::collections::HashMap;
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;

/// Why OpenTelemetry could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OtelError {
    /// The exporter could not be built (a malformed endpoint, say).
    #[error("cannot build the OTLP exporter for `{endpoint}`: {reason}")]
    Exporter {
        /// The endpoint.
        endpoint: String,
        /// What went wrong.
        reason: String,
    },
    /// Another global `tracing` subscriber is set already: use [`layer`] in it instead.
    #[error("a global tracing subscriber is already set; add mux::otel's layer to it instead")]
    SubscriberSet,
}

/// An OTLP/HTTP (protobuf) exporter's settings.
#[derive(Clone, Debug)]
pub struct Otel {
    endpoint: String,
    service_name: String,
    headers: HashMap<String, String>,
    timeout: Duration,
}

impl Otel {
    /// Exports to `endpoint`, the receiver's full traces URL (`http://HOST:4318/v1/traces`
    /// for a collector, `http://HOST:6006/v1/traces` for Phoenix). Plain HTTP; for TLS, enable
    /// `opentelemetry-otlp`'s `reqwest-rustls` feature in your own manifest.
    pub fn http(endpoint: impl Into<String>) -> Self {
        Self {
            endpoint: endpoint.into(),
            service_name: "mux".to_owned(),
            headers: HashMap::new(),
            timeout: Duration::from_secs(10),
        }
    }

    /// Sets the `service.name` resource attribute (default `mux`).
    pub fn service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = name.into();
        self
    }

    /// Adds a header to every export (an API key, say). Headers never appear in errors.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(name.into(), value.into());
        self
    }

    /// Sets the timeout of one export (default 10 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// A tracer provider that batches spans to the endpoint.
    pub fn provider(self) -> Result<SdkTracerProvider, OtelError> {
        let failed = |reason: String| OtelError::Exporter {
            endpoint: self.endpoint.clone(),
            reason,
        };
        // A blocking client may be neither built nor dropped on an async runtime's thread.
        let timeout = self.timeout;
        let client = std::thread::spawn(move || http_client(timeout))
            .join()
            .map_err(|_| failed("building the HTTP client panicked".to_owned()))?
            .map_err(failed)?;
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_endpoint(self.endpoint.clone())
            .with_timeout(self.timeout)
            .with_headers(self.headers)
            .build()
            .map_err(|err| OtelError::Exporter {
                endpoint: self.endpoint,
                reason: err.to_string(),
            })?;
        Ok(SdkTracerProvider::builder()
            .with_resource(
                Resource::builder()
                    .with_service_name(self.service_name)
                    .build(),
            )
            .with_batch_exporter(exporter)
            .build())
    }

    /// Installs a global `tracing` subscriber that exports spans at INFO and above. Keep the
    /// guard: dropping it flushes and stops the export.
    pub fn init(self) -> Result<OtelGuard, OtelError> {
        let provider = self.provider()?;
        let subscriber = tracing_subscriber::registry()
            .with(layer(&provider))
            .with(tracing_subscriber::filter::LevelFilter::INFO);
        tracing::subscriber::set_global_default(subscriber)
            .map_err(|_| OtelError::SubscriberSet)?;
        Ok(OtelGuard(provider))
    }
}

/// The exporter's client: TLS through rustls with `ring`, trusting the platform's roots
/// (without any, plain `http://` still works), TCP_NODELAY on every socket.
fn http_client(timeout: Duration) -> Result<reqwest::blocking::Client, String> {
    use std::sync::Arc;
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

/// The `tracing` layer that turns spans into OpenTelemetry spans of `provider`, for an
/// application that builds its own subscriber.
pub fn layer<S>(
    provider: &SdkTracerProvider,
) -> tracing_opentelemetry::OpenTelemetryLayer<S, SdkTracer>
where
    S: tracing::Subscriber + for<'span> LookupSpan<'span>,
{
    tracing_opentelemetry::layer().with_tracer(provider.tracer("mux"))
}

/// Flushes and shuts the export down when dropped.
#[derive(Debug)]
pub struct OtelGuard(SdkTracerProvider);

impl OtelGuard {
    /// Sends the spans ended so far now.
    pub fn flush(&self) {
        if let Err(err) = self.0.force_flush() {
            tracing::warn!("flushing spans failed: {err}");
        }
    }
}

impl Drop for OtelGuard {
    fn drop(&mut self) {
        if let Err(err) = self.0.shutdown() {
            eprintln!("mux::otel: shutting the span export down failed: {err}");
        }
    }
}
