//! The tracer: always installed, exporting over OTLP only when configured.

use anyhow::Context as _;
use opentelemetry_otlp::{SpanExporter, WithExportConfig};
use opentelemetry_sdk::{Resource, trace::SdkTracerProvider};
use tracing_subscriber::filter::{FilterFn, filter_fn};

/// A tracer provider with the sampler and limits of the standard `OTEL_*`
/// variables, batching spans to `endpoint` when one is set. Without an
/// endpoint spans still get real ids, so the context forwarded downstream
/// is the caller's trace.
pub(crate) fn tracer_provider(
    resource: Resource,
    endpoint: Option<&str>,
) -> anyhow::Result<SdkTracerProvider> {
    let mut builder = SdkTracerProvider::builder().with_resource(resource);
    if let Some(endpoint) = endpoint {
        let exporter = SpanExporter::builder()
            .with_tonic()
            .with_endpoint(endpoint)
            .build()
            .context("failed to build the OTLP span exporter")?;
        builder = builder.with_batch_exporter(exporter);
    }
    Ok(builder.build())
}

/// Every span at `info` and above (and no event): what traces are made of.
pub(crate) fn spans() -> FilterFn<impl Fn(&tracing::Metadata<'_>) -> bool> {
    filter_fn(|metadata| metadata.is_span() && *metadata.level() <= tracing::Level::INFO)
}

/// The target of [`detached_span`].
const DETACHED_TARGET: &str = "switchboard::detached";

/// A span with no parent, never exported. Work that outlives the call that
/// started it (a pooled session's task) runs in it, so that it holds no
/// call's span open: a span stays open while any span inside it does.
pub fn detached_span() -> tracing::Span {
    tracing::info_span!(target: DETACHED_TARGET, parent: None, "detached")
}

/// Spans of the libraries below are not turned into OpenTelemetry spans:
/// they would be noise in every trace (and the exporter's own gRPC calls
/// would trace themselves).
pub(crate) fn not_exported_targets() -> FilterFn<impl Fn(&tracing::Metadata<'_>) -> bool> {
    filter_fn(|metadata| {
        let target = metadata.target();
        ![
            "h2",
            "hyper",
            "tonic",
            "tower",
            "opentelemetry",
            "reqwest",
            "sqlx",
            "rmcp",
            DETACHED_TARGET,
        ]
        .iter()
        .any(|prefix| {
            target
                .strip_prefix(prefix)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
        })
    })
}
