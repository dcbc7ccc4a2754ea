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

/// What the OpenTelemetry layer sees, but from [`not_exported`] targets:
/// every span at `info` and above, whatever the log filter says (what traces
/// are made of), and warnings and errors, which become events of the span
/// they happen in. Info events are log lines only: each would cost the span
/// it happens in a copy.
pub(crate) fn exported() -> FilterFn<impl Fn(&tracing::Metadata<'_>) -> bool> {
    filter_fn(|metadata| {
        let level = if metadata.is_span() {
            tracing::Level::INFO
        } else {
            tracing::Level::WARN
        };
        *metadata.level() <= level && !not_exported(metadata)
    })
    .with_max_level_hint(tracing::Level::INFO)
}

/// The target of [`detached_span`].
const DETACHED_TARGET: &str = "switchboard::detached";

/// A span with no parent, never exported. Work that outlives the call that
/// started it (a pooled session's task) runs in it, so that it holds no
/// call's span open: a span stays open while any span inside it does.
pub fn detached_span() -> tracing::Span {
    tracing::info_span!(target: DETACHED_TARGET, parent: None, "detached")
}

/// The [`detached_span`]s, whatever the log filter says: a layer must enable
/// them for them to exist, and the OpenTelemetry layer does not.
pub(crate) fn detached() -> FilterFn<impl Fn(&tracing::Metadata<'_>) -> bool> {
    filter_fn(|metadata| metadata.target() == DETACHED_TARGET)
        .with_max_level_hint(tracing::Level::INFO)
}

/// Spans of the libraries below are not turned into OpenTelemetry spans:
/// they would be noise in every trace (and the exporter's own gRPC calls
/// would trace themselves).
fn not_exported(metadata: &tracing::Metadata<'_>) -> bool {
    let target = metadata.target();
    [
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
}
