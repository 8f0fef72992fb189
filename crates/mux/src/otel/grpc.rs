//! The OTLP/gRPC exporter (feature `otel-grpc`): opentelemetry-otlp's tonic exporter on a
//! tokio runtime of its own.
//!
//! tonic's channel lives on tokio, but the SDK's batch processor exports from a plain thread
//! (`futures_executor::block_on`), and the application may run any runtime or none. So the
//! exporter owns a one-worker runtime: the channel is built inside it and every export is
//! polled in its context. Dropping the exporter (when the provider shuts down) stops it.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use opentelemetry_otlp::tonic_types::metadata::MetadataMap;
use opentelemetry_otlp::tonic_types::transport::ClientTlsConfig;
use opentelemetry_otlp::{WithExportConfig, WithTonicConfig};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

/// opentelemetry-otlp's gRPC span exporter and the runtime its channel runs on.
#[derive(Debug)]
pub(super) struct GrpcExporter {
    inner: opentelemetry_otlp::SpanExporter,
    /// `None` only while dropping.
    runtime: Option<tokio::runtime::Runtime>,
}

impl GrpcExporter {
    /// An exporter to `endpoint` (`http://HOST:4317`; `https://` uses TLS with the system's
    /// roots), sending `headers` as gRPC metadata.
    pub(super) fn new(
        endpoint: &str,
        headers: &HashMap<String, String>,
        timeout: Duration,
    ) -> Result<Self, String> {
        let mut metadata = http::HeaderMap::new();
        for (name, value) in headers {
            let key = http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("the header name `{name}` is not valid gRPC metadata"))?;
            // The value may be a key: it never appears in the error.
            let value = http::HeaderValue::from_str(value).map_err(|_| {
                format!("the value of the header `{name}` is not valid gRPC metadata")
            })?;
            metadata.insert(key, value);
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("mux-otel-grpc")
            .enable_all()
            .build()
            .map_err(|err| format!("cannot start the exporter's runtime: {err}"))?;
        let mut builder = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(endpoint)
            .with_timeout(timeout)
            .with_metadata(MetadataMap::from_headers(metadata));
        if endpoint.starts_with("https://") {
            builder = builder.with_tls_config(ClientTlsConfig::new().with_native_roots());
        }
        // The channel connects lazily, on this runtime.
        let inner = {
            let _context = runtime.enter();
            builder.build()
        };
        match inner {
            Ok(inner) => Ok(Self {
                inner,
                runtime: Some(runtime),
            }),
            Err(err) => {
                runtime.shutdown_background();
                Err(err.to_string())
            }
        }
    }
}

impl SpanExporter for GrpcExporter {
    fn export(&self, batch: Vec<SpanData>) -> impl Future<Output = OTelSdkResult> + Send {
        InRuntime {
            handle: self.runtime.as_ref().map(|rt| rt.handle().clone()),
            future: Box::pin(self.inner.export(batch)),
        }
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.inner.set_resource(resource);
    }
}

impl Drop for GrpcExporter {
    fn drop(&mut self) {
        // Dropping a runtime blocks, which panics inside another runtime: stop it in the
        // background instead, wherever the provider happens to be dropped.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// A future polled inside the exporter's runtime context (timers and I/O register there).
struct InRuntime<F> {
    handle: Option<tokio::runtime::Handle>,
    future: Pin<Box<F>>,
}

impl<F: Future> Future for InRuntime<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        let _context = this.handle.as_ref().map(tokio::runtime::Handle::enter);
        this.future.as_mut().poll(cx)
    }
}
