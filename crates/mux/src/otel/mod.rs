//! OpenTelemetry export (feature `otel`): mux's trace spans, in the GenAI semantic
//! conventions, sent to an OTLP receiver (a collector, Jaeger, Arize Phoenix, Langfuse…) over
//! HTTP ([`Otel::http`]) or, with the feature `otel-grpc`, gRPC ([`Otel::grpc`]).
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

#[cfg(feature = "otel-grpc")]
mod grpc;
mod http_client;

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

/// An OTLP exporter's settings: the protocol, picked by the constructor, and the receiver.
#[derive(Clone, Debug)]
pub struct Otel {
    protocol: Protocol,
    endpoint: String,
    service_name: String,
    headers: HashMap<String, String>,
    timeout: Duration,
}

/// The wire an [`Otel`] exports over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Protocol {
    /// OTLP/HTTP with protobuf bodies.
    Http,
    /// OTLP/gRPC.
    #[cfg(feature = "otel-grpc")]
    Grpc,
}

impl Otel {
    /// Exports over OTLP/HTTP (protobuf bodies) to `endpoint`, the receiver's full traces URL
    /// (`http://HOST:4318/v1/traces` for a collector, `http://HOST:6006/v1/traces` for
    /// Phoenix). `https://` uses TLS (rustls, the platform's roots).
    pub fn http(endpoint: impl Into<String>) -> Self {
        Self::new(Protocol::Http, endpoint.into())
    }

    /// Exports over OTLP/gRPC (feature `otel-grpc`) to `endpoint`, the receiver's gRPC
    /// address (`http://HOST:4317` for a collector or Phoenix). `https://` uses TLS (rustls,
    /// the system's roots). Headers go as gRPC metadata.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), mux::otel::OtelError> {
    /// let guard = mux::otel::Otel::grpc("http://127.0.0.1:4317")
    ///     .service_name("my-agent")
    ///     .header("authorization", "Bearer <receiver key>")
    ///     .init()?;
    /// // ... run agents ...
    /// drop(guard); // flushes what is left
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "otel-grpc")]
    pub fn grpc(endpoint: impl Into<String>) -> Self {
        Self::new(Protocol::Grpc, endpoint.into())
    }

    fn new(protocol: Protocol, endpoint: String) -> Self {
        Self {
            protocol,
            endpoint,
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
        let builder = SdkTracerProvider::builder().with_resource(
            Resource::builder()
                .with_service_name(self.service_name.clone())
                .build(),
        );
        let builder = match self.protocol {
            Protocol::Http => {
                // A blocking client may be neither built nor dropped on an async runtime's thread.
                let timeout = self.timeout;
                let client = std::thread::spawn(move || http_client::build(timeout))
                    .join()
                    .map_err(|_| failed("building the HTTP client panicked".to_owned()))?
                    .map_err(failed)?;
                let exporter = opentelemetry_otlp::SpanExporter::builder()
                    .with_http()
                    .with_http_client(client)
                    .with_endpoint(self.endpoint.clone())
                    .with_timeout(self.timeout)
                    .with_headers(self.headers.clone())
                    .build()
                    .map_err(|err| failed(err.to_string()))?;
                builder.with_batch_exporter(exporter)
            }
            #[cfg(feature = "otel-grpc")]
            Protocol::Grpc => {
                let exporter = grpc::GrpcExporter::new(&self.endpoint, &self.headers, self.timeout)
                    .map_err(failed)?;
                builder.with_batch_exporter(exporter)
            }
        };
        Ok(builder.build())
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
