//! The meter: OTLP export when a collector is configured, and the Prometheus
//! scrape endpoint on its own address.

use std::net::SocketAddr;

use anyhow::Context as _;
use axum::{Router, http::header, response::IntoResponse, routing::get};
use opentelemetry_otlp::{MetricExporter, WithExportConfig};
use opentelemetry_sdk::{Resource, metrics::SdkMeterProvider};
use prometheus::{Encoder as _, Registry, TextEncoder};
use tokio::task::JoinHandle;

/// A meter provider exporting to `endpoint` (every `OTEL_METRIC_EXPORT_INTERVAL`)
/// when set, and readable by Prometheus when `prometheus` is on.
pub(crate) fn meter_provider(
    resource: Resource,
    endpoint: Option<&str>,
    prometheus: bool,
) -> anyhow::Result<(SdkMeterProvider, Option<Registry>)> {
    let mut builder = SdkMeterProvider::builder().with_resource(resource);
    if let Some(endpoint) = endpoint {
        let exporter = MetricExporter::builder()
            .with_tonic()
            .with_endpoint(endpoint)
            .build()
            .context("failed to build the OTLP metric exporter")?;
        builder = builder.with_periodic_exporter(exporter);
    }
    let registry = if prometheus {
        let registry = Registry::new();
        let reader = opentelemetry_prometheus::exporter()
            .with_registry(registry.clone())
            .without_scope_info()
            .build()
            .context("failed to build the Prometheus exporter")?;
        builder = builder.with_reader(reader);
        Some(registry)
    } else {
        None
    };
    Ok((builder.build(), registry))
}

/// The Prometheus scrape endpoint (`GET /metrics`), served on a task of its
/// own until dropped.
#[derive(Debug)]
pub struct MetricsEndpoint {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl MetricsEndpoint {
    /// Binds `addr` now (so a taken port fails at start) and serves
    /// `registry` on the current tokio runtime.
    pub(crate) fn spawn(addr: SocketAddr, registry: Registry) -> anyhow::Result<Self> {
        let runtime = tokio::runtime::Handle::try_current()
            .context("the metrics endpoint needs a tokio runtime")?;
        let listener = std::net::TcpListener::bind(addr)
            .with_context(|| format!("failed to listen for metrics on {addr}"))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let listener = {
            let _entered = runtime.enter();
            tokio::net::TcpListener::from_std(listener)?
        };
        let app = Router::new().route("/metrics", get(move || scrape(registry.clone())));
        let task = runtime.spawn(async move {
            if let Err(error) = axum::serve(listener, app).await {
                tracing::error!(error = %error, "the metrics endpoint failed");
            }
        });
        tracing::info!(%addr, "serving metrics");
        Ok(Self { addr, task })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsEndpoint {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn scrape(registry: Registry) -> impl IntoResponse {
    let mut body = Vec::new();
    let encoder = TextEncoder::new();
    if let Err(error) = encoder.encode(&registry.gather(), &mut body) {
        tracing::warn!(error = %error, "failed to encode metrics");
    }
    (
        [(header::CONTENT_TYPE, encoder.format_type().to_owned())],
        body,
    )
}
