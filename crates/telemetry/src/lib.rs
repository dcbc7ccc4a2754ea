//! Telemetry shared by Switchboard services: a tracing subscriber writing JSON
//! or human-readable logs, OpenTelemetry export over OTLP when an endpoint is
//! configured, and W3C trace-context propagation across gRPC hops, so that one
//! run is one trace from the client through runs-service and mcp-service.

mod propagation;

use std::{io, str::FromStr};

use anyhow::Context as _;
use opentelemetry::{KeyValue, global, trace::TracerProvider as _};
use opentelemetry_otlp::{SpanExporter, WithExportConfig};
use opentelemetry_sdk::{Resource, propagation::TraceContextPropagator, trace::SdkTracerProvider};
use tracing_subscriber::{
    EnvFilter, Layer, fmt::MakeWriter, layer::SubscriberExt, util::SubscriberInitExt,
};

pub use propagation::{
    continue_trace, extract_context, inject_context, inject_current_context,
    trace_context_interceptor,
};

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// One JSON object per line, for log collectors.
    #[default]
    Json,
    /// Human-readable, for terminals.
    Pretty,
}

impl FromStr for LogFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "json" => Ok(Self::Json),
            "pretty" | "text" => Ok(Self::Pretty),
            other => Err(format!(
                "unknown log format `{other}` (expected json or pretty)"
            )),
        }
    }
}

/// What telemetry a service emits.
#[derive(Debug, Clone)]
pub struct TelemetryConfig {
    /// `service.name` of the OpenTelemetry resource.
    pub service_name: String,
    /// Log line format.
    pub log_format: LogFormat,
    /// Filter directives (`RUST_LOG` syntax), for example `info,sqlx=warn`.
    pub log_filter: String,
    /// OTLP/gRPC collector endpoint; no spans are exported when unset.
    pub otlp_endpoint: Option<String>,
}

/// Flushes and stops span export when dropped.
#[derive(Debug)]
#[must_use = "dropping the guard stops span export"]
pub struct TelemetryGuard {
    provider: Option<SdkTracerProvider>,
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        if let Some(provider) = self.provider.take()
            && let Err(error) = provider.shutdown()
        {
            eprintln!("failed to flush spans: {error}");
        }
    }
}

/// Installs the global subscriber writing logs to stdout.
pub fn init(config: &TelemetryConfig) -> anyhow::Result<TelemetryGuard> {
    init_with_writer(config, io::stdout)
}

/// Installs the global subscriber writing logs to `writer` (tests capture logs
/// this way).
pub fn init_with_writer<W>(config: &TelemetryConfig, writer: W) -> anyhow::Result<TelemetryGuard>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    // Propagation works even without export, so that a downstream service
    // that does export still sees the caller's trace.
    global::set_text_map_propagator(TraceContextPropagator::new());

    let filter = EnvFilter::try_new(&config.log_filter)
        .with_context(|| format!("invalid log filter `{}`", config.log_filter))?;
    let fmt_layer = match config.log_format {
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .with_writer(writer)
            .boxed(),
        LogFormat::Pretty => tracing_subscriber::fmt::layer().with_writer(writer).boxed(),
    };

    let provider = config
        .otlp_endpoint
        .as_deref()
        .map(|endpoint| tracer_provider(&config.service_name, endpoint))
        .transpose()?;
    let otel_layer = provider.as_ref().map(|provider| {
        tracing_opentelemetry::layer().with_tracer(provider.tracer(config.service_name.clone()))
    });

    tracing_subscriber::registry()
        .with(filter)
        .with(fmt_layer)
        .with(otel_layer)
        .try_init()
        .context("failed to install the tracing subscriber")?;
    if let Some(provider) = &provider {
        global::set_tracer_provider(provider.clone());
    }
    Ok(TelemetryGuard { provider })
}

fn tracer_provider(service_name: &str, endpoint: &str) -> anyhow::Result<SdkTracerProvider> {
    let exporter = SpanExporter::builder()
        .with_tonic()
        .with_endpoint(endpoint)
        .build()
        .context("failed to build the OTLP span exporter")?;
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(
            Resource::builder()
                .with_service_name(service_name.to_owned())
                .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
                .build(),
        )
        .build())
}
